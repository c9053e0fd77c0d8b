"""``hoare eval``: call a contract on each input of a JSON Lines dataset, record every
call in the stats store, print the run's figures, and gate on P_succ's Wilson lower
bound (``--min-p-succ``). Named ``evaluate`` so as not to shadow the builtin ``eval``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from hoare.cli.output import json_text, paint_table, terminal_safe, terminal_safe_lines
from hoare.cli.store_access import shown_db, store_target, warner

__all__ = ["engine_of", "eval_command"]


def eval_command(args: argparse.Namespace) -> int:
    """Run ``hoare eval``; return the exit status (1: a call not recorded, no valid
    input, or P_succ not shown to reach ``--min-p-succ``; 2: a usage error)."""
    from hoare.contracts import configuration
    from hoare.kernel.stats import wilson_interval
    from hoare.stats.evaluation import EvalError, run_eval
    from hoare.stats.query import query
    from hoare.stats.report import render_table, summarize
    from hoare.stats.schema import StoreError
    from hoare.stats.store import flush_all
    from hoare.stats.values import storable_text

    target = store_target(args.db, "eval")
    if target is None:
        return 2
    label = storable_text(args.label or os.environ.get("HOARE_LABEL") or "eval")
    try:  # what the user's engine and contract print goes to stderr: not the output
        with contextlib.redirect_stdout(sys.stderr):
            engine = engine_of(args.engine, args.model)
            configuration.configure(stats=target, label=label)
            store = configuration.stats_store()
            name, run = run_eval(args.contract, Path(args.dataset), engine, args.jobs)
    except EvalError as error:
        print(f"hoare eval: error: {terminal_safe(str(error))}", file=sys.stderr)
        return 2
    flush_all(timeout=60)
    for line in run.skipped:
        print(f"hoare eval: skipped {terminal_safe(line)}", file=sys.stderr)
    broken = getattr(store, "broken", None) or getattr(store, "last_error", None)
    if broken:
        print(f"hoare eval: error: the calls were not all recorded: "
              f"{terminal_safe(str(broken))}", file=sys.stderr)
        return 1
    if not run.calls:
        print(f"hoare eval: error: {terminal_safe(args.dataset)} has no valid input",
              file=sys.stderr)
        return 1
    try:
        rows = query(target, name, label, run.started, warn=warner("eval"))
    except (StoreError, ImportError) as error:
        print(f"hoare eval: error: {shown_db(target, args.db)}: {terminal_safe(str(error))}",
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
    print(json_text(summary) if args.json
          else paint_table(terminal_safe_lines(render_table(summary))))
    return status


def engine_of(choice: str | None, model: str | None) -> object:
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
