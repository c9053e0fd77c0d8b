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
import json
import logging
import math
import os
import re
import threading
import urllib.parse
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal

import httpx2 as httpx
import openai

from hoare.engines import capabilities
from hoare.engines.base import (
    ContentFiltered,
    EngineAnswerError,
    ModelRefusal,
    Options,
    Request,
    Response,
    TokenLogprob,
    ToolCall,
    Usage,
)
from hoare.engines.deadline import AsyncDeadlineTransport, DeadlineTransport, call_within
from hoare.engines.redaction import Redactor, split_credentials
from hoare.engines.transport import Failure, RequestRejected, TransportRetry, parse_retry_after
from hoare.errors import EngineError, FatalEngineError, RetryableEngineError

log = logging.getLogger("hoare.engines.openai")

DEFAULT_TIMEOUT = 60.0
"""Seconds allowed for one whole send when no ``Options.timeout`` is set (the ``openai``
client's own default, 600 s, hides a dead server for ten minutes)."""

MAX_TOKEN_COUNT = 10**12
"""The largest token count a server may report for one answer; above it the number is
not a count (it would poison sums, statistics and 64-bit SQL columns)."""
_PER_MESSAGE_TOKENS = 8  # role markers and separators a chat template adds per message

WATCHDOG_GRACE = 1.0  # seconds past the deadline before the watchdog ends a send
_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)

Structured = Literal["auto", "json_schema", "json_object_schema", "json_object", "text"]
Format = Literal["json_schema", "json_object_schema", "json_object", "text"]

PLACEHOLDER_API_KEY = "sk-no-key-required"
"""Sent to a server given by ``base_url`` when no key is configured: local servers
(vLLM, llama.cpp, Ollama) ignore it, and the ``openai`` client insists on one."""

_STEP_DOWN: dict[Format, Format] = {"json_schema": "json_object_schema",
                                    "json_object_schema": "json_object",
                                    "json_object": "text"}
_FORMAT_WORDS = ("response_format", "response format", "json_schema", "json schema",
                 "json_object", "structured output", "guided_json", "grammar", "schema")
# What ``structured="auto"`` learned per server (base URL): an engine made later for the
# same server starts from the format that worked, not from the one that was rejected.
_LEARNED: dict[str, Format] = {}
_LEARNED_LOCK = threading.Lock()
_STRICT_UNSUPPORTED = frozenset({
    "default", "minLength", "maxLength", "minProperties", "maxProperties", "patternProperties",
    "unevaluatedProperties", "propertyNames", "if", "then", "else", "not", "allOf", "oneOf",
    "dependentRequired", "dependentSchemas", "contains", "minContains", "maxContains",
    "uniqueItems", "const",
})


class EngineConfigError(FatalEngineError, ValueError):
    """The engine cannot be set up as asked (no model, no key); raised at construction."""


def schema_name(name: str) -> str:
    """``name`` made acceptable to ``json_schema.name``: ``[a-zA-Z0-9_-]{1,64}``."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:64]
    return cleaned or "output"


def is_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI's ``strict`` structured outputs accept ``schema`` unchanged: the root
    is an object, every object lists all its properties as required and forbids
    additional ones, and no keyword outside the strict subset appears. Conservative:
    ``False`` only costs enforcement strength, a wrong ``True`` costs a 400."""
    if schema.get("type") != "object":
        return False

    def ok(node: object) -> bool:
        if isinstance(node, list):
            return all(ok(item) for item in node)
        if not isinstance(node, Mapping):
            return True
        if _STRICT_UNSUPPORTED.intersection(node):
            return False
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                return False
            if set(node.get("required", ())) != set(properties):
                return False
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
                if not all(ok(sub) for sub in value.values()):
                    return False
            elif key not in ("enum", "required") and not ok(value):
                return False
        return True

    return ok(schema)


def response_format(request: Request, fmt: Format,
                    table: capabilities.CapabilityTable = capabilities.BUILT_IN
                    ) -> dict[str, Any] | None:
    """The ``response_format`` payload for ``request`` under ``fmt`` (``None``: send none).
    ``json_object_schema`` is llama.cpp's dialect, ``{"type": "json_object", "schema":
    S}``, which its server turns into a grammar; patterns are left out of ``S`` (a
    pattern its converter cannot read makes it drop the whole schema silently). Each
    dialect gets the schema in its strongest form per ``table`` (``capabilities.shaped``:
    for llama.cpp, small integer ranges also as ``enum``s)."""
    if request.schema is None or fmt == "text":
        return None
    if fmt == "json_object":
        return {"type": "json_object"}
    if fmt == "json_object_schema":
        return {"type": "json_object",
                "schema": capabilities.shaped(request.schema, "llama_cpp", table)}
    strict = is_strict_compatible(request.schema)
    schema = capabilities.shaped(request.schema, "openai_strict" if strict else "json_schema",
                                 table)
    return {"type": "json_schema", "json_schema": {
        "name": schema_name(request.schema_name), "schema": schema, "strict": strict}}


