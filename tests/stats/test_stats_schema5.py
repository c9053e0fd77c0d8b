"""Schema 5 of the stats store (issue 31: recording at <= 5 µs a call): a call's shape
(who made it, its outcome, its trials) stored once in ``call_shapes``, its own numbers
in ``call_numbers``, ``calls`` their view. A version 4 store, made by version 4's own
DDL and filled, is migrated losing nothing: every row, its id and every figure
``hoare stats`` shows are the same after; a failed migration leaves it as it was; the
writer finds the migrated shapes again; a shape is stored once however many calls
have it; the view takes an INSERT and a DELETE as version 4's table did; the writer
thread stopping on an error of its own is said and counted."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hoare.stats.sqlite as sqlite_module
from hoare.stats.query import family_messages, query
from hoare.stats.records import CallRecord
from hoare.stats.report import render_table, summarize
from hoare.stats.schema import COLUMNS, SCHEMA_VERSION
from hoare.stats.store import StatsStore

# Version 4's DDL, as hoare wrote it (src/hoare/stats/sqlite.py before schema 5)
SQLITE_V4 = """
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
INSERT INTO meta VALUES ('schema_version', '4');
"""

NAMES = st.sampled_from(["m:A", "m:B", "tool:search", "m:Ünïcode"])
TRIALS = st.lists(st.tuples(st.sampled_from(["pre_conditions[0]", "post_conditions[0]",
                                             "post_conditions[1]"]), st.booleans()),
                  max_size=4).map(json.dumps)
ROWS = st.lists(st.fixed_dictionaries({
    "ts": st.floats(1.7e9, 1.8e9), "contract": NAMES,
    "contract_hash": st.sampled_from(["h1", "h2"]),
    "label": st.sampled_from(["default", "run-1", "gpt"]), "success": st.integers(0, 1),
    "first_attempt": st.integers(0, 1), "attempts": st.integers(0, 5),
    "remedies": st.integers(0, 4),
    "preflight": st.sampled_from([None, "satisfiable", "unknown", "unsatisfiable"]),
    "input_tokens": st.one_of(st.none(), st.integers(0, 2**40)),
    "output_tokens": st.one_of(st.none(), st.integers(0, 2**20)),
    "cost": st.one_of(st.none(), st.floats(0, 10)), "latency_ms": st.floats(0, 1e5),
    "engine": st.sampled_from([None, "OpenAIEngine", "FunctionEngine"]),
    "model": st.sampled_from([None, "gpt-4.1-mini", "function"]), "trials": TRIALS,
    "kind": st.sampled_from(["contract", "tool", "agent"]),
    "provider_faults": st.integers(0, 3), "shadow_refusals": st.integers(0, 1)}),
    min_size=1, max_size=60)


def _version_4_store(path: Path, rows: list[dict[str, Any]]) -> None:
    with sqlite3.connect(path) as connection:
        connection.executescript(SQLITE_V4)
        connection.executemany(
            f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES "
            f"({', '.join(':' + c for c in COLUMNS)})", rows)
        connection.executemany("INSERT INTO families VALUES (?, ?, ?)", [
            ("m:A", "post_conditions[0]", "positive"), ("m:B", "pre_conditions[0]", "x")])
    connection.close()


def _shown(path: Path) -> dict[str, Any]:
    """Everything the readers give for a store: the rows, every figure of ``hoare
    stats`` (JSON and table), filtered reads, the families' messages."""
    target = str(path)
    rows = query(target)
    return {"rows": rows, "summary": summarize(rows),
            "table": render_table(summarize(rows)),
            "by contract": [query(target, contract=name) for name in ("m:A", "tool:search")],
            "by label": query(target, label="run-1"),
            "since": query(target, since=1.75e9),
            "families": family_messages(target)}


def _version(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        found = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    connection.close()
    return str(found)


def _count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as connection:
        (count,) = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
    connection.close()
    return int(count)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS)
