"""``make bench``: hoare's speed and cost, side by side with SymbolicAI and the floor.

    .venv/bin/python bench/run.py               # every scenario -> bench/results.json
    .venv/bin/python bench/run.py --quick       # smoke run (< 1 min) -> bench/.work/
    .venv/bin/python bench/run.py --only 3      # one scenario (repeatable: --only 1 --only 2)
    .venv/bin/python bench/run.py --profile     # cProfile of hoare's happy path, then exit

See bench/README.md for what each scenario measures and how.
"""

import argparse
import cProfile
import datetime
import importlib
import json
import os
import platform
import pstats
import subprocess
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import (
    BENCH,
    ROOT,
    WORK,
    Context,
    Report,
    rounded,
    symai_worker,
)

SCENARIOS = {
    "1": "s1_overhead",
    "2": "s2_symai",
    "3": "s3_remedy",
    "4": "s4_impossible",
    "5": "s5_verifier",
    "6": "s6_concurrency",
    "7": "s7_stream",
}
NEEDS_SYMAI = {"2", "3", "4"}


def _select(only: list[str] | None) -> list[str]:
    if not only:
        return list(SCENARIOS)
    chosen = []
    for item in only:
        item = item.lower().lstrip("s")
        matches = [k for k, mod in SCENARIOS.items()
                   if item == k or item in mod.split("_", 1)[1]]
        if not matches:
            names = ", ".join(f"{k} ({m.split('_', 1)[1]})" for k, m in SCENARIOS.items())
            raise SystemExit(f"--only {item!r}: no such scenario; choose from {names}")
        chosen += [m for m in matches if m not in chosen]
    return sorted(chosen)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git() -> dict[str, object]:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=str(ROOT),
                              timeout=30)
        return done.stdout.strip() if done.returncode == 0 else ""

    try:
        return {"commit": git("rev-parse", "HEAD") or None,
                "uncommitted_changes": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}


