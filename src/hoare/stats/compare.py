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

Cost and latency are reported; they are gated only when asked
(``max_cost_increase``, ``max_latency_increase``), on the *median* cost per call and
median latency: a mean of unbounded values has no distribution-free confidence
sequence, a quantile has. The median's sequence (``quantile_sequence``) comes from the
same Bernoulli sequences, applied to the indicators ``x <= q``. The gate compares the
candidate's median with ``(1 + increase)`` times the baseline's: exit 1 when it is
shown above, 0 when shown at or below. With several gates, ``alpha`` is split evenly
between them (Bonferroni), so the chance of any false verdict stays under ``alpha``;
the command's status is 1 when any gate is shown worse, else 3 when any cannot tell
yet, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

__all__ = ["compare", "confidence_sequence", "quantile_sequence", "render_table",
           "verdict_status"]


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


def quantile_sequence(values: Sequence[float], p: float, alpha: float
                      ) -> tuple[float | None, float | None]:
    """A ``1 - alpha`` time-uniform confidence sequence for the ``p``-quantile of the
    distribution ``values`` are drawn from (``None``: unbounded on that side).

    For the true quantile ``q*``, ``P(X < q*) <= p <= P(X <= q*)``. The indicators
    ``x < q*`` and ``x <= q*`` are Bernoulli trials, so their rates have confidence
    sequences (each at ``alpha/2``); keep every ``q`` whose counts are compatible with
    ``p``: ``lower(#{x < q}) <= p <= upper(#{x <= q})``. Both counts grow with ``q``,
    so the kept ``q`` are an interval between two of the sorted values; the bounds
    are found by bisection on the rank."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None, None

    def upper(k: int) -> float:
        return confidence_sequence(k, n, alpha / 2)[1]

    def lower(k: int) -> float:
        return confidence_sequence(k, n, alpha / 2)[0]

    # the smallest k with upper(k) >= p: q below ordered[k-1] has #{x <= q} < k
    low_k, high_k = 0, n
    while low_k < high_k:
        middle = (low_k + high_k) // 2
        if upper(middle) >= p:
            high_k = middle
        else:
            low_k = middle + 1
    start = None if low_k == 0 else ordered[low_k - 1]
    # the largest k with lower(k) <= p: q above ordered[k] has #{x < q} > k
    low_k, high_k = 0, n
    while low_k < high_k:
        middle = (low_k + high_k + 1) // 2
        if lower(middle) <= p:
            low_k = middle
        else:
            high_k = middle - 1
    end = None if low_k == n else ordered[low_k]
    return start, end


def _ratio_gate(baseline: Sequence[float], candidate: Sequence[float], increase: float,
                alpha: float) -> dict[str, Any]:
    """The median gate: is the candidate's median shown above ``(1 + increase)`` times
    the baseline's (``worse``), shown at or below it (``not worse``), or neither?"""
    lo_a, hi_a = quantile_sequence(baseline, 0.5, alpha / 2)
    lo_b, hi_b = quantile_sequence(candidate, 0.5, alpha / 2)
    factor = 1 + increase
    if lo_b is not None and hi_a is not None and lo_b > hi_a * factor:
        gate = "worse"
    elif hi_b is not None and lo_a is not None and hi_b <= lo_a * factor:
        gate = "not worse"
    else:
        gate = "cannot tell yet"
    return {"max_increase": increase, "baseline_median": [lo_a, hi_a],
            "candidate_median": [lo_b, hi_b], "gate": gate}


class _Side(TypedDict):
    """One label's calls of a contract, summed up (``None`` when there are none)."""

    calls: int
    successes: int
    p_succ: float | None
    cost_per_success: float | None
    latency_ms_p50: float | None


