"""The stats store on a real PostgreSQL server (``configure(stats="postgresql+psycopg://
...")``), which this module starts itself: Debian's ``postgresql`` package (``.ci/run``
installs it), ``initdb`` and ``postgres`` run as an unprivileged user on 127.0.0.1.
Skipped, with the reason, only where the server cannot be installed or started."""

from __future__ import annotations

import glob
import json
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from library_under_test import LIBRARY

import hoare
from hoare import Contract, LLMDataModel, Post, configure, contract
from hoare.engines import FunctionEngine
from hoare.stats.query import query
from hoare.stats.records import CallRecord
from hoare.stats.schema import SCHEMA_VERSION, StoreError
from hoare.stats.store import StatsStore

sa = pytest.importorskip("sqlalchemy", reason="the [sql] extra (SQLAlchemy) is not installed")
pytest.importorskip("psycopg", reason="the [sql] extra (psycopg) is not installed")

ROOT = Path(__file__).resolve().parents[2]


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A PostgreSQL server of its own; yields the URL of its ``postgres`` database."""
    binaries = _binaries()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package, which "
                    ".ci/run installs: /usr/lib/postgresql/<version>/bin)")
    user: str | None = None
    if os.geteuid() == 0:  # initdb refuses root
        try:
            pwd.getpwnam("postgres")
            user = "postgres"
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run initdb as")
    data = tempfile.mkdtemp(prefix="hoare-pg-")
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    init = subprocess.run([str(binaries / "initdb"), "-D", data, "-U", "hoare",
                           "--auth=trust", "-E", "UTF8", "--no-locale"],
                          capture_output=True, text=True, user=user, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(data, ignore_errors=True)
        pytest.fail(f"initdb failed: {init.stderr}")
    port = _free_port()
    log = open(os.path.join(data, "server.log"), "w")
    process = subprocess.Popen(
        [str(binaries / "postgres"), "-D", data, "-p", str(port), "-k", data,
         "-h", "127.0.0.1", "-c", "fsync=off"], stdout=log, stderr=subprocess.STDOUT,
        user=user)
    url = f"postgresql+psycopg://hoare@127.0.0.1:{port}/postgres"
    engine = sa.create_engine(url)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with engine.connect() as connection:
                    connection.execute(sa.text("SELECT 1"))
                break
            except sa.exc.OperationalError:
                if time.monotonic() > deadline or process.poll() is not None:
                    log.flush()
                    pytest.fail("the PostgreSQL server did not start: "
                                + Path(data, "server.log").read_text()[-2000:])
                time.sleep(0.2)
        engine.dispose()
        yield url
    finally:
        engine.dispose()
        process.send_signal(signal.SIGINT)  # fast shutdown
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def database(server: str) -> str:
    """A new, empty database on the server: each test starts from nothing."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.rsplit("/", 1)[0] + "/" + name


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


def _record(label: str = "x", success: bool = True) -> CallRecord:
    return CallRecord(time.time(), "m:C", "h", label, success, success, 1, 0, None, 3, 4,
                      0.01, 2.5, "E", "m", (("f", success),))


def test_contracted_calls_are_recorded_in_postgresql(database: str) -> None:
    answers = iter(['{"n": 3}', '{"n": 0}', '{"n": 0}', '{"n": 0}', '{"n": 2}'])
    configure(stats=database, label="pg-run")
    try:
        counter = Count(engine=FunctionEngine(lambda request: next(answers)))
        for _ in range(3):
            counter(Q(text="x"))
        assert hoare.flush_stats()
    finally:
        configure(stats=None, label=None)
    rows = query(database)
    assert [(r["success"], r["first_attempt"], r["label"], r["kind"]) for r in rows] == [
        (True, True, "pg-run", "contract"), (False, False, "pg-run", "contract"),
        (True, False, "pg-run", "contract")]
    assert rows[0]["trials"] == [("post_conditions[0]", True)]
    assert rows[1]["trials"] == [("post_conditions[0]", False)] * 2
    # the command line reads the same store
    shown = subprocess.run([sys.executable, "-m", "hoare", "stats", "--db", database,
                            "--json"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)["contracts"][0]
    assert (summary["calls"], summary["successes"]) == (3, 2)
    assert summary["families"]["post_conditions[0]"]["calls"] == 5


WRITER = textwrap.dedent(r'''
    import sys, time
    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore
    store = StatsStore(sys.argv[1])
    label, count = sys.argv[2], int(sys.argv[3])
    for index in range(count):
        store.record(CallRecord(time.time(), "m:C", "h", label, index % 3 != 0, True, 1, 0,
                                None, 1, 1, None, 1.0, "E", None, (("f", True),)))
    store.close()
    print(store.written, store.dropped, store.broken, flush=True)
''')


def test_four_processes_create_and_write_one_database(database: str) -> None:
    """Four processes start on an empty database at once: the schema is made once
    (the migrations take turns) and every record lands."""
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, database, f"p{i}", "700"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": LIBRARY})
               for i in range(4)]
    outputs = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), outputs
    assert all(out.split() == ["700", "0", "None"] for out, _ in outputs), outputs
    rows = query(database)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["label"]] = counts.get(row["label"], 0) + 1
    assert counts == {f"p{i}": 700 for i in range(4)}
    assert sum(r["success"] for r in rows) == 4 * (700 - 234)


