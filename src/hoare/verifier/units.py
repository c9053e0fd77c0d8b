"""Import one unit (a file or module), check what it holds; many units in worker processes.

A unit's result is plain JSON (``{"contracts": [...], "pipelines": [...], "errors":
[...]}``): what a worker sends back and what the verdict cache stores, so a cached
unit and a checked one give the same report.

Which contracts a unit holds: every ``@contract`` class among the module's globals
(and one level into its lists, tuples and dicts) that it *owns*: defined in it, or
made elsewhere and not a global of the module that made it (a class built by a
factory in another module belongs to the module that holds it). Pipelines: every
``Pipeline`` object among its globals. A unit that fails to import is an error of
its own (file, line, exception); the other units are still checked.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from .discover import DiscoveryError, _import_file, is_pipeline
from .report import ContractReport, ImportProblem
from .solver import SolverOptions
from .targets import Unit

__all__ = ["contracts_of", "run_unit", "run_units"]


def run_unit(unit: Unit, options: SolverOptions,
             overrides: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """Import ``unit`` and check its contracts and pipelines (JSON result).
    ``overrides``: per contract name, ``timeout_ms``/``rlimit`` of its queries."""
    from .checks import check_contract
    from .composition import check_pipeline
    from .tools import check_chain, check_tool
    from .values import Z3_LOCK

    try:
        module = _import(unit)
    except DiscoveryError as error:
        cause = error.__cause__ or error
        return {"contracts": [], "pipelines": [],
                "errors": [_problem(unit, cause, str(error)).to_json()]}
    contracts, pipelines = contracts_of(module)
    tools, chains = tools_of(module)
    if unit.only is not None:
        contracts = [(n, c) for n, c in contracts if c.__qualname__ == unit.only]
        pipelines = [(n, p) for n, p in pipelines if n.rsplit(":", 1)[-1] == unit.only]
        tools = [(n, t) for n, t in tools if n.rsplit(":", 1)[-1] == unit.only]
        chains = [(n, c) for n, c in chains if n.rsplit(":", 1)[-1] == unit.only]
        if not contracts and not pipelines and not tools and not chains:
            return {"contracts": [], "pipelines": [], "errors": [ImportProblem(
                unit.target, f"{module.__name__} has no @contract class or Pipeline named "
                             f"{unit.only}", str(unit.path)).to_json()]}
    out: dict[str, Any] = {"contracts": [], "pipelines": [], "errors": []}
    with Z3_LOCK:
        for name, cls in contracts:
            limits = (overrides or {}).get(name)
            report = check_contract(cls.__hoare__,  # type: ignore[attr-defined]
                                    replace(options, **limits) if limits else options)
            _locate(report, cls)
            out["contracts"].append(report.to_json())
        for name, tool in tools:
            limits = (overrides or {}).get(name)
            report = check_tool(tool, module.__name__,
                                replace(options, **limits) if limits else options)
            _locate_tool(report, tool)
            out["contracts"].append(report.to_json())
        for name, pipeline in pipelines:
            report = check_pipeline(pipeline.stages, name, options)  # type: ignore[attr-defined]
            stage = type(pipeline.stages[0])  # type: ignore[attr-defined]
            report.file, report.line = _class_location(stage)
            for check in report.checks:
                check.file, check.line = report.file, report.line
            out["pipelines"].append(report.to_json())
        for name, chain in chains:
            report = check_chain(chain, name, options)
            _locate_tool(report, chain.tools[0])  # type: ignore[attr-defined]
            out["pipelines"].append(report.to_json())
    return out


def _import(unit: Unit) -> Any:
    import importlib

    if unit.module is None:
        return _import_file(unit.path)
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(unit.module)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise DiscoveryError(f"import failed: {type(error).__name__}: {error}") from error


def _problem(unit: Unit, error: BaseException, text: str) -> ImportProblem:
    """Where the import failed: the innermost frame in a project file (or the syntax
    error's line), so a reader can jump to it."""
    file: str | None = str(unit.path)
    line: int | None = None
    if isinstance(error, SyntaxError) and error.filename:
        file, line = error.filename, error.lineno
    else:
        frames = traceback.extract_tb(error.__traceback__)
        inside = [f for f in frames if "site-packages" not in f.filename
                  and not f.filename.startswith("<frozen")]
        if inside:
            file, line = inside[-1].filename, inside[-1].lineno
    message = text.split(": import failed: ", 1)[-1] if ": import failed: " in text else text
    return ImportProblem(unit.target, message, file, line)


def contracts_of(module: Any) -> tuple[list[tuple[str, type]], list[tuple[str, object]]]:
    """The contract classes ``module`` owns and the pipelines among its globals."""
    contracts: list[tuple[str, type]] = []
    pipelines: list[tuple[str, object]] = []
    seen: set[int] = set()
    for attribute, value in list(vars(module).items()):
        if isinstance(value, type) or isinstance(value, (list, tuple, dict)):
            for cls in _classes(value):
                if id(cls) not in seen and _owned(cls, module):
                    seen.add(id(cls))
                    contracts.append((cls.__hoare__.name, cls))  # type: ignore[attr-defined]
        elif is_pipeline(value):
            name = getattr(value, "name", None) or attribute
            pipelines.append((f"{module.__name__}:{name}", value))
    return contracts, pipelines


def tools_of(module: Any) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The tools with conditions (``@tool`` or plain ``@pre``/``@post`` functions, and
    those of a ``ContractAgent``) that ``module`` defines, and its ``ToolChain``s."""
    agents = sys.modules.get("hoare.agents")
    if agents is None:  # nothing imported it: no tool anywhere
        return [], []
    tools: list[tuple[str, Any]] = []
    chains: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def add(candidate: Any) -> None:
        if not isinstance(candidate, agents.Tool):
            if not getattr(candidate, "__hoare_checked__", False):
                return
            candidate = agents.Tool(candidate)
        func = candidate.func
        spec = getattr(func, "_contracts", None)
        owner = getattr(inspect.unwrap(func), "__module__", None)
        if spec is None or id(func) in seen or owner != module.__name__ or \
                not (spec.preconditions or spec.postconditions):
            return
        seen.add(id(func))
        tools.append((f"{module.__name__}:{candidate.name}", candidate))

    for attribute, value in list(vars(module).items()):
        if isinstance(value, agents.ToolChain):
            chains.append((f"{module.__name__}:{value.name or attribute}", value))
            for tool in value.tools:
                add(tool)
        elif isinstance(value, agents.ContractAgent):
            for tool in value.tools:
                add(tool)
        elif callable(value):
            add(value)
    return tools, chains


def _locate_tool(report: ContractReport, tool: Any) -> None:
    """The tool function's file and line; each condition's check at its own line."""
    target = inspect.unwrap(tool.func)
    code = getattr(target, "__code__", None)
    report.file = code.co_filename if code else None
    report.line = code.co_firstlineno if code else None
    spec = getattr(tool.func, "_contracts", None)
    where: dict[str, tuple[str, int]] = {}
    for kind, conditions in (("preconditions", spec.preconditions if spec else []),
                             ("postconditions", spec.postconditions if spec else [])):
        for index, condition in enumerate(conditions):
            found = getattr(condition.predicate, "__code__", None)
            if found is not None:
                where[f"{kind}[{index}]"] = (found.co_filename, found.co_firstlineno)
    for check in report.checks:
        check.file, check.line = where.get(check.predicate or "", (report.file, report.line))


def _classes(value: object) -> Iterator[type]:
    items = value.values() if isinstance(value, dict) else \
        value if isinstance(value, (list, tuple)) else (value,)
    for item in list(items)[:1000]:  # type: ignore[call-overload]
        if isinstance(item, type) and "__hoare__" in item.__dict__:
            yield item


def _owned(cls: type, module: Any) -> bool:
    if cls.__module__ == module.__name__:
        return True
    home = sys.modules.get(cls.__module__)
    return home is None or getattr(home, cls.__qualname__.split(".")[0], None) is not cls


def _class_location(cls: type) -> tuple[str | None, int | None]:
    from ..source import class_line

    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    return file, class_line(cls) if file else None


def _locate(report: ContractReport, cls: type) -> None:
    """Each check's file and line: the predicate's own, else the class's."""
    desc = cls.__hoare__  # type: ignore[attr-defined]
    report.file, report.line = _class_location(cls)
    where: dict[str, tuple[str, int]] = {}
    for source in (*desc.pre, *desc.post):
        code = getattr(source.fn, "__code__", None)
        if code is not None:
            where[source.id] = (code.co_filename, code.co_firstlineno)
    for check in report.checks:
        file, line = where.get(check.predicate or "", (report.file, report.line))
        check.file, check.line = file, line


# -- many units --------------------------------------------------------------------------


def _spawn() -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-m", "hoare.verifier.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            encoding="utf-8", env=env, cwd=os.getcwd())


