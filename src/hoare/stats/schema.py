"""The stats store's schema, shared by both back ends (``hoare.stats.sqlite`` and
``hoare.stats.sql``): the columns of a call, the schema versions and the migrations
between them, the checks of a stored version, and ``StoreError``.

Schema versions: 1, the first; 2 adds ``kind`` (``contract``, ``tool`` or ``agent``;
older rows are contracts); 3 adds ``provider_faults`` (older rows: 0); 4 adds
``shadow_refusals`` (1 when a ``preflight="shadow"`` pre-flight would have refused the
call; older rows: 0) and the ``families`` table; 5 splits a call in two (issue 31:
writing a 19-column row per call was half the cost of recording): what recurs call
after call, its *shape* (who made it, its outcome, its trials: ``call_shapes``, stored
once per distinct shape), and the numbers of that one call (``call_numbers``: time,
shape id, latency, tokens, cost). ``calls`` is a view joining them, with version 4's
columns, so every reader (and a user's SQL) reads a call as before; a SQLite store
takes an ``INSERT`` or ``DELETE`` on it too. Opening an older store migrates it in one
transaction, keeping every row and its id. A store that is refused (a newer schema:
``upgrade hoare``; a database with tables that are not a hoare store) is never
modified in any way: no pragma, no table, no migration.
"""

from __future__ import annotations

from hoare.errors import HoareError

__all__ = [
    "CALLS_VIEW",
    "COLUMNS",
    "FILL",
    "MIGRATIONS",
    "NUMBER_COLUMNS",
    "SCHEMA_VERSION",
    "SHAPE_COLUMNS",
    "SINCE",
    "SPLIT_CALLS",
    "SPLIT_STEP",
    "StoreError",
    "refuse_newer",
    "split_row",
    "version_number",
]

SCHEMA_VERSION = 5

# a call as readers see it (the ``calls`` view; version 4's table), and as
# ``hoare.stats.values.clean_record`` gives its row
COLUMNS = ("ts", "contract", "contract_hash", "label", "success", "first_attempt",
           "attempts", "remedies", "preflight", "input_tokens", "output_tokens", "cost",
           "latency_ms", "engine", "model", "trials", "kind", "provider_faults",
           "shadow_refusals")
# ``trials``: the call's predicate-family trials as JSON, [[family, passed], ...]. No
# index on the calls: inserts stay cheap, and ``hoare stats`` reads the calls it
# reports on anyway.

# A call's shape: everything but its own numbers, the same few values call after call
SHAPE_COLUMNS = ("contract", "contract_hash", "label", "kind", "engine", "model",
                 "success", "first_attempt", "attempts", "remedies", "preflight", "trials",
                 "provider_faults", "shadow_refusals")
# A call's row in ``call_numbers`` (its ``id`` aside): ``shape`` is a ``call_shapes`` id
NUMBER_COLUMNS = ("ts", "shape", "latency_ms", "input_tokens", "output_tokens", "cost")
_SHAPE_AT = tuple(COLUMNS.index(name) for name in SHAPE_COLUMNS)
_NUMBERS_AT = tuple(COLUMNS.index(name) for name in NUMBER_COLUMNS if name != "shape")


def split_row(row: tuple[object, ...]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """A row in ``COLUMNS``' order as its shape (``SHAPE_COLUMNS``) and its numbers
    (``NUMBER_COLUMNS`` but ``shape``)."""
    return tuple(row[i] for i in _SHAPE_AT), tuple(row[i] for i in _NUMBERS_AT)


# Each step brings a store from version ``n`` to ``n + 1``; run in one transaction.
MIGRATIONS = {1: "ALTER TABLE calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'contract'",
              2: "ALTER TABLE calls ADD COLUMN provider_faults INTEGER NOT NULL DEFAULT 0",
              3: "ALTER TABLE calls ADD COLUMN shadow_refusals INTEGER NOT NULL DEFAULT 0; "
                 "CREATE TABLE IF NOT EXISTS families (contract TEXT NOT NULL, family TEXT "
                 "NOT NULL, message TEXT NOT NULL, PRIMARY KEY (contract, family))"}
# ``families``: the message of each predicate family (the rule as its author wrote it),
# per contract, for labels; written once per contract and process, the latest wins.

_VIEW_COLUMNS = ", ".join(
    f"n.{c} AS {c}" if c in NUMBER_COLUMNS else f"s.{c} AS {c}" for c in COLUMNS)
CALLS_VIEW = (f"CREATE VIEW calls AS SELECT n.id AS id, {_VIEW_COLUMNS} FROM call_numbers "
              f"AS n LEFT JOIN call_shapes AS s ON s.id = n.shape")
# LEFT JOIN: a call whose shape is missing is still read (and named as a bad row), never
# silently left out.

# Version 4 to 5, once the two tables exist (each back end makes them its own way): the
# calls keep their ids; the shapes are numbered by DENSE_RANK (equal values, NULLs too,
# are peers: one shape), each shape's values taken from its calls (equal, so min picks
# any one); then the table becomes the view. The back end then gives each shape its
# fingerprint (``hoare.stats.shapes``). Set-based: a store of millions of calls is
# migrated by the database, not row by row in Python.
SPLIT_STEP = 4
_SHAPES_LIST = ", ".join(SHAPE_COLUMNS)
SPLIT_CALLS = (
    f"INSERT INTO call_numbers (id, ts, shape, latency_ms, input_tokens, output_tokens, "
    f"cost) SELECT id, ts, DENSE_RANK() OVER (ORDER BY {_SHAPES_LIST}), latency_ms, "
    f"input_tokens, output_tokens, cost FROM calls",
    f"INSERT INTO call_shapes (id, {_SHAPES_LIST}) SELECT n.shape, "
    + ", ".join(f"min(c.{c})" for c in SHAPE_COLUMNS)
    + " FROM call_numbers AS n JOIN calls AS c ON c.id = n.id GROUP BY n.shape",
    "DROP TABLE calls",
    CALLS_VIEW,
)

# the schema version that added a column, and what older rows read as
SINCE = {"kind": 2, "provider_faults": 3, "shadow_refusals": 4}
FILL: dict[str, object] = {"kind": "contract", "provider_faults": 0, "shadow_refusals": 0}


class StoreError(HoareError):
    """A store that cannot be read: no such file, not a hoare store, a newer schema,
    a server that refuses, SQLAlchemy missing for a URL."""


def version_number(value: object) -> int | None:
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


def refuse_newer(version: int) -> None:
    """``StoreError`` for a store written by a newer hoare (its schema is unknown)."""
    if version > SCHEMA_VERSION:
        raise StoreError(f"schema version {version} is newer than this hoare's "
                         f"({SCHEMA_VERSION}): upgrade hoare")
