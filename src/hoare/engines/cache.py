"""``CachedEngine``: record engine answers to a file and replay them.

Modes (Delphyne's): ``off`` (pass-through, the file is never touched),
``read_write`` (answer from the file, ask the engine on a miss and record),
``create`` (record only; an answer already on file is an error, so a fresh
recording cannot silently mix with an old one) and ``replay`` (answer from the
file only: a miss raises ``CacheMiss`` and the engine is never called, so a
test suite cannot reach the network; the engine may be ``None``).

Keys. An entry is keyed by the request (``Request.key()``: messages, schema,
tools, and the options the answer was made with: the request's over the engine's
``default_options``, with the model actually asked, ``Options.model`` else the
engine's; the timeout is left out, since it does not shape the answer) and an
index ``n``: how many identical requests this ``CachedEngine`` had already
taken when this one came in. Sampling the same request three times thus
records, then replays, three different answers in order. The index is taken
when the request arrives, before the answer: a failed call uses up its index
in recording and in replay alike, so replays stay aligned.

The file is pretty, key-sorted JSON (one entry per answer, with the request
it answers) so it can be read and reviewed in a diff. Writes go to a temporary
file in the same directory and are moved into place with ``os.replace``
(readers never see half a file), under an advisory ``fcntl`` lock on a
``<file>.lock`` sidecar, re-reading and merging what other processes wrote
in the meantime instead of clobbering it.

Transport retries happen inside the wrapped engine, so they never reach the
cache; failed calls are not recorded.

Failures never lose a paid answer. A write that fails (read-only directory,
full disk, a file another process broke) logs a warning on ``hoare.engines``
and the answer is still returned (and kept in memory, so this engine replays
it and retries saving it with the next write). Answers that UTF-8 cannot
encode (lone surrogates) are written with ``\\u`` escapes instead of failing.
Temporary files carry the writer's pid (``.<file>.<pid>.<random>.tmp``); a
writer killed mid-write leaves one behind, and opening the cache removes the
temporary files of writers that are gone (or older than ``STALE_TEMP_SECONDS``).
When another process recorded a different answer under the same key and index,
the new answer takes the next free index instead of overwriting it.

A file that is not a cache (not UTF-8, not JSON, a wrong shape or type at any
depth, NaN, a count that is negative or above ``MAX_COUNT``, nesting too deep)
raises ``CacheFileError`` naming the file, the entry and the fault; an answer
that would not read back exactly (a NaN log-probability, a negative count) is
returned but not recorded, with a warning.

Memory. The file is not held in memory (see ``CachedEngine``): an index of byte
ranges is, with at most ``max_entries_in_memory`` parsed answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import pickle
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hoare.engines.base import (
    CacheMiss,
    Engine,
    Options,
    Request,
    Response,
    TokenLogprob,
    ToolCall,
    Usage,
    innermost,
    require_engine,
)
from hoare.errors import FatalEngineError

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX: atomic replace without a lock
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("hoare.engines")

STALE_TEMP_SECONDS = 3600.0
"""A temporary file older than this is removed even if its pid is alive (pid reuse)."""

CacheMode = Literal["off", "read_write", "create", "replay"]
_MODES = ("off", "read_write", "create", "replay")
FORMAT = "hoare-engine-cache"
VERSION = 1


MAX_ENTRIES_IN_MEMORY = 256
"""Replayed answers a ``CachedEngine`` keeps parsed (least recently used dropped first)."""

MAX_COUNT = 10**12
"""The largest token count or index a cache file may hold (a bigger one is not a count)."""


class CacheConflict(FatalEngineError):
    """``create`` mode found an answer already recorded for a request."""


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


def _effective_options(request: Request, engine: object) -> Options:
    """The options the answer was made with: the request's over the engine's defaults
    (``default_options`` of the engine under any wrappers), field by field."""
    given = request.options
    default = getattr(innermost(engine), "default_options", None) if engine is not None else None
    if not isinstance(default, Options):
        return given
    merged = {name: getattr(given, name) for name in given.__slots__}
    for name in given.__slots__:
        mine, theirs = merged[name], getattr(default, name)
        if name == "extra_body":
            merged[name] = {**(theirs or {}), **(mine or {})} or None
        elif name == "n":
            merged[name] = mine if mine != 1 else theirs
        elif mine is None:
            merged[name] = theirs
    return Options(**merged)


def cache_key(request: Request, engine: object = None, model: str | None = None) -> dict[str, Any]:
    """What identifies a request in the cache: ``Request.key()`` with the options the answer
    was made with (the request's over the engine's ``default_options``), the timeout left
    out (it does not shape the answer) and the model actually asked: ``Options.model``
    when set, else ``model``, else the engine's. Without any model (a replay with no
    engine) the key has none, and matches an entry recorded with any one model."""
    key = request.key()
    options = {k: v for k, v in _effective_options(request, engine).as_dict().items()
               if k not in ("timeout", "model")}
    used = request.options.model or model or _engine_model(engine)
    if used:
        options["model"] = used
    if request.watch is not None:  # a watched stream may be stopped early: another answer
        return {**key, "options": options, "watched": True}
    return {**key, "options": options}


def _engine_model(engine: object) -> str | None:
    try:
        value = getattr(engine, "model", None) if engine is not None else None
    except Exception:  # a foreign engine's property
        return None
    return value if isinstance(value, str) and value else None


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


def _entry(key: dict[str, Any], index: int, response: Response) -> dict[str, Any]:
    """The file's entry for an answer, checked to read back as the same answer (a NaN, a
    negative count or a non-text would make the whole file unreadable later)."""
    if not isinstance(response, Response) or not isinstance(response.texts, tuple | list):
        raise _Malformed(f"the answer's texts are {_kind(getattr(response, 'texts', None))}, "
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
                                         parse_constant=_no_constant)
    _check_entry(checked)
    return checked


def _no_constant(name: str) -> Any:
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


def _response(entry: dict[str, Any]) -> Response:
    return _check_entry(entry)[2]


def _summary(request: Request) -> str:
    last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    last = " ".join(last.split())
    text = last if len(last) <= 80 else last[:80] + "…"
    where = f"contract {request.contract!r}, " if request.contract else ""
    return f"{where}last user message {text!r}"


Slot = tuple[str, int]


@dataclass(frozen=True, slots=True)
class _Span:
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
    decoder = json.JSONDecoder(parse_constant=_no_constant)
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


def _index(data: bytes, path: Path) -> dict[Slot, _Span]:
    """The entries of a cache file's bytes by ``(digest, index)``, each checked, with its
    byte range. Digests are recomputed from the stored requests, so hand edits take
    effect."""
    spans: dict[Slot, _Span] = {}
    for number, (entry, start, length) in enumerate(_scan(data, path)):
        try:
            request, index, _ = _check_entry(entry)
            slot = (digest(request), index)
            loose = digest(_loose(request))
        except (_Malformed, ValueError, TypeError, RecursionError) as error:
            raise CacheFileError(f"{path} is not a hoare engine cache (entry {number}: "
                                 f"{str(error)[:200]}); fix or delete it, or point "
                                 "CachedEngine at another file") from None
        spans[slot] = _Span(start, length, loose)
    return spans


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (b"" when absent). Opened without blocking and read only when
    it is a regular file: a FIFO would block forever, a device never end; any other
    failure to open (a name too long or not encodable, no permission, a symlink loop)
    is a CacheFileError naming the path, never a bare OSError."""
    shown = str(path)[:200]
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return b""
    except IsADirectoryError:
        raise CacheFileError(f"{shown} is a directory, not a hoare engine cache") from None
    except (OSError, UnicodeError, ValueError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise CacheFileError(f"{shown}: the cache file cannot be opened ({reason})") \
            from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise CacheFileError(f"{shown} is a directory, not a hoare engine cache")
        if not stat.S_ISREG(mode):
            raise CacheFileError(f"{shown} is not a regular file (a FIFO, socket or "
                                 "device), not a hoare engine cache")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as file:
        return file.read()


def read_cache_file(path: Path) -> dict[Slot, dict[str, Any]]:
    """The entries of a cache file by ``(digest, index)``; ``{}`` if it does not exist.
    Each is checked: a malformed file raises ``CacheFileError`` naming it and the fault.
    Digests are recomputed from the stored requests, so hand edits take effect."""
    data = _read_bytes(path)
    found: dict[Slot, dict[str, Any]] = {}
    spans = _index(data, path)
    for slot, span in spans.items():
        found[slot] = json.loads(data[span.start:span.start + span.length].decode("utf-8"))
    return found


def _encode(entries: dict[Slot, dict[str, Any]]) -> bytes:
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


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temp_files(path: Path, *, now: float | None = None) -> list[Path]:
    """Remove the temporary files of writers of ``path`` that died mid-write (their pid
    is gone) or that are older than ``STALE_TEMP_SECONDS``; returns what was removed."""
    prefix = _temp_prefix(path)
    removed: list[Path] = []
    try:
        candidates = [p for p in path.parent.iterdir()
                      if p.name.startswith(prefix) and p.name.endswith(".tmp")]
    except OSError:
        return removed
    current = time.time() if now is None else now
    for candidate in candidates:
        pid_text = candidate.name[len(prefix):].split(".", 1)[0]
        try:
            old = current - candidate.stat().st_mtime > STALE_TEMP_SECONDS
        except OSError:
            continue
        if old or (pid_text.isdigit() and not _alive(int(pid_text))):
            with contextlib.suppress(OSError):
                candidate.unlink()
                removed.append(candidate)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else (or cannot tell: keep the file)
    return True


def write_cache_file(path: Path, entries: dict[Slot, dict[str, Any]]) -> bytes:
    """Write ``entries`` to ``path`` atomically (temporary file + ``os.replace``); returns
    the bytes written."""
    data = _encode(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_temp_prefix(path)}{os.getpid()}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return data


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``<path>.lock`` (between processes)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _signature(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


class CachedEngine:
    """``inner`` with its answers recorded in (and replayed from) the JSON file ``path``.

    ``hits`` and ``misses`` count lookups; a replayed ``Response`` has ``cached=True``
    and the usage of the recorded call. ``model``: the model to key requests by when
    there is no engine to ask (a replay with ``inner=None``); without it such a replay
    matches an entry recorded with any one model.

    Memory. The file is not held in memory: an index of it is (per answer, its key's
    digest, its index and its byte range in the file, about 200 bytes), plus at most
    ``max_entries_in_memory`` parsed answers (least recently used dropped first) and
    the answers not yet saved. A hit outside those reads its entry's bytes from the
    file; a file another process replaced is indexed again first. Each write reads and
    rewrites the whole file (merging what other processes wrote), so its memory is
    transient.
    """

    def __init__(self, inner: Engine | None, path: str | os.PathLike[str],
                 mode: CacheMode = "read_write", *, model: str | None = None,
                 max_entries_in_memory: int = MAX_ENTRIES_IN_MEMORY) -> None:
        if mode not in _MODES:
            raise ValueError(f"CachedEngine(mode={mode!r}): expected one of {', '.join(_MODES)}")
        if inner is None and mode != "replay":
            raise ValueError(f"CachedEngine(None, mode={mode!r}): only replay mode works without "
                             "an engine")
        if inner is not None:
            require_engine(inner, "CachedEngine")
        if isinstance(max_entries_in_memory, bool) or not isinstance(max_entries_in_memory, int) \
                or max_entries_in_memory < 0:
            raise ValueError(f"CachedEngine(max_entries_in_memory={max_entries_in_memory!r}): "
                             "expected a whole number ≥ 0")
        if model is not None and not (isinstance(model, str) and model):
            raise ValueError(f"CachedEngine(model={model!r}): expected a model name or None")
        self.inner = inner
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.max_entries_in_memory = max_entries_in_memory
        self._model = model
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._spans: dict[Slot, _Span] = {}
        self._loose_slots: dict[Slot, list[Slot]] = {}  # (model-free digest, index) -> slots
        self._signature: tuple[int, int, int, int] | None = None
        self._recent: OrderedDict[Slot, Response] = OrderedDict()
        if mode == "replay" and not self.path.exists():
            raise FileNotFoundError(f"replay cache {self.path} does not exist; record it first "
                                    "with CachedEngine(engine, path, mode='read_write')")
        self._unsaved: dict[Slot, dict[str, Any]] = {}
        if mode != "off":
            remove_stale_temp_files(self.path)
            with self._lock:
                self._reindex()

    def __repr__(self) -> str:
        return f"CachedEngine({self.inner!r}, {str(self.path)!r}, mode={self.mode!r})"

    @property
    def model(self) -> str | None:
        return self._model or _engine_model(self.inner)

    def __len__(self) -> int:
        """Answers on record."""
        with self._lock:
            return len(self._spans.keys() | self._unsaved.keys())

    def _reindex(self, data: bytes | None = None) -> None:
        """Index the file (or ``data``, just written to it). Call with the lock held."""
        if data is None:
            data = _read_bytes(self.path)
        try:
            signature: tuple[int, int, int, int] | None = _signature(os.stat(self.path))
        except OSError:
            signature = None
        self._spans = _index(data, self.path)
        self._signature = signature
        self._recent.clear()
        self._loose_slots = {}
        for slot, span in self._spans.items():
            self._loose_slots.setdefault((span.loose, slot[1]), []).append(slot)

    def _recorded(self, slot: Slot) -> Response | None:
        """The answer on record in ``slot`` (memory, else the file). Call with the lock held."""
        entry = self._unsaved.get(slot)
        if entry is not None:
            return _response(entry)
        response = self._recent.get(slot)
        if response is not None:
            self._recent.move_to_end(slot)
            return response
        if slot not in self._spans:
            return None
        response = self._read_entry(slot)
        if response is None:  # another process replaced the file: index it again
            self._reindex()
            if slot not in self._spans:
                return None
            response = self._read_entry(slot)
            if response is None:
                raise CacheFileError(f"{self.path} keeps changing while being read; retry")
        if self.max_entries_in_memory:
            self._recent[slot] = response
            while len(self._recent) > self.max_entries_in_memory:
                self._recent.popitem(last=False)
        return response

    def _read_entry(self, slot: Slot) -> Response | None:
        """The entry in ``slot`` read from its bytes in the file; None if the file is no
        longer the one indexed."""
        span = self._spans[slot]
        try:
            with open(self.path, "rb") as file:
                if _signature(os.fstat(file.fileno())) != self._signature:
                    return None
                file.seek(span.start)
                data = file.read(span.length)
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
            return _response(entry)
        except (_Malformed, ValueError, TypeError, RecursionError):
            return None  # changed under us without a new signature: index again

    def _resolve(self, request: Request) -> tuple[dict[str, Any], str, bool]:
        """The request's key, its digest, and whether the model is unknown (a replay with
        no engine and no model: the digest is then model-free)."""
        key = cache_key(request, self.inner, self._model)
        loose = "model" not in key["options"]
        return key, digest(key), loose

    def _lookup(self, request: Request) -> tuple[dict[str, Any], str, int, Response | None]:
        """Claim this request's index and find its recorded answer, enforcing the mode."""
        key, d, loose = self._resolve(request)
        with self._lock:
            index = self._seen.get(d, 0)
            self._seen[d] = index + 1
            slot = (d, index)
            ambiguous: list[str] = []
            if loose:
                matches = self._loose_slots.get((d, index), [])
                models = sorted({str(self._stored_model(s)) for s in matches})
                if len(matches) == 1:
                    slot = matches[0]
                elif len(matches) > 1:
                    ambiguous = models
            found = None if ambiguous else self._recorded(slot)
            if found is not None and self.mode != "create":
                self.hits += 1
                return key, d, index, found
            self.misses += 1
            recorded = sum(1 for (k, _), span in self._spans.items()
                           if k == d or (loose and span.loose == d))  # only on a miss
            recorded += sum(1 for (k, _) in self._unsaved.keys() - self._spans.keys() if k == d)
        if self.mode == "replay":
            if ambiguous:
                raise CacheMiss(f"replay cache {self.path} has answers #{index} for this request "
                                f"recorded with several models ({', '.join(ambiguous)}); pass "
                                "CachedEngine(None, path, mode='replay', model=...) to choose")
            raise CacheMiss(f"replay cache {self.path} has no answer #{index} for this request "
                            f"({_summary(request)}; {recorded} answer(s) on record for it). "
                            "Record it with CachedEngine(engine, path, mode='read_write'), or "
                            "check that the prompt, schema, options and model are unchanged.")
        if found is not None:
            raise CacheConflict(f"create-mode cache {self.path} already has answer #{index} for "
                                f"this request ({_summary(request)}); use mode='read_write' to "
                                "reuse it, or record into a new file.")
        return key, d, index, None

    def _stored_model(self, slot: Slot) -> object:
        response = self._recorded(slot)
        return response.model if response is not None else None

    def _store(self, key: dict[str, Any], d: str, index: int, response: Response) -> None:
        """Record an answer; never raises (a failed write is logged, the answer kept)."""
        try:
            entry = _entry(key, index, response)
        except Exception as error:  # an answer that is not data: keep going without it
            log.warning("cache %s: answer not recorded (%s)", self.path, _safe(error))
            return
        with self._lock:
            self._unsaved[(d, index)] = entry
            try:
                with file_lock(self.path):
                    on_file = read_cache_file(self.path)
                    for slot in sorted(self._unsaved):
                        mine = self._unsaved[slot]
                        theirs = on_file.get(slot)
                        if theirs is not None and theirs["response"] != mine["response"]:
                            # another process answered this slot: keep both answers
                            free = max(i for (k, i) in on_file if k == slot[0]) + 1
                            mine = dict(mine, index=free)
                            slot = (slot[0], free)
                        on_file[slot] = mine
                    written = write_cache_file(self.path, on_file)
                    del on_file
                    self._reindex(written)
            except Exception as error:  # never lose the answer for want of a disk
                log.warning("cache %s: could not save %d answer(s), kept in memory and "
                            "retried with the next write (%s)", self.path, len(self._unsaved),
                            _safe(error))
                return
            self._unsaved.clear()

    def complete(self, request: Request) -> Response:
        if self.mode == "off":
            assert self.inner is not None
            return self.inner.complete(request)
        key, d, index, hit = self._lookup(request)
        if hit is not None:
            return hit
        assert self.inner is not None
        response = self.inner.complete(request)
        self._store(key, d, index, response)
        return response

    async def acomplete(self, request: Request) -> Response:
        if self.mode == "off":
            assert self.inner is not None
            return await self.inner.acomplete(request)
        key, d, index, hit = self._lookup(request)
        if hit is not None:
            return hit
        assert self.inner is not None
        response = await self.inner.acomplete(request)
        await asyncio.to_thread(self._store, key, d, index, response)
        return response


def _safe(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"
    except Exception:
        return type(error).__name__
