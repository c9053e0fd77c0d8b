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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from hoare.verifier.project.discovery import DiscoveryError, _import_file, is_pipeline
from hoare.verifier.project.targets import Unit
from hoare.verifier.report.model import ContractReport, ImportProblem
from hoare.verifier.solve.solver import SolverOptions

__all__ = ["DEFAULT_IMPORT_TIMEOUT", "contracts_of", "error_result", "run_unit", "run_units"]


def run_unit(unit: Unit, options: SolverOptions,
             overrides: dict[str, dict[str, int]] | None = None,
             on_imported: Callable[[], None] | None = None) -> dict[str, Any]:
    """Import ``unit`` and check its contracts and pipelines (JSON result).
    ``overrides``: per contract name, ``timeout_ms``/``rlimit`` of its queries.
    ``on_imported``: called once the import is done (a worker tells its parent, whose
    import time bound then stops)."""
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.checks.pipelines import check_pipeline
    from hoare.verifier.checks.tools import check_chain, check_tool
    from hoare.verifier.translate.values import Z3_LOCK

    if unit.problem is not None:
        return error_result(unit, unit.problem)
    try:
        module = _import(unit)
    except DiscoveryError as error:
        cause = error.__cause__ or error
        return {"contracts": [], "pipelines": [],
                "errors": [_problem(unit, cause, str(error)).to_json()]}
    if on_imported is not None:
        on_imported()
    entries = contract_entries(module)
    contracts = [(name, cls) for name, cls, _attributes in entries]
    _contracts, pipelines = contracts_of(module)
    tools, chains = tools_of(module)
    if unit.only is not None:
        contracts = [(n, c) for n, c, attributes in entries
                     if c.__qualname__ == unit.only or unit.only in attributes]
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
            desc = cls.__hoare__  # type: ignore[attr-defined]
            limits = (overrides or {}).get(desc.name) or (overrides or {}).get(name)
            report = check_contract(desc, replace(options, **limits) if limits else options)
            report.name = name
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
            _locate_tool(report, chain.tools[0])
            out["pipelines"].append(report.to_json())
    return out


def error_result(unit: Unit, message: str, line: int | None = None) -> dict[str, Any]:
    """The result of a unit that was not checked: one import error at its file."""
    return {"contracts": [], "pipelines": [],
            "errors": [ImportProblem(unit.target, message, str(unit.path), line).to_json()]}


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


def _outside_user_code(filename: str) -> bool:
    """A frame of the standard library, an installed package, hoare itself, or frozen
    or generated code: not where a user fixes an import error."""
    if filename.startswith("<") or "site-packages" in filename or \
            "dist-packages" in filename:
        return True
    try:
        resolved = os.path.realpath(filename)
    except (OSError, ValueError):
        return True
    return any(resolved == root or resolved.startswith(root + os.sep)
               for root in _library_roots())


def _library_roots() -> tuple[str, ...]:
    import sysconfig

    roots = {os.path.realpath(os.path.dirname(os.path.dirname(__file__)))}  # hoare/
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(os.path.realpath(sysconfig.get_path(key)))
        except (KeyError, OSError, TypeError):
            continue
    kernel_file = getattr(sys.modules.get("hoare.kernel"), "__file__", None)
    if isinstance(kernel_file, str) and kernel_file:
        roots.add(os.path.realpath(os.path.dirname(kernel_file)))
    return tuple(sorted(roots))


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.realpath(first) == os.path.realpath(second)
    except (OSError, ValueError):
        return False


def _problem(unit: Unit, error: BaseException, text: str) -> ImportProblem:
    """Where the import failed, where the user fixes it: a location the error carries
    (a contract definition error names the predicate's line), a syntax error's line in
    a project file, else the deepest frame in the unit's own file, else the deepest in
    another project file, else the unit's file, line 1. Never the standard library
    nor hoare's own files."""
    file = str(unit.path)
    line: int | None = 1
    carried_file = getattr(error, "file", None)
    carried_line = getattr(error, "line", None)
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if f.filename and _same_file(f.filename, file)]
    project = [f for f in frames if f.filename and not _outside_user_code(f.filename)]
    if isinstance(carried_file, str) and isinstance(carried_line, int) and \
            not isinstance(carried_line, bool) and not _outside_user_code(carried_file):
        file, line = carried_file, carried_line
    elif isinstance(error, SyntaxError) and error.filename and \
            not _outside_user_code(error.filename):
        file, line = error.filename, error.lineno or 1
    elif own:
        line = own[-1].lineno or 1
    elif project:
        file, line = project[-1].filename, project[-1].lineno or 1
    message = text.split(": import failed: ", 1)[-1] if ": import failed: " in text else text
    return ImportProblem(unit.target, message, file, line)


