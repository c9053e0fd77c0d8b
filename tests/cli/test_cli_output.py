"""Every output path of the ``hoare`` command against hostile input (issues 30, 33): a
broken pipe ends quietly; usage and configuration errors are one line; the store
comes from ``--db``, ``$HOARE_STATS`` or ``[tool.hoare] stats``; JSON is strict (no
``NaN``/``Infinity``) and JUnit XML well-formed whatever the store holds; colour on a
terminal only; ``hoare eval`` skips bad dataset lines by number and gates on
``--min-p-succ``."""

from __future__ import annotations

import json
import math
import os
import pty
import sqlite3
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare.cli.parser import main
from hoare.stats.records import CallRecord
from hoare.stats.schema import COLUMNS
from hoare.stats.store import StatsStore

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOUND = str(FIXTURES / "sound")


def _env(**extra: str) -> dict[str, str]:
    return {"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", ""), **extra}


def _store(path: Path, labels: dict[str, int], contract: str = "m:C") -> Path:
    store = StatsStore(path)
    for label, count in labels.items():
        for index in range(count):
            store.record(CallRecord(time.time(), contract, "h", label, index % 4 != 0,
                                    True, 1, 0, None, 1, 1, 0.01, 5.0 + index, "E", None,
                                    (("f", index % 4 != 0),)))
    store.close()
    return path


def _strict_json(text: str) -> Any:
    """Parse as RFC 8259 JSON: NaN and the infinities are not JSON."""
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


# -- a broken pipe ----------------------------------------------------------------------

@pytest.mark.parametrize("command", ["stats", "stats-json", "compare", "verify", "schema"])
def test_a_broken_pipe_ends_quietly(tmp_path: Path, command: str) -> None:
    db = _store(tmp_path / "calls.db", {"a": 400, "b": 400})
    # many contracts, so the report is larger than a pipe's buffer
    store = StatsStore(db)
    for index in range(3000):
        store.record(CallRecord(time.time(), f"m:C{index}", "h", "a", True, True, 1, 0,
                                None, 1, 1, None, 1.0, "E", None, ()))
    store.close()
    argv = {"stats": ["stats", "--db", str(db)],
            "stats-json": ["stats", "--db", str(db), "--json"],
            "compare": ["compare", "--db", str(db), "--baseline", "a", "--candidate", "b"],
            "verify": ["verify", SOUND, "--no-cache"],
            "schema": ["schema", "shop:Buy"]}[command]
    (tmp_path / "shop.py").write_text(textwrap.dedent('''
        from hoare import Contract, LLMDataModel, contract
        class Item(LLMDataModel):
            n: int
        @contract
        class Buy(Contract):
            prompt = "p"
            def forward(self, item: Item) -> Item:
                return self.contract_result
    '''))
    process = subprocess.Popen([sys.executable, "-m", "hoare", *argv], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=_env())
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader leaves before the first line (`| head -0`)
    err = process.stderr.read().decode()
    process.wait(timeout=300)
    assert process.returncode in (0, 141), err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


