"""The engine interface: one request in, one response out, sync or async.

A contract turns each ``Generate`` effect of the kernel into a ``Request``; any
object with ``complete`` and ``acomplete`` is an engine. Transport problems
(rate limits, timeouts, 5xx) are retried inside the engine and surface, when
retries are exhausted, as a ``TransportError``: a ``FatalEngineError``, so the
kernel records one ``error`` violation and ends the stage instead of spending
remedy attempts on the wire. Any other exception an engine raises is that
attempt's ``error`` violation and the stage goes on (``hoare.errors`` draws the
whole tree).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hoare.errors import (
    BudgetError,
    EngineError,
    FatalEngineError,
    RetryableEngineError,
    UsageError,
)

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for (OpenAI's tool-calling protocol): ``arguments`` is the
    JSON text the model wrote, parsed by whoever runs the tool."""

    id: str
    name: str
    arguments: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. An assistant message may carry the ``tool_calls`` it made; a
    ``tool`` message answers one of them (``tool_call_id``)."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.as_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class InvalidOptions(UsageError, ValueError):
    """An ``Options`` field holds a value no engine can use (raised at construction)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _options_problem(options: Options) -> str:
    """What is wrong with ``options`` (empty: nothing)."""
    o = options
    if o.model is not None and not (isinstance(o.model, str) and o.model.strip()):
        return f"model={o.model!r}): expected a model name or None"
    if o.temperature is not None and not _is_finite(o.temperature):
        return f"temperature={o.temperature!r}): expected a finite number or None"
    if o.max_tokens is not None and not (_is_int(o.max_tokens) and o.max_tokens >= 1):
        return f"max_tokens={o.max_tokens!r}): expected a whole number ≥ 1 or None"
    if not (_is_int(o.n) and 1 <= o.n <= 10_000):
        return f"n={o.n!r}): expected a whole number of completions in 1..10000"
    if o.seed is not None and not _is_int(o.seed):
        return f"seed={o.seed!r}): expected a whole number or None"
    if o.timeout is not None and not (_is_finite(o.timeout) and 0 < o.timeout <= 10**7):
        return (f"timeout={o.timeout!r}): expected seconds, a finite number > 0 (at most "
                "10**7), or None")
    if o.extra_body is not None and not isinstance(o.extra_body, Mapping):
        return f"extra_body={type(o.extra_body).__name__}): expected a mapping or None"
    if o.logprobs is not None and not isinstance(o.logprobs, bool):
        return f"logprobs={o.logprobs!r}): expected True, False or None"
    if o.top_logprobs is not None and not (_is_int(o.top_logprobs)
                                           and 0 <= o.top_logprobs <= 20):
        return f"top_logprobs={o.top_logprobs!r}): expected a whole number in 0..20 or None"
    return ""


@dataclass(frozen=True, slots=True)
class Options:
    """Sampling options. ``None`` means the engine's default. ``extra_body``: fields a
    particular server understands, sent as they are in the request's JSON body (e.g.
    llama.cpp's ``{"grammar": ...}``, vLLM's ``{"guided_choice": [...]}``,
    Ollama's ``{"options": {"num_ctx": 8192}}``), merged over the engine's defaults."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    n: int = 1
    seed: int | None = None
    timeout: float | None = None
    extra_body: Mapping[str, Any] | None = None
    logprobs: bool | None = None
    """Ask for the log-probability of each answer token (``Response.logprobs``)."""
    top_logprobs: int | None = None
    """With ``logprobs``: also the most likely alternatives at each position (≤ 20)."""

    def __post_init__(self) -> None:
        """Refuse values no engine can use, naming the field: a NaN, infinite or negative
        timeout would crash a deadline (or wait forever), a zero ``n`` asks for nothing."""
        problem = _options_problem(self)
        if problem:
            raise InvalidOptions(f"Options({problem}")

    def as_dict(self) -> dict[str, Any]:
        """Only the options that were set (stable, for cache keys)."""
        return {k: v for k in self.__slots__ if (v := getattr(self, k)) is not None}


MAX_USAGE_COUNT = 10**12
"""The largest count a ``Usage`` holds (per answer, far above any real one): bigger
numbers are not counts and would poison sums, statistics and 64-bit SQL columns."""


def _usage_count(value: object) -> int:
    """``value`` as a usage count (see ``Usage``); never raises (a foreign number may
    raise from any dunder: it then reads as 0)."""
    try:
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return 0
        if isinstance(value, numbers.Integral):
            return min(max(operator.index(value), 0), MAX_USAGE_COUNT)
        number = float(value)
        if number != number or number <= 0:  # NaN, negative
            return 0
        if number >= MAX_USAGE_COUNT:
            return MAX_USAGE_COUNT
        return math.ceil(number)  # a fractional count rounds up
    except Exception:
        return 0


