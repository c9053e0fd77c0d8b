"""What a server sends in a 2xx answer, checked at the engine boundary.

The class: every byte and every number a server sends. A body that is empty, not
UTF-8, not JSON, JSON of the wrong shape at any depth, or a stream nobody asked for is
an engine error (``hoare.errors`` tree) naming the server and quoting, escaped and cut
short, what it sent; never a raw client error. Token counts that are not counts
(negative, fractional, NaN, infinite, text, above ``MAX_TOKEN_COUNT``) never lower,
poison or crash a budget meter; a refusal and a content filter are reported as what
they are, not as an empty answer. Sync and async alike, on a real loopback server.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import Fault, FaultServer, OpenAIServer, Reply, completion

from hoare import Contract, LLMDataModel, contract
from hoare.engines import Budget, BudgetedEngine, Message, Options, Request, Response, Usage
from hoare.engines.base import ContentFiltered, EngineAnswerError, ModelRefusal
from hoare.engines.budget import MAX_METERED, Spend
from hoare.engines.openai_answer import MAX_TOKEN_COUNT
from hoare.errors import EngineError, HoareError


def req(**options: Any) -> Request:
    return Request(messages=(Message("user", "hello there"),), options=Options(**options))


def _complete(engine: Any, request: Request, mode: str) -> Response:
    if mode == "sync":
        return engine.complete(request)  # type: ignore[no-any-return]
    return asyncio.run(engine.acomplete(request))  # type: ignore[no-any-return]


def _printable(text: str) -> bool:
    return all(c.isprintable() for c in text)


# -- bodies that are not a completion ---------------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000
BAD_BODIES: list[tuple[str, bytes, str]] = [
    ("empty", b"", "application/json"),
    ("blank", b"  \r\n ", "application/json"),
    ("html", b"<html><body>502 Bad Gateway</body></html>", "text/html"),
    ("text as json", b"not json at all", "application/json"),
    ("invalid utf-8", b'{"choices": [{"message": {"content": "\xff\xfe\xc0"}}]}',
     "application/json"),
    ("invalid utf-8 as text", b"\xff\xfe\x00\x01garbage", "text/plain"),
    ("truncated", b'{"choices": [{"index": 0, "message": {"content": "hi', "application/json"),
    ("a list", b"[1, 2, 3]", "application/json"),
    ("a number", b"42", "application/json"),
    ("a string", b'"hello"', "application/json"),
    ("null", b"null", "application/json"),
    ("unasked stream", b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n',
     "text/event-stream"),
    ("unasked stream as json", b'data: {"choices": []}\n\n', "application/json"),
    ("deep", DEEP, "application/json"),
    ("huge int", b'{"choices": [{"index": ' + b"9" * 50_000 + b"}]}", "application/json"),
    ("choices a string", b'{"choices": "abc"}', "application/json"),
    ("choices a number", b'{"choices": [1]}', "application/json"),
    ("message a string", b'{"choices": [{"message": "hi"}]}', "application/json"),
    ("content a number", b'{"choices": [{"message": {"content": 5}}]}', "application/json"),
    ("content a dict", b'{"choices": [{"message": {"content": {"a": 1}}}]}',
     "application/json"),
    ("finish reason a number", b'{"choices": [{"message": {"content": "x"}, '
     b'"finish_reason": 7}]}', "application/json"),
    ("tool calls a string", b'{"choices": [{"message": {"content": null, '
     b'"tool_calls": "call"}}]}', "application/json"),
    ("tool call without function", b'{"choices": [{"message": {"content": null, '
     b'"tool_calls": [{"id": "x"}]}}]}', "application/json"),
    ("error in a 200", b'{"error": {"message": "overloaded"}}', "application/json"),
    ("control characters", b'\x1b[31mred\x00\x07 bell', "text/plain"),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("name", "body", "kind"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_a_2xx_body_that_is_not_a_completion_is_an_engine_error(
        name: str, body: bytes, kind: str, mode: str) -> None:
    with FaultServer([Fault("reply", 200, body, {"content-type": kind})]) as server:
        from openai_server import OpenAIEngine, TransportRetry

        engine = OpenAIEngine("test-model", base_url=server.url, api_key="test-key",
                              transport=TransportRetry(max_retries=0),
                              default_options=Options(timeout=10.0))
        with pytest.raises(EngineError) as raised:
            _complete(engine, req(), mode)
    text = str(raised.value)
    assert server.url in text  # names the server
    assert _printable(text), text  # what it sent is escaped
    assert len(text) < 1200  # and cut short
    assert isinstance(raised.value, HoareError)


def test_the_excerpt_quotes_what_was_sent() -> None:
    with FaultServer([Fault("reply", 200, b"\xff<html>oops", {"content-type": "text/html"})]
                     ) as server:
        from openai_server import OpenAIEngine, TransportRetry

        engine = OpenAIEngine("test-model", base_url=server.url, api_key="test-key",
                              transport=TransportRetry(max_retries=0))
        with pytest.raises(EngineAnswerError, match="not UTF-8") as raised:
            engine.complete(req())
    assert r"\xff<html>oops" in str(raised.value)


# -- any JSON a server may send --------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 10**12, 10**12 + 1, 10**20, -1, -(10**6), 2.5, -0.0, 1e308]),
    st.text(max_size=5), st.none(), st.booleans(),
)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=10,
)
TOKEN = st.fixed_dictionaries({"token": st.one_of(st.text(max_size=4), JSONISH),
                               "logprob": NUMBERS,
                               "top_logprobs": st.one_of(st.none(), st.lists(
                                   st.fixed_dictionaries({"token": st.text(max_size=3),
                                                          "logprob": NUMBERS}), max_size=2))})
MESSAGE = st.fixed_dictionaries(
    {"role": st.just("assistant")},
    optional={"content": st.one_of(st.none(), st.text(max_size=20), JSONISH),
              "refusal": st.one_of(st.none(), st.text(max_size=20), JSONISH),
              "tool_calls": st.one_of(st.none(), JSONISH)})
CHOICE = st.fixed_dictionaries(
    {"message": st.one_of(MESSAGE, JSONISH)},
    optional={"index": NUMBERS, "finish_reason": st.one_of(
        st.sampled_from(["stop", "length", "content_filter", "tool_calls"]), NUMBERS),
              "logprobs": st.one_of(st.none(), st.fixed_dictionaries(
                  {"content": st.one_of(st.lists(TOKEN, max_size=3), JSONISH)}))})
USAGE = st.fixed_dictionaries(
    {}, optional={"prompt_tokens": NUMBERS, "completion_tokens": NUMBERS,
                  "total_tokens": NUMBERS,
                  "prompt_tokens_details": st.one_of(JSONISH, st.fixed_dictionaries(
                      {"cached_tokens": NUMBERS}))})
BODY = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(CHOICE, min_size=1, max_size=3), JSONISH)},
    optional={"usage": st.one_of(USAGE, JSONISH), "model": st.one_of(st.text(max_size=8),
                                                                     JSONISH),
              "created": NUMBERS, "id": JSONISH})


@pytest.fixture(scope="module")
def shared_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def _assert_valid(response: Response) -> None:
    assert all(isinstance(t, str) for t in response.texts)
    assert all(r is None or isinstance(r, str) for r in response.finish_reasons)
    usage = response.usage
    for count in (usage.requests, usage.input_tokens, usage.output_tokens,
                  usage.cached_input_tokens):
        assert type(count) is int and 0 <= count <= MAX_TOKEN_COUNT
    assert usage.cached_input_tokens <= usage.input_tokens
    assert isinstance(response.model, str)
    for tokens in response.logprobs:
        for token in tokens or ():
            assert isinstance(token.token, str)
            assert math.isfinite(token.logprob) and token.logprob <= 0
            for alternative, value in token.top:
                assert isinstance(alternative, str) and math.isfinite(value) and value <= 0
    for call in response.tool_calls:
        assert isinstance(call.name, str) and isinstance(call.arguments, str)


@given(body=BODY, logprobs=st.booleans())
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_any_json_body_is_an_answer_with_valid_fields_or_an_engine_error(
        shared_server: OpenAIServer, body: dict[str, Any], logprobs: bool) -> None:
    shared_server.push(Reply(200, json.dumps(body).encode()))
    engine = shared_server.engine(max_retries=0)
    try:
        response = engine.complete(req(logprobs=logprobs or None, n=1))
    except EngineError as error:
        assert shared_server.url in str(error)
        assert _printable(str(error))
        return
    _assert_valid(response)


# -- token counts ----------------------------------------------------------------------------

BAD_COUNTS = [-1, -1_000_000, 2.5, float("nan"), float("inf"), float("-inf"), "12", "abc",
              [3], {"n": 1}, True, 10**20, MAX_TOKEN_COUNT + 1]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("bad", BAD_COUNTS, ids=repr)
def test_a_bad_token_count_never_lowers_or_poisons_a_meter(bad: Any, mode: str) -> None:
    """Before: -1e6 output tokens gave a million tokens of headroom; "abc" raised TypeError
    out of the call; NaN reached the meter."""
    answers = []
    for field in ("prompt_tokens", "completion_tokens"):
        body = completion("fine").body
        body["usage"][field] = bad
        body["usage"].setdefault("prompt_tokens", 3)
        answers.append(Reply(200, json.dumps(body).encode()))
    body = completion("cached").body
    body["usage"].update(prompt_tokens=5, prompt_tokens_details={"cached_tokens": bad})
    answers.append(Reply(200, json.dumps(body).encode()))
    with OpenAIServer(answers) as server:
        budgeted = BudgetedEngine(server.engine(max_retries=0), Budget(max_output_tokens=10**6))
        before = budgeted.spent()
        for _ in answers:
            response = _complete(budgeted, req(), mode)
            _assert_valid(response)
            now = budgeted.spent()
            for key in ("requests", "input_tokens", "output_tokens"):
                assert type(now[key]) is int and now[key] >= before[key], (key, before, now)
            before = now


def test_a_bad_output_count_is_charged_at_its_bound_not_zero() -> None:
    body = completion("four words answer here").body
    body["usage"]["completion_tokens"] = -5
    with OpenAIServer([Reply(200, json.dumps(body).encode())]) as server:
        response = server.engine(max_retries=0).complete(req(max_tokens=50))
    assert response.usage.output_tokens == 50  # max_tokens bounds the output


@given(st.lists(st.tuples(NUMBERS, NUMBERS, NUMBERS, NUMBERS), max_size=6))
@settings(max_examples=200)
def test_a_meter_never_goes_down_whatever_usage_it_is_given(
        usages: list[tuple[Any, Any, Any, Any]]) -> None:
    """Whatever ``Usage`` reaches a meter (a user's FunctionEngine answer, say), its counts
    stay integers in [0, MAX_METERED × calls] and never decrease."""
    spend = Spend(Budget(max_input_tokens=10**30))
    previous = spend.spent()
    for counts in usages:
        reservation = spend.reserve("m")
        spend.settle(reservation, Usage(*counts))  # type: ignore[arg-type]
        spend.record(Usage(*counts), None)  # type: ignore[arg-type]
        now = spend.spent()
        for key in ("requests", "input_tokens", "output_tokens"):
            assert type(now[key]) is int and now[key] >= previous[key]
            assert now[key] <= 2 * MAX_METERED * (len(usages) + 1)
        assert math.isfinite(now["cost"])
        previous = now


# -- refusals and content filters ------------------------------------------------------------

def _refusal(text: str = "I can't help with that.", n: int = 1) -> dict[str, Any]:
    body = completion(*["x"] * n).body
    for choice in body["choices"]:
        choice["message"] = {"role": "assistant", "content": None, "refusal": text}
    body["usage"] = {"prompt_tokens": 7, "completion_tokens": 6}
    return body


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_refusal_is_reported_with_its_text(mode: str) -> None:
    with OpenAIServer([_refusal("I must decline: policy 7.")]) as server:
        with pytest.raises(ModelRefusal) as raised:
            _complete(server.engine(), req(), mode)
    assert "refused" in str(raised.value) and "policy 7" in str(raised.value)
    assert raised.value.refusal == "I must decline: policy 7."
    assert raised.value.usage.output_tokens == 6
    assert "empty" not in str(raised.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("content", [None, ""])
def test_a_content_filter_is_reported_as_such(mode: str, content: str | None) -> None:
    body = completion("x", finish_reason="content_filter").body
    body["choices"][0]["message"]["content"] = content
    with OpenAIServer([body]) as server, pytest.raises(ContentFiltered, match="content filter"):
        _complete(server.engine(), req(), mode)


def test_a_content_filter_cutting_an_answer_keeps_its_text() -> None:
    with OpenAIServer([completion("partial answ", finish_reason="content_filter")]) as server:
        response = server.engine().complete(req())
    assert response.texts == ("partial answ",)
    assert response.finish_reasons == ("content_filter",)


def test_refused_completions_are_left_out_of_several() -> None:
    body = completion("one", "two", "three").body
    body["choices"][1]["message"] = {"role": "assistant", "content": None, "refusal": "no"}
    with OpenAIServer([body]) as server:
        response = server.engine().complete(req(n=3))
    assert response.texts == ("one", "three")
    assert len(response.finish_reasons) == 2


def test_a_refusal_is_charged_to_the_budget() -> None:
    with OpenAIServer([_refusal()]) as server:
        budgeted = BudgetedEngine(server.engine(), Budget(max_output_tokens=1000))
        with pytest.raises(ModelRefusal):
            budgeted.complete(req())
    assert budgeted.spent()["output_tokens"] == 6


class Q(LLMDataModel):
    text: str


class A(LLMDataModel):
    answer: str


# every attempt is refused: the remedies retry without backoff sleeps (7.5 s a call by
# default), which are not what the test checks
@contract(remedy_retry_params={"delay": 0})
class Ask(Contract):
    prompt = "Answer."

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else A(answer="fallback")  # type: ignore


def test_a_contract_violation_names_the_refusal_not_an_empty_answer() -> None:
    with OpenAIServer(default=_refusal("Not something I can do.")) as server:
        ask = Ask(engine=server.engine())
        assert ask(Q(text="?")) == A(answer="fallback")
    messages = [v.message for a in ask.contract_outcome.attempts for v in a.violations]
    assert messages and all("Not something I can do." in m for m in messages), messages
    assert not any("empty" in m for m in messages)


@given(st.tuples(NUMBERS, NUMBERS, NUMBERS, NUMBERS))
@settings(max_examples=300)
def test_a_usage_holds_counts_whoever_made_it(counts: tuple[Any, Any, Any, Any]) -> None:
    """A ``Usage`` built from anything (a stream's chunk, a user's engine) holds whole
    numbers in [0, MAX_USAGE_COUNT], cached ≤ input; sums of them stay so bounded."""
    from hoare.engines.base import MAX_USAGE_COUNT

    usage = Usage(*counts)
    for count in (usage.requests, usage.input_tokens, usage.output_tokens,
                  usage.cached_input_tokens):
        assert type(count) is int and 0 <= count <= MAX_USAGE_COUNT
    assert usage.cached_input_tokens <= usage.input_tokens
    total = usage + usage
    assert total.input_tokens == min(2 * usage.input_tokens, MAX_USAGE_COUNT)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -7, 10**20, "many"], ids=repr)
def test_a_streamed_answers_bad_usage_never_reaches_a_meter(bad: Any, mode: str) -> None:
    from openai_server import stream

    with OpenAIServer([stream("a", "b", prompt_tokens=bad)]) as server:
        budgeted = BudgetedEngine(server.engine(), Budget(max_input_tokens=10**6))
        request = Request(messages=(Message("user", "hi"),), watch=lambda text: None)
        response = _complete(budgeted, request, mode)
    _assert_valid(response)
    spent = budgeted.spent()
    assert type(spent["input_tokens"]) is int and spent["input_tokens"] >= 0
    assert "Infinity" not in json.dumps(spent) and "NaN" not in json.dumps(spent)


@pytest.mark.parametrize("body", [b"<html>key sk-echoed-secret-99 rejected</html>",
                                  b'{"choices": "sk-echoed-secret-99"}',
                                  b'{"choices": [{"message": {"content": null, '
                                  b'"refusal": "no, sk-echoed-secret-99"}}]}',
                                  b"\xff sk-echoed-secret-99"],
                         ids=["html", "json", "refusal", "bytes"])
def test_a_key_echoed_in_a_2xx_body_is_masked(body: bytes) -> None:
    with FaultServer([Fault("reply", 200, body, {"content-type": "application/json"})]
                     ) as server:
        from openai_server import OpenAIEngine, TransportRetry

        engine = OpenAIEngine("test-model", base_url=server.url, api_key="sk-echoed-secret-99",
                              transport=TransportRetry(max_retries=0))
        with pytest.raises(EngineError) as raised:
            engine.complete(req())
    assert "sk-echoed-secret-99" not in str(raised.value)
    assert "sk-echoed-secret-99" not in getattr(raised.value, "refusal", "")


THREADED_WIRE = '''
import asyncio, json, sys, threading
sys.path.insert(0, sys.argv[1])
from openai_server import OpenAIServer, Reply, completion
from hoare.engines import BudgetedEngine, Budget, Message, Request
from hoare.errors import EngineError

bodies = [b"", b"not json", b"\\xff\\xfe", b"[1]", b'{"choices": "x"}',
          json.dumps(completion("fine").body).encode()]
bad_usage = completion("odd usage").body
bad_usage["usage"] = {"prompt_tokens": -5, "completion_tokens": float("nan")}
bodies.append(json.dumps(bad_usage).encode())
counter = iter(range(10**9))
lock = threading.Lock()

def answer(body):
    with lock:
        k = next(counter)
    return Reply(200, bodies[k % len(bodies)])

errors, answers = [], []
with OpenAIServer(default=answer) as server:
    engine = BudgetedEngine(server.engine(max_retries=0), Budget(max_output_tokens=10**9))

    def work(worker):
        for i in range(14):
            request = Request(messages=(Message("user", f"{worker}-{i}"),))
            try:
                if i % 2:
                    response = engine.complete(request)
                else:
                    response = asyncio.run(engine.acomplete(request))
                assert all(isinstance(t, str) for t in response.texts)
                assert response.usage.output_tokens >= 0
                answers.append(1)
            except EngineError as error:
                assert server.url in str(error), str(error)
            except BaseException as error:
                errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
spent = engine.spent()
assert not errors, errors
assert answers, "no good answer at all"
assert spent["requests"] == 8 * 14, spent
assert all(type(spent[k]) is int and spent[k] >= 0 for k in ("input_tokens", "output_tokens"))
print("ok")
'''


def test_one_engine_under_threads_and_event_loops_on_a_misbehaving_server(
        tmp_path: Path) -> None:
    """Eight threads share one budgeted engine, half their calls async, against a server
    sending a mix of garbage and good bodies: each call is an answer with valid fields or
    an engine error naming the server; the meter counts every request and never a bad
    number. In a child process, so a crash fails the test."""
    import os
    import subprocess
    import sys

    from library_under_test import LIBRARY

    script = tmp_path / "threaded_wire.py"
    script.write_text(THREADED_WIRE)
    tests_dir = str(Path(__file__).parents[1])
    done = subprocess.run([sys.executable, str(script), tests_dir], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([LIBRARY, tests_dir])})
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "ok" in done.stdout
