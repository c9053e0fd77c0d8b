"""CachedEngine under faults: failed writes, unencodable answers, killed writers, races.

The rule: a paid answer is never lost. A failed write logs a warning and the answer is
returned; later writes still work; a writer killed mid-write leaves no temporary file
behind for long; concurrent writers (threads, processes) lose and corrupt nothing.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hoare.engines import CachedEngine, FunctionEngine, Message, Request
from hoare.engines.cache_files import STALE_TEMP_SECONDS, remove_stale_temp_files


def req(text: str) -> Request:
    return Request(messages=(Message("user", text),))


def echo(prefix: str = "answer ") -> FunctionEngine:
    return FunctionEngine(lambda r: prefix + r.messages[0].content)


def on_file(path: Path) -> dict[str, list[str]]:
    entries = json.loads(path.read_text(encoding="utf-8"))["entries"]
    return {e["request"]["messages"][0]["content"]: e["response"]["texts"] for e in entries}


def test_failed_write_returns_the_answer_and_later_writes_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.json"
    engine = CachedEngine(echo(), path)
    real_mkstemp = tempfile.mkstemp

    def read_only(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with caplog.at_level(logging.WARNING, logger="hoare.engines"):
        assert engine.complete(req("one")).text == "answer one"
    assert any("could not save" in r.getMessage() for r in caplog.records)
    assert len(engine) == 1  # kept in memory, saved with the next write
    monkeypatch.setattr(tempfile, "mkstemp", real_mkstemp)
    assert engine.complete(req("two")).text == "answer two"
    assert on_file(path) == {"one": ["answer one"], "two": ["answer two"]}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs a POSIX user that permissions apply to")
def test_read_only_directory(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    engine = CachedEngine(echo(), folder / "cache.json")
    folder.chmod(0o555)
    try:
        assert engine.complete(req("x")).text == "answer x"
    finally:
        folder.chmod(0o755)
    assert engine.complete(req("y")).text == "answer y"
    assert on_file(folder / "cache.json") == {"x": ["answer x"], "y": ["answer y"]}


def test_an_answer_with_a_lone_surrogate_is_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    engine = CachedEngine(FunctionEngine(lambda r: "bad \ud800 text " + r.messages[0].content),
                          path)
    assert engine.complete(req("a")).text == "bad \ud800 text a"
    assert engine.complete(req("b")).text == "bad \ud800 text b"  # later writes still work
    replay = CachedEngine(None, path, mode="replay")
    assert replay.complete(req("a")).text == "bad \ud800 text a"
    assert replay.complete(req("b")).cached


def test_stale_temp_files_of_dead_writers_are_removed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f".cache.json.{dead.pid}.abc123.tmp"
    mine = tmp_path / f".cache.json.{os.getpid()}.def456.tmp"
    ancient = tmp_path / f".cache.json.{os.getpid()}.old.tmp"
    unrelated = tmp_path / ".other.json.1.x.tmp"
    for file in (orphan, mine, ancient, unrelated):
        file.write_text("{")
    past = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(ancient, (past, past))
    CachedEngine(echo(), path)
    assert not orphan.exists() and not ancient.exists()
    assert mine.exists() and unrelated.exists()  # a live writer's file, another cache's file
    assert remove_stale_temp_files(path) == []


KILLED_WRITER = textwrap.dedent("""
    import os, sys, time
    from hoare.engines import CachedEngine, FunctionEngine, Message, Request

    def stall(fd):
        print("writing", flush=True)
        time.sleep(60)

    os.fsync = stall
    engine = CachedEngine(FunctionEngine(lambda r: "paid"), sys.argv[1])
    engine.complete(Request(messages=(Message("user", "q"),)))
""")


@pytest.mark.skipif(os.name != "posix", reason="kill -9")
def test_kill_9_during_a_write_leaves_no_temp_file_for_long(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    writer = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
        temps = list(tmp_path.glob(".cache.json.*.tmp"))
        assert len(temps) == 1 and f".{writer.pid}." in temps[0].name
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    engine = CachedEngine(echo(), path)
    assert list(tmp_path.glob(".cache.json.*.tmp")) == []
    assert engine.complete(req("after")).text == "answer after"


def test_threads_writing_one_cache_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    engine = CachedEngine(echo(), path)
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for i in range(8):
                assert engine.complete(req(f"t{thread}-{i}")).text == f"answer t{thread}-{i}"
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert on_file(path) == {f"t{t}-{i}": [f"answer t{t}-{i}"] for t in range(12)
                             for i in range(8)}


SAME_REQUEST_WRITER = textwrap.dedent("""
    import sys
    from hoare.engines import CachedEngine, FunctionEngine, Message, Request

    path, tag = sys.argv[1], sys.argv[2]
    paid = []

    def answer(request):
        paid.append(request.messages[0].content)
        return "from " + tag

    engine = CachedEngine(FunctionEngine(answer), path)
    print("ready", flush=True)  # both have read the (empty) file
    sys.stdin.readline()  # start together
    for i in range(10):
        engine.complete(Request(messages=(Message("user", f"shared-{i}"),)))
    print(" ".join(paid), flush=True)
""")


def test_two_processes_answering_the_same_requests_keep_every_paid_answer(
        tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    script = tmp_path / "writer.py"
    script.write_text(SAME_REQUEST_WRITER)
    writers = [subprocess.Popen([sys.executable, str(script), str(path), tag],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
               for tag in ("p1", "p2")]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outputs = [w.communicate(timeout=120) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    entries = json.loads(path.read_text())["entries"]
    recorded = sorted((e["request"]["messages"][0]["content"], e["response"]["texts"][0])
                      for e in entries)
    paid = sorted((prompt, f"from {tag}")
                  for (out, _), tag in zip(outputs, ("p1", "p2"), strict=True)
                  for prompt in out.split())
    assert recorded == paid  # every answer paid for is on file, none twice, nothing else
    assert {prompt for prompt, _ in recorded} == {f"shared-{i}" for i in range(10)}
