"""Transport retries: rate limits, timeouts, dropped connections and 5xx.

These are *not* contract remedies. A transport retry resends the very same
request because the wire failed, not because the answer was wrong, so it is
invisible to the kernel: the whole loop is one engine call (spec §8). When the
retries are exhausted, or the server rejects the request outright (another
4xx), the engine raises a ``TransportError`` whose message names the status,
the attempts made, the time they took and the server's last message. Every
``TransportError`` is a ``FatalEngineError``: the kernel records it as the
``error`` violation of that attempt and ends the stage, so a dead or overloaded
server never spends the contract's remedy attempts (a corrective prompt cannot
fix the wire) and never multiplies the transport's own retries by ``tries``.

Bounds. Each send is bounded by the engine's per-request deadline
(``Options.timeout``); the retries are bounded by ``max_retries`` and by
``max_elapsed`` seconds since the first send (no retry starts, and no wait runs,
past it). Each retry is logged at INFO on the ``hoare.engines`` logger with the
attempt number, the failure and the wait, and counts as one more request
against any budget the call runs under (``BudgetedEngine``).

The retry loop is independent of any HTTP library: an engine passes a
``classify`` function that turns its client's exceptions into a ``Failure``
(or ``None`` for exceptions that are not transport failures, which propagate
untouched). Sleeping and randomness are injectable so tests never wait.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from hoare.engines.base import BudgetExceeded
from hoare.engines.budget import charge_transport_retry
from hoare.errors import FatalEngineError

T = TypeVar("T")

FailureKind = Literal["rate_limit", "timeout", "connection", "server", "rejected"]

_MESSAGE_LIMIT = 500

log = logging.getLogger("hoare.engines")


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed send, classified. ``rejected`` failures (4xx other than 429
    and 408) are final; every other kind is worth resending."""

    kind: FailureKind
    message: str
    status: int | None = None
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind != "rejected"


class TransportError(FatalEngineError):
    """An engine call failed on the wire, for good.

    ``attempts`` counts the sends made (1 + transport retries), ``delays`` the
    waits between them, ``status`` the last HTTP status (``None`` for timeouts
    and connection errors) and ``server_message`` the server's last words.
    """

    def __init__(self, message: str, *, failure: Failure, attempts: int,
                 delays: tuple[float, ...] = ()) -> None:
        super().__init__(message)
        self.failure = failure
        self.kind: FailureKind = failure.kind
        self.status = failure.status
        self.server_message = failure.message
        self.attempts = attempts
        self.delays = delays


class RateLimited(TransportError):
    """HTTP 429 on every attempt."""


class EngineTimeout(TransportError):
    """The request timed out on every attempt (client timeout or HTTP 408)."""


class ConnectionFailed(TransportError):
    """The server could not be reached."""


class ServerError(TransportError):
    """HTTP 5xx on the last attempt."""


class RequestRejected(TransportError):
    """The server refused the request (a 4xx other than 408/429): resending the
    same request cannot help, so it is never retried."""


_ERROR_CLASS: dict[FailureKind, type[TransportError]] = {
    "rate_limit": RateLimited,
    "timeout": EngineTimeout,
    "connection": ConnectionFailed,
    "server": ServerError,
    "rejected": RequestRejected,
}

_WHAT: dict[FailureKind, str] = {
    "rate_limit": "rate limited",
    "timeout": "timed out",
    "connection": "connection failed",
    "server": "server error",
    "rejected": "request rejected",
}

_ADVICE: dict[FailureKind, str] = {
    "rate_limit": "Lower the concurrency, check the account's quota, or allow more waiting "
                  "with TransportRetry(max_retries=..., max_delay=...).",
    "timeout": "Raise Options(timeout=...) (seconds per request) or check the server's load.",
    "connection": "Check base_url (or OPENAI_BASE_URL) and that the server is running.",
    "server": "The server failed; try again later or allow more retries with "
              "TransportRetry(max_retries=...).",
    "rejected": "Resending cannot help: fix the request.",
}

_REJECTED_ADVICE: dict[int, str] = {
    401: "Check the API key (api_key=... or OPENAI_API_KEY).",
    403: "The API key may not access this model or endpoint.",
    404: "Check the model name and base_url (or HOARE_MODEL / OPENAI_BASE_URL).",
}


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def transport_error(failure: Failure, *, attempts: int, delays: tuple[float, ...] = (),
                    where: str = "", elapsed: float | None = None,
                    gave_up: str = "") -> TransportError:
    """The exception for a final ``failure``, with a message a user can act on."""
    status = f"HTTP {failure.status} " if failure.status is not None else ""
    retries = attempts - 1
    waited = f", waited {sum(delays):.1f} s" if delays else ""
    if elapsed is not None:
        waited += f", {elapsed:.1f} s in all"
    if gave_up:
        waited += f"; {gave_up}"
    advice = _ADVICE[failure.kind]
    if failure.kind == "rejected" and failure.status in _REJECTED_ADVICE:
        advice = _REJECTED_ADVICE[failure.status]
    prefix = f"{where}: " if where else ""
    label = "last server message" if failure.status is not None else "last error"
    message = (f"{prefix}{status}({_WHAT[failure.kind]}) after {attempts} attempt"
               f"{'s' if attempts != 1 else ''} ({retries} transport "
               f"{'retry' if retries == 1 else 'retries'}{waited}); "
               f"{label}: {_shorten(failure.message)!r}. {advice}")
    return _ERROR_CLASS[failure.kind](message, failure=failure, attempts=attempts, delays=delays)