def contracts_of(module: Any) -> tuple[list[tuple[str, type]], list[tuple[str, object]]]:
    """The contract classes ``module`` owns and the pipelines among its globals."""
    contracts = [(name, cls) for name, cls, _attributes in contract_entries(module)]
    pipelines: list[tuple[str, object]] = []
    for attribute, value in list(vars(module).items()):
        if not isinstance(value, (type, list, tuple, dict)) and is_pipeline(value):
            name = getattr(value, "name", None) or attribute
            pipelines.append((f"{module.__name__}:{name}", value))
    return contracts, pipelines


def contract_entries(module: Any) -> list[tuple[str, type, set[str]]]:
    """(report name, class, the module attributes bound to it) of each contract class
    ``module`` owns. Identity is the object: two classes one factory made share a
    ``__hoare__.name``; the second is named after the attribute that holds it
    (``module:Name``), so neither hides the other in the report."""
    entries: list[tuple[str, type, set[str]]] = []
    by_id: dict[int, int] = {}
    names: set[str] = set()
    for attribute, value in list(vars(module).items()):
        if not isinstance(value, (type, list, tuple, dict)):
            continue
        for cls in _classes(value):
            if id(cls) in by_id:
                if value is cls:
                    entries[by_id[id(cls)]][2].add(attribute)
                continue
            if not _owned(cls, module):
                continue
            name = cls.__hoare__.name  # type: ignore[attr-defined]
            if name in names:
                name = f"{module.__name__}:{attribute}" if value is cls else name
                suffix = 2
                base = name
                while name in names:
                    name = f"{base}#{suffix}"
                    suffix += 1
            names.add(name)
            by_id[id(cls)] = len(entries)
            entries.append((name, cls, {attribute} if value is cls else set()))
    return entries


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
    for item in list(items)[:1000]:
        if isinstance(item, type) and "__hoare__" in item.__dict__:
            yield item


def _owned(cls: type, module: Any) -> bool:
    if cls.__module__ == module.__name__:
        return True
    home = sys.modules.get(cls.__module__)
    return home is None or getattr(home, cls.__qualname__.split(".")[0], None) is not cls


def _class_location(cls: type) -> tuple[str | None, int | None]:
    from hoare.declaration.source import class_line, module_file

    file = module_file(sys.modules.get(cls.__module__))
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

# Seconds a worker may spend importing one unit (``--import-timeout``, ``[tool.hoare]
# import_timeout``): an import that loops or waits forever is reported as that unit's
# import error, not waited on.
DEFAULT_IMPORT_TIMEOUT = 60.0


def _spawn() -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-m", "hoare.verifier.project.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="surrogateescape", env=env,
                            cwd=os.getcwd())


