"""Reading and writing an engine cache file safely, between threads and processes.

A file is opened without blocking and read only when it is a regular file (a FIFO
would block forever); it is written to a temporary file in the same directory and
moved into place with ``os.replace`` (readers never see half a file), under an
advisory ``fcntl`` lock on a ``<file>.lock`` sidecar. Temporary files carry the
writer's pid, so those of writers that died mid-write can be removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hoare.engines.cache_format import CacheFileError, Slot, encode_entries, index_entries

if sys.platform != "win32":
    import fcntl  # no lock elsewhere: the atomic replace alone

STALE_TEMP_SECONDS = 3600.0
"""A temporary file older than this is removed even if its pid is alive (pid reuse)."""


def read_snapshot(path: Path) -> tuple[bytes, tuple[int, int, int, int] | None]:
    """The file's bytes (b"" when absent) and the signature of the very file they were
    read from (None when absent): one open, so the two always agree even while other
    processes replace the file. Opened without blocking and read only when
    it is a regular file: a FIFO would block forever, a device never end; any other
    failure to open (a name too long or not encodable, no permission, a symlink loop)
    is a CacheFileError naming the path, never a bare OSError."""
    shown = str(path)[:200]
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return b"", None
    except IsADirectoryError:
        raise CacheFileError(f"{shown} is a directory, not a hoare engine cache") from None
    except (OSError, UnicodeError, ValueError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise CacheFileError(f"{shown}: the cache file cannot be opened ({reason})") \
            from None
    try:
        status = os.fstat(fd)
        mode = status.st_mode
        if stat.S_ISDIR(mode):
            raise CacheFileError(f"{shown} is a directory, not a hoare engine cache")
        if not stat.S_ISREG(mode):
            raise CacheFileError(f"{shown} is not a regular file (a FIFO, socket or "
                                 "device), not a hoare engine cache")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as file:
        return file.read(), file_signature(status)


def read_bytes(path: Path) -> bytes:
    """The file's bytes (b"" when absent); see ``read_snapshot``."""
    return read_snapshot(path)[0]


def read_cache_file(path: Path) -> dict[Slot, dict[str, Any]]:
    """The entries of a cache file by ``(digest, index)``; ``{}`` if it does not exist.
    Each is checked: a malformed file raises ``CacheFileError`` naming it and the fault.
    Digests are recomputed from the stored requests, so hand edits take effect."""
    data = read_bytes(path)
    found: dict[Slot, dict[str, Any]] = {}
    spans = index_entries(data, path)
    for slot, span in spans.items():
        found[slot] = json.loads(data[span.start:span.start + span.length].decode("utf-8"))
    return found


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
    data = encode_entries(entries)
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
    if sys.platform == "win32":  # pragma: no cover
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def file_signature(stat: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a file from another (device, inode, size, mtime)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

