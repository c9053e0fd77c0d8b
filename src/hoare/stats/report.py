"""``hoare stats``: the figures of the stored calls, per contract and run label.

P_succ with its Wilson 95% interval, per contract and per predicate family; success
at the first attempt; the product of the family rates beside the joint estimate (the
paper approximates P_succ by that product, assuming the families independent: the gap
shows how wrong that is on this data); cost per success; latency percentiles; the
pre-flight refusals.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hoare.kernel.stats import wilson_interval

__all__ = ["parse_since", "render_table", "summarize"]


def parse_since(text: str, now: float | None = None) -> float:
    """An ISO 8601 time, or a duration back from now (``90s``, ``30m``, ``24h``, ``7d``),
    as a UNIX time; ``ValueError`` naming the accepted forms otherwise."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if found:
        seconds = float(found[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86_400,
                                     "w": 604_800}[found[2]]
        return (time.time() if now is None else now) - seconds
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: give an ISO 8601 time (2026-11-24T08:00) or a "
                         f"duration such as 90s, 30m, 24h, 7d") from None
    return moment.timestamp()


def _rate(successes: int, calls: int) -> dict[str, Any]:
    """A rate with its Wilson 95% interval as ``interval_95`` (the name of the kernel's
    ``contract_stats``); ``interval`` is its deprecated alias, kept for one release."""
    interval = list(wilson_interval(successes, calls)) if calls else None
    return {"calls": calls, "successes": successes,
            "p_succ": successes / calls if calls else None,
            "interval_95": interval, "interval": interval}


def _percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"contracts": [...]}`` in the documented JSON shape, one entry per contract
    and label, in order of first appearance."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["contract"], row["label"]), []).append(row)
    out = []
    for (name, label), calls in groups.items():
        successes = sum(1 for c in calls if c["success"])
        families: dict[str, list[int]] = {}
        for call in calls:
            for family, passed in call["trials"]:
                counts = families.setdefault(family, [0, 0])
                counts[0] += passed
                counts[1] += 1
        family_rates = {f: _rate(p, n) for f, (p, n) in families.items()}
        product = math.prod(r["p_succ"] for r in family_rates.values()) \
            if family_rates else None
        costs = [c["cost"] for c in calls if c["cost"] is not None]
        latencies = [c["latency_ms"] for c in calls if c["latency_ms"] is not None]
        overall = _rate(successes, len(calls))
        out.append({
            "name": name, "label": label, "kind": calls[0].get("kind", "contract"),
            "calls": len(calls), "successes": successes,
            "p_succ": overall["p_succ"], "interval_95": overall["interval_95"],
            "interval": overall["interval_95"],  # deprecated alias of interval_95
            "families": family_rates,
            "family_product": product,
            "first_attempt_p_succ": sum(1 for c in calls if c["first_attempt"]) / len(calls),
            "cost_per_success": (sum(costs) / successes) if costs and successes else None,
            "tokens_per_success": (sum((c["input_tokens"] or 0) + (c["output_tokens"] or 0)
                                       for c in calls) / successes) if successes else None,
            "latency_ms": {"p50": _percentile(latencies, 50),
                           "p95": _percentile(latencies, 95),
                           "p99": _percentile(latencies, 99)},
            "preflight_refusals": sum(1 for c in calls if c["preflight"] == "unsatisfiable"),
            # failed post-conditions that the provider's own schema decoding enforces
            "provider_faults": sum(int(c.get("provider_faults") or 0) for c in calls),
            # calls a preflight="shadow" pre-flight would have refused
            "shadow_refusals": sum(int(c.get("shadow_refusals") or 0) for c in calls),
        })
    return {"contracts": out}


def _figure(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render_table(summary: dict[str, Any]) -> str:
    """The summary as text, one line per figure: every name in it (contract, label,
    family) shown with ``display_text``, so a newline or a terminal control in a name
    cannot add, break or redraw a line."""
    from hoare.stats.values import display_text

    lines = []
    for item in summary["contracts"]:
        low, high = item["interval_95"] or (None, None)
        lines.append(f"{display_text(item['name'])}  [label {display_text(item['label'])}]")
        lines.append(f"  P_succ {_figure(item['p_succ'])}  95% [{_figure(low)}, "
                     f"{_figure(high)}]  over {item['calls']} call(s); first attempt "
                     f"{_figure(item['first_attempt_p_succ'])}")
        for family, rate in item["families"].items():
            f_low, f_high = rate["interval_95"] or (None, None)
            lines.append(f"    {display_text(family):<28} {_figure(rate['p_succ'])}  "
                         f"[{_figure(f_low)}, {_figure(f_high)}]  "
                         f"({rate['successes']}/{rate['calls']})")
        if item["family_product"] is not None:
            lines.append(f"  product of the family rates {_figure(item['family_product'])} "
                         f"vs joint {_figure(item['p_succ'])}")
        latency = item["latency_ms"]
        lines.append(f"  latency p50 {_figure(latency['p50'], 1)} ms, p95 "
                     f"{_figure(latency['p95'], 1)} ms, p99 {_figure(latency['p99'], 1)} ms;"
                     f" cost per success {_figure(item['cost_per_success'], 4)}; pre-flight "
                     f"refusals {item['preflight_refusals']}"
                     + (f"; provider faults {item['provider_faults']} (schema-enforced "
                        f"checks the provider's answers failed)"
                        if item["provider_faults"] else "")
                     + (f"; shadow pre-flight would have refused {item['shadow_refusals']}"
                        if item.get("shadow_refusals") else ""))
        lines.append("")
    return "\n".join(lines).rstrip() or "no recorded call matches"
