"""Success statistics that outlive the process: every contracted call (and every
agent run and tool call) recorded in a store (``hoare.configure(stats=...)``,
``$HOARE_STATS`` or ``[tool.hoare] stats``; off by default). This module is the
recording side: the queue and the thread that writes it, the protocol of a back end,
and the one store per path or URL of a process (``open_store``, ``flush_all``). What a
record holds, and the one function that builds it, is ``hoare.stats.records``.

The store is a SQLite file (``hoare.stats.sqlite``), or, for a larger deployment, any
SQLAlchemy URL (``postgresql+psycopg://...``; ``pip install 'hoare[sql]'``;
``hoare.stats.sql``). A ``sqlite:///`` URL is the SQLite file, without SQLAlchemy. Both
share one schema (``hoare.stats.schema``); reading lives in ``hoare.stats.query``.

Writes never block or fail a call. A call adds its record's values to a bounded queue
(``record``: one atomic ``list.extend``, no lock, no I/O, no object left for the garbage
collector); a daemon thread does all the rest: it takes whole records, checks them
column by column, finds each record's shape (schema 5: who made the call, its outcome,
its trials, stored once: ``hoare.stats.shapes``) by one dictionary lookup, and writes
its numbers in batches of up to 1024 records, one transaction each (a full batch is one
multi-row INSERT), with a busy timeout, so several processes can write one store. If
the thread stops on an error of its own, the store says so (``broken``, ``crashed``)
and counts what is lost. A full queue drops the record and counts it
(``dropped``); a store that cannot be opened (a read-only path, a directory, a server
that refuses) logs one WARNING and its records are dropped and counted, never raised;
a batch that cannot be written is dropped and counted, and the next batch tries
again. ``flush`` waits until every queued record is written (``hoare.flush_stats()``,
also run at interpreter exit). A ``kill -9`` loses at most the records not yet
committed; SQLite's journal keeps the file whole. ``retention_days`` deletes older
records when the store opens and every hour after. A forked child opens its own
store on its first record (the parent's writer thread does not survive a fork). At
exit, a WARNING says how many records were dropped, if any.

Every value is checked before it is written (``hoare.stats.values.clean_record``): a
bad value is stored sanitized, or its record skipped, with one WARNING per kind of bad
value; a batch the database still refuses is written row by row, so one bad record
never costs the rest of its batch.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from hoare.forking import hold_across_fork
from hoare.stats.records import CallRecord
from hoare.stats.schema import NUMBER_COLUMNS, split_row
from hoare.stats.shapes import ShapeIds
from hoare.stats.sqlite import SqliteBackend
from hoare.stats.values import (
    TRIALS_LIMIT,
    clean_record,
    display_text,
    plain_batch,
    plain_row,
    storable_text,
)

__all__ = [
    "Backend",
    "StatsStore",
    "flush_all",
    "is_url",
    "open_store",
    "shown_target",
    "sqlite_path",
]

BATCH = 1024  # records a batch takes at most: one INSERT when it is full (sqlite.py)
QUEUE_SIZE = 10_000  # records
FIELDS = len(CallRecord._fields)  # values a record takes in the queue
_WHOLE = object()  # marks a record queued whole: (_WHOLE, record, padding...)
_PADDING = (None,) * (FIELDS - 2)
POLL = 0.05  # seconds between the writer's looks at the queue
PRUNE_EVERY = 3600.0  # seconds between two deletions of calls older than the retention

_log = logging.getLogger("hoare.stats")


def is_url(target: str) -> bool:
    """A SQLAlchemy URL (``dialect[+driver]://...``), not a file path."""
    return "://" in target and not target.startswith("sqlite://")


def sqlite_path(target: str) -> str:
    """The file of a path or a ``sqlite:///path`` URL."""
    return target[len("sqlite:///"):] if target.startswith("sqlite:///") else target


class Backend(Protocol):
    """What a back end provides to the writer thread (``hoare.stats.sqlite.SqliteBackend``
    and ``hoare.stats.sql.SqlAlchemyBackend``); made and used by that thread only.
    ``shapes`` are the ids of the store's call shapes (``hoare.stats.shapes``);
    ``write_values`` takes calls as ``call_numbers`` rows, flat (``NUMBER_COLUMNS``),
    ``write`` as rows in ``COLUMNS``' order."""

    shapes: ShapeIds

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None: ...
    def write_values(self, values: list[Any], count: int) -> None: ...
    def write_families(self, rows: Sequence[tuple[str, str, str]]) -> None: ...
    def prune(self, cutoff: float) -> None: ...
    def close(self) -> None: ...


class StatsStore:
    """A store (a SQLite file or a SQLAlchemy URL) and the thread that writes to it."""

    def __init__(self, target: str | Path, retention_days: float | None = None) -> None:
        self.path = str(target)
        self.retention_days = retention_days
        self.dropped = 0
        self.written = 0
        self.broken: str | None = None  # why the store could not be opened
        self.last_error: str | None = None  # the latest batch that could not be written
        # The records' fields, flat: a call's record is one ``list.extend`` (one atomic C
        # call on the calling thread: no lock, no wake-up), and the queue holds values
        # only, no tuple per call for the garbage collector to count and traverse
        # (``record``). The writer looks every POLL seconds, or at once when ``flush``
        # asks, and takes whole records from the front (``_take``).
        self._pending: list[Any] = []
        self._capacity = QUEUE_SIZE * FIELDS  # the queue's bound, in values
        self._busy = False  # a batch is taken and not yet written
        self._prune_soon = False  # the retention changed: prune at the next look
        self._wake = threading.Event()
        self._stop = False
        self._lock = threading.Lock()
        self._drained = threading.Condition()  # notified when the queue is written
        self._forked = False  # a forked child's copy: its writer starts on first record
        self.sanitized = 0  # records stored with a value replaced (``clean_record``)
        self.crashed = False  # the writer thread stopped on an error of its own
        self._in_flight = 0  # records taken from the queue and not yet counted
        self._reported: set[str] = set()  # the kinds of bad value already warned about
        self._named: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # families written
        # held by the writer whenever it is inside the database, and by ``os.fork``: a
        # child forked mid-transaction inherits SQLite's in-process locks of the file
        # as taken, and its own writer then waits for them forever (hoare.forking)
        self._in_database = threading.Lock()
        hold_across_fork(self, self._in_database)
        self._thread = threading.Thread(target=self._run, name="hoare-stats", daemon=True)
        self._thread.start()
        _live.add(self)

    # -- the calling side ------------------------------------------------------------
    def record(self, item: CallRecord | tuple[Any, ...]) -> None:
        """Queue ``item`` (a ``CallRecord``, or a plain tuple of its fields in order:
        what ``hoare.stats.records.call_record`` builds for every call, cheaper to make
        on a hot path); never blocks, never raises (a full queue drops it). Only values
        are queued, never the call's objects: a queue of live outcomes would be
        traversed by every garbage collection (measured: +20 µs per call). A record as
        ``call_record`` builds it is queued as its 20 values, not as a tuple: a tuple
        per call kept until the writer runs made the collector run three times as
        often (measured: +2 µs per call); anything else is queued whole, behind a
        marker, and checked by the writer."""
        pending = self._pending
        if len(pending) < self._capacity and self.broken is None:
            if (type(item) is tuple and len(item) == FIELDS) or type(item) is CallRecord:
                pending.extend(item)  # exact types: iterating them runs no foreign code
            else:
                pending.extend((_WHOLE, item, *_PADDING))
            return
        with self._lock:
            if self._forked and not self._stop:  # the first record of a forked child
                self._forked, self.broken = False, None
                self._thread = threading.Thread(target=self._run, name="hoare-stats",
                                                daemon=True)
                self._thread.start()
                self._pending.extend((_WHOLE, item, *_PADDING))
                return
            self.dropped += 1

    def _after_fork(self) -> None:
        """In a forked child: the parent's writer thread and connection did not come
        along (a SQLite connection must not be used across a fork). The child keeps
        none of the parent's queue (the parent writes it) and starts its own writer,
        with its own connection, at its first record: ``broken`` is set meanwhile so
        that ``record`` takes its slow path, and the hot path stays one test."""
        self._pending = []
        self._busy = False
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._drained = threading.Condition()
        self.dropped = self.written = 0
        self.crashed = False
        self._in_flight = 0
        self._forked = True
        self.broken = "a forked child's store, opened at its first record"

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written (or dropped); False on timeout, or
        when the writer thread has stopped on an error (``crashed``)."""
        deadline = time.monotonic() + timeout
        with self._drained:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._wake.set()
                self._drained.wait(min(left, POLL))
        return not self.crashed

    def close(self) -> None:
        self.flush()
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=5)

    # -- the writing thread ----------------------------------------------------------
    def _run(self) -> None:
        """The writer thread. Should it stop on an error of its own (a bug: the
        store's errors are caught batch by batch), the store says so (``broken``, a
        WARNING) and counts what it held and every later record as dropped; ``flush``
        then returns False."""
        try:
            self._serve()
        except BaseException as error:  # the thread ends here: said, and counted
            self._stopped_by(error)

    def _stopped_by(self, error: BaseException) -> None:
        with self._lock:
            self.broken = f"the writer thread stopped: {display_text(repr(error), 300)}"
            self.crashed = True
            queued = len(self._pending) // FIELDS  # whole records (see ``_take``)
            del self._pending[:queued * FIELDS]
            lost = self._in_flight + queued
            self.dropped += lost
            self._in_flight = 0
        self._busy = False
        _log.warning("hoare stats: %s: %s; %d record(s) dropped, and later ones are "
                     "dropped and counted (the calls are unaffected)",
                     shown_target(self.path), self.broken, lost)
        with self._drained:
            self._drained.notify_all()

    def _serve(self) -> None:
        self._busy = True  # until the store is open: flush() waits for the verdict
        with self._in_database:
            backend = self._open()
        try:
            self._serve_with(backend)
        finally:
            if backend is not None:
                with self._in_database:
                    backend.close()

    def _serve_with(self, backend: Backend | None) -> None:
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
            batch = self._take()
            self._in_flight = len(batch) // FIELDS
            if backend is None:
                with self._lock:
                    self.dropped += len(batch) // FIELDS
            else:
                try:
                    with self._in_database:
                        self._write(backend, batch)
                except Exception as error:  # the writer goes on; the batch is counted
                    with self._lock:
                        self.dropped += len(batch) // FIELDS
                    _log.warning("hoare stats: a batch was not written to %s: %s",
                                 shown_target(self.path), display_text(repr(error), 300))
            self._in_flight = 0
            self._busy = False
            if not self._pending:
                with self._drained:
                    self._drained.notify_all()

    def _take(self) -> list[Any]:
        """The values of up to BATCH records from the front of the queue, flat. Every
        ``record`` adds a whole record in one atomic call, so the queue always holds
        whole records; callers only add at the end meanwhile."""
        pending = self._pending
        count = min(len(pending), BATCH * FIELDS)
        taken = pending[:count]
        del pending[:count]
        return taken

    def _prune(self, backend: Backend | None) -> float:
        """Delete the calls older than ``retention_days`` (when set); return when."""
        days = self.retention_days
        if backend is not None and days is not None:
            try:
                with self._in_database:
                    backend.prune(time.time() - days * 86_400)
            except Exception as error:  # retention must not stop the recording
                _log.warning("hoare stats: cannot delete old calls from %s: %s",
                             shown_target(self.path), error)
        return time.monotonic()

    def _open(self) -> Backend | None:
        try:
            if is_url(self.path):
                from hoare.stats.sql import SqlAlchemyBackend

                return SqlAlchemyBackend(self.path)
            return SqliteBackend(sqlite_path(self.path))
        except Exception as error:  # any driver's error: the calls go on unrecorded
            self.broken = f"cannot open {shown_target(self.path)}: {error}"
            _log.warning("hoare stats: %s; call statistics are not recorded (the calls "
                         "are unaffected)", self.broken)
            return None

    def _write(self, backend: Backend, taken: list[Any]) -> None:
        """Write the records ``taken`` from the queue (their values, flat): the whole
        batch checked column by column, each record's shape by one lookup, when every
        record is plain (``plain_batch``, the records contract calls make); else record
        by record."""
        batch = plain_batch(taken, FIELDS)
        shape_ids = None
        seen = backend.shapes.first_seen
        if batch is not None:
            try:
                shape_ids = backend.shapes.of_records(batch)
            except Exception as error:  # a shape the database refuses: record by record
                if _unavailable(error):
                    raise
        if batch is not None and shape_ids is not None:
            if backend.shapes.first_seen != seen:  # a contract (and its hash) seen first
                self._name_batch_families(backend, taken)
            self._store(backend, batch.numbers(shape_ids), len(shape_ids))
            return
        rows: list[tuple[Any, ...]] = []
        named: tuple[object, object] = (None, None)  # the families named last, by identity
        for item in zip(*[iter(taken)] * FIELDS, strict=True):
            row = plain_row(item)  # a record as call_record builds it: exact types
            if row is not None:
                families = item[19]  # a caller's: exact tuples only are looked into
                if type(families) is tuple and families and (
                        families is not named[1] or item[1] is not named[0]):
                    named = (item[1], families)
                    self._name_families(backend, item[1], families)
                rows.append(row)
                continue
            self._write_checked(backend, item, rows)
        values: list[Any] = []
        for row in rows:
            shape, (ts, latency, tokens_in, tokens_out, cost) = split_row(row)
            try:
                shape_id = backend.shapes.of_stored(shape)
            except Exception as error:  # refused: that record only; unavailable: all
                self._failed(error, len(rows) if _unavailable(error) else 1)
                if _unavailable(error):
                    return
                continue
            values += (ts, shape_id, latency, tokens_in, tokens_out, cost)
        if values:
            self._store(backend, values, len(values) // len(NUMBER_COLUMNS))

    def _store(self, backend: Backend, values: list[Any], count: int) -> None:
        """``count`` calls (their ``call_numbers`` values, flat) in one transaction;
        when the database refuses a value (not when it is unavailable), row by row, so
        only that row is lost."""
        try:
            backend.write_values(values, count)
        except Exception as error:
            if count > 1 and not _unavailable(error):
                width = len(values) // count
                for start in range(0, len(values), width):
                    self._store(backend, values[start:start + width], 1)
                return
            self._failed(error, count)
            return
        with self._lock:
            self.written += count

    def _name_batch_families(self, backend: Backend, taken: list[Any]) -> None:
        """Store the family messages of a batch's contracts (``_name_families``): the
        (name, families) pairs told apart by identity (the same objects call after call;
        the families are a caller's, not checked: never hashed nor compared here)."""
        names, families = taken[1::FIELDS], taken[19::FIELDS]
        if len(set(map(id, names))) == 1 and len(set(map(id, families))) == 1:
            self._name_families(backend, names[0], families[0])
            return
        pairs: dict[tuple[int, int], tuple[object, object]] = {}
        for name, family in zip(names, families, strict=True):
            pairs.setdefault((id(name), id(family)), (name, family))
        for name, family in pairs.values():
            self._name_families(backend, name, family)

    def _write_checked(self, backend: Backend, item: tuple[Any, ...],
                       rows: list[tuple[Any, ...]]) -> None:
        """``item`` checked field by field (``clean_record``), its row added to ``rows``
        (stored sanitized) or the record dropped, each counted and reported."""
        if item[0] is _WHOLE:  # queued whole (not a plain record): the record itself
            item = item[1]
        try:
            families = tuple.__getitem__(item, 19) if isinstance(item, tuple) \
                and tuple.__len__(item) > 19 else ()
            if families:
                self._name_families(backend, tuple.__getitem__(item, 1), families)
        except Exception:  # labels only: the call is still recorded
            pass
        problems: list[str] = []
        row = clean_record(item, problems)
        if problems:
            self._report(item, problems, row is None)
        if row is None:
            with self._lock:
                self.dropped += 1
        else:
            rows.append(row)

    def _name_families(self, backend: Backend, contract: object, families: object) -> None:
        """Store the messages of a contract's families, once per contract and process
        (the tuple is the same object call after call); never fails the batch."""
        try:
            if not isinstance(contract, str) or not isinstance(families, tuple):
                return
            key = (contract, families)
            if key in self._named:
                return
            self._named.add(key)
            rows = [(storable_text(contract), storable_text(f), storable_text(m))
                    for f, m in families[:TRIALS_LIMIT]
                    if isinstance(f, str) and isinstance(m, str)]
            if rows:
                backend.write_families(rows)
        except Exception as error:  # labels only: the calls are still recorded
            _log.debug("hoare stats: family messages not stored: %s", error)

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


def _unavailable(error: BaseException) -> bool:
    """The database is unavailable (locked, unreachable, read-only, disk full), as
    opposed to refusing a value: writing row by row would not help."""
    return any(cls.__name__ == "OperationalError" for cls in type(error).__mro__)


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
    """Write what every store of this process has queued; False if one timed out."""
    with _stores_lock:
        stores = list(_stores.values())
    return all(store.flush(timeout) for store in stores)


def _at_exit() -> None:
    """Write what is queued, and say how many records were lost, if any."""
    flush_all()
    with _stores_lock:
        stores = list(_stores.values())
    for store in stores:
        # not written in time: lost with the process
        store.dropped += len(store._pending) // FIELDS
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
