"""Scenario 5: verifier scaling. ``bench/generate_contracts.py DIR -n N --seed 0``
(owned by the verifier; ~10% of its contracts carry a deliberate defect) writes N
contract modules; ``hoare verify DIR --json`` is timed on sets of 10, 100 and 1000
contracts, as a separate process, wall clock, sizes interleaved round by round
(3, 3 and 2 runs: the 1000 set takes minutes). Figures: wall time (median, min,
max), time per contract, the growth ratio t(1000)/t(100) (linear: close to 10)
and the marginal time per contract between sizes, which leaves out the fixed
start-up cost (importing z3, pydantic, ...). ``--quick``: 10 and 30 contracts.
"""

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scenarios import BENCH, ROOT, WORK, Context, Report

GENERATOR = BENCH / "generate_contracts.py"
HOARE = Path(sys.executable).parent / "hoare"


def _generate(n: int, directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(GENERATOR), str(directory), "-n", str(n), "--seed", "0"],
                   check=True, capture_output=True, text=True, timeout=600, cwd=str(ROOT))


def _verify(directory: Path) -> tuple[float, int, dict]:
    start = time.perf_counter_ns()
    done = subprocess.run([str(HOARE), "verify", str(directory), "--json"],
                          capture_output=True, text=True, timeout=1800, cwd=str(ROOT))
    elapsed = (time.perf_counter_ns() - start) / 1e9
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {"unparsed_output": (done.stdout + done.stderr)[-400:]}
    return elapsed, done.returncode, report


def _summary(report: dict) -> dict:
    return {"contracts": len(report.get("contracts", [])), **report.get("summary", {})} \
        if "contracts" in report else report


def run(ctx: Context) -> Report:
    report = Report("5_verifier", "Verifier scaling: hoare verify on generated contract sets")
    if not GENERATOR.exists():
        return report.skip("bench/generate_contracts.py does not exist yet (owned by the "
                           "verifier work): nothing to verify")
    if not HOARE.exists():
        return report.skip(f"the `hoare` command is not installed in {HOARE.parent}")
    runs = {10: 2, 30: 2} if ctx.quick else {10: 3, 100: 3, 1000: 2}
    sizes = tuple(runs)
    dirs = {n: WORK / f"contracts-{n}" for n in sizes}
    try:
        for n, directory in dirs.items():
            _generate(n, directory)
    except (subprocess.SubprocessError, OSError) as error:
        detail = getattr(error, "stderr", "") or ""
        return report.skip(f"bench/generate_contracts.py failed: {error} {detail[-300:]}")
    first = _verify(dirs[sizes[0]])  # warm-up: file-system caches, .pyc files
    if first[1] not in (0, 1) or "contracts" not in first[2]:
        return report.skip(f"`hoare verify` did not run (exit {first[1]}): "
                           f"{json.dumps(first[2])[:300]}")
    times: dict[int, list[float]] = {n: [] for n in sizes}
    outcomes: dict[int, dict] = {}
    for index in range(max(runs.values())):
        order = sizes if index % 2 == 0 else tuple(reversed(sizes))
        for n in order:
            if len(times[n]) >= runs[n]:
                continue
            elapsed, code, result = _verify(dirs[n])
            times[n].append(elapsed)
            outcomes[n] = {"exit": code, **_summary(result)}
    for n in sizes:
        median = statistics.median(times[n])
        report.figures[f"n_{n}"] = {
            "wall_s": {"median": round(median, 3), "min": round(min(times[n]), 3),
                       "max": round(max(times[n]), 3), "runs": runs[n]},
            "ms_per_contract": round(median / n * 1e3, 3),
            "result": outcomes[n],
        }
        report.row(f"{n} contracts: wall time (per contract)",
                   f"{median:.2f} s ({min(times[n]):.2f}–{max(times[n]):.2f}); "
                   f"{median / n * 1e3:.1f} ms/contract",
                   "", None)
        report.row(f"  {n} contracts: exit code, verdicts", json.dumps(outcomes[n]))
    med = {n: statistics.median(times[n]) for n in sizes}
    if 1000 in med:
        growth = med[1000] / med[100]
        marginal_low = (med[100] - med[10]) / 90
        marginal_high = (med[1000] - med[100]) / 900
        report.ratios["t1000/t100"] = round(growth, 3)
        report.ratios["marginal_per_contract_ratio"] = round(marginal_high / marginal_low, 3)
        report.figures["marginal_ms_per_contract"] = {
            "10_to_100": round(marginal_low * 1e3, 3), "100_to_1000": round(marginal_high * 1e3, 3)}
        linear = 7.5 <= growth <= 12.5
        report.goal("growth ratio t(1000)/t(100)", round(growth, 2), "close to 10 (±25%)", linear)
        report.row("growth ratio t(1000)/t(100)", f"{growth:.2f}", "close to 10 (±25%)", linear)
        report.row("  marginal ms/contract 10→100, 100→1000",
                   f"{marginal_low * 1e3:.2f}, {marginal_high * 1e3:.2f}")
    else:
        report.ratios["t30/t10"] = round(med[30] / med[10], 3)
        report.row("growth ratio t(30)/t(10) (quick run)", f"{med[30] / med[10]:.2f}")
        report.partial("--quick: 10 and 30 contracts only, no t(1000)/t(100)")
    return report