V1 = """
CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE calls (id BIGSERIAL PRIMARY KEY, ts DOUBLE PRECISION NOT NULL,
  contract TEXT NOT NULL, contract_hash TEXT NOT NULL, label TEXT NOT NULL,
  success INTEGER NOT NULL, first_attempt INTEGER NOT NULL, attempts INTEGER NOT NULL,
  remedies INTEGER NOT NULL, preflight TEXT, input_tokens BIGINT, output_tokens BIGINT,
  cost DOUBLE PRECISION, latency_ms DOUBLE PRECISION NOT NULL, engine TEXT, model TEXT,
  trials TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO calls (ts, contract, contract_hash, label, success, first_attempt, attempts,
  remedies, latency_ms, trials) VALUES (1.0, 'old:C', 'h', 'v1', 1, 1, 1, 0, 2.0, '[]');
"""


def test_a_version_1_database_is_migrated(database: str) -> None:
    engine = sa.create_engine(database)
    with engine.begin() as connection:
        for statement in V1.strip().split(";"):
            if statement.strip():
                connection.execute(sa.text(statement))
    assert [r["kind"] for r in query(database)] == ["contract"]  # read before migrating
    store = StatsStore(database)
    store.record(_record("v2")._replace(kind="tool"))
    store.close()
    assert (store.written, store.broken) == (1, None)
    with engine.connect() as connection:
        version = connection.execute(sa.text(
            "SELECT value FROM meta WHERE key = 'schema_version'")).scalar_one()
    engine.dispose()
    assert version == str(SCHEMA_VERSION) == "5"
    assert [(r["contract"], r["label"], r["kind"]) for r in query(database)] == [
        ("old:C", "v1", "contract"), ("m:C", "v2", "tool")]


def test_a_newer_schema_is_refused_and_not_written(database: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    StatsStore(database).close()
    engine = sa.create_engine(database)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE meta SET value = '99' "
                                   "WHERE key = 'schema_version'"))
    engine.dispose()
    with caplog.at_level(logging.WARNING, "hoare.stats"):
        store = StatsStore(database)
        store.record(_record())
        store.close()
    assert store.dropped == 1 and "upgrade hoare" in (store.broken or "")
    with pytest.raises(StoreError, match="upgrade hoare"):
        query(database)


def test_retention_deletes_old_calls(database: str) -> None:
    store = StatsStore(database)
    store.record(_record("old")._replace(ts=time.time() - 10 * 86_400))
    store.record(_record("new"))
    store.close()
    StatsStore(database, retention_days=7).close()
    assert [r["label"] for r in query(database)] == ["new"]


