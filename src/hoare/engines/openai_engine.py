"""``OpenAIEngine``: chat completions from any OpenAI-compatible server.

Built on the official ``openai`` client (sync and async) with the client's own
retries switched off: resending is ``TransportRetry``'s job, so there is one
place that decides and one error that explains (see ``transport.py``). Works
with OpenAI, vLLM, llama.cpp, Ollama and the like through ``base_url``.

Structured output. When a request carries a JSON schema, the engine asks the
server to enforce it with ``response_format={"type": "json_schema", ...}``.
Many local servers do not support that, so in ``structured="auto"`` mode a
rejection (HTTP 400/404/422 naming ``response_format``/``json_schema``/``schema``)
steps down to llama.cpp's ``{"type": "json_object", "schema": ...}``, then to a bare
``json_object`` and then to plain text (the contract's prompt already asks for JSON
and shows the schema). The step is remembered per server (base URL), for every
engine on it, so each later call costs one request, not four. A
server that answers an unsupported ``response_format`` with a 5xx naming it (as
llama.cpp's does with HTTP 500) is stepping down too, not retrying.

Time. ``timeout`` (``Options.timeout``, default ``DEFAULT_TIMEOUT`` = 60 s) is a
deadline for each whole send, not a per-read timeout: the engine's HTTP clients
enforce it with ``DeadlineTransport`` (a trickling body cannot stretch it), and a
watchdog ends any send still running ``WATCHDOG_GRACE`` seconds after it (a
trickle of headers, a prebuilt client without the deadline transport): an async
send is cancelled, a synchronous one is abandoned to its daemon thread (whose
reads the deadline transport soon ends). Transport retries are bounded by
``TransportRetry`` (``max_retries``, ``max_elapsed``).

Resources. The synchronous client is built once; an async client is built per
event loop (an HTTP pool belongs to its loop), kept in a small LRU map
(``max_async_clients``) and closed when its loop shuts down (``asyncio.run``
finalises it) or when evicted. ``close()``/``aclose()`` and ``with``/``async
with`` release them.

Secrets. Credentials in ``base_url`` are taken out of the URL and sent as HTTP
basic auth; the password and the API key are masked (``***``) in the engine's
repr, its log lines and every error it raises.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal

import httpx2 as httpx
import openai

from hoare.engines import capabilities
from hoare.engines.base import Options, Request, Response
from hoare.engines.deadline import AsyncDeadlineTransport, DeadlineTransport
from hoare.engines.openai_answer import paid, parse_completion, redacted
from hoare.engines.openai_config import (
    PLACEHOLDER_API_KEY,
    WATCHDOG_GRACE,
    EngineConfigError,
    check_base_url,
    checked_api_key,
    merge_options,
)
from hoare.engines.openai_request import (
    STEP_DOWN,
    Format,
    Structured,
    chat_params,
    is_format_rejection,
    is_max_tokens_rejection,
    learn_format,
    learned_format,
    names_format,
    response_format,
)
from hoare.engines.openai_sending import (
    bounded_send,
    classify_openai_error,
    error_text,
    watched_send,
)
from hoare.engines.openai_stream import StreamReading, should_stream, streaming_params
from hoare.engines.redaction import Redactor, split_credentials
from hoare.engines.transport import Failure, RequestRejected, TransportRetry
from hoare.errors import EngineError, RetryableEngineError
from hoare.forking import hold_across_fork

log = logging.getLogger("hoare.engines.openai")

_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)


class OpenAIEngine:
    """An engine on an OpenAI-compatible chat-completions endpoint.

    ``model`` defaults to ``default_options.model``, then ``$HOARE_MODEL``; ``base_url``
    to ``$OPENAI_BASE_URL`` (else OpenAI's); ``api_key`` to ``$OPENAI_API_KEY`` (else,
    when a ``base_url`` is set, a placeholder, since local servers need none).
    ``structured`` chooses how a request's JSON schema is sent: ``"json_schema"``,
    ``"json_object"``, ``"text"`` (not at all), or ``"auto"`` (``json_schema``,
    stepping down when the server rejects it). Prebuilt ``client``/``async_client``
    may be passed (their own retries are turned off). ``Options`` set on a request
    override ``default_options``. ``api_type="responses"`` sends requests to OpenAI's
    Responses API instead of chat completions (``openai_responses``: reasoning items
    kept across turns).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        structured: Structured = "auto",
        transport: TransportRetry | None = None,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        default_options: Options | None = None,
        max_async_clients: int = 8,
        api_type: Literal["chat_completions", "responses"] = "chat_completions",
    ) -> None:
        if api_type not in ("chat_completions", "responses"):
            raise EngineConfigError(f"OpenAIEngine(api_type={api_type!r}): expected "
                                    "'chat_completions' or 'responses'")
        self.api_type = api_type
        from hoare.engines.openai_responses import ReasoningMemory  # reasoning items across turns

        self.reasoning_memory = ReasoningMemory()
        if structured not in ("auto", "json_schema", "json_object_schema", "json_object",
                              "text"):
            raise EngineConfigError(f"OpenAIEngine(structured={structured!r}): expected 'auto', "
                                    "'json_schema', 'json_object_schema' (llama.cpp), "
                                    "'json_object' or 'text'")
        self.default_options = default_options or Options()
        resolved = model or self.default_options.model or os.environ.get("HOARE_MODEL")
        if not resolved:
            raise EngineConfigError(
                "OpenAIEngine has no model: pass OpenAIEngine(model='...'), set "
                "default_options=Options(model='...'), or set the HOARE_MODEL environment "
                "variable (with OPENAI_API_KEY, and OPENAI_BASE_URL for a non-OpenAI server).")
        self.model: str = resolved
        self.structured: Structured = structured
        self.transport = transport or TransportRetry()
        self._format: Format = "json_schema" if structured == "auto" else structured
        self._token_param = "max_tokens"
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child
        if max_async_clients < 1:
            raise EngineConfigError(f"OpenAIEngine(max_async_clients={max_async_clients}): "
                                    "must be ≥ 1")
        self.max_async_clients = max_async_clients
        self._credentials: tuple[str, str] | None = None

        configured_key: str | None = None
        if client is not None or async_client is not None:
            known = client if client is not None else async_client
            assert known is not None
            self.base_url, userinfo = split_credentials(str(known.base_url))
            self._api_key = configured_key = known.api_key
        else:
            url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            if url is not None:
                check_base_url(url, "base_url" if base_url else "OPENAI_BASE_URL")
            configured_key = api_key or os.environ.get("OPENAI_API_KEY") or None
            key = checked_api_key(configured_key, "api_key" if api_key else "OPENAI_API_KEY")
            if key is None:
                if url is None:
                    raise EngineConfigError(
                        "OpenAIEngine has no API key: pass api_key='...' or set OPENAI_API_KEY; "
                        "for a local OpenAI-compatible server (vLLM, llama.cpp, Ollama) pass "
                        "base_url='http://host:port/v1' or set OPENAI_BASE_URL, and no key is "
                        "needed.")
                key = PLACEHOLDER_API_KEY
            self.base_url, userinfo = split_credentials(url or "https://api.openai.com/v1")
            self._credentials = userinfo
            self._api_key = key
        secret_key = None if self._api_key == PLACEHOLDER_API_KEY else self._api_key
        # masks the key and the password in every text the engine shows
        self.redact = Redactor(secret_key, configured_key, *(userinfo or ()),
                               ":".join(userinfo) if userinfo else None)
        # what the server's decoder enforces: pinned, probed (hoare probe) or built in
        self.capabilities = capabilities.BUILT_IN
        if structured == "auto":
            self.capabilities = capabilities.resolve(self.base_url)
            if not self.capabilities.accepts("json_schema"):
                self._format = "json_object_schema" \
                    if self.capabilities.accepts("llama_cpp") else "json_object"
            self._format = learned_format(self.base_url, self._format)
        # dialects whose answers the proofs may trust (provider faults): the table
        # enforces every keyword the built-in one says the dialect enforces
        self._vouched_dialects = frozenset(
            d for d in capabilities.DIALECTS
            if self.capabilities.enforced(d) >= capabilities.BUILT_IN.enforced(d))
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._built_in: int | None = None  # the process that built our own sync client
        self._shared_async = (async_client.with_options(max_retries=0)
                              if async_client is not None else None)
        # one async client per live event loop: id(loop) -> (loop, client, closer)
        self._async_clients: OrderedDict[int, tuple[weakref.ref[asyncio.AbstractEventLoop],
                                                    openai.AsyncOpenAI, object]] = OrderedDict()

    def __repr__(self) -> str:  # never shows the key or a password
        return self.redact(f"OpenAIEngine(model={self.model!r}, base_url={self.base_url!r}, "
                            f"structured={self.structured!r}, format_in_use={self._format!r})")

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> OpenAIEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self.close()

    @property
    def format_in_use(self) -> Format:
        """How schemas are currently sent (after any remembered step-down)."""
        return self._format

    # -- clients ------------------------------------------------------------------------

    def _auth(self) -> httpx.BasicAuth | None:
        return httpx.BasicAuth(*self._credentials) if self._credentials else None

    @property
    def client(self) -> openai.OpenAI:
        """The synchronous client (built on first use, with a whole-request deadline)."""
        with self._lock:
            if self._built_in is not None and self._built_in != os.getpid():
                # a forked child: the pooled connections are the parent's too, and a
                # request sent on one reads whichever answer comes (the parent's); a
                # fresh pool, the inherited one left alone (closing it could end them)
                self._client = self._built_in = None
            if self._client is None:
                self._built_in = os.getpid()
                http = openai.DefaultHttpxClient(
                    transport=DeadlineTransport(httpx.HTTPTransport(limits=_LIMITS)),
                    auth=self._auth())
                self._client = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                             max_retries=0, http_client=http)
            return self._client

    async def async_client(self) -> openai.AsyncOpenAI:
        """The async client of the running event loop: an async HTTP pool belongs to the
        loop that opened it, so each loop gets its own (unless one was given), closed
        when that loop shuts down its async generators (``asyncio.run`` does)."""
        if self._shared_async is not None:
            return self._shared_async
        loop = asyncio.get_running_loop()
        key = id(loop)
        with self._lock:
            entry = self._async_clients.get(key)
            if entry is not None and entry[0]() is loop:
                self._async_clients.move_to_end(key)
                return entry[1]
            http = openai.DefaultAsyncHttpxClient(
                transport=AsyncDeadlineTransport(httpx.AsyncHTTPTransport(limits=_LIMITS)),
                auth=self._auth())
            client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url,
                                        max_retries=0, http_client=http)
            closer = _close_with_loop(weakref.ref(self), key, client)
            self._async_clients[key] = (weakref.ref(loop), client, closer)
            evicted = self._evict()
        await closer.__anext__()  # registers it with this loop: shutdown_asyncgens closes it
        for old_loop, old_client in evicted:
            _close_elsewhere(old_loop, old_client)
        return client

    def _evict(self) -> list[tuple[asyncio.AbstractEventLoop | None, openai.AsyncOpenAI]]:
        """Drop clients of dead loops, then the least recently used beyond the bound.
        Call with the lock held; returns what to close."""
        evicted = []
        for key, (loop_ref, client, _) in list(self._async_clients.items()):
            loop = loop_ref()
            if loop is None or loop.is_closed():
                del self._async_clients[key]
                evicted.append((loop, client))
        while len(self._async_clients) > self.max_async_clients:
            _, (loop_ref, client, _) = self._async_clients.popitem(last=False)
            evicted.append((loop_ref(), client))
        return evicted

    def _forget(self, key: int, client: openai.AsyncOpenAI) -> None:
        with self._lock:
            entry = self._async_clients.get(key)
            if entry is not None and entry[1] is client:
                del self._async_clients[key]

    @property
    def open_async_clients(self) -> int:
        """How many per-loop async clients are held (for tests and monitoring)."""
        with self._lock:
            return len(self._async_clients)

    def close(self) -> None:
        """Close the synchronous client and forget async clients of loops that are gone
        (an async client still in use by a live loop is closed by ``aclose`` there or
        when that loop shuts down)."""
        with self._lock:
            client, self._client = self._client, None
            dead = [(key, loop, c) for key, (loop_ref, c, _) in self._async_clients.items()
                    if (loop := loop_ref()) is None or loop.is_closed()]
            for key, _, _ in dead:
                del self._async_clients[key]
        if client is not None:
            client.close()
        for _, loop, async_client in dead:
            _close_elsewhere(loop, async_client)

    async def aclose(self) -> None:
        """Close the async client of the running event loop (and, like ``close``, the
        clients of loops that are gone)."""
        with self._lock:
            entry = self._async_clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].close()

    # -- requests -----------------------------------------------------------------------

    def params(self, request: Request, fmt: Format | None = None) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        options = merge_options(self.default_options, request.options)
        return chat_params(request, options, self.model, self._token_param,
                           response_format(request, fmt or self._format, self.capabilities))

    def where(self, params: Mapping[str, Any]) -> str:
        """Who answers ``params`` (model and server), for messages: secrets masked."""
        return self.redact(f"{params['model']} at {self.base_url}")

    def classifier(self, params: Mapping[str, Any]) -> Callable[[BaseException],
                                                                  Failure | None]:
        """``classify_openai_error`` for this request: a 5xx that names the
        ``response_format`` we sent rejects the request's shape (no retry), and
        secrets are masked in every message."""
        sent_format = "response_format" in params

        def classify(error: BaseException) -> Failure | None:
            failure = classify_openai_error(error)
            if failure is None:
                return None
            if sent_format and failure.kind == "server" and names_format(failure.message):
                failure = dataclasses.replace(failure, kind="rejected")
            if self.redact.leaks(failure.message) or self.redact.leaks(error_text(error)):
                failure = dataclasses.replace(failure, message=self.redact(failure.message))
                try:
                    # read by TransportRetry: the error's own text holds the secret
                    setattr(error, "hoare_redact", True)  # noqa: B010
                except AttributeError:
                    pass
            return failure

        return classify

    def _adapt(self, error: RequestRejected, fmt: Format) -> bool:
        """After a rejection, change what we send if that can help; remember it."""
        with self._lock:
            if (self.structured == "auto" and fmt in STEP_DOWN and is_format_rejection(error)):
                if self._format == fmt:
                    self._format = STEP_DOWN[fmt]
                    learn_format(self.base_url, self._format)
                    log.warning("%s rejected response_format %r (%s); using %r from now on "
                                "(for every engine on this server)",
                                self.redact(self.base_url), fmt,
                                error.server_message[:200], self._format)
                return True
            if self._token_param == "max_tokens" and is_max_tokens_rejection(error):
                self._token_param = "max_completion_tokens"
                log.warning("%s wants max_completion_tokens instead of max_tokens; switching",
                            self.redact(self.base_url))
                return True
        return False

    def complete(self, request: Request) -> Response:
        if self.api_type == "responses":
            from hoare.engines import openai_responses

            return openai_responses.complete(self, request)
        for _ in range(5):  # at most: three format step-downs and one token-parameter switch
            fmt = self._format
            params = self.params(request, fmt)
            if should_stream(request, params):
                params = streaming_params(params)
            client = self.client
            create = (client.chat.completions.create if params.get("stream")
                      else client.chat.completions.with_raw_response.create)
            try:
                completion = self.transport.call(
                    functools.partial(watched_send, create,
                                      float(params["timeout"]) + WATCHDOG_GRACE, params),
                    self.classifier(params), where=self.where(params))
            except RequestRejected as error:
                if self._adapt(error, fmt):
                    continue
                raise
            if params.get("stream"):
                return self._read_stream(completion, params, request)
            return self._response(completion, params, request)
        raise RetryableEngineError(f"{self.where(params)}: the server kept rejecting the request")

    async def acomplete(self, request: Request) -> Response:
        if self.api_type == "responses":
            from hoare.engines import openai_responses

            return await openai_responses.acomplete(self, request)
        for _ in range(5):
            fmt = self._format
            params = self.params(request, fmt)
            if should_stream(request, params):
                params = streaming_params(params)
            client = await self.async_client()
            create = (client.chat.completions.create if params.get("stream")
                      else client.chat.completions.with_raw_response.create)
            send = functools.partial(bounded_send, create,
                                     float(params["timeout"]) + WATCHDOG_GRACE, params)
            try:
                completion = await self.transport.acall(
                    send, self.classifier(params), where=self.where(params))
            except RequestRejected as error:
                if self._adapt(error, fmt):
                    continue
                raise
            if params.get("stream"):
                return await self._aread_stream(completion, params, request)
            return self._response(completion, params, request)
        raise RetryableEngineError(f"{self.where(params)}: the server kept rejecting the request")

    # -- streams: read as they arrive, cancelled when ``request.watch`` says so --------------
    def _read_stream(self, stream: Any, params: Mapping[str, Any],
                     request: Request) -> Response:
        reading = StreamReading(request, self.where(params))
        try:
            for chunk in stream:
                if reading.add(chunk):
                    break
        except Exception as error:
            raise self._broken_stream(params, reading, error) from self._chained(error)
        finally:
            stream.close()  # an early stop closes the connection: no more tokens are read
        return self._streamed(params, reading)

    async def _aread_stream(self, stream: Any, params: Mapping[str, Any],
                            request: Request) -> Response:
        reading = StreamReading(request, self.where(params))
        try:
            async for chunk in stream:
                if reading.add(chunk):
                    break
        except Exception as error:
            raise self._broken_stream(params, reading, error) from self._chained(error)
        finally:
            await stream.close()
        return self._streamed(params, reading)

    def _streamed(self, params: Mapping[str, Any], reading: StreamReading) -> Response:
        """The answer of a stream read to its end, or, when it ended before the answer
        did (no finish reason and no early stop), an error carrying what it cost."""
        if not reading.complete:
            raise paid(RetryableEngineError(
                f"{self.where(params)}: the stream ended before the answer did (no "
                f"finish_reason after {reading.chunks} chunk(s) of text: the server closed "
                "it, or sent [DONE], mid-answer)"), reading.spent(params, self.where(params)))
        try:
            return self._vouched(reading.response(params, self.where(params), self.redact))
        except EngineError as error:
            raise redacted(error, self.redact) from None

    def _chained(self, error: Exception) -> Exception | None:
        """The client's exception to chain to a stream's error, unless it is ours (it is
        the error) or its text holds a secret (no traceback shows it then)."""
        if isinstance(error, EngineError) or self.redact.leaks(error_text(error)):
            return None
        return error

    def _broken_stream(self, params: Mapping[str, Any], reading: StreamReading,
                       error: Exception) -> EngineError:
        """The error of a stream that broke while being read, or whose chunk was malformed
        (secrets masked), carrying what the chunks read so far cost."""
        if not isinstance(error, EngineError):
            error = RetryableEngineError(
                f"{self.where(params)}: the stream broke after {reading.chunks} chunk(s): "
                f"{type(error).__name__}: {self.redact(error_text(error))[:300]}")
        return paid(redacted(error, self.redact), reading.spent(params, self.where(params)))

    def _response(self, raw: Any, params: Mapping[str, Any], request: Request) -> Response:
        """The answer of a non-streamed send, read from the body the server sent (not from
        the client's unvalidated model): whatever it sent, either a ``Response`` whose
        every field has been checked or an engine error naming the server and quoting,
        escaped and cut short, what it sent."""
        where = self.where(params)
        return self._vouched(parse_completion(getattr(raw, "http_response", raw), params,
                                               request, where, self.redact))

    def _vouched(self, response: Response) -> Response:
        """``response.decoding`` kept only for a dialect this server's capability table
        vouches for: where a measured table says the server ignores a keyword the proofs
        rely on, a failed check is not blamed on the provider."""
        if response.decoding is None or response.decoding in self._vouched_dialects:
            return response
        return dataclasses.replace(response, decoding=None)


async def _close_with_loop(engine: weakref.ref[OpenAIEngine], key: int,
                           client: openai.AsyncOpenAI) -> AsyncIterator[None]:
    """Suspended for the life of its event loop; the loop's ``shutdown_asyncgens``
    (run by ``asyncio.run``) resumes it to close ``client`` inside that loop."""
    try:
        yield
    finally:
        owner = engine()
        if owner is not None:
            owner._forget(key, client)
        await client.close()


def _close_elsewhere(loop: asyncio.AbstractEventLoop | None, client: openai.AsyncOpenAI) -> None:
    """Close an evicted async client: in its loop if that loop still runs, else drop it
    (a closed loop's connections cannot be awaited; the garbage collector ends them)."""
    if loop is not None and not loop.is_closed() and loop.is_running():
        try:
            asyncio.run_coroutine_threadsafe(client.close(), loop)
        except RuntimeError:
            pass
