"""The stats store in a SQLite file (stdlib ``sqlite3``, WAL mode): the embedded back
end, its schema (version 5: ``call_shapes``, ``call_numbers`` and their view ``calls``,
which takes an INSERT or a DELETE as version 4's table did) and migration, and its
reading side. A path or a ``sqlite:///`` URL names the file. Several processes can
write one file (a busy timeout); SQLite's journal keeps the file whole through a
``kill -9``.

A file that is refused (a newer schema; tables that are not a hoare store) is checked
through a read-only connection first and is never modified: no pragma, no table, no
migration, no ``-wal`` file left behind."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

from hoare.stats.schema import (
    CALLS_VIEW,
    FILL,
    MIGRATIONS,
    NUMBER_COLUMNS,
    SCHEMA_VERSION,
    SHAPE_COLUMNS,
    SINCE,
    SPLIT_CALLS,
    SPLIT_STEP,
    StoreError,
    refuse_newer,
    version_number,
)
from hoare.stats.shapes import ShapeIds, fingerprint
from hoare.stats.values import display_text

__all__ = ["SQLITE_SCHEMA", "SqliteBackend", "read_families", "read_rows"]

_SHAPE_DECLARED = {"contract": "TEXT", "contract_hash": "TEXT", "label": "TEXT",
                   "kind": "TEXT DEFAULT 'contract'", "engine": "TEXT", "model": "TEXT",
                   "success": "INTEGER", "first_attempt": "INTEGER", "attempts": "INTEGER",
                   "remedies": "INTEGER", "preflight": "TEXT", "trials": "TEXT",
                   "provider_faults": "INTEGER DEFAULT 0",
                   "shadow_refusals": "INTEGER DEFAULT 0"}
# What an INSERT on the ``calls`` view (another program's, as into version 4's table)
# stores for a column it leaves out: version 4's defaults.
_INSERTED = {"kind": "coalesce(NEW.kind, 'contract')",
             "provider_faults": "coalesce(NEW.provider_faults, 0)",
             "shadow_refusals": "coalesce(NEW.shadow_refusals, 0)"}

# Schema 5's tables (``hoare.stats.schema``), one statement each. No NOT NULL: the
# writer checks every value before it binds it (``hoare.stats.values``), the reader
# every value it reads, and a migrated store keeps every row it held, a row another
# program wrote with NULLs in it too.
_TABLES = (
    "CREATE TABLE IF NOT EXISTS call_shapes (id INTEGER PRIMARY KEY, fingerprint TEXT, "
    + ", ".join(f"{c} {_SHAPE_DECLARED[c]}" for c in SHAPE_COLUMNS) + ")",
    "CREATE INDEX IF NOT EXISTS call_shapes_fingerprint ON call_shapes (fingerprint)",
    "CREATE TABLE IF NOT EXISTS call_numbers (id INTEGER PRIMARY KEY, ts REAL, shape "
    "INTEGER, latency_ms REAL, input_tokens INTEGER, output_tokens INTEGER, cost REAL)",
)
# The view takes what version 4's table took: an INSERT (its shape a row of its own)
# and a DELETE.
_VIEW_TRIGGERS = (
    "CREATE TRIGGER calls_insert INSTEAD OF INSERT ON calls BEGIN "
    f"INSERT INTO call_shapes ({', '.join(SHAPE_COLUMNS)}) VALUES ("
    + ", ".join(_INSERTED.get(c, f"NEW.{c}") for c in SHAPE_COLUMNS) + "); "
    "INSERT INTO call_numbers (id, ts, shape, latency_ms, input_tokens, output_tokens, "
    "cost) VALUES (NEW.id, NEW.ts, last_insert_rowid(), NEW.latency_ms, NEW.input_tokens, "
    "NEW.output_tokens, NEW.cost); END",
    "CREATE TRIGGER calls_delete INSTEAD OF DELETE ON calls BEGIN "
    "DELETE FROM call_numbers WHERE id = OLD.id; END",
)
SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    *_TABLES,
    "CREATE TABLE IF NOT EXISTS families (contract TEXT NOT NULL, family TEXT NOT NULL, "
    "message TEXT NOT NULL, PRIMARY KEY (contract, family))",
    CALLS_VIEW,
    *_VIEW_TRIGGERS,
)


LOCKED_PATIENCE = 30.0
"""Seconds opening a store tries again while SQLite says the file is locked (as long as
a write waits for a lock: the connection's timeout)."""


class SqliteBackend:
    """The embedded store: one connection, owned by the writing thread."""

    def __init__(self, path: str) -> None:
        # SQLite answers "database is locked" at once, without waiting, to some of the
        # steps below while other processes open the same new file (turning it to WAL,
        # reading it mid-creation): those are tried again, for as long as a write waits
        deadline = time.monotonic() + LOCKED_PATIENCE
        while True:
            try:
                self._open(path)
                return
            except (sqlite3.OperationalError, StoreError) as error:
                cause = error if isinstance(error, sqlite3.Error) else error.__cause__
                if not (isinstance(cause, sqlite3.OperationalError) and "locked" in str(cause)) \
                        or time.monotonic() >= deadline:
                    raise
            time.sleep(0.01 + 0.04 * random.random())

    def _open(self, path: str) -> None:
        _check_sqlite(path)  # a refused store is refused before anything touches it
        self.connection = sqlite3.connect(path, timeout=30, isolation_level=None,
                                          check_same_thread=False)
        # text another program stored that is not UTF-8 is read escaped (a migration
        # reads the shapes back), not raised
        self.connection.text_factory = _lenient_text
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            _migrate_sqlite(self.connection, path)
        except BaseException:
            self.connection.close()
            raise
        self.shapes = ShapeIds(self.find_or_add_shape)

    def prune(self, cutoff: float) -> None:
        self.connection.execute("DELETE FROM call_numbers WHERE ts < ?", (cutoff,))

    def find_or_add_shape(self, shape: tuple[Any, ...]) -> int:
        """The id of a stored shape, added when the store has none (in its own
        transaction: a shape added for a batch that is then refused stays, unused)."""
        key = fingerprint(shape)
        with self._transaction():
            found = self.connection.execute(
                "SELECT min(id) FROM call_shapes WHERE fingerprint = ?", (key,)).fetchone()
            if found[0] is not None:
                return int(found[0])
            cursor = self.connection.execute(_ADD_SHAPE, (key, *shape))
            return int(cursor.lastrowid or 0)

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Calls given as rows in ``COLUMNS``' order (``clean_record``'s), in one
        transaction (``write_values``), their shapes found or added first."""
        self.write_values(self.shapes.numbers_of_rows(rows), len(rows))

    def write_values(self, values: list[Any], count: int) -> None:
        """``count`` calls, their ``call_numbers`` values (``NUMBER_COLUMNS``) flat, in
        one transaction; the rows in multi-row INSERTs of power-of-two sizes (one
        statement each, so a few prepared statements serve every batch). One statement
        per chunk, not per row: ``sqlite3`` lets go of the GIL at each statement step,
        and a step per row would hand the GIL back and forth with the calling threads
        hundreds of times a batch (measured: +2 µs per call on the calling thread).
        ``values`` is changed in place (stand-ins)."""
        width = len(NUMBER_COLUMNS)
        if len(values) != count * width:
            raise ValueError(f"{len(values)} values are not {count} rows of {width}")
        nulls = 0  # the columns holding a NULL, as bits (see _STAND_INS)
        for bit, (column, stand_in) in enumerate(_STAND_INS):
            present = values[column::width]
            if None in present:
                values[column::width] = list(map(stand_in.get, present, present))
                nulls |= 1 << bit
        if count <= _CHUNK and count & (count - 1) == 0:
            # one statement, a transaction of its own: the writer lets go of the GIL
            # once (each time it takes the GIL back, the calling threads are made to
            # hand it over), not three times (BEGIN, INSERT, COMMIT)
            self.connection.execute(_insert(count, nulls), values)
            return
        with self._transaction():
            start = 0
            while start < count:
                size = min(_CHUNK, 1 << ((count - start).bit_length() - 1))
                self.connection.execute(_insert(size, nulls),
                                        values[start * width:(start + size) * width])
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


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


_ADD_SHAPE = (f"INSERT INTO call_shapes (fingerprint, {', '.join(SHAPE_COLUMNS)}) VALUES "
              f"({', '.join(['?'] * (len(SHAPE_COLUMNS) + 1))})")

# Rows per INSERT (a power of two): SQLite allows 32766 bound values in a statement,
# 999 before 3.32
_CHUNK = 1024 if sqlite3.sqlite_version_info >= (3, 32) else 128
_INSERTS: dict[tuple[int, int], str] = {}


# What the writer binds for a NULL in a column that may hold one, and the INSERT turns
# back into NULL (``NULLIF``): binding None itself costs ``sqlite3`` an adapter lookup
# per value (measured: ~0.4 µs each), a NULLIF costs SQLite a function call per row
# (~0.1 µs), so a column gets its NULLIF only in a batch where it holds a NULL. Each
# stand-in is a value no checked row holds there: counts and costs are >= 0.
_STAND_INS: tuple[tuple[int, dict[None, int]], ...] = tuple(
    (NUMBER_COLUMNS.index(name), {None: -1})
    for name in ("input_tokens", "output_tokens", "cost"))


def _insert(rows: int, nulls: int) -> str:
    """The INSERT of ``rows`` calls into ``call_numbers``, with a NULLIF for each
    column of ``_STAND_INS`` whose bit is set in ``nulls`` (made once per kind)."""
    text = _INSERTS.get((rows, nulls))
    if text is None:
        marks = {NUMBER_COLUMNS[column]: f"NULLIF(?, {stand_in[None]})"
                 for bit, (column, stand_in) in enumerate(_STAND_INS) if nulls >> bit & 1}
        one = f"({', '.join(marks.get(c, '?') for c in NUMBER_COLUMNS)})"
        text = _INSERTS[rows, nulls] = (
            f"INSERT INTO call_numbers ({', '.join(NUMBER_COLUMNS)}) VALUES "
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
    tables = {row[0] for row in connection.execute(  # ``calls`` is a view from schema 5
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if not tables:
        return None
    if not {"meta", "calls"} <= tables:
        shown = ", ".join(sorted(display_text(str(t)) for t in tables)[:5])
        raise StoreError(f"{path}: not a hoare stats store (it has other tables: "
                         f"{shown}); refused and left unmodified")
    found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                               ).fetchone()
    version = version_number(None if found is None else found[0])
    if version is None:
        raise StoreError(f"{path}: not a hoare stats store (no valid schema_version in "
                         f"its meta table); refused and left unmodified")
    refuse_newer(version)
    return version


def _migrate_sqlite(connection: sqlite3.Connection, path: str) -> None:
    """Create the schema, or bring an older one up to ``SCHEMA_VERSION``; the version
    is read again inside the write transaction (another process may have created the
    store since ``_check_sqlite``)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = _stored_version(connection, path)
        if version is None:
            for statement in SQLITE_SCHEMA:
                connection.execute(statement)
            version = SCHEMA_VERSION
        for step in range(version, SCHEMA_VERSION):
            if step == SPLIT_STEP:
                _split_calls(connection)
                continue
            for statement in MIGRATIONS[step].split(";"):
                connection.execute(statement)
        if version != SCHEMA_VERSION or not connection.execute(
                "SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone():
            connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                               "('schema_version', ?)", (str(SCHEMA_VERSION),))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _split_calls(connection: sqlite3.Connection) -> None:
    """Version 4 to 5 (``SPLIT_CALLS``), inside the migration's transaction: the two
    tables, every call moved with its id, the view and its triggers, each shape's
    fingerprint (so the writer finds the shapes it meets again)."""
    for statement in (*_TABLES, *SPLIT_CALLS, *_VIEW_TRIGGERS):
        connection.execute(statement)
    shapes = connection.execute(
        f"SELECT id, {', '.join(SHAPE_COLUMNS)} FROM call_shapes").fetchall()
    connection.executemany("UPDATE call_shapes SET fingerprint = ? WHERE id = ?",
                           [(fingerprint(shape[1:]), shape[0]) for shape in shapes])


