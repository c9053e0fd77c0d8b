"""The stats store in a SQLite file (stdlib ``sqlite3``, WAL mode): the embedded back
end, its schema and migration, and its reading side. A path or a ``sqlite:///`` URL
names the file. Several processes can write one file (a busy timeout); SQLite's
journal keeps the file whole through a ``kill -9``.

A file that is refused (a newer schema; tables that are not a hoare store) is checked
through a read-only connection first and is never modified: no pragma, no table, no
migration, no ``-wal`` file left behind."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from hoare.stats.schema import (
    COLUMNS,
    FILL,
    MIGRATIONS,
    SCHEMA_VERSION,
    SINCE,
    StoreError,
    refuse_newer,
    version_number,
)
from hoare.stats.values import display_text

__all__ = ["SQLITE_SCHEMA", "SqliteBackend", "read_families", "read_rows"]

SQLITE_SCHEMA = """
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


class SqliteBackend:
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
        """``rows`` in one transaction (``write_values``)."""
        self.write_values(list(chain.from_iterable(rows)), len(rows))

    def write_values(self, values: list[Any], count: int) -> None:
        """``count`` rows, their values flat, in one transaction; the rows in multi-row
        INSERTs of power-of-two sizes (one statement each, so a few prepared statements
        serve every batch). One statement per chunk, not per row: ``sqlite3`` lets go
        of the GIL at each statement step, and a step per row would hand the GIL back
        and forth with the calling threads hundreds of times a batch (measured: +2 µs
        per call on the calling thread). ``values`` is changed in place (stand-ins)."""
        width = len(COLUMNS)
        if len(values) != count * width:
            raise ValueError(f"{len(values)} values are not {count} rows of {width}")
        for column, stand_in in _STAND_INS:  # no None bound (see _STAND_INS)
            present = values[column::width]
            if None in present:
                values[column::width] = list(map(stand_in.get, present, present))
        with self._transaction():
            start = 0
            while start < count:
                size = min(_CHUNK, 1 << ((count - start).bit_length() - 1))
                self.connection.execute(_insert(size),
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


# Rows per INSERT: SQLite before 3.32 allows 999 bound values in a statement
_CHUNK = 256 if sqlite3.sqlite_version_info >= (3, 32) else 32
_INSERTS: dict[int, str] = {}


# What the writer binds for a NULL in a column that may hold one, and the INSERT turns
# back into NULL (``NULLIF``): binding None itself costs ``sqlite3`` an adapter lookup
# per value (measured: ~0.4 µs each, two or more per call). Each stand-in is a value no
# checked row holds there: counts and costs are >= 0, texts are text, never the
# integer 0.
_STAND_INS: tuple[tuple[int, dict[None, int]], ...] = tuple(
    (COLUMNS.index(name), {None: stand_in}) for name, stand_in in (
        ("preflight", 0), ("input_tokens", -1), ("output_tokens", -1), ("cost", -1),
        ("engine", 0), ("model", 0)))
_PLACEHOLDERS = {COLUMNS[column]: f"NULLIF(?, {stand_in[None]})"
                 for column, stand_in in _STAND_INS}


def _insert(rows: int) -> str:
    """The INSERT of ``rows`` rows (made once per size)."""
    text = _INSERTS.get(rows)
    if text is None:
        one = f"({', '.join(_PLACEHOLDERS.get(c, '?') for c in COLUMNS)})"
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
            for statement in SQLITE_SCHEMA.strip().split(";"):
                if statement.strip():
                    connection.execute(statement)
            version = SCHEMA_VERSION
        for step in range(version, SCHEMA_VERSION):
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
