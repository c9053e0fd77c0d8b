"""Timing helpers shared by the hoare side and the SymbolicAI side (stdlib only).

Every timing is a batch of calls timed with ``time.perf_counter_ns``; a figure is
the median of the batch means after warm-up, with their min and max. Variants that
are compared run interleaved, round by round, in a rotating order (ABC, BCA, CAB,
...), so that drift on a shared machine hits every variant alike; a ratio is the
ratio of the medians, and the per-round ratios give its spread.

Each batch also records the thread's CPU time (``time.thread_time_ns``): on a
machine where other processes compete for the cores, wall time includes the time
the benchmark was descheduled, CPU time does not. Figures and goals use wall
time; the CPU-time medians are reported next to them as a cross-check.
"""

import gc
import statistics
import time
from collections.abc import Callable

# batch(n) -> (wall, cpu): mean nanoseconds per call over n back-to-back calls
Batch = Callable[[int], tuple[float, float]]


def time_batch(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """Mean wall and CPU nanoseconds per call of ``fn()`` over ``n`` back-to-back calls."""
    gc.collect()
    cpu = time.thread_time_ns()
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    wall = time.perf_counter_ns() - start
    return wall / n, (time.thread_time_ns() - cpu) / n


def summary(values_ns: list[float], unit: float = 1e3) -> dict[str, float]:
    """Median, min and max of batch means, in µs (``unit`` = 1e3) or ms (1e6)."""
    return {
        "median": statistics.median(values_ns) / unit,
        "min": min(values_ns) / unit,
        "max": max(values_ns) / unit,
        "runs": len(values_ns),
    }


def calibrate(batch: Batch, target_ns: float, *, probe: int = 20, cap: int = 20000) -> int:
    """How many calls make a batch of about ``target_ns`` (after a warm-up probe)."""
    batch(probe)  # warm-up: first calls build caches, schemas, bound hooks
    per_call = batch(probe)[0]
    return max(5, min(cap, int(target_ns / max(per_call, 1.0))))


def interleaved(variants: dict[str, Batch], *, rounds: int, target_ns: float,
                warmup_rounds: int = 2) -> dict[str, dict[str, object]]:
    """Run every variant ``rounds`` times, interleaved; return per variant the summary
    of its batch means (µs) plus the raw batch means (ns) for paired ratios."""
    sizes = {name: calibrate(batch, target_ns) for name, batch in variants.items()}
    names = list(variants)
    raw: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup_rounds + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            wall, used = variants[name](sizes[name])
            if index >= warmup_rounds:
                raw[name].append(wall)
                cpu[name].append(used)
    return {name: {**summary(raw[name]), "cpu_median": statistics.median(cpu[name]) / 1e3,
                   "calls_per_batch": sizes[name], "raw_ns": raw[name], "raw_cpu_ns": cpu[name]}
            for name in names}


def paired_ratio(results: dict[str, dict[str, object]], top: str, bottom: str
                 ) -> dict[str, float]:
    """``top``/``bottom``: the ratio of the medians, and the median, min and max of the
    per-round ratios (batches of the same round ran next to each other)."""
    a = results[top]["raw_ns"]
    b = results[bottom]["raw_ns"]
    assert isinstance(a, list) and isinstance(b, list)
    per_round = [x / y for x, y in zip(a, b, strict=True)]
    return {
        "ratio": statistics.median(a) / statistics.median(b),
        "paired_median": statistics.median(per_round),
        "paired_min": min(per_round),
        "paired_max": max(per_round),
        "cpu_ratio": float(results[top]["cpu_median"]) / float(results[bottom]["cpu_median"]),
    }


def paired_difference(results: dict[str, dict[str, object]], top: str, bottom: str
                      ) -> dict[str, float]:
    """``top - bottom`` in µs: the median, min and max of the per-round differences
    (more robust than the difference of two medians when the machine is noisy)."""
    a = results[top]["raw_ns"]
    b = results[bottom]["raw_ns"]
    assert isinstance(a, list) and isinstance(b, list)
    per_round = [(x - y) / 1e3 for x, y in zip(a, b, strict=True)]
    return {"median": statistics.median(per_round), "min": min(per_round),
            "max": max(per_round)}