def _finish(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        try:
            process.stdin.close()
        except OSError:
            pass
    process.wait()


def run_units(units: Sequence[Unit], options: SolverOptions, jobs: int,
              overrides: dict[str, dict[str, int]] | None = None
              ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, result)`` of every unit, in ``units`` order. ``jobs`` > 1: in worker
    processes that each import their own units (imports are a large part of the work)."""
    if jobs <= 1 or len(units) <= 1:
        for index, unit in enumerate(units):
            yield index, _safe_run(unit, options, overrides)
        return
    yield from _subprocesses(units, options, min(jobs, len(units)), overrides)


def _subprocesses(units: Sequence[Unit], options: SolverOptions, workers: int,
                  overrides: dict[str, dict[str, int]] | None
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    dispatch = Dispatch(units, options, workers, overrides)
    for index in range(len(units)):
        dispatch.send(index)
    dispatch.close()
    for index in range(len(units)):
        yield index, dispatch.result(index)
    dispatch.join()


class Dispatch:
    """Units sent to ``python -m hoare.verifier.worker`` processes one at a time, as
    the caller finds them (it may still be looking: a unit is checked while the next
    one's cache key is made); each result is collected by the unit's index.

    Plain subprocesses rather than a fork pool: safe when the caller runs threads,
    never re-imports the caller's ``__main__``, and a worker that dies (``os._exit``
    at import, a crash in native code) costs only the unit it was on, where a
    ``multiprocessing.Pool`` would wait forever."""

    def __init__(self, units: Sequence[Unit], options: SolverOptions, workers: int,
                 overrides: dict[str, dict[str, int]] | None) -> None:
        import queue

        self._units = units
        self._options = options
        self._overrides = overrides or {}
        self._todo: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._results: dict[int, dict[str, Any]] = {}
        self._done = threading.Condition()
        self._threads = [threading.Thread(target=self._feed, daemon=True)
                         for _ in range(workers)]
        for thread in self._threads:
            thread.start()

    def send(self, index: int) -> None:
        self._todo.put(index)

    def close(self) -> None:
        """No more units: each feeding thread stops when the queue is empty."""
        for _thread in self._threads:
            self._todo.put(None)

    def result(self, index: int) -> dict[str, Any]:
        with self._done:
            while index not in self._results:
                if not any(t.is_alive() for t in self._threads):
                    raise RuntimeError("hoare verify: every worker process stopped")
                self._done.wait(0.5)
            return self._results.pop(index)

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _answer(self, process: subprocess.Popen[str], index: int) -> dict[str, Any] | None:
        import json
        from dataclasses import asdict

        from .worker import encode_unit

        assert process.stdin is not None and process.stdout is not None
        request = {"unit": encode_unit(self._units[index]), "options": asdict(self._options),
                   "overrides": self._overrides}
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            found = json.loads(process.stdout.readline() or "null")
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def _feed(self) -> None:
        """Run units until told to stop; a worker that dies is replaced, and the unit
        it died on is reported as that unit's error."""
        while True:
            process = _spawn()
            try:
                while True:
                    index = self._todo.get()
                    if index is None:
                        return
                    result = self._answer(process, index)
                    failed = result is None
                    if result is None:
                        unit = self._units[index]
                        result = {"contracts": [], "pipelines": [], "errors": [ImportProblem(
                            unit.target, "the worker process died while checking it",
                            str(unit.path)).to_json()]}
                    with self._done:
                        self._results[index] = result
                        self._done.notify_all()
                    if failed:
                        break
            finally:
                _finish(process)


def _safe_run(unit: Unit, options: SolverOptions,
              overrides: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """A worker never dies of one unit: an unexpected error is that unit's error."""
    try:
        return run_unit(unit, options, overrides)
    except Exception as error:
        return {"contracts": [], "pipelines": [], "errors": [ImportProblem(
            unit.target, f"internal error: {type(error).__name__}: {error}",
            str(unit.path)).to_json()]}
