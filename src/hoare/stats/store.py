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

Every value is checked before it is written, record by record (``_clean``): counts
beyond the column's range, NaN or infinite figures, text that is not UTF-8 (lone
surrogates, as ``os.environ`` gives for undecodable bytes: stored escaped, ``\\xff``)
or too long are stored sanitized, and a record that cannot be is skipped with a
WARNING; a batch the database still refuses is written row by row, so one bad record
never costs the rest of its batch.

Schema versions: 1, the first; 2 adds ``kind`` (``contract``, ``tool`` or ``agent``;
older rows are contracts); 3 adds ``provider_faults`` (older rows: 0); 4 adds
``shadow_refusals`` (1 when a ``preflight="shadow"`` pre-flight would have refused the
call; older rows: 0). Opening an older store migrates it in one transaction. A store
that is refused (a newer schema: ``upgrade hoare``; a SQLite file with tables that is
not a hoare store) is never modified in any way: no pragma, no table, no migration.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import math
import os
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from hoare.errors import HoareError

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

SCHEMA_VERSION = 4
BATCH = 256
QUEUE_SIZE = 10_000
POLL = 0.05  # seconds between the writer's looks at the queue
PRUNE_EVERY = 3600.0  # seconds between two deletions of calls older than the retention

_log = logging.getLogger("hoare.stats")

COLUMNS = ("ts", "contract", "contract_hash", "label", "success", "first_attempt",
           "attempts", "remedies", "preflight", "input_tokens", "output_tokens", "cost",
           "latency_ms", "engine", "model", "trials", "kind", "provider_faults",
           "shadow_refusals")
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
    provider_faults INTEGER NOT NULL DEFAULT 0,
    shadow_refusals INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS families (contract TEXT NOT NULL, family TEXT NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (contract, family));
"""
# Each step brings a store from version ``n`` to ``n + 1``; run in one transaction.
_MIGRATIONS = {1: "ALTER TABLE calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'contract'",
               2: "ALTER TABLE calls ADD COLUMN provider_faults INTEGER NOT NULL DEFAULT 0",
               3: "ALTER TABLE calls ADD COLUMN shadow_refusals INTEGER NOT NULL DEFAULT 0; "
                  "CREATE TABLE IF NOT EXISTS families (contract TEXT NOT NULL, family TEXT "
                  "NOT NULL, message TEXT NOT NULL, PRIMARY KEY (contract, family))"}
# ``families``: the message of each predicate family (the rule as its author wrote it),
# per contract, for labels; written once per contract and process, the latest wins.


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
    # 1 when a preflight="shadow" pre-flight would have refused the call
    shadow_refusals: int = 0
    # (family, message) of the contract's predicate families: the same tuple every call
    families: tuple[tuple[str, str], ...] = ()


def is_url(target: str) -> bool:
    """A SQLAlchemy URL (``dialect[+driver]://...``), not a file path."""
    return "://" in target and not target.startswith("sqlite://")


def _sqlite_path(target: str) -> str:
    """The file of a path or a ``sqlite:///path`` URL."""
    return target[len("sqlite:///"):] if target.startswith("sqlite:///") else target


class _Backend(Protocol):
    def write(self, rows: Sequence[tuple[Any, ...]]) -> None: ...
    def write_families(self, rows: Sequence[tuple[str, str, str]]) -> None: ...
    def prune(self, cutoff: float) -> None: ...
    def close(self) -> None: ...


class _SqliteBackend:
    """The embedded store: one connection, owned by the writing thread."""

    def __init__(self, path: str) -> None:
        _check_sqlite(path)  # a refused store is refused before anything touches it
        self.connection = sqlite3.connect(path, timeout=30, isolation_level=None,
                                          check_same_thread=False)
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            _migrate_sqlite(self.connection, path)
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
        with self._transaction():
            start = 0
            while start < len(rows):
                size = min(_CHUNK, 1 << ((len(rows) - start).bit_length() - 1))
                chunk = rows[start:start + size]
                self.connection.execute(_insert(size), [v for row in chunk for v in row])
                start += size

    def write_families(self, rows: Sequence[tuple[str, str, str]]) -> None:
        with self._transaction():
            self.connection.executemany("INSERT OR REPLACE INTO families (contract, family, "
                                        "message) VALUES (?, ?, ?)", rows)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back when it
        raises (anything, an interrupt too), the error then raised."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
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


def _read_only(path: str) -> sqlite3.Connection:
    """A connection that cannot write ``path`` nor create anything beside it. A WAL
    database with no ``-wal`` file has all its content in the file itself: it is read
    as immutable, since a read-only connection would leave ``-wal`` and ``-shm`` files
    behind (it may not remove them)."""
    from urllib.request import pathname2url

    if not os.path.isfile(path):  # a FIFO or device would block the reader
        raise sqlite3.OperationalError(f"{path}: not a regular file")
    options = "mode=ro"
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
        if len(header) == 20 and header[18] == 2 and not os.path.exists(path + "-wal"):
            options += "&immutable=1"
    except OSError:
        pass
    return sqlite3.connect(f"file:{pathname2url(os.path.abspath(path))}?{options}",
                           uri=True, timeout=30)


def _check_sqlite(path: str) -> None:
    """Refuse ``path`` (``StoreError``) if it is not a hoare store nor empty, or has a
    newer schema, reading it only: a refused file is left exactly as it was."""
    try:
        if not os.path.exists(path):
            return  # a new store
        if not os.path.isfile(path):  # a FIFO or device would block the reader
            raise StoreError(f"{path}: not a regular file; refused")
        if os.path.getsize(path) == 0:
            return  # a new store
    except OSError:
        return  # let the connection say what is wrong
    try:
        connection = _read_only(path)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot be opened ({error})") from error
    try:
        _stored_version(connection, path)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: not a hoare stats store ({error}); left "
                         f"unmodified") from error
    finally:
        connection.close()


