"""Tools on a real OpenAI-compatible server (127.0.0.1, the real ``openai`` client):
every request an agent sends carries tool names a provider takes
(``^[a-zA-Z0-9_-]{1,64}$``) and strict JSON (no ``NaN``/``Infinity``, which
``json.loads`` reads but a provider's parser refuses), whatever the functions are
named and whatever their defaults; a name a native call cannot carry is refused when
the agent is built, never sent. Calls naming a missing tool, with arguments that are
not JSON, or with a positional-only parameter, are answered on the wire and the run
goes on.

Failing before: ``tool(lambda ...)`` was sent as ``<lambda>`` (OpenAI answers 400),
``nan``/``inf`` defaults went out as ``NaN``/``Infinity``, a name with a space went
out as given, and a positional-only parameter failed every call."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, completion, tool_calls

from hoare.agents import ContractAgent, EventType, tool
from hoare.errors import ContractDefinitionError

NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # OpenAI's, for a function's name
DEFAULTS = [0, math.nan, math.inf, -math.inf, -0.0, b"\xff", "x"]


def strict(body: dict[str, Any]) -> None:
    """The body is strict JSON: what a provider's parser reads."""
    json.dumps(body, allow_nan=False)


def made(name: str, default: Any) -> Any:
    def function(a: int, /, b: float = default) -> str:
        return f"{a}:{b}"
    function.__name__ = name
    return function


names = st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF,
                              exclude_categories=("Cs",)), min_size=1, max_size=70)


@pytest.fixture(scope="module")
def server() -> Any:
    with OpenAIServer() as running:
        yield running


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(names, st.sampled_from(DEFAULTS))
def test_what_goes_out_is_a_provider_s_names_and_strict_json(server: Any, name: str,
                                                             default: Any) -> None:
    chosen = tool(made(name, default))
    assert NAME_PATTERN.fullmatch(chosen.name)
    sent = len(server.bodies)
    server.push(tool_calls(("missing_tool", "{}"), (chosen.name, "{not json"),
                           (chosen.name, json.dumps({"a": 2}))),
                completion("done"))
    result = ContractAgent(server.engine(), tools=[chosen]).run("go")
    assert result.success and result.answer == "done"
    bodies = server.bodies[sent:]
    assert len(bodies) == 2
    for body in bodies:
        strict(body)
        assert all(NAME_PATTERN.fullmatch(t["function"]["name"]) for t in body["tools"])
    answers = {m["tool_call_id"]: m["content"] for m in bodies[1]["messages"]
               if m["role"] == "tool"}
    assert answers["call_0"].startswith("error: unknown tool")
    assert answers["call_1"].startswith("error: args must be a JSON object")
    observed = [e.metadata["raw_result"] for e in result.events
                if e.type is EventType.OBSERVATION]
    assert len(observed) == 1 and observed[0].startswith("2:")


@given(names.filter(lambda n: not NAME_PATTERN.fullmatch(n)))
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_name_a_native_call_cannot_carry_is_refused_not_sent(server: Any,
                                                                name: str) -> None:
    chosen = tool(made("f", 0), name=name)
    sent = len(server.bodies)
    with pytest.raises(ContractDefinitionError, match="native tool call"):
        ContractAgent(server.engine(), tools=[chosen])
    # the constrained agent names tools in its prompt only: any name is fine there
    server.push(completion('{"answer": "done"}'))
    result = ContractAgent(server.engine(), tools=[chosen], agent_type="constrained").run("go")
    assert result.success and len(server.bodies) == sent + 1
