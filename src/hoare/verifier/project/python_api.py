"""``verify`` and ``verify_found``: the verifier as a Python call (``hoare.verifier``'s
public face re-exports them), where ``hoare verify`` is ``run.run_verify``.

``verify`` takes an object (a module, a ``@contract`` class, an instance, a pipeline)
and checks it in this process, or a target as the command takes it (a path, a module
name) and checks it in a worker process. ``verify_found`` checks what ``discover``
imported; with ``jobs`` > 1 its contracts are checked through ``dispatch.run_units``'s
worker processes, one per module, and the report is the same as a serial run's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from hoare.verifier.project.discovery import DiscoveryError, Found, Staged, is_pipeline
from hoare.verifier.project.targets import Unit
from hoare.verifier.report.model import ContractReport, Report
from hoare.verifier.solve.lock import Z3_LOCK
from hoare.verifier.solve.solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, SolverOptions

__all__ = ["verify", "verify_found"]


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
        from hoare.verifier.project.dispatch import run_units
        from hoare.verifier.project.run import assemble
        from hoare.verifier.project.targets import plan

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


def _pipeline_name(pipeline: Staged) -> str:
    """``module:variable`` when a module of its stages holds it, else its repr."""
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

    ``jobs`` > 1 checks the contracts of each module in one of that many worker
    processes (``dispatch.run_units``), which import the module again; the report is the
    same as one process's. When the workers cannot give that report (one module, a
    module that does not import again alike), the contracts are checked here.
    """
    if not isinstance(found, Found):
        raise TypeError(f"verify_found needs what discover() returned (a Found), got "
                        f"{type(found).__name__}; to verify a class or module use verify()")
    with Z3_LOCK:
        return _verify_found(found, timeout_ms=timeout_ms, rlimit=rlimit, jobs=jobs)


def _verify_found(found: Found, *, timeout_ms: int, rlimit: int, jobs: int) -> Report:
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.checks.pipelines import check_pipeline
    from hoare.verifier.project.units import description_of

    options = SolverOptions(timeout_ms=timeout_ms, rlimit=rlimit)
    start = time.perf_counter()
    report = Report()
    in_workers = _in_workers(found, options, jobs) if jobs > 1 else None
    if in_workers is not None:
        report.contracts.extend(in_workers)
    else:
        for _name, cls in found.contracts:
            report.contracts.append(check_contract(description_of(cls), options))
    for (name, _cls), contract_report in zip(found.contracts, report.contracts, strict=True):
        contract_report.name = name  # factory products share __hoare__.name: named apart
    for name, pipeline in found.pipelines:
        report.pipelines.append(check_pipeline(pipeline.stages, name, options))
    report.seconds = time.perf_counter() - start
    return report


def _in_workers(found: Found, options: SolverOptions, jobs: int
                ) -> list[ContractReport] | None:
    """The reports of ``found.contracts`` (in order) from ``dispatch.run_units``'s worker
    processes, one unit per module; None when they cannot be the serial run's reports:
    fewer than two modules hold contracts, a module has no file to import again, or a
    worker's import or names differ from this process's."""
    from hoare.declaration.source import module_file
    from hoare.verifier.project.dispatch import run_units

    holders = {cls.__module__ for _name, cls in found.contracts}
    modules = [m for m in found.modules if m.__name__ in holders]
    if len(modules) < 2 or len(found.contracts) < 2 or \
            {m.__name__ for m in modules} != holders:
        return None
    units: list[Unit] = []
    for module in modules:
        file = module_file(module)
        if not file:
            return None
        units.append(Unit(module.__name__, Path(file)))
    by_name: dict[str, list[dict[str, Any]]] = {}
    for _index, result in run_units(units, options, jobs):
        if result["errors"]:
            return None
        for data in result["contracts"]:
            by_name.setdefault(data["name"], []).append(data)
    reports: list[ContractReport] = []
    for name, _cls in found.contracts:
        candidates = by_name.get(name)
        if not candidates:
            return None
        report = ContractReport.from_json(candidates.pop(0))
        report.file = report.line = None  # as a serial run: no location
        for check in report.checks:
            check.file = check.line = None
        reports.append(report)
    return reports