def test_a_server_that_refuses_warns_once_and_never_fails_a_call(
        caplog: pytest.LogCaptureFixture) -> None:
    url = f"postgresql+psycopg://hoare:secret-pw@127.0.0.1:{_free_port()}/none"
    answers = iter(['{"n": 3}'] * 3)
    with caplog.at_level(logging.WARNING, "hoare.stats"):
        configure(stats=url)
        try:
            counter = Count(engine=FunctionEngine(lambda request: next(answers)))
            assert [counter(Q(text="x")).n for _ in range(3)] == [3, 3, 3]
            hoare.flush_stats()
        finally:
            configure(stats=None)
    warnings = [r.getMessage() for r in caplog.records if r.name == "hoare.stats"]
    assert len(warnings) == 1 and "cannot open" in warnings[0]
    assert "secret-pw" not in warnings[0]  # the password is not logged
    shown = subprocess.run([sys.executable, "-m", "hoare", "stats", "--db", url],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert shown.returncode == 2 and "cannot read the store" in shown.stderr
    assert "secret-pw" not in shown.stderr


V3 = V1.replace("trials TEXT NOT NULL);", "trials TEXT NOT NULL, kind TEXT NOT NULL DEFAULT "
                "'contract', provider_faults INTEGER NOT NULL DEFAULT 0);").replace(
    "('schema_version', '1')", "('schema_version', '3')")


def test_a_version_3_database_is_migrated_to_shadow_refusals(database: str) -> None:
    engine = sa.create_engine(database)
    with engine.begin() as connection:
        for statement in V3.strip().split(";"):
            if statement.strip():
                connection.execute(sa.text(statement))
    assert [r["shadow_refusals"] for r in query(database)] == [0]  # read before migrating
    store = StatsStore(database)
    store.record(_record("v4")._replace(shadow_refusals=1))
    store.close()
    assert (store.written, store.broken) == (1, None)
    with engine.connect() as connection:
        version = connection.execute(sa.text(
            "SELECT value FROM meta WHERE key = 'schema_version'")).scalar_one()
    engine.dispose()
    assert version == str(SCHEMA_VERSION) == "5"
    assert [(r["label"], r["shadow_refusals"]) for r in query(database)] == [
        ("v1", 0), ("v4", 1)]


def test_hostile_values_never_lose_a_batch_in_postgresql(database: str) -> None:
    """PostgreSQL refuses NUL in text and counts beyond INTEGER: sanitized, every good
    record of the batch kept."""
    store = StatsStore(database)
    for index in range(50):
        store.record(_record(f"good-{index}"))
    store.record(_record("nul\x00label")._replace(attempts=2**40, input_tokens=10**20,
                                                  model="m\udcff", cost=float("nan")))
    assert store.flush()
    store.close()
    labels = [r["label"] for r in query(database)]
    assert [label for label in labels if label.startswith("good-")] == \
        [f"good-{i}" for i in range(50)]
    assert "nul\\x00label" in labels and store.dropped == 0


V4 = V3.replace("provider_faults INTEGER NOT NULL DEFAULT 0);",
                "provider_faults INTEGER NOT NULL DEFAULT 0, shadow_refusals INTEGER NOT NULL "
                "DEFAULT 0); CREATE TABLE families (contract TEXT NOT NULL, family TEXT NOT "
                "NULL, message TEXT NOT NULL, PRIMARY KEY (contract, family));").replace(
    "('schema_version', '3')", "('schema_version', '4')")


def test_a_version_4_database_is_migrated_losing_nothing(database: str) -> None:
    """Schema 5 (a call's shape stored once, its numbers per call, ``calls`` a view):
    a version 4 database keeps every row, its id and every figure ``hoare stats``
    shows; the calls written after it continue its ids (the sequences moved past the
    migrated ones), and a record of a migrated shape adds no shape."""
    from hoare.stats.report import summarize

    engine = sa.create_engine(database)
    with engine.begin() as connection:
        for statement in V4.strip().split(";"):
            if statement.strip():
                connection.execute(sa.text(statement))
        for index in range(30):
            connection.execute(sa.text(
                "INSERT INTO calls (ts, contract, contract_hash, label, success, "
                "first_attempt, attempts, remedies, preflight, input_tokens, cost, "
                "latency_ms, engine, model, trials, kind, provider_faults, shadow_refusals) "
                "VALUES (:ts, :contract, 'h', :label, :ok, :ok, 1, 0, :preflight, :tokens, "
                ":cost, :latency, 'E', NULL, :trials, 'contract', 0, :shadow)"),
                {"ts": 1.0 + index, "contract": f"m:C{index % 2}", "label": f"l{index % 3}",
                 "ok": int(index % 4 != 0), "preflight": None if index % 5 else "unknown",
                 "tokens": None if index % 2 else index, "cost": index / 10,
                 "latency": 2.0 * index, "shadow": int(index % 7 == 0),
                 "trials": json.dumps([["f", index % 4 != 0]])})
        connection.execute(sa.text("INSERT INTO families VALUES ('m:C0', 'f', 'rule f')"))
    before = query(database)
    assert len(before) == 31
    store = StatsStore(database)
    store.record(CallRecord(100.0, "m:C1", "h", "l1", True, True, 1, 0, None, None, None,
                            0.1, 2.0, "E", None, (("f", True),)))
    store.close()
    assert (store.written, store.broken) == (1, None)
    with engine.connect() as connection:
        version = connection.execute(sa.text(
            "SELECT value FROM meta WHERE key = 'schema_version'")).scalar_one()
        shapes = connection.execute(sa.text("SELECT count(*) FROM call_shapes")).scalar_one()
        distinct = connection.execute(sa.text(
            "SELECT count(*) FROM (SELECT DISTINCT contract, label, success, preflight, "
            "trials, shadow_refusals FROM calls) AS d")).scalar_one()
    engine.dispose()
    after = query(database)
    assert version == "5" and after[:-1] == before
    assert summarize(after[:-1]) == summarize(before)
    assert after[-1]["id"] > max(r["id"] for r in before) and after[-1]["label"] == "l1"
    assert shapes == distinct  # the new record's shape was a migrated one
    from hoare.stats.query import family_messages

    assert family_messages(database) == {("m:C0", "f"): "rule f"}
