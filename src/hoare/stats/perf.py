"""``contract_perf_stats()``'s aggregate over every call of one instance, in
SymbolicAI's shape: per operation ``count``, ``total``, ``mean``, ``std``, ``min``,
``max`` (seconds) and ``percentage`` of the total execution time, plus ``overhead``
(the time of a call outside its phases: binding, bookkeeping). As in SymbolicAI,
``contract_execution`` is the whole call, ``forward`` included (100 %), so that the
four operations and ``overhead`` add up to it; ``total_execution`` is the same
figure under the name hoare used first.

Running sums, not a list of calls: memory stays constant however many calls an
instance serves. A call only appends its clock marks to a queue (a ``deque`` append
is thread-safe and costs ~0.1 µs on the hot path); they are folded into the sums,
under a lock, every ``FOLD_EVERY`` calls and whenever the figures are read. The fold
groups the queued calls by the sequence of phases they went through (a happy call's
is always the same) and computes each group's column of seconds with ``map`` over
the marks' columns, in C: a per-call loop in Python over the marks cost more than
the rest of the bookkeeping of a call together. The batch is small so that the
queued marks do not pile up for the garbage collector to walk.
"""

from __future__ import annotations

import math
import operator
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from hoare.kernel import Phase

__all__ = ["OPERATIONS", "PerfStats"]

# SymbolicAI's operations, as the kernel's phases (spec §1) make them up.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "input_validation": ("input", "pre"),
    "act_execution": ("act",),
    "output_validation": ("preflight", "post", "result"),
    "forward_execution": ("forward",),
}


_NAMES = (*OPERATIONS, "overhead", "total_execution")  # summed; contract_execution copies
_INDEX = {phase: index for index, parts in enumerate(OPERATIONS.values()) for phase in parts}
_ACT = _INDEX["act"]


