"""The stats store against hostile input (issue 30): a refused store is never touched,
another application's SQLite file is refused, every value written is checked record by
record (one bad record never costs its batch), labels that are not UTF-8 are stored
escaped, rows hoare did not write are read sanitized or skipped, and a store opened
before ``fork`` records the child's calls."""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare.stats.query import query
from hoare.stats.records import CallRecord
from hoare.stats.schema import COLUMNS, StoreError
from hoare.stats.sqlite import SqliteBackend
from hoare.stats.store import StatsStore
from hoare.stats.values import clean_record


def _record(label: str = "x", **changes: Any) -> CallRecord:
    return CallRecord(time.time(), "m:C", "h", label, True, True, 1, 0, None, 1, 1, None,
                      1.0, "E", None, (("f", True),))._replace(**changes)


def _snapshot(directory: Path) -> dict[str, str]:
    """Every file of ``directory`` with the hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


def _env() -> dict[str, str]:
    return {"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")}


# -- a refused store is never modified ---------------------------------------------------

@pytest.mark.parametrize("journal", ["DELETE", "WAL", "TRUNCATE"])
def test_a_newer_schema_is_refused_without_touching_the_file(tmp_path: Path,
                                                             journal: str) -> None:
    path = tmp_path / "future.db"
    StatsStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA journal_mode={journal}")
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    connection.close()
    if journal != "WAL":
        with sqlite3.connect(path) as connection:
            connection.execute(f"PRAGMA journal_mode={journal}")
        connection.close()
    before = _snapshot(tmp_path)
    store = StatsStore(path)
    store.record(_record())
    store.flush()
    store.close()
    assert "upgrade hoare" in (store.broken or "")
    assert store.dropped == 1 and store.written == 0
    assert _snapshot(tmp_path) == before  # no pragma, no migration, no file beside it


FOREIGN = [
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); "
    "INSERT INTO users (name) VALUES ('ada')",
    # a table named like hoare's, of another application
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); "
    "INSERT INTO meta VALUES ('owner', 'someone else')",
    "CREATE TABLE calls (who TEXT); INSERT INTO calls VALUES ('me')",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE calls (x); "
    "INSERT INTO meta VALUES ('schema_version', 'not a number')",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE calls (x); "
    "INSERT INTO meta VALUES ('schema_version', '-3')",
    "CREATE VIEW v AS SELECT 1; CREATE TABLE t (x)",
]


@pytest.mark.parametrize("script", FOREIGN)
def test_another_applications_database_is_refused_unmodified(tmp_path: Path,
                                                             script: str) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(script)
    connection.close()
    before = _snapshot(tmp_path)
    store = StatsStore(path)
    store.record(_record())
    store.flush()
    store.close()
    assert store.broken is not None and str(path) in store.broken
    assert "not a hoare stats store" in store.broken
    assert store.written == 0
    assert _snapshot(tmp_path) == before
    with pytest.raises(StoreError, match="not a hoare stats store"):
        query(str(path))
    assert _snapshot(tmp_path) == before


def test_a_file_that_is_not_sqlite_is_refused_unmodified(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"my notes, not a database\n" * 40)
    before = _snapshot(tmp_path)
    store = StatsStore(path)
    store.record(_record())
    store.close()
    assert store.broken is not None and str(path) in store.broken
    assert _snapshot(tmp_path) == before


def test_an_empty_file_and_an_empty_database_become_stores(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    blank = tmp_path / "blank.db"
    with sqlite3.connect(blank) as connection:
        connection.execute("PRAGMA user_version = 0")
    connection.close()
    for path in (empty, blank):
        store = StatsStore(path)
        store.record(_record("new"))
        store.close()
        assert (store.written, store.broken) == (1, None)
        assert [r["label"] for r in query(str(path))] == ["new"]


# -- every value written is checked, record by record -----------------------------------

def _hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                              blacklist_categories=()), max_size=30),
        st.sampled_from(["\udcff", "a\ud800b", "\x00", "é\udce9", "x" * 20_000]))


HOSTILE: st.SearchStrategy[object] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**62, max_value=2**80),
    st.integers(max_value=-1), st.floats(allow_nan=True, allow_infinity=True),
    _hostile_text(), st.binary(max_size=8), st.just(object()),
    st.lists(st.tuples(_hostile_text(), st.booleans()), max_size=3).map(tuple),
)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(range(len(COLUMNS))), value=HOSTILE)
def test_every_cleaned_record_is_accepted_by_sqlite(tmp_path: Path, field: int,
                                                    value: object) -> None:
    """Whatever value a field holds, ``clean_record`` either skips the record (saying why)
    or gives a row SQLite stores and ``query`` reads back without a complaint."""
    path = tmp_path / f"clean-{os.getpid()}.db"
    fields = list(_record())
    fields += [0] * (len(COLUMNS) - len(fields))
    fields[field] = value
    problems: list[str] = []
    row = clean_record(tuple(fields), problems)
    if row is None:
        assert problems
        return
    backend = SqliteBackend(str(path))
    try:
        backend.write([row])
        (count,) = backend.connection.execute("SELECT count(*) FROM calls").fetchone()
        assert count >= 1
    finally:
        backend.close()
    complaints: list[str] = []
    rows = query(str(path), warn=complaints.append)
    assert rows and not complaints
    for stored in rows:
        for key in ("cost", "latency_ms", "ts"):
            assert stored[key] is None or math.isfinite(stored[key])
        for key in ("contract", "label", "kind"):
            stored[key].encode("utf-8")


@pytest.mark.parametrize("bad", [
    {"input_tokens": 10**20}, {"output_tokens": -(10**20)}, {"attempts": 2**70},
    {"cost": float("nan")}, {"cost": float("inf")}, {"latency_ms": float("nan")},
    {"label": "\udcff\udcfe"}, {"contract": "a\ud800"}, {"model": "m\x00"},
    {"engine": "e" * 100_000}, {"ts": float("inf")}, {"success": 2},
    {"trials": (("f", True), ("\udcff", "yes"))}, {"model": object()},
])
def test_one_bad_record_never_loses_its_batch(tmp_path: Path, bad: dict[str, Any]) -> None:
    path = tmp_path / "batch.db"
    store = StatsStore(path)
    store.flush()
    good = [_record(f"good-{i}") for i in range(200)]
    for record in good[:100]:
        store.record(record)
    store.record(_record("the bad one")._replace(**bad))
    for record in good[100:]:
        store.record(record)
    assert store.flush()
    store.close()
    labels = [r["label"] for r in query(str(path))]
    assert [label for label in labels if label.startswith("good-")] == \
        [r.label for r in good]
    assert store.written + store.dropped == 201 and store.written >= 200


# A trigger refusing the calls labelled 'bad': on the call itself (its shape's label), or
# on its shape (schema 5 stores a call in two tables; ``calls`` is their view).
REFUSALS = {
    "call_numbers": "CREATE TRIGGER no_bad BEFORE INSERT ON call_numbers WHEN (SELECT label "
                    "FROM call_shapes WHERE id = NEW.shape) = 'bad' BEGIN SELECT RAISE(ABORT, "
                    "'no'); END",
    "call_shapes": "CREATE TRIGGER no_bad BEFORE INSERT ON call_shapes WHEN NEW.label = 'bad' "
                   "BEGIN SELECT RAISE(ABORT, 'no'); END",
}


@pytest.mark.parametrize("table", sorted(REFUSALS))
def test_a_batch_the_database_refuses_is_written_row_by_row(tmp_path: Path,
                                                            table: str) -> None:
    """The class fix beyond ``clean_record``: a value it let through that the database still
    refuses (here a trigger) costs that row only."""
    path = tmp_path / "trigger.db"
    StatsStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute(REFUSALS[table])
    connection.close()
    store = StatsStore(path)
    for index in range(50):
        store.record(_record("bad" if index == 20 else f"ok-{index}"))
    assert store.flush()
    store.close()
    assert (store.written, store.dropped) == (49, 1)
    assert len(query(str(path))) == 49


def test_a_label_that_is_not_utf8_is_stored_escaped(tmp_path: Path) -> None:
    """HOARE_LABEL from bytes that are not UTF-8 (os.environ decodes them with
    surrogateescape): the calls are recorded, under the label with those bytes
    escaped, and ``hoare stats --label`` finds them by the same text."""
    path = tmp_path / "label.db"
    script = textwrap.dedent('''
        import sys
        import hoare
        from hoare import Contract, LLMDataModel, configure, contract
        from hoare.engines import FunctionEngine

        class Q(LLMDataModel):
            text: str

        class A(LLMDataModel):
            n: int

        @contract
        class C(Contract):
            prompt = "Count."
            def forward(self, q: Q) -> A:
                return self.contract_result

        configure(stats=sys.argv[1])
        c = C(engine=FunctionEngine(lambda request: '{"n": 1}'))
        for _ in range(3):
            c(Q(text="x"))
        sys.exit(0 if hoare.flush_stats() else 3)
    ''')
    env: dict[bytes, bytes] = {k.encode(): v.encode() for k, v in _env().items()}
    env[b"HOARE_LABEL"] = b"run-\xff\xfe"
    done = subprocess.run([sys.executable, "-c", script, str(path)], env=env,  # type: ignore[arg-type]
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = query(str(path))
    assert [r["label"] for r in rows] == ["run-\\xff\\xfe"] * 3
    assert len(query(str(path), label="run-\udcff\udcfe")) == 3


# -- rows hoare did not write ------------------------------------------------------------

BAD_ROWS = [
    ("NULL", "'m:C'", "'l'", "1", "1", "1.0", "'[]'"),  # ts NULL
    ("1.0", "NULL", "'l'", "1", "1", "1.0", "'[]'"),  # contract NULL
    ("1.0", "'m:C'", "'l'", "'yes'", "1", "1.0", "'[]'"),  # text in success
    ("1.0", "'m:C'", "'l'", "5", "1", "1.0", "'[]'"),  # success out of 0/1
    ("1.0", "'m:C'", "'l'", "1", "1", "'fast'", "'[]'"),  # text in latency
    ("1.0", "'m:C'", "'l'", "1", "1", "-4.0", "'[]'"),  # negative latency
    ("1.0", "'m:C'", "'l'", "1", "1", "9e999", "'[]'"),  # infinite latency
    ("1.0", "'m:C'", "'l'", "1", "1", "1.0", "'{not json'"),
    ("1.0", "'m:C'", "'l'", "1", "1", "1.0", "'" + "[" * 100_000 + "'"),  # deep
    ("1.0", "'m:C'", "'l'", "1", "1", "1.0", "'[[1, 2], [\"f\", \"x\"]]'"),
    ("1.0", "X'ff00'", "'l'", "1", "1", "1.0", "'[]'"),  # a blob name
    ("1.0", "CAST(X'ff61' AS TEXT)", "'l'", "1", "1", "1.0", "'[]'"),  # not UTF-8
]


@pytest.mark.parametrize("values", BAD_ROWS)
def test_rows_hoare_did_not_write_are_skipped_or_sanitized(
        tmp_path: Path, values: tuple[str, ...]) -> None:
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as connection:  # a store made by hand: no constraints
        connection.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES "
            "('schema_version', '4'); CREATE TABLE calls (id INTEGER PRIMARY KEY, "
            + ", ".join(f"{c} {'TEXT' if c in ('contract', 'label') else 'REAL'}"
                        for c in COLUMNS) + ")")
    connection.close()
    store = StatsStore(path)
    store.record(_record("fine"))
    store.close()
    assert store.written == 1
    ts, name, label, success, first, latency, trials = values
    with sqlite3.connect(path) as connection:
        connection.execute(  # SQLite keeps what it is given, whatever the column type
            f"INSERT INTO calls (ts, contract, contract_hash, label, success, "
            f"first_attempt, attempts, remedies, latency_ms, trials, cost, input_tokens) "
            f"VALUES ({ts}, {name}, 'h', {label}, {success}, {first}, -1, 'x', "
            f"{latency}, {trials}, 'cheap', 99999999999999999999)")
    connection.close()
    complaints: list[str] = []
    rows = query(str(path), warn=complaints.append)
    assert any(r["label"] == "fine" for r in rows)
    assert complaints and all(c.startswith("row id 2: ") for c in complaints)
    for row in rows:
        assert isinstance(row["contract"], str) and isinstance(row["success"], bool)
        assert row["latency_ms"] is None or math.isfinite(row["latency_ms"])
        assert row["cost"] is None or math.isfinite(row["cost"])
        row["contract"].encode("utf-8")


# -- fork --------------------------------------------------------------------------------

FORKED_STORE = textwrap.dedent(r'''
    import os, sys, time
    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore

    def record(store, label):
        store.record(CallRecord(time.time(), "m:C", "h", label, True, True, 1, 0, None,
                                None, None, None, 1.0, "E", None, ()))

    store = StatsStore(sys.argv[1])  # held by reference, opened before the fork
    record(store, "parent")
    assert store.flush()
    record(store, "parent-queued")  # may still be queued at the fork: the parent's
    child = os.fork()
    if child == 0:
        for _ in range(4):
            record(store, "child")
        os._exit(0 if store.flush() and store.written == 4 else 3)
    _, status = os.waitpid(child, 0)
    record(store, "parent")
    assert store.flush()
    print(os.waitstatus_to_exitcode(status))
''')


def test_a_store_opened_before_fork_records_the_childs_calls(tmp_path: Path) -> None:
    path = tmp_path / "fork.db"
    done = subprocess.run([sys.executable, "-c", FORKED_STORE, str(path)],
                          capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr
    labels = sorted(r["label"] for r in query(str(path)))
    assert labels == ["child"] * 4 + ["parent"] * 2 + ["parent-queued"]


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(range(len(COLUMNS))), value=HOSTILE)
def test_the_fast_path_agrees_with_the_field_by_field_check(field: int,
                                                           value: object) -> None:
    """``_plain`` (exact type tests, for the records contract calls make) accepts only
    what ``clean_record``'s field-by-field check stores unchanged, and gives the same row."""
    import hoare.stats.values as module

    fields = list(_record())
    fields += [0] * (len(COLUMNS) - len(fields))
    fields[field] = value
    item = tuple(fields)
    module._trials_text(item[15], [])  # the trials' text cached, as after a first call
    fast = module._plain(item)
    if fast is None:
        return
    problems: list[str] = []
    original = module._plain
    try:
        module._plain = lambda item: None  # type: ignore[assignment]
        slow = clean_record(item, problems)
    finally:
        module._plain = original
    assert slow == fast and not problems
