"""CachedEngine: the four modes, repeated sampling, the file, and two processes at once."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from openai_server import OpenAIServer, error

from hoare.engines import (
    CacheConflict,
    CachedEngine,
    CacheFileError,
    CacheMiss,
    EngineError,
    Message,
    Options,
    Request,
    Response,
    Usage,
)


def req(text: str = "hi", **options: object) -> Request:
    return Request(messages=(Message("user", text),), schema={"type": "object"},
                   options=Options(**options), contract="Demo")  # type: ignore[arg-type]


class Sampler:
    """Answers ``<prompt>#<k>`` for its k-th call (0-based), with token usage."""

    model = "sampler"

    def __init__(self, fail_first: int = 0) -> None:
        self.calls = 0
        self.fail_first = fail_first

    def complete(self, request: Request) -> Response:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise EngineError("transient")
        text = f"{request.messages[-1].content}#{self.calls - 1 - self.fail_first}"
        return Response((text,), ("stop",), Usage(1, 7, 3), "sampler-1")

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


def test_read_write_records_then_answers_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    first = Sampler()
    recorded = CachedEngine(first, path).complete(req())
    second = Sampler()
    replayed = CachedEngine(second, path).complete(req())
    assert recorded.text == replayed.text == "hi#0"
    assert second.calls == 0
    assert replayed.cached and not recorded.cached
    assert replayed.usage == Usage(1, 7, 3)
    assert replayed.model == "sampler-1"
    assert replayed.finish_reasons == ("stop",)


def test_repeated_sampling_replays_different_answers_in_order(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    recorder = CachedEngine(Sampler(), path)
    recorded = [recorder.complete(req()).text for _ in range(3)]
    assert recorded == ["hi#0", "hi#1", "hi#2"]
    replay = CachedEngine(None, path, mode="replay")
    assert [replay.complete(req()).text for _ in range(3)] == recorded
    with pytest.raises(CacheMiss) as caught:
        replay.complete(req())
    message = str(caught.value)
    assert "#3" in message and "3 answer(s) on record" in message
    assert "'Demo'" in message and "mode='read_write'" in message
    assert replay.hits == 3 and replay.misses == 1


def test_read_write_extends_a_sampled_sequence(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Sampler(), path).complete(req())
    later = Sampler()
    engine = CachedEngine(later, path)
    assert [engine.complete(req()).text for _ in range(2)] == ["hi#0", "hi#0"]
    assert later.calls == 1  # index 0 from the file, index 1 fresh
    assert len(CachedEngine(None, path, mode="replay")) == 2


def test_replay_never_calls_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Sampler(), path).complete(req("known"))
    inner = Sampler()
    replay = CachedEngine(inner, path, mode="replay")
    assert replay.complete(req("known")).text == "known#0"
    with pytest.raises(CacheMiss):
        replay.complete(req("unknown"))
    assert inner.calls == 0


def test_replay_of_a_missing_file_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="record it first"):
        CachedEngine(None, tmp_path / "absent.json", mode="replay")


def test_only_replay_runs_without_an_engine(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="replay"):
        CachedEngine(None, tmp_path / "c.json")
    with pytest.raises(ValueError, match="mode"):
        CachedEngine(Sampler(), tmp_path / "c.json", mode="bogus")  # type: ignore[arg-type]


def test_create_refuses_existing_entries_and_records_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Sampler(), path).complete(req("old"))
    inner = Sampler()
    create = CachedEngine(inner, path, mode="create")
    with pytest.raises(CacheConflict, match="already has answer #0"):
        create.complete(req("old"))
    assert inner.calls == 0
    assert create.complete(req("new")).text == "new#0"
    assert len(CachedEngine(None, path, mode="replay")) == 2


def test_off_passes_through_and_never_touches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    inner = Sampler()
    engine = CachedEngine(inner, path, mode="off")
    assert [engine.complete(req()).text for _ in range(2)] == ["hi#0", "hi#1"]
    assert inner.calls == 2
    assert not path.exists()


def test_key_covers_messages_schema_options_but_not_timeout(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Sampler(), path).complete(req(temperature=0.5, timeout=1.0))
    inner = Sampler()
    engine = CachedEngine(inner, path)
    assert engine.complete(req(temperature=0.5, timeout=99.0)).cached
    assert not engine.complete(req(temperature=0.7)).cached
    other_schema = Request(messages=(Message("user", "hi"),), schema={"type": "array"},
                           options=Options(temperature=0.5))
    assert not engine.complete(other_schema).cached
    assert inner.calls == 2


