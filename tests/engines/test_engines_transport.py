"""TransportRetry on its own: backoff arithmetic, what is retried, what is raised."""

from __future__ import annotations

import asyncio
import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoare.engines import (
    ConnectionFailed,
    EngineError,
    EngineTimeout,
    Failure,
    RateLimited,
    RequestRejected,
    ServerError,
    TransportRetry,
)
from hoare.engines.transport import parse_retry_after, transport_error


class Boom(Exception):
    def __init__(self, failure: Failure | None) -> None:
        super().__init__(failure.message if failure else "not a transport failure")
        self.failure = failure


def classify(error: BaseException) -> Failure | None:
    return error.failure if isinstance(error, Boom) else None


class Flaky:
    """Fails with the given failures, then answers ``"ok"``."""

    def __init__(self, *failures: Failure | None) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise Boom(self.failures.pop(0))
        return "ok"

    async def acall(self) -> str:
        return self()


def retry(**kwargs: object) -> tuple[TransportRetry, list[float]]:
    sleeps: list[float] = []

    async def asleep(seconds: float) -> None:
        sleeps.append(seconds)

    options: dict[str, object] = {"sleep": sleeps.append, "asleep": asleep,
                                  "random": lambda: 0.5}
    options.update(kwargs)
    return TransportRetry(**options), sleeps  # type: ignore[arg-type]


SERVER = Failure("server", "boom", 500)
LIMIT = Failure("rate_limit", "slow down", 429)


def test_exponential_backoff_without_jitter_noise() -> None:
    transport, sleeps = retry(max_retries=6, base_delay=0.5, max_delay=10.0)
    flaky = Flaky(*[SERVER] * 6)
    assert transport.call(flaky, classify) == "ok"
    assert flaky.calls == 7
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]


@pytest.mark.parametrize(("draw", "factor"), [(0.0, 0.75), (1.0, 1.25), (0.5, 1.0)])
def test_jitter_is_a_fraction_of_the_delay(draw: float, factor: float) -> None:
    transport, _ = retry(base_delay=2.0, max_delay=100.0, jitter=0.25, random=lambda: draw)
    assert transport.delay(1, SERVER) == pytest.approx(2.0 * factor)
    assert transport.delay(3, SERVER) == pytest.approx(8.0 * factor)


@given(retry_number=st.integers(1, 200), draw=st.floats(0, 1), jitter=st.floats(0, 1),
       base=st.floats(0, 5), cap=st.floats(0, 30))
def test_delays_stay_within_zero_and_max_delay(retry_number: int, draw: float, jitter: float,
                                               base: float, cap: float) -> None:
    transport = TransportRetry(base_delay=base, max_delay=cap, jitter=jitter,
                               random=lambda: draw)
    assert 0.0 <= transport.delay(retry_number, SERVER) <= cap


def test_retry_after_replaces_backoff_and_is_capped() -> None:
    transport, sleeps = retry(max_delay=5.0)
    flaky = Flaky(Failure("rate_limit", "x", 429, retry_after=2.5),
                  Failure("rate_limit", "x", 429, retry_after=60.0))
    assert transport.call(flaky, classify) == "ok"
    assert sleeps == [2.5, 5.0]


def test_unclassified_exceptions_propagate_untouched_without_retry() -> None:
    transport, sleeps = retry()
    flaky = Flaky(None)
    with pytest.raises(Boom) as caught:
        transport.call(flaky, classify)
    assert caught.value.failure is None
    assert flaky.calls == 1
    assert sleeps == []


def test_rejected_is_final_even_after_retries() -> None:
    transport, sleeps = retry()
    flaky = Flaky(SERVER, Failure("rejected", "bad request", 400))
    with pytest.raises(RequestRejected) as caught:
        transport.call(flaky, classify)
    assert flaky.calls == 2
    assert caught.value.attempts == 2
    assert len(sleeps) == 1
    assert "HTTP 400" in str(caught.value)


def test_max_retries_zero_means_one_attempt() -> None:
    transport, sleeps = retry(max_retries=0)
    flaky = Flaky(LIMIT)
    with pytest.raises(RateLimited) as caught:
        transport.call(flaky, classify, where="m at http://x")
    assert flaky.calls == 1
    assert sleeps == []
    assert str(caught.value).startswith("m at http://x: HTTP 429 (rate limited) after 1 attempt ")
    assert "0 transport retries" in str(caught.value)


@pytest.mark.parametrize(("failure", "kind"), [
    (Failure("rate_limit", "m", 429), RateLimited), (Failure("timeout", "m"), EngineTimeout),
    (Failure("connection", "m"), ConnectionFailed), (Failure("server", "m", 502), ServerError),
    (Failure("rejected", "m", 404), RequestRejected)])
def test_each_kind_has_its_engine_error(failure: Failure, kind: type[EngineError]) -> None:
    made = transport_error(failure, attempts=3, delays=(0.5, 1.0))
    assert type(made) is kind
    assert isinstance(made, EngineError)
    assert made.attempts == 3
    assert "after 3 attempts (2 transport retries, waited 1.5 s)" in str(made)
    label = "last server message" if failure.status is not None else "last error"
    assert f"{label}: 'm'" in str(made)


def test_long_server_messages_are_shortened() -> None:
    made = transport_error(Failure("server", "x" * 5000, 500), attempts=1)
    assert len(str(made)) < 1000


def test_async_retries_use_async_sleep() -> None:
    transport, sleeps = retry(max_retries=2)
    flaky = Flaky(SERVER, LIMIT)
    assert asyncio.run(transport.acall(flaky.acall, classify)) == "ok"
    assert sleeps == [0.5, 1.0]


def test_async_exhaustion() -> None:
    transport, _ = retry(max_retries=1)
    flaky = Flaky(SERVER, SERVER)
    with pytest.raises(ServerError) as caught:
        asyncio.run(transport.acall(flaky.acall, classify))
    assert caught.value.attempts == 2


@pytest.mark.parametrize("bad", [{"max_retries": -1}, {"base_delay": -1.0}, {"jitter": 1.5}])
def test_invalid_settings_are_rejected(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TransportRetry(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [{"base_delay": float("nan")}, {"max_delay": float("nan")},
                                 {"base_delay": float("inf")}, {"max_delay": float("inf")},
                                 {"max_retries": 1.5}, {"max_retries": True},
                                 {"max_elapsed": float("nan")}, {"jitter": float("nan")},
                                 {"base_delay": "1"}], ids=repr)
def test_non_numbers_are_rejected_naming_the_setting(bad: dict[str, object]) -> None:
    """Before: base_delay=nan was accepted and the first retry slept nan seconds (a raw
    ValueError from time.sleep); max_delay=inf an OverflowError."""
    with pytest.raises(ValueError, match=next(iter(bad))):
        TransportRetry(**bad)  # type: ignore[arg-type]


def test_parse_retry_after() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000.0) == pytest.approx(30.0)
