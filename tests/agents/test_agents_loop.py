"""``ContractAgent`` (constrained: one JSON action per step) on scripted engines and on
the loopback OpenAI-compatible server: tool calls, contracts under each policy,
malformed actions, max iterations, events and stats."""

from __future__ import annotations

import json
from typing import Any

import pytest
from library_under_test import LIBRARY
from openai_server import OpenAIServer, completion

from hoare import Field, LLMDataModel
from hoare.agents import (
    ContractAgent,
    ContractPolicy,
    ContractViolation,
    EventType,
    contract_assert,
    post,
    pre,
    tool,
)
from hoare.engines import FunctionEngine, Request
from hoare.engines.testing import ScriptedEngine


@tool
@pre(lambda args: args["b"] != 0, "no division by zero")
@post(lambda r: isinstance(r, float), "a float")
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    contract_assert(len(text) < 20, "short texts only")
    return text.upper()


def constrained(engine: Any, **options: Any) -> ContractAgent:
    """The JSON-action agent (the scripted engines answer actions as text)."""
    return ContractAgent(engine, agent_type="constrained", **options)


def types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def test_a_tool_call_then_an_answer() -> None:
    engine = ScriptedEngine({"tool": "divide", "args": {"a": 6, "b": 4}}, {"answer": "1.5"})
    agent = constrained(engine, tools=[divide, shout])
    result = agent.run("What is 6 / 4?")
    assert result.success and result.answer == "1.5" and result.error is None
    assert types(result.events) == ["thought", "action", "observation", "thought", "answer"]
    observation = result.events[2]
    assert observation.metadata["raw_result"] == 1.5  # the typed value, not "1.5"
    assert "Observation: 1.5" in engine.requests[1].messages[-1].content
    assert "divide: Divide a by b." in engine.requests[0].messages[0].content
    assert result.stats["iterations"] == 2 and result.stats["tool_calls"] == 1
    assert agent.list_tools() == ["divide", "shout"]


def test_enforce_stops_before_the_tool_runs_and_asks_no_more() -> None:
    engine = ScriptedEngine({"tool": "divide", "args": {"a": 1, "b": 0}}, {"answer": "x"})
    handled: list[ContractViolation] = []
    agent = constrained(engine, tools=[divide], violation_handler=handled.append)
    result = agent.run("divide by zero")
    assert not result.success and "no division by zero" in (result.error or "")
    assert types(result.events) == ["thought", "action", "contract_violation", "error"]
    violation = result.events[2].metadata["violation"]
    assert (violation.kind, violation.location) == ("pre", "divide")
    assert len(engine.requests) == 1 and len(handled) == 1  # the model is not asked again
    assert agent.get_contract_stats()["violations"] == 1


def test_observe_reports_and_carries_on() -> None:
    engine = ScriptedEngine({"tool": "divide", "args": {"a": 1, "b": 0}}, {"answer": "done"})
    agent = constrained(engine, tools=[divide], policy=ContractPolicy.OBSERVE,
                          violation_handler=lambda v: None)
    result = agent.run("divide by zero")
    # the tool still ran (and raised ZeroDivisionError: an error event, fed back)
    assert result.success and result.answer == "done"
    assert "contract_violation" in types(result.events)


def test_contract_assert_in_a_tool_reports_to_the_calling_agent() -> None:
    engine = ScriptedEngine({"tool": "shout", "args": {"text": "x" * 30}}, {"answer": "ok"})
    seen: list[ContractViolation] = []
    agent = constrained(engine, tools=[shout], policy=ContractPolicy.OBSERVE,
                          violation_handler=seen.append)
    result = agent.run("shout")
    assert result.success
    assert [(v.kind, v.location, v.message) for v in seen] == [
        ("assert", "shout", "short texts only")]


def test_malformed_actions_cost_one_request_each_and_max_iterations_bound() -> None:
    engine = ScriptedEngine("not json", {"tool": "nope"},
                            {"tool": "divide", "args": {"a": 1}}, {"answer": "fine"})
    result = constrained(engine, tools=[divide]).run("t")
    assert result.success and len(engine.requests) == 4
    errors = [e.content for e in result.events if e.type is EventType.ERROR]
    assert errors[0] == "not a JSON object" and "unknown tool 'nope'" in errors[1]
    assert "missing argument(s) ['b']" in errors[2]
    engine = ScriptedEngine(*["junk"] * 3)
    result = constrained(engine, tools=[divide], max_iterations=3).run("t")
    assert not result.success and "max_iterations=3" in (result.error or "")


