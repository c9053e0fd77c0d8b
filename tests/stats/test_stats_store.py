"""The stats store (``hoare.configure(stats=...)``): every contracted call recorded in
SQLite off the calling thread; several writing processes; a ``kill -9`` mid-batch;
a read-only path; a full queue; retention; a newer schema; ``hoare stats`` against
hand-computed figures."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from library_under_test import LIBRARY

import hoare
from hoare import Contract, LLMDataModel, Post, configure, contract
from hoare.engines import FunctionEngine
from hoare.kernel.stats import wilson_interval
from hoare.stats.records import CallRecord
from hoare.stats.report import parse_since, summarize
from hoare.stats.store import StatsStore

ROOT = Path(__file__).resolve().parents[2]


class Q(LLMDataModel):
    text: str


class A(LLMDataModel):
    n: int


@contract(remedy_retry_params={"delay": 0, "jitter": 0, "tries": 2})
class Count(Contract):
    prompt = "Count."
    post_conditions = (Post(lambda a: a.n > 0, "positive"),)

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else A(n=0)


@pytest.fixture
def stats(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "stats.db"
    configure(stats=path, label="run-1")
    yield path
    hoare.flush_stats()
    configure(stats=None, label=None)


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT contract, label, success, first_attempt, attempts, remedies FROM calls "
            "ORDER BY id").fetchall()


def test_calls_are_recorded_with_their_trials(stats: Path) -> None:
    answers = iter(['{"n": 1}', '{"n": -1}', '{"n": 2}', '{"n": -1}', '{"n": -1}'])
    count = Count(engine=FunctionEngine(lambda request: next(answers)))
    for _ in range(3):
        count(Q(text="x"))
    assert hoare.flush_stats()
    name = f"{__name__}:Count"
    assert _rows(stats) == [(name, "run-1", 1, 1, 1, 0), (name, "run-1", 1, 0, 2, 1),
                            (name, "run-1", 0, 0, 2, 1)]
    with sqlite3.connect(stats) as connection:
        stored = [json.loads(t) for (t,) in connection.execute(
            "SELECT trials FROM calls ORDER BY id")]
    assert stored == [[["post_conditions[0]", True]],
                      [["post_conditions[0]", False], ["post_conditions[0]", True]],
                      [["post_conditions[0]", False], ["post_conditions[0]", False]]]


def test_nothing_is_written_unless_configured(tmp_path: Path) -> None:
    configure(stats=None)
    count = Count(engine=FunctionEngine(lambda request: '{"n": 1}'))
    count(Q(text="x"))
    assert hoare.contracts.configuration.stats_store() is None
    assert list(tmp_path.iterdir()) == []


def test_the_summary_matches_hand_computed_figures() -> None:
    def row(success: bool, first: bool, latency: float, cost: float | None,
            trials: list[tuple[str, bool]]) -> dict[str, object]:
        return {"contract": "m:C", "label": "L", "success": success, "first_attempt": first,
                "latency_ms": latency, "cost": cost, "input_tokens": 10,
                "output_tokens": 5, "preflight": None, "trials": trials}

    rows = [row(True, True, 10.0, 0.5, [("a", True), ("b", True)]),
            row(True, False, 20.0, 0.5, [("a", False), ("a", True), ("b", True)]),
            row(False, False, 30.0, 1.0, [("a", True), ("b", False)]),
            row(True, True, 40.0, None, [("a", True), ("b", True)])]
    (item,) = summarize(rows)["contracts"]
    assert item["calls"] == 4 and item["successes"] == 3 and item["p_succ"] == 0.75
    assert item["interval_95"] == item["interval"] == list(wilson_interval(3, 4))
    assert item["families"]["a"] == {"calls": 5, "successes": 4, "p_succ": 0.8,
                                     "interval_95": list(wilson_interval(4, 5)),
                                     "interval": list(wilson_interval(4, 5))}
    assert item["families"]["b"]["p_succ"] == 0.75
    assert item["family_product"] == pytest.approx(0.8 * 0.75)
    assert item["first_attempt_p_succ"] == 0.5
    assert item["cost_per_success"] == pytest.approx(2.0 / 3)
    assert item["tokens_per_success"] == pytest.approx(60 / 3)
    assert item["latency_ms"] == {"p50": 20.0, "p95": 40.0, "p99": 40.0}


def test_since_takes_iso_times_and_durations() -> None:
    assert parse_since("24h", now=100_000.0) == 100_000.0 - 86_400
    assert parse_since("90s", now=100.0) == 10.0
    assert parse_since("2026-11-24T08:00:00+00:00") == 1795507200.0
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_since("yesterday")


def _record(label: str = "x", ts: float | None = None) -> CallRecord:
    return CallRecord(time.time() if ts is None else ts, "m:C", "h", label, True, True, 1, 0,
                      None, 1, 1, None, 1.0, "E", None, (("f", True),))


def test_a_read_only_path_warns_once_and_never_fails_a_call(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    (directory / "stats.db").mkdir()  # a directory where the file should be: unwritable
    with caplog.at_level(logging.WARNING, "hoare.stats"):
        configure(stats=directory / "stats.db")
        try:
            count = Count(engine=FunctionEngine(lambda request: '{"n": 1}'))
            for _ in range(3):
                assert count(Q(text="x")) == A(n=1)
            hoare.flush_stats()
        finally:
            configure(stats=None)
    warnings = [r for r in caplog.records if r.name == "hoare.stats"]
    assert len(warnings) == 1 and "calls are unaffected" in warnings[0].getMessage()


def test_a_full_queue_drops_and_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    import hoare.stats.store as module

    path = tmp_path / "busy.db"
    StatsStore(path).close()  # create the schema
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the writer waits (busy timeout) meanwhile
    monkeypatch.setattr(module, "QUEUE_SIZE", 4)
    store = StatsStore(path)
    try:
        for _ in range(100):
            store.record(_record())
        assert store.dropped >= 90  # never blocked: what does not fit is counted
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.flush()
    assert store.written + store.dropped == 100
    store.close()


def test_retention_deletes_old_calls(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = StatsStore(path)
    store.record(_record("old", ts=time.time() - 40 * 86_400))
    store.record(_record("new"))
    store.close()
    StatsStore(path, retention_days=30).close()
    with sqlite3.connect(path) as connection:
        labels = [r[0] for r in connection.execute("SELECT label FROM calls")]
    assert labels == ["new"]


def test_a_newer_schema_is_not_written(tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "future.db"
    StatsStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with caplog.at_level(logging.WARNING, "hoare.stats"):
        store = StatsStore(path)
        store.record(_record())
        store.flush()
        store.close()
    assert store.dropped == 1 and "upgrade hoare" in (store.broken or "")


WRITER = textwrap.dedent(r'''
    import sys, time
    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore
    store = StatsStore(sys.argv[1])
    label, count = sys.argv[2], int(sys.argv[3])
    print("ready", flush=True)
    for index in range(count):
        store.record(CallRecord(time.time(), "m:C", "h", label, index % 3 != 0, True, 1, 0,
                                None, 1, 1, None, 1.0, "E", None, (("f", True),)))
    store.close()
    print(store.written, store.dropped, flush=True)
''')


def _env() -> dict[str, str]:
    return {"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")}


def test_four_processes_write_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    StatsStore(path).close()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{i}", "500"],
                                stdout=subprocess.PIPE, text=True, env=_env())
               for i in range(4)]
    outputs = [w.communicate(timeout=300)[0].split() for w in writers]
    assert all(w.returncode == 0 for w in writers)
    assert all(out[1:] == ["500", "0"] for out in outputs)  # written, dropped
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = dict(connection.execute("SELECT label, count(*) FROM calls GROUP BY label"))
        trials = {t for (t,) in connection.execute("SELECT trials FROM calls")}
    assert counts == {f"p{i}": 500 for i in range(4)} and trials == {'[["f", true]]'}


def test_kill_9_mid_batch_leaves_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    StatsStore(path).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "k", "200000"],
                              stdout=subprocess.PIPE, text=True, env=_env())
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until some batches are committed
        with sqlite3.connect(path, timeout=30) as connection:
            if connection.execute("SELECT count(*) FROM calls").fetchone()[0] > 1000:
                break
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=60)
    with sqlite3.connect(path, timeout=30) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        calls = connection.execute("SELECT count(*) FROM calls").fetchone()[0]
    assert 1000 < calls < 200_000  # some committed, not all: it was killed mid-run
    store = StatsStore(path)  # and the file takes new records
    store.record(_record("after"))
    store.close()
    assert store.written == 1


def test_hoare_stats_prints_the_figures(stats: Path) -> None:
    answers = iter(['{"n": 1}', '{"n": -1}', '{"n": 2}'])
    count = Count(engine=FunctionEngine(lambda request: next(answers)))
    count(Q(text="x"))
    count(Q(text="y"))
    hoare.flush_stats()
    done = subprocess.run([sys.executable, "-m", "hoare.cli", "stats", "--db", str(stats),
                           "--json"], capture_output=True, text=True, env=_env(),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    (item,) = json.loads(done.stdout)["contracts"]
    assert item["name"] == f"{__name__}:Count" and item["label"] == "run-1"
    assert item["calls"] == 2 and item["successes"] == 2
    assert item["first_attempt_p_succ"] == 0.5
    assert item["families"]["post_conditions[0]"]["calls"] == 3
    table = subprocess.run([sys.executable, "-m", "hoare.cli", "stats", "--db", str(stats),
                            "--label", "run-1"], capture_output=True, text=True, env=_env(),
                           timeout=120)
    assert "P_succ 1.000" in table.stdout and "first attempt 0.500" in table.stdout
    empty = subprocess.run([sys.executable, "-m", "hoare.cli", "stats", "--db", str(stats),
                            "--label", "other"], capture_output=True, text=True, env=_env(),
                           timeout=120)
    assert empty.stdout.strip() == "no recorded call matches"
    missing = subprocess.run([sys.executable, "-m", "hoare.cli", "stats", "--db",
                              str(stats.parent / "none.db")], capture_output=True, text=True,
                             env=_env(), timeout=120)
    assert missing.returncode == 2 and "no such file" in missing.stderr


THREADS = textwrap.dedent(r'''
    import sys, threading
    import hoare
    from hoare import Contract, LLMDataModel, contract
    from hoare.engines import FunctionEngine

    class Q(LLMDataModel):
        text: str

    @contract()
    class Echo(Contract):
        prompt = "Echo."
        def forward(self, q: Q) -> Q:
            return self.contract_result

    hoare.configure(stats=sys.argv[1], label="threads")
    echo = Echo(engine=FunctionEngine(lambda request: '{"text": "x"}'))
    def work():
        for _ in range(100):
            echo(Q(text="x"))
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(hoare.flush_stats())
''')


def test_one_instance_in_many_threads_records_every_call(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    done = subprocess.run([sys.executable, "-c", THREADS, str(path)], capture_output=True,
                          text=True, env=_env(), timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*), sum(success) FROM calls").fetchone() \
            == (800, 800)


SQLITE_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE calls (id INTEGER PRIMARY KEY, ts REAL NOT NULL, contract TEXT NOT NULL,
  contract_hash TEXT NOT NULL, label TEXT NOT NULL, success INTEGER NOT NULL,
  first_attempt INTEGER NOT NULL, attempts INTEGER NOT NULL, remedies INTEGER NOT NULL,
  preflight TEXT, input_tokens INTEGER, output_tokens INTEGER, cost REAL,
  latency_ms REAL NOT NULL, engine TEXT, model TEXT, trials TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO calls (ts, contract, contract_hash, label, success, first_attempt, attempts,
  remedies, latency_ms, trials) VALUES (1.0, 'old:C', 'h', 'v1', 1, 1, 1, 0, 2.0,
  '[["f", true]]');
"""


