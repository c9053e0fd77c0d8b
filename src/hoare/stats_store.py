"""Success statistics that outlive the process: every contracted call recorded in a
SQLite file (``hoare.configure(stats=PATH)`` or ``$HOARE_STATS``; off by default).

Writes never block or fail a call. A call appends one record to a bounded queue
(``record``: one atomic append, no lock, no I/O); a daemon thread writes batches of
up to 256 records, one transaction and one ``executemany`` each, in WAL mode with a
busy timeout, so several processes can write the same file. A full queue drops the
record and counts it (``dropped``); a file that cannot be written (read-only, a
directory) logs one WARNING and the records are dropped and counted, never raised.
``flush`` waits until every queued record is written (``hoare.flush_stats()``, also
run at interpreter exit). A ``kill -9`` loses at most the records not yet committed;
SQLite's journal keeps the file whole. ``retention_days`` deletes older records when
the store opens.
"""

from __future__ import annotations

import atexit
import json
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["SCHEMA_VERSION", "CallRecord", "StatsStore", "open_store"]

SCHEMA_VERSION = 1
BATCH = 256
QUEUE_SIZE = 10_000
POLL = 0.05  # seconds between the writer's looks at the queue

_log = logging.getLogger("hoare.stats")

_SCHEMA = """
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
    trials TEXT NOT NULL
);
"""
# ``trials``: the call's predicate-family trials as JSON, [[family, passed], ...]: one
# row per call keeps a batch to one executemany. No index: inserts stay cheap, and
# ``hoare stats`` reads the calls it reports on anyway.


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


class StatsStore:
    """A SQLite file and the thread that writes to it."""

    def __init__(self, path: str | Path, retention_days: float | None = None) -> None:
        self.path = str(path)
        self.retention_days = retention_days
        self.dropped = 0
        self.written = 0
        self.broken: str | None = None  # why writing stopped, once it has
        # A deque, not a queue.Queue: an append is one atomic C call on the calling
        # thread (no lock, no wake-up); the writer looks every POLL seconds, or at once
        # when ``flush`` asks.
        self._pending: deque[CallRecord] = deque()
        self._busy = False  # a batch is taken and not yet written
        self._wake = threading.Event()
        self._stop = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hoare-stats", daemon=True)
        self._thread.start()

    # -- the calling side ------------------------------------------------------------
    def record(self, item: CallRecord) -> None:
        """Queue ``item``; never blocks, never raises (a full queue drops it)."""
        if self.broken is None and len(self._pending) < QUEUE_SIZE:
            self._pending.append(item)
            return
        with self._lock:
            self.dropped += 1

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._pending or self._busy:
            if time.monotonic() > deadline or not self._thread.is_alive():
                return False
            self._wake.set()
            time.sleep(0.002)
        return True

    def close(self) -> None:
        self.flush()
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=5)

    # -- the writing thread ----------------------------------------------------------
    def _run(self) -> None:
        connection = self._open()
        while True:
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
            if connection is not None:
                connection = self._write(connection, batch)
            else:
                with self._lock:
                    self.dropped += len(batch)
            self._busy = False
        if connection is not None:
            connection.close()

    def _open(self) -> sqlite3.Connection | None:
        try:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                         check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            migrate(connection)
            if self.retention_days is not None:
                cutoff = time.time() - self.retention_days * 86_400
                connection.execute("DELETE FROM calls WHERE ts < ?", (cutoff,))
            return connection
        except (sqlite3.Error, OSError) as error:
            self._fail(f"cannot open {self.path}: {error}")
            return None

    def _write(self, connection: sqlite3.Connection, batch: Sequence[CallRecord]
               ) -> sqlite3.Connection | None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(
                "INSERT INTO calls (ts, contract, contract_hash, label, success, "
                "first_attempt, attempts, remedies, preflight, input_tokens, output_tokens, "
                "cost, latency_ms, engine, model, trials) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*item[:15], _encoded(item.trials)) for item in batch])
            connection.execute("COMMIT")
            with self._lock:
                self.written += len(batch)
            return connection
        except (sqlite3.Error, OSError, TypeError, ValueError) as error:
            try:
                connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            with self._lock:
                self.dropped += len(batch)
            self._fail(f"cannot write to {self.path}: {error}")
            connection.close()
            return None

    def _fail(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
            _log.warning("hoare stats: %s; call statistics are not recorded (the calls "
                         "are unaffected)", why)


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


def migrate(connection: sqlite3.Connection) -> None:
    """Create the schema, or bring an older one up to ``SCHEMA_VERSION``."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                connection.execute(statement)
        found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                   ).fetchone()
        version = int(found[0]) if found else 0
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this "
                                        f"hoare's ({SCHEMA_VERSION}): upgrade hoare")
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                           "('schema_version', ?)", (str(SCHEMA_VERSION),))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


_stores: dict[str, StatsStore] = {}
_stores_lock = threading.Lock()


def open_store(path: str, retention_days: float | None = None) -> StatsStore:
    """The one store of ``path`` in this process (created on first use)."""
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = StatsStore(path, retention_days)
        return store


def flush_all(timeout: float = 10.0) -> bool:
    with _stores_lock:
        stores = list(_stores.values())
    return all(store.flush(timeout) for store in stores)


atexit.register(flush_all)


def query(path: str, contract: str | None = None, label: str | None = None,
          since: float | None = None) -> list[dict[str, Any]]:
    """The stored calls (with their trials), oldest first, for ``hoare stats``."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        where, args = ["1 = 1"], []
        if contract is not None:
            where.append("contract = ?")
            args.append(contract)
        if label is not None:
            where.append("label = ?")
            args.append(label)
        if since is not None:
            where.append("ts >= ?")
            args.append(since)
        rows = connection.execute(
            f"SELECT id, ts, contract, label, success, first_attempt, cost, latency_ms, "
            f"input_tokens, output_tokens, preflight, trials FROM calls "
            f"WHERE {' AND '.join(where)} ORDER BY ts, id", args).fetchall()
    finally:
        connection.close()
    keys = ("id", "ts", "contract", "label", "success", "first_attempt", "cost",
            "latency_ms", "input_tokens", "output_tokens", "preflight")
    out = []
    for row in rows:
        try:
            trials = [(str(f), bool(p)) for f, p in json.loads(row[-1])]
        except (ValueError, TypeError):
            trials = []
        out.append({**dict(zip(keys, row[:-1], strict=True)), "trials": trials})
    return out
