"""The engine cache's file format: one entry per recorded answer, and the checked
reading of a whole file's bytes.

An entry holds the request it answers (the cache key), its index among identical
requests and the answer. Every field is checked on the way in (``make_entry``: an
answer that would not read back exactly is refused) and on the way out
(``index_entries``: a file that is not a cache raises ``CacheFileError`` naming the
entry and the fault). The top level is read by hand so that each entry's byte range
is known: ``CachedEngine`` keeps an index of ranges, not the parsed file.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoare.engines.base import Response, TokenLogprob, ToolCall, Usage
from hoare.errors import FatalEngineError

FORMAT = "hoare-engine-cache"
VERSION = 1

MAX_COUNT = 10**12
"""The largest token count or index a cache file may hold (a bigger one is not a count)."""


class CacheFileError(FatalEngineError, ValueError):
    """The cache file cannot be read as a cache."""


class _Malformed(ValueError):
    """What is wrong with one part of a cache file (wrapped in ``CacheFileError``)."""

    def __reduce__(self) -> tuple[object, ...]:
        """Type, message and the attributes that can be pickled (others are dropped)."""
        state = {}
        for name, value in vars(self).items():
            try:
                pickle.dumps(value)
            except Exception:
                continue
            state[name] = value
        return (type(self), tuple(str(a) for a in self.args), state)


def _loose(request: dict[str, Any]) -> dict[str, Any]:
    """A stored request without its model (what a replay with no known model matches)."""
    options = request.get("options")
    if isinstance(options, dict) and "model" in options:
        return {**request, "options": {k: v for k, v in options.items() if k != "model"}}
    return request


def digest(key: dict[str, Any]) -> str:
    """A stable hash of a cache key (canonical JSON, SHA-256)."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_entry(key: dict[str, Any], index: int, response: Response) -> dict[str, Any]:
    """The file's entry for an answer, checked to read back as the same answer (a NaN, a
    negative count or a non-text would make the whole file unreadable later)."""
    if not isinstance(response, Response) or not isinstance(response.texts, tuple | list):
        shown = response.texts if isinstance(response, Response) else response
        raise _Malformed(f"the answer's texts are {_kind(shown)}, "
                         "not a tuple of str")
    entry = {
        "key": digest(key)[:16],
        "index": index,
        "request": key,
        "response": {
            "texts": list(response.texts),
            "finish_reasons": list(response.finish_reasons),
            "usage": response.usage.as_dict(),
            "model": response.model,
            **({"tool_calls": [c.as_dict() for c in response.tool_calls]}
               if response.tool_calls else {}),
            **({"stopped_early": response.stopped_early}
               if response.stopped_early is not None else {}),
            **({"logprobs": [None if lp is None else
                             [[t.token, t.logprob, [list(a) for a in t.top]] for t in lp]
                             for lp in response.logprobs]}
               if response.logprobs else {}),
        },
    }
    # a dict dumped and loaded is a dict
    checked: dict[str, Any] = json.loads(json.dumps(entry, allow_nan=False),
                                         parse_constant=no_constant)
    _check_entry(checked)
    return checked


def no_constant(name: str) -> Any:
    """``parse_constant`` of the file's JSON: NaN and the infinities are not numbers."""
    raise _Malformed(f"{name} is not a JSON number")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{what} must be text, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Malformed(f"{what} must be a list, not {_kind(value)}")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} must be an object, not {_kind(value)}")
    return value


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        shown = repr(value) if isinstance(value, int | float) and len(repr(value)) < 40 \
            else _kind(value)
        raise _Malformed(f"{what} must be a whole number in 0..{MAX_COUNT}, not {shown}")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(float(value)):
        raise _Malformed(f"{what} must be a finite number, not {_kind(value)}")
    return float(value)


def _pair(value: Any, what: str) -> tuple[str, float]:
    items = _list(value, what)
    if len(items) != 2:
        raise _Malformed(f"{what} must be [token, logprob]")
    return _text(items[0], f"{what}[0]"), _number(items[1], f"{what}[1]")


