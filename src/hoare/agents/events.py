"""What an agent run reports: its events (``AgentEvent`` of an ``EventType``), the state
iteration invariants read (``IterationState``) and the final ``AgentResult``.

Kept apart from the loop (``agent.py``) because the tool-call path (``invocation.py``)
emits the same events, and users read them without running an agent.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AgentEvent", "AgentResult", "Emit", "EventType", "IterationState", "drain"]


class EventType(enum.Enum):
    THOUGHT = "thought"
    ACTION = "action"
    OBSERVATION = "observation"
    ANSWER = "answer"
    ERROR = "error"
    CONTRACT_CHECK = "contract_check"
    CONTRACT_VIOLATION = "contract_violation"


@dataclass
class AgentEvent:
    type: EventType
    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


Emit = Callable[[AgentEvent], AgentEvent]
"""How a run's steps publish an event: the run's state sees it, then the caller."""


@dataclass
class IterationState:
    """What the run has done so far: the argument of iteration invariants."""

    iterations: int = 0
    tool_calls: int = 0
    errors: int = 0
    events: list[AgentEvent] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    last_tool_name: str | None = None
    last_observation: str | None = None
    observations_so_far: list[str] = field(default_factory=list)
    consecutive_same_observation: int = 0
    estimated_prompt_chars: int = 0

    @property
    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def update(self, event: AgentEvent) -> None:
        """THOUGHT events count iterations, ACTION tool calls, ERROR errors."""
        self.events.append(event)
        if event.type is EventType.THOUGHT:
            self.iterations += 1
        elif event.type is EventType.ACTION:
            self.tool_calls += 1
            self.last_tool_name = str(event.metadata.get("tool_name"))
        elif event.type is EventType.ERROR:
            self.errors += 1
        elif event.type is EventType.OBSERVATION:
            same = event.content == self.last_observation
            self.consecutive_same_observation = \
                self.consecutive_same_observation + 1 if same else 0
            self.last_observation = event.content
            self.observations_so_far = [*self.observations_so_far, event.content][-10:]

    def to_dict(self) -> dict[str, Any]:
        return {"iterations": self.iterations, "tool_calls": self.tool_calls,
                "errors": self.errors, "events": len(self.events),
                "elapsed_ms": self.elapsed_ms, "last_tool_name": self.last_tool_name,
                "last_observation": self.last_observation,
                "observations_so_far": list(self.observations_so_far),
                "consecutive_same_observation": self.consecutive_same_observation,
                "estimated_prompt_chars": self.estimated_prompt_chars}


@dataclass
class AgentResult:
    """``answer``: the final answer (a string, or with ``answer_type`` the validated
    value)."""

    answer: Any
    events: list[AgentEvent]
    success: bool
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)


def drain(pending: list[AgentEvent]) -> list[AgentEvent]:
    """The events queued so far (violations handled during a check), the queue emptied."""
    out = list(pending)
    pending.clear()
    return out
