"""The ``hoare`` command: ``hoare verify [TARGET...] [--format F] [--strict] ...``.

Exit status: 0 when no check fails, 1 when one fails (with ``--strict``, also when
one is unknown or nothing was found), 2 on a usage, configuration or import error.
The work itself is ``hoare.verifier.run``; this module only parses and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from .verifier.project_config import FORMATS

__all__ = ["main", "run"]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` returns the status."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _UsageError(f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("hoare")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        release = "unknown"
    parser = _Parser(prog="hoare", description="Hoare triples {P} C {Q} around LLM calls.")
    parser.add_argument("--version", action="version", version=f"hoare {release}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    verify = commands.add_parser(
        "verify", help="prove contract sets consistent with z3 (no LLM call)",
        description="Find every @contract class and Pipeline in the given files, "
                    "directories, modules or packages (default: [tool.hoare] targets), and "
                    "check with z3 that pre- and post-conditions can hold, that no "
                    "predicate is vacuous, and that pipeline stages compose. Exit 0: "
                    "nothing fails; 1: a check fails (--strict: or is unknown, or nothing "
                    "was found); 2: usage, configuration or import error.")
    verify.add_argument("targets", nargs="*", metavar="TARGET",
                        help="a .py file, a directory (searched for *.py), a module or "
                             "package name (with its submodules), each optionally with "
                             ":Name for one contract class or pipeline")
    verify.add_argument("--format", choices=FORMATS, default=None,
                        help="table (default), json, sarif (SARIF 2.1.0, for code "
                             "scanning) or junit (JUnit XML)")
    verify.add_argument("--json", action="store_true", help="same as --format json")
    verify.add_argument("-o", "--output", metavar="FILE", default=None,
                        help="write the report to FILE instead of standard output")
    verify.add_argument("--strict", action="store_true", default=None,
                        help="also exit 1 when a check is unknown or nothing was found")
    verify.add_argument("--timeout-ms", type=_positive, default=None, metavar="N",
                        help="time limit of each z3 query in milliseconds (default 5000)")
    verify.add_argument("--rlimit", type=_positive, default=None, metavar="N",
                        help="deterministic z3 resource limit of each query "
                             "(default 10000000, about a second)")
    verify.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N|auto",
                        help="worker processes (default auto: one per core)")
    verify.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files and directories matching GLOB (repeatable)")
    verify.add_argument("--no-cache", action="store_true",
                        help="check every target again, ignoring and not writing the "
                             "verdict cache")
    verify.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="where the verdict cache lives (default .hoare_cache in the "
                             "project root, or $HOARE_CACHE_DIR)")
    verify.add_argument("--config", metavar="PYPROJECT", default=None,
                        help="the pyproject.toml whose [tool.hoare] table to read "
                             "(default: the nearest one upwards from here)")
    verify.add_argument("--only-affected", action="store_true",
                        help="the targets are changed files (as a pre-commit hook passes "
                             "them): verify the contracts of [tool.hoare] targets that are "
                             "in, or import, one of them")
    verify.add_argument("-v", "--verbose", action="store_true",
                        help="show witnesses and notes of passing checks too")
    verify.set_defaults(usage=verify.format_usage())
    stats = commands.add_parser(
        "stats", help="success statistics of the recorded calls",
        description="P_succ with its Wilson 95% interval per contract and run label, per "
                    "predicate family and at the first attempt; cost per success; latency "
                    "percentiles; pre-flight refusals. Calls are recorded with "
                    "hoare.configure(stats=PATH) or $HOARE_STATS.")
    stats.add_argument("--db", required=True, metavar="PATH",
                       help="the SQLite file the calls were recorded in")
    stats.add_argument("--contract", metavar="MODULE:CLASS", default=None,
                       help="only this contract")
    stats.add_argument("--label", default=None, help="only this run label")
    stats.add_argument("--since", default=None, metavar="T",
                       help="only calls since T: an ISO 8601 time or a duration (24h, 7d)")
    stats.add_argument("--json", action="store_true", help="the figures as JSON")
    compare = commands.add_parser(
        "compare", help="compare two run labels on P_succ (an anytime-valid gate)",
        description="Compare the calls recorded under two run labels, per contract, with "
                    "time-uniform confidence sequences: looking after every batch does "
                    "not inflate false verdicts. Exit 0: the candidate is shown no worse "
                    "than the baseline by more than --max-drop; 1: shown worse by more; "
                    "3: not shown either way yet; 2: usage error.")
    compare.add_argument("--db", required=True, metavar="PATH",
                         help="the SQLite file the calls were recorded in")
    compare.add_argument("--baseline", required=True, metavar="LABEL")
    compare.add_argument("--candidate", required=True, metavar="LABEL")
    compare.add_argument("--contract", metavar="MODULE:CLASS", default=None,
                         help="only this contract (default: each contract both ran)")
    compare.add_argument("--max-drop", type=_fraction, default=0.0, metavar="D",
                         help="the largest drop of P_succ the gate accepts (default 0)")
    compare.add_argument("--confidence", type=_open_fraction, default=0.95, metavar="C",
                         help="the confidence of the verdicts (default 0.95)")
    compare.add_argument("--json", action="store_true", help="the comparison as JSON")
    compare.add_argument("--junit", metavar="FILE", default=None,
                         help="also write a JUnit XML file (one testcase per contract)")
    return parser


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") \
            from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def _open_fraction(text: str) -> float:
    value = _fraction(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got "
                                         f"{text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") \
            from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _jobs(text: str) -> int:
    """``auto`` → 0 (one worker per core), else a positive integer."""
    if text == "auto":
        return 0
    return _positive(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hoare`` command; return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as error:
        print(error, file=sys.stderr)
        return 2
    except SystemExit as done:  # --help, --version
        return int(done.code or 0) if not isinstance(done.code, str) else 2
    if args.command == "stats":
        return _stats(args)
    if args.command == "compare":
        return _compare(args)
    if args.command != "verify":
        parser.print_help(sys.stderr)
        return 2
    return _verify(args)


def _stats(args: argparse.Namespace) -> int:
    import json
    import os
    import sqlite3

    from .stats_report import parse_since, render_table, summarize
    from .stats_store import query

    try:
        since = parse_since(args.since) if args.since is not None else None
    except ValueError as error:
        print(f"hoare stats: error: {error}", file=sys.stderr)
        return 2
    if not os.path.isfile(args.db):
        print(f"hoare stats: error: --db {args.db}: no such file", file=sys.stderr)
        return 2
    try:
        rows = query(args.db, args.contract, args.label, since)
    except sqlite3.Error as error:
        print(f"hoare stats: error: --db {args.db}: not a hoare stats file ({error})",
              file=sys.stderr)
        return 2
    summary = summarize(rows)
    print(json.dumps(summary, indent=2) if args.json else render_table(summary))
    return 0


def _compare(args: argparse.Namespace) -> int:
    import json
    import os
    import sqlite3

    from .stats_compare import compare, render_table, verdict_status
    from .stats_store import query

    if not os.path.isfile(args.db):
        print(f"hoare compare: error: --db {args.db}: no such file", file=sys.stderr)
        return 2
    try:
        a_rows = query(args.db, args.contract, args.baseline)
        b_rows = query(args.db, args.contract, args.candidate)
    except sqlite3.Error as error:
        print(f"hoare compare: error: --db {args.db}: not a hoare stats file ({error})",
              file=sys.stderr)
        return 2
    contracts = sorted({r["contract"] for r in a_rows} & {r["contract"] for r in b_rows})
    if not contracts:
        print(f"hoare compare: error: no contract has calls under both {args.baseline!r} "
              f"and {args.candidate!r}", file=sys.stderr)
        return 2
    results = [{"contract": name, **compare(
        [r for r in a_rows if r["contract"] == name],
        [r for r in b_rows if r["contract"] == name], args.max_drop, args.confidence)}
        for name in contracts]
    status = verdict_status(results)
    if args.junit:
        try:
            with open(args.junit, "w", encoding="utf-8") as handle:
                handle.write(_junit(results, args.baseline, args.candidate))
        except OSError as error:
            print(f"hoare compare: error: cannot write {args.junit}: {error}",
                  file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps({"baseline": args.baseline, "candidate": args.candidate,
                          "status": status, "contracts": results}, indent=2))
    else:
        print(render_table(results, args.baseline, args.candidate))
    return status


def _junit(results: list[dict[str, object]], baseline: str, candidate: str) -> str:
    from xml.sax.saxutils import quoteattr

    failures = sum(1 for r in results if r["gate"] == "worse")
    skipped = sum(1 for r in results if r["gate"] == "cannot tell yet")
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             f'<testsuite name={quoteattr(f"hoare compare {baseline} -> {candidate}")} '
             f'tests="{len(results)}" failures="{failures}" skipped="{skipped}">']
    for result in results:
        lines.append(f'  <testcase classname="hoare.compare" '
                     f'name={quoteattr(str(result["contract"]))}>')
        text = f"{result['verdict']}; difference {result['difference']}"
        if result["gate"] == "worse":
            message = quoteattr("candidate worse by more than the margin")
            lines.append(f"    <failure message={message}>{quoteattr(text)[1:-1]}</failure>")
        elif result["gate"] == "cannot tell yet":
            lines.append(f'    <skipped message={quoteattr("cannot tell yet")}/>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def _verify(args: argparse.Namespace) -> int:
    from .verifier.run import VerifyError, run_verify

    try:
        # what the verified modules print must not corrupt a JSON/SARIF/JUnit report
        with contextlib.redirect_stdout(sys.stderr):
            outcome = run_verify(
                args.targets, format=("json" if args.json else args.format),
                strict=args.strict, timeout_ms=args.timeout_ms, rlimit=args.rlimit,
                jobs=args.jobs, exclude=args.exclude, cache=not args.no_cache,
                cache_dir=args.cache_dir, config=args.config, verbose=args.verbose,
                only_affected=args.only_affected)
    except VerifyError as error:
        if not args.targets:
            print(args.usage, end="", file=sys.stderr)
        print(f"hoare verify: error: {error}", file=sys.stderr)
        return 2
    for line in outcome.messages:
        print(f"hoare verify: {line}", file=sys.stderr)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(outcome.text + "\n")
        except OSError as error:
            print(f"hoare verify: error: cannot write {args.output}: {error}", file=sys.stderr)
            return 2
    else:
        print(outcome.text)
    return outcome.status


def run() -> None:
    """The ``hoare`` program (console script and ``python -m hoare``): ``main``, then
    exit with its status, without waiting for threads a verified module started and
    left running (``hoare verify`` imports the user's modules)."""
    import os
    import threading

    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
