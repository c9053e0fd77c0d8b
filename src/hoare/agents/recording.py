"""Agent runs and tool calls in the stats store (``hoare.configure(stats=...)``), beside
contracted calls: ``kind`` is ``"agent"`` or ``"tool"``, the record built by
``hoare.stats.records.call_record`` like every other. Like a contract's record, this
costs one queue append and never fails the run."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable

from hoare.contracts import configuration
from hoare.stats.records import RecordedAs, call_record

__all__ = ["record_agent_call"]


def _hash(definition: Callable[[], str]) -> str:
    """A short hash of what defines the agent or tool (its tools, its description and
    parameters), so a changed definition is told apart, as for contracts."""
    return hashlib.sha256(definition().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def record_agent_call(kind: str, name: str, definition: Callable[[], str], success: bool,
                      started_ns: int, engine: object, steps: int = 1,
                      trials: tuple[tuple[str, bool], ...] = ()) -> None:
    """Queue one record of an agent run or a tool call, when a store is configured."""
    store = configuration.stats_store()
    if store is None:
        return
    try:
        recorded_as = RecordedAs.of(name, _hash(definition), engine)
        store.record(call_record(kind, recorded_as, configuration.label(),
                                 time.perf_counter_ns() - started_ns, None, success=success,
                                 steps=steps, trials=trials))
    except Exception:  # recording must never fail a run
        logging.getLogger("hoare.stats").debug("not recorded", exc_info=True)