# -- one-line errors ---------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["verify", SOUND, "--bogus"],
    ["verify", SOUND, "--timeout-ms", "0"],
    ["stats", "--since", "yesterday-ish", "--db", "x.db"],
    ["compare", "--db", "x.db", "--baseline", "a"],
    ["eval", "m:C", "data.jsonl", "--min-p-succ", "1.5"],
    ["verify"],
])
def test_errors_are_one_line_without_the_usage_block(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "[-h]" not in err and "error:" in err


def test_a_configuration_error_names_the_key_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.hoare]\ntimeout_ms = "soon"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["verify"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "timeout_ms" in err, err


# -- where the store is ------------------------------------------------------------------

@pytest.mark.parametrize("source", ["env", "pyproject"])
def test_stats_and_compare_find_the_configured_store(
        source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import hoare.contracts.configuration as configuration

    db = _store(tmp_path / "calls.db", {"a": 40, "b": 40})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configuration, "_stats", configuration._KEEP)
    monkeypatch.delenv("HOARE_STATS", raising=False)
    if source == "env":
        monkeypatch.setenv("HOARE_STATS", str(db))
    else:
        (tmp_path / "pyproject.toml").write_text('[tool.hoare]\nstats = "calls.db"\n')
    assert main(["stats", "--json"]) == 0
    assert sum(c["calls"] for c in _strict_json(capsys.readouterr().out)["contracts"]) == 80
    assert main(["compare", "--baseline", "a", "--candidate", "b", "--json"]) in (0, 3)
    assert _strict_json(capsys.readouterr().out)["contracts"][0]["contract"] == "m:C"
    monkeypatch.delenv("HOARE_STATS", raising=False)
    (tmp_path / "pyproject.toml").unlink(missing_ok=True)
    assert main(["stats"]) == 2
    assert "no stats store" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["--db", "env", "pyproject"])
@pytest.mark.parametrize("command", [["stats"], ["compare", "--baseline", "a",
                                                 "--candidate", "b"]])
def test_a_broken_store_is_named_by_where_it_came_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], source: str, command: list[str]) -> None:
    import hoare.contracts.configuration as configuration

    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 100)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configuration, "_stats", configuration._KEEP)
    monkeypatch.delenv("HOARE_STATS", raising=False)
    given: list[str] = []
    if source == "--db":
        given = ["--db", str(broken)]
    elif source == "env":
        monkeypatch.setenv("HOARE_STATS", str(broken))
    else:
        (tmp_path / "pyproject.toml").write_text('[tool.hoare]\nstats = "broken.db"\n')
    assert main([*command, *given]) == 2
    error = capsys.readouterr().err
    assert "broken.db" in error
    assert ("--db" in error) is (source == "--db")
    assert ("$HOARE_STATS" in error) is (source == "env")


def test_an_unreadable_pyproject_is_no_crash(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import hoare.contracts.configuration as configuration

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configuration, "_stats", configuration._KEEP)
    monkeypatch.delenv("HOARE_STATS", raising=False)
    for text in (b"[tool.hoare]\nstats = \"\xff\xfe\"\n", b"tool = 1\n",
                 b"a = " + b"[" * 50_000 + b"\n"):
        (tmp_path / "pyproject.toml").write_bytes(text)
        assert main(["stats"]) == 2
        assert "no stats store" in capsys.readouterr().err


# -- strict JSON and well-formed XML whatever the store holds ---------------------------

NAMES = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                              blacklist_categories=("Cs",)), min_size=1, max_size=12)
FIGURES = st.floats(allow_nan=False, allow_infinity=True) | st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, min_size=1, max_size=3), costs=st.lists(FIGURES, min_size=4,
                                                                    max_size=4),
       latencies=st.lists(FIGURES, min_size=4, max_size=4))
