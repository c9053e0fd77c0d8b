"""``OpenAIEngine(api_type="responses")``: OpenAI's Responses API through the real
``openai`` client against the loopback server, every field the server sends checked,
reasoning items kept across a multi-turn query (issue 32, item 5)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, responses_reply
from pydantic import BaseModel

from hoare.engines import OpenAIEngine
from hoare.engines.base import EngineAnswerError, Message, Options, Request, ToolCall
from hoare.queries import (
    AnswerPrefix,
    FinalAnswer,
    OracleMessage,
    Query,
    ToolRequests,
    ToolResult,
    final_tool_call_as,
)


def _engine(server: OpenAIServer, **kwargs: Any) -> OpenAIEngine:
    return OpenAIEngine("gpt-5", base_url=server.url, api_key="k", api_type="responses",
                        **kwargs)


def _request(*messages: Message, **kwargs: Any) -> Request:
    return Request(messages=messages or (Message("user", "hi"),), **kwargs)


def test_text_answer_usage_and_request_shape() -> None:
    with OpenAIServer([responses_reply("hello", input_tokens=7, output_tokens=2)]) as server:
        response = _engine(server).complete(_request(
            Message("system", "be brief"), Message("user", "hi"),
            options=Options(temperature=0.5, max_tokens=20)))
        (received,) = server.received
    assert received.path.rstrip("/") == "/v1/responses"
    body = received.body
    assert body["input"] == [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": "hi"}]
    assert body["temperature"] == 0.5 and body["max_output_tokens"] == 20
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert response.texts == ("hello",) and response.finish_reasons == ("stop",)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 2)


def test_schema_tools_and_tool_choice_in_the_responses_shape() -> None:
    tool = {"type": "function", "function": {"name": "Search", "description": "d",
                                             "parameters": {"type": "object"}}}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "required": ["a"], "additionalProperties": False}
    with OpenAIServer([responses_reply(calls=[("Search", '{"q": 1}')])]) as server:
        response = _engine(server).complete(_request(schema=schema, tools=(tool,),
                                                     tool_choice="required"))
        body = server.bodies[0]
    assert body["tools"] == [{"type": "function", "name": "Search", "description": "d",
                              "parameters": {"type": "object"}}]
    assert body["tool_choice"] == "required"
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["schema"]["properties"] == schema["properties"]
    assert response.tool_calls == (ToolCall("call_0", "Search", '{"q": 1}'),)
    assert response.finish_reasons == ("tool_calls",)


@pytest.mark.parametrize("body,what", [
    ({"output": "nope"}, "output"),
    ({}, "output"),
    ({"output": [{"type": "message", "content": "text"}]}, "content is not a list"),
    ({"output": [{"type": "message", "content": [{"type": "output_text", "text": 3}]}]},
     "not text"),
    ({"output": [{"type": "function_call", "name": "f", "arguments": {}, "call_id": "c"}]},
     "malformed function call"),
    ({"output": [{"type": "function_call", "name": "", "arguments": "{}", "call_id": "c"}]},
     "malformed function call"),
    ({"output": [{"no": "type"}]}, "without a type"),
    ({"output": [5]}, "without a type"),
    ({"status": "failed", "error": {"message": "boom"}, "output": []}, "failed"),
    ({"status": 3, "output": []}, "status"),
])
def test_malformed_answers_are_engine_errors_naming_the_field(body: dict[str, Any],
                                                              what: str) -> None:
    with OpenAIServer([Reply(200, body)] * 3) as server, \
            pytest.raises(EngineAnswerError, match=what):
        _engine(server).complete(_request())


@pytest.mark.parametrize("count", [-1, 1.5, "7", None, True, 10**20, float("inf")])
def test_bad_usage_numbers_never_reach_the_meters(count: Any) -> None:
    reply = responses_reply("x", input_tokens=count, output_tokens=count)
    if count == float("inf"):
        reply = Reply(200, json.loads(json.dumps(reply.body).replace("Infinity", "1e999")))
    with OpenAIServer([reply]) as server:
        response = _engine(server).complete(_request(options=Options(max_tokens=50)))
    usage = response.usage
    assert isinstance(usage.input_tokens, int) and isinstance(usage.output_tokens, int)
    assert 0 <= usage.output_tokens <= 50
    assert 0 <= usage.input_tokens <= 1000


def test_refusal_is_a_model_refusal() -> None:
    from hoare.engines.base import ModelRefusal

    body = {"output": [{"type": "message", "content": [{"type": "refusal",
                                                        "refusal": "no way"}]}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}
    with OpenAIServer([Reply(200, body)] * 3) as server, \
            pytest.raises(ModelRefusal, match="no way"):
        _engine(server).complete(_request())


def test_n_completions_are_n_requests_and_logprobs_are_refused() -> None:
    with OpenAIServer([responses_reply("a"), responses_reply("b")]) as server:
        response = _engine(server).complete(_request(options=Options(n=2)))
        assert len(server.received) == 2
    assert response.texts == ("a", "b") and response.usage.requests == 2
    with OpenAIServer([]) as server, pytest.raises(Exception, match="log-probabilities"):
        _engine(server).complete(_request(options=Options(logprobs=True)))
    with pytest.raises(Exception, match="api_type"):
        OpenAIEngine("m", base_url="http://127.0.0.1:1/v1", api_type="chat")  # type: ignore[arg-type]


def test_async_path() -> None:
    with OpenAIServer([responses_reply("async")]) as server:
        engine = _engine(server)
        response = asyncio.run(engine.acomplete(_request()))
    assert response.texts == ("async",)


class Lookup(BaseModel):
    """Look a word up."""

    word: str


@dataclass
class Verdict:
    """The final answer."""

    meaning: str


@dataclass
class Define(Query[object]):
    """Define the word, looking it up first."""

    word: str
    prefix: AnswerPrefix
    __parser__ = final_tool_call_as(Verdict).response_with([Lookup])


def test_reasoning_items_are_sent_back_in_a_multi_turn_query() -> None:
    script = [responses_reply(calls=[("Lookup", '{"word": "hoare"}')],
                              reasoning=["SECRET-1"]),
              responses_reply(calls=[("Verdict", '{"meaning": "a logician"}')],
                              reasoning=["SECRET-2"])]
    with OpenAIServer(script) as server:
        engine = _engine(server)
        first = Define("hoare", []).run(engine)
        assert isinstance(first.parsed, ToolRequests)
        (call,) = first.answer.tool_calls
        prefix = [OracleMessage("oracle", first.answer), ToolResult("tool", call, "found")]
        second = Define("hoare", prefix).run(engine)
        bodies = server.bodies
    assert second.parsed == FinalAnswer(Verdict("a logician"))
    assert bodies[0]["tool_choice"] == "required"
    items = bodies[1]["input"]
    kinds = [i.get("type", i.get("role")) for i in items]
    assert kinds == ["system", "user", "reasoning", "function_call", "function_call_output"]
    assert items[2]["encrypted_content"] == "SECRET-1" and items[2]["id"] == "rs_0"
    assert items[3]["call_id"] == call.id and items[4]["output"] == "found"
    assert not any(i.get("encrypted_content") == "SECRET-2" for i in items)


def test_reasoning_memory_is_bounded_and_shared_by_threads() -> None:
    import threading

    from hoare.engines.openai_responses import ReasoningMemory

    memory = ReasoningMemory(size=64)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(200):
                calls = (ToolCall(f"c{k}-{i}", "f", "{}"),)
                memory.remember("", calls, ({"type": "reasoning", "id": f"{k}-{i}"},))
                found = memory.recall(Message("assistant", "", calls))
                assert found == () or found[0]["id"] == f"{k}-{i}"
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(memory._items) <= 64


def test_one_responses_engine_shared_by_many_threads() -> None:
    """In a child process (a crash fails the test): 8 threads share one engine, each
    continuing its own conversation; each gets its own reasoning items back."""
    import subprocess
    import sys
    import textwrap

    from library_under_test import LIBRARY

    code = textwrap.dedent('''
        import sys, threading
        sys.path.insert(0, "tests")
        from openai_server import OpenAIServer, responses_reply
        from hoare.engines import OpenAIEngine
        from hoare.engines.base import Message, Request

        def answer(body):
            last = body["input"][-1]["content"]
            return responses_reply("re:" + last, reasoning=["R-" + last])

        errors = []
        with OpenAIServer(default=answer) as server:
            engine = OpenAIEngine("m", base_url=server.url, api_key="k",
                                  api_type="responses")
            def work(k):
                try:
                    for i in range(5):
                        ask = f"t{k}-{i}"
                        first = engine.complete(Request(messages=(Message("user", ask),)))
                        history = (Message("user", ask),
                                   Message("assistant", first.texts[0]),
                                   Message("user", "more"))
                        engine.complete(Request(messages=history))
                except BaseException as error:
                    errors.append(error)
            threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
            for t in threads: t.start()
            for t in threads: t.join()
            bodies = server.bodies
        assert not errors, errors
        follow = [b for b in bodies if len(b["input"]) == 4]
        assert len(follow) == 40
        for body in follow:
            ask = body["input"][0]["content"]
            assert body["input"][1] == {"type": "reasoning", "id": "rs_0", "summary": [],
                                        "encrypted_content": "R-" + ask}, body["input"]
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, "PYTHONPATH": LIBRARY})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("structured,expected", [("text", None),
                                                 ("json_object", {"type": "json_object"}),
                                                 ("auto", "json_schema")])
def test_the_engines_structured_setting_is_kept(structured: str, expected: Any) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with OpenAIServer([responses_reply("{}")]) as server:
        _engine(server, structured=structured).complete(_request(schema=schema))
        body = server.bodies[0]
    sent = body.get("text", {}).get("format")
    if expected == "json_schema":
        assert sent["type"] == "json_schema" and sent["schema"]["properties"] == \
            schema["properties"]
    else:
        assert sent == expected


def test_response_init_written_out_matches_its_fields() -> None:
    """``Response.__init__`` is written by hand (the hot path): it must take every
    dataclass field, in order, with the field's default, and set each one as given,
    so ``dataclasses.replace``, pickling and equality see what the dataclass would."""
    import dataclasses
    import inspect
    import pickle

    from hoare.engines.base import Response, Usage

    fields = dataclasses.fields(Response)
    parameters = list(inspect.signature(Response).parameters.values())
    assert [p.name for p in parameters] == [f.name for f in fields]
    for field, parameter in zip(fields, parameters, strict=True):
        if field.default is not dataclasses.MISSING:
            assert parameter.default == field.default, field.name
        elif field.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, field.name  # usage: a fresh Usage()
        else:
            assert parameter.default is inspect.Parameter.empty, field.name
    assert Response(("a",)).usage == Usage() and Response(("a",)).usage is not Usage()
    distinct: dict[str, Any] = {f.name: object() for f in fields}  # a marker per field
    built = Response(**distinct)
    for name, marker in distinct.items():
        assert getattr(built, name) is marker, name
    sample = Response(("x", "y"), ("stop", None), Usage(1, 2, 3), "m", True, (), "llama_cpp",
                      "why", ((), None))
    assert dataclasses.replace(sample) == sample
    assert pickle.loads(pickle.dumps(sample)) == sample
    assert hash(dataclasses.replace(sample)) == hash(sample)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(sample, "texts", ())  # noqa: B010  (the frozen check itself)


def test_rendered_request_is_the_request_the_constructor_builds() -> None:
    """``rendered_request`` (a contract's per-call request, built positionally) leaves
    every slot as ``Request(render=..., ...)`` does with the same arguments."""
    from hoare.engines.base import rendered_request

    def render() -> tuple[Message, ...]:
        return (Message("user", "hi"),)

    def watch(text: str) -> str | None:
        return None

    for options in (None, Options(temperature=0.5)):
        arguments: dict[str, Any] = {
            "render": render, "schema": {"type": "object"}, "schema_name": "Out",
            "options": options, "task": "repair_input", "input": object(),
            "feedback": ("fix it",), "attempt": 3, "contract": "C", "watch": watch}
        built = Request(**arguments)
        fast = rendered_request(**arguments)
        for name in Request.__slots__:
            assert getattr(fast, name) == getattr(built, name), name
        assert fast.messages == built.messages
