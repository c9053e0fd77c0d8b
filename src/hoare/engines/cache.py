"""``CachedEngine``: record engine answers to a file and replay them.

Modes (Delphyne's): ``off`` (pass-through, the file is never touched),
``read_write`` (answer from the file, ask the engine on a miss and record),
``create`` (record only; an answer already on file is an error, so a fresh
recording cannot silently mix with an old one) and ``replay`` (answer from the
file only: a miss raises ``CacheMiss`` and the engine is never called, so a
test suite cannot reach the network; the engine may be ``None``).

Keys. An entry is keyed by the request (``Request.key()``: messages, schema,
options; the timeout is left out, since it does not shape the answer) and an
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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from ..errors import FatalEngineError
from .base import CacheMiss, Engine, Request, Response, TokenLogprob, ToolCall, Usage

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


class CacheConflict(FatalEngineError):
    """``create`` mode found an answer already recorded for a request."""


class CacheFileError(FatalEngineError, ValueError):
    """The cache file cannot be read as a cache."""


def cache_key(request: Request) -> dict[str, Any]:
    """What identifies a request in the cache: ``Request.key()`` without the timeout."""
    key = request.key()
    options = {k: v for k, v in key.get("options", {}).items() if k != "timeout"}
    return {**key, "options": options}


def digest(key: dict[str, Any]) -> str:
    """A stable hash of a cache key (canonical JSON, SHA-256)."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _entry(key: dict[str, Any], index: int, response: Response) -> dict[str, Any]:
    return {
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


def _response(entry: dict[str, Any]) -> Response:
    data = entry["response"]
    usage = data.get("usage") or {}
    return Response(
        texts=tuple(data["texts"]),
        finish_reasons=tuple(data.get("finish_reasons") or ()),
        usage=Usage(int(usage.get("requests", 1)), int(usage.get("input_tokens", 0)),
                    int(usage.get("output_tokens", 0)),
                    int(usage.get("cached_input_tokens", 0))),
        model=str(data.get("model", "")),
        cached=True,
        tool_calls=tuple(ToolCall(str(c.get("id", "")), str(c["function"]["name"]),
                                  str(c["function"].get("arguments", "")))
                         for c in data.get("tool_calls") or ()),
        stopped_early=data.get("stopped_early"),
        logprobs=tuple(None if lp is None else
                       tuple(TokenLogprob(str(t), float(v), tuple((str(a), float(b))
                                                                   for a, b in top))
                             for t, v, top in lp)
                       for lp in data.get("logprobs") or ()),
    )


def _summary(request: Request) -> str:
    last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    last = " ".join(last.split())
    text = last if len(last) <= 80 else last[:80] + "…"
    where = f"contract {request.contract!r}, " if request.contract else ""
    return f"{where}last user message {text!r}"


def read_cache_file(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The entries of a cache file by ``(digest, index)``; ``{}`` if it does not exist.
    Digests are recomputed from the stored requests, so hand edits take effect."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
        entries = data["entries"] if isinstance(data, dict) else data
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for entry in entries:
            found[(digest(entry["request"]), int(entry["index"]))] = entry
            _response(entry)  # validates the shape
        return found
    except (ValueError, KeyError, TypeError) as error:
        raise CacheFileError(f"{path} is not a hoare engine cache ({error}); fix or delete "
                             "it, or point CachedEngine at another file") from error


def _encode(entries: dict[tuple[str, int], dict[str, Any]]) -> bytes:
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


def write_cache_file(path: Path, entries: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Write ``entries`` to ``path`` atomically (temporary file + ``os.replace``)."""
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


class CachedEngine:
    """``inner`` with its answers recorded in (and replayed from) the JSON file ``path``.

    ``hits`` and ``misses`` count lookups; a replayed ``Response`` has ``cached=True``
    and the usage of the recorded call.
    """

    def __init__(self, inner: Engine | None, path: str | os.PathLike[str],
                 mode: CacheMode = "read_write") -> None:
        if mode not in _MODES:
            raise ValueError(f"CachedEngine(mode={mode!r}): expected one of {', '.join(_MODES)}")
        if inner is None and mode != "replay":
            raise ValueError(f"CachedEngine(None, mode={mode!r}): only replay mode works without "
                             "an engine")
        self.inner = inner
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._entries: dict[tuple[str, int], dict[str, Any]] = {}
        if mode == "replay" and not self.path.exists():
            raise FileNotFoundError(f"replay cache {self.path} does not exist; record it first "
                                    "with CachedEngine(engine, path, mode='read_write')")
        self._unsaved: set[tuple[str, int]] = set()
        if mode != "off":
            remove_stale_temp_files(self.path)
            self._entries = read_cache_file(self.path)

    def __repr__(self) -> str:
        return f"CachedEngine({self.inner!r}, {str(self.path)!r}, mode={self.mode!r})"

    @property
    def model(self) -> str | None:
        model = getattr(self.inner, "model", None)
        return model if isinstance(model, str) else None

    def __len__(self) -> int:
        """Answers on record."""
        with self._lock:
            return len(self._entries)

    def _lookup(self, request: Request) -> tuple[dict[str, Any], str, int, Response | None]:
        """Claim this request's index and find its recorded answer, enforcing the mode."""
        key = cache_key(request)
        d = digest(key)
        with self._lock:
            index = self._seen.get(d, 0)
            self._seen[d] = index + 1
            entry = self._entries.get((d, index))
            if entry is not None and self.mode != "create":
                self.hits += 1
                return key, d, index, _response(entry)
            self.misses += 1
            recorded = sum(1 for (k, _) in self._entries if k == d)
        if self.mode == "replay":
            raise CacheMiss(f"replay cache {self.path} has no answer #{index} for this request "
                            f"({_summary(request)}; {recorded} answer(s) on record for it). "
                            "Record it with CachedEngine(engine, path, mode='read_write'), or "
                            "check that the prompt, schema and options are unchanged.")
        if entry is not None:
            raise CacheConflict(f"create-mode cache {self.path} already has answer #{index} for "
                                f"this request ({_summary(request)}); use mode='read_write' to "
                                "reuse it, or record into a new file.")
        return key, d, index, None

    def _store(self, key: dict[str, Any], d: str, index: int, response: Response) -> None:
        """Record an answer; never raises (a failed write is logged, the answer kept)."""
        try:
            entry = _entry(key, index, response)
        except Exception as error:  # an answer that is not data: keep going without it
            log.warning("cache %s: answer not recorded (%s)", self.path, _safe(error))
            return
        with self._lock:
            self._entries[(d, index)] = entry
            self._unsaved.add((d, index))
            try:
                with file_lock(self.path):
                    on_file = read_cache_file(self.path)
                    for slot in sorted(self._unsaved):
                        mine = self._entries[slot]
                        theirs = on_file.get(slot)
                        if theirs is not None and theirs["response"] != mine["response"]:
                            # another process answered this slot: keep both answers
                            free = max(i for (k, i) in on_file if k == slot[0]) + 1
                            mine = dict(mine, index=free)
                            slot = (slot[0], free)
                        on_file[slot] = mine
                    write_cache_file(self.path, on_file)
            except Exception as error:  # never lose the answer for want of a disk
                log.warning("cache %s: could not save %d answer(s), kept in memory and "
                            "retried with the next write (%s)", self.path, len(self._unsaved),
                            _safe(error))
                return
            for slot, value in on_file.items():
                self._entries.setdefault(slot, value)
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