def test_a_version_4_store_is_migrated_losing_nothing(
        tmp_path_factory: pytest.TempPathFactory, rows: list[dict[str, Any]]) -> None:
    path = tmp_path_factory.mktemp("v4") / "calls.db"
    _version_4_store(path, rows)
    before = _shown(path)
    assert len(before["rows"]) == len(rows)
    store = StatsStore(path)
    assert store.flush()
    store.close()
    assert store.broken is None and _version(path) == str(SCHEMA_VERSION) == "5"
    assert _shown(path) == before
    distinct = {tuple(row[c] for c in COLUMNS if c not in (
        "ts", "latency_ms", "input_tokens", "output_tokens", "cost")) for row in rows}
    assert _count(path, "call_shapes") == len(distinct)  # each shape once
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    connection.close()


def test_rows_hoare_did_not_write_are_migrated_as_they_are(tmp_path: Path) -> None:
    """A version 4 store another program made (no constraints) and filled with values
    hoare never writes (NULLs, text in numbers, a blob): after the migration they are
    read exactly as before, the same complaints included."""
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES "
            "('schema_version', '4'); CREATE TABLE calls (id INTEGER PRIMARY KEY, "
            + ", ".join(f"{c} {'TEXT' if c in ('contract', 'label') else 'REAL'}"
                        for c in COLUMNS) + ")")
        connection.execute(
            "INSERT INTO calls (ts, contract, contract_hash, label, success, first_attempt, "
            "attempts, remedies, latency_ms, trials) VALUES (1.0, 'm:C', 'h', 'l', 1, 1, 1, "
            "0, 2.0, '[[\"f\", true]]')")
        for values in ("NULL, 'm:C', 'l', 1, 1.0, '[]'", "1.0, NULL, 'l', 1, 1.0, '[]'",
                       "1.0, 'm:C', 'l', 'yes', 1.0, '[]'", "1.0, 'm:C', 'l', 1, 'fast', '[]'",
                       "1.0, X'ff00', 'l', 1, 1.0, '{not json'",
                       "1.0, 'm:C', 'l', 5, -4.0, '[[1, 2]]'"):
            connection.execute(
                f"INSERT INTO calls (ts, contract, label, success, latency_ms, trials, cost, "
                f"input_tokens) VALUES ({values}, 'cheap', 99999999999999999999)")
    connection.close()
    said: list[str] = []
    before = query(str(path), warn=said.append)
    store = StatsStore(path)
    store.close()
    assert store.broken is None and _version(path) == "5"
    said_after: list[str] = []
    assert query(str(path), warn=said_after.append) == before
    # the same rows and values named; a whole number in a column this store declared
    # REAL and version 4 INTEGER is read back as an integer (SQLite's affinity): 5.0, 5
    assert [re.sub(r"(\d)\.0\b", r"\1", text) for text in said] == said_after
    assert len(said) >= 5


def test_a_failed_migration_leaves_the_store_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v4.db"
    _version_4_store(path, [{c: v for c, v in zip(COLUMNS, (
        1.75e9, "m:A", "h1", "default", 1, 1, 1, 0, None, 3, 4, 0.5, 12.0, "E", "m",
        '[["post_conditions[0]", true]]', "contract", 0, 0), strict=True)}])
    before = _shown(path)
    with sqlite3.connect(path) as connection:
        schema = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    connection.close()

    def broken(shape: object) -> str:
        raise RuntimeError("a bug in the middle of the migration")

    monkeypatch.setattr(sqlite_module, "fingerprint", broken)  # after the tables moved
    store = StatsStore(path)
    store.close()
    assert store.broken is not None and "a bug in the middle" in store.broken
    monkeypatch.undo()
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall() \
            == schema
    connection.close()
    assert _version(path) == "4" and _shown(path) == before
    store = StatsStore(path)  # and the next opening migrates it
    store.close()
    assert store.broken is None and _version(path) == "5" and _shown(path) == before