def _check_entry(entry: Any) -> tuple[dict[str, Any], int, Response]:
    """An entry's request, index and answer, every field checked (``_Malformed`` names the
    first one that is wrong)."""
    entry = _object(entry, "the entry")
    request = _object(entry.get("request"), "'request'")
    index = _count(entry.get("index"), "'index'")
    data = _object(entry.get("response"), "'response'")
    texts = tuple(_text(t, f"'response.texts[{i}]'")
                  for i, t in enumerate(_list(data.get("texts"), "'response.texts'")))
    reasons = tuple(None if r is None else _text(r, f"'response.finish_reasons[{i}]'")
                    for i, r in enumerate(_list(data.get("finish_reasons", []),
                                                "'response.finish_reasons'")))
    usage = _object(data.get("usage", {}), "'response.usage'")
    counts = [_count(usage.get(name, default), f"'response.usage.{name}'")
              for name, default in (("requests", 1), ("input_tokens", 0), ("output_tokens", 0),
                                    ("cached_input_tokens", 0))]
    if counts[3] > counts[1]:
        raise _Malformed("'response.usage.cached_input_tokens' exceeds input_tokens")
    calls = []
    for i, call in enumerate(_list(data.get("tool_calls", []), "'response.tool_calls'")):
        where = f"'response.tool_calls[{i}]'"
        call = _object(call, where)
        function = _object(call.get("function"), f"{where}.function")
        calls.append(ToolCall(_text(call.get("id", ""), f"{where}.id"),
                              _text(function.get("name"), f"{where}.function.name"),
                              _text(function.get("arguments", ""),
                                    f"{where}.function.arguments")))
    stopped = data.get("stopped_early")
    if stopped is not None:
        _text(stopped, "'response.stopped_early'")
    logprobs: list[tuple[TokenLogprob, ...] | None] = []
    for i, tokens in enumerate(_list(data.get("logprobs", []), "'response.logprobs'")):
        if tokens is None:
            logprobs.append(None)
            continue
        read = []
        for j, item in enumerate(_list(tokens, f"'response.logprobs[{i}]'")):
            where = f"'response.logprobs[{i}][{j}]'"
            item = _list(item, where)
            if len(item) != 3:
                raise _Malformed(f"{where} must be [token, logprob, alternatives]")
            token, value = _pair(item[:2], where)
            top = tuple(_pair(a, f"{where}[2][{k}]")
                        for k, a in enumerate(_list(item[2], f"{where}[2]")))
            read.append(TokenLogprob(token, value, top))
        logprobs.append(tuple(read))
    model = data.get("model", "")
    response = Response(texts=texts, finish_reasons=reasons, usage=Usage(*counts),
                        model=_text(model, "'response.model'"), cached=True,
                        tool_calls=tuple(calls), stopped_early=stopped,
                        logprobs=tuple(logprobs))
    return request, index, response


def entry_response(entry: dict[str, Any]) -> Response:
    """The answer an entry holds, every field checked (``_Malformed`` otherwise)."""
    return _check_entry(entry)[2]


Slot = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Span:
    """Where one entry lies in the file (bytes), and its model-free digest."""

    start: int
    length: int
    loose: str


_WHITESPACE = " \t\r\n"


