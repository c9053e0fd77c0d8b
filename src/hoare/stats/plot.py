"""Plots of the stats store (``pip install 'hoare[plots]'``, matplotlib):
``hoare stats --plot out.png`` and ``hoare compare --plot out.png``.

* stats: per contract and label, P_succ over time (the running estimate after each
  call, with its Wilson 95% band) beside one bar per predicate family with its
  interval;
* compare: per contract, each label's P_succ confidence sequence as the calls come in
  (the band narrows; it is valid at every point at once), and the difference's
  sequence against the ``-max_drop`` margin.

At most ``MAX_ROWS`` contracts are drawn (the title says how many were left out).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

try:
    import matplotlib

    matplotlib.use("Agg")  # files only: no screen needed
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
except ImportError as missing:  # pragma: no cover - the [plots] extra is not installed
    raise ImportError("plots need matplotlib: pip install 'hoare[plots]'") from missing

from hoare.kernel.stats import wilson_interval
from hoare.stats.compare import confidence_sequence

__all__ = ["MAX_ROWS", "plot_compare", "plot_stats"]

MAX_ROWS = 8
_POINTS = 400  # at most this many points per curve (evenly spaced calls)


def _steps(count: int) -> list[int]:
    """The call counts (1-based) a curve is drawn at: all, or ``_POINTS`` of them."""
    if count <= _POINTS:
        return list(range(1, count + 1))
    return sorted({max(1, round(i * count / _POINTS)) for i in range(1, _POINTS + 1)})


def _groups(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["contract"], row["label"]), []).append(row)
    return [(name, label, calls) for (name, label), calls in grouped.items()]


def plot_stats(rows: Sequence[dict[str, Any]], path: str,
               messages: dict[tuple[str, str], str] | None = None) -> int:
    """Draw ``hoare stats --plot``; return how many contract rows were drawn. A family's
    bar is labelled with its rule's message (``messages``, from the store's
    ``families`` table), else its name."""
    messages = messages or {}
    groups = _groups(rows)
    shown = groups[:MAX_ROWS]
    if not shown:
        raise ValueError("no recorded call matches: nothing to plot")
    figure, axes = plt.subplots(len(shown), 2, figsize=(12, 3.6 * len(shown)),
                                squeeze=False, gridspec_kw={"width_ratios": [3, 2]})
    for row, (name, label, calls) in zip(axes, shown, strict=True):
        over_time, families = row
        # over time when the calls span a minute or more; else by call number
        by_time = calls[-1]["ts"] - calls[0]["ts"] >= 60
        xs: list[Any] = []
        estimates, lows, highs = [], [], []
        successes = 0
        marks = set(_steps(len(calls)))
        for index, call in enumerate(calls, 1):
            successes += bool(call["success"])
            if index in marks:
                low, high = wilson_interval(successes, index)
                xs.append(dt.datetime.fromtimestamp(call["ts"]) if by_time else index)
                estimates.append(successes / index)
                lows.append(low)
                highs.append(high)
        over_time.fill_between(xs, lows, highs, alpha=0.25, color="tab:blue",
                               label="Wilson 95% interval", step="post")
        over_time.plot(xs, estimates, color="tab:blue", drawstyle="steps-post",
                       label="P_succ so far")
        if by_time:
            # matplotlib.dates has no annotations (no dates.pyi): its classes are untyped
            locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]  # no dates.pyi
            over_time.xaxis.set_major_locator(locator)
            formatter = mdates.ConciseDateFormatter(  # type: ignore[no-untyped-call]  # idem
                locator)
            over_time.xaxis.set_major_formatter(formatter)
        else:
            first = dt.datetime.fromtimestamp(calls[0]["ts"]).strftime("%Y-%m-%d %H:%M:%S")
            over_time.set_xlabel(f"calls so far (from {first}, in time order)")
        over_time.set_ylim(-0.02, 1.02)
        over_time.set_ylabel("P_succ")
        at_first = sum(1 for call in calls if call["first_attempt"])
        over_time.set_title(f"{_shown(name)}  [label {_shown(label)}]: "
                            f"{successes}/{len(calls)} calls met "
                            f"the contract, after any remedy ({at_first} at the first "
                            f"attempt)", fontsize=10)
        over_time.legend(loc="lower right", fontsize=8)
        over_time.grid(alpha=0.3)
        counts: dict[str, list[int]] = {}
        for call in calls:
            for family, passed in call["trials"]:
                tally = counts.setdefault(family, [0, 0])
                tally[0] += bool(passed)
                tally[1] += 1
        if counts:
            names = list(counts)
            rates = [counts[f][0] / counts[f][1] for f in names]
            intervals = [wilson_interval(*counts[f]) for f in names]
            errors = [[r - lo for r, (lo, _) in zip(rates, intervals, strict=True)],
                      [hi - r for r, (_, hi) in zip(rates, intervals, strict=True)]]
            positions = range(len(names))
            families.barh(positions, rates, xerr=errors, color="tab:green", alpha=0.7,
                          capsize=3)
            families.set_yticks(list(positions),
                                [_short(messages.get((name, f), f)) for f in names],
                                fontsize=8)
            families.invert_yaxis()
            for position, (rate, family) in enumerate(zip(rates, names, strict=True)):
                families.text(0.01, position, f"{rate:.3f} ({counts[family][0]}/"
                              f"{counts[family][1]})", va="center", fontsize=8)
        else:
            families.text(0.5, 0.5, "no predicate trials", ha="center", va="center")
        families.set_xlim(0, 1.0)
        families.set_xlabel("pass rate per predicate family (every attempt)")
        families.set_title("per family, 95% Wilson intervals", fontsize=10)
    return _save(figure, path, len(groups) - len(shown), "--contract or --label")


def plot_compare(results: Sequence[dict[str, Any]], a_rows: Sequence[dict[str, Any]],
                 b_rows: Sequence[dict[str, Any]], baseline: str, candidate: str,
                 path: str) -> int:
    """Draw ``hoare compare --plot``; return how many contract rows were drawn."""
    shown = list(results)[:MAX_ROWS]
    if not shown:
        raise ValueError("nothing to compare: nothing to plot")
    figure, axes = plt.subplots(len(shown), 2, figsize=(12, 3.6 * len(shown)),
                                squeeze=False)
    for row, result in zip(axes, shown, strict=True):
        rates, difference = row
        name = result["contract"]
        alpha = (1 - result["confidence"]) / len(result.get("gates") or {"p_succ": 1})
        # each label's sequence after n of its calls; the difference's after n calls of
        # each (both sequences hold at every n at once, so any pairing is valid)
        bands: list[dict[int, tuple[float, float, float]]] = []
        outcomes_of = [[bool(r["success"]) for r in rows if r["contract"] == name]
                       for rows in (a_rows, b_rows)]
        totals = [len(outcomes) for outcomes in outcomes_of]
        shared = _steps(min(totals))
        for outcomes in outcomes_of:
            band: dict[int, tuple[float, float, float]] = {}
            successes = 0
            marks = set(_steps(len(outcomes))) | set(shared)
            for index, ok in enumerate(outcomes, 1):
                successes += ok
                if index in marks:
                    low, high = confidence_sequence(successes, index, alpha / 2)
                    band[index] = (successes / index, low, high)
            bands.append(band)
            totals.append(len(outcomes))
        for band, label, total, color in ((bands[0], baseline, totals[0], "tab:blue"),
                                          (bands[1], candidate, totals[1], "tab:orange")):
            xs = sorted(band)
            rates.fill_between(xs, [band[x][1] for x in xs], [band[x][2] for x in xs],
                               alpha=0.2, color=color)
            rates.plot(xs, [band[x][0] for x in xs], color=color,
                       label=f"{_shown(label)} ({total} calls)")
        rates.set_ylim(-0.02, 1.02)
        rates.set_xlabel("calls so far (of each label)")
        rates.set_ylabel("P_succ")
        rates.set_title(f"{_shown(name)}: confidence sequences (valid at every look)", fontsize=10)
        rates.legend(loc="lower right", fontsize=8)
        rates.grid(alpha=0.3)
        common = shared
        top, bottom = 1.02, -1.02
        if common:  # the difference's sequence against the margin
            a, b = [bands[0][n] for n in common], [bands[1][n] for n in common]
            lows = [y[1] - x[2] for x, y in zip(a, b, strict=True)]
            highs = [y[2] - x[1] for x, y in zip(a, b, strict=True)]
            difference.fill_between(common, lows, highs, alpha=0.25, color="tab:purple",
                                    label=f"{_shown(candidate)} − {_shown(baseline)} "
                                          f"(sequence)")
            settled = len(common) // 5  # zoom on the later looks, where the gate is read
            bottom = max(-1.02, min(*lows[settled:], -result["max_drop"]) - 0.05)
            top = min(1.02, max(*highs[settled:], 0.0) + 0.05)
            difference.plot(common, [y[0] - x[0] for x, y in zip(a, b, strict=True)],
                            color="tab:purple", label="estimate")
        margin = -result["max_drop"]
        difference.axhline(margin, color="tab:red", linestyle="--",
                           label=f"−max drop ({margin:g})")
        difference.axhline(0, color="black", linewidth=0.8)
        difference.set_ylim(bottom, top)
        difference.set_xlabel("calls so far (of each label)")
        difference.set_title(f"difference: gate {result['gate']}; verdict "
                             f"{result['verdict']}", fontsize=10)
        difference.legend(loc="best", fontsize=8)
        difference.grid(alpha=0.3)
    return _save(figure, path, len(results) - len(shown), "--contract")


def _save(figure: Any, path: str, left_out: int, narrow: str) -> int:
    """Write the figure (saying how many contracts were left out); the rows drawn.

    Drawn in memory in the format the path's suffix names (none: PNG), then written as
    ``hoare verify -o`` writes: atomically, a link followed, a FIFO or device as it is.
    Handing the path to matplotlib wrote ``..png`` for ``.``, and lost the error of a
    full disk (``/dev/full``: "plot written")."""
    import io
    import os

    from hoare.verifier.report import write_report

    if left_out > 0:
        figure.suptitle(f"{left_out} more contract(s) not drawn: use {narrow}", fontsize=9)
    suffix = os.path.splitext(path)[1][1:].lower() or "png"
    supported = figure.canvas.get_supported_filetypes()
    if suffix not in supported:
        plt.close(figure)
        raise ValueError(f"no image format for {suffix!r} (known: "
                         f"{', '.join(sorted(supported))})")
    figure.tight_layout()
    image = io.BytesIO()
    try:
        figure.savefig(image, dpi=110, format=suffix)
    finally:
        plt.close(figure)
    write_report(path, image.getvalue())
    return len(figure.axes) // 2


def _shown(text: str) -> str:
    """A name as a plot shows it: control characters escaped (a font has no glyph for
    them: matplotlib warned, and drew nothing), and ``$`` too (mathtext)."""
    from hoare.stats.values import display_text

    return display_text(text).replace("$", r"\$")


def _short(text: str, width: int = 34) -> str:
    text = _shown(text)
    return text if len(text) <= width else text[:width - 1] + "…"
