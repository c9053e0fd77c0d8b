"""Success statistics that outlive the process: every contracted call (and every
agent run and tool call) recorded in a store (``hoare.configure(stats=...)``,
``$HOARE_STATS`` or ``[tool.hoare] stats``; off by default).

The store is a SQLite file (stdlib ``sqlite3``, WAL mode), or, for a larger
deployment, any SQLAlchemy URL (``postgresql+psycopg://...``; ``pip install
'hoare[sql]'``). A ``sqlite:///`` URL is the SQLite file, without SQLAlchemy.

Writes never block or fail a call. A call appends one record to a bounded queue
(``record``: one atomic append, no lock, no I/O); a daemon thread writes batches of
up to 256 records, one transaction and one ``executemany`` each, with a busy timeout,
so several processes can write one store. A full queue drops the record and counts it
(``dropped``); a store that cannot be opened (a read-only path, a directory, a server
that refuses) logs one WARNING and its records are dropped and counted, never raised;
a batch that cannot be written is dropped and counted, and the next batch tries
again. ``flush`` waits until every queued record is written (``hoare.flush_stats()``,
also run at interpreter exit). A ``kill -9`` loses at most the records not yet
committed; SQLite's journal keeps the file whole. ``retention_days`` deletes older
records when the store opens and every hour after. A forked child opens its own
store on its first record (the parent's writer thread does not survive a fork). At
exit, a WARNING says how many records were dropped, if any.

Schema versions: 1, the first; 2 adds ``kind`` (``contract``, ``tool`` or ``agent``;
older rows are contracts); 3 adds ``provider_faults`` (older rows: 0). Opening an
older store migrates it in one transaction; a newer one is refused (``upgrade
hoare``), never written.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from .errors import HoareError

__all__ = [
    "SCHEMA_VERSION",
    "CallRecord",
    "StatsStore",
    "StoreError",
    "flush_all",
    "is_url",
    "open_store",
    "query",
    "shown_target",
]

SCHEMA_VERSION = 3
BATCH = 256
QUEUE_SIZE = 10_000
POLL = 0.05  # seconds between the writer's looks at the queue
PRUNE_EVERY = 3600.0  # seconds between two deletions of calls older than the retention

_log = logging.getLogger("hoare.stats")

COLUMNS = ("ts", "contract", "contract_hash", "label", "success", "first_attempt",
           "attempts", "remedies", "preflight", "input_tokens", "output_tokens", "cost",
           "latency_ms", "engine", "model", "trials", "kind", "provider_faults")
# ``trials``: the call's predicate-family trials as JSON, [[family, passed], ...]: one
# row per call keeps a batch to one executemany. No index: inserts stay cheap, and
# ``hoare stats`` reads the calls it reports on anyway.
_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    contract TEXT NOT NULL,
    contract_hash TEXT NOT NULL,
    label TEXT NOT NULL,
    success INTEGER NOT NULL,
    first_attempt INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    remedies INTEGER NOT NULL,
    preflight TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost REAL,
    latency_ms REAL NOT NULL,
    engine TEXT,
    model TEXT,
    trials TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'contract',
    provider_faults INTEGER NOT NULL DEFAULT 0
);
"""
# Each step brings a store from version ``n`` to ``n + 1``; run in one transaction.
_MIGRATIONS = {1: "ALTER TABLE calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'contract'",
               2: "ALTER TABLE calls ADD COLUMN provider_faults INTEGER NOT NULL DEFAULT 0"}


class StoreError(HoareError):
    """A store that cannot be read: no such file, not a hoare store, a newer schema,
    a server that refuses, SQLAlchemy missing for a URL."""


class CallRecord(NamedTuple):
    """One contracted call, as stored (a tuple: cheap to make on the calling thread)."""

    ts: float
    contract: str
    contract_hash: str
    label: str
    success: bool
    first_attempt: bool
    attempts: int
    remedies: int
    preflight: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    latency_ms: float
    engine: str | None
    model: str | None
    trials: tuple[tuple[str, bool], ...] = ()
    kind: str = "contract"
    # failed post-conditions that the schema the provider decoded with enforces
    provider_faults: int = 0