def test_every_output_is_well_formed_whatever_the_store_holds(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        names: list[str], costs: list[Any], latencies: list[Any]) -> None:
    directory = tmp_path_factory.mktemp("outputs")
    db = directory / "odd.db"
    with sqlite3.connect(db) as connection:  # a store another program filled
        connection.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES "
            "('schema_version', '4'); CREATE TABLE calls (id INTEGER PRIMARY KEY, "
            + ", ".join(COLUMNS) + ")")
        for name in names:
            for label in ("a", "b"):
                for index in range(4):
                    connection.execute(
                        "INSERT INTO calls (ts, contract, contract_hash, label, success, "
                        "first_attempt, attempts, remedies, cost, latency_ms, trials) VALUES "
                        "(?, ?, 'h', ?, ?, 1, 1, 0, ?, ?, ?)",
                        (1.0 + index, name, label, index % 2, costs[index], latencies[index],
                         json.dumps([[name, bool(index % 2)]])))
    connection.close()
    junit = directory / "out.xml"
    outputs = []
    for argv in (["stats", "--db", str(db), "--json"], ["stats", "--db", str(db)],
                 ["compare", "--db", str(db), "--baseline", "a", "--candidate", "b",
                  "--json", "--junit", str(junit), "--max-cost-increase", "0.1",
                  "--max-latency-increase", "0.1"],
                 ["compare", "--db", str(db), "--baseline", "a", "--candidate", "b"]):
        assert main(argv) in (0, 1, 3)
        outputs.append(capsys.readouterr().out)
    for text in (outputs[0], outputs[2]):
        assert _strict_json(text)
    for table in (outputs[1], outputs[3]):
        assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0 for c in table)
        assert "\x1b" not in table  # not a terminal: no colour either
    tree = ElementTree.parse(junit)  # raises on characters XML forbids
    assert tree.getroot().tag == "testsuite"
    stats = _strict_json(outputs[0])["contracts"][0]
    assert stats["interval_95"] == stats["interval"]
    for item in _strict_json(outputs[0])["contracts"]:
        for value in (item["cost_per_success"], *item["latency_ms"].values()):
            assert value is None or math.isfinite(value)


# -- colour --------------------------------------------------------------------------

def _on_a_terminal(argv: list[str], env: dict[str, str]) -> bytes:
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "hoare", *argv], stdout=follower,
                               stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    process.wait(timeout=300)
    os.close(leader)
    return shown


def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path: Path) -> None:
    db = _store(tmp_path / "calls.db", {"a": 40, "b": 40})
    argv = ["compare", "--db", str(db), "--baseline", "a", "--candidate", "b"]
    coloured = _on_a_terminal(argv, _env(TERM="xterm"))
    assert b"\x1b[" in coloured and b"cannot tell yet" in coloured
    assert b"\x1b[" not in _on_a_terminal(argv, _env(TERM="xterm", NO_COLOR="1"))
    piped = subprocess.run([sys.executable, "-m", "hoare", *argv], capture_output=True,
                           env=_env(TERM="xterm"), timeout=300)
    assert b"cannot tell yet" in piped.stdout and b"\x1b[" not in piped.stdout
    verified = _on_a_terminal(["verify", SOUND, "--no-cache"], _env(TERM="xterm"))
    assert b"\x1b[32mPASS\x1b[0m" in verified


# -- hoare eval's dataset -----------------------------------------------------------------

MODULE = textwrap.dedent('''
    import json
    from hoare import Contract, LLMDataModel, Post, contract
    from hoare.engines import FunctionEngine

    class Question(LLMDataModel):
        number: int

    class Answer(LLMDataModel):
        double: int

    @contract(remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0})
    class Double(Contract[Question, Answer]):
        prompt = "Double the number."
        post_conditions = (Post(lambda a: a.double % 2 == 0, "even"),)

        def forward(self, question: Question) -> Answer:
            return self.contract_result if self.contract_successful else Answer(double=0)

    def engine():
        """Wrong for multiples of 4: P_succ 0.75, its Wilson lower bound 0.53."""
        return FunctionEngine(lambda request: json.dumps(
            {"double": 2 * request.input.number + (request.input.number % 4 == 0)}))
''')


def _eval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoare", "eval", "doubling:Double",
                           "data.jsonl", "--engine", "doubling:engine", "--db", "e.db",
                           *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=_env())


def test_eval_skips_lines_that_are_not_utf8_or_too_deep(tmp_path: Path) -> None:
    (tmp_path / "doubling.py").write_text(MODULE)
    lines = [b"\xef\xbb\xbf" + json.dumps({"number": 1}).encode(),  # a BOM on line 1
             b'{"number": \xff2}', b"[" * 100_000 + b"]" * 100_000,
             json.dumps({"input": {"number": 3}}).encode(),
             b'{"number": ' + b"[" * 100_000 + b"}", b"\xed\xa0\x80",  # a UTF-8 surrogate
             json.dumps({"number": 5}).encode()]
    (tmp_path / "data.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    done = _eval(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    skipped = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert [line.split(":")[1].strip() for line in skipped] == [
        "skipped line 2", "skipped line 3", "skipped line 5", "skipped line 6"], skipped
    assert "not UTF-8" in skipped[0] and "not UTF-8" in skipped[3]
    assert _strict_json(done.stdout)["run"]["calls"] == 3