def test_task_answer_and_iteration_contracts() -> None:
    engine = ScriptedEngine({"answer": "x"})
    result = constrained(engine, task_precondition=lambda t: len(t) > 10).run("short")
    assert not result.success and engine.requests == []  # refused before any request
    assert result.events[0].metadata["violation"].kind == "task_pre"
    assert result.events[0].metadata["violation"].location == "agent"
    engine = ScriptedEngine({"answer": ""}, {"answer": "again"})
    result = constrained(engine, answer_postcondition=lambda a: len(a) > 0,
                           policy=ContractPolicy.OBSERVE,
                           violation_handler=lambda v: None).run("a long enough task")
    assert result.success and "contract_violation" in types(result.events)
    engine = ScriptedEngine({"tool": "shout", "args": {"text": "a"}}, {"answer": "b"})
    result = constrained(engine, tools=[shout],
                           iteration_invariant=lambda s: s.iterations < 2).run("t")
    assert not result.success and \
        result.events[-2].metadata["violation"].kind == "invariant"
    with pytest.raises(ValueError, match="not both"):
        constrained(engine, task_precondition=len, task_preconditions=[len])


def test_an_unknown_agent_type_is_refused() -> None:
    engine = ScriptedEngine()
    with pytest.raises(ValueError, match="constrained"):
        ContractAgent(engine, agent_type="plan-and-execute")


def test_on_the_loopback_openai_server() -> None:
    script = [completion(json.dumps({"tool": "divide", "args": {"a": 9, "b": 3}})),
              completion("The answer: ```json\n{\"answer\": \"3\"}\n```")]
    with OpenAIServer(script) as server:
        result = constrained(server.engine(), tools=[divide]).run("9 / 3?")
        bodies = server.bodies
    assert result.success and result.answer == "3"
    assert len(bodies) == 2 and bodies[1]["messages"][-1]["content"] == "Observation: 3.0"


AGENTS_IN_THREADS = r'''
import json, threading
from hoare.agents import ContractAgent, ContractPolicy, contract_assert, tool
from hoare.engines import FunctionEngine

@tool
def echo(text: str) -> str:
    """Echo a text."""
    contract_assert(text.startswith("ok"), f"not ok: {text}")
    return text

results = {}
def run(name):
    steps = iter([json.dumps({"tool": "echo", "args": {"text": f"{name}-{i}"}})
                  for i in range(30)] + [json.dumps({"answer": name})])
    seen = []
    agent = ContractAgent(FunctionEngine(lambda r: next(steps)), agent_type="constrained",
                          tools=[echo],
                          policy=ContractPolicy.OBSERVE, violation_handler=seen.append,
                          max_iterations=40)
    result = agent.run("echo")
    results[name] = [result.success, result.answer, sorted({v.message.split("-")[0] for v in seen}),
                     len(seen)]

threads = [threading.Thread(target=run, args=(f"agent{i}",)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(results))
'''


def test_concurrent_agents_sharing_a_tool_never_cross_talk() -> None:
    import subprocess
    import sys
    from pathlib import Path

    Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", AGENTS_IN_THREADS], capture_output=True,
                          text=True, timeout=300,
                          env={"PYTHONPATH": LIBRARY, "PATH": ""})
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) == 8
    for name, (success, answer, prefixes, count) in results.items():
        assert success and answer == name
        assert prefixes == [f"not ok: {name}"] and count == 30  # only its own violations


class Quote(LLMDataModel):
    item: str
    price: float = Field(gt=0)


def test_a_typed_answer_is_validated_and_repaired() -> None:
    engine = ScriptedEngine({"answer": {"item": "kettle", "price": -1}},
                            {"answer": {"item": "kettle", "price": 20.0}})
    result = constrained(engine, answer_type=Quote).run("quote a kettle")
    assert result.success and result.answer == Quote(item="kettle", price=20.0)
    (error,) = [e for e in result.events if e.type is EventType.ERROR]
    assert "not a valid Quote" in error.content and "price" in error.content
    assert "not a valid Quote" in engine.requests[1].messages[-1].content  # fed back to the model


def test_plural_hooks_report_each_failing_entry_with_its_index() -> None:
    engine = ScriptedEngine({"answer": "x"})
    result = constrained(engine, policy=ContractPolicy.OBSERVE,
                           violation_handler=lambda v: None,
                           task_preconditions=[lambda t: True, lambda t: False,
                                               lambda t: False]).run("task")
    indexes = [e.metadata["index"] for e in result.events
               if e.type is EventType.CONTRACT_VIOLATION]
    assert indexes == [1, 2] and result.success


def test_statistics_per_tool() -> None:
    engine = ScriptedEngine({"tool": "divide", "args": {"a": 1, "b": 2}},
                            {"tool": "divide", "args": {"a": 1, "b": 0}},
                            {"tool": "divide", "args": {"a": 3, "b": 1}}, {"answer": "done"})
    agent = constrained(engine, tools=[divide, shout], policy=ContractPolicy.OBSERVE,
                          violation_handler=lambda v: None)
    assert agent.run("t").success
    stats = agent.tool_stats()
    assert stats["divide"]["calls"] == 3 and stats["divide"]["violations"] == 1
    assert stats["divide"]["p_succ"] == pytest.approx(2 / 3)
    low, high = stats["divide"]["interval_95"]  # contract_stats' name
    assert 0 < low < 2 / 3 < high < 1
    assert stats["shout"] == {"calls": 0, "successes": 0, "violations": 0, "p_succ": None,
                              "interval_95": [0.0, 1.0], "interval": (0.0, 1.0)}
    with pytest.warns(DeprecationWarning, match="interval_95"):  # the old key, one release
        assert stats["divide"]["interval"] == (low, high)
    # named and shaped as contract_stats() names them
    assert set(stats["divide"]) >= {"calls", "successes", "p_succ", "interval_95"}
    assert stats["divide"]["successes"] == 2