def is_url(target: str) -> bool:
    """A SQLAlchemy URL (``dialect[+driver]://...``), not a file path."""
    return "://" in target and not target.startswith("sqlite://")


def _sqlite_path(target: str) -> str:
    """The file of a path or a ``sqlite:///path`` URL."""
    return target[len("sqlite:///"):] if target.startswith("sqlite:///") else target


class _Backend(Protocol):
    def write(self, rows: Sequence[tuple[Any, ...]]) -> None: ...
    def prune(self, cutoff: float) -> None: ...
    def close(self) -> None: ...


class _SqliteBackend:
    """The embedded store: one connection, owned by the writing thread."""

    def __init__(self, path: str) -> None:
        self.connection = sqlite3.connect(path, timeout=30, isolation_level=None,
                                          check_same_thread=False)
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            _migrate_sqlite(self.connection)
        except BaseException:
            self.connection.close()
            raise

    def prune(self, cutoff: float) -> None:
        self.connection.execute("DELETE FROM calls WHERE ts < ?", (cutoff,))

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """One transaction; the rows in multi-row INSERTs of power-of-two sizes (one
        statement each, so a few prepared statements serve every batch). One statement
        per chunk, not per row: ``sqlite3`` lets go of the GIL at each statement step,
        and a step per row would hand the GIL back and forth with the calling threads
        hundreds of times a batch (measured: +2 µs per call on the calling thread)."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            start = 0
            while start < len(rows):
                size = min(_CHUNK, 1 << ((len(rows) - start).bit_length() - 1))
                chunk = rows[start:start + size]
                self.connection.execute(_insert(size), [v for row in chunk for v in row])
                start += size
            self.connection.execute("COMMIT")
        except BaseException:
            try:
                self.connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise

    def close(self) -> None:
        self.connection.close()


# Rows per INSERT: SQLite before 3.32 allows 999 bound values in a statement
_CHUNK = 256 if sqlite3.sqlite_version_info >= (3, 32) else 32
_INSERTS: dict[int, str] = {}


def _insert(rows: int) -> str:
    """The INSERT of ``rows`` rows (made once per size)."""
    text = _INSERTS.get(rows)
    if text is None:
        one = f"({', '.join('?' * len(COLUMNS))})"
        text = _INSERTS[rows] = (f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES "
                                 + ", ".join([one] * rows))
    return text


def _migrate_sqlite(connection: sqlite3.Connection) -> None:
    """Create the schema, or bring an older one up to ``SCHEMA_VERSION``."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        found = None
        if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            found = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(found[0]) if found else SCHEMA_VERSION
        _refuse_newer(version)
        for statement in _SQLITE_SCHEMA.strip().split(";"):
            if statement.strip() and version == SCHEMA_VERSION:
                connection.execute(statement)
        for step in range(version, SCHEMA_VERSION):
            connection.execute(_MIGRATIONS[step])
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                           "('schema_version', ?)", (str(SCHEMA_VERSION),))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _refuse_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(f"schema version {version} is newer than this hoare's "
                         f"({SCHEMA_VERSION}): upgrade hoare")