def test_a_version_1_file_is_read_and_migrated(tmp_path: Path) -> None:
    """A store written by the first schema: read as it is (its calls are contracts),
    then migrated in place when a store opens it, keeping its rows."""
    from hoare.stats.query import query
    from hoare.stats.schema import SCHEMA_VERSION

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(SQLITE_V1)
    assert [(r["contract"], r["kind"], r["trials"]) for r in query(str(path))] == [
        ("old:C", "contract", [("f", True)])]
    store = StatsStore(path)
    store.record(_record("v2")._replace(kind="agent"))
    store.close()
    assert (store.written, store.broken) == (1, None)
    with sqlite3.connect(path) as connection:
        version = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert version == str(SCHEMA_VERSION) == "5"
    assert [(r["label"], r["kind"]) for r in query(str(path))] == [
        ("v1", "contract"), ("v2", "agent")]


def test_stats_names_what_is_wrong_with_the_store(tmp_path: Path) -> None:
    not_a_store = tmp_path / "other.db"
    with sqlite3.connect(not_a_store) as connection:
        connection.execute("CREATE TABLE t (x)")
    for target, expected in ((tmp_path / "missing.db", "no such file"),
                             (not_a_store, "not a hoare stats store"),
                             ("nosuchdialect://u@h/db", "not a usable SQLAlchemy URL")):
        shown = subprocess.run([sys.executable, "-m", "hoare", "stats", "--db", str(target)],
                               capture_output=True, text=True, timeout=120, env=_env())
        assert shown.returncode == 2 and expected in shown.stderr, shown.stderr