def test_failed_calls_are_not_recorded_and_replay_stays_aligned(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    recorder = CachedEngine(Sampler(fail_first=1), path)
    with pytest.raises(EngineError, match="transient"):
        recorder.complete(req())
    assert recorder.complete(req()).text == "hi#0"
    replay = CachedEngine(None, path, mode="replay")
    with pytest.raises(CacheMiss):  # where the recording failed, the replay fails too
        replay.complete(req())
    assert replay.complete(req()).text == "hi#0"


def test_file_is_readable_sorted_json_and_no_temp_files_remain(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.json"
    engine = CachedEngine(Sampler(), path)
    for text in ("b", "a", "b"):
        engine.complete(req(text))
    raw = path.read_text()
    data = json.loads(raw)
    assert raw.startswith('{\n  "entries": [\n')
    assert raw == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["format"] == "hoare-engine-cache" and data["version"] == 1
    entries = data["entries"]
    assert len(entries) == 3
    assert [(e["key"], e["index"]) for e in entries] == sorted((e["key"], e["index"])
                                                               for e in entries)
    by_text = {(e["request"]["messages"][0]["content"], e["index"]): e for e in entries}
    assert set(by_text) == {("a", 0), ("b", 0), ("b", 1)}
    entry = by_text[("b", 1)]
    assert entry["response"] == {"texts": ["b#2"], "finish_reasons": ["stop"],
                                 "usage": {"requests": 1, "input_tokens": 7, "output_tokens": 3},
                                 "model": "sampler-1"}
    assert entry["request"]["schema"] == {"type": "object"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["cache.json", "cache.json.lock"]


def test_a_failed_write_leaves_the_old_file_intact(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache.json"
    engine = CachedEngine(Sampler(), path)
    engine.complete(req("first"))
    before = path.read_text()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    answer = engine.complete(req("second"))  # the answer survives the failed write
    assert answer.texts and not answer.cached
    monkeypatch.undo()
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.json", "cache.json.lock"]


def test_hand_edited_answers_are_replayed(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Sampler(), path).complete(req())
    data = json.loads(path.read_text())
    data["entries"][0]["response"]["texts"] = ['{"edited": true}']
    path.write_text(json.dumps(data))
    assert CachedEngine(None, path, mode="replay").complete(req()).text == '{"edited": true}'


def test_a_corrupt_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_text("{not json")
    with pytest.raises(CacheFileError, match="not a hoare engine cache"):
        CachedEngine(Sampler(), path)


def test_async_record_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"

    async def record() -> list[str]:
        engine = CachedEngine(Sampler(), path)
        return [(await engine.acomplete(req())).text for _ in range(2)]

    async def replay() -> list[str]:
        engine = CachedEngine(None, path, mode="replay")
        return [(await engine.acomplete(req())).text for _ in range(2)]

    assert asyncio.run(record()) == asyncio.run(replay()) == ["hi#0", "hi#1"]


def test_transport_retries_bypass_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    with OpenAIServer([error(500, "flaky"), "answer"]) as server:
        engine = CachedEngine(server.engine(), path)
        assert engine.complete(req()).text == "answer"
        sent = len(server.bodies)
    entries = json.loads(path.read_text())["entries"]
    assert sent == 2
    assert [(e["index"], e["response"]["texts"]) for e in entries] == [(0, ["answer"])]
    assert CachedEngine(None, path, mode="replay").complete(req()).text == "answer"


WRITER = textwrap.dedent("""
    import sys
    from hoare.engines import CachedEngine, FunctionEngine, Message, Request

    path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    engine = CachedEngine(FunctionEngine(lambda r: "answer " + r.messages[0].content), path)
    for i in range(count):
        engine.complete(Request(messages=(Message("user", f"{tag}-{i}"),)))
""")


def test_two_processes_writing_one_cache_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    count = 25
    processes = [subprocess.Popen([sys.executable, str(script), str(path), tag, str(count)],
                                  stderr=subprocess.PIPE, text=True)
                 for tag in ("p1", "p2", "p3")]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    entries = json.loads(path.read_text())["entries"]
    prompts = sorted(e["request"]["messages"][0]["content"] for e in entries)
    expected = sorted(f"{tag}-{i}" for tag in ("p1", "p2", "p3") for i in range(count))
    assert prompts == expected
    replay = CachedEngine(None, path, mode="replay")
    assert replay.complete(Request(messages=(Message("user", "p2-7"),))).text == "answer p2-7"
