"""The differential fuzzer of ``hoare verify`` and the pre-flight: ``make fuzz``.

    HOARE_FUZZ_CASES=20000 HOARE_FUZZ_SEED=1 python -m tests.fuzz

Each case is drawn from ``(seed, index)``, verified, asked of the pre-flight and
searched for a contradiction in real Python (``oracle``). A contradiction is
minimized (``minimize``) and printed as a reproducer (the module source, the
value); the run then exits 1. The summary gives the number of cases, the
constructs covered (grammar productions, registry keys) and the share of
definite verdicts; on the baseline's seed and case count, a share below the
recorded one fails the run (``baseline.json``).

Environment: ``HOARE_FUZZ_CASES`` (default 20000), ``HOARE_FUZZ_SEED`` (default:
random, printed), ``HOARE_FUZZ_JOBS`` (worker processes, default 2),
``HOARE_FUZZ_ONLY`` (one case index: replay it and print its source).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import random
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from .cases import Case, draw_case
from .minimize import minimize
from .oracle import CaseResult, Contradiction, run_case

__all__ = ["Summary", "case_seed", "main", "run_cases"]

BASELINE = Path(__file__).with_name("baseline.json")
CASE_SECONDS = 30  # a case past this is counted as timed out (z3 queries have their own bound)
MINIMIZE_SECONDS = 90.0
DEFINITE = ("pass", "fail", "warn")
TOLERANCE = 0.01  # z3's resource limits may tip a rare query to unknown between machines


class CaseTimeout(BaseException):
    """Raised by the alarm in a case past ``CASE_SECONDS`` (not an ``Exception``, so a
    predicate's ``except Exception`` cannot swallow it)."""


class FuzzConfigError(ValueError):
    """An environment variable of the fuzzer holds something unusable."""


def case_seed(seed: int, index: int) -> int:
    """The seed of case ``index`` of a run: independent of the number of workers."""
    return random.Random(f"{seed}:{index}").getrandbits(63)


@dataclass
class Summary:
    cases: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    timeouts: list[int] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    covered: Counter[str] = field(default_factory=Counter)
    found: list[tuple[int, str, Contradiction, str]] = field(default_factory=list)

    def add(self, index: int, result: CaseResult | None, reproducer: str = "") -> None:
        self.cases += 1
        if result is None:
            self.timeouts.append(index)
            return
        if result.skipped is not None:
            self.skipped[result.skipped.split(":")[0]] += 1
            return
        self.statuses.update(result.statuses)
        self.covered.update(result.covered)
        for contradiction in result.contradictions[:1]:
            self.found.append((index, result.source, contradiction, reproducer))

    def checks(self) -> Counter[str]:
        """Verify checks by status (the pre-flight's answers and the decoding schema's
        replay are not checks)."""
        out: Counter[str] = Counter()
        for key, count in self.statuses.items():
            kind, status = key.split(":")
            if kind not in ("preflight", "decoding"):
                out[status] += count
        return out

    def definite_share(self) -> float:
        checks = self.checks()
        total = sum(checks.values())
        return sum(checks[s] for s in DEFINITE) / total if total else 0.0


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise CaseTimeout


def _quiet() -> None:
    """The verifier logs refuted translations and falsifier errors: the fuzzer reports
    contradictions itself, and generated predicates warn about `is` with literals."""
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")


def _one(task: tuple[int, int, bool]) -> tuple[int, CaseResult | None, str]:
    """Run case ``index`` of run ``seed`` under the time bound; minimize a contradiction."""
    seed, index, shrink = task
    _quiet()
    case = draw_case(case_seed(seed, index))
    bounded = _in_main_thread()  # a pool worker runs tasks in its main thread too
    if bounded:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        result = run_case(case)
    except CaseTimeout:
        return index, None, ""
    finally:
        if bounded:
            signal.setitimer(signal.ITIMER_REAL, 0)
    reproducer = ""
    if result.contradictions and shrink:
        reproducer = _reproducer(case, result.contradictions[0])
    return index, result, reproducer


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


def _reproducer(case: Case, found: Contradiction) -> str:
    try:
        small, result = minimize(case, found, run_case, MINIMIZE_SECONDS)
    except CaseTimeout:
        return ""
    same = next((c for c in result.contradictions if c.kind == found.kind), found)
    return (f"--- minimized reproducer ({same.where}: {same.detail}) ---\n"
            f"{result.source or small.render()}\n--- value ---\n{same.value}\n")


def run_cases(seed: int, count: int, jobs: int = 2, shrink: bool = True,
              start: int = 0, progress: bool = False) -> Summary:
    """Run cases ``start .. start+count`` of run ``seed`` in ``jobs`` processes;
    ``progress`` prints a line every 1,000 cases and each contradiction as found."""
    summary = Summary()
    tasks = [(seed, index, shrink) for index in range(start, start + count)]
    begin = time.monotonic()
    for index, result, reproducer in _results(tasks, jobs):
        summary.add(index, result, reproducer)
        if progress and result is not None and result.contradictions:
            print(f"  contradiction in case {index}: {result.contradictions[0].where}",
                  file=sys.stderr, flush=True)
        if progress and summary.cases % 1000 == 0:
            print(f"  {summary.cases} cases, {time.monotonic() - begin:.0f} s, definite "
                  f"share {summary.definite_share():.4f}", file=sys.stderr, flush=True)
    return summary


def _results(tasks: Sequence[tuple[int, int, bool]], jobs: int
             ) -> Iterator[tuple[int, CaseResult | None, str]]:
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for task in tasks:
            yield _one(task)
        return
    # fork: workers inherit the imported library; maxtasksperchild bounds what the
    # per-class caches (models, pre-flights) hold in a long run
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=400) as pool:
        yield from pool.imap_unordered(_one, tasks, chunksize=4)


