"""``hoare compare``: two run labels compared on P_succ (and optionally cost and latency)
with anytime-valid confidence sequences; a table or JSON, a JUnit file for CI, a plot.

Exit 0: the candidate is shown no worse than the baseline; 1: shown worse; 3: not shown
either way yet; 2: a usage or store error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from hoare.cli.output import json_text, paint_table, terminal_safe, terminal_safe_lines, xml_text
from hoare.cli.store_access import plot, shown_db, store_target, warner

__all__ = ["compare_command", "junit_text"]


def compare_command(args: argparse.Namespace) -> int:
    """Run ``hoare compare``; return the exit status."""
    from hoare.stats.compare import compare, render_table, verdict_status
    from hoare.stats.query import query
    from hoare.stats.schema import StoreError

    target = store_target(args.db, "compare")
    if target is None:
        return 2
    try:
        a_rows = query(target, args.contract, args.baseline, warn=warner("compare"))
        b_rows = query(target, args.contract, args.candidate, warn=warner("compare"))
    except (StoreError, ImportError) as error:
        print(f"hoare compare: error: {shown_db(target, args.db)}: "
              f"{terminal_safe(str(error))}", file=sys.stderr)
        return 2
    contracts = sorted({r["contract"] for r in a_rows} & {r["contract"] for r in b_rows})
    if not contracts:
        print(f"hoare compare: error: no contract has calls under both "
              f"{terminal_safe(repr(args.baseline))} and "
              f"{terminal_safe(repr(args.candidate))}", file=sys.stderr)
        return 2
    results = [{"contract": name, **compare(
        [r for r in a_rows if r["contract"] == name],
        [r for r in b_rows if r["contract"] == name], args.max_drop, args.confidence,
        max_cost_increase=args.max_cost_increase,
        max_latency_increase=args.max_latency_increase)}
        for name in contracts]
    status = verdict_status(results)
    if args.junit:
        from hoare.verifier.report import write_report

        try:  # as hoare verify -o: atomic, a link followed, a FIFO or device written as is
            write_report(args.junit, junit_text(results, args.baseline, args.candidate))
        except OSError as error:
            print(f"hoare compare: error: cannot write {terminal_safe(args.junit)}: "
                  f"{terminal_safe(str(error))}", file=sys.stderr)
            return 2
    if args.json:
        print(json_text({"baseline": args.baseline, "candidate": args.candidate,
                         "status": status, "contracts": results}))
    else:
        print(paint_table(terminal_safe_lines(
            render_table(results, args.baseline, args.candidate))))
    if args.plot:
        drawn = plot("compare", lambda plots: plots.plot_compare(
            results, a_rows, b_rows, args.baseline, args.candidate, args.plot), args.plot)
        if drawn:
            return drawn
    return status


def junit_text(results: Sequence[Mapping[str, object]], baseline: str, candidate: str) -> str:
    """The comparison as JUnit XML: one testcase per contract, failed when the candidate
    is shown worse, skipped when it cannot tell yet."""
    from xml.sax.saxutils import escape, quoteattr

    def attribute(value: object) -> str:
        return quoteattr(xml_text(value))

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
            worse = gates.items() if isinstance(gates, Mapping) else ()
            shown = ", ".join(str(name) for name, gate in worse if gate == "worse")
            message = attribute(f"candidate worse by more than the margin ({shown})")
            lines.append(f"    <failure message={message}>{escape(xml_text(text))}"
                         f"</failure>")
        elif result["gate"] == "cannot tell yet":
            lines.append(f'    <skipped message={attribute("cannot tell yet")}/>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"
