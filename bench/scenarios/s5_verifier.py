"""Scenario 5: ``hoare verify`` at scale, cold and warm.

``bench/generate_contracts.py DIR -n N --seed 0`` (~10% of its contracts carry a
deliberate defect) writes N contract modules and a manifest of the verdicts each
must get. ``hoare verify DIR --format json`` runs as a separate process (wall clock,
what CI waits for), with its default workers (``-j auto``):

* **cold**: an empty verdict cache each run (every file imported and checked);
* **warm**: the cache filled by a previous run, nothing changed (nothing imported).

Sizes 10, 100 and 1000 (``--quick``: 10 and 30), interleaved round by round. Goals
(issue 11): 1000 contracts in <= 10 s cold and <= 1 s warm, growth t(1000)/t(100)
<= 11 cold, and every verdict equal to the manifest's (a check or contract missing
from the report, or extra, is a mismatch, never a pass). Peak RSS and CPU time (user +
system) per run come from ``wait4`` (the process and the workers it waited for): on a
shared machine the wall clock includes time spent descheduled, CPU time does not.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generate_contracts import mismatches

from scenarios import BENCH, ROOT, WORK, Context, Report

GENERATOR = BENCH / "generate_contracts.py"
HOARE = Path(sys.executable).parent / "hoare"


def _generate(n: int, directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(GENERATOR), str(directory), "-n", str(n), "--seed", "0"],
                   check=True, capture_output=True, text=True, timeout=600, cwd=str(ROOT))


def _verify(directory: Path, cache: Path) -> tuple[float, int, dict, float, float]:
    """(seconds, exit status, report, peak RSS in MiB, CPU seconds) of one run, from
    ``directory``."""
    env = {**os.environ, "HOARE_CACHE_DIR": str(cache)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter_ns()
        process = subprocess.Popen([str(HOARE), "verify", ".", "--format", "json"],
                                   stdout=out, stderr=err, cwd=str(directory), env=env)
        _pid, status, usage = os.wait4(process.pid, 0)
        elapsed = (time.perf_counter_ns() - start) / 1e9
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        try:
            report = json.loads(text)
        except ValueError:
            report = {"unparsed_output": (text + err.read().decode())[-400:]}
    return (elapsed, process.returncode, report, usage.ru_maxrss / 1024,
            usage.ru_utime + usage.ru_stime)


def _edited_run(directory: Path, cache: Path, name: str, *extra: str) -> float:
    """Seconds of a run after appending a comment to ``name`` (one changed file)."""
    path = directory / name
    path.write_text(path.read_text() + f"# edited {time.time_ns()}\n")
    env = {**os.environ, "HOARE_CACHE_DIR": str(cache)}
    start = time.perf_counter_ns()
    subprocess.run([str(HOARE), "verify", *extra, "--format", "json"], cwd=str(directory),
                   env=env, capture_output=True, timeout=600)
    return (time.perf_counter_ns() - start) / 1e9


def _mismatches(directory: Path, report: dict) -> list[str]:
    """How the report's verdicts differ from the generator's manifest: a missing or
    extra check, or contract, is a mismatch (``generate_contracts.mismatches``)."""
    manifest = json.loads((directory / "manifest.json").read_text())
    return mismatches(manifest, report)


def run(ctx: Context) -> Report:
    report = Report("5_verifier", "hoare verify at scale: cold and warm, generated contracts")
    if not HOARE.exists():
        return report.skip(f"the `hoare` command is not installed in {HOARE.parent}")
    sizes = (10, 30) if ctx.quick else (10, 100, 1000)
    cold_runs = {10: 2, 30: 2} if ctx.quick else {10: 3, 100: 3, 1000: 2}
    warm_runs = {n: 3 for n in sizes}
    dirs = {n: WORK / f"contracts-{n}" for n in sizes}
    caches = {n: WORK / f"verify-cache-{n}" for n in sizes}
    try:
        for n, directory in dirs.items():
            _generate(n, directory)
    except (subprocess.SubprocessError, OSError) as error:
        detail = getattr(error, "stderr", "") or ""
        return report.skip(f"bench/generate_contracts.py failed: {error} {detail[-300:]}")
    first = _verify(dirs[sizes[0]], caches[sizes[0]])  # warm-up: page cache, .pyc files
    if first[1] not in (0, 1) or "contracts" not in first[2]:
        return report.skip(f"`hoare verify` did not run (exit {first[1]}): "
                           f"{json.dumps(first[2])[:300]}")
    cold: dict[int, list[float]] = {n: [] for n in sizes}
    warm: dict[int, list[float]] = {n: [] for n in sizes}
    cpu: dict[str, list[float]] = {}
    rss: dict[str, float] = {}
    mismatched: dict[int, list[str]] = {}
    summaries: dict[int, dict] = {}
    for index in range(max(cold_runs.values())):
        order = sizes if index % 2 == 0 else tuple(reversed(sizes))
        for n in order:
            if len(cold[n]) >= cold_runs[n]:
                continue
            shutil.rmtree(caches[n], ignore_errors=True)
            elapsed, code, result, peak, seconds = _verify(dirs[n], caches[n])
            cold[n].append(elapsed)
            cpu.setdefault(f"cold_{n}", []).append(seconds)
            rss[f"cold_{n}"] = max(rss.get(f"cold_{n}", 0.0), peak)
            mismatched.setdefault(n, []).extend(_mismatches(dirs[n], result))
            summaries[n] = {"exit": code, "errors": len(result.get("errors", [])),
                            **result.get("summary", {})}
    for index in range(max(warm_runs.values())):
        order = sizes if index % 2 == 0 else tuple(reversed(sizes))
        for n in order:
            elapsed, _code, result, peak, seconds = _verify(dirs[n], caches[n])
            warm[n].append(elapsed)
            cpu.setdefault(f"warm_{n}", []).append(seconds)
            rss[f"warm_{n}"] = max(rss.get(f"warm_{n}", 0.0), peak)
            mismatched[n].extend(_mismatches(dirs[n], result))
    for n in sizes:
        for label, times in (("cold", cold[n]), ("warm", warm[n])):
            median = statistics.median(times)
            used = cpu[f"{label}_{n}"]
            report.figures[f"{label}_{n}"] = {
                "wall_s": {"median": round(median, 3), "min": round(min(times), 3),
                           "max": round(max(times), 3), "runs": len(times)},
                "cpu_s": {"median": round(statistics.median(used), 3),
                          "min": round(min(used), 3), "max": round(max(used), 3)},
                "ms_per_contract": round(median / n * 1e3, 3),
                "peak_rss_mib": round(rss[f"{label}_{n}"], 1),
            }
            report.row(f"{n} contracts, {label}: wall time",
                       f"{median:.2f} s ({min(times):.2f}–{max(times):.2f}); "
                       f"cpu {statistics.median(used):.2f} s ({min(used):.2f}–"
                       f"{max(used):.2f}); {median / n * 1e3:.1f} ms/contract; peak RSS "
                       f"{rss[f'{label}_{n}']:.0f} MiB")
        # every run's differences, each counted once (a run's own are distinct)
        distinct = sorted(set(mismatched[n]))
        report.figures[f"result_{n}"] = {**summaries[n], "manifest_mismatches": len(distinct),
                                         "mismatch_examples": distinct[:10]}
        report.row(f"  {n} contracts: verdicts vs the manifest",
                   f"{len(distinct)} mismatches{': ' + '; '.join(distinct[:3]) if distinct else ''}"
                   f"; {json.dumps(summaries[n])}", "0 mismatches", not distinct)
        report.goal(f"verdicts equal the manifest ({n})", len(distinct), "0", not distinct)
    if 1000 not in sizes:
        report.partial("--quick: 10 and 30 contracts only, no 1000-contract goals")
        return report
    # one contract edited: the full run re-checks that file only; the pre-commit hook
    # (--only-affected with the changed file) looks at nothing else
    edited = [_edited_run(dirs[1000], caches[1000], f"contract_{k:04d}.py", ".")
              for k in (100, 200, 300)]
    hook = [_edited_run(dirs[1000], caches[1000], f"contract_{k:04d}.py", "--only-affected",
                        f"contract_{k:04d}.py") for k in (400, 500, 600)]
    for label, times, goal, limit in (
            ("1000 contracts, one edited: full run", edited, "", None),
            ("pre-commit hook, one changed file of 1000", hook, "<= 5 s", 5.0)):
        median = statistics.median(times)
        key = "one_edited_1000" if limit is None else "pre_commit_one_of_1000"
        report.figures[key] = {"wall_s": {"median": round(median, 3),
                                          "min": round(min(times), 3),
                                          "max": round(max(times), 3), "runs": len(times)}}
        met = None if limit is None else median <= limit
        report.row(label, f"{median:.2f} s ({min(times):.2f}–{max(times):.2f})", goal, met)
        if limit is not None:
            report.goal(label, round(median, 2), goal, median <= limit)
    c1000, w1000 = statistics.median(cold[1000]), statistics.median(warm[1000])
    growth = c1000 / statistics.median(cold[100])
    report.ratios["cold_t1000/t100"] = round(growth, 3)
    report.ratios["warm/cold_1000"] = round(w1000 / c1000, 4)
    report.ratios["rss_cold_1000/rss_cold_100"] = round(rss["cold_1000"] / rss["cold_100"], 3)
    for name, value, target, met in (
            ("1000 contracts cold", round(c1000, 2), "<= 10 s", c1000 <= 10),
            ("1000 contracts warm", round(w1000, 2), "<= 1 s", w1000 <= 1),
            ("growth cold t(1000)/t(100)", round(growth, 2), "<= 11", growth <= 11)):
        report.goal(name, value, target, met)
        report.row(name, f"{value}", target, met)
    report.row("peak RSS 1000/100 cold", f"{rss['cold_1000'] / rss['cold_100']:.2f}",
               "flat (close to 1)")
    return report