@dataclass(frozen=True, slots=True)
class Usage:
    """What one or more engine calls cost. ``cached_input_tokens``: the input tokens the
    provider served from its prompt cache (counted in ``input_tokens`` too)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0

    def __post_init__(self) -> None:
        """Every count is a whole number in ``[0, MAX_USAGE_COUNT]``, whoever made it (a
        server's stream, a user's engine): a negative, NaN or non-numeric count reads as
        0, a huge or infinite one as the cap, so no sum, meter or statistic is lowered,
        poisoned or crashed by it."""
        for name in ("requests", "input_tokens", "output_tokens", "cached_input_tokens"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= MAX_USAGE_COUNT:
                object.__setattr__(self, name, _usage_count(value))
        if self.cached_input_tokens > self.input_tokens:
            object.__setattr__(self, "cached_input_tokens", self.input_tokens)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.requests + other.requests, self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens,
                     self.cached_input_tokens + other.cached_input_tokens)

    def as_dict(self) -> dict[str, int]:
        out = {"requests": self.requests, "input_tokens": self.input_tokens,
               "output_tokens": self.output_tokens}
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        return out


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One answer token's log-probability, and the alternatives the server reported at
    that position (``top``: ``(token, logprob)``, most likely first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


class Request:
    """What a contract asks of an engine.

    ``messages`` are rendered on first access only (an engine that never reads
    them, such as a rule-based ``FunctionEngine``, costs no rendering).
    Besides the messages, a request made by a contract carries the typed
    ``input`` in use, the ``feedback`` messages of the failed checks this
    attempt must fix, the ``attempt`` number within its stage, and ``task``:
    ``"generate"`` (produce an output) or ``"repair_input"`` (pre-remedy).
    """

    __slots__ = ("_messages", "_render", "attempt", "contract", "feedback", "input", "options",
                 "schema", "schema_name", "task", "tool_choice", "tools", "watch")

    def __init__(
        self,
        *,
        messages: tuple[Message, ...] | None = None,
        render: Callable[[], tuple[Message, ...]] | None = None,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "output",
        options: Options | None = None,
        task: Literal["generate", "repair_input"] = "generate",
        input: object = None,
        feedback: tuple[str, ...] = (),
        attempt: int = 1,
        contract: str = "",
        tools: tuple[Mapping[str, Any], ...] = (),
        watch: Callable[[str], str | None] | None = None,
        tool_choice: Literal["auto", "required", "none"] | None = None,
    ) -> None:
        if (messages is None) == (render is None):
            raise ValueError("Request needs exactly one of messages= or render=")
        if tool_choice not in (None, "auto", "required", "none"):
            raise ValueError(f"Request(tool_choice={tool_choice!r}): expected 'auto', "
                             f"'required', 'none' or None")
        self._messages = messages
        self._render = render
        self.schema = schema
        self.schema_name = schema_name
        self.options = options or Options()
        self.task = task
        self.input = input
        self.feedback = feedback
        self.attempt = attempt
        self.contract = contract
        self.tools = tools  # OpenAI tool specs (``{"type": "function", "function": ...}``)
        # streaming: called with the answer text so far as it arrives; a returned reason
        # cancels the stream (``Response.stopped_early``). An engine that cannot stream
        # ignores it (the full answer is checked as usual).
        self.watch = watch
        # OpenAI's ``tool_choice`` ("required": the answer must be a tool call); None: the
        # server's default
        self.tool_choice = tool_choice

    @property
    def messages(self) -> tuple[Message, ...]:
        """The chat messages, rendered once on first access."""
        messages = self._messages
        if messages is None:
            assert self._render is not None
            messages = self._messages = self._render()
        return messages

    def key(self) -> dict[str, Any]:
        """Everything that determines the engine's answer (for caches)."""
        key = {
            "messages": [m.as_dict() for m in self.messages],
            "schema": self.schema,
            "schema_name": self.schema_name,
            "options": self.options.as_dict(),
        }
        if self.tools:
            key["tools"] = [dict(t) for t in self.tools]
        if self.tool_choice is not None:
            key["tool_choice"] = self.tool_choice
        return key


def rendered_request(
    render: Callable[[], tuple[Message, ...]], schema: Mapping[str, Any] | None,
    schema_name: str, options: Options | None, task: Literal["generate", "repair_input"],
    input: object, feedback: tuple[str, ...], attempt: int, contract: str,
    watch: Callable[[str], str | None] | None,
) -> Request:
    """``Request(render=render, schema=schema, ...)`` with no tools, built positionally:
    a contract builds one per engine call, and keyword parsing and the checks of
    ``Request.__init__`` (one of messages or render; a known ``tool_choice``), which hold
    here by construction, cost twice the rest."""
    request = _new_object(Request)
    request._messages = None
    request._render = render
    request.schema = schema
    request.schema_name = schema_name
    request.options = options or Options()
    request.task = task
    request.input = input
    request.feedback = feedback
    request.attempt = attempt
    request.contract = contract
    request.tools = ()
    request.watch = watch
    request.tool_choice = None
    return request


_new_object = object.__new__

ONE_REQUEST = Usage(requests=1)  # the usage of an answer that reports no token counts


