"""Reading a chat completion: the body a server sent, every field checked.

Whatever a server sends, the engine returns either a ``Response`` whose every field
has been checked or an engine error naming the server and quoting (escaped, cut short)
what it sent. Choices the model refused or a content filter withheld are left out
(``ModelRefusal`` / ``ContentFiltered`` when none is left); token counts that are not
counts are replaced by an upper bound (``checked_usage``); malformed log-probabilities
are dropped. The stream reader (``openai_stream``) and the Responses API path
(``openai_responses``) share these readers.
"""

from __future__ import annotations

import json
import logging
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from hoare.engines.base import (
    ContentFiltered,
    EngineAnswerError,
    ModelRefusal,
    Request,
    Response,
    TokenLogprob,
    ToolCall,
    Usage,
)
from hoare.errors import EngineError, RetryableEngineError

log = logging.getLogger("hoare.engines.openai")

MAX_TOKEN_COUNT = 10**12
"""The largest token count a server may report for one answer; above it the number is
not a count (it would poison sums, statistics and 64-bit SQL columns)."""
PER_MESSAGE_TOKENS = 8  # role markers and separators a chat template adds per message


def excerpt(value: Any, limit: int = 200) -> str:
    """A short, escaped excerpt of something a server sent (``repr``: control characters,
    invalid bytes and lone surrogates are shown as escapes, never written raw)."""
    cut: str | bytes
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


def described(value: Any) -> str:
    """A value a server sent where a number belongs, for a log line: a number is shown, any
    other value only by its type and size (a log line is not redacted, and a server may
    echo the API key anywhere)."""
    if value is None or isinstance(value, bool | int | float):
        return excerpt(value, 60)
    size = len(value) if isinstance(value, str | bytes | list | dict) else None
    return type(value).__name__ + ("" if size is None else f" of length {size}")


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
    total = sum(PER_MESSAGE_TOKENS + len(m.content.encode("utf-8", "surrogatepass"))
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


def parse_completion(http: Any, params: Mapping[str, Any], request: Request,
                      where: str, redact: Callable[[str], str]) -> Response:
    """The chat completion in a 2xx response, every field checked (see
    ``OpenAIEngine`` (its ``_response``)). Choices the model refused (``message.refusal``) or the
    server's content filter withheld (``finish_reason="content_filter"`` with no text)
    are left out; when no choice is left, ``ModelRefusal`` / ``ContentFiltered`` says
    so, with the usage. Secrets a server echoed are masked in every message."""
    data: Any = None
    try:
        data = body_of(http, where)
        return _parse_checked(data, params, request, where)
    except EngineError as error:
        raise paid(redacted(error, redact),
                   answer_bound(http, data, params, request, where)) from None


def redacted(error: EngineError, redact: Callable[[str], str]) -> EngineError:
    """``error`` with the secrets a server echoed (in what it sent) masked in its text."""
    text = str(error)
    if redact(text) != text:
        error.args = (redact(text),)
        if isinstance(error, ModelRefusal):
            error.refusal = redact(error.refusal)
    return error


def paid(error: EngineError, usage: Usage) -> EngineError:
    """``error`` carrying ``usage`` (unless it already says what it cost): an answer that
    came but cannot be read was still paid for, so a budget meter charges it
    (``BudgetedEngine`` settles a failure's ``usage``) instead of counting it as free."""
    if not isinstance(getattr(error, "usage", None), Usage):
        setattr(error, "usage", usage)  # noqa: B010  # not a field of every EngineError
    return error


def answer_bound(http: Any, data: Any, params: Mapping[str, Any], request: Request,
                  where: str) -> Usage:
    """What an unreadable answer cost: its reported usage (checked) when the body was a
    JSON object, else the upper bounds (the request's bytes; ``max_tokens`` per choice, or
    the body's bytes)."""
    content = getattr(http, "content", b"")
    max_tokens = params.get("max_tokens", params.get("max_completion_tokens"))
    n = params.get("n", 1)
    output_bound = (max_tokens * (n if isinstance(n, int) and n > 0 else 1)
                    if isinstance(max_tokens, int) and max_tokens > 0
                    else len(content) if isinstance(content, bytes) else 0)
    if not isinstance(data, dict):  # no usage to read: the bounds
        return Usage(1, request_bytes(request), output_bound)
    return checked_usage(data.get("usage"), request_bytes(request), output_bound, where)


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
        decoding=dialect_of(params.get("response_format")),
    )


NOT_OBJECTS = (str, bytes, bytearray, int, float, list, tuple, type(None))
"""What a server's JSON may hold where an object belongs and is not one: such a value has
no fields (``getattr("text", "index")`` would find ``str.index``, a method, not a field)."""