def test_retention_from_configure_and_the_environment(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``configure(stats_retention_days=...)`` prunes the open store at its next look;
    ``$HOARE_STATS_RETENTION_DAYS`` is read on first use; a bad value is refused."""
    from hoare.contracts import configuration

    path = tmp_path / "kept.db"
    store = StatsStore(path)
    for days in (100, 20, 0):
        store.record(_record(f"{days}d", ts=time.time() - days * 86_400))
    store.close()
    configure(stats=path)
    try:
        Count(engine=FunctionEngine(lambda request: '{"n": 1}'))(Q(text="x"))
        assert hoare.flush_stats()
        assert len(_rows(path)) == 4  # nothing pruned: no retention set
        configure(stats_retention_days=30)
        Count(engine=FunctionEngine(lambda request: '{"n": 1}'))(Q(text="x"))
        assert hoare.flush_stats()
        deadline = time.monotonic() + 10
        while len(_rows(path)) != 4 and time.monotonic() < deadline:
            time.sleep(0.02)  # pruned by the writer at its next look
        labels = [label for _, label, *_ in _rows(path)]
        assert "100d" not in labels and labels.count("default") == 2
    finally:
        configure(stats=None, stats_retention_days=None)
    with pytest.raises(ValueError, match="number of days > 0"):
        configure(stats_retention_days=0)
    with pytest.raises(ValueError, match="number of days > 0"):
        configure(stats_retention_days=True)
    monkeypatch.setenv("HOARE_STATS_RETENTION_DAYS", "10")
    monkeypatch.setattr(configuration, "_retention", configuration._KEEP)
    assert configuration._retention_days() == 10.0
    monkeypatch.setenv("HOARE_STATS_RETENTION_DAYS", "soon")
    monkeypatch.setattr(configuration, "_retention", configuration._KEEP)
    assert configuration._retention_days() is None  # warned, not raised
    monkeypatch.setattr(configuration, "_retention", None)


def test_pyproject_names_the_store(tmp_path: Path) -> None:
    """``[tool.hoare] stats`` (relative to the pyproject.toml) when nothing else says."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hoare]\nstats = "data/calls.db"\nstats_retention_days = 7\n')
    (tmp_path / "data").mkdir()
    (tmp_path / "sub").mkdir()
    script = textwrap.dedent('''
        import hoare
        from hoare.contracts import configuration
        store = configuration.stats_store()
        print(store.path, store.retention_days)
    ''')
    env = {**_env(), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path / "sub",
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / "data" / "calls.db"), "7.0"]
    overridden = subprocess.run([sys.executable, "-c", script], cwd=tmp_path / "sub",
                                capture_output=True, text=True, timeout=120,
                                env={**env, "HOARE_STATS": str(tmp_path / "env.db")})
    assert overridden.stdout.split()[0] == str(tmp_path / "env.db")


