"""``contract_perf_stats()``'s aggregate over every call of one instance, in
SymbolicAI's shape: per operation ``count``, ``total``, ``mean``, ``std``, ``min``,
``max`` (seconds) and ``percentage`` of the total execution time, plus ``overhead``
(the time of a call outside its phases: binding, bookkeeping). As in SymbolicAI,
``contract_execution`` is the whole call, ``forward`` included (100 %), so that the
four operations and ``overhead`` add up to it; ``total_execution`` is the same
figure under the name hoare used first.

Running sums, not a list of calls: memory stays constant however many calls an
instance serves. A call turns its clock marks into its six figures (nanoseconds per
operation, overhead, whole call) and queues them as one tuple of integers (a
``deque`` append is thread-safe); they are folded into the sums, under a lock, every
``FOLD_EVERY`` calls and whenever the figures are read, column by column in C. A happy
call's marks always name the same phases, so its figures are six subtractions; any
other sequence of phases goes through a plan computed once per sequence. Queuing the
marks themselves cost more: the lists the garbage collector had to walk until the
next fold, and a per-call loop in Python at the fold.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import repeat, starmap
from typing import Any

from hoare.forking import hold_across_fork
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
    """count, total, min, max of one operation's nanoseconds (integers: exact, and
    summed in C) and their sum of squares (a float: ``std`` is one, and squaring exact
    integers in Python cost more than the rest of the fold); seconds only when read."""

    __slots__ = ("count", "maximum", "minimum", "squares", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0
        self.squares = 0.0
        self.minimum: int | None = None
        self.maximum = 0

    def extend(self, nanoseconds: Sequence[int], least: int) -> None:
        """Many values at once, ``least`` the smallest: the reductions run in C
        (``hypot`` is the square root of the sum of squares, computed in one call)."""
        self.count += len(nanoseconds)
        self.total += sum(nanoseconds)
        self.squares += math.hypot(*nanoseconds) ** 2
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


Figures = tuple[int, int, int, int, int, int]
"""One call's nanoseconds: input validation, act, output validation, forward (0: did
not run), overhead, the whole call (``_NAMES``' order)."""


class PerfStats:
    """The sums of one instance's calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)
        self._queue: deque[Figures] = deque()
        self._sums = {name: _Sums() for name in _NAMES}

    def record(self, marks: Sequence[tuple[Any, int]], total_ns: int, act: bool) -> None:
        """One call: its clock marks (``Outcome.clock_marks``: the phase that starts,
        or None, and ``perf_counter_ns``), its time in all, and whether it has an act
        (else the act phase only passes the input on, and counts as overhead)."""
        if len(marks) == 8:
            (p0, t0), (p1, _), (p2, t2), (p3, t3), (p4, _), (p5, t5), (p6, t6), \
                (p7, t7) = marks
            if p0 is _INPUT and p1 is _PRE and p2 is _ACT_PHASE and p3 is _PREFLIGHT \
                    and p4 is _POST and p5 is _FORWARD and p6 is _RESULT and p7 is None:
                # a call that went through every phase (a happy one, or a failed post)
                validation, acting = t2 - t0, (t3 - t2 if act else 0)
                output, forward = t5 - t3 + t7 - t6, t6 - t5
                phases = validation + acting + output + forward
                whole = total_ns if total_ns > phases else phases
                self._queue.append((validation, acting, output, forward, whole - phases,
                                    whole))
                if len(self._queue) >= FOLD_EVERY:
                    self._fold()
                return
        self._queue.append(_figures(marks, total_ns, act))
        if len(self._queue) >= FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        """The queued figures into the sums, one column at a time. Only a fold takes
        figures out (under the lock) and other threads only append, so the figures
        queued when it starts are all there to take, in C."""
        with self._lock:
            queue = self._queue
            batch = list(starmap(queue.popleft, repeat((), len(queue))))
            if not batch:
                return
            columns = zip(*batch, strict=True)
            for position, (name, column) in enumerate(zip(_NAMES, columns, strict=True)):
                least = min(column)
                # an operation that did not run (0 ns) is not counted, as in SymbolicAI
                if position < 4 and least <= 0:
                    column = tuple(filter(_POSITIVE, column))
                    if not column:
                        continue
                    least = min(column)
                self._sums[name].extend(column, least)

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



_POSITIVE = (0).__lt__  # an operation that ran took more than 0 ns

FOLD_EVERY = 128
"""Calls queued before a fold (a tuple of six integers each)."""

_INPUT, _PRE, _ACT_PHASE, _PREFLIGHT, _POST, _FORWARD, _RESULT = (
    Phase.INPUT, Phase.PRE, Phase.ACT, Phase.PREFLIGHT, Phase.POST, Phase.FORWARD,
    Phase.RESULT)

_PLANS: dict[tuple[tuple[Any, ...], bool], tuple[tuple[tuple[int, int], ...], ...]] = {}


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
        if len(_PLANS) < 1024:  # the sequences a kernel makes are few; PerfStats.add any
            _PLANS[(phases, act)] = found
    return found


def _figures(marks: Sequence[tuple[Any, int]], total_ns: int, act: bool) -> Figures:
    """The figures of a call whose marks name any sequence of phases."""
    plan = _plan(tuple(phase for phase, _ in marks), act)
    times = [now for _, now in marks]
    validation, acting, output, forward = (
        sum(times[last] - times[first] for first, last in runs) for runs in plan)
    phases = validation + acting + output + forward
    whole = max(total_ns, phases)
    return (validation, acting, output, forward, whole - phases, whole)
