"""Reading the stats store back, for ``hoare stats``, ``hoare compare``, ``hoare eval``
and best-of-n: the stored calls of a path or URL (``query``), each row checked as it is
read (a row hoare did not write is skipped or sanitized, and said), and the messages of
the predicate families (``family_messages``) that label the reports."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from hoare.stats import sqlite
from hoare.stats.store import is_url, sqlite_path
from hoare.stats.values import INT64, finite_number, shown_value, storable_text, stored_integer

__all__ = ["WARN_ROWS", "family_messages", "query"]

_log = logging.getLogger("hoare.stats")

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
        from hoare.stats import sql  # SQLAlchemy: only when a URL is read

        rows = sql.read_rows(target, _READ, contract, label, since)
    else:
        rows = sqlite.read_rows(sqlite_path(target), _READ, contract, label, since)
    out = []
    bad = 0
    for row in rows:
        problems: list[str] = []
        item = _read_row(row, problems)
        if problems:
            bad += 1
            if bad <= WARN_ROWS:
                ident = row[0] if type(row[0]) is int else shown_value(row[0])
                tell(f"row id {ident}: " + "; ".join(problems))
        if item is not None:
            out.append(item)
    if bad > WARN_ROWS:
        tell(f"{bad - WARN_ROWS} more row(s) with bad values (not named)")
    return out


def _read_row(row: Sequence[Any], problems: list[str]) -> dict[str, Any] | None:
    """One stored row as ``query`` returns it, or None (skipped, said in ``problems``)."""
    values = dict(zip(_READ, row, strict=True))
    moment = finite_number(values["ts"])
    if moment is None:
        problems.append(f"ts {shown_value(values['ts'])} is not a finite time: skipped")
        return None
    item: dict[str, Any] = {"id": values["id"], "ts": moment}
    for field in ("contract", "label"):
        if not isinstance(values[field], str):
            problems.append(f"{field} {shown_value(values[field])} is not text: skipped")
            return None
        item[field] = storable_text(values[field])
    for field in ("success", "first_attempt"):
        flag = stored_integer(values[field], 1)
        if flag is None:
            problems.append(f"{field} {shown_value(values[field])} is not 0 or 1: skipped")
            return None
        item[field] = bool(flag)
    item["attempts"] = stored_integer(values["attempts"], INT64)
    cost = finite_number(values["cost"])
    if (cost is not None and cost < 0) or (cost is None and values["cost"] is not None):
        problems.append(f"cost {shown_value(values['cost'])} is not a finite amount >= 0:"
                        f" read as unknown")
        cost = None
    item["cost"] = cost
    latency = finite_number(values["latency_ms"])
    if latency is None or latency < 0:
        problems.append(f"latency_ms {shown_value(values['latency_ms'])} is not a finite "
                        f"duration: read as unknown")
        latency = None
    item["latency_ms"] = latency
    for field in ("input_tokens", "output_tokens"):
        count = stored_integer(values[field], INT64)
        if count is None and values[field] is not None:
            problems.append(f"{field} {shown_value(values[field])} is not a count: read "
                            f"as unknown")
        item[field] = count
    preflight = values["preflight"]
    item["preflight"] = storable_text(preflight) if isinstance(preflight, str) else None
    kind = values["kind"]
    item["kind"] = storable_text(kind) if isinstance(kind, str) else "contract"
    for field in ("provider_faults", "shadow_refusals"):
        count = stored_integer(values[field], INT64)
        if count is None:
            problems.append(f"{field} {shown_value(values[field])} is not a count: read "
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
            and stored_integer(pair[1], 1) is not None]
    if len(kept) != len(pairs):
        problems.append(f"{len(pairs) - len(kept)} malformed trial(s) dropped")
    return kept


def family_messages(target: str) -> dict[tuple[str, str], str]:
    """``(contract, family) -> message`` of a store (empty before schema 4, or when
    it cannot be read: labels fall back to the family names)."""
    try:
        if is_url(target):
            from hoare.stats import sql  # SQLAlchemy: only when a URL is read

            rows = sql.read_families(target)
        else:
            rows = sqlite.read_families(sqlite_path(target))
    except Exception:
        return {}
    return {(c, f): m for c, f, m in rows
            if isinstance(c, str) and isinstance(f, str) and isinstance(m, str)}