def _stored_version(connection: sqlite3.Connection, path: str) -> int | None:
    """The schema version of a hoare store, None for a database without tables (a new
    store); ``StoreError`` for another application's database or a newer schema."""
    tables = {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if not {"meta", "calls"} <= tables:
        shown = ", ".join(sorted(display_text(str(t)) for t in tables)[:5])
        raise StoreError(f"{path}: not a hoare stats store (it has other tables: "
                         f"{shown}); refused and left unmodified")
    found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                               ).fetchone()
    version = _version_number(None if found is None else found[0])
    if version is None:
        raise StoreError(f"{path}: not a hoare stats store (no valid schema_version in "
                         f"its meta table); refused and left unmodified")
    _refuse_newer(version)
    return version


def _version_number(value: object) -> int | None:
    """A stored schema version (text of a positive integer), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 1 else None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) < 10:
        number = int(value.strip())
        return number if number >= 1 else None
    return None


def _migrate_sqlite(connection: sqlite3.Connection, path: str) -> None:
    """Create the schema, or bring an older one up to ``SCHEMA_VERSION``; the version
    is read again inside the write transaction (another process may have created the
    store since ``_check_sqlite``)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = _stored_version(connection, path)
        if version is None:
            for statement in _SQLITE_SCHEMA.strip().split(";"):
                if statement.strip():
                    connection.execute(statement)
            version = SCHEMA_VERSION
        for step in range(version, SCHEMA_VERSION):
            for statement in _MIGRATIONS[step].split(";"):
                connection.execute(statement)
        if version != SCHEMA_VERSION or not connection.execute(
                "SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone():
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
        self._forked = False  # a forked child's copy: its writer starts on first record
        self.sanitized = 0  # records stored with a value replaced (``_clean``)
        self._reported: set[str] = set()  # the kinds of bad value already warned about
        self._named: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # families written
        self._thread = threading.Thread(target=self._run, name="hoare-stats", daemon=True)
        self._thread.start()
        _live.add(self)

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
            if self._forked and not self._stop:  # the first record of a forked child
                self._forked, self.broken = False, None
                self._thread = threading.Thread(target=self._run, name="hoare-stats",
                                                daemon=True)
                self._thread.start()
                self._pending.append(item)
                return
            self.dropped += 1

    def _after_fork(self) -> None:
        """In a forked child: the parent's writer thread and connection did not come
        along (a SQLite connection must not be used across a fork). The child keeps
        none of the parent's queue (the parent writes it) and starts its own writer,
        with its own connection, at its first record: ``broken`` is set meanwhile so
        that ``record`` takes its slow path, and the hot path stays one test."""
        self._pending = deque()
        self._busy = False
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._drained = threading.Condition()
        self.dropped = self.written = 0
        self._forked = True
        self.broken = "a forked child's store, opened at its first record"

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
                from hoare.stats.sql import SqlAlchemyBackend

                return SqlAlchemyBackend(self.path)
            return _SqliteBackend(_sqlite_path(self.path))
        except Exception as error:  # any driver's error: the calls go on unrecorded
            self.broken = f"cannot open {shown_target(self.path)}: {error}"
            _log.warning("hoare stats: %s; call statistics are not recorded (the calls "
                         "are unaffected)", self.broken)
            return None

    def _write(self, backend: _Backend, batch: Sequence[tuple[Any, ...]]) -> None:
        rows = []
        for item in batch:
            if len(item) > 19 and item[19]:
                self._name_families(backend, item[1], item[19])
            problems: list[str] = []
            row = _clean(item, problems)
            if problems:
                self._report(item, problems, row is None)
            if row is None:
                with self._lock:
                    self.dropped += 1
            else:
                rows.append(row)
        if not rows:
            return
        try:
            backend.write(rows)
        except Exception as error:
            if len(rows) > 1 and not _unavailable(error):
                # a value the database refuses: row by row, so only that row is lost
                for row in rows:
                    self._write_rows(backend, [row])
                return
            self._failed(error, len(rows))
            return
        with self._lock:
            self.written += len(rows)

    def _name_families(self, backend: _Backend, contract: object, families: object) -> None:
        """Store the messages of a contract's families, once per contract and process
        (the tuple is the same object call after call); never fails the batch."""
        try:
            key = (contract, families)
            if key in self._named or not isinstance(contract, str) \
                    or not isinstance(families, tuple):
                return
            self._named.add(key)  # type: ignore[arg-type]
            rows = [(storable_text(contract), storable_text(f), storable_text(m))
                    for f, m in families[:TRIALS_LIMIT]
                    if isinstance(f, str) and isinstance(m, str)]
            if rows:
                backend.write_families(rows)
        except Exception as error:  # labels only: the calls are still recorded
            _log.debug("hoare stats: family messages not stored: %s", error)

    def _write_rows(self, backend: _Backend, rows: Sequence[tuple[Any, ...]]) -> None:
        try:
            backend.write(rows)
        except Exception as error:
            self._failed(error, len(rows))
            return
        with self._lock:
            self.written += len(rows)

    def _failed(self, error: Exception, count: int) -> None:
        """Dropped and counted; the next batch tries again."""
        with self._lock:
            self.dropped += count
        if self.last_error is None:
            _log.warning("hoare stats: cannot write to %s: %s; %d records dropped (the "
                         "calls are unaffected)", shown_target(self.path),
                         display_text(str(error), 300), count)
        self.last_error = display_text(str(error), 300)

    def _report(self, item: tuple[Any, ...], problems: list[str], skipped: bool) -> None:
        """One WARNING per kind of bad value and store (a loop of bad records must not
        flood the log); counted in ``sanitized`` or ``dropped``."""
        if not skipped:
            with self._lock:
                self.sanitized += 1
        kinds = [p.split(":", 1)[0] for p in problems]
        fresh = [p for p, k in zip(problems, kinds, strict=True) if k not in self._reported]
        if not fresh:
            return
        self._reported.update(kinds)
        try:
            name = display_text(item[1], 200) if isinstance(item[1], str) else "?"
        except Exception:
            name = "?"
        _log.warning("hoare stats: a call record of %s for %s %s: %s (further records "
                     "with such values are not reported)", name, shown_target(self.path),
                     "was skipped" if skipped else "was stored sanitized",
                     "; ".join(fresh))


def shown_target(target: str) -> str:
    """``target`` with a URL's password hidden, for messages."""
    if not is_url(target):
        return target
    try:
        from sqlalchemy.engine import make_url

        return make_url(target).render_as_string(hide_password=True)
    except Exception:
        return target.split("://", 1)[0] + "://..."


_INT32 = 2**31 - 1  # the attempt and fault columns are INTEGER (32 bits) in PostgreSQL
_INT64 = 2**63 - 1  # SQLite's and BIGINT's largest integer
TEXT_LIMIT = 4096  # characters of a name, label, engine or model kept
TRIALS_LIMIT = 1000  # predicate families kept per record


def _escaped_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as surrogateescape gives it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def storable_text(value: str, limit: int = TEXT_LIMIT) -> str:
    """``value`` as text every back end stores and reads back unchanged: lone
    surrogates (undecodable bytes of ``os.environ``) and NUL escaped (``\\xff``,
    ``\\x00``), at most ``limit`` characters."""
    text = str.__str__(value)  # a str subclass's own methods are not trusted
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join(_escaped_char(c) if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text.replace("\x00", "\\x00") if "\x00" in text else text


_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}


def display_text(value: str, limit: int = TEXT_LIMIT) -> str:
    """``value`` safe to show in a terminal, a log or XML: control characters and
    lone surrogates escaped."""
    return storable_text(value, limit).translate(_CONTROL)


def _number(value: object) -> float | None:
    """A finite real number as a float, else None (NaN, infinities, huge ints, text,
    objects: their dunders are never called)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float.__float__(value) if isinstance(value, float) else \
            float(int.__index__(value))
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _integer(value: object, top: int) -> int | None:
    """An integer in ``0..top`` (bool as 0/1), else None."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int):
        return None
    number = int.__index__(value)
    return number if 0 <= number <= top else None


def _stored_integer(value: object, top: int) -> int | None:
    """An integer in ``0..top`` as read back: a whole float counts (a column another
    program declared REAL gives 1.0 for 1)."""
    if type(value) is float and value.is_integer() and 0 <= value <= top:
        return int(value)
    return _integer(value, top)


def _plain(item: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The row of a record whose every value is already storable (the record a
    contract call makes), or None: then ``_clean`` checks it field by field. One
    expression of exact type tests, so the writer's cost per record stays small."""
    if type(item) is not tuple or not 19 <= len(item) <= 20:
        return None
    ts, name, digest, label, success, first, attempts, remedies, preflight, tokens_in, \
        tokens_out, cost, latency, engine, model, trials, kind, faults, shadow = item[:19]
    if not (type(ts) is float and ts - ts == 0 and type(latency) is float
            and latency >= 0 and latency - latency == 0
            and type(success) is bool and type(first) is bool
            and type(attempts) is int and 0 <= attempts <= _INT32
            and type(remedies) is int and 0 <= remedies <= _INT32
            and type(faults) is int and 0 <= faults <= _INT32
            and type(shadow) is int and 0 <= shadow <= _INT32
            and (tokens_in is None or (type(tokens_in) is int and 0 <= tokens_in <= _INT64))
            and (tokens_out is None
                 or (type(tokens_out) is int and 0 <= tokens_out <= _INT64))
            and (cost is None or (type(cost) is float and cost >= 0 and cost - cost == 0))
            and type(name) is str and type(digest) is str and type(label) is str
            and type(kind) is str and (preflight is None or type(preflight) is str)
            and (engine is None or type(engine) is str)
            and (model is None or type(model) is str)):
        return None
    text = name + digest + label + kind + (preflight or "") + (engine or "") + (model or "")
    if not text.isascii() or "\x00" in text or max(
            len(name), len(digest), len(label), len(kind), len(preflight or ""),
            len(engine or ""), len(model or "")) > TEXT_LIMIT:
        return None
    encoded = _ENCODED.get(trials) if type(trials) is tuple else None
    if encoded is None:
        return None
    return (ts, name, digest, label, int(success), int(first), attempts, remedies,
            preflight, tokens_in, tokens_out, cost, latency, engine, model, encoded, kind,
            faults, shadow)


def _clean(item: tuple[Any, ...], problems: list[str]) -> tuple[Any, ...] | None:
    """``item`` (the fields of a ``CallRecord``) as a row every back end accepts, the
    problems noted in ``problems``; None when a field that cannot be replaced (the
    time, the names, the outcome, the latency) is unusable: the record is skipped."""
    fast = _plain(item)
    if fast is not None:
        return fast
    try:
        fields = tuple.__getitem__(item, slice(None)) if isinstance(item, tuple) else ()
    except Exception:
        fields = ()
    if len(fields) < 16:
        problems.append("shape: not a call record")
        return None
    fields = fields + (("contract", 0, 0)[len(fields) - 16:] if len(fields) < 19 else ())
    ts, name, digest, label, success, first, attempts, remedies, preflight, tokens_in, \
        tokens_out, cost, latency, engine, model, trials, kind, faults, shadow = fields[:19]
    row: list[Any] = []
    moment = _number(ts)
    if moment is None:
        problems.append(f"ts: {_shown_value(ts)} is not a finite time")
        return None
    row.append(moment)
    for field, value in (("contract", name), ("contract_hash", digest), ("label", label)):
        if not isinstance(value, str):
            problems.append(f"{field}: {_shown_value(value)} is not text")
            return None
        row.append(_sanitized_text(field, value, problems))
    for field, value in (("success", success), ("first_attempt", first)):
        flag = _integer(value, 1)
        if flag is None:
            problems.append(f"{field}: {_shown_value(value)} is not a boolean")
            return None
        row.append(flag)
    for field, value in (("attempts", attempts), ("remedies", remedies)):
        row.append(_clamped(field, value, problems))
    row.append(_optional_text("preflight", preflight, problems))
    for field, value in (("input_tokens", tokens_in), ("output_tokens", tokens_out)):
        count = _integer(value, _INT64)
        if count is None and value is not None:
            problems.append(f"{field}: {_shown_value(value)} is not a count in "
                            f"0..2**63-1: stored as NULL")
        row.append(count)
    price = _number(cost)
    if (price is None and cost is not None) or (price is not None and price < 0):
        problems.append(f"cost: {_shown_value(cost)} is not a finite amount >= 0: "
                        f"stored as NULL")
        price = None
    row.append(price)
    elapsed = _number(latency)
    if elapsed is None or elapsed < 0:
        problems.append(f"latency_ms: {_shown_value(latency)} is not a finite duration")
        return None
    row.append(elapsed)
    row.append(_optional_text("engine", engine, problems))
    row.append(_optional_text("model", model, problems))
    row.append(_trials_text(trials, problems))
    if not isinstance(kind, str):
        problems.append(f"kind: {_shown_value(kind)} is not text: stored as 'contract'")
        kind = "contract"
    row.append(_sanitized_text("kind", kind, problems))
    row.append(_clamped("provider_faults", faults, problems))
    row.append(_clamped("shadow_refusals", shadow, problems))
    return tuple(row)


def _shown_value(value: object) -> str:
    """A short description of a bad value for a warning (never its dunders)."""
    if isinstance(value, (bool, int, float)) and type(value) in (bool, int, float):
        text = repr(value)
        return text if len(text) <= 40 else f"an integer of {len(text)} digits"
    if isinstance(value, str):
        return f"text of {len(value)} character(s)"
    return f"a {type(value).__name__}"


def _sanitized_text(field: str, value: str, problems: list[str]) -> str:
    text = storable_text(value)
    if text != value:
        problems.append(f"{field}: text that is not UTF-8, holds NUL or is longer than "
                        f"{TEXT_LIMIT} characters: stored escaped or cut")
    return text


def _optional_text(field: str, value: object, problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{field}: {_shown_value(value)} is not text: stored as NULL")
        return None
    return _sanitized_text(field, value, problems)


def _clamped(field: str, value: object, problems: list[str]) -> int:
    """A count of a NOT NULL column: out of range clamped, not a count 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = int.__index__(value)
        if 0 <= number <= _INT32:
            return number
        problems.append(f"{field}: {_shown_value(value)} out of 0..2**31-1: clamped")
        return min(max(number, 0), _INT32)
    count = _integer(value, _INT32)
    if count is None:
        problems.append(f"{field}: {_shown_value(value)} is not a count: stored as 0")
        return 0
    return count


def _trials_text(trials: object, problems: list[str]) -> str:
    """The trials as JSON: the cached text of a well-formed tuple, else the pairs that
    are (family text, passed boolean), at most ``TRIALS_LIMIT`` of them."""
    if type(trials) is tuple and len(trials) <= TRIALS_LIMIT and all(
            type(pair) is tuple and len(pair) == 2 and type(pair[0]) is str
            and len(pair[0]) <= TEXT_LIMIT and type(pair[1]) is bool for pair in trials):
        try:
            return _encoded(trials)  # type: ignore[arg-type]
        except ValueError:
            pass
    kept: list[tuple[str, bool]] = []
    try:
        for pair in trials if isinstance(trials, (tuple, list)) else ():
            if len(kept) == TRIALS_LIMIT:
                break
            if isinstance(pair, (tuple, list)) and len(pair) == 2 \
                    and isinstance(pair[0], str) and _integer(pair[1], 1) is not None:
                kept.append((storable_text(pair[0]), bool(_integer(pair[1], 1))))
    except Exception:
        pass
    problems.append("trials: not a sequence of (family, passed) pairs of at most "
                    f"{TRIALS_LIMIT}: the well-formed ones kept")
    return json.dumps(kept)


def _unavailable(error: BaseException) -> bool:
    """The database is unavailable (locked, unreachable, read-only, disk full), as
    opposed to refusing a value: writing row by row would not help."""
    return any(cls.__name__ == "OperationalError" for cls in type(error).__mro__)


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


_live: weakref.WeakSet[StatsStore] = weakref.WeakSet()  # every store of this process


def _forget_stores() -> None:
    """In a forked child: the parent's writer threads did not come along; every store
    (those held by reference too) starts its own writer at the child's first record."""
    global _stores_lock
    _stores_lock = threading.Lock()
    for store in list(_live):
        store._after_fork()


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_forget_stores)

_READ = ("id", "ts", "contract", "label", "success", "first_attempt", "attempts", "cost",
         "latency_ms", "input_tokens", "output_tokens", "preflight", "kind", "provider_faults",
         "shadow_refusals", "trials")
WARN_ROWS = 20  # bad rows named one by one; beyond, only counted


def query(target: str, contract: str | None = None, label: str | None = None,
          since: float | None = None, warn: Callable[[str], None] | None = None
          ) -> list[dict[str, Any]]:
    """The stored calls (with their trials), oldest first, for ``hoare stats`` and
    ``hoare compare``; ``StoreError`` saying what is wrong with ``target`` otherwise.

    A row hoare did not write (NULLs, text in numeric columns, negative or huge
    numbers, NaN) is skipped or sanitized, and ``warn`` (default: a WARNING in the
    ``hoare.stats`` log) is told which row and why."""
    tell = warn or (lambda text: _log.warning("hoare stats: %s", text))
    contract = None if contract is None else storable_text(contract)
    label = None if label is None else storable_text(label)
    if is_url(target):
        from hoare.stats.sql import read_rows

        rows = read_rows(target, _READ, contract, label, since)
    else:
        rows = _read_sqlite(_sqlite_path(target), contract, label, since)
    out = []
    bad = 0
    for row in rows:
        problems: list[str] = []
        item = _read_row(row, problems)
        if problems:
            bad += 1
            if bad <= WARN_ROWS:
                ident = row[0] if type(row[0]) is int else _shown_value(row[0])
                tell(f"row id {ident}: " + "; ".join(problems))
        if item is not None:
            out.append(item)
    if bad > WARN_ROWS:
        tell(f"{bad - WARN_ROWS} more row(s) with bad values (not named)")
    return out


def _read_row(row: Sequence[Any], problems: list[str]) -> dict[str, Any] | None:
    """One stored row as ``query`` returns it, or None (skipped, said in ``problems``)."""
    values = dict(zip(_READ, row, strict=True))
    moment = _number(values["ts"])
    if moment is None:
        problems.append(f"ts {_shown_value(values['ts'])} is not a finite time: skipped")
        return None
    item: dict[str, Any] = {"id": values["id"], "ts": moment}
    for field in ("contract", "label"):
        if not isinstance(values[field], str):
            problems.append(f"{field} {_shown_value(values[field])} is not text: skipped")
            return None
        item[field] = storable_text(values[field])
    for field in ("success", "first_attempt"):
        flag = _stored_integer(values[field], 1)
        if flag is None:
            problems.append(f"{field} {_shown_value(values[field])} is not 0 or 1: skipped")
            return None
        item[field] = bool(flag)
    item["attempts"] = _stored_integer(values["attempts"], _INT64)
    cost = _number(values["cost"])
    if (cost is not None and cost < 0) or (cost is None and values["cost"] is not None):
        problems.append(f"cost {_shown_value(values['cost'])} is not a finite amount >= 0:"
                        f" read as unknown")
        cost = None
    item["cost"] = cost
    latency = _number(values["latency_ms"])
    if latency is None or latency < 0:
        problems.append(f"latency_ms {_shown_value(values['latency_ms'])} is not a finite "
                        f"duration: read as unknown")
        latency = None
    item["latency_ms"] = latency
    for field in ("input_tokens", "output_tokens"):
        count = _stored_integer(values[field], _INT64)
        if count is None and values[field] is not None:
            problems.append(f"{field} {_shown_value(values[field])} is not a count: read "
                            f"as unknown")
        item[field] = count
    preflight = values["preflight"]
    item["preflight"] = storable_text(preflight) if isinstance(preflight, str) else None
    kind = values["kind"]
    item["kind"] = storable_text(kind) if isinstance(kind, str) else "contract"
    for field in ("provider_faults", "shadow_refusals"):
        count = _stored_integer(values[field], _INT64)
        if count is None:
            problems.append(f"{field} {_shown_value(values[field])} is not a count: read "
                            f"as 0")
        item[field] = count or 0
    item["trials"] = _read_trials(values["trials"], problems)
    return item


def _read_trials(text: object, problems: list[str]) -> list[tuple[str, bool]]:
    """The stored trials JSON as (family, passed) pairs; the malformed ones dropped."""
    try:
        pairs = json.loads(text) if isinstance(text, str) and len(text) < 10_000_000 \
            else None
    except (ValueError, RecursionError):
        pairs = None
    if not isinstance(pairs, list):
        problems.append("trials is not a JSON list of [family, passed]: read as none")
        return []
    kept = [(storable_text(pair[0]), bool(pair[1])) for pair in pairs
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
            and _stored_integer(pair[1], 1) is not None]
    if len(kept) != len(pairs):
        problems.append(f"{len(pairs) - len(kept)} malformed trial(s) dropped")
    return kept


def _read_sqlite(path: str, contract: str | None, label: str | None, since: float | None
                 ) -> list[tuple[Any, ...]]:
    if not os.path.exists(path):
        raise StoreError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise StoreError(f"{path}: not a regular file")
    try:
        connection = _read_only(path)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot be opened ({error})") from error
    # text another program stored that is not UTF-8 is read escaped, not raised
    connection.text_factory = lambda raw: raw.decode("utf-8", "backslashreplace")
    try:
        version = _stored_version(connection, path)
        if version is None:
            raise StoreError(f"{path}: not a hoare stats store (no tables)")
        where, args = _where(contract, label, since, "?")
        columns = [c if _SINCE.get(c, 0) <= version else repr(_FILL[c]) for c in _READ]
        return connection.execute(
            f"SELECT {', '.join(columns)} FROM calls WHERE {where} ORDER BY ts, id",
            args).fetchall()
    except (sqlite3.Error, ValueError, OverflowError) as error:
        raise StoreError(f"{path}: not a hoare stats store ({error})") from error
    finally:
        connection.close()


def family_messages(target: str) -> dict[tuple[str, str], str]:
    """``(contract, family) -> message`` of a store (empty before schema 4, or when
    it cannot be read: labels fall back to the family names)."""
    try:
        if is_url(target):
            from hoare.stats.sql import read_families

            rows = read_families(target)
        else:
            path = _sqlite_path(target)
            connection = _read_only(path)
            connection.text_factory = lambda raw: raw.decode("utf-8", "backslashreplace")
            try:
                version = _stored_version(connection, path)
                rows = [] if version is None or version < 4 else connection.execute(
                    "SELECT contract, family, message FROM families").fetchall()
            finally:
                connection.close()
    except Exception:
        return {}
    return {(c, f): m for c, f, m in rows
            if isinstance(c, str) and isinstance(f, str) and isinstance(m, str)}


# the schema version that added a column, and what older rows read as
_SINCE = {"kind": 2, "provider_faults": 3, "shadow_refusals": 4}
_FILL: dict[str, object] = {"kind": "contract", "provider_faults": 0, "shadow_refusals": 0}


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
