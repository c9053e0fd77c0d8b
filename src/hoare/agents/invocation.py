"""One tool call of an agent, and its guards: the call runs inside a context that counts
its own violations (``CountingContext``), an awaitable returned where a value was
expected is closed and reported, an exception is fed back to the model as an
observation, an interrupt propagates uncounted; the call is counted, recorded in the
stats store and traced. ``is_async`` refuses at construction a tool the synchronous
agent would never await.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Generator
from typing import Any

from hoare import telemetry
from hoare.agents.context import (
    ContractContext,
    close_awaitable,
    contract_context,
    current_context,
)
from hoare.agents.events import AgentEvent, Emit, EventType, drain
from hoare.agents.policy import ContractPolicy
from hoare.agents.recording import record_agent_call
from hoare.agents.statistics import AgentCounters
from hoare.agents.text import text_of, type_name
from hoare.agents.tool import Tool
from hoare.agents.violation import ContractTermination, ContractViolation, ViolationHandler
from hoare.contracts.driver import Front, Invoke

__all__ = ["CountingContext", "call_tool", "is_async"]


class CountingContext(ContractContext):
    """An agent's context: it counts every violation it handles, ``QUICK_ENFORCE``'s too
    (which calls no handler), before the policy applies."""

    def __init__(self, policy: ContractPolicy, handler: ViolationHandler | None,
                 location: str, count: Callable[[], None]) -> None:
        super().__init__(policy, handler, location)
        self._count = count

    def handle_violation(self, violation: ContractViolation,
                         policy: ContractPolicy | None = None) -> bool:
        if (self.policy if policy is None else policy) is not ContractPolicy.IGNORE:
            self._count()
        return super().handle_violation(violation, policy)


def is_async(fn: Any) -> bool:
    """Is ``fn`` (a function, a partial of one, or a callable object) ``async def``? A
    synchronous wrapper of an ``async def`` function (``functools.wraps`` around
    ``asyncio.run(...)``) is not: it is judged by what it is, not by what it wraps."""
    try:
        call = inspect.getattr_static(type(fn), "__call__", None)
        for candidate in (fn, call):
            if inspect.iscoroutinefunction(candidate) or \
                    inspect.isasyncgenfunction(candidate):
                return True
    except Exception:
        return False
    return False


def call_tool(chosen: Tool, args: dict[str, Any], policy: ContractPolicy,
              counters: AgentCounters, emit: Emit, pending: list[AgentEvent]
              ) -> Generator[AgentEvent, None, str]:
    """Run one tool call inside the agent's context; return the observation text.

    The call's violations are counted by its own context, so its statistics are
    its own when threads share the agent. One rule for ``tool_stats`` and the
    stats store: a call succeeds when the tool returned with no contract
    violation; one that raised or returned an awaitable failed; one stopped by an
    interrupt or a cancellation is not counted (it propagates)."""
    name = chosen.name
    yield emit(AgentEvent(EventType.ACTION, f"{name}({json.dumps(args, default=str)})",
                          {"tool_name": name, "tool_args": args}))
    spec = chosen._contracts
    checks = len(spec.preconditions) + len(spec.postconditions) if spec else 0
    violations = 0

    def counted() -> None:
        nonlocal violations
        violations += 1
        counters.count_violation()

    started = time.perf_counter_ns()
    span = None if telemetry.tracer is None else telemetry.start_agent(
        "execute_tool", name, {"gen_ai.tool.name": name})
    raw: Any = None
    problem: str | None = None
    error: Exception | None = None
    try:
        with contract_context(CountingContext(policy, _current_handler(), name, counted)):
            raw = Front().perform(Invoke(chosen, args))  # the one driver runs it
        if inspect.isawaitable(raw):  # a sync callable that returned a coroutine
            close_awaitable(raw)
            problem = (f"{name} returned an awaitable ({type_name(raw)}), which a "
                       f"synchronous agent never awaits: the tool did not run")
    except ContractTermination as stop:
        counters.count_tool(name, checks, violations, False)
        _record_tool(chosen, False, started)
        telemetry.finish_agent(span, False, stop)
        raise
    except Exception as raised:
        error = raised
        problem = f"{name} raised {type_name(raised)}: {text_of(raised)[0]}"
    except BaseException as interrupt:  # not a failure of the tool: not counted
        telemetry.finish_agent(span, False, interrupt)
        raise
    clean = problem is None and violations == 0
    counters.count_tool(name, checks, violations, clean)
    _record_tool(chosen, clean, started)
    telemetry.finish_agent(span, clean, error)
    yield from (emit(e) for e in drain(pending))
    if problem is not None:
        yield emit(AgentEvent(EventType.ERROR, problem, {"tool_name": name}))
        return f"error: {problem}"
    observation, unreadable = text_of(raw)
    if unreadable is not None:
        observation = f"<{type_name(raw)} result: {unreadable}>"
    yield emit(AgentEvent(EventType.OBSERVATION, observation,
                          {"tool_name": name, "tool_args": args, "raw_result": raw}))
    return observation


def _record_tool(chosen: Tool, success: bool, started_ns: int) -> None:
    """A tool call in the stats store: a success when it returned with no contract
    violation (the figure ``tool_stats`` reports)."""
    record_agent_call(
        "tool", f"tool:{chosen.name}",
        lambda: f"{chosen.description}\n{json.dumps(chosen.parameters, sort_keys=True)}",
        success, started_ns, None)


def _current_handler() -> ViolationHandler | None:
    context = current_context()
    return context.handler if context is not None else None