def machine() -> dict[str, object]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in ("hoare", "pydantic", "pydantic-core", "openai", "z3-solver"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def print_table(reports: list[Report]) -> None:
    rows = [(r.title, "", "", "") for r in reports]  # for the widths only
    body = [row for r in reports for row in r.rows] + rows
    widths = [max(len(row[i]) for row in body) for i in range(4)]
    widths[0] = min(widths[0], 62)
    widths[1] = min(widths[1], 70)
    header = ("figure", "value (median, min–max)", "goal", "met")
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print()
    print(line)
    print("-" * len(line))
    for report in reports:
        status = "" if report.status == "ok" else f"  [{report.status.upper()}]"
        print(f"== {report.key}: {report.title}{status}  ({report.seconds:.1f} s)")
        for row in report.rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    print()


def markdown(results: dict) -> str:
    """The figures of a results file as a markdown table, with the run's context."""
    m, v = results["machine"], results["versions"]
    lines = [
        f"Run of {results['date']} (`{results['command']}`, {results['seconds']} s) on "
        f"{m['cpu']}, {m['cores']} cores (1/5/15-min load average "
        f"{', '.join(str(x) for x in m['load_average_at_start'])} at start, "
        f"{', '.join(str(x) for x in m.get('load_average_at_end', []))} at end), "
        f"Python {m['python']}, "
        f"{m['platform']}; hoare {v['hoare']}, pydantic {v['pydantic']}, z3 {v['z3-solver']}, "
        f"openai {v['openai']}, symbolicai {v['symbolicai'] or '(not measured)'}.",
        "",
        "| figure | value (median, min–max) | goal | met |",
        "|---|---|---|---|",
    ]
    for scenario in results["scenarios"]:
        status = "" if scenario["status"] == "ok" else f" — **{scenario['status']}**"
        lines.append(f"| **{scenario['scenario']}: {scenario['title']}**{status} | | | |")
        for label, value, goal, met in scenario["table"]:
            cells = [c.replace("|", "\\|") for c in (label.strip(), value, goal, met)]
            indent = "&nbsp;&nbsp;" if label.startswith("  ") else ""
            lines.append(f"| {indent}{cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    summary = results["summary"]
    lines += ["", f"Goals met: {summary['met']}/{summary['goals']}."]
    if summary["missed"]:
        lines.append("Missed: " + "; ".join(summary["missed"]) + ".")
    for key, why in summary["not_fully_run"].items():
        lines.append(f"Not fully run: {key}: {why}.")
    return "\n".join(lines)


def profile_happy_path(calls: int = 20000) -> None:
    """Where hoare's happy-path time goes (cProfile, sorted by own time)."""
    from scenarios.contracts import PLAIN_OFF, PLAIN_ON, TICKET, instant

    for cls in (PLAIN_OFF, PLAIN_ON):
        instance = cls(engine=instant())
        instance(TICKET)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            instance(TICKET)
        profiler.disable()
        print(f"\n### cProfile: {calls} happy-path calls of {cls.__name__}")
        stats = pstats.Stats(profiler)
        stats.strip_dirs().sort_stats("tottime").print_stats(20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and sizes: a smoke run in under a minute")
    parser.add_argument("--only", action="append", metavar="SCENARIO",
                        help="run only this scenario (number or name, e.g. 3 or remedy)")
    parser.add_argument("--output", type=Path,
                        help="where to write the JSON results (default: bench/results.json "
                             "for a full run, bench/.work/results-partial.json otherwise)")
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of hoare's happy path and exit")
    parser.add_argument("--markdown", action="store_true",
                        help="print the table of a results file (--output, default "
                             "bench/results.json) as markdown and exit")
    args = parser.parse_args()
    if args.profile:
        profile_happy_path()
        return 0
    if args.markdown:
        print(markdown(json.loads((args.output or BENCH / "results.json").read_text())))
        return 0
    chosen = _select(args.only)
    partial = args.quick or bool(args.only)
    output = args.output or (WORK / "results-partial.json" if partial
                             else BENCH / "results.json")
    started = time.perf_counter()
    date = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
    info = machine()
    print(f"[bench] {date}  {info['cpu']}, {info['cores']} cores, Python {info['python']}"
          f"{'  (quick)' if args.quick else ''}")

    worker, skip_reason = None, None
    if NEEDS_SYMAI & set(chosen):
        worker, skip_reason = symai_worker.start()
        if worker is None:
            print(f"[bench] SymbolicAI scenarios SKIPPED: {skip_reason}")
        else:
            print(f"[bench] SymbolicAI {worker.info['symbolicai']} ready in "
                  f"{symai_worker.VENV.relative_to(ROOT)}")
    ctx = Context(quick=args.quick, symai=worker, symai_skip_reason=skip_reason)
    reports: list[Report] = []
    try:
        for key in chosen:
            module = importlib.import_module(f"scenarios.{SCENARIOS[key]}")
            print(f"[bench] scenario {key}: {module.__doc__.splitlines()[0]}", flush=True)
            begin = time.perf_counter()
            try:
                report = module.run(ctx)
            except Exception as error:  # one broken scenario must not hide the others
                report = Report(SCENARIOS[key][1:], module.__doc__.splitlines()[0].rstrip("."))
                report.status, report.reason = "error", f"{type(error).__name__}: {error}"
                report.rows.append(("ERROR", report.reason[:200], "", ""))
                report.notes.append(traceback.format_exc())
                traceback.print_exc()
            report.seconds = time.perf_counter() - begin
            reports.append(report)
    finally:
        if worker is not None:
            worker.close()

    print_table(reports)
    goals = [g for r in reports for g in r.goals]
    missed = [g for g in goals if not g["met"]]
    not_ok = [r for r in reports if r.status != "ok"]
    info["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results = {
        "date": date,
        "command": " ".join(["bench/run.py", *sys.argv[1:]]),
        "quick": args.quick,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": info,
        "versions": {**versions(),
                     "symbolicai": worker.info["symbolicai"] if worker else None},
        "symbolicai": ({"skipped": skip_reason} if worker is None else
                       {"version": worker.info["symbolicai"],
                        "contract_flags": worker.info["contract_flags"],
                        "remedy_retry_params": worker.info["retry_params"],
                        "virtualenv": str(symai_worker.VENV.relative_to(ROOT))}),
        "git": _git(),
        "summary": {"goals": len(goals), "met": len(goals) - len(missed),
                    "missed": [g["goal"] for g in missed],
                    "not_fully_run": {r.key: f"{r.status}: {r.reason}" for r in not_ok}},
        "scenarios": [rounded(r.as_dict()) for r in reports],
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"[bench] goals met: {len(goals) - len(missed)}/{len(goals)}"
          + (f"; MISSED: {'; '.join(g['goal'] for g in missed)}" if missed else ""))
    for report in not_ok:
        print(f"[bench] scenario {report.key} {report.status.upper()}: {report.reason}")
    shown = output.relative_to(ROOT) if output.is_relative_to(ROOT) else output
    print(f"[bench] results written to {shown} ({results['seconds']} s)")
    return 1 if any(r.status == "error" for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
