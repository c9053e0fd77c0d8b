"""CachedEngine against hostile cache files, its key, and its memory.

The class: every way a cache file can be malformed (bytes, wrong JSON shapes, wrong
types at any depth, NaN, huge numbers, deep nesting) is a ``CacheFileError`` naming
the file and the fault; never a raw error, never a silently wrong replay. The key
holds the model actually asked and the options the answer was made with. The file is
not held in memory: an index and a bounded number of parsed answers are.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.engines import (
    CachedEngine,
    CacheFileError,
    CacheMiss,
    Message,
    Options,
    Request,
    Response,
    Usage,
)
from hoare.engines.base import TokenLogprob
from hoare.engines.cache_files import read_cache_file
from hoare.engines.cache_format import MAX_COUNT


def req(text: str = "hi", **options: Any) -> Request:
    return Request(messages=(Message("user", text),), schema={"type": "object"},
                   options=Options(**options))


class Model:
    """Answers ``<model>:<prompt>#<k>``, with logprobs and tool-call-free usage."""

    def __init__(self, model: str = "model-a", default_options: Options | None = None) -> None:
        self.model = model
        self.default_options = default_options or Options()
        self.calls = 0

    def complete(self, request: Request) -> Response:
        self.calls += 1
        used = request.options.model or self.model
        text = f"{used}:{request.messages[-1].content}#{self.calls - 1}"
        return Response((text,), ("stop",), Usage(1, 7, 3, 2), used,
                        logprobs=((TokenLogprob("a", -0.5, (("b", -1.5),)),),))

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


def recorded(tmp_path: Path, count: int = 1) -> Path:
    path = tmp_path / "cache.json"
    engine = CachedEngine(Model(), path)
    for i in range(count):
        engine.complete(req(f"q{i}"))
    return path


def _assert_valid(response: Response) -> None:
    assert all(isinstance(t, str) for t in response.texts)
    assert all(r is None or isinstance(r, str) for r in response.finish_reasons)
    for count in (response.usage.requests, response.usage.input_tokens,
                  response.usage.output_tokens, response.usage.cached_input_tokens):
        assert type(count) is int and 0 <= count <= MAX_COUNT
    for tokens in response.logprobs:
        for token in tokens or ():
            assert isinstance(token.token, str) and math.isfinite(token.logprob)
            assert all(isinstance(a, str) and math.isfinite(v) for a, v in token.top)
    assert isinstance(response.model, str)


def _opens_or_names_the_file(path: Path) -> CachedEngine | None:
    try:
        return CachedEngine(Model(), path)
    except CacheFileError as error:
        assert str(path) in str(error)
        assert len(str(error)) < 1000
        return None


# -- bytes ----------------------------------------------------------------------------------

@given(st.binary(max_size=200))
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_bytes_are_a_cache_file_error(tmp_path: Path, data: bytes) -> None:
    """Before: invalid UTF-8 raised a bare UnicodeDecodeError."""
    path = tmp_path / "random.json"
    path.write_bytes(data)
    engine = _opens_or_names_the_file(path)
    if engine is not None:
        assert len(engine) == 0  # only an empty (or entry-less) file opens


@pytest.mark.parametrize("data", [b"\xff\xfe\x00", b'{"entries": [\xc0]}', b"\x80" * 10,
                                  "é".encode("latin-1")])
def test_invalid_utf8_names_the_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(CacheFileError, match="not UTF-8") as raised:
        CachedEngine(Model(), path)
    assert str(path) in str(raised.value)


# -- shapes ---------------------------------------------------------------------------------

