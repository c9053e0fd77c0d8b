"""``hoare verify``: prove contract sets consistent with z3 and print the report (a
table, JSON, SARIF or JUnit), to standard output or ``--output``.

The work is ``hoare.verifier.project.run``; this module only calls it and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from hoare.cli.output import paint_table, terminal_safe

__all__ = ["verify_command"]


def verify_command(args: argparse.Namespace) -> int:
    """Run ``hoare verify``; return the exit status (0: nothing fails, 1: a check fails,
    2: a usage, configuration or import error)."""
    from hoare.verifier.project import VerifyError, run_verify
    from hoare.verifier.report import write_report

    try:
        # what the verified modules print must not corrupt a JSON/SARIF/JUnit report
        with contextlib.redirect_stdout(sys.stderr):
            verified = run_verify(
                args.targets, format=("json" if args.json else args.format),
                strict=args.strict, timeout_ms=args.timeout_ms, rlimit=args.rlimit,
                jobs=args.jobs, exclude=args.exclude, cache=not args.no_cache,
                cache_dir=args.cache_dir, config=args.config, verbose=args.verbose,
                only_affected=args.only_affected, import_timeout=args.import_timeout)
    except VerifyError as error:  # one line naming the key or flag, no usage block
        hint = "" if args.targets else " (usage: hoare verify --help)"
        print(f"hoare verify: error: {terminal_safe(str(error))}{hint}", file=sys.stderr)
        return 2
    for line in verified.messages:
        print(f"hoare verify: {line}", file=sys.stderr)
    if args.output:
        try:
            write_report(args.output, verified.text + "\n")
        except OSError as error:
            print(f"hoare verify: error: cannot write {args.output}: {error}", file=sys.stderr)
            return 2
    elif (args.format or "table") == "table" and not args.json:
        print(paint_table(verified.text))
    else:
        print(verified.text)
    return verified.status
