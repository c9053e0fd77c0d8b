"""``hoare stats``: P_succ and the other figures of the recorded calls, as a table, as
JSON, and optionally drawn (``--plot``)."""

from __future__ import annotations

import argparse
import sys

from hoare.cli.output import json_text, paint_table, terminal_safe, terminal_safe_lines
from hoare.cli.store_access import plot, shown_db, store_target, warner

__all__ = ["stats_command"]


def stats_command(args: argparse.Namespace) -> int:
    """Run ``hoare stats``; return the exit status (2: no store, a bad ``--since``)."""
    from hoare.stats.query import query
    from hoare.stats.report import parse_since, render_table, summarize
    from hoare.stats.schema import StoreError

    try:
        since = parse_since(args.since) if args.since is not None else None
    except ValueError as error:
        print(f"hoare stats: error: {error}", file=sys.stderr)
        return 2
    target = store_target(args.db, "stats")
    if target is None:
        return 2
    try:
        rows = query(target, args.contract, args.label, since, warn=warner("stats"))
    except (StoreError, ImportError) as error:
        print(f"hoare stats: error: {shown_db(target, args.db)}: {terminal_safe(str(error))}",
              file=sys.stderr)
        return 2
    summary = summarize(rows)
    print(json_text(summary) if args.json
          else paint_table(terminal_safe_lines(render_table(summary))))
    if args.plot:
        from hoare.stats.query import family_messages

        messages = family_messages(target)
        return plot("stats", lambda plots: plots.plot_stats(rows, args.plot, messages),
                    args.plot)
    return 0