def _entry(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    document = json.loads(path.read_text())
    return document, document["entries"][0]


SHAPES: list[tuple[str, Any]] = [
    ("texts a string", lambda e: e["response"].__setitem__("texts", "abc")),
    ("texts holding a number", lambda e: e["response"].__setitem__("texts", [1])),
    ("texts missing", lambda e: e["response"].pop("texts")),
    ("response a list", lambda e: e.__setitem__("response", ["x"])),
    ("request a string", lambda e: e.__setitem__("request", "x")),
    ("index negative", lambda e: e.__setitem__("index", -1)),
    ("index a float", lambda e: e.__setitem__("index", 0.5)),
    ("index a bool", lambda e: e.__setitem__("index", True)),
    ("index huge", lambda e: e.__setitem__("index", 10**20)),
    ("usage a list", lambda e: e["response"].__setitem__("usage", [1, 2])),
    ("usage negative", lambda e: e["response"]["usage"].__setitem__("input_tokens", -5)),
    ("usage a string", lambda e: e["response"]["usage"].__setitem__("output_tokens", "7")),
    ("usage huge", lambda e: e["response"]["usage"].__setitem__("output_tokens", 10**20)),
    ("usage fractional", lambda e: e["response"]["usage"].__setitem__("requests", 1.5)),
    ("cached above input", lambda e: e["response"]["usage"].__setitem__(
        "cached_input_tokens", 10**6)),
    ("finish reasons a string", lambda e: e["response"].__setitem__("finish_reasons", "stop")),
    ("finish reason a number", lambda e: e["response"].__setitem__("finish_reasons", [3])),
    ("model a number", lambda e: e["response"].__setitem__("model", 3)),
    ("tool calls a dict", lambda e: e["response"].__setitem__("tool_calls", {"a": 1})),
    ("tool call without function", lambda e: e["response"].__setitem__(
        "tool_calls", [{"id": "x"}])),
    ("tool call name a number", lambda e: e["response"].__setitem__(
        "tool_calls", [{"id": "x", "function": {"name": 1, "arguments": "{}"}}])),
    ("stopped early a number", lambda e: e["response"].__setitem__("stopped_early", 1)),
    ("logprobs a string", lambda e: e["response"].__setitem__("logprobs", "x")),
    ("logprob a string", lambda e: e["response"]["logprobs"][0][0].__setitem__(1, "x")),
    ("logprob item short", lambda e: e["response"]["logprobs"][0].__setitem__(0, ["a"])),
    ("alternative a dict", lambda e: e["response"]["logprobs"][0][0][2].__setitem__(0, {})),
]


@pytest.mark.parametrize(("name", "mutate"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_wrong_shape_at_any_depth_is_a_cache_file_error(
        tmp_path: Path, name: str, mutate: Any) -> None:
    path = recorded(tmp_path)
    document, entry = _entry(path)
    mutate(entry)
    path.write_text(json.dumps(document))
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(None, path, mode="replay")
    assert str(path) in str(raised.value) and "entry 0" in str(raised.value)


def test_texts_as_a_string_is_not_replayed_one_character_per_completion(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    document, entry = _entry(path)
    entry["response"]["texts"] = '{"a": 1}'
    path.write_text(json.dumps(document))
    with pytest.raises(CacheFileError, match=r"'response.texts' must be a list, not str"):
        CachedEngine(None, path, mode="replay")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000,
                                  "-" + "9" * 30])
def test_non_numbers_and_huge_numbers_are_cache_file_errors(tmp_path: Path, text: str) -> None:
    path = recorded(tmp_path)
    raw = path.read_text()
    for field in ('"output_tokens": 3', '"logprob_placeholder"'):
        if field in raw:
            raw = raw.replace(field, f'"output_tokens": {text}', 1)
    path.write_text(raw)
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(None, path, mode="replay")
    assert str(path) in str(raised.value)


def test_a_nan_logprob_on_file_is_a_cache_file_error(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    raw = path.read_text().replace("-0.5", "NaN", 1)
    assert "NaN" in raw
    path.write_text(raw)
    with pytest.raises(CacheFileError, match="NaN"):
        CachedEngine(None, path, mode="replay")


@pytest.mark.parametrize("where", ["top", "entries", "texts", "request"])
def test_nesting_100000_deep_is_a_cache_file_error(tmp_path: Path, where: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.json"
    documents = {
        "top": deep,
        "entries": '{"entries": ' + deep + "}",
        "texts": '{"entries": [{"index": 0, "request": {}, "response": {"texts": '
                 + deep + "}}]}",
        "request": '{"entries": [{"index": 0, "request": ' + deep
                   + ', "response": {"texts": []}}]}',
    }
    path.write_text(documents[where])
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(None, path, mode="replay")
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("document", ["[]", '{"entries": []}', "", "  \n",
                                      '{"format": "hoare-engine-cache", "version": 1, '
                                      '"entries": []}'])
def test_empty_caches_open(tmp_path: Path, document: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(document)
    assert len(CachedEngine(Model(), path)) == 0


@pytest.mark.parametrize("document", ['{"format": "other", "entries": []}',
                                      '{"version": 2, "entries": []}',
                                      '{"version": true, "entries": []}',
                                      '{"entries": {}}', '{"nothing": 1}', '{"entries": []} x',
                                      '{"entries": [1]}', "3", '"text"', "null"])
def test_not_a_cache_is_named(tmp_path: Path, document: str) -> None:
    path = tmp_path / "other.json"
    path.write_text(document)
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(Model(), path)
    assert str(path) in str(raised.value)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**25), max_value=10**25),
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8)


def _locations(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _locations(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _locations(value, (*path, i))
    return found


@given(choice=st.integers(min_value=0), value=JSON_VALUES)
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_value_anywhere_is_an_error_or_replayed_exactly(
        tmp_path: Path, choice: int, value: Any) -> None:
    """Replace any one node of a recorded file by any JSON value (NaN and infinities as
    Python writes them): opening either fails with CacheFileError naming the file, or
    each answer replays with valid fields exactly as on file."""
    base = tmp_path / "base.json"
    if not base.exists():
        recorded(tmp_path).rename(base)
    document = json.loads(base.read_text())
    locations = _locations(document)
    target = locations[choice % len(locations)]
    mutated = copy.deepcopy(document)
    if not target:
        mutated = value
    else:
        node = mutated
        for step in target[:-1]:
            node = node[step]
        node[target[-1]] = value
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(mutated))
    engine = _opens_or_names_the_file(path)
    if engine is None:
        return
    for entry in read_cache_file(path).values():
        try:
            stored = entry["request"]
            request = Request(messages=tuple(Message(m["role"], m["content"])
                                             for m in stored["messages"]),
                              schema=stored["schema"], schema_name=stored["schema_name"],
                              options=Options(**stored["options"]),
                              tools=tuple(stored.get("tools", ())))
            request.key()
        except (TypeError, ValueError, KeyError, AttributeError):
            continue  # the mutated request is not one a Request can make
        try:
            response = CachedEngine(None, path, mode="replay").complete(request)
        except CacheMiss:
            continue  # a request that keys differently (e.g. a mutated model option)
        _assert_valid(response)
        assert list(response.texts) == entry["response"]["texts"]


# -- the key --------------------------------------------------------------------------------

def test_a_cache_recorded_with_one_model_is_not_served_to_another(tmp_path: Path) -> None:
    """Before: model-b's engine was served model-a's recorded answer."""
    path = tmp_path / "cache.json"
    CachedEngine(Model("model-a"), path).complete(req())
    other = Model("model-b")
    response = CachedEngine(other, path).complete(req())
    assert other.calls == 1 and not response.cached
    assert response.text.startswith("model-b:")
    again = Model("model-a")
    assert CachedEngine(again, path).complete(req()).cached and again.calls == 0


def test_options_model_is_the_model_in_the_key(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Model("model-a"), path).complete(req(model="model-c"))
    # another engine asked for model-c explicitly: the same answer
    engine = Model("model-b")
    assert CachedEngine(engine, path).complete(req(model="model-c")).cached
    # model-a's engine asked without Options.model: a different request
    fresh = Model("model-a")
    assert not CachedEngine(fresh, path).complete(req()).cached


def test_the_engines_default_options_are_in_the_key(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Model(default_options=Options(temperature=0.0)), path).complete(req())
    hot = Model(default_options=Options(temperature=1.5, seed=3))
    assert not CachedEngine(hot, path).complete(req()).cached
    cold = Model(default_options=Options(temperature=0.0, timeout=5.0))
    assert CachedEngine(cold, path).complete(req()).cached
    explicit = Model()
    assert CachedEngine(explicit, path).complete(req(temperature=0.0)).cached


def test_a_replay_without_an_engine_takes_the_model_given(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    CachedEngine(Model("model-a"), path).complete(req())
    CachedEngine(Model("model-b"), path).complete(req())
    with pytest.raises(CacheMiss, match="several models"):
        CachedEngine(None, path, mode="replay").complete(req())
    replay = CachedEngine(None, path, mode="replay", model="model-b")
    assert replay.complete(req()).text.startswith("model-b:")
    with pytest.raises(CacheMiss):
        CachedEngine(None, path, mode="replay", model="model-z").complete(req())


# -- memory ---------------------------------------------------------------------------------

def test_the_file_is_not_held_in_memory(tmp_path: Path) -> None:
    """Before: every entry of the file stayed parsed in memory for the engine's life."""
    path = recorded(tmp_path, 40)
    replay = CachedEngine(None, path, mode="replay", max_entries_in_memory=5)
    for round_ in range(2):
        for i in range(40):
            assert replay.complete(req(f"q{i}")).text == f"model-a:q{i}#{i}"
        replay._seen.clear()  # replay the same requests again from index 0
        assert len(replay._recent) <= 5
        del round_
    assert not replay._unsaved
    assert not hasattr(replay, "_entries")


def test_a_file_replaced_by_another_writer_is_read_again(tmp_path: Path) -> None:
    path = recorded(tmp_path, 3)
    reader = CachedEngine(None, path, mode="replay", max_entries_in_memory=0)
    writer = CachedEngine(Model(), path)
    for i in range(10):
        writer.complete(req(f"extra {i} " + "é" * i))  # shifts every byte range
    for i in range(3):
        assert reader.complete(req(f"q{i}")).text == f"model-a:q{i}#{i}"


def test_an_answer_that_would_break_the_file_is_not_recorded(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.json"

    class Broken(Model):
        def complete(self, request: Request) -> Response:
            return Response(("x",), ("stop",), Usage(1, -5, 3),
                            logprobs=((TokenLogprob("a", float("nan")),),))

    engine = CachedEngine(Broken(), path)
    assert engine.complete(req()).text == "x"  # the answer is still returned
    assert "not recorded" in caplog.text
    CachedEngine(Model(), path).complete(req("other"))
    assert len(CachedEngine(None, path, mode="replay")) == 1


CONCURRENT_READERS = '''
import sys, threading
from hoare.engines import CachedEngine, Message, Options, Request, Response, Usage

path = sys.argv[1]

class Model:
    model = "model-a"
    default_options = Options()
    def complete(self, request):
        return Response(("fresh " + request.messages[-1].content,), ("stop",), Usage(1, 1, 1),
                        "model-a")
    async def acomplete(self, request):
        return self.complete(request)

def req(text):
    return Request(messages=(Message("user", text),), schema={"type": "object"})

reader = CachedEngine(None, path, mode="replay", max_entries_in_memory=3)
writer = CachedEngine(Model(), path)
errors = []

def read(worker):  # engines opened while the file is being replaced
    try:
        for i in range(worker, 30, 3):
            response = CachedEngine(None, path, mode="replay").complete(req(f"q{i}"))
            assert response.text == f"model-a:q{i}#{i}", response.text
    except BaseException as error:
        errors.append(repr(error))

def shared(worker):  # one shared engine, tiny LRU; each thread its own prompts
    try:
        for i in range(worker, 30, 4):
            response = reader.complete(req(f"q{i}"))
            assert response.text == f"model-a:q{i}#{i}", response.text
    except BaseException as error:
        errors.append(repr(error))

def write(worker):
    try:
        for i in range(15):
            writer.complete(req(f"w{worker}-{i} " + "é" * i))
    except BaseException as error:
        errors.append(repr(error))

threads = ([threading.Thread(target=read, args=(w,)) for w in range(3)]
           + [threading.Thread(target=shared, args=(w,)) for w in range(4)]
           + [threading.Thread(target=write, args=(w,)) for w in range(3)])
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("errors", errors)
assert not errors, errors
print("ok")
'''


def test_threads_replaying_while_others_rewrite_the_file(tmp_path: Path) -> None:
    """Many threads share one replay engine with a tiny LRU while other threads rewrite
    the file (shifting every byte range); in a child process, so a crash fails the test."""
    import subprocess
    import sys

    from library_under_test import LIBRARY

    path = recorded(tmp_path, 30)
    script = tmp_path / "readers.py"
    script.write_text(CONCURRENT_READERS)
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ,
                                                       "PYTHONPATH": LIBRARY})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout


def test_an_answer_whose_texts_are_a_string_is_not_recorded_per_character(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.json"

    class Careless(Model):
        def complete(self, request: Request) -> Response:
            return Response(texts='{"a": 1}')  # type: ignore[arg-type]

    CachedEngine(Careless(), path).complete(req())
    assert "not recorded" in caplog.text
    assert not path.exists() or len(CachedEngine(None, path, mode="replay")) == 0


def test_a_stream_stopped_early_is_not_served_to_a_request_that_does_not_watch(
        tmp_path: Path) -> None:
    path = tmp_path / "cache.json"

    class Stopping(Model):
        def complete(self, request: Request) -> Response:
            self.calls += 1
            if request.watch is not None:
                return Response(('{"a": ',), ("stopped_early",), Usage(1, 1, 1),
                                stopped_early="doomed")
            return Response(('{"a": 1}',), ("stop",), Usage(1, 1, 1))

    watched = Request(messages=(Message("user", "hi"),), watch=lambda text: None)
    CachedEngine(Stopping(), path).complete(watched)
    plain = Stopping()
    response = CachedEngine(plain, path).complete(Request(messages=(Message("user", "hi"),)))
    assert plain.calls == 1 and response.stopped_early is None
    again = Stopping()
    assert CachedEngine(again, path).complete(watched).stopped_early == "doomed"
    assert again.calls == 0


@pytest.mark.parametrize("document", ['{"entries": [], }', '{"format": "hoare-engine-cache" '
                                      '"entries": []}', '{"entries": [{}, ]}', "[,]",
                                      '{"entries": []', '{"entries" []}', "{,}"])
def test_json_syntax_errors_at_the_top_level_are_named(tmp_path: Path, document: str) -> None:
    path = tmp_path / "syntax.json"
    path.write_text(document)
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(Model(), path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("mode", ["read_write", "create", "replay"])
def test_a_directory_is_named(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "a-directory.json"
    path.mkdir()
    with pytest.raises(CacheFileError) as raised:
        CachedEngine(Model() if mode != "replay" else None, path, mode=mode)  # type: ignore[arg-type]
    assert str(path) in str(raised.value)


def test_a_reader_replays_however_often_the_file_is_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replaying engine whose file another writer replaces again right after every
    read still answers from one consistent version of the file (the class: a reader
    that pairs one version's bytes with another version's signature, or re-reads a file
    it just indexed, gave "keeps changing while being read" under load)."""
    import hoare.engines.cache as cache_module

    path = recorded(tmp_path, 6)
    reader = CachedEngine(None, path, mode="replay", max_entries_in_memory=0)
    writer = CachedEngine(Model(), path)
    real = cache_module.read_snapshot
    rewrites = []

    def read_then_replace(where: Path) -> Any:
        snapshot = real(where)
        rewrites.append(1)  # the file changes again before the reader can use it
        writer.complete(req(f"shift-{len(rewrites)} " + "é" * len(rewrites)))
        return snapshot

    monkeypatch.setattr(cache_module, "read_snapshot", read_then_replace)
    for i in range(6):
        writer.complete(req(f"before-{i}"))  # every span the reader indexed has moved
        assert reader.complete(req(f"q{i}")).text == f"model-a:q{i}#{i}"
    assert len(rewrites) >= 6  # the reader re-indexed (through the patch) every time
