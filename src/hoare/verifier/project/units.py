"""Import one unit (a file or module) and check what it holds (``dispatch`` runs many
units in worker processes).

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
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hoare.verifier.project.discovery import DiscoveryError, Staged, import_file, is_pipeline
from hoare.verifier.project.targets import Unit
from hoare.verifier.report.model import ContractReport, ImportProblem
from hoare.verifier.solve.solver import SolverOptions

__all__ = ["contract_entries", "contracts_of", "description_of", "error_result", "import_problem",
           "run_unit", "run_unit_safely", "tools_of"]

if TYPE_CHECKING:
    from hoare.declaration.description import ContractDescription


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
                "errors": [import_problem(unit, cause, str(error)).to_json()]}
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
            desc = description_of(cls)
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
            report = check_pipeline(pipeline.stages, name, options)
            stage = type(pipeline.stages[0])
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
        return import_file(unit.path)
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


def import_problem(unit: Unit, error: BaseException, text: str) -> ImportProblem:
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


def contracts_of(module: Any) -> tuple[list[tuple[str, type]], list[tuple[str, Staged]]]:
    """The contract classes ``module`` owns and the pipelines among its globals."""
    contracts = [(name, cls) for name, cls, _attributes in contract_entries(module)]
    pipelines: list[tuple[str, Staged]] = []
    for attribute, value in list(vars(module).items()):
        if not isinstance(value, (type, list, tuple, dict)) and is_pipeline(value):
            name = getattr(value, "name", None) or attribute
            pipelines.append((f"{module.__name__}:{name}", value))
    return contracts, pipelines


def description_of(cls: type) -> ContractDescription:
    """The ``__hoare__`` description of a contract class, read as an attribute (a
    query class builds it on first access, through a descriptor)."""
    from hoare.declaration.description import ContractDescription

    desc = getattr(cls, "__hoare__", None)
    if not isinstance(desc, ContractDescription):
        raise TypeError(f"{cls.__qualname__} holds no contract description (__hoare__)")
    return desc


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
            name = description_of(cls).name
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
    desc = description_of(cls)
    report.file, report.line = _class_location(cls)
    where: dict[str, tuple[str, int]] = {}
    for source in (*desc.pre, *desc.post):
        code = getattr(source.fn, "__code__", None)
        if code is not None:
            where[source.id] = (code.co_filename, code.co_firstlineno)
    for check in report.checks:
        file, line = where.get(check.predicate or "", (report.file, report.line))
        check.file, check.line = file, line


def run_unit_safely(unit: Unit, options: SolverOptions,
              overrides: dict[str, dict[str, int]] | None = None,
              on_imported: Callable[[], None] | None = None) -> dict[str, Any]:
    """A worker never dies of one unit: an unexpected error is that unit's error."""
    try:
        return run_unit(unit, options, overrides, on_imported)
    except Exception as error:
        return error_result(unit, f"internal error: {type(error).__name__}: {error}")