def _finish(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        try:
            process.stdin.close()
        except OSError:
            pass
    process.wait()


def run_units(units: Sequence[Unit], options: SolverOptions, jobs: int,
              overrides: dict[str, dict[str, int]] | None = None,
              import_timeout: float = DEFAULT_IMPORT_TIMEOUT, *, isolated: bool = False
              ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, result)`` of every unit, in ``units`` order. ``jobs`` > 1 or
    ``isolated``: in worker processes that each import their own units, so a module
    that exits or hangs at import is that unit's error, not the caller's end. Else in
    this process (the caller vouches for the code it imports)."""
    if isolated and units:
        yield from _subprocesses(units, options, max(1, min(jobs, len(units))), overrides,
                                 import_timeout)
        return
    if jobs <= 1 or len(units) <= 1:
        for index, unit in enumerate(units):
            yield index, _safe_run(unit, options, overrides)
        return
    yield from _subprocesses(units, options, min(jobs, len(units)), overrides,
                             import_timeout)


def _subprocesses(units: Sequence[Unit], options: SolverOptions, workers: int,
                  overrides: dict[str, dict[str, int]] | None, import_timeout: float
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    dispatch = Dispatch(units, options, workers, overrides, import_timeout)
    for index in range(len(units)):
        dispatch.send(index)
    dispatch.close()
    for index in range(len(units)):
        yield index, dispatch.result(index)
    dispatch.join()


_SIGNALS = {-int(s): s.name for s in __import__("signal").Signals}


def _ended(status: int | None) -> str:
    """How a worker process ended, for the unit's error."""
    if status is None:
        return "closed its result channel"
    if status < 0:
        return f"was killed by {_SIGNALS.get(status, f'signal {-status}')}"
    return f"exited with status {status}"


def _well_formed(found: object) -> TypeGuard[dict[str, Any]]:
    """A worker's answer has the shape of a unit result (a module that writes to the
    result channel cannot pass garbage off as a verdict)."""
    return isinstance(found, dict) and set(found) == {"contracts", "pipelines", "errors"} \
        and all(isinstance(found[k], list) and all(isinstance(v, dict) for v in found[k])
                for k in found)


class _Worker:
    """One ``python -m hoare.verifier.project.worker`` process and a thread reading its answers
    into a queue, so the parent can wait for one with a time bound."""

    def __init__(self) -> None:
        import queue

        self.process = _spawn()
        self.lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.ready = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            for line in stream:
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put("")  # end of stream

    def next(self, timeout: float | None) -> str | None:
        """The next answer line; "" at the end of the stream; None on timeout."""
        import queue

        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def kill(self) -> None:
        try:
            self.process.kill()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable
            pass


class Dispatch:
    """Units sent to ``python -m hoare.verifier.project.worker`` processes one at a time, as
    the caller finds them (it may still be looking: a unit is checked while the next
    one's cache key is made); each result is collected by the unit's index.

    Plain subprocesses rather than a fork pool: safe when the caller runs threads,
    never re-imports the caller's ``__main__``, and a unit's import cannot end or
    hijack ``hoare verify``: a worker that exits (``os._exit``, ``sys.exit`` from a
    thread, a signal, a crash in native code) or closes its result channel costs only
    the unit it was on, reported as that unit's error; an import that takes longer than
    ``import_timeout`` seconds is killed and reported the same way."""

    def __init__(self, units: Sequence[Unit], options: SolverOptions, workers: int,
                 overrides: dict[str, dict[str, int]] | None,
                 import_timeout: float = DEFAULT_IMPORT_TIMEOUT) -> None:
        import queue

        self._units = units
        self._options = options
        self._overrides = overrides or {}
        self._import_timeout = import_timeout
        self._todo: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._results: dict[int, dict[str, Any]] = {}
        self._done = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.grow(workers)

    def grow(self, workers: int) -> None:
        """Run ``workers`` worker processes in all (more units found than expected)."""
        if self._closed:
            return
        while len(self._threads) < workers:
            thread = threading.Thread(target=self._feed, daemon=True)
            self._threads.append(thread)
            thread.start()

    def send(self, index: int) -> None:
        self._todo.put(index)

    def close(self) -> None:
        """No more units: each feeding thread stops when the queue is empty."""
        self._closed = True
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

    def _answer(self, worker: _Worker, index: int) -> tuple[dict[str, Any], bool]:
        """The unit's result, and whether the worker can take another unit."""
        import json
        from dataclasses import asdict

        from hoare.verifier.project.worker import IMPORTED, READY, encode_unit

        process = worker.process
        unit = self._units[index]
        assert process.stdin is not None
        if not worker.ready:  # its start is not the unit's import: not time-bound
            first = worker.next(None)
            worker.ready = first is not None and first.strip() == json.dumps(READY)
            if not worker.ready:
                start_status = process.wait()
                return error_result(unit, f"the worker process died while starting (it "
                                          f"{_ended(start_status)}); nothing in it was checked"), \
                    False
        request = {"unit": encode_unit(unit), "options": asdict(self._options),
                   "overrides": self._overrides}
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except (OSError, ValueError):
            pass  # a dead worker: its end of stream says so below
        importing = True
        while True:
            line = worker.next(self._import_timeout if importing else None)
            if line is None:
                worker.kill()
                return error_result(unit, f"import did not finish within "
                                          f"{self._import_timeout:g} s (a loop or a wait at "
                                          f"import time?); set --import-timeout or "
                                          f"[tool.hoare] import_timeout to allow more"), False
            if not line:
                try:
                    status: int | None = process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    status = None
                when = "importing" if importing else "checking"
                return error_result(unit, f"the worker process died while {when} it (it "
                                          f"{_ended(status)}); nothing in it was checked"), False
            try:
                found = json.loads(line)
            except ValueError:
                found = None
            if importing and found == IMPORTED:
                importing = False
                continue
            if not _well_formed(found):
                worker.kill()
                return error_result(unit, "the worker process sent a malformed result "
                                          "(something wrote to its result channel); "
                                          "nothing in it was checked"), False
            return found, True

    def _feed(self) -> None:
        """Run units until told to stop; a worker that dies is replaced, and the unit
        it died on is reported as that unit's error."""
        while True:
            worker = _Worker()
            try:
                while True:
                    index = self._todo.get()
                    if index is None:
                        return
                    try:
                        result, alive = self._answer(worker, index)
                    except Exception as error:  # never lose a unit to a parent-side bug
                        result, alive = error_result(
                            self._units[index],
                            f"internal error: {type(error).__name__}: {error}"), False
                    with self._done:
                        self._results[index] = result
                        self._done.notify_all()
                    if not alive:
                        break
            finally:
                if worker.process.poll() is None and not self._closed_worker(worker):
                    worker.kill()

    @staticmethod
    def _closed_worker(worker: _Worker) -> bool:
        """Ask a healthy worker to stop (end of its input) and wait for it."""
        try:
            _finish(worker.process)
        except OSError:
            return False
        return True


def _safe_run(unit: Unit, options: SolverOptions,
              overrides: dict[str, dict[str, int]] | None = None,
              on_imported: Callable[[], None] | None = None) -> dict[str, Any]:
    """A worker never dies of one unit: an unexpected error is that unit's error."""
    try:
        return run_unit(unit, options, overrides, on_imported)
    except Exception as error:
        return error_result(unit, f"internal error: {type(error).__name__}: {error}")
