"""Every output format of ``hoare verify`` (table, JSON, SARIF, JUnit) stays well-formed
for any file name, message, contract name or predicate text: lone surrogates (a file
name that is not UTF-8), control characters, XML-illegal characters, ``%``/``#``/``?``
in paths. SARIF URIs are percent-encoded. ``-o FILE`` is written atomically: on error
the previous file is left as it was, never empty or half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.verifier.project.run import _render
from hoare.verifier.report.formats import to_junit, to_sarif, write_report
from hoare.verifier.report.model import CheckResult, ContractReport, ImportProblem, Report

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())

# every code point, surrogates and controls included
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                 blacklist_categories=()), max_size=30)
NAME_BYTES = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))


@st.composite
def reports(draw: st.DrawFn) -> Report:
    report = Report()
    for _ in range(draw(st.integers(0, 3))):
        contract = ContractReport(draw(ANY_TEXT))
        for _ in range(draw(st.integers(0, 3))):
            name = os.fsdecode(draw(NAME_BYTES))
            contract.checks.append(CheckResult(
                draw(st.sampled_from(["pre_satisfiable", "predicate_vacuous", "odd kind"])),
                draw(st.sampled_from(["pass", "fail", "warn", "unknown"])), draw(ANY_TEXT),
                witness=draw(st.none() | ANY_TEXT), counterexample=draw(st.none() | ANY_TEXT),
                constraints=draw(st.lists(ANY_TEXT, max_size=2)),
                predicate=draw(st.none() | ANY_TEXT),
                assumptions=draw(st.lists(ANY_TEXT, max_size=2)),
                notes=draw(st.lists(ANY_TEXT, max_size=2)),
                file=draw(st.sampled_from([f"/project/{name}", name, None])),
                line=draw(st.none() | st.integers(1, 10 ** 6)),
                ignored=draw(st.none() | ANY_TEXT)))
        report.contracts.append(contract)
    for _ in range(draw(st.integers(0, 2))):
        name = os.fsdecode(draw(NAME_BYTES))
        report.errors.append(ImportProblem(draw(ANY_TEXT), draw(ANY_TEXT),
                                           draw(st.sampled_from([f"/project/{name}", None])),
                                           draw(st.none() | st.integers(1, 99))))
    return report


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report=reports())
def test_every_format_is_well_formed_for_any_text(report: Report) -> None:
    root = Path("/project")
    for chosen in ("table", "json", "sarif", "junit"):
        text = _render(report, chosen, root, verbose=True)
        text.encode("utf-8")  # strict: no lone surrogate reaches a writer
        if chosen in ("json", "sarif"):
            data = json.loads(text)
            if chosen == "sarif":
                jsonschema.Draft4Validator(SCHEMA).validate(data)
                for uri in _uris(data):
                    assert all(32 < ord(c) < 127 for c in uri), uri  # percent-encoded
            else:
                assert len(data["contracts"]) == len(report.contracts)
        elif chosen == "junit":
            ET.fromstring(text.encode("utf-8"))
        else:  # one line per check, no control character but the newline
            assert not any((ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in text)
            checks = sum(len(c.checks) for c in report.contracts)
            assert text.count("\n") >= checks


def _uris(log: dict[str, object]) -> list[str]:
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "uri" and isinstance(inner, str):
                    found.append(inner)
                else:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(log)
    return found


@settings(max_examples=200, deadline=None)
@given(name=NAME_BYTES)
def test_a_sarif_uri_gives_back_the_file_s_bytes(name: bytes) -> None:
    """Relative (under the root) and absolute URIs both decode to the name's bytes."""
    decoded = os.fsdecode(name)
    report = Report(errors=[ImportProblem("t", "boom", f"/project/sub/{decoded}", 1),
                            ImportProblem("t", "boom", f"/elsewhere/{decoded}", 1)])
    log = to_sarif(report, Path("/project"), "test")
    inside, outside = (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                       for r in log["runs"][0]["results"])
    assert unquote_to_bytes(inside) == b"sub/" + name
    parts = urlsplit(outside)
    assert parts.scheme == "file" and unquote_to_bytes(parts.path) == b"/elsewhere/" + name
    assert not parts.query and not parts.fragment  # '?' and '#' were encoded


