"""OpenAIEngine against a real HTTP server speaking the OpenAI API, through the real
``openai`` client: payloads, structured-output fallback, transport retries, errors,
configuration."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import openai
import pytest
from openai_server import (
    MODEL,
    OpenAIServer,
    Reply,
    completion,
    error,
    openai_server,  # noqa: F401  (fixture)
)
from pydantic import BaseModel, ConfigDict

from hoare.engines import (
    ConnectionFailed,
    EngineConfigError,
    EngineError,
    EngineTimeout,
    Message,
    OpenAIEngine,
    Options,
    RateLimited,
    Request,
    RequestRejected,
    Response,
    ServerError,
    TransportError,
    TransportRetry,
)
from hoare.engines.openai_config import PLACEHOLDER_API_KEY
from hoare.engines.openai_request import is_strict_compatible, schema_name

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


def req(text: str = "Return JSON.", *, schema: dict[str, Any] | None = None,
        name: str = "output", **options: Any) -> Request:
    return Request(messages=(Message("system", "You answer in JSON."), Message("user", text)),
                   schema=schema, schema_name=name, options=Options(**options))


# -- happy path ---------------------------------------------------------------------------

def test_sync_happy_path_maps_text_usage_model_and_sends_the_messages() -> None:
    script = [completion('{"x": 1}', prompt_tokens=17, completion_tokens=5, model="served-x")]
    with OpenAIServer(script) as server:
        response = server.engine().complete(req("hello there"))
        body = server.bodies[0]
        auth = server.received[0].headers.get("authorization")
    assert response.texts == ('{"x": 1}',)
    assert response.text == '{"x": 1}'
    assert response.finish_reasons == ("stop",)
    assert response.usage.as_dict() == {"requests": 1, "input_tokens": 17, "output_tokens": 5}
    assert response.model == "served-x"
    assert response.cached is False
    assert body["model"] == MODEL
    assert body["messages"] == [{"role": "system", "content": "You answer in JSON."},
                                {"role": "user", "content": "hello there"}]
    assert "response_format" not in body  # no schema, nothing to enforce
    assert auth == "Bearer test-key"


def test_async_happy_path() -> None:
    async def run(engine: OpenAIEngine) -> Response:
        try:
            return await engine.acomplete(req())
        finally:
            await engine.aclose()

    with OpenAIServer([completion("a", finish_reason="length", prompt_tokens=3)]) as server:
        response = asyncio.run(run(server.engine()))
    assert response.texts == ("a",)
    assert response.finish_reasons == ("length",)
    assert response.usage.input_tokens == 3
    assert response.usage.requests == 1


def test_async_engine_survives_several_event_loops() -> None:
    with OpenAIServer(["one", "two"]) as server:
        engine = server.engine()
        first = asyncio.run(engine.acomplete(req()))
        second = asyncio.run(engine.acomplete(req()))
    assert (first.text, second.text) == ("one", "two")


def test_fixture_serves_pushed_answers(openai_server: OpenAIServer) -> None:  # noqa: F811
    openai_server.push("pushed")
    assert openai_server.engine().complete(req()).text == "pushed"
    assert openai_server.remaining == 0


def test_options_are_mapped_and_request_options_override_defaults() -> None:
    with OpenAIServer([completion("a", "b", "c")]) as server:
        engine = server.engine(default_options=Options(temperature=0.1, max_tokens=50,
                                                       seed=1, timeout=30.0))
        response = engine.complete(req(temperature=0.7, n=3, seed=42, model="other-model"))
        body = server.bodies[0]
    assert response.texts == ("a", "b", "c")
    assert response.finish_reasons == ("stop", "stop", "stop")
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 50
    assert body["n"] == 3
    assert body["seed"] == 42
    assert body["model"] == "other-model"
    assert "timeout" not in body  # a client-side setting, not part of the payload


def test_empty_choices_is_an_engine_error() -> None:
    empty = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
             "choices": []}
    with OpenAIServer([empty]) as server, pytest.raises(EngineError, match="no choices"):
        server.engine().complete(req())


def test_null_content_becomes_empty_text_and_missing_usage_counts_zero_tokens() -> None:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                         "finish_reason": "stop"}]}
    with OpenAIServer([body]) as server:
        response = server.engine().complete(req())
    assert response.texts == ("",)
    assert response.finish_reasons == ("stop",)
    assert response.usage.as_dict() == {"requests": 1, "input_tokens": 0, "output_tokens": 0}


def test_null_content_withheld_by_a_content_filter_is_not_an_empty_answer() -> None:
    """(It was reported as the answer "" before: tests/engines/test_engines_wire.py covers the
    class.)"""
    from hoare.engines.base import ContentFiltered

    body = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                         "finish_reason": "content_filter"}]}
    with OpenAIServer([body]) as server, pytest.raises(ContentFiltered, match="content filter"):
        server.engine().complete(req())


# -- structured output --------------------------------------------------------------------

class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    tags: list[str]


class Loose(BaseModel):
    x: int = 0


def test_json_schema_payload_with_sanitized_name() -> None:
    with OpenAIServer(['{"x": 1}']) as server:
        server.engine().complete(req(schema=SCHEMA, name="my model: v2/ü"))
        fmt = server.bodies[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "my_model_v2"
    assert fmt["json_schema"]["schema"] == SCHEMA
    assert fmt["json_schema"]["strict"] is False  # additionalProperties not forbidden


def test_strict_is_sent_only_for_strict_compatible_schemas() -> None:
    strict_schema = Strict.model_json_schema()
    with OpenAIServer(['{"x": 1, "tags": []}']) as server:
        server.engine().complete(req(schema=strict_schema, name="Strict"))
        fmt = server.bodies[0]["response_format"]
    assert fmt["json_schema"]["strict"] is True
    assert is_strict_compatible(strict_schema)
    assert not is_strict_compatible(Loose.model_json_schema())  # optional field, a default
    assert not is_strict_compatible({"type": "array", "items": {"type": "integer"}})
    nested = {"type": "object", "additionalProperties": False, "required": ["a"],
              "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}
    assert not is_strict_compatible(nested)  # the inner object is open


@pytest.mark.parametrize(("name", "expected"), [
    ("Answer", "Answer"), ("a b.c", "a_b_c"), ("", "output"), ("***", "output"),
    ("x" * 100, "x" * 64), ("ok-name_1", "ok-name_1"),
])
def test_schema_name(name: str, expected: str) -> None:
    assert schema_name(name) == expected


@pytest.mark.parametrize(("structured", "expected"), [
    ("json_object", {"type": "json_object"}), ("text", None)])
def test_fixed_structured_modes(structured: str, expected: dict[str, str] | None) -> None:
    with OpenAIServer(["{}"]) as server:
        server.engine(structured=structured).complete(req(schema=SCHEMA))
        body = server.bodies[0]
    assert body.get("response_format") == expected


def test_auto_falls_back_to_json_object_and_remembers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hoare.engines.openai")
    with OpenAIServer(['{"x": 1}', '{"x": 2}'], reject_response_format={"json_schema"}) as s:
        engine = s.engine(api_key="sk-secret-123")
        first = engine.complete(req(schema=SCHEMA))
        second = engine.complete(req(schema=SCHEMA))
        types = [b.get("response_format", {}).get("type") for b in s.bodies]
    assert (first.text, second.text) == ('{"x": 1}', '{"x": 2}')
    assert types == ["json_schema", "json_object", "json_object"]  # remembered: 3 sends, not 4
    # the step is llama.cpp's dialect: json_object with the schema attached
    assert engine.format_in_use == "json_object_schema"
    assert s.bodies[1]["response_format"]["schema"] == SCHEMA
    warnings = [r for r in caplog.records if r.name == "hoare.engines.openai"]
    assert len(warnings) == 1
    assert "json_schema" in warnings[0].getMessage()
    assert "sk-secret-123" not in caplog.text
    assert "sk-secret-123" not in repr(engine)


def test_auto_falls_back_to_text_when_no_response_format_is_supported() -> None:
    with OpenAIServer(["{}", "{}"], reject_response_format=True) as server:
        engine = server.engine()
        asyncio.run(engine.acomplete(req(schema=SCHEMA)))
        engine.complete(req(schema=SCHEMA))
        formats = [b.get("response_format", {}).get("type") for b in server.bodies]
        sent_messages = server.bodies[-1]["messages"]
    # json_schema, llama.cpp's json_object + schema, bare json_object, then text
    assert formats == ["json_schema", "json_object", "json_object", None, None]
    assert engine.format_in_use == "text"
    assert sent_messages[-1] == {"role": "user", "content": "Return JSON."}


def test_rejection_of_another_kind_does_not_trigger_fallback() -> None:
    with OpenAIServer([error(400, "messages must not be empty")]) as server:
        engine = server.engine()
        with pytest.raises(RequestRejected, match="messages must not be empty"):
            engine.complete(req(schema=SCHEMA))
        assert len(server.bodies) == 1
    assert engine.format_in_use == "json_schema"


def test_explicit_json_schema_mode_does_not_fall_back() -> None:
    with OpenAIServer([], reject_response_format=True) as server:
        with pytest.raises(RequestRejected) as caught:
            server.engine(structured="json_schema").complete(req(schema=SCHEMA))
        assert len(server.bodies) == 1
    assert caught.value.status == 400
    assert "response_format" in str(caught.value)


def test_switches_to_max_completion_tokens_when_the_server_asks() -> None:
    message = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.")
    with OpenAIServer([error(400, message), "ok", "again"]) as server:
        engine = server.engine()
        engine.complete(req(max_tokens=20))
        engine.complete(req(max_tokens=30))
        bodies = server.bodies
    assert bodies[0]["max_tokens"] == 20
    assert bodies[1]["max_completion_tokens"] == 20 and "max_tokens" not in bodies[1]
    assert bodies[2]["max_completion_tokens"] == 30


# -- transport retries --------------------------------------------------------------------

def test_429_with_retry_after_is_retried_after_the_advised_wait() -> None:
    sleeps: list[float] = []
    with OpenAIServer([error(429, "slow down", retry_after=3), "ok"]) as server:
        response = server.engine(sleeps=sleeps).complete(req())
        sent = len(server.bodies)
    assert response.text == "ok"
    assert response.usage.requests == 1  # transport retries are invisible
    assert sent == 2
    assert sleeps == [3.0]


def test_retry_after_ms_wins_and_waits_are_capped() -> None:
    sleeps: list[float] = []
    script = [error(429, "a", retry_after_ms=1500, retry_after=9), error(503, "b", retry_after=999),
              "ok"]
    with OpenAIServer(script) as server:
        engine = server.engine(sleeps=sleeps)
        assert engine.complete(req()).text == "ok"
    assert sleeps == [1.5, engine.transport.max_delay]


def test_500_is_retried_then_succeeds_async() -> None:
    sleeps: list[float] = []
    with OpenAIServer([error(500, "oops"), error(502, "bad gateway"), "ok"]) as server:
        response = asyncio.run(server.engine(sleeps=sleeps).acomplete(req()))
        sent = len(server.bodies)
    assert response.text == "ok"
    assert sent == 3
    assert len(sleeps) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_not_retried(status: int) -> None:
    sleeps: list[float] = []
    with OpenAIServer([error(status, "no way"), "never sent"]) as server:
        with pytest.raises(RequestRejected) as caught:
            server.engine(sleeps=sleeps).complete(req())
        sent = len(server.bodies)
    assert sent == 1
    assert sleeps == []
    assert caught.value.status == status
    assert caught.value.attempts == 1
    assert f"HTTP {status}" in str(caught.value)
    assert "no way" in str(caught.value)


def test_401_message_points_at_the_api_key() -> None:
    with OpenAIServer([error(401, "Incorrect API key provided")]) as server:
        with pytest.raises(RequestRejected, match="OPENAI_API_KEY"):
            server.engine().complete(req())


def test_client_timeout_is_retried() -> None:
    sleeps: list[float] = []
    slow = completion("too late", delay=10.0)  # the server thread outlives the test, harmlessly
    with OpenAIServer([slow, "in time"]) as server:
        response = server.engine(sleeps=sleeps).complete(req(timeout=1.0))
        sent = len(server.bodies)
    assert response.text == "in time"
    assert sent == 2
    assert len(sleeps) == 1


def test_timeouts_exhausted_raise_engine_timeout() -> None:
    script = [completion("late", delay=10.0), completion("late", delay=10.0)]
    with OpenAIServer(script) as server:
        engine = server.engine(max_retries=1, default_options=Options(timeout=0.3))
        with pytest.raises(EngineTimeout) as caught:
            asyncio.run(engine.acomplete(req()))
    assert caught.value.attempts == 2
    assert "timed out" in str(caught.value)
    assert "Options(timeout=" in str(caught.value)


def test_exhausted_retries_raise_a_clear_engine_error() -> None:
    sleeps: list[float] = []
    script = [error(503, "overloaded"), error(503, "overloaded"), error(503, "still overloaded")]
    with OpenAIServer(script) as server:
        with pytest.raises(ServerError) as caught:
            server.engine(max_retries=2, sleeps=sleeps).complete(req())
        sent = len(server.bodies)
    message = str(caught.value)
    assert isinstance(caught.value, EngineError)
    assert sent == 3
    assert caught.value.attempts == 3
    assert caught.value.status == 503
    assert len(caught.value.delays) == 2 and list(caught.value.delays) == sleeps
    assert "HTTP 503" in message
    assert "3 attempts" in message
    assert "2 transport retries" in message
    assert "still overloaded" in message
    assert MODEL in message


def test_rate_limit_exhausted_raises_rate_limited() -> None:
    with OpenAIServer([error(429, "quota", retry_after=0)] * 2) as server:
        with pytest.raises(RateLimited) as caught:
            server.engine(max_retries=1).complete(req())
    assert isinstance(caught.value, TransportError)
    assert "HTTP 429" in str(caught.value)
    assert "quota" in str(caught.value)


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port with nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    engine = OpenAIEngine("m", base_url=f"http://127.0.0.1:{port}/v1",
                          transport=TransportRetry(max_retries=2, sleep=sleeps.append))
    with pytest.raises(ConnectionFailed) as caught:
        engine.complete(req())
    assert caught.value.attempts == 3
    assert len(sleeps) == 2
    assert "OPENAI_BASE_URL" in str(caught.value)


def test_a_given_client_has_its_own_retries_disabled() -> None:
    with OpenAIServer([error(500, "x"), "ok"]) as server:
        client = openai.OpenAI(api_key="k", base_url=server.url, max_retries=5)
        engine = OpenAIEngine("m", client=client, transport=TransportRetry(max_retries=0))
        with pytest.raises(ServerError):
            engine.complete(req())
        sent = len(server.bodies)
    assert sent == 1  # neither the client nor we resent


def test_a_given_async_client_is_used() -> None:
    with OpenAIServer(["from async client"]) as server:
        client = openai.AsyncOpenAI(api_key="k", base_url=server.url)
        engine = OpenAIEngine("m", async_client=client)
        assert asyncio.run(engine.acomplete(req())).text == "from async client"
    assert engine.base_url.startswith("http://127.0.0.1:")


# -- configuration ------------------------------------------------------------------------

def test_environment_configuration_and_placeholder_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIServer(["ok"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("HOARE_MODEL", "env-model")
        engine = OpenAIEngine()
        assert engine.complete(req()).text == "ok"
        received = server.received[0]
    assert received.body["model"] == "env-model"
    assert received.headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


def test_api_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIServer(["ok"]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        OpenAIEngine("m", base_url=server.url).complete(req())
        auth = server.received[0].headers["authorization"]
    assert auth == "Bearer sk-from-env"


def test_model_from_default_options() -> None:
    engine = OpenAIEngine(base_url="http://127.0.0.1:9/v1",
                          default_options=Options(model="opt-model"))
    assert engine.model == "opt-model"
    assert engine.params(req())["model"] == "opt-model"


def test_missing_model_names_the_environment_variables() -> None:
    with pytest.raises(EngineConfigError) as caught:
        OpenAIEngine(base_url="http://127.0.0.1:9/v1")
    assert "HOARE_MODEL" in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)


def test_missing_key_without_base_url_says_what_to_set() -> None:
    with pytest.raises(EngineConfigError) as caught:
        OpenAIEngine("gpt-4o-mini")
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "OPENAI_BASE_URL" in str(caught.value)


def test_unknown_structured_mode_is_rejected() -> None:
    with pytest.raises(EngineConfigError, match="structured"):
        OpenAIEngine("m", base_url="http://127.0.0.1:9/v1", structured="xml")  # type: ignore


def test_raw_reply_tuple_and_non_json_error_body() -> None:
    with OpenAIServer([(500, {}, "<html>gateway</html>"), Reply(200, completion("ok").body)]) as s:
        assert s.engine().complete(req()).text == "ok"
        assert len(s.bodies) == 2
