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

This module is the agent's configuration and its loop; what the loop reports is in
``events.py``, reading the model's actions in ``actions.py``, one tool call and its
guards in ``invocation.py``, the counters in ``statistics.py``.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

from hoare import telemetry
from hoare.agents.actions import load_json, parse_action, tool_call_action
from hoare.agents.conditions import predicate_source
from hoare.agents.context import (
    ContractContext,
    checked_policy,
    contract_context,
    current_context,
    default_handler,
    holds,
)
from hoare.agents.events import (
    AgentEvent,
    AgentResult,
    Emit,
    EventType,
    IterationState,
    drain,
)
from hoare.agents.invocation import CountingContext, call_tool, is_async
from hoare.agents.policy import ContractPolicy
from hoare.agents.recording import record_agent_call
from hoare.agents.statistics import AgentCounters
from hoare.agents.text import text_of, type_name, validation_text
from hoare.agents.tool import NAME_PATTERN, Tool, tool
from hoare.agents.violation import ContractTermination, ContractViolation, Kind, ViolationHandler
from hoare.contracts.driver import Send, Sender
from hoare.contracts.json_text import extract_json
from hoare.engines.base import Engine, Message, Request, Response
from hoare.errors import ContractDefinitionError

__all__ = ["ContractAgent"]

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
                             f"{type_name(max_iterations)} {safe_repr(max_iterations)}")
        checked_policy(policy, "ContractAgent's policy")
        if violation_handler is not None and not callable(violation_handler):
            raise ContractDefinitionError(f"violation_handler must be callable or None, "
                                          f"got {type_name(violation_handler)}")
        self.engine = engine
        self.tools = [t if isinstance(t, Tool) else tool(t) for t in (tools or [])]
        names = [t.name for t in self.tools]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ContractDefinitionError(
                f"tool names must be distinct (the model calls a tool by its name): "
                f"{repeated} given more than once; pass tool(fn, name=...) to rename one")
        for chosen in self.tools:
            chosen.parameters  # noqa: B018  # built now: a tool pydantic cannot describe is refused here
        misnamed = [t.name for t in self.tools if not NAME_PATTERN.fullmatch(t.name)]
        if agent_type == "react" and misnamed:
            raise ContractDefinitionError(
                f"tool names {misnamed} are not names a native tool call can carry "
                f"(letters, digits, _ and -, at most 64: a provider answers 400 to any "
                f"other); pass tool(fn, name=...) or agent_type='constrained'")
        for chosen in self.tools:
            if is_async(chosen.func):
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
        # threads may share an agent: its counters change under their lock only
        self._counters = AgentCounters(t.name for t in self.tools)
        # how its runs are named and told apart in the stats store
        self._name = f"agent:{agent_type}[{','.join(t.name for t in self.tools)}]"

    def _complete(self, request: Request) -> Response | str:
        """One engine call, through the one driver (``contracts.driver``): in a ``chat``
        span when traced, ended whatever stops it. The answer, or what is wrong with
        it: an answer that is not a ``Response`` is a failed step, never read through
        attributes a foreign object may lack or raise from."""
        response = Sender(self.engine).perform(Send(request))
        if not isinstance(response, Response):
            return f"the engine answered a {type_name(response)}, not a Response"
        return response

    def _definition(self) -> str:
        """What the stats store hashes to tell this agent's definition apart."""
        return json.dumps(
            [self.agent_type, self.max_iterations,
             [(t.name, t.description, t.parameters) for t in self.tools],
             [predicate_source(c) for c in (*self.task_preconditions,
                                           *self.answer_postconditions,
                                           *self.iteration_invariants)]],
            default=str, sort_keys=True)

    def list_tools(self) -> list[str]:
        return [t.name for t in self.tools]

    def get_contract_stats(self) -> dict[str, int]:
        return self._counters.contract_stats()

    def tool_stats(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, successes, violations (its own calls' only, exact when
        threads share the agent), and P_succ with its 95% Wilson interval
        (``interval_95``), as the kernel computes and names them for contracts. A call
        succeeds when the tool returned with no contract violation, the rule the stats
        store records it by; a call stopped by ``KeyboardInterrupt``, ``SystemExit`` or
        cancellation is not counted."""
        return self._counters.tool_stats()

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
        if telemetry.tracer is not None:  # current in the private context only
            span = private.run(telemetry.start_agent, "invoke_agent", self._name,
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
                private.run(telemetry.finish_agent, span, False, error)
            if isinstance(error, Exception):  # a failed run (an engine's error): recorded
                record_agent_call("agent", self._name, self._definition, False,
                                  started, self.engine, max(1, state.iterations))
            raise
        answered = bool(state.events) and state.events[-1].type is EventType.ANSWER
        if span is not None:
            private.run(telemetry.finish_agent, span, answered)
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

        context = CountingContext(self.policy, on_violation, "agent",
                                  self._counters.count_violation)
        text, problem = text_of(task)
        if problem is not None:
            yield emit(AgentEvent(EventType.ERROR, f"the task is not text: {problem}"))
            return
        task_text = text
        try:
            with contract_context(context):
                for index, check in enumerate(self.task_preconditions):
                    self._agent_check(check, task, "task_pre", index)
                    yield from (emit(e) for e in drain(pending))
                loop = self._react_loop if self.agent_type == "react" else self._loop
                yield from loop(task_text, state, emit, pending)
        except ContractTermination as stop:
            yield from (emit(e) for e in drain(pending))
            yield emit(AgentEvent(EventType.ERROR, f"contract termination: {stop}",
                                  {"violation": stop.violation}))

    def _agent_check(self, check: Check, value: Any, kind: Kind, index: int) -> None:
        """An agent-level contract (``location == "agent"``), under the agent's policy."""
        if self.policy is ContractPolicy.IGNORE:
            return
        self._counters.count_check()
        try:
            ok = holds(check(value))  # an awaitable (async check) fails, closed
        except Exception:
            ok = False
        if not ok:
            bound = current_context() or ContractContext(self.policy, None, "agent")
            bound.handle_violation(ContractViolation(
                kind, "agent", predicate_source(check), f"{kind} contract {index} failed",
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
              emit: Emit,
              pending: list[AgentEvent]) -> Iterator[AgentEvent]:
        """The constrained agent: one JSON action per step."""
        messages = [Message("system", self._system()), Message("user", f"Task: {task}")]
        by_name = {t.name: t for t in self.tools}
        for _ in range(self.max_iterations):
            yield from self._step(state, emit, pending, messages)
            response = self._complete(Request(messages=tuple(messages)))
            if isinstance(response, str):
                yield emit(AgentEvent(EventType.ERROR, response))
                continue
            text = response.text
            if not isinstance(text, str):
                text = ""  # a custom engine's non-text answer: not a valid action
            action, problem = parse_action(text, by_name)
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
            observation = yield from call_tool(by_name[name], args, self.policy,
                                               self._counters, emit, pending)
            messages += [Message("assistant", text), Message("user", f"Observation: {observation}")]
        yield emit(AgentEvent(EventType.ERROR,
                              f"no answer after max_iterations={self.max_iterations}"))

    def _react_loop(self, task: str, state: IterationState,
                    emit: Emit,
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
            if isinstance(response, str):
                yield emit(AgentEvent(EventType.ERROR, response))
                continue
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
                action, problem = tool_call_action(call.name, call.arguments, by_name)
                if problem is not None:
                    yield emit(AgentEvent(EventType.ERROR, problem, {"raw": call.arguments}))
                    messages.append(Message("tool", f"error: {problem}", tool_call_id=call.id))
                    continue
                assert action is not None
                observation = yield from call_tool(
                    by_name[action["tool"]], action.get("args") or {}, self.policy,
                    self._counters, emit, pending)
                messages.append(Message("tool", observation, tool_call_id=call.id))
        yield emit(AgentEvent(EventType.ERROR,
                              f"no answer after max_iterations={self.max_iterations}"))

    def _step(self, state: IterationState, emit: Emit,
              pending: list[AgentEvent], messages: list[Message]) -> Iterator[AgentEvent]:
        """The start of an iteration: a THOUGHT event, then the iteration invariants."""
        yield emit(AgentEvent(EventType.THOUGHT, f"iteration {state.iterations + 1}"))
        for index, invariant in enumerate(self.iteration_invariants):
            self._agent_check(invariant, state, "invariant", index)
            yield from (emit(e) for e in drain(pending))
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
            parsed = load_json(text)  # refused past MAX_NESTING, before pydantic parses it
        except (ValueError, TypeError):
            return reply, False  # validation says what is wrong
        if not spec.wrapped:
            return parsed, False
        try:
            return spec.validate_json(text), True
        except Exception:
            return reply, False

    def _answer(self, value: Any, emit: Emit,
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
                          f"{validation_text(error)}"
                yield emit(AgentEvent(EventType.ERROR, problem, {"raw": safe_repr(value)}))
                return problem
        elif self._answer_spec is None:
            text, not_text = text_of(value)
            if not_text is not None:
                problem = f"the answer is not text: {not_text}"
                yield emit(AgentEvent(EventType.ERROR, problem))
                return problem
            value = text
        for index, check in enumerate(self.answer_postconditions):
            self._agent_check(check, value, "answer_post", index)
            yield from (emit(e) for e in drain(pending))
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
