"""``hoare schema``: the structured-output schema a contract compiles to for a decoder
dialect, with the post-conditions folded into it, and which of them the schema is
proved to enforce."""

from __future__ import annotations

import argparse
import sys

from hoare.cli.output import json_text, terminal_safe

__all__ = ["schema_command"]


def schema_command(args: argparse.Namespace) -> int:
    """Run ``hoare schema``; return the exit status (2: not a contract)."""
    from hoare.contracts.base import Contract
    from hoare.contracts.runtime import runtime_of
    from hoare.stats.evaluation import EvalError, resolve
    from hoare.verifier.runtime import compile_contract

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
    compiled = compile_contract(runtime_of(found).description, args.dialect)
    if args.json:
        print(json_text(compiled.as_dict()))
        return 0
    print(f"{compiled.contract} for {compiled.dialect}:")
    print(json_text(compiled.schema))
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
                print(f"  - {terminal_safe(str(item))}")
    return 0
