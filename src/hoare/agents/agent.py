"""``ContractAgent``: a tool-using agent on any hoare engine, with contracts on the task,
each tool call, every iteration and the final answer (cyllama's ``ContractAgent``).

``agent_type="react"`` (the default) uses native tool calling: the request carries the
tools' JSON schemas and the model answers ``tool_calls`` or, when done, its answer as
text. ``"constrained"`` asks for one JSON action per step, ``{"tool": name, "args":
{...}}`` or ``{"answer": ...}``, so a small local model that cannot call tools still
works. A malformed action or tool call is fed back and costs one more request, bounded
by ``max_iterations``. Tool contracts (``@pre``/``@post``) are checked by the tool
itself, inside the agent's ``ContractContext`` (its policy and handler), so a tool's
``contract_assert`` reports to the agent that called it.
"""

from __future__ import annotations

import contextvars
import enum
import inspect
import json
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hoare import telemetry as _telemetry
from hoare.agents.conditions import _source
from hoare.agents.context import (
    ContractContext,
    checked_policy,
    close_awaitable,
    contract_context,
    current_context,
    default_handler,
    holds,
)
from hoare.agents.policy import ContractPolicy
from hoare.agents.recording import record_agent_call
from hoare.agents.tool import Tool, tool
from hoare.agents.violation import ContractTermination, ContractViolation, Kind, ViolationHandler
from hoare.contracts.json_text import extract_json
from hoare.engines.base import Engine, Message, Request
from hoare.errors import ContractDefinitionError

__all__ = ["AgentEvent", "AgentResult", "ContractAgent", "EventType", "IterationState"]

MAX_NESTING = 100
"""The deepest nesting of arrays and objects in a model's action, tool-call arguments or
JSON answer: deeper text is a failed attempt, fed back (never a ``RecursionError``)."""


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


Check = Callable[[Any], Any]


def _hooks(single: Check | None, plural: Sequence[Check] | None, name: str) -> list[Check]:
    """The normalized list of one kind of agent contract (empty: no constraint)."""
    if single is not None and plural is not None:
        raise ValueError(f"give {name} or {name}s, not both")
    hooks = [single] if single is not None else list(plural or [])
    for index, hook in enumerate(hooks):
        if not callable(hook):
            raise ContractDefinitionError(
                f"{name}s[{index}] must be a callable, got {type(hook).__name__}")
    return hooks


def _is_async(fn: Any) -> bool:
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


class _CountingContext(ContractContext):
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


class _ToolStats(dict[str, Any]):
    """One tool's ``tool_stats()`` entry; ``"interval"`` is a deprecated alias of
    ``"interval_95"`` (contract_stats' name), kept for one release."""

    def __getitem__(self, key: Any) -> Any:
        if key == "interval":
            warnings.warn("tool_stats()[name]['interval'] is deprecated: use "
                          "'interval_95'", DeprecationWarning, stacklevel=2)
        return super().__getitem__(key)