def parse_retry_after(headers: Mapping[str, str] | None, *,
                      now: float | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``retry-after`` (seconds or an
    HTTP date), or ``None`` when absent or unreadable. Header names are case-insensitive
    if ``headers`` is (httpx headers are)."""
    if not headers:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    value = headers.get("retry-after")
    if value:
        try:
            date = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        current = time.time() if now is None else now
        return max(0.0, date.timestamp() - current)
    return None


async def _asyncio_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class TransportRetry:
    """Exponential backoff with jitter for failed sends.

    Retry ``k`` (1-based) waits ``min(max_delay, base_delay * 2**(k-1))`` scaled by a
    random factor in ``[1 - jitter, 1 + jitter]`` (``jitter`` is a fraction, never an
    added constant), then capped at ``max_delay``. A ``Retry-After`` (or
    ``retry-after-ms``) header sent with a 429 or 5xx replaces the computed wait,
    also capped at ``max_delay``. ``max_retries=0`` disables retries. No retry starts
    once ``max_elapsed`` seconds (``None``: no bound) have passed since the first send,
    or when its wait would reach that point.

    ``sleep``, ``asleep`` and ``random`` are injectable for tests.
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: float = 0.25
    max_elapsed: float | None = 120.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    asleep: Callable[[float], Awaitable[None]] = field(default=_asyncio_sleep, repr=False,
                                                      compare=False)
    random: Callable[[], float] = field(default=_random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        def number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        retries = self.max_retries
        if not (isinstance(retries, int) and not isinstance(retries, bool) and retries >= 0):
            raise ValueError(f"TransportRetry(max_retries={retries!r}): a whole number ≥ 0")
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if not (number(value) and math.isfinite(value) and value >= 0):
                raise ValueError(f"TransportRetry({name}={value!r}): must be a finite number "
                                 "of seconds ≥ 0")
        if self.max_elapsed is not None and not (number(self.max_elapsed)
                                                 and self.max_elapsed > 0):
            raise ValueError(f"TransportRetry(max_elapsed={self.max_elapsed!r}): must be > 0 "
                             "seconds or None")
        if not (number(self.jitter) and 0 <= self.jitter <= 1):
            raise ValueError(f"TransportRetry(jitter={self.jitter!r}): a fraction in [0, 1]")

    def delay(self, retry: int, failure: Failure) -> float:
        """The wait before retry number ``retry`` (1-based) after ``failure``."""
        if failure.retry_after is not None:
            return min(self.max_delay, max(0.0, failure.retry_after))
        backoff = min(self.max_delay, self.base_delay * 2.0 ** min(retry - 1, 60))
        factor = 1.0 + self.jitter * (2.0 * self.random() - 1.0)
        return min(self.max_delay, max(0.0, backoff * factor))

    def _next_wait(self, attempts: int, failure: Failure, started: float,
                   where: str) -> float | str:
        """The wait before the next send, or why there is none (the retries are over)."""
        if not failure.retryable:
            return ""
        if attempts > self.max_retries:
            return f"max_retries={self.max_retries} reached"
        wait = self.delay(attempts, failure)
        elapsed = time.monotonic() - started
        if self.max_elapsed is not None and elapsed + wait >= self.max_elapsed:
            return f"max_elapsed={self.max_elapsed:g} s reached"
        log.info("%s: attempt %d failed (%s: %s); transport retry %d of %d in %.2f s",
                 where or "engine", attempts, _WHAT[failure.kind], _shorten(failure.message),
                 attempts, self.max_retries, wait)
        return wait

    def _final(self, failure: Failure, attempts: int, delays: list[float], started: float,
               where: str, gave_up: str) -> TransportError:
        error = transport_error(failure, attempts=attempts, delays=tuple(delays), where=where,
                                elapsed=time.monotonic() - started, gave_up=gave_up)
        if attempts > 1:
            log.info("%s", error)
        return error

    @staticmethod
    def _charge(failure: Failure, where: str) -> None:
        """Count the coming resend against the budgets in force (it is a request)."""
        try:
            charge_transport_retry()
        except BudgetExceeded as refused:
            raise BudgetExceeded(f"{refused} The transport retry was not sent; "
                                 f"{where + ': ' if where else ''}last failure: "
                                 f"{_WHAT[failure.kind]}: {_shorten(failure.message)!r}"
                                 ) from None

    def call(self, send: Callable[[], T], classify: Callable[[BaseException], Failure | None],
             *, where: str = "") -> T:
        """``send()`` until it succeeds, a failure is final, or retries run out."""
        delays: list[float] = []
        attempts = 0
        started = time.monotonic()
        while True:
            attempts += 1
            try:
                return send()
            except Exception as error:
                failure = classify(error)
                if failure is None:
                    raise
                wait = self._next_wait(attempts, failure, started, where)
                if isinstance(wait, str):
                    raise self._final(failure, attempts, delays, started, where,
                                      wait) from _cause(error)
            self._charge(failure, where)
            delays.append(wait)
            self.sleep(wait)

    async def acall(self, send: Callable[[], Awaitable[T]],
                    classify: Callable[[BaseException], Failure | None], *, where: str = "") -> T:
        """The asynchronous twin of ``call``."""
        delays: list[float] = []
        attempts = 0
        started = time.monotonic()
        while True:
            attempts += 1
            try:
                return await send()
            except Exception as error:
                failure = classify(error)
                if failure is None:
                    raise
                wait = self._next_wait(attempts, failure, started, where)
                if isinstance(wait, str):
                    raise self._final(failure, attempts, delays, started, where,
                                      wait) from _cause(error)
            self._charge(failure, where)
            delays.append(wait)
            await self.asleep(wait)


def _cause(error: BaseException) -> BaseException | None:
    """The client's exception to chain, unless a classifier marked it as carrying
    secrets (``error.hoare_redact``): then no chain, so no traceback shows it."""
    return None if getattr(error, "hoare_redact", False) else error