class StatsStore:
    """A store (a SQLite file or a SQLAlchemy URL) and the thread that writes to it."""

    def __init__(self, target: str | Path, retention_days: float | None = None) -> None:
        self.path = str(target)
        self.retention_days = retention_days
        self.dropped = 0
        self.written = 0
        self.broken: str | None = None  # why the store could not be opened
        self.last_error: str | None = None  # the latest batch that could not be written
        # A deque, not a queue.Queue: an append is one atomic C call on the calling
        # thread (no lock, no wake-up); the writer looks every POLL seconds, or at once
        # when ``flush`` asks.
        self._pending: deque[tuple[Any, ...]] = deque()
        self._busy = False  # a batch is taken and not yet written
        self._prune_soon = False  # the retention changed: prune at the next look
        self._wake = threading.Event()
        self._stop = False
        self._lock = threading.Lock()
        self._drained = threading.Condition()  # notified when the queue is written
        self._thread = threading.Thread(target=self._run, name="hoare-stats", daemon=True)
        self._thread.start()

    # -- the calling side ------------------------------------------------------------
    def record(self, item: CallRecord | tuple[Any, ...]) -> None:
        """Queue ``item`` (a ``CallRecord``, or a plain tuple of its fields in order:
        cheaper to make on a hot path); never blocks, never raises (a full queue drops
        it). Only values are queued, never the call's objects: a queue of live outcomes
        would be traversed by every garbage collection (measured: +20 µs per call)."""
        if self.broken is None and len(self._pending) < QUEUE_SIZE:
            self._pending.append(item)
            return
        with self._lock:
            self.dropped += 1

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._drained:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._wake.set()
                self._drained.wait(min(left, POLL))
        return True

    def close(self) -> None:
        self.flush()
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=5)

    # -- the writing thread ----------------------------------------------------------
    def _run(self) -> None:
        self._busy = True  # until the store is open: flush() waits for the verdict
        backend = self._open()
        pruned = self._prune(backend)
        self._busy = False
        while True:
            if backend is not None and (self._prune_soon
                                        or time.monotonic() - pruned > PRUNE_EVERY):
                self._prune_soon = False
                pruned = self._prune(backend)
            if not self._pending:
                if self._stop:
                    break
                self._wake.wait(POLL)
                self._wake.clear()
                continue
            self._busy = True
            batch = []
            while self._pending and len(batch) < BATCH:
                batch.append(self._pending.popleft())
            if backend is not None:
                self._write(backend, batch)
            else:
                with self._lock:
                    self.dropped += len(batch)
            self._busy = False
            if not self._pending:
                with self._drained:
                    self._drained.notify_all()
        if backend is not None:
            backend.close()

    def _prune(self, backend: _Backend | None) -> float:
        """Delete the calls older than ``retention_days`` (when set); return when."""
        days = self.retention_days
        if backend is not None and days is not None:
            try:
                backend.prune(time.time() - days * 86_400)
            except Exception as error:  # retention must not stop the recording
                _log.warning("hoare stats: cannot delete old calls from %s: %s",
                             shown_target(self.path), error)
        return time.monotonic()

    def _open(self) -> _Backend | None:
        try:
            if is_url(self.path):
                from .stats_sql import SqlAlchemyBackend

                return SqlAlchemyBackend(self.path)
            return _SqliteBackend(_sqlite_path(self.path))
        except Exception as error:  # any driver's error: the calls go on unrecorded
            self.broken = f"cannot open {shown_target(self.path)}: {error}"
            _log.warning("hoare stats: %s; call statistics are not recorded (the calls "
                         "are unaffected)", self.broken)
            return None

    def _write(self, backend: _Backend, batch: Sequence[tuple[Any, ...]]) -> None:
        rows = [(*item[:15], _encoded(item[15]), item[16] if len(item) > 16 else "contract",
                 item[17] if len(item) > 17 else 0) for item in batch]
        if not rows:
            return
        try:
            backend.write(rows)
        except Exception as error:  # dropped and counted; the next batch tries again
            with self._lock:
                self.dropped += len(rows)
            if self.last_error is None:
                _log.warning("hoare stats: cannot write to %s: %s; %d records dropped (the "
                             "calls are unaffected)", shown_target(self.path), error, len(rows))
            self.last_error = str(error)
            return
        with self._lock:
            self.written += len(rows)


def shown_target(target: str) -> str:
    """``target`` with a URL's password hidden, for messages."""
    if not is_url(target):
        return target
    try:
        from sqlalchemy.engine import make_url

        return make_url(target).render_as_string(hide_password=True)
    except Exception:
        return target.split("://", 1)[0] + "://..."


_ENCODED: dict[tuple[tuple[str, bool], ...], str] = {}


def _encoded(trials: tuple[tuple[str, bool], ...]) -> str:
    """``trials`` as JSON; the same few tuples recur call after call, so the text is
    kept (bounded) rather than encoded again."""
    text = _ENCODED.get(trials)
    if text is None:
        text = json.dumps(trials)
        if len(_ENCODED) < 4096:
            _ENCODED[trials] = text
    return text


