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
under a lock, every 512 calls and whenever the figures are read.
"""

from __future__ import annotations

import math
import operator
import threading
from collections import deque
from collections.abc import Mapping, Sequence
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
    """count, total, sum of squares, min, max of one operation's seconds."""

    __slots__ = ("count", "maximum", "minimum", "squares", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.squares = 0.0
        self.minimum = math.inf
        self.maximum = 0.0

    def extend(self, seconds: list[float]) -> None:
        """Many values at once: the reductions run in C."""
        if not seconds:
            return
        self.count += len(seconds)
        self.total += math.fsum(seconds)
        self.squares += math.fsum(map(operator.mul, seconds, seconds))
        self.minimum = min(self.minimum, min(seconds))
        self.maximum = max(self.maximum, max(seconds))

    def as_dict(self, whole: float) -> dict[str, float | int]:
        mean = self.total / self.count if self.count else 0.0
        variance = max(self.squares / self.count - mean * mean, 0.0) if self.count else 0.0
        return {"count": self.count, "total": self.total, "mean": mean,
                "std": math.sqrt(variance), "min": self.minimum if self.count else 0.0,
                "max": self.maximum,
                "percentage": 100.0 * self.total / whole if whole > 0 else 0.0}


class PerfStats:
    """The sums of one instance's calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[tuple[Sequence[tuple[Any, int]], int, bool]] = deque()
        self._sums = {name: _Sums() for name in _NAMES}

    def record(self, marks: Sequence[tuple[Any, int]], total_ns: int, act: bool) -> None:
        """One call: its clock marks (``Outcome.clock_marks``: the phase that starts,
        or None, and ``perf_counter_ns``), its time in all, and whether it has an act
        (else the act phase only passes the input on, and counts as overhead)."""
        self._queue.append((marks, total_ns, act))
        if len(self._queue) >= 512:
            self._fold()

    def _fold(self) -> None:
        """The queued calls into the sums: their seconds per operation, gathered in
        lists, then reduced in C (a per-call update in Python cost ~10 µs a call)."""
        with self._lock:
            queue = self._queue
            columns: list[list[float]] = [[] for _ in _NAMES]
            index = _INDEX
            while queue:
                try:
                    marks, total_ns, act = queue.popleft()
                except IndexError:
                    break
                ops = [0, 0, 0, 0]
                phases = 0
                previous, start = marks[0] if marks else (None, 0)
                for phase, now in marks[1:]:
                    if previous is not None:
                        position = index.get(previous._value_)  # enum's own attribute: fast
                        if position is not None and (act or position != _ACT):
                            ops[position] += now - start
                            phases += now - start
                    previous, start = phase, now
                for position in range(4):
                    if ops[position] > 0:  # as SymbolicAI: an operation that did not run
                        columns[position].append(ops[position] / 1e9)
                total = max(total_ns, phases)
                columns[4].append((total - phases) / 1e9)
                columns[5].append(total / 1e9)
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
            whole = self._sums["total_execution"].total
            figures = {name: sums.as_dict(whole) for name, sums in self._sums.items()}
        # as SymbolicAI: contract_execution is the whole call, forward included
        return {**{name: figures[name] for name in OPERATIONS},
                "contract_execution": dict(figures["total_execution"]),
                "overhead": figures["overhead"], "total_execution": figures["total_execution"]}

