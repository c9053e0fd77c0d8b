"""The stats store on any SQLAlchemy URL (PostgreSQL for a team's deployment):
``pip install 'hoare[sql]'``. The same tables and schema versions as the SQLite file
(``hoare.stats.schema``, ``hoare.stats.sqlite``), the same writing side (the
``hoare.stats.store.Backend`` protocol) and reading functions; imported only when a URL
is configured."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

try:
    import sqlalchemy as sa
except ImportError as missing:  # pragma: no cover - the [sql] extra is not installed
    raise ImportError("a stats store URL needs SQLAlchemy and a driver: "
                      "pip install 'hoare[sql]'") from missing

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

__all__ = ["SqlAlchemyBackend", "read_families", "read_rows"]

_metadata = sa.MetaData()
_meta = sa.Table("meta", _metadata,
                 sa.Column("key", sa.String(64), primary_key=True),
                 sa.Column("value", sa.Text, nullable=False))
_calls = sa.Table(
    "calls", _metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
              autoincrement=True),
    sa.Column("ts", sa.Double, nullable=False),
    sa.Column("contract", sa.Text, nullable=False),
    sa.Column("contract_hash", sa.Text, nullable=False),
    sa.Column("label", sa.Text, nullable=False),
    sa.Column("success", sa.Integer, nullable=False),
    sa.Column("first_attempt", sa.Integer, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("remedies", sa.Integer, nullable=False),
    sa.Column("preflight", sa.Text),
    sa.Column("input_tokens", sa.BigInteger),
    sa.Column("output_tokens", sa.BigInteger),
    sa.Column("cost", sa.Double),
    sa.Column("latency_ms", sa.Double, nullable=False),
    sa.Column("engine", sa.Text),
    sa.Column("model", sa.Text),
    sa.Column("trials", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False, server_default="contract"),
    sa.Column("provider_faults", sa.Integer, nullable=False, server_default="0"),
    sa.Column("shadow_refusals", sa.Integer, nullable=False, server_default="0"),
)
_families = sa.Table("families", _metadata,
                     sa.Column("contract", sa.Text, primary_key=True),
                     sa.Column("family", sa.Text, primary_key=True),
                     sa.Column("message", sa.Text, nullable=False))
_LOCK_KEY = 0x686F617265  # "hoare": a PostgreSQL advisory lock serializing migrations


def _engine(url: str) -> sa.Engine:
    try:
        return sa.create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=0)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as error:
        raise StoreError(f"not a usable SQLAlchemy URL ({error})") from error


def _migrate(engine: sa.Engine) -> None:
    """Create the tables, or bring older ones up to ``SCHEMA_VERSION``, in one
    transaction; several processes starting at once take turns (an advisory lock on
    PostgreSQL; elsewhere a lost race is tried again)."""
    for attempt in range(5):
        try:
            with engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                                       {"key": _LOCK_KEY})
                found = _stored_version(connection)
                version = SCHEMA_VERSION if found is None else found
                if found is None:
                    _metadata.create_all(connection, checkfirst=True)
                for step in range(version, SCHEMA_VERSION):
                    for statement in MIGRATIONS[step].split(";"):
                        connection.execute(sa.text(statement))
                connection.execute(sa.delete(_meta).where(_meta.c.key == "schema_version"))
                connection.execute(sa.insert(_meta).values(key="schema_version",
                                                           value=str(SCHEMA_VERSION)))
            return
        except sa.exc.DBAPIError:
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))


def _stored_version(connection: sa.Connection) -> int | None:
    """The schema version of the hoare tables, None when there are none yet (other
    applications' tables may share the database); ``StoreError``, before anything is
    written, for a newer schema or ``meta``/``calls`` tables that are not hoare's."""
    inspector = sa.inspect(connection)
    has_meta, has_calls = inspector.has_table("meta"), inspector.has_table("calls")
    if not has_meta and not has_calls:
        return None
    if not has_meta or not has_calls:
        raise StoreError("not a hoare stats store: a table named 'meta' or 'calls' that "
                         "hoare did not make; refused and left unmodified")
    found = connection.execute(
        sa.select(_meta.c.value).where(_meta.c.key == "schema_version")).scalar_one_or_none()
    version = version_number(found)
    if version is None:
        raise StoreError("not a hoare stats store: its 'meta' table has no valid "
                         "schema_version; refused and left unmodified")
    refuse_newer(version)
    return version


class SqlAlchemyBackend:
    """The writing side: one pooled connection, one transaction per batch."""

    def __init__(self, url: str) -> None:
        self.engine = _engine(url)
        try:
            _migrate(self.engine)
        except BaseException:
            self.engine.dispose()
            raise

    def prune(self, cutoff: float) -> None:
        with self.engine.begin() as connection:
            connection.execute(sa.delete(_calls).where(_calls.c.ts < cutoff))

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        params = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
        for item in params:  # booleans as 0/1: PostgreSQL has no implicit bool -> int
            item["success"] = int(item["success"])
            item["first_attempt"] = int(item["first_attempt"])
        with self.engine.begin() as connection:
            connection.execute(sa.insert(_calls), params)

    def write_values(self, values: list[Any], count: int) -> None:
        """``count`` rows given flat (the SQLite writer's shape), as ``write``."""
        width = len(COLUMNS)
        if len(values) != count * width:
            raise ValueError(f"{len(values)} values are not {count} rows of {width}")
        self.write(list(zip(*[iter(values)] * width, strict=True)))

    def write_families(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """The latest message of each family wins (a delete and an insert: portable)."""
        with self.engine.begin() as connection:
            for contract, family, _message in rows:
                connection.execute(sa.delete(_families).where(
                    (_families.c.contract == contract) & (_families.c.family == family)))
            connection.execute(sa.insert(_families), [
                {"contract": c, "family": f, "message": m} for c, f, m in rows])

    def close(self) -> None:
        self.engine.dispose()


def read_rows(url: str, columns: Sequence[str], contract: str | None, label: str | None,
              since: float | None) -> list[tuple[Any, ...]]:
    """The stored calls' ``columns``, oldest first, matching the filter."""
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            version = _stored_version(connection)
            if version is None:
                raise StoreError("not a hoare stats store (no calls table)")
            statement = sa.select(*(
                sa.literal(FILL[name]).label(name) if SINCE.get(name, 0) > version
                else _calls.c[name] for name in columns))
            if contract is not None:
                statement = statement.where(_calls.c.contract == contract)
            if label is not None:
                statement = statement.where(_calls.c.label == label)
            if since is not None:
                statement = statement.where(_calls.c.ts >= since)
            result = connection.execute(statement.order_by(_calls.c.ts, _calls.c.id))
            return [tuple(row) for row in result]
    except sa.exc.SQLAlchemyError as error:
        raise StoreError(f"cannot read the store ({error.__class__.__name__}: "
                         f"{str(error).splitlines()[0]})") from error
    finally:
        engine.dispose()


def read_families(url: str) -> list[tuple[Any, ...]]:
    """The stored ``(contract, family, message)`` rows (none before schema 4)."""
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            version = _stored_version(connection)
            if version is None or version < 4:
                return []
            return [tuple(row) for row in connection.execute(
                sa.select(_families.c.contract, _families.c.family, _families.c.message))]
    finally:
        engine.dispose()
