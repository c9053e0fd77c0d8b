"""A whole-request deadline for HTTP requests, not only a per-read timeout.

An HTTP client's timeout bounds each network read, so a server that trickles
its body (one byte every half second) keeps a request with ``timeout=1`` alive
for as long as it likes. ``DeadlineTransport`` wraps an ``httpx`` transport:
the request's timeout (the largest of its connect/read/write/pool values, which
the ``openai`` client sets from ``timeout=``) becomes a deadline for the whole
exchange. The connection and every read are bounded by it, and the body is
checked against it after every chunk, so a request ends at most one read
timeout after its deadline, with ``httpx.ReadTimeout`` (which the ``openai``
client reports as ``APITimeoutError``).
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import httpx2 as httpx

from hoare.errors import HoareError


def _budget(request: httpx.Request) -> float | None:
    """The request's timeout in seconds (its largest finite component), or ``None``."""
    timeout = request.extensions.get("timeout")
    if not isinstance(timeout, dict):
        return None
    values = [v for v in timeout.values() if isinstance(v, int | float) and math.isfinite(v)]
    return max(values) if values else None


def _expired(request: httpx.Request, seconds: float) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(f"the whole request exceeded its {seconds:g} s deadline "
                             "(the server was still sending)", request=request)


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, deadline: float, seconds: float,
                 request: httpx.Request) -> None:
        self._inner, self._deadline, self._seconds, self._request = (inner, deadline, seconds,
                                                                     request)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise _expired(self._request, self._seconds)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _AsyncDeadlineStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float, seconds: float,
                 request: httpx.Request) -> None:
        self._inner, self._deadline, self._seconds, self._request = (inner, deadline, seconds,
                                                                     request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise _expired(self._request, self._seconds)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class DeadlineTransport(httpx.BaseTransport):
    """``inner`` with each request's timeout enforced as a whole-request deadline."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        seconds = _budget(request)
        if seconds is None:
            return self.inner.handle_request(request)
        deadline = time.monotonic() + seconds
        response = self.inner.handle_request(request)
        if time.monotonic() > deadline:
            response.close()
            raise _expired(request, seconds)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_DeadlineStream(response.stream, deadline, seconds, request),
                              extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


class AsyncDeadlineTransport(httpx.AsyncBaseTransport):
    """The asynchronous twin of ``DeadlineTransport``."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        seconds = _budget(request)
        if seconds is None:
            return await self.inner.handle_async_request(request)
        deadline = time.monotonic() + seconds
        response = await self.inner.handle_async_request(request)
        if time.monotonic() > deadline:
            await response.aclose()
            raise _expired(request, seconds)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_AsyncDeadlineStream(response.stream, deadline, seconds,
                                                          request),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


T = TypeVar("T")


class WatchdogTimeout(HoareError, TimeoutError):
    """``call_within`` gave up waiting (as opposed to ``fn`` raising a timeout itself)."""


def call_within(fn: Callable[[], T], seconds: float, name: str) -> T:
    """``fn()`` in a daemon thread (with the caller's context variables), given up
    ``seconds`` after it started with ``WatchdogTimeout`` (a ``TimeoutError``): a
    blocking call (a socket read, a hung user function) cannot be interrupted from
    outside, so it is left to finish on its own. Its result or exception is handed
    back to the caller."""
    box: list[T] = []
    failure: list[BaseException] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box.append(context.run(fn))
        except BaseException as error:  # handed to the caller below
            failure.append(error)

    worker = threading.Thread(target=run, daemon=True, name=name)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise WatchdogTimeout(f"{name} was still running {seconds:g} s after it started")
    if failure:
        raise failure[0]
    return box[0]
