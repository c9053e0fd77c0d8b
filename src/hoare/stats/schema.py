"""The stats store's schema, shared by both back ends (``hoare.stats.sqlite`` and
``hoare.stats.sql``): the columns of a call, the schema versions and the migrations
between them, the checks of a stored version, and ``StoreError``.

Schema versions: 1, the first; 2 adds ``kind`` (``contract``, ``tool`` or ``agent``;
older rows are contracts); 3 adds ``provider_faults`` (older rows: 0); 4 adds
``shadow_refusals`` (1 when a ``preflight="shadow"`` pre-flight would have refused the
call; older rows: 0) and the ``families`` table. Opening an older store migrates it in
one transaction. A store that is refused (a newer schema: ``upgrade hoare``; a
database with tables that are not a hoare store) is never modified in any way: no
pragma, no table, no migration.
"""

from __future__ import annotations

from hoare.errors import HoareError

__all__ = [
    "COLUMNS",
    "FILL",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SINCE",
    "StoreError",
    "refuse_newer",
    "version_number",
]

SCHEMA_VERSION = 4

COLUMNS = ("ts", "contract", "contract_hash", "label", "success", "first_attempt",
           "attempts", "remedies", "preflight", "input_tokens", "output_tokens", "cost",
           "latency_ms", "engine", "model", "trials", "kind", "provider_faults",
           "shadow_refusals")
# ``trials``: the call's predicate-family trials as JSON, [[family, passed], ...]: one
# row per call keeps a batch to one executemany. No index: inserts stay cheap, and
# ``hoare stats`` reads the calls it reports on anyway.

# Each step brings a store from version ``n`` to ``n + 1``; run in one transaction.
MIGRATIONS = {1: "ALTER TABLE calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'contract'",
              2: "ALTER TABLE calls ADD COLUMN provider_faults INTEGER NOT NULL DEFAULT 0",
              3: "ALTER TABLE calls ADD COLUMN shadow_refusals INTEGER NOT NULL DEFAULT 0; "
                 "CREATE TABLE IF NOT EXISTS families (contract TEXT NOT NULL, family TEXT "
                 "NOT NULL, message TEXT NOT NULL, PRIMARY KEY (contract, family))"}
# ``families``: the message of each predicate family (the rule as its author wrote it),
# per contract, for labels; written once per contract and process, the latest wins.

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