def _scan(data: bytes, path: Path) -> list[tuple[dict[str, Any], int, int]]:
    """The entries of a cache file's bytes, each with its byte range: the top level is read
    by hand (``raw_decode`` one value at a time) so each entry's range is known."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CacheFileError(f"{path} is not a hoare engine cache (not UTF-8 text: invalid byte "
                             f"at offset {error.start}); fix or delete it, or point "
                             "CachedEngine at another file") from None
    decoder = json.JSONDecoder(parse_constant=no_constant)
    found: list[tuple[dict[str, Any], int, int]] = []
    position = 0
    byte_position = 0

    def skip(i: int) -> int:
        while i < len(text) and (text[i] in _WHITESPACE or (i == 0 and text[i] == "\ufeff")):
            i += 1
        return i

    def value(i: int) -> tuple[Any, int]:
        return decoder.raw_decode(text, i)

    def byte_offset(i: int) -> int:
        nonlocal position, byte_position
        byte_position += len(text[position:i].encode("utf-8"))
        position = i
        return byte_position

    def entries(i: int) -> int:
        if i >= len(text) or text[i] != "[":
            raise _Malformed("'entries' must be a list")
        i = skip(i + 1)
        if i < len(text) and text[i] == "]":
            return i + 1
        while True:
            item, end = value(i)
            start_byte = byte_offset(i)
            found.append((item, start_byte, byte_offset(end) - start_byte))
            i = skip(end)
            if i < len(text) and text[i] == ",":
                i = skip(i + 1)
                if i < len(text) and text[i] == "]":
                    raise _Malformed(f"a trailing ',' at character {i}")
                continue
            if i < len(text) and text[i] == "]":
                return i + 1
            raise _Malformed(f"expected ',' or ']' at character {i}")

    try:
        i = skip(0)
        if i >= len(text):
            return []
        if text[i] == "[":
            i = entries(i)
        elif text[i] == "{":
            i, seen = skip(i + 1), False
            while i < len(text) and text[i] != "}":
                name, i = value(i)
                if not isinstance(name, str):
                    raise _Malformed("an object key must be text")
                i = skip(i)
                if i >= len(text) or text[i] != ":":
                    raise _Malformed(f"expected ':' at character {i}")
                i = skip(i + 1)
                if name == "entries":
                    i, seen = entries(i), True
                else:
                    member, i = value(i)
                    if name == "format" and member != FORMAT:
                        raise _Malformed(f"'format' is {member!r}, not {FORMAT!r}")
                    if name == "version" and (type(member) is not int or member != VERSION):
                        raise _Malformed(f"'version' {member!r} is not {VERSION} (written by "
                                         "another hoare version?)")
                i = skip(i)
                if i < len(text) and text[i] == ",":
                    i = skip(i + 1)
                    if i < len(text) and text[i] == "}":
                        raise _Malformed(f"a trailing ',' at character {i}")
                elif i < len(text) and text[i] != "}":
                    raise _Malformed(f"expected ',' or '}}' at character {i}")
            if i >= len(text):
                raise _Malformed("the top-level object is not closed")
            i += 1
            if not seen:
                raise _Malformed("it has no 'entries' list")
        else:
            raise _Malformed("the top level must be an object with 'entries'")
        if skip(i) != len(text):
            raise _Malformed(f"extra data after the top level at character {skip(i)}")
    except (_Malformed, ValueError, RecursionError) as error:
        reason = "nested too deep" if isinstance(error, RecursionError) else str(error)[:200]
        raise CacheFileError(f"{path} is not a hoare engine cache ({reason}); fix or delete "
                             "it, or point CachedEngine at another file") from None
    return found


def index_entries(data: bytes, path: Path) -> dict[Slot, Span]:
    """The entries of a cache file's bytes by ``(digest, index)``, each checked, with its
    byte range. Digests are recomputed from the stored requests, so hand edits take
    effect."""
    spans: dict[Slot, Span] = {}
    for number, (entry, start, length) in enumerate(_scan(data, path)):
        try:
            request, index, _ = _check_entry(entry)
            slot = (digest(request), index)
            loose = digest(_loose(request))
        except (_Malformed, ValueError, TypeError, RecursionError) as error:
            raise CacheFileError(f"{path} is not a hoare engine cache (entry {number}: "
                                 f"{str(error)[:200]}); fix or delete it, or point "
                                 "CachedEngine at another file") from None
        spans[slot] = Span(start, length, loose)
    return spans


def encode_entries(entries: dict[Slot, dict[str, Any]]) -> bytes:
    """The file's bytes: readable UTF-8, or ``\\u`` escapes when a text holds code points
    UTF-8 cannot encode (lone surrogates), so such an answer is still recorded exactly."""
    document = {"format": FORMAT, "version": VERSION,
                "entries": [entries[k] for k in sorted(entries)]}
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True)
                + "\n").encode("ascii")