def _env_int(name: str, default: int | None, low: int) -> int | None:
    text = os.environ.get(name)
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise FuzzConfigError(f"{name} must be an integer, got {text!r:.60}") from None
    if value < low:
        raise FuzzConfigError(f"{name} must be at least {low}, got {value}")
    return value


def coverage_lines(summary: Summary) -> list[str]:
    from hoare.verifier.translate.calls import registered
    REGISTRY = registered()

    lines = ["constructs covered (grammar productions and model features, by count):"]
    for key, count in sorted(summary.covered.items()):
        lines.append(f"  {key}: {count}")
    produced = {k.removeprefix("call:") for k in summary.covered if k.startswith("call:")}
    missing = sorted(set(REGISTRY) - produced)
    lines.append(f"registry keys produced: {len(set(REGISTRY) & produced)} of {len(REGISTRY)}"
                 + (f"; never produced: {', '.join(missing)}" if missing else ""))
    return lines


def report(summary: Summary, seed: int, elapsed: float) -> list[str]:
    checks = summary.checks()
    lines = [f"hoare fuzz: seed {seed}, {summary.cases} cases in {elapsed:.0f} s "
             f"({sum(summary.skipped.values())} models pydantic refused, "
             f"{len(summary.timeouts)} timed out)"]
    lines.append("verdicts by check: " + ", ".join(
        f"{k} {v}" for k, v in sorted(summary.statuses.items())))
    lines.append(f"verify checks: {sum(checks.values())}, definite (pass/fail/warn) share "
                 f"{summary.definite_share():.4f}")
    if summary.timeouts:
        lines.append(f"timed out (case indices): {summary.timeouts[:20]}")
    return lines


def check_baseline(summary: Summary, seed: int, count: int) -> str | None:
    """A message when this run is the baseline's and its share fell below it."""
    try:
        baseline = json.loads(BASELINE.read_text())
    except (OSError, ValueError):
        return None
    run = next((r for r in baseline.get("runs", ())
                if r.get("seed") == seed and r.get("cases") == count), None)
    if run is None:
        return None
    share, recorded = summary.definite_share(), float(run["definite_share"])
    if share + TOLERANCE < recorded:
        return (f"the share of definite verdicts fell to {share:.4f} on seed {seed}, below "
                f"the baseline {recorded:.4f} (tests/fuzz/baseline.json)")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    _quiet()
    try:
        count = _env_int("HOARE_FUZZ_CASES", 20_000, 1)
        seed = _env_int("HOARE_FUZZ_SEED", None, 0)
        jobs = _env_int("HOARE_FUZZ_JOBS", 2, 1)
        only = _env_int("HOARE_FUZZ_ONLY", None, 0)
    except FuzzConfigError as error:
        print(f"hoare fuzz: {error}", file=sys.stderr)
        return 2
    assert count is not None and jobs is not None
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 32)
    print(f"hoare fuzz: seed {seed} (replay: HOARE_FUZZ_SEED={seed}), {count} cases, "
          f"{jobs} jobs", flush=True)
    start = time.monotonic()
    if only is not None:
        print(draw_case(case_seed(seed, only)).render())
        summary = run_cases(seed, 1, 1, start=only)
    else:
        summary = run_cases(seed, count, jobs, progress=True)
    for line in report(summary, seed, time.monotonic() - start):
        print(line)
    for line in coverage_lines(summary):
        print(line)
    failed = False
    for index, source, contradiction, reproducer in summary.found:
        failed = True
        print(f"\nCONTRADICTION in case {index} (replay: HOARE_FUZZ_SEED={seed} "
              f"HOARE_FUZZ_ONLY={index}): {contradiction.where}: {contradiction.detail}")
        print(reproducer or f"{source}\n--- value ---\n{contradiction.value}")
    below = check_baseline(summary, seed, count)
    if below:
        print(f"\nhoare fuzz: {below}")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
