"""Transport faults on a real socket, through the real ``openai`` client and ``OpenAIEngine``.

The server (``FaultServer`` in openai_server.py) resets connections, cuts bodies short,
trickles them, stays silent and answers 429/5xx. Deadlines here are small (0.3-1 s);
bounds on elapsed time are generous (a tenth of what the unfixed behaviour would take)
so the tests hold on a loaded machine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import traceback

import pytest
from openai_server import Fault, FaultServer, ok, status, trickle

from hoare import Contract, Field, LLMDataModel, contract
from hoare.engines import (
    Budget,
    BudgetedEngine,
    BudgetExceeded,
    ConnectionFailed,
    EngineTimeout,
    Message,
    OpenAIEngine,
    Options,
    Request,
    RequestRejected,
    ServerError,
    TransportRetry,
)
from hoare.engines.openai_config import DEFAULT_TIMEOUT
from hoare.errors import FatalEngineError


def req(**options: object) -> Request:
    return Request(messages=(Message("user", "hi"),), options=Options(**options))  # type: ignore[arg-type]


def engine(url: str, *, retries: int = 0, timeout: float = 1.0, sleeps: list[float] | None = None,
           **kwargs: object) -> OpenAIEngine:
    waits = sleeps if sleeps is not None else []

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    transport = TransportRetry(max_retries=retries, sleep=waits.append, asleep=asleep)
    kwargs.setdefault("api_key", "test-key")
    return OpenAIEngine("test-model", base_url=url, transport=transport,
                        default_options=Options(timeout=timeout), **kwargs)  # type: ignore[arg-type]


# -- time ------------------------------------------------------------------------------------

def test_timeout_is_a_whole_request_deadline_against_a_trickling_body() -> None:
    # 60+ bytes at one per 0.5 s: 30 s without a whole-request deadline.
    with FaultServer([trickle(padding=40, interval=0.5)]) as server:
        started = time.monotonic()
        with pytest.raises(EngineTimeout) as caught:
            engine(server.url, timeout=1.0).complete(req())
        elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed
    assert "deadline" in str(caught.value)


def test_async_deadline_against_a_trickling_body() -> None:
    with FaultServer([trickle(padding=40, interval=0.5)]) as server:
        started = time.monotonic()
        with pytest.raises(EngineTimeout):
            asyncio.run(engine(server.url, timeout=1.0).acomplete(req()))
        elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_trickle_of_headers_is_ended_by_the_watchdog(mode: str) -> None:
    fault = Fault("trickle_head", 200, ok().body, interval=0.2)  # 60+ s without a watchdog
    with FaultServer([fault]) as server:
        eng = engine(server.url, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(EngineTimeout):
            if mode == "sync":
                eng.complete(req())
            else:
                asyncio.run(eng.acomplete(req()))
        elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed


def test_silence_times_out_per_attempt_and_retries_are_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    sleeps: list[float] = []
    with FaultServer([Fault("silence"), Fault("silence")]) as server:
        with caplog.at_level(logging.INFO, logger="hoare.engines"), \
                pytest.raises(EngineTimeout) as caught:
            engine(server.url, retries=1, timeout=0.3, sleeps=sleeps).complete(req())
        assert len(server.requests) == 2
    error = caught.value
    assert error.attempts == 2 and len(sleeps) == 1
    assert "after 2 attempts" in str(error) and "s in all" in str(error)
    retries = [r for r in caplog.records if r.name == "hoare.engines" and r.levelno == logging.INFO
               and "transport retry 1 of 1" in r.getMessage()]
    assert len(retries) == 1 and "attempt 1 failed" in retries[0].getMessage()


def test_default_timeout_is_sixty_seconds_not_ten_minutes() -> None:
    with FaultServer([ok()]) as server:
        plain = OpenAIEngine("m", base_url=server.url, api_key="k")
        assert plain.params(req())["timeout"] == DEFAULT_TIMEOUT == 60.0
        assert plain.complete(req()).text == "ok"


def test_retries_stop_at_max_elapsed() -> None:
    transport = TransportRetry(max_retries=100, base_delay=0.05, max_delay=0.05, jitter=0,
                               max_elapsed=0.5)
    with FaultServer(default=status(503, "busy")) as server:
        eng = OpenAIEngine("m", base_url=server.url, api_key="k", transport=transport)
        with pytest.raises(ServerError) as caught:
            eng.complete(req())
        sent = len(server.requests)
    assert 1 <= sent < 100
    assert "max_elapsed=0.5 s reached" in str(caught.value)


# -- retries ---------------------------------------------------------------------------------

def test_429_honours_retry_after_bounded_by_max_delay() -> None:
    sleeps: list[float] = []
    with FaultServer([status(429, "slow", retry_after="2"), status(429, "slow",
                                                                 retry_after="9999"), ok()]) as s:
        eng = engine(s.url, retries=3, sleeps=sleeps)
        assert eng.complete(req()).text == "ok"
    assert sleeps == [2.0, eng.transport.max_delay]


@pytest.mark.parametrize("fault", [Fault("reset"), Fault("cut", 200, ok().body),
                                   status(502, "bad gateway")], ids=["reset", "cut", "502"])
def test_wire_failures_are_retried_then_succeed(fault: Fault) -> None:
    with FaultServer([fault, ok("second")]) as server:
        assert engine(server.url, retries=2).complete(req()).text == "second"
        assert len(server.requests) == 2


def test_dead_server_error_says_what_was_tried(caplog: pytest.LogCaptureFixture) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with caplog.at_level(logging.INFO, logger="hoare.engines"), \
            pytest.raises(ConnectionFailed) as caught:
        engine(f"http://127.0.0.1:{port}/v1", retries=2).complete(req())
    text = str(caught.value)
    assert "after 3 attempts (2 transport retries" in text and "last error" in text
    assert sum("transport retry" in r.getMessage() for r in caplog.records) == 2


def test_server_500_naming_response_format_steps_down_instead_of_retrying() -> None:
    rejection = status(500, "Invalid value for 'response_format.type': json_schema unsupported")
    with FaultServer([rejection, ok('{"x": 1}')]) as server:
        eng = engine(server.url, retries=4)
        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        answer = eng.complete(Request(messages=(Message("user", "x?"),), schema=schema))
        assert answer.text == '{"x": 1}'
        bodies = server.bodies
    assert len(bodies) == 2  # no transport retry of the rejected shape
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert bodies[1]["response_format"] == {"type": "json_object", "schema": schema}
    assert eng.format_in_use == "json_object_schema"  # llama.cpp's dialect


def test_server_500_about_something_else_is_retried() -> None:
    with FaultServer([status(500, "model overloaded"), ok()]) as server:
        schema = {"type": "object"}
        eng = engine(server.url, retries=1)
        eng.complete(Request(messages=(Message("user", "x?"),), schema=schema))
        assert len(server.requests) == 2 and eng.format_in_use == "json_schema"


# -- the contract and the budget ---------------------------------------------------------------

class Q(LLMDataModel):
    text: str = Field(description="a question")


class A(LLMDataModel):
    answer: str = Field(description="the answer")


@contract(remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
class Answer(Contract):
    prompt = "Answer."

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else A(answer="fallback")  # type: ignore


def test_transport_failures_do_not_spend_remedy_attempts() -> None:
    with FaultServer(default=status(503, "down")) as server:
        answer = Answer(engine=engine(server.url, retries=2))
        assert answer(Q(text="?")) == A(answer="fallback")
        sent = len(server.requests)
    assert sent == 3  # one engine call: 1 send + 2 transport retries, not 3 × 3
    outcome = answer.contract_outcome
    assert outcome.generation_attempts == 1
    assert outcome.attempts[0].violations[0].error_type == "ServerError"
    assert issubclass(ServerError, FatalEngineError)


def test_transport_retries_count_against_max_requests() -> None:
    with FaultServer(default=status(503, "down")) as server:
        capped = BudgetedEngine(engine(server.url, retries=5), Budget(max_requests=2))
        with pytest.raises(BudgetExceeded) as caught:
            capped.complete(req())
        assert len(server.requests) == 2
    assert capped.spent()["requests"] == 2
    assert "transport retr" in str(caught.value) and "down" in str(caught.value)


# -- resources -------------------------------------------------------------------------------

def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_many_event_loops_do_not_leak_clients_or_descriptors() -> None:
    with FaultServer(default=ok()) as server:
        eng = engine(server.url)
        asyncio.run(eng.acomplete(req()))  # warm up imports and pools
        before = _open_descriptors()
        for _ in range(50):  # each leaked client would keep at least one descriptor
            assert asyncio.run(eng.acomplete(req())).text == "ok"
        after = _open_descriptors()
        assert eng.open_async_clients <= eng.max_async_clients
    assert after - before < 20, (before, after)


def test_engine_is_a_context_manager_and_closes_its_clients() -> None:
    with FaultServer(default=ok()) as server:
        with engine(server.url) as eng:
            eng.complete(req())
            client = eng.client
        assert client.is_closed()

        async def run() -> int:
            async with engine(server.url) as inner:
                await inner.acomplete(req())
                return inner.open_async_clients
        assert asyncio.run(run()) == 1


# -- secrets ---------------------------------------------------------------------------------

def test_credentials_never_reach_repr_logs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    key, password = "sk-live-SECRETKEY123", "pa55-SECRETPASS"
    echo = status(401, f"Incorrect API key provided: {key} for user:{password}")
    with FaultServer([status(503, "down"), Fault("reset"), echo]) as server:
        url = server.url.replace("http://", f"http://alice:{password}@")
        eng = engine(url, retries=3, api_key=key)
        with caplog.at_level(logging.DEBUG), pytest.raises(RequestRejected) as caught:
            eng.complete(req())
        head = server.requests[0][0].lower()
    shown = [repr(eng), str(caught.value), "".join(traceback.format_exception(caught.value)),
             *(r.getMessage() for r in caplog.records), caplog.text]
    for text in shown:
        assert key not in text and password not in text, text
    assert "***" in str(caught.value)
    assert "authorization: basic" in head  # the credentials were still sent, as basic auth


def test_async_credentials_are_redacted_too() -> None:
    key = "sk-live-SECRETKEY123"
    with FaultServer([status(403, f"key {key} may not use this model")]) as server:
        eng = engine(server.url, api_key=key)
        with pytest.raises(RequestRejected) as caught:
            asyncio.run(eng.acomplete(req()))
    assert key not in "".join(traceback.format_exception(caught.value))


def test_json_bodies_of_the_script_are_real_completions() -> None:
    assert json.loads(ok("x").body)["choices"][0]["message"]["content"] == "x"
