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

Size. A body is bounded too (``MAX_BODY_BYTES``, after content decoding): a server
sending without end, or a gzip bomb (a few hundred kilobytes that inflate to
gigabytes), ends with ``BodyTooLarge`` instead of taking all memory. The transports
decode ``gzip``/``deflate`` themselves, a bounded piece at a time, and hand the client
the decoded body (without its ``content-encoding``), so no decoder downstream inflates
it unbounded.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import httpx2 as httpx

from hoare.engines.base import EngineAnswerError
from hoare.errors import HoareError

MAX_BODY_BYTES = 128 * 1024 * 1024
"""The most bytes (after content decoding) an answer's body may hold: far above any real
answer (a streamed 100k-token answer is a few tens of megabytes of events)."""
_PIECE = 1 << 16  # inflated a piece at a time: one chunk of a bomb cannot fill memory
_DECODED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
            "deflate": zlib.MAX_WBITS}


class BodyTooLarge(EngineAnswerError):
    """The server's body exceeded ``MAX_BODY_BYTES`` (after decoding): not an answer, and
    resending the same request would be answered the same way."""


class _BoundedBody:
    """Counts a body's bytes against ``MAX_BODY_BYTES`` and inflates the encodings the
    transport decodes itself (``encodings`` in the order the server applied them)."""

    def __init__(self, encodings: list[str], limit: int) -> None:
        self._inflaters = [_inflater(e) for e in reversed(encodings)]
        self._left = limit
        self._limit = limit

    def _count(self, data: bytes) -> bytes:
        self._left -= len(data)
        if self._left < 0:
            raise BodyTooLarge(f"the server's answer exceeded {self._limit} bytes (after "
                               "content decoding): not read further")
        return data

    def feed(self, data: bytes) -> Iterator[bytes]:
        pieces = [data]
        for inflater in self._inflaters:
            pieces = [out for piece in pieces for out in _inflate(inflater, piece)]
        for piece in pieces:
            if piece:
                yield self._count(piece)

    def flush(self) -> Iterator[bytes]:
        pieces: list[bytes] = []
        for inflater in self._inflaters:
            pieces = [out for piece in pieces for out in _inflate(inflater, piece)]
            pieces.append(inflater.flush())
        for piece in pieces:
            if piece:
                yield self._count(piece)


def _inflater(encoding: str) -> Any:
    return zlib.decompressobj(_DECODED[encoding])


def _inflate(inflater: Any, data: bytes) -> Iterator[bytes]:
    """``data`` inflated, at most ``_PIECE`` bytes at a time."""
    try:
        out = inflater.decompress(data, _PIECE)
        while out:
            yield out
            out = inflater.decompress(inflater.unconsumed_tail, _PIECE)
    except zlib.error as error:
        raise httpx.DecodingError(f"the server's compressed body is corrupt: "
                                  f"{error}") from None


def _bounded(response: httpx.Response) -> tuple[httpx.Headers, _BoundedBody]:
    """The headers to hand the client and the body's bound: ``gzip``/``deflate`` bodies
    are decoded here (so ``content-encoding`` and ``content-length`` are dropped); any
    other encoding is left to the client, its raw bytes counted."""
    headers = httpx.Headers(response.headers)
    encodings = [e.strip().lower() for e in headers.get("content-encoding", "").split(",")
                 if e.strip() and e.strip().lower() != "identity"]
    if encodings and all(e in _DECODED for e in encodings):
        del headers["content-encoding"]
        headers.pop("content-length", None)
        return headers, _BoundedBody(encodings[:5], MAX_BODY_BYTES)
    return headers, _BoundedBody([], MAX_BODY_BYTES)


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
                 request: httpx.Request, body: _BoundedBody) -> None:
        self._inner, self._deadline, self._seconds, self._request = (inner, deadline, seconds,
                                                                     request)
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise _expired(self._request, self._seconds)
            yield from self._body.feed(chunk)
        yield from self._body.flush()

    def close(self) -> None:
        self._inner.close()


class _AsyncDeadlineStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float, seconds: float,
                 request: httpx.Request, body: _BoundedBody) -> None:
        self._inner, self._deadline, self._seconds, self._request = (inner, deadline, seconds,
                                                                     request)
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise _expired(self._request, self._seconds)
            for piece in self._body.feed(chunk):
                yield piece
        for piece in self._body.flush():
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class DeadlineTransport(httpx.BaseTransport):
    """``inner`` with each request's timeout enforced as a whole-request deadline, and
    its body bounded (``MAX_BODY_BYTES``)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        seconds = _budget(request)
        deadline = math.inf if seconds is None else time.monotonic() + seconds
        response = self.inner.handle_request(request)
        if time.monotonic() > deadline:
            response.close()
            raise _expired(request, seconds or 0.0)
        headers, body = _bounded(response)
        return httpx.Response(status_code=response.status_code, headers=headers,
                              stream=_DeadlineStream(response.stream, deadline, seconds or 0.0,
                                                     request, body),
                              extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


class AsyncDeadlineTransport(httpx.AsyncBaseTransport):
    """The asynchronous twin of ``DeadlineTransport``."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        seconds = _budget(request)
        deadline = math.inf if seconds is None else time.monotonic() + seconds
        response = await self.inner.handle_async_request(request)
        if time.monotonic() > deadline:
            await response.aclose()
            raise _expired(request, seconds or 0.0)
        headers, body = _bounded(response)
        return httpx.Response(status_code=response.status_code, headers=headers,
                              stream=_AsyncDeadlineStream(response.stream, deadline,
                                                          seconds or 0.0, request, body),
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
