"""``hoare compare``: two run labels over the same contracts, compared on P_succ with
an anytime-valid test, so a team may look after every batch without inflating false
verdicts.

Each label's P_succ gets a time-uniform confidence sequence (the method of
mixtures over the Bernoulli likelihood ratio; Robbins 1970, and as used by Howard,
Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", 2021). At every number of calls at once, with probability at least
``1 - alpha/2``, the sequence holds the true rate; the difference
``candidate - baseline`` is then inside ``[lo_B - hi_A, hi_B - lo_A]`` with
probability at least ``1 - alpha``, however often one looks. The gate:

* exit 0: the candidate is shown to be no worse than the baseline by more than
  ``max_drop`` (``lo_B - hi_A > -max_drop``);
* exit 1: it is shown to be worse by more (``hi_B - lo_A < -max_drop``);
* exit 3: neither is shown yet (with an estimate of how many more calls would do).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["compare", "confidence_sequence", "render_table", "verdict_status"]

def confidence_sequence(successes: int, calls: int, alpha: float) -> tuple[float, float]:
    """A ``1 - alpha`` time-uniform confidence sequence for a rate, at ``calls``
    observations with ``successes`` of them 1: ``(0, 1)`` before any call.

    The method of mixtures: for each candidate rate ``m``, the likelihood ratio of the
    data under a rate ``p`` against ``m``, averaged over a uniform prior on ``p``, is a
    nonnegative martingale of mean 1 when ``m`` is the true rate; by Ville's
    inequality it ever reaches ``1/alpha`` with probability at most ``alpha``. The
    sequence keeps the ``m`` where it has not. The average is ``C * exp(-l(m))`` with
    ``l(m) = s log m + f log(1 - m)`` (``C`` does not depend on ``m``), so the kept
    ``m`` are an interval around ``s / n``, found by bisection. The ratio adapts to the
    variance: near 0 or 1 the interval is much narrower than a variance-free bound."""
    if calls <= 0:
        return 0.0, 1.0
    s, f = successes, calls - successes
    # C = the integral of p^s (1-p)^f over a uniform prior: the Beta function B(s+1, f+1)
    log_c = math.lgamma(s + 1) + math.lgamma(f + 1) - math.lgamma(calls + 2)
    threshold = log_c + math.log(alpha)  # keep m while l(m) > threshold

    def loglik(m: float) -> float:
        return (s * math.log(m) if s else 0.0) + (f * math.log1p(-m) if f else 0.0)

    estimate = s / calls

    def root(inside: float, outside: float) -> float:
        for _ in range(60):
            middle = (inside + outside) / 2
            if loglik(middle) > threshold:
                inside = middle
            else:
                outside = middle
        return outside  # the side that is excluded: conservative by < 1e-15

    low = 0.0 if s == 0 else root(estimate, 0.0) if loglik(1e-300) <= threshold else 0.0
    high = 1.0 if f == 0 else root(estimate, 1.0) if loglik(1 - 1e-16) <= threshold else 1.0
    return low, high


def _side(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    successes = sum(1 for r in rows if r["success"])
    costs = [r["cost"] for r in rows if r["cost"] is not None]
    latencies = sorted(r["latency_ms"] for r in rows)
    return {"calls": len(rows), "successes": successes,
            "p_succ": successes / len(rows) if rows else None,
            "cost_per_success": sum(costs) / successes if costs and successes else None,
            "latency_ms_p50": latencies[(len(latencies) - 1) // 2] if latencies else None}


def _more_calls(a: dict[str, Any], b: dict[str, Any], alpha: float, max_drop: float
                ) -> int | None:
    """How many more calls in all (shared as now) would settle the gate if the rates
    stayed as estimated; None when they could not (the estimate sits on the margin)."""
    if not a["calls"] or not b["calls"]:
        return None
    gap = abs(b["p_succ"] - a["p_succ"] + max_drop)
    if gap == 0:
        return None
    for factor in (1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024):
        n_a, n_b = math.ceil(a["calls"] * factor), math.ceil(b["calls"] * factor)
        lo_a, hi_a = confidence_sequence(round(a["p_succ"] * n_a), n_a, alpha / 2)
        lo_b, hi_b = confidence_sequence(round(b["p_succ"] * n_b), n_b, alpha / 2)
        if (hi_a - lo_a) / 2 + (hi_b - lo_b) / 2 < gap:
            return n_a + n_b - a["calls"] - b["calls"]
    return None


def compare(baseline: Sequence[dict[str, Any]], candidate: Sequence[dict[str, Any]],
            max_drop: float = 0.0, confidence: float = 0.95, *,
            estimate_more: bool = True) -> dict[str, Any]:
    """The comparison of one contract's calls under two labels (rows of ``query``);
    ``estimate_more``: also estimate how many more calls an undecided gate needs."""
    alpha = 1 - confidence
    a, b = _side(baseline), _side(candidate)
    lo_a, hi_a = confidence_sequence(a["successes"], a["calls"], alpha / 2)
    lo_b, hi_b = confidence_sequence(b["successes"], b["calls"], alpha / 2)
    low, high = lo_b - hi_a, hi_b - lo_a
    if low > -max_drop:
        gate = "not worse"
    elif high < -max_drop:
        gate = "worse"
    else:
        gate = "cannot tell yet"
    better = "candidate better" if low > 0 else "baseline better" if high < 0 else \
        "cannot tell yet"
    return {"baseline": {**a, "sequence": [lo_a, hi_a]},
            "candidate": {**b, "sequence": [lo_b, hi_b]},
            "difference": {"estimate": (b["p_succ"] - a["p_succ"])
                           if a["calls"] and b["calls"] else None,
                           "sequence": [low, high]},
            "max_drop": max_drop, "confidence": confidence, "gate": gate,
            "verdict": better,
            "more_calls": None if gate != "cannot tell yet" or not estimate_more else
            _more_calls(a, b, alpha, max_drop)}


def verdict_status(results: Sequence[dict[str, Any]]) -> int:
    """1 when a contract is shown worse, else 3 when one is undecided, else 0."""
    gates = [r["gate"] for r in results]
    return 1 if "worse" in gates else 3 if "cannot tell yet" in gates or not gates else 0


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_table(results: Sequence[dict[str, Any]], baseline: str, candidate: str) -> str:
    lines = []
    for item in results:
        a, b, d = item["baseline"], item["candidate"], item["difference"]
        lines.append(f"{item['contract']}: {item['verdict']}; gate (max drop "
                     f"{item['max_drop']:g}, confidence {item['confidence']:g}): "
                     f"{item['gate']}")
        for name, side in ((baseline, a), (candidate, b)):
            lo, hi = side["sequence"]
            lines.append(f"  {name:<20} P_succ {_pct(side['p_succ'])}  "
                         f"[{lo:.3f}, {hi:.3f}] over {side['calls']} call(s); cost per "
                         f"success {_pct(side['cost_per_success'])}; latency p50 "
                         f"{_pct(side['latency_ms_p50'])} ms")
        lo, hi = d["sequence"]
        lines.append(f"  difference {_pct(d['estimate'])}  [{lo:.3f}, {hi:.3f}]"
                     + (f"; about {item['more_calls']} more call(s) would settle it"
                        if item["more_calls"] else ""))
    return "\n".join(lines) or "no calls of these labels"
