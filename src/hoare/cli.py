"""The ``hoare`` command: ``hoare verify PATH_OR_MODULE... [--json] [--strict]``.

Exit status: 0 when no check fails, 1 when one fails (with ``--strict``, also
when one is unknown), 2 on a usage or import error.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


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
        description="Import the given files, directories or modules, find every @contract "
                    "class and Pipeline, and check with z3 that pre- and post-conditions "
                    "can hold, that no predicate is vacuous, and that pipeline stages "
                    "compose. Exit 0: nothing fails; 1: a check fails (--strict: or is "
                    "unknown); 2: usage or import error.")
    verify.add_argument("targets", nargs="+", metavar="PATH_OR_MODULE",
                        help="a .py file, a directory (searched for *.py), or a module name")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument("--strict", action="store_true",
                        help="also exit 1 when a check is unknown")
    verify.add_argument("--timeout-ms", type=_positive, default=None, metavar="N",
                        help="time limit of each z3 query in milliseconds (default 5000)")
    verify.add_argument("--rlimit", type=_positive, default=None, metavar="N",
                        help="deterministic z3 resource limit of each query "
                             "(default 10000000, about a second)")
    verify.add_argument("-j", "--jobs", type=_positive, default=1, metavar="N",
                        help="verify contracts in N processes (default 1)")
    verify.add_argument("-v", "--verbose", action="store_true",
                        help="show witnesses and notes of passing checks too")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") \
            from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


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
    if args.command != "verify":
        parser.print_help(sys.stderr)
        return 2
    return _verify(args)


def _verify(args: argparse.Namespace) -> int:
    from .verifier import DiscoveryError, discover, verify_found
    from .verifier.solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS

    start = time.perf_counter()
    try:
        found = discover(args.targets)
    except DiscoveryError as error:
        print(f"hoare verify: error: {error}", file=sys.stderr)
        return 2
    report = verify_found(found, timeout_ms=args.timeout_ms or DEFAULT_TIMEOUT_MS,
                          rlimit=args.rlimit or DEFAULT_RLIMIT, jobs=args.jobs)
    report.seconds = time.perf_counter() - start  # imports included: what CI waits for
    if args.json:
        print(report.json())
    else:
        if not found.contracts and not found.pipelines:
            print(f"hoare verify: no @contract class or Pipeline found in "
                  f"{', '.join(args.targets)}", file=sys.stderr)
        print(report.render(verbose=args.verbose))
    return 0 if report.ok(strict=args.strict) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