@pytest.mark.parametrize("threshold, status", [("0.05", 0), ("0.5", 0), ("0.7", 1), ("0", 0)])
def test_eval_min_p_succ_gates_on_the_wilson_lower_bound(tmp_path: Path, threshold: str,
                                                         status: int) -> None:
    from hoare.kernel.stats import wilson_interval

    (tmp_path / "doubling.py").write_text(MODULE)
    (tmp_path / "data.jsonl").write_text(
        "\n".join(json.dumps({"number": n}) for n in range(1, 21)) + "\n")
    done = _eval(tmp_path, "--json", "--min-p-succ", threshold)
    assert done.returncode == status, done.stderr
    gate = _strict_json(done.stdout)["run"]["min_p_succ"]
    low = wilson_interval(15, 20)[0]
    assert gate == {"threshold": float(threshold), "wilson_95_lower_bound": low,
                    "passed": low >= float(threshold)}
    assert (status == 1) == ("Wilson 95% lower bound" in done.stderr)


def test_eval_help_says_what_min_p_succ_compares(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "--min-p-succ X" in shown and "Wilson 95% lower bound" in shown


def test_schema_json_is_strict_and_its_table_terminal_safe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "odd_schema.py").write_text(textwrap.dedent('''
        import math
        from pydantic import Field
        from hoare import Contract, LLMDataModel, Post, contract

        class Item(LLMDataModel):
            x: float = Field(default=math.nan)
            y: float = Field(default=math.inf)

        @contract
        class Buy(Contract):
            prompt = "p"
            post_conditions = (Post(lambda i: i.x < 3, "small\\x1b[31m red"),)

            def forward(self, item: Item) -> Item:
                return self.contract_result
    '''))
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "odd_schema:Buy", "--json"]) == 0
    data = _strict_json(capsys.readouterr().out)
    assert data["contract"] == "odd_schema:Buy"
    assert main(["schema", "odd_schema:Buy"]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "Infinity" not in shown and "NaN" not in shown


def test_a_fifo_is_refused_never_read_as_a_file(tmp_path: Path) -> None:
    """A FIFO as the dataset, the store or pyproject.toml: refused (or ignored) with a
    message, never opened for reading (which would wait forever for a writer)."""
    (tmp_path / "doubling.py").write_text(MODULE)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    runs = {
        "dataset": (["eval", "doubling:Double", str(fifo), "--engine", "doubling:engine",
                     "--db", "e.db"], "FIFO"),
        "stats": (["stats", "--db", str(fifo)], "not a regular file"),
        "compare": (["compare", "--db", str(fifo), "--baseline", "a", "--candidate", "b"],
                    "not a regular file"),
        "eval store": (["eval", "doubling:Double", "data.jsonl", "--engine",
                        "doubling:engine", "--db", str(fifo)], "not a regular file"),
    }
    (tmp_path / "data.jsonl").write_text(json.dumps({"number": 2}) + "\n")
    for name, (argv, expected) in runs.items():
        done = subprocess.run([sys.executable, "-m", "hoare", *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=_env())
        assert done.returncode in (1, 2), (name, done.stderr)
        assert expected in done.stderr and "Traceback" not in done.stderr, \
            (name, done.stderr)
    os.mkfifo(tmp_path / "pyproject.toml")
    done = subprocess.run([sys.executable, "-m", "hoare", "stats"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 2 and "no stats store" in done.stderr, done.stderr
