"""The ``hoare`` command: ``hoare verify [TARGET...] [--format F] [--strict] ...``.

Exit status: 0 when no check fails, 1 when one fails (with ``--strict``, also when
one is unknown or nothing was found), 2 on a usage, configuration or import error.
The work itself is ``hoare.verifier.project.run``; this module only parses and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hoare.errors import UsageError
from hoare.verifier.project.config import FORMATS, seconds_argument

__all__ = ["main", "run"]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` returns the status; the
    error is one line naming the flag, not the usage block (``--help`` shows that)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: error: {message} (usage: {self.prog} --help)")


class _UsageError(UsageError):
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
    verify.add_argument("--import-timeout", type=seconds_argument, default=None,
                        metavar="SECONDS",
                        help="time each file's import may take before it is reported as an "
                             "import error (default 60)")
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
                    "hoare.configure(stats=PATH_OR_URL), $HOARE_STATS or [tool.hoare] "
                    "stats.")
    stats.add_argument("--db", default=None, metavar="PATH_OR_URL",
                       help="the store the calls were recorded in: a SQLite file or a "
                            "SQLAlchemy URL (default: $HOARE_STATS or [tool.hoare] stats)")
    stats.add_argument("--contract", metavar="MODULE:CLASS", default=None,
                       help="only this contract")
    stats.add_argument("--label", default=None, help="only this run label")
    stats.add_argument("--since", default=None, metavar="T",
                       help="only calls since T: an ISO 8601 time or a duration (24h, 7d)")
    stats.add_argument("--json", action="store_true", help="the figures as JSON")
    stats.add_argument("--plot", metavar="FILE.png", default=None,
                       help="also draw P_succ over time and per family (hoare[plots])")
    schema = commands.add_parser(
        "schema", help="the structured-output schema a contract compiles to, with proofs",
        description="Fold the post-conditions that JSON Schema can express into the output "
                    "type's schema (each proved by z3 to be implied by them), for a "
                    "provider dialect, and prove which post-conditions the schema "
                    "enforces: enforced_by_schema (proved), residual (an output the schema "
                    "allows fails it), unknown (not proved: stays residual).")
    schema.add_argument("contract", metavar="MODULE:CONTRACT",
                        help="the @contract class (imported from the current directory too)")
    schema.add_argument("--dialect", default="json_schema",
                        choices=("json_schema", "openai_strict", "llama_cpp"),
                        help="what the decoder honours (default json_schema: a full JSON "
                             "Schema decoder such as vLLM's)")
    schema.add_argument("--json", action="store_true", help="the result as JSON")
    probe = commands.add_parser(
        "probe", help="measure what a server's structured-output decoder enforces",
        description="Send a few tiny requests per dialect and schema keyword, each asking "
                    "for a value the keyword forbids, and record whether the server "
                    "enforced, ignored or refused the keyword, or dropped the schema; "
                    "written to $HOARE_CACHE_DIR/servers/<host>_<port>.json, which "
                    "OpenAIEngine(structured='auto') reads.")
    probe.add_argument("base_url", metavar="BASE_URL", help="e.g. http://127.0.0.1:8080/v1")
    probe.add_argument("--model", default=None,
                       help="the model to ask (default: $HOARE_MODEL, else 'default')")
    probe.add_argument("--trials", type=_positive, default=2,
                       help="requests per keyword (default 2; enforced means k of k)")
    probe.add_argument("--out", default=None, help="write the table here instead")
    probe.add_argument("--json", action="store_true", help="print the table as JSON")
    evaluate = commands.add_parser(
        "eval", help="run a contract over a dataset and record P_succ before deploying",
        description="Call a contract on each input of a JSON Lines dataset, record every "
                    "call in the stats store and print its figures (as hoare stats). A "
                    "line that is not a valid input (not UTF-8, not JSON, nested too "
                    "deep, not the contract's input) is reported with its number and "
                    "skipped. Exit 0; 1 when a call was not recorded, no line was valid, "
                    "or --min-p-succ X is given and the Wilson 95% lower bound of "
                    "P_succ is below X; 2 on a usage error.")
    evaluate.add_argument("contract", metavar="MODULE:CONTRACT",
                          help="the @contract class (imported from the current directory "
                               "too)")
    evaluate.add_argument("dataset", metavar="DATASET.jsonl",
                          help="one input per line, as JSON (or {\"input\": ...})")
    evaluate.add_argument("--engine", default=None, metavar="ENGINE",
                          help="'openai' (OPENAI_API_KEY/OPENAI_BASE_URL, --model) or "
                               "MODULE:ATTR naming an engine or a function making one "
                               "(default: the configured engine)")
    evaluate.add_argument("--model", default=None, help="the model of --engine openai")
    evaluate.add_argument("--db", default=None, metavar="PATH_OR_URL",
                          help="the stats store (default: $HOARE_STATS or [tool.hoare] "
                               "stats)")
    evaluate.add_argument("--label", default=None,
                          help="the run label (default: $HOARE_LABEL, else 'eval')")
    evaluate.add_argument("--jobs", type=_positive, default=1, metavar="N",
                          help="calls at once, on one shared instance (default 1)")
    evaluate.add_argument("--json", action="store_true", help="the figures as JSON")
    evaluate.add_argument("--min-p-succ", type=_fraction, default=None, metavar="X",
                          help="exit 1 when the Wilson 95%% lower bound of this run's "
                               "P_succ is below X (a number in [0, 1]): the run shows, "
                               "with 95%% confidence, that P_succ is at least X only "
                               "when the bound is")
    compare = commands.add_parser(
        "compare", help="compare two run labels on P_succ (an anytime-valid gate)",
        description="Compare the calls recorded under two run labels, per contract, with "
                    "time-uniform confidence sequences: looking after every batch does "
                    "not inflate false verdicts. Exit 0: the candidate is shown no worse "
                    "than the baseline by more than --max-drop; 1: shown worse by more; "
                    "3: not shown either way yet; 2: usage error.")
    compare.add_argument("--db", default=None, metavar="PATH_OR_URL",
                         help="the store the calls were recorded in: a SQLite file or a "
                              "SQLAlchemy URL (default: $HOARE_STATS or [tool.hoare] "
                              "stats)")
    compare.add_argument("--baseline", required=True, metavar="LABEL")
    compare.add_argument("--candidate", required=True, metavar="LABEL")
    compare.add_argument("--contract", metavar="MODULE:CLASS", default=None,
                         help="only this contract (default: each contract both ran)")
    compare.add_argument("--max-drop", type=_fraction, default=0.0, metavar="D",
                         help="the largest drop of P_succ the gate accepts (default 0)")
    compare.add_argument("--confidence", type=_open_fraction, default=0.95, metavar="C",
                         help="the confidence of the verdicts (default 0.95)")
    compare.add_argument("--max-cost-increase", type=_nonnegative, default=None, metavar="F",
                         help="also gate the median cost per call: at most (1 + F) times "
                              "the baseline's (0.1: 10%% more)")
    compare.add_argument("--max-latency-increase", type=_nonnegative, default=None,
                         metavar="F", help="also gate the median latency: at most (1 + F) "
                                           "times the baseline's")
    compare.add_argument("--json", action="store_true", help="the comparison as JSON")
    compare.add_argument("--junit", metavar="FILE", default=None,
                         help="also write a JUnit XML file (one testcase per contract)")
    compare.add_argument("--plot", metavar="FILE.png", default=None,
                         help="also draw the two labels' confidence sequences as they "
                              "narrow (hoare[plots])")
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


def _nonnegative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
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
    if args.command == "eval":
        return _eval(args)
    if args.command == "schema":
        return _schema(args)
    if args.command == "probe":
        return _probe(args)
    if args.command != "verify":
        parser.print_help(sys.stderr)
        return 2
    return _verify(args)


def _store_target(given: str | None, command: str) -> str | None:
    """The store ``hoare stats``, ``compare`` and ``eval`` read: ``--db``, else
    ``$HOARE_STATS``, else ``[tool.hoare] stats`` (None, said on stderr, when none)."""
    from hoare.contracts import configuration

    target = given if given is not None else configuration.stats_target()
    if not target:
        print(f"hoare {command}: error: no stats store: give --db PATH_OR_URL, or set "
              f"HOARE_STATS or [tool.hoare] stats", file=sys.stderr)
        return None
    return target


def _warner(command: str) -> Callable[[str], None]:
    """Where ``query`` says which rows it skipped or sanitized: stderr, one line each."""
    def warn(text: str) -> None:
        print(f"hoare {command}: warning: {_terminal_safe(text)}", file=sys.stderr)
    return warn


def _terminal_safe(text: str) -> str:
    """``text`` with control characters and lone surrogates escaped: a name read from
    a store may hold anything, and must not drive the terminal."""
    from hoare.stats.store import display_text

    return display_text(text, 100_000)


def _json_text(value: object) -> str:
    """``value`` as strict JSON (RFC 8259): a NaN or infinite figure becomes null,
    never ``NaN``/``Infinity``, and text is escaped to ASCII."""
    return json.dumps(_finite(value), indent=2, allow_nan=False)


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, str):
        from hoare.stats.store import storable_text

        return storable_text(value, len(value) + 1)
    return value


def _stats(args: argparse.Namespace) -> int:
    from hoare.stats.report import parse_since, render_table, summarize
    from hoare.stats.store import StoreError, query

    try:
        since = parse_since(args.since) if args.since is not None else None
    except ValueError as error:
        print(f"hoare stats: error: {error}", file=sys.stderr)
        return 2
    target = _store_target(args.db, "stats")
    if target is None:
        return 2
    try:
        rows = query(target, args.contract, args.label, since, warn=_warner("stats"))
    except (StoreError, ImportError) as error:
        print(f"hoare stats: error: --db {_shown_db(target)}: {_terminal_safe(str(error))}",
              file=sys.stderr)
        return 2
    summary = summarize(rows)
    print(_json_text(summary) if args.json
          else _paint_table(_terminal_safe_lines(render_table(summary))))
    if args.plot:
        from hoare.stats.store import family_messages

        messages = family_messages(target)
        return _plot("stats", lambda plots: plots.plot_stats(rows, args.plot, messages),
                     args.plot)
    return 0


def _plot(command: str, draw: Callable[[Any], int], path: str) -> int:
    """Run ``draw`` with ``hoare.stats.plot``; 2 when matplotlib is missing or the file
    cannot be written, each said on stderr."""
    try:
        from hoare.stats import plot as stats_plot
    except ImportError as error:
        print(f"hoare {command}: error: --plot: {error}", file=sys.stderr)
        return 2
    try:
        draw(stats_plot)
    except (OSError, ValueError) as error:
        print(f"hoare {command}: error: --plot {path}: {error}", file=sys.stderr)
        return 2
    print(f"hoare {command}: plot written to {path}", file=sys.stderr)
    return 0


def _schema(args: argparse.Namespace) -> int:

    from hoare.contracts.core import Contract, _runtime_of
    from hoare.stats.evaluation import EvalError, resolve
    from hoare.verifier.runtime.decoding import compile_contract

    try:
        found = resolve(args.contract, "contract")
    except EvalError as error:
        print(f"hoare schema: error: {error}", file=sys.stderr)
        return 2
    if not (isinstance(found, type) and issubclass(found, Contract)
            and getattr(found, "__hoare__", None) is not None):
        print(f"hoare schema: error: {args.contract!r} is not a hoare contract (a @contract "
              f"class)", file=sys.stderr)
        return 2
    compiled = compile_contract(_runtime_of(found).description, args.dialect)
    if args.json:
        print(_json_text(compiled.as_dict()))
        return 0
    print(f"{compiled.contract} for {compiled.dialect}:")
    print(_json_text(compiled.schema))
    for title, items in (("folded", [f.text() + f"  (from {f.predicate})"
                                     for f in compiled.folded] + compiled.finite),
                         ("dropped", compiled.dropped),
                         ("enforced_by_schema", [f"{k}: {v}" for k, v in
                                                 compiled.enforced.items()]),
                         ("residual", [f"{k}: {v}" for k, v in compiled.residual.items()]),
                         ("unknown (stays residual)", [f"{k}: {v}" for k, v in
                                                       compiled.unknown.items()])):
        if items:
            print(f"{title}:")
            for item in items:
                print(f"  - {_terminal_safe(str(item))}")
    return 0


def _probe(args: argparse.Namespace) -> int:
    """``hoare probe``: measure and write a server's capability table."""
    import os
    from pathlib import Path

    from hoare.engines import capabilities

    model = args.model or os.environ.get("HOARE_MODEL") or "default"
    try:
        table = capabilities.probe(args.base_url, model, trials=args.trials)
        path = Path(args.out) if args.out else capabilities.cache_path(args.base_url)
        capabilities.save(table, path)
    except (capabilities.CapabilityError, OSError, ValueError) as error:
        print(f"hoare probe: error: {_terminal_safe(str(error))[:500]}", file=sys.stderr)
        return 2
    if args.json:
        print(_json_text(table.as_dict()))
    else:
        for dialect, keywords in table.dialects.items():
            print(f"{dialect}: " + ", ".join(f"{k} {v}" for k, v in keywords.items()))
    print(f"hoare probe: written to {path}", file=sys.stderr)
    return 0


