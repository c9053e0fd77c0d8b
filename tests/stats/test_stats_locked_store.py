"""A stats store another process holds locked is named as locked, not as "not a hoare
stats store" (before: ``hoare stats`` said the store was not one, sending the user to
look for a corrupt file), and it is left exactly as it was."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hoare.stats.query import query
from hoare.stats.records import CallRecord
from hoare.stats.schema import StoreError
from hoare.stats.store import StatsStore


def test_a_locked_store_is_named_locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    db = tmp_path / "calls.db"
    store = StatsStore(db)
    store.record(CallRecord(time.time(), "m:C", "h", "l", True, True, 1, 0, None, None,
                            None, 0.01, 5.0, "E", None, ()))
    store.close()
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode=DELETE")  # a lock a reader must wait for
    connection.close()
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
         "c.execute('BEGIN EXCLUSIVE')\n"
         "c.execute('CREATE TABLE held (x)')\n"
         "print('held', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        connect = sqlite3.connect

        def impatient(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            kwargs["timeout"] = 0.2  # the reader's 30 s wait, shortened for the test
            return connect(*args, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", impatient)
        with pytest.raises(StoreError, match="locked by another process") as raised:
            query(str(db))
        assert "not a hoare stats store" not in str(raised.value)
    finally:
        holder.communicate("", timeout=30)  # the holder rolls back and ends
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