def test_junit_of_any_report_parses() -> None:
    report = Report(contracts=[ContractReport("m:\udcff\x00\ufffe", [CheckResult(
        "pre_satisfiable", "fail", "\x1b[31mred\udc80", file="/p/\udcfe.py", line=1)])])
    ET.fromstring(to_junit(report).encode("utf-8"))


# -- end to end: a file whose name is not UTF-8 ------------------------------------------

FAILING = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class Num(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class Impossible(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 50, "over fifty"),)

    def forward(self, input: Num) -> Num:
        return self.contract_result
'''


@pytest.mark.parametrize("chosen", ["table", "json", "sarif", "junit"])
def test_a_non_utf8_file_name_gives_a_complete_report(tmp_path: Path, chosen: str) -> None:
    directory = os.fsencode(tmp_path)
    with open(os.path.join(directory, b"bad\xff name#1%.py"), "w") as handle:
        handle.write(FAILING)
    with open(os.path.join(directory, b"broken\xfe\x1b[2J.py"), "w") as handle:
        handle.write("raise ValueError('no')\n")
    output = tmp_path / f"report.{chosen}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--no-cache",
                           "--format", chosen, "-o", str(output)], cwd=tmp_path, env=env,
                          capture_output=True, timeout=300)
    assert done.returncode == 2, done.stderr  # the import error wins over the fail
    data = output.read_bytes()
    text = data.decode("utf-8")  # strict
    if chosen == "json":
        report = json.loads(text)
        assert report["summary"]["fail"] >= 1
        (error,) = report["errors"]
        assert os.fsencode(error["file"]).endswith(b"broken\xfe\x1b[2J.py")  # lossless
    elif chosen == "sarif":
        log = json.loads(text)
        jsonschema.Draft4Validator(SCHEMA).validate(log)
        uris = {unquote_to_bytes(r["locations"][0]["physicalLocation"]["artifactLocation"]
                                 ["uri"]) for r in log["runs"][0]["results"]}
        assert b"bad\xff name#1%.py" in uris and b"broken\xfe\x1b[2J.py" in uris
    elif chosen == "junit":
        root = ET.fromstring(data)
        assert int(root.get("failures", "0")) >= 1 and int(root.get("errors", "0")) == 1
    else:
        assert "\x1b" not in text and "Impossible" in text and "\\xff" in text
    assert b"\x1b" not in done.stderr  # no terminal escape reaches the terminal


def test_the_table_on_stdout_survives_a_non_utf8_name(tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(tmp_path), b"n\xff.py"), "w") as handle:
        handle.write(FAILING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--no-cache"],
                          cwd=tmp_path, env=env, capture_output=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert b"Impossible" in done.stdout and b"Traceback" not in done.stderr


# -- atomic writes ------------------------------------------------------------------------


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.sarif"
    target.write_text("previous report\n")
    with pytest.raises(OSError, match="UTF-8"):
        write_report(str(target), "half \udcff written")
    assert target.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sarif"]  # no temporary


def test_a_report_is_replaced_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    write_report(str(target), "new ✓\n")
    assert target.read_text(encoding="utf-8") == "new ✓\n"
    assert target.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.json"
    write_report(str(fresh), "{}")
    assert fresh.read_text() == "{}"


def test_an_unwritable_output_is_a_clear_error_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(FAILING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", "m.py", "--no-cache",
                           "-o", str(tmp_path / "missing_dir" / "r.txt")], cwd=tmp_path,
                          env=env, capture_output=True, timeout=300)
    assert done.returncode == 2 and b"cannot write" in done.stderr
