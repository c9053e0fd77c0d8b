"""Generated hostile replies through a real server on 127.0.0.1 and the real ``openai``
client, sync and async (``tests/hostile/replies.py``): a chat completion, a stream and a
Responses API answer with fields at any path of the wrong type, numbers that are not
counts, or missing; streams with broken framing.

Whatever comes, the call ends with a ``Response`` whose every field has its type, or a
``HoareError`` (never another exception), and the budget meter around it is charged what
the answer cost: a usage that is not an object is counted as the upper bounds, never as
free, and an answer that came but could not be read is charged its reported usage.

Found by these generators (each failed before its fix): a stream's chunk fields were read
from the client's unvalidated objects (a ``finish_reason`` or ``model`` of any type
returned in the ``Response``, content that is not text crashing the join, a delta, a
choice or a chunk that is not an object silently read as no text); a stream that ended
without its finish reason (no ``[DONE]``, cut mid-answer) returned its partial text as
the answer; ``"usage": "lots"`` (any non-object) was counted as 0 tokens on every path;
and a 200 answer whose reading failed was not charged to the budget at all.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hostile.replies import (
    chat_completion,
    chunks,
    event_stream,
    mutated,
    responses_answer,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, Reply, raw_stream

from hoare.engines import (
    Budget,
    BudgetedEngine,
    Message,
    Options,
    Request,
    Response,
    TransportRetry,
    deadline,
)
from hoare.engines.base import MAX_USAGE_COUNT
from hoare.errors import HoareError

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _watch(text: str) -> None:  # a watch makes the engine stream; it never stops one
    return None


def _call(server: OpenAIServer, mode: str, *, stream: bool = False,
          api_type: str = "chat_completions") -> tuple[Any, BudgetedEngine]:
    engine = server.engine(max_retries=0, api_type=api_type,
                           transport=TransportRetry(max_retries=0))
    budgeted = BudgetedEngine(engine, Budget(max_output_tokens=10**15))
    request = Request(messages=(Message("user", "hi"),), watch=_watch if stream else None)
    try:
        if mode == "sync":
            return budgeted.complete(request), budgeted
        return asyncio.run(budgeted.acomplete(request)), budgeted
    except HoareError as error:
        return error, budgeted


def _check_response(response: Response) -> None:
    assert all(isinstance(t, str) for t in response.texts), response.texts
    assert all(f is None or isinstance(f, str) for f in response.finish_reasons)
    assert isinstance(response.model, str) and response.model
    _check_counts(response.usage.as_dict().values())


def _check_counts(counts: Any) -> None:
    for count in counts:
        assert type(count) is int and 0 <= count <= MAX_USAGE_COUNT, count


def _check_meter(budgeted: BudgetedEngine, usage: Any, reported: tuple[int, int]) -> None:
    """The meter holds whole non-negative counts; a reported valid usage is what it was
    charged; a usage that is not an object is charged the bounds (more than nothing)."""
    spent = budgeted.spent()
    _check_counts([spent["requests"], spent["input_tokens"], spent["output_tokens"]])
    assert math.isfinite(spent["cost"]) and spent["cost"] >= 0
    if isinstance(usage, dict) and (usage.get("prompt_tokens", usage.get("input_tokens")),
                                    usage.get("completion_tokens",
                                              usage.get("output_tokens"))) == reported:
        assert (spent["input_tokens"], spent["output_tokens"]) == reported, spent
    elif usage is not None and not isinstance(usage, dict):
        assert spent["input_tokens"] > 0, (usage, spent)


@SETTINGS
@given(body=mutated(chat_completion(), max_mutations=3), mode=st.sampled_from(["sync", "async"]))
def test_a_mutated_chat_completion_is_an_answer_or_a_hoare_error(
        server: OpenAIServer, body: Any, mode: str) -> None:
    server.push(Reply(200, json.dumps(body).encode()))
    outcome, budgeted = _call(server, mode)
    if isinstance(outcome, Response):
        _check_response(outcome)
    else:
        assert isinstance(outcome, HoareError), outcome
    usage = body.get("usage") if isinstance(body, dict) else None
    _check_meter(budgeted, usage, (3, 2))


@SETTINGS
@given(body=mutated(responses_answer(), max_mutations=3),
       mode=st.sampled_from(["sync", "async"]))
def test_a_mutated_responses_answer_is_an_answer_or_a_hoare_error(
        server: OpenAIServer, body: Any, mode: str) -> None:
    server.push(Reply(200, json.dumps(body).encode()))
    outcome, budgeted = _call(server, mode, api_type="responses")
    if isinstance(outcome, Response):
        _check_response(outcome)
    else:
        assert isinstance(outcome, HoareError), outcome
    usage = body.get("usage") if isinstance(body, dict) else None
    _check_meter(budgeted, usage, (3, 2))


@SETTINGS
@given(writes=event_stream(), mode=st.sampled_from(["sync", "async"]))
def test_a_hostile_stream_is_an_answer_or_a_hoare_error(
        server: OpenAIServer, writes: tuple[bytes, ...], mode: str) -> None:
    server.push(raw_stream(*writes))
    outcome, budgeted = _call(server, mode, stream=True)
    if isinstance(outcome, Response):
        _check_response(outcome)
        # an answer is only returned once its finish reason came (else it was cut short)
        assert isinstance(outcome.finish_reasons[0], str), outcome
    else:
        assert isinstance(outcome, HoareError), outcome
    spent = budgeted.spent()
    _check_counts([spent["requests"], spent["input_tokens"], spent["output_tokens"]])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("framing", ["no_done", "cut_mid_answer", "empty"])
def test_a_stream_cut_short_is_an_error_that_says_so_and_is_charged(
        server: OpenAIServer, mode: str, framing: str) -> None:
    events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks('{"v": 1}', " ")]
    writes = {"no_done": events[:1], "cut_mid_answer": [events[0][:20]], "empty": []}[framing]
    server.push(raw_stream(*writes))
    outcome, budgeted = _call(server, mode, stream=True)
    assert isinstance(outcome, HoareError), outcome
    assert "ended before the answer did" in str(outcome) or "broke" in str(outcome), outcome
    assert budgeted.spent()["input_tokens"] > 0  # the request was paid for


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("field,value", [
    ("finish_reason", 7), ("finish_reason", {"a": 1}), ("content", 5), ("content", ["a"]),
    ("delta", "text"), ("choice", None), ("choices", {"0": 1}), ("chunk", [1, 2])])
def test_a_stream_field_of_the_wrong_type_is_named(
        server: OpenAIServer, mode: str, field: str, value: Any) -> None:
    chunk: Any = chunks("x")[0]
    if field == "chunk":
        chunk = value
    elif field == "choices":
        chunk["choices"] = value
    elif field == "choice":
        chunk["choices"] = [value]
    elif field in ("delta", "finish_reason"):
        chunk["choices"][0][field] = value
    else:
        chunk["choices"][0]["delta"][field] = value
    rest = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks()]
    server.push(raw_stream(b"data: " + json.dumps(chunk).encode() + b"\n\n", *rest,
                           b"data: [DONE]\n\n"))
    outcome, _ = _call(server, mode, stream=True)
    assert isinstance(outcome, HoareError), outcome
    assert "streamed" in str(outcome) and "not" in str(outcome), outcome


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("api_type", ["chat_completions", "responses"])
@pytest.mark.parametrize("usage", ["lots", [1, 2], 5, True])
def test_a_usage_that_is_not_an_object_is_charged_the_bounds(
        server: OpenAIServer, mode: str, api_type: str, usage: Any) -> None:
    body = chat_completion() if api_type == "chat_completions" else responses_answer()
    body["usage"] = usage
    server.push(Reply(200, json.dumps(body).encode()))
    outcome, budgeted = _call(server, mode, api_type=api_type)
    assert isinstance(outcome, Response)
    assert outcome.usage.input_tokens > 0 and outcome.usage.output_tokens > 0
    assert budgeted.spent()["input_tokens"] == outcome.usage.input_tokens


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_answer_that_cannot_be_read_is_still_charged(server: OpenAIServer,
                                                        mode: str) -> None:
    body = chat_completion()
    body["choices"][0]["message"]["content"] = {"not": "text"}
    server.push(Reply(200, json.dumps(body).encode()))
    outcome, budgeted = _call(server, mode)
    assert isinstance(outcome, HoareError) and "not text" in str(outcome)
    assert (budgeted.spent()["input_tokens"], budgeted.spent()["output_tokens"]) == (3, 2)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("encoding", ["gzip", "plain"])
def test_a_body_beyond_the_bound_ends_with_body_too_large(
        server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, mode: str,
        encoding: str) -> None:
    """A gzip bomb (64 MiB of spaces in 64 KiB) or a plain body over the bound: refused
    once the bound is passed, not inflated into memory, and not resent."""
    monkeypatch.setattr(deadline, "MAX_BODY_BYTES", 1 << 20)
    if encoding == "gzip":
        body = gzip.compress(b" " * (64 << 20), compresslevel=9)
        server.push(Reply(200, body, {"content-encoding": "gzip"}))
    else:
        server.push(Reply(200, b" " * (2 << 20)))
    outcome, _ = _call(server, mode)
    assert isinstance(outcome, deadline.BodyTooLarge), outcome
    assert server.remaining == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_gzip_body_within_the_bound_is_read(server: OpenAIServer, mode: str) -> None:
    server.push(Reply(200, gzip.compress(json.dumps(chat_completion("é€")).encode()),
                      {"content-encoding": "gzip"}))
    outcome, _ = _call(server, mode)
    assert isinstance(outcome, Response) and outcome.texts == ("é€",)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_n_responses_answers_of_which_one_cannot_be_read_are_all_charged(
        server: OpenAIServer, mode: str) -> None:
    """The Responses API sends n requests for n completions: when the second answer cannot
    be read, the first (read, paid) is charged with it, not dropped."""
    bad = responses_answer()
    bad["output"] = [{"type": "message", "content": [{"type": "output_text", "text": 5}]}]
    bad["usage"] = {"input_tokens": 5, "output_tokens": 7}
    server.push(Reply(200, json.dumps(responses_answer()).encode()),
                Reply(200, json.dumps(bad).encode()))
    engine = BudgetedEngine(server.engine(max_retries=0, api_type="responses"),
                            Budget(max_output_tokens=10**9))
    request = Request(messages=(Message("user", "hi"),), options=Options(n=2))
    with pytest.raises(HoareError, match="not text"):
        if mode == "sync":
            engine.complete(request)
        else:
            asyncio.run(engine.acomplete(request))
    spent = engine.spent()
    assert (spent["input_tokens"], spent["output_tokens"]) == (3 + 5, 2 + 7), spent


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"data": ' * 50_000,
                                  b"\xff\xfe", b""])
def test_the_embeddings_endpoint_answering_junk_is_an_embedding_error(
        server: OpenAIServer, body: bytes) -> None:
    """The engine's server's ``/embeddings`` (``queries.openai_embedder``): JSON nested
    100,000 deep raised a bare RecursionError."""
    from hoare.queries import EmbeddingError, openai_embedder

    server.push(Reply(200, body))
    with pytest.raises(EmbeddingError):
        openai_embedder(server.engine(max_retries=0))(["a"])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("where", ["error_event", "chunk_field", "usage"])
def test_a_stream_echoing_the_key_never_shows_it(server: OpenAIServer, mode: str,
                                                 where: str) -> None:
    """A server echoing the API key in a stream (an error event, a malformed field, a
    usage count): no error text, traceback or log line holds it."""
    import logging
    import traceback

    key = "sk-hostile-SECRET-0123456789"
    event = {"error_event": {"error": {"message": f"bad key {key}"}},
             "chunk_field": {"choices": [{"index": 0, "delta": {"content": [key]},
                                          "finish_reason": None}]},
             "usage": {"choices": [{"index": 0, "delta": {"content": "x"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": key, "completion_tokens": [key]}}}[where]
    server.push(raw_stream(b"data: " + json.dumps(event).encode() + b"\n\n",
                           b"data: [DONE]\n\n"))
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("hoare").addHandler(handler)
    try:
        engine = server.engine(max_retries=0, api_key=key)
        request = Request(messages=(Message("user", "hi"),), watch=_watch)
        try:
            outcome: Any = engine.complete(request) if mode == "sync" else \
                asyncio.run(engine.acomplete(request))
        except HoareError as error:
            outcome = error
            shown = "".join(traceback.format_exception(error))
            assert key not in shown, shown
    finally:
        logging.getLogger("hoare").removeHandler(handler)
    assert all(key not in line for line in records), records
    assert where == "usage" or isinstance(outcome, HoareError)