class _Sums:
    """count, total, sum of squares, min, max of one operation's nanoseconds (integers:
    exact, and summed in C); seconds only when read."""

    __slots__ = ("count", "maximum", "minimum", "squares", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0
        self.squares = 0
        self.minimum: int | None = None
        self.maximum = 0

    def extend(self, nanoseconds: list[int]) -> None:
        """Many values at once: the reductions run in C."""
        if not nanoseconds:
            return
        self.count += len(nanoseconds)
        self.total += sum(nanoseconds)
        self.squares += sum(map(operator.mul, nanoseconds, nanoseconds))
        least = min(nanoseconds)
        self.minimum = least if self.minimum is None else min(self.minimum, least)
        self.maximum = max(self.maximum, max(nanoseconds))

    def as_dict(self, whole: float) -> dict[str, float | int]:
        """In seconds; ``percentage`` of ``whole`` (seconds)."""
        total = self.total / 1e9
        mean = total / self.count if self.count else 0.0
        variance = max(self.squares / 1e18 / self.count - mean * mean, 0.0) \
            if self.count else 0.0
        return {"count": self.count, "total": total, "mean": mean,
                "std": math.sqrt(variance),
                "min": self.minimum / 1e9 if self.minimum is not None else 0.0,
                "max": self.maximum / 1e9,
                "percentage": 100.0 * total / whole if whole > 0 else 0.0}


Queued = tuple[Sequence[tuple[Any, int]], int, bool]
"""One call as ``PerfStats.record`` queues it: its clock marks, total, has an act."""


class PerfStats:
    """The sums of one instance's calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Queued] = deque()
        self._sums = {name: _Sums() for name in _NAMES}

    def record(self, marks: Sequence[tuple[Any, int]], total_ns: int, act: bool) -> None:
        """One call: its clock marks (``Outcome.clock_marks``: the phase that starts,
        or None, and ``perf_counter_ns``), its time in all, and whether it has an act
        (else the act phase only passes the input on, and counts as overhead)."""
        self._queue.append((marks, total_ns, act))
        if len(self._queue) >= FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        """The queued calls into the sums: a batch whose calls all went through the same
        phases (the steady state) in one pass over its columns, any other grouped by
        their phases first."""
        with self._lock:
            queue = self._queue
            batch: list[Queued] = []
            while queue:
                try:
                    batch.append(queue.popleft())
                except IndexError:
                    break
            if not batch:
                return
            columns: list[list[int]] = [[] for _ in _NAMES]
            for (phases, act), calls in _by_shape(batch):
                _fold_group(_plan(phases, act), calls, columns)
            for name, column in zip(_NAMES, columns, strict=True):
                self._sums[name].extend(column)

    def add(self, timings_ns: Mapping[str, int], total_ns: int) -> None:
        """One call given as nanoseconds per phase (``Outcome.timings_ns``) and in all."""
        marks: list[tuple[Any, int]] = []
        now = 0
        for phase, nanos in timings_ns.items():
            marks.append((Phase(phase), now))
            now += nanos
        marks.append((None, now))
        self.record(marks, total_ns, True)
        self._fold()

    def as_dict(self) -> dict[str, Any]:
        self._fold()
        with self._lock:
            whole = self._sums["total_execution"].total / 1e9
            figures = {name: sums.as_dict(whole) for name, sums in self._sums.items()}
        # as SymbolicAI: contract_execution is the whole call, forward included
        return {**{name: figures[name] for name in OPERATIONS},
                "contract_execution": dict(figures["total_execution"]),
                "overhead": figures["overhead"], "total_execution": figures["total_execution"]}



FOLD_EVERY = 64
"""Calls queued before a fold: few enough that their marks never pile up."""

Shape = tuple[tuple[Any, ...], bool]
"""The phases a call's marks name, in order, and whether it has an act."""

_PLANS: dict[Shape, tuple[tuple[tuple[int, int], ...], ...]] = {}


def _by_shape(batch: list[Queued]
              ) -> list[tuple[Shape, tuple[list[Sequence[int]], list[int]]]]:
    """The batch's calls grouped by shape, each group as the marks' times per call and
    the calls' totals. When every call has the first one's shape (checked on the
    flattened phases, in C), the batch is one group without a loop over its calls."""
    marks = [queued[0] for queued in batch]
    totals = [queued[1] for queued in batch]
    first = marks[0]
    act = batch[0][2]
    size = len(first)
    if size and list(map(len, marks)).count(size) == len(marks) \
            and [queued[2] for queued in batch].count(act) == len(batch):
        flat_phases, flat_times = zip(*chain.from_iterable(marks), strict=True)
        phases = flat_phases[:size]
        if phases * len(marks) == flat_phases:
            times: list[Sequence[int]] = [flat_times[start:start + size]
                                          for start in range(0, len(flat_times), size)]
            return [((phases, act), (times, totals))]
    groups: dict[Shape, tuple[list[Sequence[int]], list[int]]] = {}
    for (each, total, has_act) in batch:
        names, times_of_call = (tuple(zip(*each, strict=True)) if each else ((), ()))
        found = groups.get((names, has_act))
        if found is None:
            found = groups[(names, has_act)] = ([], [])
        found[0].append(times_of_call)
        found[1].append(total)
    return list(groups.items())


def _plan(phases: tuple[Any, ...], act: bool) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per operation (``OPERATIONS``' order), the runs of consecutive marks (first,
    last) whose intervals count towards it: an interval belongs to the phase that
    starts it; the act phase of a call without an act only passes the input on, and
    counts as overhead."""
    found = _PLANS.get((phases, act))
    if found is None:
        runs: list[list[tuple[int, int]]] = [[] for _ in OPERATIONS]
        for mark, phase in enumerate(phases[:-1]):
            if phase is None:
                continue
            position = _INDEX.get(phase._value_)  # enum's own attribute: fast
            if position is None or (not act and position == _ACT):
                continue
            own = runs[position]
            if own and own[-1][1] == mark:  # continues the operation's last run
                own[-1] = (own[-1][0], mark + 1)
            else:
                own.append((mark, mark + 1))
        found = tuple(tuple(each) for each in runs)
        if len(_PLANS) < 1024:  # the shapes a kernel makes are few; PerfStats.add any
            _PLANS[(phases, act)] = found
    return found


def _fold_group(plan: tuple[tuple[tuple[int, int], ...], ...],
                calls: tuple[list[Sequence[int]], list[int]],
                columns: list[list[int]]) -> None:
    """Append the nanoseconds of each operation, of the overhead and of the whole call
    for ``calls`` (all of one shape), column by column: an operation that did not run
    (0 ns) is not counted, as in SymbolicAI."""
    times, totals = calls
    marks = list(zip(*times, strict=True))
    phases_ns: list[int] | None = None
    for position, runs in enumerate(plan):
        if not runs:
            continue
        spent: list[int] | None = None
        for first, last in runs:
            part = list(map(operator.sub, marks[last], marks[first]))
            spent = part if spent is None else list(map(operator.add, spent, part))
        assert spent is not None
        phases_ns = spent if phases_ns is None else list(map(operator.add, phases_ns, spent))
        columns[position].extend(filter(None, spent))
    if phases_ns is None:
        phases_ns = [0] * len(totals)
    whole = list(map(max, totals, phases_ns))
    columns[4].extend(map(operator.sub, whole, phases_ns))
    columns[5].extend(whole)