def _side(rows: Sequence[dict[str, Any]]) -> _Side:
    successes = sum(1 for r in rows if r["success"])
    costs = [r["cost"] for r in rows if r["cost"] is not None]
    latencies = sorted(r["latency_ms"] for r in rows if r["latency_ms"] is not None)
    return {"calls": len(rows), "successes": successes,
            "p_succ": successes / len(rows) if rows else None,
            "cost_per_success": sum(costs) / successes if costs and successes else None,
            "latency_ms_p50": latencies[(len(latencies) - 1) // 2] if latencies else None}


def _more_calls(a: _Side, b: _Side, alpha: float, max_drop: float) -> int | None:
    """How many more calls in all (shared as now) would settle the gate if the rates
    stayed as estimated; None when they could not (the estimate sits on the margin)."""
    p_a, p_b = a["p_succ"], b["p_succ"]
    if p_a is None or p_b is None:  # a side without calls
        return None
    gap = abs(p_b - p_a + max_drop)
    if gap == 0:
        return None
    for factor in (1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024):
        n_a, n_b = math.ceil(a["calls"] * factor), math.ceil(b["calls"] * factor)
        lo_a, hi_a = confidence_sequence(round(p_a * n_a), n_a, alpha / 2)
        lo_b, hi_b = confidence_sequence(round(p_b * n_b), n_b, alpha / 2)
        if (hi_a - lo_a) / 2 + (hi_b - lo_b) / 2 < gap:
            return n_a + n_b - a["calls"] - b["calls"]
    return None


def compare(baseline: Sequence[dict[str, Any]], candidate: Sequence[dict[str, Any]],
            max_drop: float = 0.0, confidence: float = 0.95, *,
            max_cost_increase: float | None = None,
            max_latency_increase: float | None = None,
            estimate_more: bool = True) -> dict[str, Any]:
    """The comparison of one contract's calls under two labels (rows of ``query``);
    ``max_cost_increase``/``max_latency_increase``: also gate the median cost per call
    and median latency (fractions: 0.1 allows 10% more); ``estimate_more``: also
    estimate how many more calls an undecided P_succ gate needs."""
    gates = 1 + (max_cost_increase is not None) + (max_latency_increase is not None)
    alpha = (1 - confidence) / gates
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
    p_a, p_b = a["p_succ"], b["p_succ"]
    better = "candidate better" if low > 0 else "baseline better" if high < 0 else \
        "cannot tell yet"
    extra: dict[str, Any] = {}
    if max_cost_increase is not None:
        extra["cost"] = _ratio_gate(
            [r["cost"] for r in baseline if r["cost"] is not None],
            [r["cost"] for r in candidate if r["cost"] is not None], max_cost_increase, alpha)
    if max_latency_increase is not None:
        extra["latency"] = _ratio_gate([r["latency_ms"] for r in baseline
                                        if r["latency_ms"] is not None],
                                       [r["latency_ms"] for r in candidate
                                        if r["latency_ms"] is not None],
                                       max_latency_increase, alpha)
    every = [gate, *(g["gate"] for g in extra.values())]
    overall = "worse" if "worse" in every else "cannot tell yet" \
        if "cannot tell yet" in every else "not worse"
    return {"baseline": {**a, "sequence": [lo_a, hi_a]},
            "candidate": {**b, "sequence": [lo_b, hi_b]},
            "difference": {"estimate": p_b - p_a
                           if p_a is not None and p_b is not None else None,
                           "sequence": [low, high]},
            "max_drop": max_drop, "confidence": confidence, "gate": overall,
            "gates": {"p_succ": gate, **{name: g["gate"] for name, g in extra.items()}},
            **extra, "verdict": better,
            "more_calls": None if gate != "cannot tell yet" or not estimate_more else
            _more_calls(a, b, alpha, max_drop)}


def verdict_status(results: Sequence[dict[str, Any]]) -> int:
    """1 when a contract is shown worse, else 3 when one is undecided, else 0."""
    gates = [r["gate"] for r in results]
    return 1 if "worse" in gates else 3 if "cannot tell yet" in gates or not gates else 0


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _range(bounds: Sequence[float | None]) -> str:
    low, high = bounds
    return f"[{'–' if low is None else f'{low:.4g}'}, {'∞' if high is None else f'{high:.4g}'}]"


def render_table(results: Sequence[dict[str, Any]], baseline: str, candidate: str) -> str:
    """The comparison as text: names (contract, labels) shown with ``display_text``,
    so a newline or a terminal control in one cannot add, break or redraw a line."""
    from hoare.stats.values import display_text

    lines = []
    for item in results:
        a, b, d = item["baseline"], item["candidate"], item["difference"]
        lines.append(f"{display_text(item['contract'])}: {item['verdict']}; gate (max drop "
                     f"{item['max_drop']:g}, confidence {item['confidence']:g}): "
                     f"{item['gate']}")
        for name, side in ((baseline, a), (candidate, b)):
            lo, hi = side["sequence"]
            lines.append(f"  {display_text(name):<20} P_succ {_pct(side['p_succ'])}  "
                         f"[{lo:.3f}, {hi:.3f}] over {side['calls']} call(s); cost per "
                         f"success {_pct(side['cost_per_success'])}; latency p50 "
                         f"{_pct(side['latency_ms_p50'])} ms")
        lo, hi = d["sequence"]
        lines.append(f"  difference {_pct(d['estimate'])}  [{lo:.3f}, {hi:.3f}]"
                     + (f"; about {item['more_calls']} more call(s) would settle it"
                        if item["more_calls"] else ""))
        for name, unit in (("cost", ""), ("latency", " ms")):
            if name in item:
                g = item[name]
                lines.append(f"  {name} gate (median at most {1 + g['max_increase']:g}x the "
                             f"baseline's): {g['gate']}; medians {_range(g['baseline_median'])}"
                             f"{unit} vs {_range(g['candidate_median'])}{unit}")
    return "\n".join(lines) or "no calls of these labels"
