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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from ..errors import FatalEngineError
from .base import CacheMiss, Engine, Request, Response, Usage

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX: atomic replace without a lock
    fcntl = None  # type: ignore[assignment]

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
        },
    }


def _response(entry: dict[str, Any]) -> Response:
    data = entry["response"]
    usage = data.get("usage") or {}
    return Response(
        texts=tuple(data["texts"]),
        finish_reasons=tuple(data.get("finish_reasons") or ()),
        usage=Usage(int(usage.get("requests", 1)), int(usage.get("input_tokens", 0)),
                    int(usage.get("output_tokens", 0))),
        model=str(data.get("model", "")),
        cached=True,
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


def write_cache_file(path: Path, entries: dict[tuple[str, int], dict[str, Any]]) -> None:
    """Write ``entries`` to ``path`` atomically (temporary file + ``os.replace``)."""
    ordered = [entries[k] for k in sorted(entries)]
    text = json.dumps({"format": FORMAT, "version": VERSION, "entries": ordered},
                      indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
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
        if mode != "off":
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
        entry = _entry(key, index, response)
        with self._lock:
            self._entries[(d, index)] = entry
            with file_lock(self.path):
                merged = read_cache_file(self.path)
                merged.update(self._entries)
                write_cache_file(self.path, merged)
                self._entries = merged

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