def read_rows(path: str, columns: Sequence[str], contract: str | None, label: str | None,
              since: float | None) -> list[tuple[Any, ...]]:
    """The stored calls' ``columns``, oldest first, matching the filter; ``StoreError``
    when ``path`` is not a readable hoare store."""
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
        selected = [c if SINCE.get(c, 0) <= version else repr(FILL[c]) for c in columns]
        return connection.execute(
            f"SELECT {', '.join(selected)} FROM calls WHERE {where} ORDER BY ts, id",
            args).fetchall()
    except (sqlite3.Error, ValueError, OverflowError) as error:
        if getattr(error, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
            raise StoreError(f"{path}: locked by another process (waited 30 s): try again "
                             f"when it is done") from error  # a store, but busy
        raise StoreError(f"{path}: not a hoare stats store ({error})") from error
    finally:
        connection.close()


def read_families(path: str) -> list[tuple[Any, ...]]:
    """The stored ``(contract, family, message)`` rows (none before schema 4)."""
    connection = _read_only(path)
    connection.text_factory = lambda raw: raw.decode("utf-8", "backslashreplace")
    try:
        version = _stored_version(connection, path)
        return [] if version is None or version < 4 else connection.execute(
            "SELECT contract, family, message FROM families").fetchall()
    finally:
        connection.close()


def _where(contract: str | None, label: str | None, since: float | None, mark: str
           ) -> tuple[str, list[Any]]:
    """The filter of ``query`` as SQL with ``mark`` placeholders, and its arguments."""
    where = ["1 = 1"]
    args: list[Any] = []
    for column, value in (("contract", contract), ("label", label)):
        if value is not None:
            where.append(f"{column} = {mark}")
            args.append(value)
    if since is not None:
        where.append(f"ts >= {mark}")
        args.append(since)
    return " AND ".join(where), args
