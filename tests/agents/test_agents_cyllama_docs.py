"""cyllama's documented ContractAgent examples (``CONTRACT_AGENT_IMPL.md``: decorators,
policy override, ``contract_assert``, the agent's arguments, basic usage, a custom
handler, agent-level contracts), ported by changing only the imports and ``llm=`` to
``engine=``. The model is a scripted engine answering native tool calls (``react``, the
default agent type, as in cyllama). Helpers the documentation leaves undefined
(``transform``, ``process``) are defined here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

# -- the one change: the imports (cyllama.agents -> hoare.agents) -------------------------
from hoare.agents import (
    ContractAgent,
    ContractPolicy,
    ContractTermination,
    ContractViolation,
    EventType,
    IterationState,
    contract_assert,
    post,
    pre,
    tool,
)
from hoare.engines import FunctionEngine, Request, Response, ToolCall


def scripted(*steps: Any) -> FunctionEngine:
    """An engine answering, in turn, a tool call ``(name, args)`` or a final text."""
    queue: Iterator[Any] = iter(steps)

    def answer(request: Request) -> Response:
        step = next(queue)
        if isinstance(step, tuple):
            name, args = step
            return Response(texts=("",), tool_calls=(ToolCall("c", name, json.dumps(args)),))
        return Response(texts=(step,))

    return FunctionEngine(answer)


def transform(parsed: dict[str, Any]) -> dict[str, Any] | None:
    return {key: value for key, value in parsed.items() if key != "drop"} or None


def process(parsed: dict[str, Any]) -> str:
    return ",".join(sorted(parsed))


# -- "@pre Decorator" ---------------------------------------------------------------------
@tool
@pre(lambda args: args['count'] > 0, "count must be positive")
@pre(lambda args: args['count'] <= 100, "count must not exceed 100")
def fetch_items(count: int) -> str:
    return f"Fetched {count} items"


# -- "@post Decorator" --------------------------------------------------------------------
@tool
@post(lambda r: len(r) > 0, "result must not be empty")
@post(lambda r, args: len(r) <= args['max_len'], "result too long")
def search(query: str, max_len: int = 100) -> str:
    return f"Results for: {query}"


# -- "Policy Override" --------------------------------------------------------------------
@tool
@pre(lambda args: args['n'] > 0, "positive", policy=ContractPolicy.OBSERVE)
def my_func(n: int) -> int:
    return n * 2


# -- "contract_assert Function" -----------------------------------------------------------
@tool
def process_data(data: str) -> str:
    parsed = json.loads(data)
    contract_assert(isinstance(parsed, dict), "data must be JSON object")

    result = transform(parsed)
    contract_assert(result is not None, "transform must not return None")

    return str(result)


# -- "Basic Usage" ------------------------------------------------------------------------
@tool
@pre(lambda args: args['x'] != 0, "cannot divide by zero")
@post(lambda r: r is not None, "result must not be None")
def divide(a: float, x: float) -> float:
    return a / x


# -- "Using contract_assert" --------------------------------------------------------------
@tool
def complex_operation(data: str) -> str:
    parsed = json.loads(data)
    contract_assert(isinstance(parsed, dict), "must be JSON object")

    if "required_field" not in parsed:
        contract_assert(False, "missing required_field")

    return process(parsed)


def test_the_decorators_outside_an_agent() -> None:
    assert fetch_items(5) == "Fetched 5 items"
    with pytest.raises(ContractTermination, match="count must be positive"):
        fetch_items(0)
    with pytest.raises(ContractTermination, match="count must not exceed 100"):
        fetch_items(101)
    assert [c.message for c in fetch_items._contracts.preconditions] == [
        "count must be positive", "count must not exceed 100"]
    assert search("x") == "Results for: x"
    with pytest.raises(ContractTermination, match="result too long"):
        search("a long query", max_len=5)
    assert search._contracts.postconditions[1].needs_args
    assert my_func(-1) == -2  # the override: observed (logged), never enforced
    with pytest.raises(ContractTermination, match="must be JSON object"):
        process_data("[1]")
    with pytest.raises(ContractTermination, match="transform must not return None"):
        process_data('{"drop": 1}')
    assert process_data('{"a": 1}') == "{'a': 1}"


def test_basic_usage() -> None:
    llm = scripted(("divide", {"a": 100, "x": 4}), "25")
    agent = ContractAgent(
        engine=llm,
        tools=[divide],
        policy=ContractPolicy.ENFORCE,
    )

    result = agent.run("What is 100 divided by 4?")
    assert result.success and result.answer == "25"
    (observation,) = [e for e in result.events if e.type is EventType.OBSERVATION]
    assert observation.metadata["raw_result"] == 25.0  # the typed value, for @post
    assert agent.get_contract_stats()["violations"] == 0


def test_basic_usage_stops_on_division_by_zero() -> None:
    agent = ContractAgent(engine=scripted(("divide", {"a": 1, "x": 0}), "never"),
                          tools=[divide], policy=ContractPolicy.ENFORCE,
                          violation_handler=lambda v: None)
    result = agent.run("What is 1 divided by 0?")
    assert not result.success and "cannot divide by zero" in (result.error or "")


def test_custom_violation_handler(capsys: pytest.CaptureFixture[str]) -> None:
    def my_handler(violation: ContractViolation) -> None:
        print(f"VIOLATION: {violation.kind} at {violation.location}")
        print(f"  Message: {violation.message}")
        # Log to file, send alert, etc.

    agent = ContractAgent(
        engine=scripted(("fetch_items", {"count": 0}), "none"),
        tools=[fetch_items],
        violation_handler=my_handler,
    )
    assert not agent.run("fetch nothing").success
    assert capsys.readouterr().out == ("VIOLATION: pre at fetch_items\n"
                                       "  Message: count must be positive\n")


def test_agent_level_contracts() -> None:
    def agent_for(answer: str) -> ContractAgent:
        return ContractAgent(
            engine=scripted(answer),
            tools=[fetch_items],
            task_precondition=lambda task: len(task) >= 10,
            answer_postcondition=lambda ans: "error" not in ans.lower(),
            iteration_invariant=lambda state: state.iterations < 20,
            violation_handler=lambda v: None,
        )

    assert agent_for("all good").run("a long enough task").success
    short = agent_for("all good").run("short")
    assert not short.success
    assert short.events[-1].metadata["violation"].kind == "task_pre"
    failed = agent_for("an Error happened").run("a long enough task")
    assert not failed.success
    assert failed.events[-1].metadata["violation"].location == "agent"


def test_using_contract_assert() -> None:
    handled: list[ContractViolation] = []
    agent = ContractAgent(
        engine=scripted(("complex_operation", {"data": '{"x": 1}'}),
                        ("complex_operation", {"data": '{"required_field": 1}'}), "done"),
        tools=[complex_operation], policy=ContractPolicy.OBSERVE,
        violation_handler=handled.append)
    result = agent.run("operate")
    assert result.success
    assert [(v.kind, v.location, v.message) for v in handled] == [
        ("assert", "complex_operation", "missing required_field")]


def test_the_initialization_example() -> None:
    def my_handler(violation: ContractViolation) -> None:
        pass

    tool1, tool2 = fetch_items, search
    llm = scripted(("search", {"query": "q"}), "answer")
    agent = ContractAgent(
        engine=llm,
        tools=[tool1, tool2],
        policy=ContractPolicy.ENFORCE,      # Default policy
        violation_handler=my_handler,        # Custom handler
        task_precondition=lambda t: len(t) > 10,
        answer_postcondition=lambda a: len(a) > 0,
        iteration_invariant=lambda s: s.iterations < 20,
        agent_type="react",  # or "constrained"
        max_iterations=10,
        verbose=False,
    )
    assert agent.list_tools() == ["fetch_items", "search"]
    assert agent.policy is ContractPolicy.ENFORCE and agent.max_iterations == 10
    result = agent.run("search for the answer")
    assert result.success and result.answer == "answer"
    stats = agent.get_contract_stats()
    assert stats["checks"] > 0 and stats["violations"] == 0
    state = IterationState()
    for event in result.events:
        state.update(event)
    assert state.tool_calls == 1 and state.to_dict()["tool_calls"] == 1
