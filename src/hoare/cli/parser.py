"""The ``hoare`` command's parser: its subcommands, their options and argument types,
and ``main``/``run``, which parse and hand the arguments to the command's module
(``hoare.cli.verify``, ``stats``, ``compare``, ``evaluate``, ``schema``, ``probe``).

Exit status: 0 when no check fails, 1 when one fails (with ``--strict``, also when
one is unknown or nothing was found), 2 on a usage, configuration or import error, and
when the output cannot be written or hoare itself failed (one line on stderr, never a
traceback: 1 would read as a failed check); 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from hoare.cli.compare import compare_command
from hoare.cli.evaluate import eval_command
from hoare.cli.probe import probe_command
from hoare.cli.schema import schema_command
from hoare.cli.stats import stats_command
from hoare.cli.verify import verify_command
from hoare.errors import UsageError
from hoare.verifier.project import FORMATS, seconds_argument, solver_limit_argument

__all__ = ["COMMANDS", "CommandUsageError", "build_parser", "main", "run"]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` returns the status; the
    error is one line naming the flag, not the usage block (``--help`` shows that)."""

    def error(self, message: str) -> NoReturn:
        raise CommandUsageError(f"{self.prog}: error: {message} (usage: {self.prog} --help)")


class CommandUsageError(UsageError):
    """A command line argparse refused (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
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
    verify.add_argument("targets", type=_nonempty, nargs="*", metavar="TARGET",
                        help="a .py file, a directory (searched for *.py), a module or "
                             "package name (with its submodules), each optionally with "
                             ":Name for one contract class or pipeline")
    verify.add_argument("--format", choices=FORMATS, default=None,
                        help="table (default), json, sarif (SARIF 2.1.0, for code "
                             "scanning) or junit (JUnit XML)")
    verify.add_argument("--json", action="store_true", help="same as --format json")
    verify.add_argument("-o", "--output", type=_nonempty, metavar="FILE", default=None,
                        help="write the report to FILE instead of standard output")
    verify.add_argument("--strict", action="store_true", default=None,
                        help="also exit 1 when a check is unknown or nothing was found")
    verify.add_argument("--timeout-ms", type=solver_limit_argument, default=None, metavar="N",
                        help="time limit of each z3 query in milliseconds (default 5000)")
    verify.add_argument("--rlimit", type=solver_limit_argument, default=None, metavar="N",
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
    verify.add_argument("--cache-dir", type=_nonempty, metavar="DIR", default=None,
                        help="where the verdict cache lives (default .hoare_cache in the "
                             "project root, or $HOARE_CACHE_DIR)")
    verify.add_argument("--config", type=_nonempty, metavar="PYPROJECT", default=None,
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
    stats.add_argument("--db", type=_nonempty, default=None, metavar="PATH_OR_URL",
                       help="the store the calls were recorded in: a SQLite file or a "
                            "SQLAlchemy URL (default: $HOARE_STATS or [tool.hoare] stats)")
    stats.add_argument("--contract", type=_nonempty, metavar="MODULE:CLASS", default=None,
                       help="only this contract")
    stats.add_argument("--label", default=None, help="only this run label")
    stats.add_argument("--since", default=None, metavar="T",
                       help="only calls since T: an ISO 8601 time or a duration (24h, 7d)")
    stats.add_argument("--json", action="store_true", help="the figures as JSON")
    stats.add_argument("--plot", type=_nonempty, metavar="FILE.png", default=None,
                       help="also draw P_succ over time and per family (hoare[plots])")
    schema = commands.add_parser(
        "schema", help="the structured-output schema a contract compiles to, with proofs",
        description="Fold the post-conditions that JSON Schema can express into the output "
                    "type's schema (each proved by z3 to be implied by them), for a "
                    "provider dialect, and prove which post-conditions the schema "
                    "enforces: enforced_by_schema (proved), residual (an output the schema "
                    "allows fails it), unknown (not proved: stays residual).")
    schema.add_argument("contract", type=_nonempty, metavar="MODULE:CONTRACT",
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
    probe.add_argument("base_url", type=_nonempty, metavar="BASE_URL",
                       help="e.g. http://127.0.0.1:8080/v1")
    probe.add_argument("--model", default=None,
                       help="the model to ask (default: $HOARE_MODEL, else 'default')")
    probe.add_argument("--trials", type=_positive, default=2,
                       help="requests per keyword (default 2; enforced means k of k)")
    probe.add_argument("--out", type=_nonempty, default=None,
                       help="write the table here instead")
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
    evaluate.add_argument("contract", type=_nonempty, metavar="MODULE:CONTRACT",
                          help="the @contract class (imported from the current directory "
                               "too)")
    evaluate.add_argument("dataset", type=_nonempty, metavar="DATASET.jsonl",
                          help="one input per line, as JSON (or {\"input\": ...})")
    evaluate.add_argument("--engine", type=_nonempty, default=None, metavar="ENGINE",
                          help="'openai' (OPENAI_API_KEY/OPENAI_BASE_URL, --model) or "
                               "MODULE:ATTR naming an engine or a function making one "
                               "(default: the configured engine)")
    evaluate.add_argument("--model", default=None, help="the model of --engine openai")
    evaluate.add_argument("--db", type=_nonempty, default=None, metavar="PATH_OR_URL",
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
    compare.add_argument("--db", type=_nonempty, default=None, metavar="PATH_OR_URL",
                         help="the store the calls were recorded in: a SQLite file or a "
                              "SQLAlchemy URL (default: $HOARE_STATS or [tool.hoare] "
                              "stats)")
    compare.add_argument("--baseline", required=True, metavar="LABEL")
    compare.add_argument("--candidate", required=True, metavar="LABEL")
    compare.add_argument("--contract", type=_nonempty, metavar="MODULE:CLASS", default=None,
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
    compare.add_argument("--junit", type=_nonempty, metavar="FILE", default=None,
                         help="also write a JUnit XML file (one testcase per contract)")
    compare.add_argument("--plot", type=_nonempty, metavar="FILE.png", default=None,
                         help="also draw the two labels' confidence sequences as they "
                              "narrow (hoare[plots])")
    return parser


def _nonempty(text: str) -> str:
    """A path, name or URL: an empty one is a usage error, never the default (an unset
    shell variable, ``hoare verify "$DIR"``, must not verify the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty value, got {text!r}")
    return text


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


# Each subcommand's function: takes the parsed arguments, returns the exit status.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "verify": verify_command, "stats": stats_command, "compare": compare_command,
    "eval": eval_command, "schema": schema_command, "probe": probe_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hoare`` command; return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except CommandUsageError as error:
        print(error, file=sys.stderr)
        return 2
    except SystemExit as done:  # --help, --version
        return int(done.code or 0) if not isinstance(done.code, str) else 2
    command = COMMANDS.get(args.command)
    if command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return command(args)
    except (BrokenPipeError, KeyboardInterrupt):
        raise  # run() ends these quietly
    except OSError as error:  # standard output (no file name) or a file failed
        what = "" if error.filename is not None else "cannot write the output: "
        return _failed(args.command, f"error: {what}{error}")
    except Exception as error:  # a bug in hoare: one line naming it, status 2, not 1
        return _failed(args.command, f"internal error: {type(error).__name__}: {error}"
                                     f"{_where(error)}")


def _failed(command: str, text: str) -> int:
    """Say ``text`` on stderr (if stderr can still be written); the status 2."""
    from hoare.cli.output import terminal_safe

    try:
        print(f"hoare{' ' + command if command else ''}: {terminal_safe(text)}",
              file=sys.stderr)
    except OSError:
        pass
    return 2


def _where(error: BaseException) -> str:
    """`` (at file:line)`` of the frame that raised ``error``, for a bug report."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


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
    except KeyboardInterrupt:  # Ctrl-C: no traceback, the shell's status for SIGINT
        _failed("", "interrupted")
        _quiet_after_broken_pipe()
        os._exit(130)
    except OSError as error:  # what was printed could not be written (a full disk)
        status = _failed("", f"error: cannot write the output: {error}")
        _quiet_after_broken_pipe()  # the exit's own flush must not fail again
        os._exit(status)
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