_MAPPING, _SCALAR, MODEL = 0, 1, 2
"""Kinds of value where an object belongs: a mapping, not an object, any other object
(a client model: its fields are its attributes)."""
OBJECT_KINDS: dict[type, int] = {dict: _MAPPING}
"""Each type's kind, decided once (a stream reads three objects per chunk)."""
_MAX_KINDS = 1024


def _kind(value: Any) -> int:
    cls = type(value)
    kind = OBJECT_KINDS.get(cls)
    if kind is None:
        kind = _MAPPING if isinstance(value, Mapping) else \
            _SCALAR if isinstance(value, NOT_OBJECTS) else MODEL
        if len(OBJECT_KINDS) < _MAX_KINDS:
            OBJECT_KINDS[cls] = kind
    return kind


def is_object(value: Any) -> bool:
    """Whether ``value`` is a JSON object or a client model (not text, a number, a list)."""
    return _kind(value) != _SCALAR


def attribute(obj: Any, name: str) -> Any:
    """``obj[name]`` of a JSON object, ``obj.name`` of a client model (the ``openai``
    client builds its models without validating them, so the value may be of any type);
    None when absent or when ``obj`` is not an object."""
    kind = _kind(obj)
    if kind == _MAPPING:
        try:
            return obj.get(name)
        except Exception:  # a foreign mapping's get
            return None
    if kind == _SCALAR:
        return None
    try:
        return getattr(obj, name, None)
    except Exception:  # a foreign object's __getattr__
        return None


def fields(obj: Any, *names: str) -> tuple[Any, ...] | None:
    """``attribute(obj, name)`` for each name (None for ``obj`` that is not an object):
    one call per object, as a stream reads three objects per chunk."""
    kind = OBJECT_KINDS.get(type(obj))
    if kind is None:
        kind = _kind(obj)
    if kind == MODEL:
        getter = _GETTERS.get(names)
        if getter is None:
            getter = _GETTERS.setdefault(names, operator.attrgetter(*names))
        try:
            found = getter(obj)
            return found if len(names) > 1 else (found,)
        except Exception:  # a field absent, a foreign object's __getattr__: one by one
            pass
    elif kind == _SCALAR:
        return None
    return tuple([attribute(obj, name) for name in names])


_GETTERS: dict[tuple[str, ...], Callable[[Any], Any]] = {}


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
    cached = _count(attribute(attribute(usage, "prompt_tokens_details"), "cached_tokens"))
    return cached or 0


def checked_usage(usage: Any, input_bound: int, output_bound: int, where: str) -> Usage:
    """The usage a server reported, validated at the engine boundary. A token count that is
    missing stays 0 (servers that count nothing); one that is not a count (negative,
    fractional, NaN, infinite, not a number, above ``MAX_TOKEN_COUNT``) is replaced by
    the bound given (a token is at least one UTF-8 byte, so the bytes sent and received
    bound the tokens) and logged: a budget is never credited and never under-charged
    by a bad number, and no NaN or infinity reaches a meter or the statistics."""
    counts = []
    if usage is not None and not is_object(usage):  # "usage": "lots", [1, 2], 5
        log.warning("%s reported usage=%s, not an object of token counts; counted as the "
                    "upper bounds", where, described(usage))
        return Usage(1, input_bound, output_bound, 0)
    for name, bound in (("prompt_tokens", input_bound), ("completion_tokens", output_bound)):
        value = attribute(usage, name)
        count = _count(value)
        if value is not None and count is None:
            log.warning("%s reported usage.%s=%s, not a token count; counted as %d (an "
                        "upper bound)", where, name, described(value), bound)
            count = bound
        counts.append(count or 0)
    cached = min(_cached_tokens(usage), counts[0])
    return Usage(1, counts[0], counts[1], cached)


def _logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """A choice's ``logprobs.content`` (None when the server sent none)."""
    content = attribute(attribute(choice, "logprobs"), "content")
    return read_tokens(content) if content else None


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


def read_tokens(content: Any) -> tuple[TokenLogprob, ...] | None:
    """``logprobs.content`` items as ``TokenLogprob``s (None when one is malformed: a
    token that is not text, a log-probability that is not a finite number ≤ 0)."""
    try:
        if isinstance(content, str | bytes | Mapping):
            raise TypeError("not a list")
        return tuple(
            TokenLogprob(_token_text(attribute(item, "token")),
                         _logprob(attribute(item, "logprob")),
                         tuple((_token_text(attribute(alt, "token")),
                                _logprob(attribute(alt, "logprob")))
                               for alt in _listed(attribute(item, "top_logprobs"))))
            for item in content)
    except (AttributeError, TypeError, ValueError):
        return None  # a malformed entry: no logprobs rather than wrong ones


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    raise TypeError("not a list")


def dialect_of(payload: object) -> str | None:
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
