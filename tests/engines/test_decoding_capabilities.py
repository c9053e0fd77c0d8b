"""Server capability tables (``hoare.engines.capabilities``, ``hoare probe``,
``structured="auto"``): measured against the loopback server acting as a decoder with
a configurable enforcement table, so "enforced" is told apart from "no error";
everything read back is validated (a corrupt table is reported, never crashed on)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer

from hoare import cli
from hoare.engines import Message, Request
from hoare.engines import capabilities as caps

ACTIONS = {"enforce": "enforced", "ignore": "ignored", "refuse": "refused",
           "drop": "dropped"}
KEYWORDS = [k for k in caps.KEYWORDS if k != "type"]


def expected(actions: dict[str, str], keyword: str) -> str:
    """What the probe must measure for ``keyword`` given the server's actions (the
    probe's schema also carries ``type``; the anyOf probe's branches carry ``enum``)."""
    used = ["type", keyword] + (["enum"] if keyword == "anyOf" else [])
    if any(actions.get(k, "ignore") == "refuse" for k in used):
        return "refused"
    if any(actions.get(k, "ignore") == "drop" for k in used):
        return "dropped"
    if all(actions.get(k, "ignore") == "enforce" for k in used[1:]):
        return "enforced"
    return "ignored"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({k: st.sampled_from(list(ACTIONS)) for k in KEYWORDS}),
       st.sampled_from(list(ACTIONS)))
def test_the_probe_measures_what_the_decoder_does(actions: dict[str, str], kind: str) -> None:
    table = {**actions, "type": "enforce"}
    with OpenAIServer(enforcement={"llama_cpp": table, "json_schema": {"type": kind},
                                   "openai_strict": {"type": "enforce"}}) as server:
        measured = caps.probe(server.url, "m", trials=2)
    for keyword in KEYWORDS:
        assert measured.verdict("llama_cpp", keyword) == expected(table, keyword), keyword
    assert measured.verdict("llama_cpp", "type") == "enforced"
    # json_schema: only the format's own action; every keyword the server ignores
    assert measured.verdict("json_schema", "type") == ACTIONS[kind]
    assert measured.verdict("openai_strict", "enum") == "ignored"
    assert caps.parse(json.loads(json.dumps(measured.as_dict())), "x").dialects == \
        measured.dialects  # what is written reads back the same


def _llama_server(**extra: Any) -> OpenAIServer:
    return OpenAIServer(enforcement={
        "llama_cpp": {"type": "enforce", "enum": "enforce", "anyOf": "enforce",
                      "pattern": "enforce", "minimum": "enforce", "maximum": "enforce"},
        "json_schema": {"type": "refuse"}, "openai_strict": {"type": "refuse"}}, **extra)


def test_hoare_probe_writes_the_table_and_structured_auto_uses_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("HOARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[a-z]+$"},
        "n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["code", "n"]}
    with _llama_server() as server:
        assert cli.main(["probe", server.url, "--model", "m", "--trials", "1"]) == 0
        written = caps.cache_path(server.url)
        assert written.parent == tmp_path / "cache" / "servers"
        table = caps.load(written)
        assert table.verdict("json_schema", "type") == "refused"
        assert table.verdict("llama_cpp", "pattern") == "enforced"
        before = len(server.bodies)
        server.push('{"code": "abc", "n": 2}')
        engine = server.engine()
        assert engine.capabilities.source == str(written)
        engine.complete(Request(messages=(Message("user", "x"),), schema=schema))
        (body,) = server.bodies[before:]
    # no json_schema request first (the table says it is refused): llama.cpp's dialect,
    # with the pattern kept (measured enforced) and no enum for the range (bounds enforced)
    assert body["response_format"]["type"] == "json_object"
    sent = body["response_format"]["schema"]["properties"]
    assert sent["code"]["pattern"] == "^[a-z]+$" and "enum" not in sent["n"]
    assert "written to" in capsys.readouterr().err


def test_without_a_table_the_built_in_one_steps_down_and_sends_ranges_as_enums(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOARE_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[a-z]+$"},
        "n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["code", "n"]}
    with OpenAIServer(['{"code": "abc", "n": 2}'], dialect="llama_cpp") as server:
        engine = server.engine()
        assert engine.capabilities is caps.BUILT_IN
        engine.complete(Request(messages=(Message("user", "x"),), schema=schema))
        first, second = server.bodies
    assert first["response_format"]["type"] == "json_schema"
    sent = second["response_format"]["schema"]["properties"]
    assert "pattern" not in sent["code"] and sent["n"]["enum"] == [1, 2, 3]


def test_a_pinned_table_comes_first_and_a_corrupt_one_is_reported_not_crashed_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.setenv("HOARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    pinned = caps.CapabilityTable("http://elsewhere/v1", "b1", {
        "json_schema": {"type": "refused"}, "llama_cpp": {"type": "enforced"}})
    caps.save(pinned, tmp_path / "caps.json")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hoare]\nserver_capabilities = "caps.json"\n', encoding="utf-8")
    with OpenAIServer(["{}"], dialect="llama_cpp") as server:
        engine = server.engine()
        assert engine.capabilities.source == str(tmp_path / "caps.json")
        assert engine.format_in_use == "json_object_schema"
        (tmp_path / "caps.json").write_text('{"format": "hoare-server-capabilities/1", '
                                            '"server": "x", "dialects": {"llama_cpp": '
                                            '{"enum": "maybe"}}}', encoding="utf-8")
        caplog.set_level(logging.WARNING, logger="hoare.engines.capabilities")
        engine = server.engine()  # corrupt: said, and the next table is used
        assert engine.capabilities is caps.BUILT_IN
    assert "verdict must be one of" in caplog.text and "caps.json" in caplog.text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4), max_leaves=20)


def _valid() -> dict[str, Any]:
    return caps.BUILT_IN.as_dict()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_json_is_a_valid_table_or_a_capability_error(data: st.DataObject) -> None:
    """Hostile contents: any JSON value, or a valid table with one part replaced by
    any JSON value, reads back as a table whose every verdict is known, or raises
    CapabilityError naming what is wrong; nothing else."""
    if data.draw(st.booleans()):
        value: Any = data.draw(_JSON)
    else:
        value = _valid()
        path = data.draw(st.sampled_from([("format",), ("server",), ("version",),
                                          ("trials",), ("dialects",),
                                          ("dialects", "llama_cpp"),
                                          ("dialects", "llama_cpp", "enum"), ("notes",),
                                          ("extra",), ("dialects", "grammar")]))
        node = value
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = data.draw(_JSON)
    try:
        table = caps.parse(value, "t.json")
    except caps.CapabilityError as error:
        assert "t.json: not a capability table" in str(error)
        return
    for dialect, keywords in table.dialects.items():
        assert dialect in caps.DIALECTS
        assert all(k in caps.KEYWORDS and v in caps.VERDICTS for k, v in keywords.items())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_file_contents_load_or_raise_a_capability_error(raw: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "t.json"
        path.write_bytes(raw)
        try:
            caps.load(path)
        except caps.CapabilityError as error:
            assert str(path) in str(error)


def test_a_probe_of_an_unreachable_or_malformed_url_is_a_clear_error(capsys: Any) -> None:
    assert cli.main(["probe", "http://127.0.0.1:9/v1", "--trials", "1"]) == 2
    assert "cannot reach the server" in capsys.readouterr().err
    for url in ("not a url", "ftp://x/v1", "http://", "http://a b/v1"):
        assert cli.main(["probe", url]) == 2
        assert "base URL must be" in capsys.readouterr().err


@given(st.integers(-100, 100), st.integers(0, 80), st.booleans(), st.booleans())
def test_integer_ranges_go_out_as_exactly_the_integers_the_bounds_allow(
        low: int, span: int, exclusive_low: bool, exclusive_high: bool) -> None:
    node: dict[str, Any] = {"type": "integer"}
    node["exclusiveMinimum" if exclusive_low else "minimum"] = low
    node["exclusiveMaximum" if exclusive_high else "maximum"] = low + span
    converted, paths = caps.integer_ranges_as_enums({"type": "object",
                                                     "properties": {"n": node}})
    allowed = [v for v in range(low - 1, low + span + 2)
               if (v > low if exclusive_low else v >= low)
               and (v < low + span if exclusive_high else v <= low + span)]
    got = converted["properties"]["n"].get("enum")
    if 0 < len(allowed) <= caps.MAX_ENUM_RANGE:
        assert got == allowed and paths == ["properties.n"]
    else:
        assert got is None and paths == []


def test_an_engine_is_built_when_the_working_directory_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve() asks the file system (pyproject.toml, the cache): a deleted working
    directory makes that raise; the engine falls back to the built-in table."""
    import os

    monkeypatch.delenv("HOARE_CACHE_DIR", raising=False)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    with OpenAIServer(["{}"]) as server:
        assert server.engine().capabilities is caps.BUILT_IN


def test_a_server_measured_to_ignore_enum_is_not_blamed_for_an_enum_breach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider faults rest on what the dialect is known to enforce: where the server's
    table says its llama.cpp dialect ignores ``enum``, an answer outside the enum is the
    model's failure, not a provider fault (the answer carries no decoding guarantee)."""
    monkeypatch.setenv("HOARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    schema = {"type": "object", "properties": {"label": {"type": "string",
                                                         "enum": ["bug"]}},
              "required": ["label"]}
    ignoring = {**caps.BUILT_IN.dialects["llama_cpp"], "enum": "ignored"}
    with OpenAIServer(['{"label": "x"}', '{"label": "x"}'], dialect="llama_cpp") as server:
        request = Request(messages=(Message("user", "x"),), schema=schema)
        trusted = server.engine(structured="json_object_schema").complete(request)
        caps.save(caps.CapabilityTable(server.url, None, {"llama_cpp": ignoring}),
                  caps.cache_path(server.url))
        measured = server.engine().complete(request)
    assert trusted.decoding == "llama_cpp"
    assert measured.decoding is None
