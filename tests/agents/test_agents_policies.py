"""``ContractAgent`` under every policy and every violation kind (the handler is called
exactly once per reported violation, never under ``IGNORE`` or ``QUICK_ENFORCE``), and
``contract_assert`` from many asyncio tasks and threads at once, in a child process so
that a crash fails the test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from library_under_test import LIBRARY

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
from hoare.engines import Request
from hoare.engines.testing import ScriptedEngine

RAN: list[str] = []


@tool
@pre(lambda args: args["x"] < 10, "a small x")
def small(x: int) -> int:
    """Return x."""
    RAN.append("small")
    return x


@tool
@post(lambda r: r > 0, "a positive result")
def negate(x: int) -> int:
    """Return -x."""
    RAN.append("negate")
    return -x


@tool
def check(text: str) -> str:
    """Return a short text."""
    RAN.append("check")
    contract_assert(len(text) < 5, "a short text")
    return text


# kind -> (actions the model answers, agent options)
SETUPS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "pre": ([{"tool": "small", "args": {"x": 50}}, {"answer": "done"}], {}),
    "post": ([{"tool": "negate", "args": {"x": 1}}, {"answer": "done"}], {}),
    "assert": ([{"tool": "check", "args": {"text": "too long"}}, {"answer": "done"}], {}),
    "task_pre": ([{"answer": "done"}], {"task_precondition": lambda task: False}),
    "answer_post": ([{"answer": "done"}], {"answer_postcondition": lambda answer: False}),
    "invariant": ([{"tool": "check", "args": {"text": "ok"}}, {"answer": "done"}],
                  {"iteration_invariant": lambda state: False}),
}


def _run(kind: str, policy: ContractPolicy) -> tuple[Any, list[ContractViolation],
                                                     list[Request]]:
    actions, options = SETUPS[kind]
    engine = ScriptedEngine(*actions)
    handled: list[ContractViolation] = []
    RAN.clear()
    agent = ContractAgent(engine, tools=[small, negate, check],
                          agent_type="constrained", policy=policy,
                          violation_handler=handled.append, **options)
    return agent.run("do it"), handled, engine.requests


@pytest.mark.parametrize("kind", list(SETUPS))
@pytest.mark.parametrize("policy", list(ContractPolicy))
def test_each_policy_on_each_violation_kind(kind: str, policy: ContractPolicy) -> None:
    result, handled, requests = _run(kind, policy)
    reported = [e.metadata["violation"] for e in result.events
                if e.type is EventType.CONTRACT_VIOLATION]
    assert [id(v) for v in handled] == [id(v) for v in reported]  # once per violation
    assert all(v.kind == kind for v in handled)
    location = "agent" if kind in ("task_pre", "answer_post", "invariant") else \
        {"pre": "small", "post": "negate", "assert": "check"}[kind]
    assert all(v.location == location and v.policy is policy for v in handled)
    if policy is ContractPolicy.IGNORE:
        assert handled == [] and result.success and result.answer == "done"
        assert result.stats and result.events[-1].type is EventType.ANSWER
    elif policy is ContractPolicy.OBSERVE:
        assert handled and result.success and result.answer == "done"
        if kind == "pre":
            assert RAN == ["small"]  # observed, and the tool still ran
    else:
        assert not result.success and result.events[-1].type is EventType.ERROR
        assert "contract termination" in result.events[-1].content
        stop = result.events[-1].metadata["violation"]
        assert stop.kind == kind
        # ENFORCE calls the handler before stopping; QUICK_ENFORCE stops at once
        assert len(handled) == (1 if policy is ContractPolicy.ENFORCE else 0)
        if kind == "pre":
            assert RAN == [] and len(requests) == 1  # the tool never ran, no more asking
        if kind == "task_pre":
            assert requests == []  # stopped before the model was asked anything


TASKS_AND_THREADS = r'''
import asyncio, json, threading
from hoare.agents import (ContractAgent, ContractContext, ContractPolicy, contract_assert,
                          contract_context, pre, tool)
from hoare.engines import FunctionEngine

@pre(lambda x: x >= 0, "non-negative")
async def probe(name: str, x: int) -> str:
    await asyncio.sleep(0)
    contract_assert(False, name)
    await asyncio.sleep(0)
    return name

async def task(name, seen):
    with contract_context(ContractContext(ContractPolicy.OBSERVE, seen.append, name)):
        for _ in range(25):
            await probe(name, -1)  # a pre violation and an assert, both this task's
            await asyncio.sleep(0)

@tool
def echo(text: str) -> str:
    """Echo a text."""
    contract_assert(text.startswith("ok"), text.split("-")[0])
    return text

def agent_run(name, seen):
    steps = iter([json.dumps({"tool": "echo", "args": {"text": f"{name}-{i}"}})
                  for i in range(10)] + [json.dumps({"answer": name})])
    agent = ContractAgent(FunctionEngine(lambda request: next(steps)), tools=[echo],
                          agent_type="constrained", policy=ContractPolicy.OBSERVE,
                          violation_handler=seen.append, max_iterations=20)
    return agent.run("echo").answer

async def main():
    seen = {f"task{i}": [] for i in range(12)}
    agents = {f"agent{i}": [] for i in range(6)}
    answers = await asyncio.gather(
        *(task(name, found) for name, found in seen.items()),
        *(asyncio.to_thread(agent_run, name, found) for name, found in agents.items()))
    out = {name: [len(found), sorted({v.kind for v in found}),
                  sorted({v.message for v in found if v.kind == "assert"})]
           for name, found in {**seen, **agents}.items()}
    print(json.dumps({"seen": out, "answers": answers[len(seen):]}))

asyncio.run(main())
'''


def test_contract_assert_from_concurrent_tasks_and_agent_threads_never_cross_talk() -> None:
    Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", TASKS_AND_THREADS], capture_output=True,
                          text=True, timeout=300,
                          env={"PYTHONPATH": LIBRARY, "PATH": ""})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["answers"] == [f"agent{i}" for i in range(6)]
    for name, (count, kinds, messages) in found["seen"].items():
        if name.startswith("task"):
            assert count == 50 and kinds == ["assert", "pre"] and messages == [name]
        else:
            assert count == 10 and kinds == ["assert"] and messages == [name]
