"""One ``hoare verify`` run: configuration, targets, cache, workers, report, exit status.

Order of work: read ``[tool.hoare]`` (command-line values win), resolve the targets
to units without importing anything, answer every unchanged unit from the verdict
cache, check the rest (in worker processes by default), assemble one report in
target order, apply the configured ``ignore`` entries, render it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoare.errors import UsageError
from hoare.verifier.project.config import ConfigError, ProjectConfig, find_pyproject, load, matches
from hoare.verifier.project.discovery import DiscoveryError
from hoare.verifier.project.dispatch import DEFAULT_IMPORT_TIMEOUT, Dispatch
from hoare.verifier.project.result_cache import VerdictCache, default_directory
from hoare.verifier.project.targets import Unit, plan
from hoare.verifier.project.units import error_result
from hoare.verifier.report.model import ContractReport, ImportProblem, Report, shown
from hoare.verifier.solve.solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, SolverOptions

__all__ = ["VerifyError", "VerifyRun", "assemble", "run_verify"]


class VerifyError(UsageError):
    """A usage or configuration error: nothing was verified (exit 2)."""


@dataclass
class VerifyRun:
    """What one ``hoare verify`` run found: the report, its rendered text, the exit
    status, lines for standard error, and how many units came from the cache or were
    checked. (Named apart from the kernel's ``Outcome`` of one contract call.)"""

    report: Report
    text: str
    status: int
    messages: list[str] = field(default_factory=list)  # for standard error
    cached: int = 0
    checked: int = 0


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hoare")
    except PackageNotFoundError:  # pragma: no cover - a source tree
        return "unknown"


def run_verify(targets: Sequence[str], *, format: str | None = None,
               strict: bool | None = None, timeout_ms: int | None = None,
               rlimit: int | None = None, jobs: int | None = None,
               exclude: Sequence[str] = (), cache: bool = True,
               cache_dir: str | None = None, config: str | None = None,
               verbose: bool = False, only_affected: bool = False,
               import_timeout: float | None = None) -> VerifyRun:
    """Everything ``hoare verify`` does but print. ``None``: take ``[tool.hoare]``'s
    value, else the default. ``jobs`` 0: one worker per core. ``only_affected``: the
    ``targets`` are changed files (a pre-commit hook's arguments); verify the units of
    ``[tool.hoare] targets`` (else the project root) that are, or import, one of them.
    ``import_timeout``: seconds each unit's import may take (``DEFAULT_IMPORT_TIMEOUT``).
    Every unit is imported in a worker process, never in this one: a module that exits,
    kills or hangs its process at import is that unit's error, never a silent pass."""
    start = time.perf_counter()
    project = _config(config)
    changed: list[Path] = []
    if only_affected:
        changed = [Path(t).resolve() for t in targets if t.endswith(".py")]
        targets = list(project.targets or [str(project.root)])
    targets = list(targets) or list(project.targets or [])
    if not targets:
        raise VerifyError("no target: name files, directories or modules, or set "
                          "[tool.hoare] targets in pyproject.toml")
    chosen_format = format or project.format or "table"
    strict = bool(strict if strict is not None else project.strict)
    options = SolverOptions(timeout_ms=timeout_ms or project.timeout_ms or DEFAULT_TIMEOUT_MS,
                            rlimit=rlimit or project.rlimit or DEFAULT_RLIMIT)
    jobs = jobs if jobs is not None else (project.jobs if project.jobs is not None else 0)
    bound = import_timeout if import_timeout is not None else \
        project.import_timeout if project.import_timeout is not None else \
        DEFAULT_IMPORT_TIMEOUT
    if not (isinstance(bound, (int, float)) and 0 < bound < float("inf")):
        raise VerifyError(f"import timeout must be a positive number of seconds, got {bound!r}")
    try:
        units = plan(targets, [*project.exclude, *exclude])
    except DiscoveryError as error:
        raise VerifyError(str(error)) from error
    use_cache = cache and project.cache is not False
    directory = Path(cache_dir) if cache_dir else project.cache_dir or \
        default_directory(project.root)
    keys = VerdictCache(directory, {"timeout_ms": options.timeout_ms,
                                    "rlimit": options.rlimit, "overrides": project.overrides})
    store = keys if use_cache else None
    if only_affected:
        touched = {str(path) for path in changed}
        units = [u for u in units if keys.imports_any(u.path, touched)]
    results, cached = _results(units, options, jobs, store, project.overrides, float(bound))
    report = assemble(results)
    report.seconds = time.perf_counter() - start
    messages = _apply_ignore(report, project.ignore)
    if not report.errors and not any(u.only for u in units):
        messages += _unknown_overrides(report, project.overrides)
    messages += [f"import error: {problem}" for problem in report.errors]
    found = len(report.contracts) + len(report.pipelines)
    if only_affected and not units:
        pass  # no changed file holds or feeds a contract: nothing to say
    elif not found and not report.errors:
        messages.append(f"no @contract class or Pipeline found in {', '.join(targets)}")
    if cached and chosen_format == "table":
        messages.append(f"{cached} of {len(units)} file(s) unchanged: their verdicts come "
                        f"from the cache (--no-cache checks them again)")
    status = 2 if report.errors else \
        1 if (not report.ok(strict=strict) or
              (strict and not found and not (only_affected and not units))) else 0
    text = _render(report, chosen_format, project.root, verbose)
    # for a terminal: a file name's control characters or undecodable bytes as escapes
    messages = [shown(message, lines=True) for message in messages]
    return VerifyRun(report, text, status, messages, cached, len(units) - cached)


def _config(path: str | None) -> ProjectConfig:
    try:
        if path is not None:
            if not Path(path).is_file():
                raise VerifyError(f"--config {path}: no such file")
            return load(Path(path))
        return load(find_pyproject())
    except ConfigError as error:
        raise VerifyError(str(error)) from error


def _unknown_overrides(report: Report, overrides: dict[str, dict[str, int]]) -> list[str]:
    """Warn about ``[tool.hoare] overrides`` naming no verified contract (a typo would
    otherwise leave the limits it meant to raise silently at their defaults)."""
    import difflib

    names = [r.name for r in (*report.contracts, *report.pipelines)]
    messages = []
    for key in overrides:
        if key in names:
            continue
        close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else \
            f" (the contracts are named module:Class, e.g. {names[0]!r})" if names else ""
        messages.append(f"[tool.hoare] overrides {key!r} names no verified contract{hint}")
    return messages


def _results(units: list[Unit], options: SolverOptions, jobs: int,
             store: VerdictCache | None, overrides: dict[str, dict[str, int]],
             import_timeout: float = DEFAULT_IMPORT_TIMEOUT
             ) -> tuple[list[dict[str, Any]], int]:
    """Each unit's result, in order: from the cache, else checked (and stored). Every
    checked unit is imported in a worker process (one at first, more from the 16th)."""
    results: list[dict[str, Any] | None] = [None] * len(units)
    keys: list[str | None] = [None] * len(units)
    # jobs 0 (auto): a worker costs ~0.3 s to start (Python, pydantic, z3), so below 16
    # files to check one process is faster; from the 16th miss, one process per core,
    # each importing its own files. An explicit -j N > 1 always uses N workers, from the
    # first miss. Each miss is then checked while the other files' keys are made.
    parallel = _cores() if jobs == 0 else jobs
    threshold = 16 if jobs == 0 else 1
    dispatch: Dispatch | None = None
    missing: list[int] = []
    unreadable: dict[int, dict[str, Any]] = {}
    try:
        for index, unit in enumerate(units):
            if unit.problem is not None:  # never opened: a FIFO would block the reader
                unreadable[index] = error_result(unit, unit.problem)
                continue
            key = keys[index] = store.key(unit) if store is not None else None
            if key is not None and store is not None:
                results[index] = store.get(key)
            if results[index] is not None:
                continue
            missing.append(index)
            if dispatch is None:
                dispatch = Dispatch(units, options, 1, overrides, import_timeout)
            dispatch.send(index)
            if len(missing) == threshold and parallel > 1:
                dispatch.grow(parallel)
    except BaseException:
        if dispatch is not None:
            dispatch.close()  # the workers stop after what was sent
        raise
    for index, result in unreadable.items():
        results[index] = result
    checked: Iterator[tuple[int, dict[str, Any]]] = iter(())
    if dispatch is not None:
        dispatch.close()
        checked = ((index, dispatch.result(index)) for index in missing)
    for index, result in checked:
        results[index] = result
        key = keys[index]
        if store is not None and key is not None and _cacheable(result):
            store.put(key, result)
    if dispatch is not None:
        dispatch.join()
    cached = len(units) - len(missing) - len(unreadable)
    if store is not None:
        store.save_imports(keep=max(PRUNE_FLOOR, 4 * len(units)))
        store.prune(keep=max(PRUNE_FLOOR, 4 * len(units)))  # flushes the last pack
    return [r for r in results if r is not None], cached


def _cacheable(result: dict[str, Any]) -> bool:
    """Not a unit that failed to import (maybe a missing package, since installed), nor
    one with an ``unknown`` that a wall-clock limit may have caused: on a loaded
    machine a z3 query can time out that would not on the next run. (The resource
    limit ``rlimit`` is deterministic: its ``unknown`` is cached.)"""
    if result.get("errors"):
        return False
    for report in (*result.get("contracts", []), *result.get("pipelines", [])):
        for check in report.get("checks", []):
            if check.get("status") == "unknown" and ("timed out" in check.get("message", "")
                                                     or "time limit" in check.get("message",
                                                                                  "")):
                return False
    return True


# Entries kept after a run that wrote some: the runs of other target sets stay warm.
PRUNE_FLOOR = 20_000


def assemble(results: Sequence[dict[str, Any]]) -> Report:
    """One report from unit results, in order; a contract or pipeline reachable from
    several units is reported once (the first). Two reports are the same contract only
    when they agree in full (name, location, every check): distinct contracts that
    share a name (a factory's products in different modules) are all kept."""
    import json

    report = Report()
    # per name, the reports kept so far; the canonical text of one (to compare it in
    # full) is made only when a second report of that name comes: most names are unique
    seen: dict[tuple[str, str], list[list[Any]]] = {}

    def whole(kept: list[Any]) -> str:
        if kept[1] is None:
            kept[1] = json.dumps(kept[0], sort_keys=True, default=str)
        return str(kept[1])

    for result in results:
        for group, into in (("contracts", report.contracts), ("pipelines", report.pipelines)):
            for data in result.get(group, []):
                same_name = seen.setdefault((group, data["name"]), [])
                entry: list[Any] = [data, None]
                if same_name and any(whole(kept) == whole(entry) for kept in same_name):
                    continue
                same_name.append(entry)
                into.append(ContractReport.from_json(data))
        report.errors.extend(ImportProblem.from_json(e) for e in result.get("errors", []))
    return report


def _apply_ignore(report: Report, ignore: dict[str, str]) -> list[str]:
    """Mark the checks ``[tool.hoare] ignore`` covers; warn about entries that cover
    nothing (a stale suppression hides nothing and should go)."""
    used: set[str] = set()
    for contract in (*report.contracts, *report.pipelines):
        for check in contract.checks:
            check_id = f"{contract.name}.{check.subject}"
            for pattern, reason in ignore.items():
                if matches(check_id, pattern) or pattern == contract.name:
                    check.ignored = reason
                    used.add(pattern)
                    break
    return [f"[tool.hoare] ignore {pattern!r} matches no check"
            for pattern in ignore if pattern not in used]


def _render(report: Report, chosen: str, root: Path, verbose: bool) -> str:
    if chosen == "json":
        return report.json(indent=2 if len(report.contracts) <= 100 else None)
    if chosen == "sarif":
        from hoare.verifier.report.formats import to_sarif
        from hoare.verifier.report.model import json_text

        return json_text(to_sarif(report, root, _version()), indent=2)
    if chosen == "junit":
        from hoare.verifier.report.formats import to_junit

        return to_junit(report)
    return report.render(verbose=verbose)
