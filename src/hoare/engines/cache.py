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
import json
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal

from hoare.engines.base import (
    CacheMiss,
    Engine,
    Options,
    Request,
    Response,
    innermost,
    require_engine,
)
from hoare.engines.cache_files import (
    file_lock,
    file_signature,
    read_cache_file,
    read_snapshot,
    remove_stale_temp_files,
    write_cache_file,
)
from hoare.engines.cache_format import (
    CacheFileError,
    Slot,
    Span,
    digest,
    entry_response,
    index_entries,
    make_entry,
    no_constant,
)
from hoare.errors import FatalEngineError
from hoare.forking import hold_across_fork

log = logging.getLogger("hoare.engines")

CacheMode = Literal["off", "read_write", "create", "replay"]
_MODES = ("off", "read_write", "create", "replay")


MAX_ENTRIES_IN_MEMORY = 256
"""Replayed answers a ``CachedEngine`` keeps parsed (least recently used dropped first)."""


class CacheConflict(FatalEngineError):
    """``create`` mode found an answer already recorded for a request."""



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


def _summary(request: Request) -> str:
    last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    last = " ".join(last.split())
    text = last if len(last) <= 80 else last[:80] + "…"
    where = f"contract {request.contract!r}, " if request.contract else ""
    return f"{where}last user message {text!r}"


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
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)
        self._seen: dict[str, int] = {}
        self._spans: dict[Slot, Span] = {}
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

    def _reindex(self, data: bytes | None = None) -> bytes:
        """Index the file (or ``data``, just written to it) and return the bytes indexed.
        Call with the lock held. The file is read and its signature taken through one
        open (``read_snapshot``): another process replacing it in between cannot pair
        one version's bytes with another's signature."""
        signature: tuple[int, int, int, int] | None
        if data is None:
            data, signature = read_snapshot(self.path)
        else:
            try:
                signature = file_signature(os.stat(self.path))
            except OSError:
                signature = None
        self._spans = index_entries(data, self.path)
        self._signature = signature
        self._recent.clear()
        self._loose_slots = {}
        for slot, span in self._spans.items():
            self._loose_slots.setdefault((span.loose, slot[1]), []).append(slot)
        return data

    def _recorded(self, slot: Slot) -> Response | None:
        """The answer on record in ``slot`` (memory, else the file). Call with the lock held."""
        entry = self._unsaved.get(slot)
        if entry is not None:
            return entry_response(entry)
        response = self._recent.get(slot)
        if response is not None:
            self._recent.move_to_end(slot)
            return response
        if slot not in self._spans:
            return None
        response = self._read_entry(slot)
        if response is None:  # another process replaced the file: index it again
            data = self._reindex()
            span = self._spans.get(slot)
            if span is None:
                return None
            # read from the bytes just indexed, not from the file again: however often
            # other processes replace it, this is one consistent version of it
            response = decode_entry(data[span.start:span.start + span.length])
            if response is None:
                raise CacheFileError(f"{self.path}: the entry at bytes {span.start}-"
                                     f"{span.start + span.length} is not valid JSON")
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
                if file_signature(os.fstat(file.fileno())) != self._signature:
                    return None
                file.seek(span.start)
                data = file.read(span.length)
        except FileNotFoundError:
            return None
        return decode_entry(data)  # None: changed under us without a new signature

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
            entry = make_entry(key, index, response)
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


def decode_entry(data: bytes) -> Response | None:
    """One entry's bytes as the answer it records; None when they are not a valid entry."""
    try:
        entry = json.loads(data.decode("utf-8"), parse_constant=no_constant)
        return entry_response(entry)
    except (ValueError, TypeError, RecursionError):  # a malformed entry is a ValueError
        return None