def without_patterns(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with every ``pattern`` keyword left out."""
    def strip(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: strip(v) for k, v in node.items()
                    if not (k == "pattern" and isinstance(v, str))}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    return strip(schema)  # type: ignore[no-any-return]


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return str(dict(body))
    if isinstance(body, str) and body:
        return body
    return error.message


def classify_openai_error(error: BaseException) -> Failure | None:
    """The ``TransportRetry`` classification of the ``openai`` client's exceptions."""
    if isinstance(error, openai.APITimeoutError):
        cause = error.__cause__ or error.__context__
        detail = f": {cause}" if cause is not None and str(cause) else ""
        return Failure("timeout", f"request timed out (client-side timeout){detail}")
    if isinstance(error, TimeoutError):
        return Failure("timeout", "request cancelled at its whole-request deadline")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error.__context__
        detail = f": {cause}" if cause is not None else ""
        return Failure("connection", f"{error.message.rstrip('.')}{detail}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        message = _server_message(error)
        if status == 429:
            return Failure("rate_limit", message, status, parse_retry_after(error.response.headers))
        if status >= 500:
            return Failure("server", message, status, parse_retry_after(error.response.headers))
        if status == 408:
            return Failure("timeout", message, status)
        return Failure("rejected", message, status)
    return None


def _masked_url(url: str) -> str:
    """``url`` for an error message: its user info (a password) masked, escaped, cut short."""
    shown = re.sub(r"//[^/?#]*@", "//***@", url)
    shown = repr(shown if len(shown) <= 200 else shown[:200] + "…")
    return shown


def _check_base_url(url: str, source: str) -> None:
    """Refuse a base URL no HTTP client can use (not a URL, another scheme, no host, a
    port out of range): a configuration error at construction, never a connection
    failure retried with backoff at the first call."""
    problem = ""
    if not isinstance(url, str):
        problem = f"expected a string, got {type(url).__name__}"
    elif url != url.strip() or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        problem = "it contains whitespace or control characters"
    else:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as error:
            problem = f"it is not a URL ({error})"
        else:
            if parts.scheme.lower() not in ("http", "https"):
                problem = (f"the scheme must be http or https, not {parts.scheme!r}"
                           if parts.scheme else "it has no scheme (http:// or https://)")
            elif not parts.hostname:
                problem = "it names no host"
            elif port is not None and not 1 <= port <= 65535:
                problem = f"port {port} is outside 1..65535"
    if problem:
        shown = _masked_url(url) if isinstance(url, str) else type(url).__name__
        raise EngineConfigError(f"OpenAIEngine: {source}={shown} is not a usable server URL: "
                                f"{problem}. Expected e.g. 'http://127.0.0.1:8000/v1'.")


def _checked_api_key(key: str | None, source: str) -> str | None:
    """The key to send: the configured one without surrounding whitespace (a key read from
    a file keeps its newline, which no HTTP header may carry). A key with characters an
    HTTP header cannot carry is a configuration error; the message never quotes it."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise EngineConfigError(f"OpenAIEngine: {source} must be a string, got "
                                f"{type(key).__name__}")
    stripped = key.strip()
    if not stripped:
        return None
    bad = next((c for c in stripped if not 0x20 <= ord(c) < 0x7F), None)
    if bad is not None:
        raise EngineConfigError(f"OpenAIEngine: {source} holds a character an HTTP header "
                                f"cannot carry (U+{ord(bad):04X}); check how the key was "
                                "copied (the key is not shown).")
    return stripped


def _names_format(message: str) -> bool:
    text = message.lower()
    return any(word in text for word in _FORMAT_WORDS)


def _is_format_rejection(error: RequestRejected) -> bool:
    status = error.status or 0
    return (status in (400, 404, 415, 422) or status >= 500) and _names_format(
        error.server_message)


def _is_max_tokens_rejection(error: RequestRejected) -> bool:
    text = error.server_message
    return error.status == 400 and "max_tokens" in text and "max_completion_tokens" in text


def merge_options(default: Options, given: Options) -> Options:
    """``given`` over ``default``, field by field (``None``/``n=1`` mean "not set")."""
    return Options(
        model=given.model if given.model is not None else default.model,
        temperature=given.temperature if given.temperature is not None else default.temperature,
        max_tokens=given.max_tokens if given.max_tokens is not None else default.max_tokens,
        n=given.n if given.n != 1 else default.n,
        seed=given.seed if given.seed is not None else default.seed,
        timeout=given.timeout if given.timeout is not None else default.timeout,
        extra_body={**(default.extra_body or {}), **(given.extra_body or {})} or None,
        logprobs=given.logprobs if given.logprobs is not None else default.logprobs,
        top_logprobs=(given.top_logprobs if given.top_logprobs is not None
                      else default.top_logprobs),
    )


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
                _check_base_url(url, "base_url" if base_url else "OPENAI_BASE_URL")
            configured_key = api_key or os.environ.get("OPENAI_API_KEY") or None
            key = _checked_api_key(configured_key, "api_key" if api_key else "OPENAI_API_KEY")
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
        self._redact = Redactor(secret_key, configured_key, *(userinfo or ()),
                                ":".join(userinfo) if userinfo else None)
        # what the server's decoder enforces: pinned, probed (hoare probe) or built in
        self.capabilities = capabilities.BUILT_IN
        if structured == "auto":
            self.capabilities = capabilities.resolve(self.base_url)
            if not self.capabilities.accepts("json_schema"):
                self._format = "json_object_schema" \
                    if self.capabilities.accepts("llama_cpp") else "json_object"
            with _LEARNED_LOCK:
                self._format = _LEARNED.get(self.base_url, self._format)
        # dialects whose answers the proofs may trust (provider faults): the table
        # enforces every keyword the built-in one says the dialect enforces
        self._vouched_dialects = frozenset(
            d for d in capabilities.DIALECTS
            if self.capabilities.enforced(d) >= capabilities.BUILT_IN.enforced(d))
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._shared_async = (async_client.with_options(max_retries=0)
                              if async_client is not None else None)
        # one async client per live event loop: id(loop) -> (loop, client, closer)
        self._async_clients: OrderedDict[int, tuple[weakref.ref[asyncio.AbstractEventLoop],
                                                    openai.AsyncOpenAI, object]] = OrderedDict()

    def __repr__(self) -> str:  # never shows the key or a password
        return self._redact(f"OpenAIEngine(model={self.model!r}, base_url={self.base_url!r}, "
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
            if self._client is None:
                http = openai.DefaultHttpxClient(
                    transport=DeadlineTransport(httpx.HTTPTransport(limits=_LIMITS)),
                    auth=self._auth())
                self._client = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                             max_retries=0, http_client=http)
            return self._client

    async def _aclient(self) -> openai.AsyncOpenAI:
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
            dead = [(key, loop_ref(), c) for key, (loop_ref, c, _) in self._async_clients.items()
                    if loop_ref() is None or loop_ref().is_closed()]  # type: ignore[union-attr]
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
        params: dict[str, Any] = {
            "model": options.model or self.model,
            "messages": [m.as_dict() for m in request.messages],
        }
        if options.temperature is not None:
            params["temperature"] = options.temperature
        if options.max_tokens is not None:
            params[self._token_param] = options.max_tokens
        if options.n != 1:
            params["n"] = options.n
        if options.seed is not None:
            params["seed"] = options.seed
        if options.logprobs:
            params["logprobs"] = True
            if options.top_logprobs is not None:
                params["top_logprobs"] = options.top_logprobs
        params["timeout"] = options.timeout if options.timeout is not None else DEFAULT_TIMEOUT
        if options.extra_body:
            params["extra_body"] = dict(options.extra_body)
        if request.tools:
            params["tools"] = [dict(t) for t in request.tools]
            tool_choice = getattr(request, "tool_choice", None)
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        payload = response_format(request, fmt or self._format, self.capabilities)
        if payload is not None:
            params["response_format"] = payload
        return params

    def _where(self, params: Mapping[str, Any]) -> str:
        return self._redact(f"{params['model']} at {self.base_url}")

    def _classifier(self, params: Mapping[str, Any]) -> Callable[[BaseException],
                                                                  Failure | None]:
        """``classify_openai_error`` for this request: a 5xx that names the
        ``response_format`` we sent rejects the request's shape (no retry), and
        secrets are masked in every message."""
        sent_format = "response_format" in params

        def classify(error: BaseException) -> Failure | None:
            failure = classify_openai_error(error)
            if failure is None:
                return None
            if sent_format and failure.kind == "server" and _names_format(failure.message):
                failure = dataclasses.replace(failure, kind="rejected")
            if self._redact.leaks(failure.message) or self._redact.leaks(_text(error)):
                failure = dataclasses.replace(failure, message=self._redact(failure.message))
                try:
                    error.hoare_redact = True  # type: ignore[attr-defined]
                except AttributeError:
                    pass
            return failure

        return classify

    def _adapt(self, error: RequestRejected, fmt: Format) -> bool:
        """After a rejection, change what we send if that can help; remember it."""
        with self._lock:
            if (self.structured == "auto" and fmt in _STEP_DOWN and _is_format_rejection(error)):
                if self._format == fmt:
                    self._format = _STEP_DOWN[fmt]
                    with _LEARNED_LOCK:
                        _LEARNED[self.base_url] = self._format
                    log.warning("%s rejected response_format %r (%s); using %r from now on "
                                "(for every engine on this server)",
                                self._redact(self.base_url), fmt,
                                error.server_message[:200], self._format)
                return True
            if self._token_param == "max_tokens" and _is_max_tokens_rejection(error):
                self._token_param = "max_completion_tokens"
                log.warning("%s wants max_completion_tokens instead of max_tokens; switching",
                            self._redact(self.base_url))
                return True
        return False

    def complete(self, request: Request) -> Response:
        if self.api_type == "responses":
            from hoare.engines import openai_responses

            return openai_responses.complete(self, request)
        for _ in range(5):  # at most: three format step-downs and one token-parameter switch
            fmt = self._format
            params = self.params(request, fmt)
            if _streams(request, params):
                params = _streaming(params)
            client = self.client
            create = (client.chat.completions.create if params.get("stream")
                      else client.chat.completions.with_raw_response.create)
            try:
                completion = self.transport.call(
                    functools.partial(watched_send, create,
                                      float(params["timeout"]) + WATCHDOG_GRACE, params),
                    self._classifier(params), where=self._where(params))
            except RequestRejected as error:
                if self._adapt(error, fmt):
                    continue
                raise
            if params.get("stream"):
                return self._read_stream(completion, params, request)
            return self._response(completion, params, request)
        raise RetryableEngineError(f"{self._where(params)}: the server kept rejecting the request")

    async def acomplete(self, request: Request) -> Response:
        if self.api_type == "responses":
            from hoare.engines import openai_responses

            return await openai_responses.acomplete(self, request)
        for _ in range(5):
            fmt = self._format
            params = self.params(request, fmt)
            if _streams(request, params):
                params = _streaming(params)
            client = await self._aclient()
            create = (client.chat.completions.create if params.get("stream")
                      else client.chat.completions.with_raw_response.create)
            send = functools.partial(bounded_send, create,
                                     float(params["timeout"]) + WATCHDOG_GRACE, params)
            try:
                completion = await self.transport.acall(
                    send, self._classifier(params), where=self._where(params))
            except RequestRejected as error:
                if self._adapt(error, fmt):
                    continue
                raise
            if params.get("stream"):
                return await self._aread_stream(completion, params, request)
            return self._response(completion, params, request)
        raise RetryableEngineError(f"{self._where(params)}: the server kept rejecting the request")

    # -- streams: read as they arrive, cancelled when ``request.watch`` says so --------------
    def _read_stream(self, stream: Any, params: Mapping[str, Any],
                     request: Request) -> Response:
        reading = _StreamReading(request)
        try:
            for chunk in stream:
                if reading.add(chunk):
                    break
        except Exception as error:
            raise RetryableEngineError(f"{self._where(params)}: the stream broke after "
                                       f"{reading.chunks} chunk(s): "
                                       f"{type(error).__name__}: {self._redact(_text(error))[:300]}"
                                       ) from error
        finally:
            stream.close()  # an early stop closes the connection: no more tokens are read
        return self._vouched(reading.response(params, self._where(params), self._redact))

    async def _aread_stream(self, stream: Any, params: Mapping[str, Any],
                            request: Request) -> Response:
        reading = _StreamReading(request)
        try:
            async for chunk in stream:
                if reading.add(chunk):
                    break
        except Exception as error:
            raise RetryableEngineError(f"{self._where(params)}: the stream broke after "
                                       f"{reading.chunks} chunk(s): "
                                       f"{type(error).__name__}: {self._redact(_text(error))[:300]}"
                                       ) from error
        finally:
            await stream.close()
        return self._vouched(reading.response(params, self._where(params), self._redact))

    def _response(self, raw: Any, params: Mapping[str, Any], request: Request) -> Response:
        """The answer of a non-streamed send, read from the body the server sent (not from
        the client's unvalidated model): whatever it sent, either a ``Response`` whose
        every field has been checked or an engine error naming the server and quoting,
        escaped and cut short, what it sent."""
        where = self._where(params)
        return self._vouched(_parse_completion(getattr(raw, "http_response", raw), params,
                                               request, where, self._redact))

    def _vouched(self, response: Response) -> Response:
        """``response.decoding`` kept only for a dialect this server's capability table
        vouches for: where a measured table says the server ignores a keyword the proofs
        rely on, a failed check is not blamed on the provider."""
        if response.decoding is None or response.decoding in self._vouched_dialects:
            return response
        return dataclasses.replace(response, decoding=None)


def excerpt(value: Any, limit: int = 200) -> str:
    """A short, escaped excerpt of something a server sent (``repr``: control characters,
    invalid bytes and lone surrogates are shown as escapes, never written raw)."""
    if isinstance(value, bytes | bytearray):
        cut = bytes(value[:limit])
        more = len(value) > limit
    elif isinstance(value, str):
        cut, more = value[:limit], len(value) > limit
    else:
        try:
            text = json.dumps(value, allow_nan=True, default=str)
        except (ValueError, TypeError, RecursionError):
            text = type(value).__name__
        cut, more = text[:limit], len(text) > limit
    return repr(cut) + (f" … ({len(value)} in all)" if more and isinstance(
        value, str | bytes | bytearray) else "…" if more else "")


def body_of(http: Any, where: str) -> dict[str, Any]:
    """The JSON object a 2xx response carried, or ``EngineAnswerError`` saying what came
    instead (nothing, a stream nobody asked for, bytes that are not UTF-8, text that is not
    JSON, JSON that is not an object)."""
    status = getattr(http, "status_code", 200)
    content = getattr(http, "content", b"")
    if not isinstance(content, bytes):
        raise EngineAnswerError(f"{where} answered HTTP {status} with a body the client could "
                                "not read")
    try:
        kind = str(http.headers.get("content-type", "")).lower()
    except Exception:
        kind = ""
    if not content.strip():
        raise EngineAnswerError(f"{where} answered HTTP {status} with an empty body "
                                f"(content-type {kind or 'none'!r}); expected a chat "
                                "completion (JSON)")
    if "text/event-stream" in kind or content.lstrip().startswith((b"data:", b"event:")):
        raise EngineAnswerError(f"{where} answered HTTP {status} with a stream (server-sent "
                                "events) the request did not ask for: "
                                f"{excerpt(content)}")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise EngineAnswerError(f"{where} answered HTTP {status} with a body that is not "
                                f"UTF-8 (invalid byte at offset {error.start}): "
                                f"{excerpt(content)}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        reason = "nested too deep" if isinstance(error, RecursionError) else str(error)[:120]
        raise EngineAnswerError(f"{where} answered HTTP {status} with a body that is not JSON "
                                f"({reason}; content-type {kind or 'none'!r}): "
                                f"{excerpt(text)}") from None
    if not isinstance(data, dict):
        raise EngineAnswerError(f"{where} answered HTTP {status} with JSON that is not a chat "
                                f"completion object: {excerpt(text)}")
    return data


def request_bytes(request: Request) -> int:
    """An upper bound of the input tokens of ``request`` (a token is at least one byte)."""
    total = sum(_PER_MESSAGE_TOKENS + len(m.content.encode("utf-8", "surrogatepass"))
                for m in request.messages)
    for part in (request.schema, list(request.tools) or None):
        if part is not None:
            total += len(json.dumps(part, default=str).encode("utf-8", "surrogatepass"))
    return total


def _content(value: Any, where: str) -> str | None:
    """A message's ``content``: text, or a list of text parts (joined), or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict)
                                       and isinstance(part.get("text", ""), str)
                                       for part in value):
        return "".join(part.get("text", "") for part in value)
    raise EngineAnswerError(f"{where} answered a message whose content is not text: "
                            f"{excerpt(value)}")


def _tool_calls(message: Mapping[str, Any], where: str) -> tuple[ToolCall, ...]:
    raw = message.get("tool_calls")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise EngineAnswerError(f"{where} answered tool_calls that are not a list: "
                                f"{excerpt(raw)}")
    calls = []
    for call in raw:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise EngineAnswerError(f"{where} answered a malformed tool call: {excerpt(call)}")
        name, arguments, ident = function.get("name"), function.get("arguments"), call.get("id")
        if isinstance(arguments, dict | list):
            arguments = json.dumps(arguments)
        if not (isinstance(name, str) and isinstance(arguments, str | None)
                and isinstance(ident, str | None)):
            raise EngineAnswerError(f"{where} answered a malformed tool call: {excerpt(call)}")
        calls.append(ToolCall(ident or "", name, arguments or ""))
    return tuple(calls)


def _parse_completion(http: Any, params: Mapping[str, Any], request: Request,
                      where: str, redact: Callable[[str], str]) -> Response:
    """The chat completion in a 2xx response, every field checked (see
    ``OpenAIEngine._response``). Choices the model refused (``message.refusal``) or the
    server's content filter withheld (``finish_reason="content_filter"`` with no text)
    are left out; when no choice is left, ``ModelRefusal`` / ``ContentFiltered`` says
    so, with the usage. Secrets a server echoed are masked in every message."""
    try:
        return _parse_checked(body_of(http, where), params, request, where)
    except EngineError as error:
        text = str(error)
        if redact(text) != text:  # a server echoing the key in what it sent
            error.args = (redact(text),)
            if isinstance(error, ModelRefusal):
                error.refusal = redact(error.refusal)
        raise


def _parse_checked(data: Mapping[str, Any], params: Mapping[str, Any], request: Request,
                   where: str) -> Response:
    raw_choices = data.get("choices")
    if not raw_choices:
        if data.get("error") is not None:
            raise EngineAnswerError(f"{where} answered HTTP 200 with an error and no choices: "
                                    f"{excerpt(data.get('error'))}")
        raise RetryableEngineError(f"{where} answered with no choices: {excerpt(data)}")
    if not isinstance(raw_choices, list):
        raise EngineAnswerError(f"{where} answered choices that are not a list: "
                                f"{excerpt(raw_choices)}")
    read: list[tuple[int, int, str | None, str | None, str | None, Any, Mapping[str, Any]]] = []
    for position, choice in enumerate(raw_choices):
        if not isinstance(choice, dict):
            raise EngineAnswerError(f"{where} answered a choice that is not an object: "
                                    f"{excerpt(choice)}")
        index = choice.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            index = position
        message = choice.get("message")
        if message is None:
            message = {}
        if not isinstance(message, dict):
            raise EngineAnswerError(f"{where} answered a message that is not an object: "
                                    f"{excerpt(message)}")
        content = _content(message.get("content"), where)
        refusal = message.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            refusal = excerpt(refusal)
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise EngineAnswerError(f"{where} answered a finish_reason that is not text: "
                                    f"{excerpt(finish)}")
        read.append((index, position, content, refusal or None, finish, choice, message))
    read.sort(key=lambda item: item[:2])
    kept = [item for item in read
            if item[2] or not (item[3] or item[4] == "content_filter")
            or item[6].get("tool_calls")]
    output_bytes = sum(len((item[2] or item[3] or "").encode("utf-8", "surrogatepass"))
                       for item in read)
    max_tokens = params.get("max_tokens", params.get("max_completion_tokens"))
    output_bound = (max_tokens * len(read) if isinstance(max_tokens, int) and max_tokens > 0
                    else output_bytes)
    usage = checked_usage(data.get("usage"), request_bytes(request), output_bound, where)
    if not kept:
        refusals = [item[3] for item in read if item[3]]
        if refusals:
            raise ModelRefusal(f"{where}: the model refused to answer: "
                               f"{excerpt(refusals[0], 300)}", refusal=refusals[0], usage=usage)
        raise ContentFiltered(f"{where}: the answer was withheld by the server's content "
                              "filter (finish_reason=content_filter, no text)", usage=usage)
    if len(kept) < len(read):
        log.warning("%s: %d of %d completions refused or filtered; left out", where,
                    len(read) - len(kept), len(read))
    model = data.get("model")
    return Response(
        texts=tuple(item[2] or "" for item in kept),
        finish_reasons=tuple(item[4] for item in kept),
        usage=usage,
        logprobs=(tuple(_logprobs(item[5]) for item in kept) if params.get("logprobs")
                  else ()),
        model=model if isinstance(model, str) and model else str(params["model"]),
        tool_calls=_tool_calls(kept[0][6], where),
        decoding=_dialect(params.get("response_format")),
    )


def _streams(request: Request, params: Mapping[str, Any]) -> bool:
    """Stream when the request watches its answer, for one completion without tools."""
    return request.watch is not None and "n" not in params and "tools" not in params


def _streaming(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**params, "stream": True, "stream_options": {"include_usage": True}}


class _StreamReading:
    """The answer of one stream so far, and the watch's verdict (with the log-probabilities
    of the tokens read, when the request asked for them)."""

    def __init__(self, request: Request) -> None:
        self.watch = request.watch
        self.parts: list[str] = []
        self.refusal: list[str] = []  # ``delta.refusal`` pieces: the model declined
        self.tokens: list[TokenLogprob] | None = []  # None: a malformed chunk spoiled them
        self.chunks = 0
        self.finish: str | None = None
        self.usage: Any = None
        self.model = ""
        self.stopped: str | None = None
        self.bound = sum(8 + len(m.content.encode("utf-8", "surrogatepass"))
                         for m in request.messages)
        # the watch's ``feed`` (``hoare.contracts.early_stop``): given each piece once, so a
        # stream is read in linear time; a plain watch is called with the text so far (joined)
        try:  # looked up on the class: a foreign watch's __getattr__ is not called
            feed = getattr(type(self.watch), "feed", None)
        except Exception:
            feed = None
        self.feed: Callable[[str], str | None] | None = (
            functools.partial(feed, self.watch) if callable(feed) else None)

    def add(self, chunk: Any) -> bool:
        """Take one chunk; True: stop reading (the watch gave a reason). Called once per
        token: each piece is handed to the watch's ``feed`` once (no join per chunk)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        model = getattr(chunk, "model", None)
        if model:
            self.model = model
        reason = None
        for choice in getattr(chunk, "choices", None) or ():
            if (choice.index or 0) != 0:
                continue
            delta = choice.delta
            piece = getattr(delta, "content", None) if delta else None
            refused = getattr(delta, "refusal", None) if delta else None
            if isinstance(refused, str) and refused:
                self.refusal.append(refused)
            logprobs = getattr(choice, "logprobs", None)
            content = getattr(logprobs, "content", None) if logprobs is not None else None
            if content and self.tokens is not None:
                tokens = _tokens(content)
                if tokens is None:
                    self.tokens = None
                else:
                    self.tokens.extend(tokens)
            if choice.finish_reason:
                self.finish = choice.finish_reason
            if piece:
                self.parts.append(piece)
                self.chunks += 1
                # a complete answer (its finish reason came) is judged in full, not here
                if reason is None and self.finish is None and self.watch is not None:
                    feed = self.feed
                    reason = feed(piece) if feed is not None else \
                        self.watch("".join(self.parts))
        if reason:
            self.stopped = reason
            return True
        return False

    def response(self, params: Mapping[str, Any], where: str = "the server",
                 redact: Callable[[str], str] = str) -> Response:
        """The answer read, checked as a non-streamed one is (``_parse_checked``): the
        usage through ``checked_usage``, a refusal or a filtered answer with no text
        raised as ``ModelRefusal`` / ``ContentFiltered`` with its usage."""
        text = "".join(self.parts)
        usage = self.usage
        if usage is not None and self.stopped is None:
            max_tokens = params.get("max_tokens", params.get("max_completion_tokens"))
            read = len(text.encode("utf-8", "surrogatepass")) + sum(
                len(r.encode("utf-8", "surrogatepass")) for r in self.refusal)
            output_bound = (max_tokens if isinstance(max_tokens, int) and max_tokens > 0
                            else max(read, self.chunks))
            spent = checked_usage(usage, self.bound, output_bound, where)
        else:  # cancelled: the server never sent its usage. Output: the chunks read (one
            # token each); input: an upper bound (a token is at least one UTF-8 byte)
            spent = Usage(1, self.bound, self.chunks)
        if not text and self.stopped is None:
            if self.refusal:
                refusal = redact("".join(self.refusal))
                raise ModelRefusal(f"{where}: the model refused to answer: "
                                   f"{excerpt(refusal, 300)}", refusal=refusal, usage=spent)
            if self.finish == "content_filter":
                raise ContentFiltered(f"{where}: the answer was withheld by the server's "
                                      "content filter (finish_reason=content_filter, no text)",
                                      usage=spent)
        return Response(texts=(text,),
                        finish_reasons=("stopped_early" if self.stopped else self.finish,),
                        usage=spent, model=self.model or str(params["model"]),
                        decoding=_dialect(params.get("response_format")),
                        stopped_early=self.stopped,
                        logprobs=((tuple(self.tokens) if self.tokens else None,)
                                  if params.get("logprobs") else ()))


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a JSON object, ``obj.name`` of a client model; None when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # a foreign object's __getattr__
        return None


def _count(value: Any) -> int | None:
    """A token count from the server: a non-negative integer (an integral float is read
    as one) below ``MAX_TOKEN_COUNT``, else None (not a count)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_TOKEN_COUNT else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if 0 <= value <= MAX_TOKEN_COUNT else None
    return None


def _cached_tokens(usage: Any) -> int:
    """``usage.prompt_tokens_details.cached_tokens`` where the server reports it as a
    count (anything else counts as no cached tokens: full price, the safe side)."""
    cached = _count(_field(_field(usage, "prompt_tokens_details"), "cached_tokens"))
    return cached or 0


def checked_usage(usage: Any, input_bound: int, output_bound: int, where: str) -> Usage:
    """The usage a server reported, validated at the engine boundary. A token count that is
    missing stays 0 (servers that count nothing); one that is not a count (negative,
    fractional, NaN, infinite, not a number, above ``MAX_TOKEN_COUNT``) is replaced by
    the bound given (a token is at least one UTF-8 byte, so the bytes sent and received
    bound the tokens) and logged: a budget is never credited and never under-charged
    by a bad number, and no NaN or infinity reaches a meter or the statistics."""
    counts = []
    for name, bound in (("prompt_tokens", input_bound), ("completion_tokens", output_bound)):
        value = _field(usage, name)
        count = _count(value)
        if value is not None and count is None:
            log.warning("%s reported usage.%s=%s, not a token count; counted as %d (an "
                        "upper bound)", where, name, excerpt(value, 60), bound)
            count = bound
        counts.append(count or 0)
    cached = min(_cached_tokens(usage), counts[0])
    return Usage(1, counts[0], counts[1], cached)


def _logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """A choice's ``logprobs.content`` (None when the server sent none)."""
    content = _field(_field(choice, "logprobs"), "content")
    return _tokens(content) if content else None


def _logprob(value: Any) -> float:
    """A log-probability: a finite number ≤ 0 (a rounding excess up to 1e-6 reads as 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"logprob {value!r} is not a number")
    number = float(value)
    if not (math.isfinite(number) and number <= 1e-6):
        raise ValueError(f"logprob {value!r} is not a log-probability")
    return min(number, 0.0)


def _token_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"token {value!r} is not text")
    return value


def _tokens(content: Any) -> tuple[TokenLogprob, ...] | None:
    """``logprobs.content`` items as ``TokenLogprob``s (None when one is malformed: a
    token that is not text, a log-probability that is not a finite number ≤ 0)."""
    try:
        if isinstance(content, str | bytes | Mapping):
            raise TypeError("not a list")
        return tuple(
            TokenLogprob(_token_text(_field(item, "token")), _logprob(_field(item, "logprob")),
                         tuple((_token_text(_field(alt, "token")),
                                _logprob(_field(alt, "logprob")))
                               for alt in _listed(_field(item, "top_logprobs"))))
            for item in content)
    except (AttributeError, TypeError, ValueError):
        return None  # a malformed entry: no logprobs rather than wrong ones


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    raise TypeError("not a list")


def _dialect(payload: object) -> str | None:
    """The decoding dialect a ``response_format`` payload guarantees (see ``Response``):
    strict ``json_schema`` is OpenAI's strict subset, a ``json_object`` with a schema is
    llama.cpp's grammar; anything else enforces nothing known."""
    if not isinstance(payload, Mapping):
        return None
    if payload.get("type") == "json_object" and payload.get("schema") is not None:
        return "llama_cpp"
    inner = payload.get("json_schema")
    if payload.get("type") == "json_schema" and isinstance(inner, Mapping) \
            and inner.get("strict") is True:
        return "openai_strict"
    return None


def watched_send(create: Callable[..., Any], seconds: float, params: Mapping[str, Any]) -> Any:
    """One synchronous send, given up ``seconds`` after it started (``TimeoutError``)."""
    return call_within(lambda: create(**params), seconds, "the send")


async def bounded_send(create: Callable[..., Any], seconds: float,
                       params: Mapping[str, Any]) -> Any:
    """One async send, cancelled outright ``seconds`` after it started (a watchdog behind
    the transport's own deadline)."""
    async with asyncio.timeout(seconds):
        return await create(**params)


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


def _text(error: BaseException) -> str:
    try:
        return f"{error} {error.__cause__ or ''}"
    except Exception:
        return ""