def test_the_agents_context_is_not_bound_for_the_caller_between_events() -> None:
    from hoare.agents import ContractTermination, current_context

    engine = ScriptedEngine({"tool": "shout", "args": {"text": "a"}}, {"answer": "b"})
    agent = constrained(engine, tools=[shout], policy=ContractPolicy.OBSERVE,
                          violation_handler=lambda v: None)
    for _event in agent.stream("t"):
        assert current_context() is None  # the caller's own context, untouched
        with pytest.raises(ContractTermination):
            contract_assert(False, "the caller's own check")  # not observed by the agent


def test_react_uses_native_tool_calls_on_the_loopback_server() -> None:
    from openai_server import tool_calls

    script = [tool_calls(("divide", '{"a": 9, "b": 3}'), ("shout", '{"text": "hi"}')),
              completion("It is 3.0, and HI.")]
    with OpenAIServer(script) as server:
        result = ContractAgent(server.engine(), tools=[divide, shout]).run("9 / 3, and shout")
        first, second = server.bodies
    assert result.success and result.answer == "It is 3.0, and HI."
    assert types(result.events) == ["thought", "action", "observation", "action",
                                    "observation", "thought", "answer"]
    assert result.events[2].metadata["raw_result"] == 3.0
    assert [t["function"]["name"] for t in first["tools"]] == ["divide", "shout"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assistant, tool_a, tool_b = second["messages"][-3:]
    assert assistant["tool_calls"][0]["function"]["name"] == "divide"
    assert (tool_a["role"], tool_a["tool_call_id"], tool_a["content"]) == \
        ("tool", "call_0", "3.0")
    assert (tool_b["tool_call_id"], tool_b["content"]) == ("call_1", "HI")


def test_react_contracts_and_malformed_calls() -> None:
    from hoare.engines import Response, ToolCall

    answers = iter([Response(texts=("",), tool_calls=(ToolCall("c1", "divide", "{oops"),)),
                    Response(texts=("",), tool_calls=(ToolCall("c2", "divide",
                                                               '{"a": 1, "b": 0}'),)),
                    Response(texts=("never asked",))])
    engine = ScriptedEngine(*answers)
    result = ContractAgent(engine, tools=[divide]).run("t")
    assert not result.success and "no division by zero" in (result.error or "")
    errors = [e.content for e in result.events if e.type is EventType.ERROR]
    assert errors[0] == "args must be a JSON object"  # malformed: fed back as a tool message
    second = engine.requests[1].messages[-1]
    assert second.role == "tool" and second.tool_call_id == "c1"
    assert len(engine.requests) == 2  # the enforced pre-condition ended the run: not asked again


def test_tool_calls_are_recorded_and_replayed_by_the_cache(tmp_path: Any) -> None:
    from hoare.engines import CachedEngine, Message, Response, ToolCall

    calls = (ToolCall("c9", "divide", '{"a": 4, "b": 2}'),)
    inner = FunctionEngine(lambda r: Response(texts=("",), tool_calls=calls))
    request = Request(messages=(Message("user", "t"),),
                      tools=({"type": "function", "function": {"name": "divide"}},))
    recorded = CachedEngine(inner, tmp_path / "cache.json").complete(request)
    replayed = CachedEngine(None, tmp_path / "cache.json", mode="replay").complete(request)
    assert recorded.tool_calls == replayed.tool_calls == calls and replayed.cached


def test_agent_runs_and_tool_calls_are_recorded_in_the_stats_store(tmp_path: Any) -> None:
    """kind "tool" per tool call (a success: no contract violation), kind "agent" per
    run (a success: it answered), beside contracted calls in the same store."""
    import hoare
    from hoare import configure
    from hoare.stats.query import query

    path = str(tmp_path / "agents.db")
    configure(stats=path, label="agents")
    try:
        engine = ScriptedEngine({"tool": "divide", "args": {"a": 6, "b": 4}},
                                {"tool": "shout", "args": {"text": "x" * 30}},
                                {"answer": "1.5"})
        agent = constrained(engine, tools=[divide, shout], policy=ContractPolicy.OBSERVE)
        assert agent.run("6 / 4, then shout").success
        engine = ScriptedEngine({"tool": "divide", "args": {"a": 1, "b": 0}})
        assert not constrained(engine, tools=[divide]).run("divide by zero").success
        assert hoare.flush_stats()
    finally:
        configure(stats=None, label=None)
    rows = [(r["kind"], r["contract"], r["success"]) for r in query(path)]
    assert rows == [("tool", "tool:divide", True), ("tool", "tool:shout", False),
                    ("agent", "agent:constrained[divide,shout]", True),
                    ("tool", "tool:divide", False),
                    ("agent", "agent:constrained[divide]", False)]
    assert {r["label"] for r in query(path)} == {"agents"}