class ContractAgent:
    """A constrained (JSON action) agent with contracts; see the module docstring."""

    def __init__(self, engine: Engine, tools: Sequence[Any] | None = None,
                 policy: ContractPolicy = ContractPolicy.ENFORCE,
                 violation_handler: ViolationHandler | None = None,
                 task_precondition: Check | None = None,
                 answer_postcondition: Check | None = None,
                 iteration_invariant: Check | None = None, max_iterations: int = 10,
                 agent_type: str = "react", verbose: bool = False, *,
                 task_preconditions: Sequence[Check] | None = None,
                 answer_postconditions: Sequence[Check] | None = None,
                 iteration_invariants: Sequence[Check] | None = None,
                 answer_type: Any = None) -> None:
        if agent_type not in ("react", "constrained"):
            raise ValueError(f"agent_type must be 'react' (native tool calling) or "
                             f"'constrained' (one JSON action per step), got {agent_type!r}")
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or \
                max_iterations < 1:
            from hoare.declaration.models import safe_repr

            raise ValueError(f"max_iterations must be an int >= 1, got "
                             f"{_type_name(max_iterations)} {safe_repr(max_iterations)}")
        checked_policy(policy, "ContractAgent's policy")
        if violation_handler is not None and not callable(violation_handler):
            raise ContractDefinitionError(f"violation_handler must be callable or None, "
                                          f"got {_type_name(violation_handler)}")
        self.engine = engine
        self.tools = [t if isinstance(t, Tool) else tool(t) for t in (tools or [])]
        names = [t.name for t in self.tools]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ContractDefinitionError(
                f"tool names must be distinct (the model calls a tool by its name): "
                f"{repeated} given more than once; pass tool(fn, name=...) to rename one")
        for chosen in self.tools:
            if _is_async(chosen.func):
                raise ContractDefinitionError(
                    f"tool {chosen.name!r} is an async def function: ContractAgent calls "
                    f"its tools synchronously and would never await it (its @pre would "
                    f"never run); give a synchronous function")
        self.policy = policy
        self.violation_handler = violation_handler
        self.task_precondition = task_precondition
        self.answer_postcondition = answer_postcondition
        self.iteration_invariant = iteration_invariant
        self.max_iterations = max_iterations
        self.agent_type = agent_type
        self.verbose = verbose
        self.answer_type = answer_type
        self._answer_spec = None
        if answer_type is not None:
            from hoare.declaration.models import type_spec

            self._answer_spec = type_spec(answer_type)
        # cyllama's names: each kind of agent contract as a list (empty: no constraint)
        self.task_preconditions: list[Check] = _hooks(
            task_precondition, task_preconditions, "task_precondition")
        self.answer_postconditions: list[Check] = _hooks(
            answer_postcondition, answer_postconditions, "answer_postcondition")
        self.iteration_invariants: list[Check] = _hooks(
            iteration_invariant, iteration_invariants, "iteration_invariant")
        # threads may share an agent: its counters change under this lock only
        self._stats_lock = threading.Lock()
        self._checks = 0
        self._violations = 0
        # per tool: [calls, clean calls (returned, no contract violation), violations]
        self._per_tool: dict[str, list[int]] = {t.name: [0, 0, 0] for t in self.tools}
        # how its runs are named and told apart in the stats store
        self._name = f"agent:{agent_type}[{','.join(t.name for t in self.tools)}]"

    def _complete(self, request: Request) -> Any:
        """One engine call, in a ``chat`` span when traced (``hoare.telemetry``)."""
        span = None if _telemetry.tracer is None else \
            _telemetry.start_engine(self.engine, request.attempt)
        try:
            response = self.engine.complete(request)
        except BaseException as error:  # an interrupt too: the span ends
            if span is not None:
                _telemetry.finish_engine(span, None, error)
            raise
        if span is not None:
            _telemetry.finish_engine(span, response, None)
        return response

    def _definition(self) -> str:
        """What the stats store hashes to tell this agent's definition apart."""
        return json.dumps(
            [self.agent_type, self.max_iterations,
             [(t.name, t.description, t.parameters) for t in self.tools],
             [_source(c) for c in (*self.task_preconditions, *self.answer_postconditions,
                                   *self.iteration_invariants)]],
            default=str, sort_keys=True)

    def list_tools(self) -> list[str]:
        return [t.name for t in self.tools]

    def get_contract_stats(self) -> dict[str, int]:
        with self._stats_lock:
            return {"checks": self._checks, "violations": self._violations}

    def tool_stats(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, successes, violations (its own calls' only, exact when
        threads share the agent), and P_succ with its 95% Wilson interval
        (``interval_95``), as the kernel computes and names them for contracts. A call
        succeeds when the tool returned with no contract violation, the rule the stats
        store records it by; a call stopped by ``KeyboardInterrupt``, ``SystemExit`` or
        cancellation is not counted."""
        from hoare.kernel import wilson_interval

        with self._stats_lock:
            counts = {name: tuple(c) for name, c in self._per_tool.items()}
        out: dict[str, dict[str, Any]] = {}
        for name, (calls, clean, violations) in counts.items():
            interval = wilson_interval(clean, calls)
            out[name] = _ToolStats(calls=calls, successes=clean, violations=violations,
                                   p_succ=clean / calls if calls else None,
                                   interval_95=list(interval),  # as contract_stats()
                                   interval=interval)
        return out

    def _count_tool(self, name: str, checks: int, violations: int, clean: bool) -> None:
        with self._stats_lock:
            self._checks += checks
            counts = self._per_tool.setdefault(name, [0, 0, 0])
            counts[0] += 1
            counts[1] += clean
            counts[2] += violations

    # -- running -------------------------------------------------------------------------
    def run(self, task: str) -> AgentResult:
        state = IterationState()
        answer: Any = None
        error: str | None = None
        for event in self.stream(task, state):
            if event.type is EventType.ANSWER:
                answer = event.metadata.get("value", event.content)
            elif event.type is EventType.ERROR:
                error = event.content
        # answered: the rule the stats store records the run by (None may be a typed answer)
        success = bool(state.events) and state.events[-1].type is EventType.ANSWER
        return AgentResult(answer, state.events, success, None if success else error,
                           state.to_dict())

    def stream(self, task: str, state: IterationState | None = None) -> Iterator[AgentEvent]:
        """The run's events as they happen. The run executes in a private copy of the
        caller's ``contextvars`` context, so the agent's ``ContractContext`` is bound for
        its tools only, never for the caller's code between two events."""
        state = state if state is not None else IterationState()
        inner = self._stream(task, state)
        private = contextvars.copy_context()
        started = time.perf_counter_ns()
        span = None
        if _telemetry.tracer is not None:  # current in the private context only
            span = private.run(_telemetry.start_agent, "invoke_agent", self._name,
                               {"gen_ai.agent.name": self._name})
        try:
            while True:
                try:
                    event = private.run(next, inner)
                except StopIteration:
                    break
                yield event
        except BaseException as error:  # an interrupt, or the caller closed the stream
            try:
                private.run(inner.close)  # its contexts unwound where they were entered
            except Exception:
                pass
            if span is not None:
                private.run(_telemetry.finish_agent, span, False, error)
            raise
        answered = bool(state.events) and state.events[-1].type is EventType.ANSWER
        if span is not None:
            private.run(_telemetry.finish_agent, span, answered)
        record_agent_call("agent", self._name, self._definition, answered,
                          started, self.engine, max(1, state.iterations))

    def _stream(self, task: str, state: IterationState) -> Generator[AgentEvent, None, None]:
        pending: list[AgentEvent] = []

        def emit(event: AgentEvent) -> AgentEvent:
            state.update(event)
            return event

        def on_violation(violation: ContractViolation) -> None:
            metadata: dict[str, Any] = {"violation": violation}
            if "index" in violation.context:
                metadata["index"] = violation.context["index"]
            pending.append(AgentEvent(EventType.CONTRACT_VIOLATION, str(violation), metadata))
            if self.verbose:
                print(violation)
            # a handler that raises: ContractContext.handle_violation applies the rule
            (self.violation_handler or default_handler)(violation)

        context = _CountingContext(self.policy, on_violation, "agent", self._count_violation)
        text, problem = _text(task)
        if problem is not None:
            yield emit(AgentEvent(EventType.ERROR, f"the task is not text: {problem}"))
            return
        task_text = text
        try:
            with contract_context(context):
                for index, check in enumerate(self.task_preconditions):
                    self._agent_check(check, task, "task_pre", index)
                    yield from (emit(e) for e in _drain(pending))
                loop = self._react_loop if self.agent_type == "react" else self._loop
                yield from loop(task_text, state, emit, pending)
        except ContractTermination as stop:
            yield from (emit(e) for e in _drain(pending))
            yield emit(AgentEvent(EventType.ERROR, f"contract termination: {stop}",
                                  {"violation": stop.violation}))

    def _count_violation(self) -> None:
        with self._stats_lock:
            self._violations += 1

    def _agent_check(self, check: Check, value: Any, kind: Kind, index: int) -> None:
        """An agent-level contract (``location == "agent"``), under the agent's policy."""
        if self.policy is ContractPolicy.IGNORE:
            return
        with self._stats_lock:
            self._checks += 1
        try:
            ok = holds(check(value))  # an awaitable (async check) fails, closed
        except Exception:
            ok = False
        if not ok:
            bound = current_context() or ContractContext(self.policy, None, "agent")
            bound.handle_violation(ContractViolation(
                kind, "agent", _source(check), f"{kind} contract {index} failed",
                {"value": value, "index": index}, self.policy))

    def _system(self) -> str:
        lines = ["You solve the task with the tools below. Answer each step with ONE JSON "
                 "object and nothing else: {\"tool\": \"<name>\", \"args\": {...}} to call "
                 "a tool, or {\"answer\": \"<final answer>\"} when done.", "", "Tools:"]
        for t in self.tools:
            lines.append(f"- {t.name}: {t.description} parameters: "
                         f"{json.dumps(t.parameters, sort_keys=True)}")
        return "\n".join(lines)

    def _loop(self, task: str, state: IterationState,
              emit: Callable[[AgentEvent], AgentEvent],
              pending: list[AgentEvent]) -> Iterator[AgentEvent]:
        """The constrained agent: one JSON action per step."""
        messages = [Message("system", self._system()), Message("user", f"Task: {task}")]
        by_name = {t.name: t for t in self.tools}
        for _ in range(self.max_iterations):
            yield from self._step(state, emit, pending, messages)
            text = self._complete(Request(messages=tuple(messages))).text
            if not isinstance(text, str):
                text = ""  # a custom engine's non-text answer: not a valid action
            action, problem = _parse_action(text, by_name)
            if problem is not None:
                yield emit(AgentEvent(EventType.ERROR, problem, {"raw": text}))
                messages += [Message("assistant", text),
                             Message("user", f"That was not a valid action: {problem}. "
                                             f"Answer with one JSON action.")]
                continue
            assert action is not None
            if "answer" in action:
                problem = yield from self._answer(action["answer"], emit, pending)
                if problem is None:
                    return
                messages += [Message("assistant", text),
                             Message("user", f"{problem}. Answer again with "
                                             f"{{\"answer\": ...}} of that type.")]
                continue
            name, args = action["tool"], action.get("args") or {}
            observation = yield from self._call_tool(by_name[name], args, emit, pending)
            messages += [Message("assistant", text), Message("user", f"Observation: {observation}")]
        yield emit(AgentEvent(EventType.ERROR,
                              f"no answer after max_iterations={self.max_iterations}"))

    def _react_loop(self, task: str, state: IterationState,
                    emit: Callable[[AgentEvent], AgentEvent],
                    pending: list[AgentEvent]) -> Iterator[AgentEvent]:
        """Native tool calling (OpenAI's protocol): the request carries the tools, the
        model answers ``tool_calls`` or, when done, the final answer as text."""
        specs = tuple({"type": "function",
                       "function": {"name": t.name, "description": t.description,
                                    "parameters": t.parameters}} for t in self.tools)
        messages = [Message("system", "Solve the task. Call the tools when they help; when "
                                      "done, answer with the final answer as text."),
                    Message("user", f"Task: {task}")]
        by_name = {t.name: t for t in self.tools}
        for _ in range(self.max_iterations):
            yield from self._step(state, emit, pending, messages)
            response = self._complete(Request(messages=tuple(messages), tools=specs))
            if not response.tool_calls:
                reply = response.text if isinstance(response.text, str) else ""
                value, checked = self._typed_reply(reply)
                problem = yield from self._answer(value, emit, pending, checked)
                if problem is None:
                    return
                messages += [Message("assistant", reply),
                             Message("user", f"{problem}. Answer again.")]
                continue
            messages.append(Message("assistant", response.text, tool_calls=response.tool_calls))
            for call in response.tool_calls:
                action, problem = _tool_call_action(call.name, call.arguments, by_name)
                if problem is not None:
                    yield emit(AgentEvent(EventType.ERROR, problem, {"raw": call.arguments}))
                    messages.append(Message("tool", f"error: {problem}", tool_call_id=call.id))
                    continue
                assert action is not None
                observation = yield from self._call_tool(by_name[action["tool"]],
                                                         action.get("args") or {}, emit, pending)
                messages.append(Message("tool", observation, tool_call_id=call.id))
        yield emit(AgentEvent(EventType.ERROR,
                              f"no answer after max_iterations={self.max_iterations}"))

    def _step(self, state: IterationState, emit: Callable[[AgentEvent], AgentEvent],
              pending: list[AgentEvent], messages: list[Message]) -> Iterator[AgentEvent]:
        """The start of an iteration: a THOUGHT event, then the iteration invariants."""
        yield emit(AgentEvent(EventType.THOUGHT, f"iteration {state.iterations + 1}"))
        for index, invariant in enumerate(self.iteration_invariants):
            self._agent_check(invariant, state, "invariant", index)
            yield from (emit(e) for e in _drain(pending))
        state.estimated_prompt_chars = sum(len(m.content) for m in messages)

    def _typed_reply(self, reply: str) -> tuple[Any, bool]:
        """A native answer's value for ``answer_type``: ``(value, validated)``. A model
        answer is its JSON; a native type's (``list[str]``, ``int``) is its JSON value,
        bare or as ``{"value": ...}``, else the text itself (a ``str`` answer)."""
        spec = self._answer_spec
        if spec is None:
            return reply, False
        try:
            text = extract_json(reply)
            parsed = _load_json(text)  # refused past MAX_NESTING, before pydantic parses it
        except (ValueError, TypeError):
            return reply, False  # validation says what is wrong
        if not spec.wrapped:
            return parsed, False
        try:
            return spec.validate_json(text), True
        except Exception:
            return reply, False

    def _answer(self, value: Any, emit: Callable[[AgentEvent], AgentEvent],
                pending: list[AgentEvent], checked: bool = False
                ) -> Generator[AgentEvent, None, str | None]:
        """Check a final answer (its type with ``answer_type`` unless ``checked``, then
        the answer contracts) and emit it; return what is wrong with its type, or None
        when done."""
        if self._answer_spec is not None and not checked:
            try:
                value = self._answer_spec.validate(value)
            except Exception as error:  # a type violation: fed back, like a contract
                from hoare.declaration.models import safe_repr

                problem = f"the answer is not a valid {self._answer_spec.name}: " \
                          f"{_validation_text(error)}"
                yield emit(AgentEvent(EventType.ERROR, problem, {"raw": safe_repr(value)}))
                return problem
        elif self._answer_spec is None:
            text, not_text = _text(value)
            if not_text is not None:
                problem = f"the answer is not text: {not_text}"
                yield emit(AgentEvent(EventType.ERROR, problem))
                return problem
            value = text
        for index, check in enumerate(self.answer_postconditions):
            self._agent_check(check, value, "answer_post", index)
            yield from (emit(e) for e in _drain(pending))
        yield emit(AgentEvent(EventType.ANSWER, self._shown(value), {"value": value}))
        return None

    def _shown(self, value: Any) -> str:
        """An answer's text for its event: its JSON, or its repr when that fails."""
        if isinstance(value, str):
            return value
        try:
            return json.dumps(self._answer_spec.dump(value) if self._answer_spec else value,
                              default=str)
        except Exception:  # a validated value whose dump or str() raises
            from hoare.declaration.models import safe_repr

            return safe_repr(value)

    def _call_tool(self, chosen: Tool, args: dict[str, Any],
                   emit: Callable[[AgentEvent], AgentEvent],
                   pending: list[AgentEvent]) -> Generator[AgentEvent, None, str]:
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
            self._count_violation()

        started = time.perf_counter_ns()
        span = None if _telemetry.tracer is None else _telemetry.start_agent(
            "execute_tool", name, {"gen_ai.tool.name": name})
        raw: Any = None
        problem: str | None = None
        error: Exception | None = None
        try:
            with contract_context(_CountingContext(self.policy, _current_handler(), name,
                                                   counted)):
                raw = chosen(**args)
            if inspect.isawaitable(raw):  # a sync callable that returned a coroutine
                close_awaitable(raw)
                problem = (f"{name} returned an awaitable ({_type_name(raw)}), which a "
                           f"synchronous agent never awaits: the tool did not run")
        except ContractTermination as stop:
            self._count_tool(name, checks, violations, False)
            _record_tool(chosen, False, started)
            _telemetry.finish_agent(span, False, stop)
            raise
        except Exception as raised:
            error = raised
            problem = f"{name} raised {_type_name(raised)}: {_text(raised)[0]}"
        except BaseException as interrupt:  # not a failure of the tool: not counted
            _telemetry.finish_agent(span, False, interrupt)
            raise
        clean = problem is None and violations == 0
        self._count_tool(name, checks, violations, clean)
        _record_tool(chosen, clean, started)
        _telemetry.finish_agent(span, clean, error)
        yield from (emit(e) for e in _drain(pending))
        if problem is not None:
            yield emit(AgentEvent(EventType.ERROR, problem, {"tool_name": name}))
            return f"error: {problem}"
        observation, unreadable = _text(raw)
        if unreadable is not None:
            observation = f"<{_type_name(raw)} result: {unreadable}>"
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


def _text(value: object) -> tuple[str, str | None]:
    """``(str(value), None)`` as an exact ``str``, or ``("", what went wrong)`` when
    ``str()`` (or ``__format__``) of a foreign object raises or returns no text."""
    if type(value) is str:
        return value, None
    try:
        text = str(value)
        if isinstance(text, str):
            return str.__str__(text), None
        problem = f"its str() returned {_type_name(text)}"
    except Exception as error:
        problem = f"its str() raised {_type_name(error)}"
    return "", f"{_type_name(value)} object ({problem})"


def _type_name(value: object) -> str:
    try:
        name = type(value).__qualname__
        return name if isinstance(name, str) else "object"
    except Exception:
        return "object"


def _nesting(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text (strings skipped), iteratively."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return 0  # cannot be deeper than the bound: no scan
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    break
        elif char in "]}":
            depth -= 1
    return deepest


def _load_json(text: str) -> Any:
    """``json.loads`` of a model's text, refused with ``ValueError`` when nested deeper
    than ``MAX_NESTING`` (the parse, and every use of the value after, stays far from
    the recursion limit)."""
    if not isinstance(text, str):
        raise TypeError(f"JSON text must be a str, not {_type_name(text)}")
    if _nesting(text) > MAX_NESTING:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels")
    return json.loads(text)


def _tool_call_action(name: object, arguments: object, tools: dict[str, Tool]
                      ) -> tuple[dict[str, Any] | None, str | None]:
    """A native tool call as an action, or what is wrong with it."""
    if not isinstance(name, str):
        return None, f"a tool's name must be text, got {_type_name(name)}"
    if not isinstance(arguments, str):
        return None, f"a tool call's arguments must be JSON text, got {_type_name(arguments)}"
    if not arguments.strip():
        args: Any = {}
    else:
        try:
            args = _load_json(arguments)
        except ValueError as error:
            if "nested deeper" in str(error):
                return None, f"the arguments are {error}"
            return None, "args must be a JSON object"
    return _checked_action({"tool": name, "args": args}, tools)


def _validation_text(error: Exception) -> str:
    from pydantic import ValidationError

    from hoare.declaration.models import format_validation_error

    try:
        if isinstance(error, ValidationError):
            return format_validation_error(error)
    except Exception:
        pass
    return f"{_type_name(error)}: {_text(error)[0] or '(its str() raised)'}"


def _current_handler() -> ViolationHandler | None:
    context = current_context()
    return context.handler if context is not None else None


def _drain(pending: list[AgentEvent]) -> list[AgentEvent]:
    out = list(pending)
    pending.clear()
    return out


def _parse_action(text: str, tools: dict[str, Tool]
                  ) -> tuple[dict[str, Any] | None, str | None]:
    """The action in a model's answer, or what is wrong with it."""
    try:
        found = _load_json(extract_json(text))
    except (ValueError, TypeError) as error:
        if "nested deeper" in str(error):
            return None, f"the action is {error}"
        return None, "not a JSON object"
    return _checked_action(found, tools)


def _checked_action(found: Any, tools: dict[str, Tool]
                    ) -> tuple[dict[str, Any] | None, str | None]:
    """``found`` if it is a valid action for ``tools``, else what is wrong with it."""
    if not isinstance(found, dict):
        return None, "not a JSON object"
    if "answer" in found:
        return found, None
    name = found.get("tool")
    if not isinstance(name, str) or name not in tools:
        return None, f"unknown tool {name!r} (tools: {', '.join(sorted(tools)) or 'none'})"
    args = found.get("args", {})
    if not isinstance(args, dict):
        return None, "args must be a JSON object"
    properties = tools[name].parameters.get("properties", {})
    unknown = sorted(set(args) - set(properties))
    missing = sorted(set(tools[name].parameters.get("required", [])) - set(args))
    if unknown or missing:
        return None, (f"{name}: " + "; ".join(
            [f"unknown argument(s) {unknown}"] * bool(unknown) +
            [f"missing argument(s) {missing}"] * bool(missing)))
    return found, None
