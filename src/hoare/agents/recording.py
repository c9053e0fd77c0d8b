"""Agent runs and tool calls in the stats store (``hoare.configure(stats=...)``), beside
contracted calls: ``kind`` is ``"agent"`` or ``"tool"``. Like a contract's record,
this costs one queue append and never fails the run."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

from hoare.contracts import configuration

__all__ = ["record_agent_call"]

def _hash(definition: Callable[[], str]) -> str:
    """A short hash of what defines the agent or tool (its tools, its description and
    parameters), so a changed definition is told apart, as for contracts."""
    return hashlib.sha256(definition().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def record_agent_call(kind: str, name: str, definition: Callable[[], str], success: bool,
                      started_ns: int, engine: object, steps: int = 1,
                      trials: tuple[tuple[str, bool], ...] = ()) -> None:
    """Queue one record of an agent run or a tool call, when a store is configured."""
    store: Any = configuration.stats_store()
    if store is None:
        return
    try:
        from hoare.engines.base import innermost
        from hoare.stats.store import CallRecord

        inner = innermost(engine)
        store.record(CallRecord(
            time.time(), name, _hash(definition), configuration.label(), success,
            success and steps <= 1, steps, 0, None, None, None, None,
            (time.perf_counter_ns() - started_ns) / 1e6,
            None if inner is None else type(inner).__name__, getattr(inner, "model", None),
            trials, kind))
    except Exception:  # recording must never fail a run
        logging.getLogger("hoare.stats").debug("not recorded", exc_info=True)