FORKED = textwrap.dedent(r'''
    import os, sys
    import hoare
    from hoare import Contract, LLMDataModel, contract
    from hoare.engines import FunctionEngine

    class Q(LLMDataModel):
        text: str

    class A(LLMDataModel):
        n: int

    @contract()
    class One(Contract[Q, A]):
        prompt = "One."
        def forward(self, q: Q) -> A:
            return self.contract_result

    hoare.configure(stats=sys.argv[1], label="parent")
    one = One(engine=FunctionEngine(lambda request: '{"n": 1}'))
    one(Q(text="before the fork"))
    assert hoare.flush_stats()
    child = os.fork()
    if child == 0:
        hoare.configure(label="child")
        for _ in range(5):
            one(Q(text="in the child"))
        os._exit(0 if hoare.flush_stats() else 3)
    _, status = os.waitpid(child, 0)
    one(Q(text="after the fork"))
    assert hoare.flush_stats()
    print(os.waitstatus_to_exitcode(status))
''')


def test_a_forked_child_records_its_own_calls(tmp_path: Path) -> None:
    path = tmp_path / "forked.db"
    done = subprocess.run([sys.executable, "-c", FORKED, str(path)], capture_output=True,
                          text=True, timeout=120, env=_env())
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr
    labels = [label for _, label, *_ in _rows(path)]
    assert sorted(labels) == ["child"] * 5 + ["parent"] * 2


def test_dropped_records_are_reported_at_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(r'''
        import sys, time
        from hoare.stats import store as stats_store
        from hoare.stats.records import CallRecord
        from hoare.stats.store import open_store
        stats_store.QUEUE_SIZE = 5
        store = open_store(sys.argv[1])
        store._stop = True  # keep the writer from emptying the queue
        time.sleep(0.2)
        for _ in range(8):
            store.record(CallRecord(time.time(), "m:C", "h", "x", True, True, 1, 0, None,
                                    None, None, None, 1.0, "E", None, ()))
    ''')
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "d.db")],
                          capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0, done.stderr
    # 3 refused by the full queue, 5 queued and never written (the writer was stopped)
    assert "8 call record(s) were dropped" in done.stderr
    assert "the queue was full" in done.stderr
