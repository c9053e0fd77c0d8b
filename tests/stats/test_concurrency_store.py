"""The stats store under concurrency: processes that open one fresh (or old-schema)
file at the same instant, threads that record while others flush: every record is
written exactly once, no process's store gives up on a busy file, a ``flush`` that
returns True has written every record queued before it began, and the file stays
whole. Each scenario runs in child processes (a crash or a hang fails the test)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from library_under_test import LIBRARY

WRITER = textwrap.dedent(r'''
    import sys, time
    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore
    start = float(sys.argv[4])
    while time.time() < start:  # every writer opens the file at the same instant
        pass
    store = StatsStore(sys.argv[1])
    for index in range(int(sys.argv[3])):
        store.record(CallRecord(time.time(), "m:C", "h", sys.argv[2], index % 3 != 0, True,
                                1, 0, None, 1, 1, None, 1.0, "E", None, (("f", True),)))
    flushed = store.flush(120)
    store.close()
    print(flushed, store.written, store.dropped, store.broken, flush=True)
''')

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


def _env() -> dict[str, str]:
    return {"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")}


@pytest.mark.parametrize("start", ["fresh", "version 1", "version 1 in WAL"])
def test_processes_opening_one_file_at_once_write_every_record(tmp_path: Path,
                                                               start: str) -> None:
    path = tmp_path / "shared.db"
    if start != "fresh":
        with sqlite3.connect(path) as connection:
            connection.executescript(SQLITE_V1)
            if start.endswith("WAL"):
                connection.execute("PRAGMA journal_mode=WAL")
    at = time.time() + 3  # after every interpreter has started
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{i}", "300",
                                 str(at)], stdout=subprocess.PIPE, text=True, env=_env())
               for i in range(6)]
    outputs = [w.communicate(timeout=600)[0].split() for w in writers]
    assert all(w.returncode == 0 for w in writers)
    # flushed, written, dropped, broken: no store refused the busy file
    assert outputs == [["True", "300", "0", "None"]] * 6
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = dict(connection.execute("SELECT label, count(*) FROM calls GROUP BY label"))
    expected = {f"p{i}": 300 for i in range(6)}
    if start != "fresh":
        expected["v1"] = 1  # the old record migrated, once
    assert counts == expected


FLUSHING = textwrap.dedent(r'''
    import json, sqlite3, sys, threading, time
    sys.setswitchinterval(1e-5)
    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore
    store = StatsStore(sys.argv[1])
    lock = threading.Lock()
    recorded = [0]
    stop = threading.Event()
    problems = []

    def record():
        while not stop.is_set():
            for _ in range(50):
                store.record(CallRecord(time.time(), "m:C", "h", "x", True, True, 1, 0,
                                        None, 1, 1, None, 1.0, "E", None, ()))
            with lock:
                recorded[0] += 50
            time.sleep(0.002)

    def flush():
        for _ in range(20):
            with lock:
                before = recorded[0]  # queued before this flush began
            if store.flush(60):
                with sqlite3.connect(sys.argv[1], timeout=60) as connection:
                    stored = connection.execute("SELECT count(*) FROM calls").fetchone()[0]
                if stored < before:
                    problems.append([before, stored])
            time.sleep(0.01)

    recorders = [threading.Thread(target=record) for _ in range(4)]
    flushers = [threading.Thread(target=flush) for _ in range(3)]
    for thread in recorders + flushers:
        thread.start()
    for thread in flushers:
        thread.join(300)
    stop.set()
    for thread in recorders:
        thread.join(60)
    final = store.flush(120)
    with sqlite3.connect(sys.argv[1]) as connection:
        stored = connection.execute("SELECT count(*) FROM calls").fetchone()[0]
    print(json.dumps({"problems": problems, "final": final, "recorded": recorded[0],
                      "stored": stored, "written": store.written, "dropped": store.dropped}))
''')


def test_a_flush_that_returns_true_has_written_what_was_queued_before(
        tmp_path: Path) -> None:
    path = tmp_path / "flushing.db"
    done = subprocess.run([sys.executable, "-c", FLUSHING, str(path)], capture_output=True,
                          text=True, timeout=600, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["problems"] == [] and found["final"]
    assert found["stored"] == found["written"] == found["recorded"] and found["dropped"] == 0