def _eval(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from hoare.contracts import configuration
    from hoare.kernel.stats import wilson_interval
    from hoare.stats.evaluation import EvalError, run_eval
    from hoare.stats.report import render_table, summarize
    from hoare.stats.store import StoreError, flush_all, query, storable_text

    target = _store_target(args.db, "eval")
    if target is None:
        return 2
    label = storable_text(args.label or os.environ.get("HOARE_LABEL") or "eval")
    try:
        engine = _engine(args.engine, args.model)
        configuration.configure(stats=target, label=label)
        store = configuration.stats_store()
        name, run = run_eval(args.contract, Path(args.dataset), engine, args.jobs)
    except EvalError as error:
        print(f"hoare eval: error: {_terminal_safe(str(error))}", file=sys.stderr)
        return 2
    flush_all(timeout=60)
    for line in run.skipped:
        print(f"hoare eval: skipped {_terminal_safe(line)}", file=sys.stderr)
    broken = getattr(store, "broken", None) or getattr(store, "last_error", None)
    if broken:
        print(f"hoare eval: error: the calls were not all recorded: "
              f"{_terminal_safe(str(broken))}", file=sys.stderr)
        return 1
    if not run.calls:
        print(f"hoare eval: error: {_terminal_safe(args.dataset)} has no valid input",
              file=sys.stderr)
        return 1
    try:
        rows = query(target, name, label, run.started, warn=_warner("eval"))
    except (StoreError, ImportError) as error:
        print(f"hoare eval: error: --db {_shown_db(target)}: {_terminal_safe(str(error))}",
              file=sys.stderr)
        return 1
    summary = summarize(rows)
    summary["run"] = {"calls": run.calls, "successes": run.successes, "raised": run.raised,
                      "skipped": run.skipped}
    status = 0
    if args.min_p_succ is not None:
        low = wilson_interval(run.successes, run.calls)[0]
        passed = low >= args.min_p_succ
        summary["run"]["min_p_succ"] = {"threshold": args.min_p_succ,
                                        "wilson_95_lower_bound": low, "passed": passed}
        if not passed:
            status = 1
            print(f"hoare eval: P_succ not shown to be at least {args.min_p_succ:g}: the "
                  f"Wilson 95% lower bound is {low:.4f} ({run.successes}/{run.calls} "
                  f"calls succeeded)", file=sys.stderr)
    print(_json_text(summary) if args.json
          else _paint_table(_terminal_safe_lines(render_table(summary))))
    return status


def _engine(choice: str | None, model: str | None) -> object:
    """The engine ``hoare eval --engine`` names (None: the contract's default)."""
    from hoare.stats.evaluation import EvalError, resolve

    if choice is None:
        if model is not None:
            raise EvalError("--model goes with --engine openai")
        return None
    if choice == "openai":
        from hoare.engines.openai_engine import OpenAIEngine

        try:
            return OpenAIEngine(model=model)
        except Exception as error:
            raise EvalError(f"--engine openai: {error}") from error
    found = resolve(choice, "engine")
    if not (hasattr(found, "complete") and hasattr(found, "acomplete")) and callable(found):
        try:
            found = found()
        except Exception as error:
            raise EvalError(f"engine {choice!r}: calling it failed: "
                            f"{type(error).__name__}: {error}") from error
    if not (hasattr(found, "complete") and hasattr(found, "acomplete")):
        raise EvalError(f"engine {choice!r} is not an engine (it needs complete() and "
                        f"acomplete())")
    return found


def _shown_db(target: str) -> str:
    from hoare.stats.store import shown_target

    return shown_target(target)


def _compare(args: argparse.Namespace) -> int:
    from hoare.stats.compare import compare, render_table, verdict_status
    from hoare.stats.store import StoreError, query

    target = _store_target(args.db, "compare")
    if target is None:
        return 2
    try:
        a_rows = query(target, args.contract, args.baseline, warn=_warner("compare"))
        b_rows = query(target, args.contract, args.candidate, warn=_warner("compare"))
    except (StoreError, ImportError) as error:
        print(f"hoare compare: error: --db {_shown_db(target)}: "
              f"{_terminal_safe(str(error))}", file=sys.stderr)
        return 2
    contracts = sorted({r["contract"] for r in a_rows} & {r["contract"] for r in b_rows})
    if not contracts:
        print(f"hoare compare: error: no contract has calls under both "
              f"{_terminal_safe(repr(args.baseline))} and "
              f"{_terminal_safe(repr(args.candidate))}", file=sys.stderr)
        return 2
    results = [{"contract": name, **compare(
        [r for r in a_rows if r["contract"] == name],
        [r for r in b_rows if r["contract"] == name], args.max_drop, args.confidence,
        max_cost_increase=args.max_cost_increase,
        max_latency_increase=args.max_latency_increase)}
        for name in contracts]
    status = verdict_status(results)
    if args.junit:
        try:
            with open(args.junit, "w", encoding="utf-8") as handle:
                handle.write(_junit(results, args.baseline, args.candidate))
        except OSError as error:
            print(f"hoare compare: error: cannot write {_terminal_safe(args.junit)}: "
                  f"{_terminal_safe(str(error))}", file=sys.stderr)
            return 2
    if args.json:
        print(_json_text({"baseline": args.baseline, "candidate": args.candidate,
                          "status": status, "contracts": results}))
    else:
        print(_paint_table(_terminal_safe_lines(
            render_table(results, args.baseline, args.candidate))))
    if args.plot:
        drawn = _plot("compare", lambda plots: plots.plot_compare(
            results, a_rows, b_rows, args.baseline, args.candidate, args.plot), args.plot)
        if drawn:
            return drawn
    return status


def _terminal_safe_lines(text: str) -> str:
    return "\n".join(_terminal_safe(line) for line in text.split("\n"))


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(value: object) -> str:
    """``value`` as text XML 1.0 allows: characters it forbids (control characters,
    lone surrogates, U+FFFE/U+FFFF) written as a visible escape (``\\x01``)."""
    return _XML_ILLEGAL.sub(lambda found: f"\\x{ord(found[0]):02x}"
                            if ord(found[0]) < 0x100 else f"\\u{ord(found[0]):04x}",
                            str(value))


def _junit(results: list[dict[str, object]], baseline: str, candidate: str) -> str:
    from xml.sax.saxutils import escape, quoteattr

    def attribute(value: object) -> str:
        return quoteattr(_xml_text(value))

    failures = sum(1 for r in results if r["gate"] == "worse")
    skipped = sum(1 for r in results if r["gate"] == "cannot tell yet")
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             f'<testsuite name={attribute(f"hoare compare {baseline} -> {candidate}")} '
             f'tests="{len(results)}" failures="{failures}" skipped="{skipped}">']
    for result in results:
        lines.append(f'  <testcase classname="hoare.compare" '
                     f'name={attribute(result["contract"])}>')
        gates = result["gates"]
        text = f"{result['verdict']}; gates {gates}; difference {result['difference']}"
        if result["gate"] == "worse":
            shown = ", ".join(name for name, gate in gates.items()  # type: ignore[attr-defined]
                              if gate == "worse")
            message = attribute(f"candidate worse by more than the margin ({shown})")
            lines.append(f"    <failure message={message}>{escape(_xml_text(text))}"
                         f"</failure>")
        elif result["gate"] == "cannot tell yet":
            lines.append(f'    <skipped message={attribute("cannot tell yet")}/>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


# -- colour on a terminal (never in files or pipes; NO_COLOR turns it off) ---------------
_STYLES = {"PASS": "32", "not worse": "32", "FAIL": "1;31", "worse": "1;31",
           "WARN": "33", "UNKNOWN": "33", "cannot tell yet": "33"}
_WORDS = re.compile(r"\b(PASS|FAIL|WARN|UNKNOWN|not worse|cannot tell yet|worse)\b")


def _colour_wanted(stream: Any = None) -> bool:
    """Colour only on a terminal, unless ``NO_COLOR`` is set (https://no-color.org)
    or ``TERM=dumb``."""
    import os

    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _paint_table(text: str) -> str:
    """The verdict words of a table in colour when ``_colour_wanted``."""
    if not _colour_wanted():
        return text
    return _WORDS.sub(lambda found: f"\x1b[{_STYLES[found[1]]}m{found[1]}\x1b[0m", text)


def _verify(args: argparse.Namespace) -> int:
    from hoare.verifier.project.run import VerifyError, run_verify
    from hoare.verifier.report.formats import write_report

    try:
        # what the verified modules print must not corrupt a JSON/SARIF/JUnit report
        with contextlib.redirect_stdout(sys.stderr):
            outcome = run_verify(
                args.targets, format=("json" if args.json else args.format),
                strict=args.strict, timeout_ms=args.timeout_ms, rlimit=args.rlimit,
                jobs=args.jobs, exclude=args.exclude, cache=not args.no_cache,
                cache_dir=args.cache_dir, config=args.config, verbose=args.verbose,
                only_affected=args.only_affected, import_timeout=args.import_timeout)
    except VerifyError as error:  # one line naming the key or flag, no usage block
        hint = "" if args.targets else " (usage: hoare verify --help)"
        print(f"hoare verify: error: {_terminal_safe(str(error))}{hint}", file=sys.stderr)
        return 2
    for line in outcome.messages:
        print(f"hoare verify: {line}", file=sys.stderr)
    if args.output:
        try:
            write_report(args.output, outcome.text + "\n")
        except OSError as error:
            print(f"hoare verify: error: cannot write {args.output}: {error}", file=sys.stderr)
            return 2
    elif (args.format or "table") == "table" and not args.json:
        print(_paint_table(outcome.text))
    else:
        print(outcome.text)
    return outcome.status


def run() -> None:
    """The ``hoare`` program (console script and ``python -m hoare``): ``main``, then
    exit with its status, without waiting for threads a verified module started and
    left running (``hoare verify`` imports the user's modules)."""
    import os
    import threading

    try:
        status = main()
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `hoare ... | head`: the reader left; end quietly
        _quiet_after_broken_pipe()
        os._exit(141)  # 128 + SIGPIPE, as a shell reports a command a pipe ended
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        os._exit(status)
    sys.exit(status)


def _quiet_after_broken_pipe() -> None:
    """Point stdout (and a broken stderr) at /dev/null, so that nothing tries to
    write the rest to the closed pipe and print a traceback."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass


if __name__ == "__main__":  # pragma: no cover
    run()
