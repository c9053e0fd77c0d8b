"""An agent's counters: contract checks and violations, and per tool its calls, clean
calls and violations, behind one lock because threads may share an agent. They feed
``ContractAgent.get_contract_stats`` and ``tool_stats`` (P_succ with its Wilson interval,
as the kernel computes it for contracts).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any

from hoare.forking import hold_across_fork

__all__ = ["AgentCounters", "ToolStats"]


class ToolStats(dict[str, Any]):
    """One tool's ``tool_stats()`` entry; ``"interval"`` is a deprecated alias of
    ``"interval_95"`` (contract_stats' name), kept for one release."""

    def __getitem__(self, key: Any) -> Any:
        if key == "interval":
            warnings.warn("tool_stats()[name]['interval'] is deprecated: use "
                          "'interval_95'", DeprecationWarning, stacklevel=2)
        return super().__getitem__(key)


class AgentCounters:
    """The counts of one agent; every change is made under its lock."""

    def __init__(self, tool_names: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._checks = 0
        self._violations = 0
        # per tool: [calls, clean calls (returned, no contract violation), violations]
        self._per_tool: dict[str, list[int]] = {name: [0, 0, 0] for name in tool_names}
        hold_across_fork(self, self._lock)  # a child forked mid-count must not hang

    def count_check(self) -> None:
        with self._lock:
            self._checks += 1

    def count_violation(self) -> None:
        with self._lock:
            self._violations += 1

    def count_tool(self, name: str, checks: int, violations: int, clean: bool) -> None:
        """One finished tool call: its contract checks, its violations, and whether it
        was clean (returned with no contract violation)."""
        with self._lock:
            self._checks += checks
            counts = self._per_tool.setdefault(name, [0, 0, 0])
            counts[0] += 1
            counts[1] += clean
            counts[2] += violations

    def contract_stats(self) -> dict[str, int]:
        with self._lock:
            return {"checks": self._checks, "violations": self._violations}

    def tool_stats(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, successes, violations, and P_succ with its 95% Wilson
        interval (``interval_95``)."""
        from hoare.kernel import wilson_interval

        with self._lock:
            counts = {name: tuple(c) for name, c in self._per_tool.items()}
        out: dict[str, dict[str, Any]] = {}
        for name, (calls, clean, violations) in counts.items():
            interval = wilson_interval(clean, calls)
            out[name] = ToolStats(calls=calls, successes=clean, violations=violations,
                                  p_succ=clean / calls if calls else None,
                                  interval_95=list(interval),  # as contract_stats()
                                  interval=interval)
        return out