_stores: dict[str, StatsStore] = {}
_stores_lock = threading.Lock()


def open_store(target: str, retention_days: float | None = None) -> StatsStore:
    """The one store of ``target`` (a path or URL) in this process, made on first use;
    ``retention_days`` applies from its next pruning (at once for a new store)."""
    with _stores_lock:
        store = _stores.get(target)
        if store is None:
            store = _stores[target] = StatsStore(target, retention_days)
        elif store.retention_days != retention_days:
            store.retention_days = retention_days
            store._prune_soon = True
            store._wake.set()
        return store


def flush_all(timeout: float = 10.0) -> bool:
    with _stores_lock:
        stores = list(_stores.values())
    return all(store.flush(timeout) for store in stores)


def _at_exit() -> None:
    """Write what is queued, and say how many records were lost, if any."""
    flush_all()
    with _stores_lock:
        stores = list(_stores.values())
    for store in stores:
        store.dropped += len(store._pending)  # not written in time: lost with the process
        if store.dropped:
            _log.warning("hoare stats: %d call record(s) were dropped in this process, not "
                         "written to %s (%s)", store.dropped, shown_target(store.path),
                         store.broken or store.last_error or "the queue was full")


def _forget_stores() -> None:
    """In a forked child: the parent's writer threads did not come along, so the child
    opens its own stores (and writes its records) on first use."""
    global _stores_lock
    _stores.clear()
    _stores_lock = threading.Lock()


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_forget_stores)

_READ = ("id", "ts", "contract", "label", "success", "first_attempt", "attempts", "cost",
         "latency_ms", "input_tokens", "output_tokens", "preflight", "kind", "provider_faults",
         "trials")


def query(target: str, contract: str | None = None, label: str | None = None,
          since: float | None = None) -> list[dict[str, Any]]:
    """The stored calls (with their trials), oldest first, for ``hoare stats`` and
    ``hoare compare``; ``StoreError`` saying what is wrong with ``target`` otherwise."""
    if is_url(target):
        from .stats_sql import read_rows

        rows = read_rows(target, _READ, contract, label, since)
    else:
        rows = _read_sqlite(_sqlite_path(target), contract, label, since)
    out = []
    for row in rows:
        try:
            trials = [(str(f), bool(p)) for f, p in json.loads(row[-1])]
        except (ValueError, TypeError):
            trials = []
        item = dict(zip(_READ[:-1], row[:-1], strict=True))
        item["success"], item["first_attempt"] = bool(item["success"]), \
            bool(item["first_attempt"])
        item["trials"] = trials
        out.append(item)
    return out


def _read_sqlite(path: str, contract: str | None, label: str | None, since: float | None
                 ) -> list[tuple[Any, ...]]:
    if not Path(path).is_file():
        raise StoreError(f"{path}: no such file")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot be opened ({error})") from error
    try:
        found = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(found[0]) if found else 0
        _refuse_newer(version)
        where, args = _where(contract, label, since, "?")
        columns = [c if _SINCE.get(c, 0) <= version else repr(_FILL[c]) for c in _READ]
        return connection.execute(
            f"SELECT {', '.join(columns)} FROM calls WHERE {where} ORDER BY ts, id",
            args).fetchall()
    except (sqlite3.Error, ValueError) as error:
        raise StoreError(f"{path}: not a hoare stats store ({error})") from error
    finally:
        connection.close()


# the schema version that added a column, and what older rows read as
_SINCE = {"kind": 2, "provider_faults": 3}
_FILL: dict[str, object] = {"kind": "contract", "provider_faults": 0}


def _where(contract: str | None, label: str | None, since: float | None, mark: str
           ) -> tuple[str, list[Any]]:
    """The filter of ``query`` as SQL with ``mark`` placeholders, and its arguments."""
    where, args = ["1 = 1"], []
    for column, value in (("contract", contract), ("label", label)):
        if value is not None:
            where.append(f"{column} = {mark}")
            args.append(value)
    if since is not None:
        where.append(f"ts >= {mark}")
        args.append(since)
    return " AND ".join(where), args