@dataclass(frozen=True, slots=True, init=False)
class Response:
    """An engine's answer: one text per completion requested (``options.n``).

    Its ``__init__`` is written out: every engine call builds one, and the dataclass's
    generated one costs twice as much for the same fields."""

    texts: tuple[str, ...]
    finish_reasons: tuple[str | None, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    cached: bool = False
    """True when a ``CachedEngine`` replayed this answer instead of asking its engine
    (``usage`` is then what the recorded call cost)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tool calls of the first completion (a request with ``tools``)."""
    decoding: str | None = None
    """The dialect whose decoder was given the request's schema and is known to honour
    it (``"openai_strict"``, ``"llama_cpp"``), or None: no guarantee. A post-condition
    that schema enforces (``hoare schema``) failing on this answer is the provider's
    fault, not the model's."""
    stopped_early: str | None = None
    """Why a streamed answer was cancelled before its end (``Request.watch``): its text is
    the part read, its ``usage.output_tokens`` the chunks read."""
    logprobs: tuple[tuple[TokenLogprob, ...] | None, ...] = ()
    """Per completion (as ``texts``), its tokens' log-probabilities when the request
    asked for them (``Options.logprobs``); None where the server gave none."""

    def __init__(
        self, texts: tuple[str, ...], finish_reasons: tuple[str | None, ...] = (),
        usage: Usage | None = None, model: str = "", cached: bool = False,
        tool_calls: tuple[ToolCall, ...] = (), decoding: str | None = None,
        stopped_early: str | None = None,
        logprobs: tuple[tuple[TokenLogprob, ...] | None, ...] = (),
    ) -> None:
        """The fields in order, as the dataclass sets them (``usage`` defaults to a fresh
        ``Usage()``)."""
        set_field = object.__setattr__  # frozen
        set_field(self, "texts", texts)
        set_field(self, "finish_reasons", finish_reasons)
        set_field(self, "usage", Usage() if usage is None else usage)
        set_field(self, "model", model)
        set_field(self, "cached", cached)
        set_field(self, "tool_calls", tool_calls)
        set_field(self, "decoding", decoding)
        set_field(self, "stopped_early", stopped_early)
        set_field(self, "logprobs", logprobs)

    @property
    def text(self) -> str:
        """The first completion."""
        return self.texts[0] if self.texts else ""


@runtime_checkable
class Engine(Protocol):
    """Anything that answers requests, synchronously and asynchronously."""

    def complete(self, request: Request) -> Response: ...

    async def acomplete(self, request: Request) -> Response: ...


# ``EngineError`` (the kernel's) is re-exported here: ``hoare.engines.EngineError`` is
# ``hoare.errors.EngineError``. Engine errors that retrying cannot fix subclass
# ``FatalEngineError``; budget refusals ``BudgetError`` (see ``hoare.errors``).
__all__ = ["ONE_REQUEST", "BudgetExceeded", "CacheMiss", "ContentFiltered", "Engine",
           "EngineAnswerError", "EngineError", "FatalEngineError", "InvalidOptions", "Message",
           "ModelRefusal",
           "Options", "Request", "Response", "RetryableEngineError", "TokenLogprob", "ToolCall",
           "Usage", "innermost", "rendered_request"]


def require_engine(engine: object, wrapper: str) -> None:
    """Refuse, at construction, an ``engine`` a wrapper could not call at all (neither a
    callable ``complete`` nor ``acomplete``): a clear TypeError now, not an
    AttributeError at the first call. (A sync-only engine stays usable from sync code.)"""
    try:
        usable = callable(getattr(engine, "complete", None)) or callable(
            getattr(engine, "acomplete", None))
    except Exception:  # a foreign object's __getattr__
        usable = False
    if not usable:
        raise TypeError(f"{wrapper} needs an engine with complete(request) and "
                        f"acomplete(request), got {type(engine).__name__}")


def innermost(engine: object) -> object:
    """The engine under its wrappers (a budget meter, a cache, a deadline each keep
    theirs as ``inner``): what the stats store and the spans name and ask the model of."""
    for _ in range(8):
        inner = getattr(engine, "inner", None)
        if inner is None or inner is engine:
            break
        engine = inner
    return engine


class BudgetExceeded(BudgetError):
    """A request would exceed the call's budget; it was not sent."""

    unsent: bool = False
    """Set when the refusal came before the request was sent (not a transport retry's
    resend): a budget meter around the refusing one then withdraws its reservation."""


class CacheMiss(FatalEngineError):
    """A ``replay`` cache had no answer for a request."""


class EngineAnswerError(RetryableEngineError, TypeError):
    """An engine answered something that is not an answer (``None``, bytes, a dict…):
    that attempt has no candidate, and the next attempt may do better."""


class ModelRefusal(RetryableEngineError):
    """The model declined to answer (OpenAI's ``message.refusal``): not an empty answer but
    a refusal, with its text (``refusal``). The answer was paid for: ``usage`` says what it
    cost, and a budget meter charges it. Another attempt (a different prompt) may do better."""

    def __init__(self, message: str, *, refusal: str = "", usage: Usage | None = None) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.usage = usage if usage is not None else Usage()


class ContentFiltered(RetryableEngineError):
    """The server's content filter withheld the answer (``finish_reason="content_filter"``
    with no text): not an empty answer. ``usage`` says what it cost."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()
