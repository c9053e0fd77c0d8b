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
    CALLS_VIEW,
    COLUMNS,
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

__all__ = ["SqlAlchemyBackend", "read_families", "read_rows"]

_metadata = sa.MetaData()
_meta = sa.Table("meta", _metadata,
                 sa.Column("key", sa.String(64), primary_key=True),
                 sa.Column("value", sa.Text, nullable=False))
_ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")
# the type of each column of a call (``COLUMNS``), in the tables and as read
_TYPES: dict[str, Any] = {
    "ts": sa.Double, "latency_ms": sa.Double, "input_tokens": sa.BigInteger,
    "output_tokens": sa.BigInteger, "cost": sa.Double, "success": sa.Integer,
    "first_attempt": sa.Integer, "attempts": sa.Integer, "remedies": sa.Integer,
    "provider_faults": sa.Integer, "shadow_refusals": sa.Integer}
_DEFAULTS = {"kind": "contract", "provider_faults": "0", "shadow_refusals": "0"}


def _column(name: str) -> sa.Column[Any]:
    return sa.Column(name, _TYPES.get(name, sa.Text), server_default=_DEFAULTS.get(name))


# No NOT NULL: see hoare.stats.sqlite's tables
_shapes = sa.Table("call_shapes", _metadata,
                   sa.Column("id", _ID, primary_key=True, autoincrement=True),
                   sa.Column("fingerprint", sa.Text, index=True),
                   *(_column(name) for name in SHAPE_COLUMNS))
_numbers = sa.Table("call_numbers", _metadata,
                    sa.Column("id", _ID, primary_key=True, autoincrement=True),
                    sa.Column("shape", _ID),
                    *(_column(name) for name in NUMBER_COLUMNS if name != "shape"))
# ``calls`` as it is read: version 4's table, or the view of schema 5 (never created
# from this description: apart from the tables ``create_all`` makes)
_calls = sa.Table("calls", sa.MetaData(), sa.Column("id", _ID, primary_key=True),
                  *(_column(name) for name in COLUMNS))
_families = sa.Table("families", _metadata,
                     sa.Column("contract", sa.Text, primary_key=True),
                     sa.Column("family", sa.Text, primary_key=True),
                     sa.Column("message", sa.Text, nullable=False))
_LOCK_KEY = 0x686F617265  # "hoare": a PostgreSQL advisory lock serializing migrations


def _engine(url: str) -> sa.Engine:
    try:
        return sa.create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=0)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError,
            ValueError) as error:  # ValueError: a port that is not a number ("[::1")
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
                    connection.execute(sa.text(CALLS_VIEW))
                for step in range(version, SCHEMA_VERSION):
                    if step == SPLIT_STEP:
                        _split_calls(connection)
                        continue
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


def _split_calls(connection: sa.Connection) -> None:
    """Version 4 to 5 (``SPLIT_CALLS``), inside the migration's transaction: the two
    tables, every call moved with its id, the view, each shape's fingerprint. The ids
    are given, so PostgreSQL's sequences are moved past them."""
    _metadata.create_all(connection, tables=[_shapes, _numbers], checkfirst=True)
    for statement in SPLIT_CALLS:
        connection.execute(sa.text(statement))
    if connection.dialect.name == "postgresql":
        for table in ("call_shapes", "call_numbers"):
            connection.execute(sa.text(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) "
                f"FROM {table} HAVING max(id) IS NOT NULL"))
    shapes = connection.execute(sa.select(_shapes.c.id, *(
        _shapes.c[name] for name in SHAPE_COLUMNS))).all()
    if shapes:
        connection.execute(sa.update(_shapes).where(_shapes.c.id == sa.bindparam("key"))
                           .values(fingerprint=sa.bindparam("print")),
                           [{"key": row[0], "print": fingerprint(tuple(row[1:]))}
                            for row in shapes])


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
        self.shapes = ShapeIds(self.find_or_add_shape)

    def prune(self, cutoff: float) -> None:
        with self.engine.begin() as connection:
            connection.execute(sa.delete(_numbers).where(_numbers.c.ts < cutoff))

    def find_or_add_shape(self, shape: tuple[Any, ...]) -> int:
        """The id of a stored shape, added when the store has none."""
        key = fingerprint(shape)
        with self.engine.begin() as connection:
            found = connection.execute(sa.select(sa.func.min(_shapes.c.id)).where(
                _shapes.c.fingerprint == key)).scalar()
            if found is not None:
                return int(found)
            added = connection.execute(sa.insert(_shapes).values(
                fingerprint=key, **dict(zip(SHAPE_COLUMNS, shape, strict=True)))
                .returning(_shapes.c.id)).scalar_one()
            return int(added)

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Calls given as rows in ``COLUMNS``' order (``clean_record``'s), in one
        transaction, their shapes found or added first."""
        self.write_values(self.shapes.numbers_of_rows(rows), len(rows))

    def write_values(self, values: list[Any], count: int) -> None:
        """``count`` calls, their ``call_numbers`` values (``NUMBER_COLUMNS``) flat, in
        one transaction."""
        width = len(NUMBER_COLUMNS)
        if len(values) != count * width:
            raise ValueError(f"{len(values)} values are not {count} rows of {width}")
        with self.engine.begin() as connection:
            connection.execute(sa.insert(_numbers), [
                dict(zip(NUMBER_COLUMNS, values[start:start + width], strict=True))
                for start in range(0, len(values), width)])

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