def _record(label: str = "x", **changes: Any) -> CallRecord:
    return CallRecord(time.time(), "m:A", "h1", label, True, True, 1, 0, None, 3, 4, 0.5,
                      12.0, "E", "m", (("post_conditions[0]", True),))._replace(**changes)


def test_a_shape_is_stored_once_and_found_again_after_a_migration(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    old = {c: v for c, v in zip(COLUMNS, (
        1.75e9, "m:A", "h1", "x", 1, 1, 1, 0, None, 3, 4, 0.5, 12.0, "E", "m",
        '[["post_conditions[0]", true]]', "contract", 0, 0), strict=True)}
    _version_4_store(path, [old])
    store = StatsStore(path)
    for index in range(1000):  # three shapes, one of them the migrated one
        store.record(_record() if index % 3 == 0 else _record(
            "y" if index % 3 == 1 else "z", success=False, first_attempt=False))
    assert store.flush()
    store.close()
    assert (store.written, store.dropped) == (1000, 0)
    assert _count(path, "call_shapes") == 3 and _count(path, "call_numbers") == 1001
    rows = query(str(path))
    assert [r["label"] for r in rows].count("x") == 1 + 334
    assert {(r["label"], r["success"], r["trials"][0][1]) for r in rows} == {
        ("x", True, True), ("y", False, True), ("z", False, True)}


def test_the_view_takes_an_insert_and_a_delete_as_version_4s_table(tmp_path: Path) -> None:
    """Another program that wrote rows into version 4's ``calls`` (or deleted some)
    still can: the view passes them on to the two tables."""
    path = tmp_path / "calls.db"
    store = StatsStore(path)
    store.record(_record("mine"))
    store.close()
    with sqlite3.connect(path) as connection:
        connection.execute(
            "INSERT INTO calls (ts, contract, contract_hash, label, success, first_attempt, "
            "attempts, remedies, latency_ms, trials) VALUES (1.0, 'other:C', 'h', 'theirs', "
            "1, 1, 1, 0, 2.5, '[]')")
    connection.close()
    rows = query(str(path))
    assert [(r["label"], r["kind"], r["provider_faults"], r["latency_ms"]) for r in rows] \
        == [("theirs", "contract", 0, 2.5), ("mine", "contract", 0, 12.0)]
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM calls WHERE label = 'theirs'")
    connection.close()
    assert [r["label"] for r in query(str(path))] == ["mine"]


def test_retention_keeps_the_shapes_the_writer_refers_to(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    store = StatsStore(path)
    store.record(_record("a", ts=time.time() - 40 * 86_400))
    assert store.flush()
    store.retention_days = 30
    store._prune_soon = True
    store._wake.set()
    deadline = time.monotonic() + 10
    while query(str(path)) and time.monotonic() < deadline:
        time.sleep(0.02)
    store.record(_record("a"))  # the same shape: its id, kept by the writer, still holds
    assert store.flush()
    store.close()
    assert [r["label"] for r in query(str(path))] == ["a"]
    assert _count(path, "call_shapes") == 1


def test_the_writer_stopping_on_its_own_error_is_said_and_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    store = StatsStore(tmp_path / "calls.db")
    assert store.flush()

    def broken(self: StatsStore) -> list[Any]:
        raise RuntimeError("a bug in the writer thread")

    monkeypatch.setattr(StatsStore, "_take", broken)
    with caplog.at_level(logging.WARNING, "hoare.stats"):
        for _ in range(3):
            store.record(_record())
        assert store.flush(10) is False  # the records were not written
        store.record(_record())  # after: counted at once
    assert store.crashed and "writer thread stopped" in (store.broken or "")
    assert "a bug in the writer thread" in (store.broken or "")
    assert (store.written, store.dropped) == (0, 4)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "hoare.stats"]
    assert "writer thread stopped" in warning and "3 record(s) dropped" in warning
