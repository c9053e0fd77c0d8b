"""``hoare verify``: z3 proves contract sets consistent before any LLM call.

    from hoare import verify
    report = verify(my_module)          # or a contract class, an instance, a Pipeline
    print(report.render()); assert report.ok()

See ``checks`` for what is checked and why a verdict can be trusted, ``types``
and ``predicates`` for what is translated, ``preflight`` for the run-time check.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import TYPE_CHECKING

from hoare.verifier.project.discovery import DiscoveryError, Found, discover, is_pipeline
from hoare.verifier.report.model import CheckResult, ContractReport, Report
from hoare.verifier.solve.solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, SolverOptions
from hoare.verifier.translate.values import Z3_LOCK

if TYPE_CHECKING:  # annotations only: ``Any`` is no name of this public module
    from typing import Any

    from hoare.verifier.runtime.preflight import Preflight


def __getattr__(name: str) -> Any:
    """``Preflight`` on first use: the translator is not needed to read a cached
    report (``hoare verify`` on unchanged files imports none of it)."""
    if name == "Preflight":
        from hoare.verifier.runtime.preflight import Preflight

        return Preflight
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CheckResult", "ContractReport", "DiscoveryError", "Preflight", "Report", "SolverOptions",
    "discover", "verify", "verify_found",
]


def verify(target: Any, *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
           rlimit: int = DEFAULT_RLIMIT) -> Report:
    """Verify a module, a ``@contract`` class, a contract instance or a ``Pipeline``, or
    a target as ``hoare verify`` takes it (a path, module or package name, ``:Name``).

    A module: every contract class it defines and every pipeline at its top level.
    A class: statically (``self.<attr>`` from literal defaults of ``__init__``).
    An instance: with its attributes. ``timeout_ms``/``rlimit`` bound each z3 query.
    Safe from many threads at once: z3 work is serialised (``z3_lock``).
    """
    with Z3_LOCK:
        return _verify(target, timeout_ms=timeout_ms, rlimit=rlimit)


def _verify(target: Any, *, timeout_ms: int, rlimit: int) -> Report:
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.checks.pipelines import check_pipeline

    found = Found()
    if isinstance(target, ModuleType):
        found.add_module(target)
        return verify_found(found, timeout_ms=timeout_ms, rlimit=rlimit)
    if isinstance(target, str):  # what `hoare verify TARGET -j 1 --no-cache` checks
        from hoare.verifier.project.run import assemble
        from hoare.verifier.project.targets import plan
        from hoare.verifier.project.units import run_units

        start = time.perf_counter()
        units = plan([target])
        report = assemble([result for _index, result in run_units(  # in a worker: an
            units, SolverOptions(timeout_ms=timeout_ms, rlimit=rlimit), jobs=1,  # exit at
            isolated=True)])  # import is an error raised here, never the caller's exit
        if report.errors:
            raise DiscoveryError("; ".join(str(problem) for problem in report.errors))
        report.seconds = time.perf_counter() - start
        return report
    options = SolverOptions(timeout_ms=timeout_ms, rlimit=rlimit)
    start = time.perf_counter()
    report = Report()
    if isinstance(target, type) and hasattr(target, "__hoare__"):
        report.contracts.append(check_contract(target.__hoare__, options))
    elif is_pipeline(target):
        name = _pipeline_name(target)
        stages = target.stages
        for stage in stages:
            report.contracts.append(check_contract(type(stage).__hoare__, options, stage))
        report.pipelines.append(check_pipeline(stages, name, options))
    elif hasattr(type(target), "__hoare__"):
        report.contracts.append(check_contract(type(target).__hoare__, options, target))
    else:
        raise TypeError(f"verify() takes a module, a @contract class, a contract instance or a "
                        f"Pipeline, got {target!r:.80}")
    report.seconds = time.perf_counter() - start
    return report


def _pipeline_name(pipeline: Any) -> str:
    """``module:variable`` when a module of its stages holds it, else its repr."""
    import sys

    given = getattr(pipeline, "name", None)
    for stage in pipeline.stages:
        module = sys.modules.get(type(stage).__module__)
        if module is None:
            continue
        for attribute, value in vars(module).items():
            if value is pipeline:
                return f"{module.__name__}:{given or attribute}"
    return given or repr(pipeline)


def verify_found(found: Found, *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 rlimit: int = DEFAULT_RLIMIT, jobs: int = 1) -> Report:
    """Verify what ``discover`` found: each contract class, then each pipeline.

    ``jobs`` > 1 verifies contracts in that many forked worker processes (POSIX):
    contracts are independent and named apart, so the report is the same.
    """
    if not isinstance(found, Found):
        raise TypeError(f"verify_found needs what discover() returned (a Found), got "
                        f"{type(found).__name__}; to verify a class or module use verify()")
    with Z3_LOCK:
        return _verify_found(found, timeout_ms=timeout_ms, rlimit=rlimit, jobs=jobs)


def _verify_found(found: Found, *, timeout_ms: int, rlimit: int, jobs: int) -> Report:
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.checks.pipelines import check_pipeline

    options = SolverOptions(timeout_ms=timeout_ms, rlimit=rlimit)
    start = time.perf_counter()
    report = Report()
    classes = [cls for _name, cls in found.contracts]
    if jobs > 1 and len(classes) > 1 and _can_fork():
        report.contracts.extend(_in_workers(classes, options, jobs))
    else:
        for cls in classes:
            report.contracts.append(check_contract(cls.__hoare__, options))  # type: ignore[attr-defined]
    for (name, _cls), contract_report in zip(found.contracts, report.contracts, strict=True):
        contract_report.name = name  # factory products share __hoare__.name: named apart
    for name, pipeline in found.pipelines:
        report.pipelines.append(check_pipeline(pipeline.stages, name, options))  # type: ignore[attr-defined]
    report.seconds = time.perf_counter() - start
    return report


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


_WORK: list[type] = []


def _work(index: int, options: SolverOptions) -> ContractReport:
    from hoare.verifier.checks.contracts import check_contract

    return check_contract(_WORK[index].__hoare__, options)  # type: ignore[attr-defined]


def _in_workers(classes: list[type], options: SolverOptions, jobs: int
                ) -> list[ContractReport]:
    """Fork workers that inherit the imported classes (nothing is pickled but the
    reports); the parent has done no z3 work yet, so forking is safe."""
    import multiprocessing
    from functools import partial

    _WORK[:] = classes
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(classes))) as pool:
            return pool.map(partial(_work, options=options), range(len(classes)),
                            chunksize=max(1, len(classes) // (jobs * 8)))
    finally:
        _WORK.clear()
