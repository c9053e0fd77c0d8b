"""``hoare verify --format sarif|junit``: SARIF valid against the published 2.1.0 schema
and located on the predicate's line; JUnit with one test case per check."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from hoare.cli.parser import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
BROKEN = FIXTURES / "broken"
SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["verify", *argv, "--no-cache", "--rlimit", "1000000"])
    return status, capsys.readouterr().out


def _line_of(path: Path, text: str) -> int:
    (line,) = [n for n, content in enumerate(path.read_text().splitlines(), 1)
               if text in content]
    return line


def test_sarif_is_valid_and_points_at_the_predicate(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES.parent.parent)
    status, out = _run(capsys, str(BROKEN), "--format", "sarif")
    assert status == 1
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)  # raises on any violation
    (run,) = log["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert len(rules) == len(set(rules)) and "predicate_vacuous" in rules
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
    (pre,) = [r for r in run["results"] if r["ruleId"] == "pre_satisfiable"
              and "pre_unsatisfiable" in r["message"]["text"]]
    location = pre["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "tests/fixtures/broken/pre_unsatisfiable.py",
                                            "uriBaseId": "SRCROOT"}
    # pre_satisfiable is about the contract: the class line; the core names the predicate
    text = pre["message"]["text"]
    assert 'conflict: le=100 (Order.quantity) ∧ "bulk orders only (over 100)"' in text
    vacuous = [r for r in run["results"] if r["ruleId"] == "predicate_vacuous"
               and "vacuous.py" in r["locations"][0]["physicalLocation"]["artifactLocation"]
               ["uri"]]
    assert vacuous
    for result in vacuous:  # located on the predicate's own line
        line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
        source = (BROKEN / "vacuous.py").read_text().splitlines()[line - 1]
        assert "def " in source or "lambda" in source or "Post(" in source or "Pre(" in source
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].startswith("file://")


def test_sarif_on_a_sound_set_has_no_results_and_still_validates(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _run(capsys, str(FIXTURES / "sound"), "--format", "sarif")
    assert status == 0
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["runs"][0]["results"] == []


def test_sarif_reports_import_errors_on_their_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad_module_x.py").write_text("x = 1\n\nraise ValueError('nope')\n")
    status, out = _run(capsys, "bad_module_x.py", "--format", "sarif")
    assert status == 2
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "import_error"
    location = result["locations"][0]["physicalLocation"]
    assert location["region"]["startLine"] == 3
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_junit_has_one_case_per_check(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _run(capsys, str(BROKEN), "--format", "junit")
    assert status == 1
    _, data = _run(capsys, str(BROKEN), "--format", "json")
    report = json.loads(data)
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    groups = [*report["contracts"], *report["pipelines"]]
    assert [s.get("name") for s in suites] == [g["name"] for g in groups]
    for suite, group in zip(suites, groups, strict=True):
        cases = suite.findall("testcase")
        assert len(cases) == len(group["checks"]) == int(suite.get("tests", "-1"))
        for case, check in zip(cases, group["checks"], strict=True):
            failure, skipped = case.find("failure"), case.find("skipped")
            assert (failure is not None) == (check["status"] == "fail")
            assert (skipped is not None) == (check["status"] == "unknown")
            if skipped is not None:
                assert skipped.get("message") == check["message"]
        assert int(suite.get("failures", "-1")) == sum(c["status"] == "fail"
                                                       for c in group["checks"])
    assert int(root.get("failures", "-1")) == report["summary"]["fail"]
    assert int(root.get("skipped", "-1")) == report["summary"]["unknown"]
    assert int(root.get("tests", "-1")) == sum(report["summary"].values())


def test_junit_escapes_what_xml_cannot_carry() -> None:
    from hoare.verifier.report.formats import to_junit
    from hoare.verifier.report.model import CheckResult, ContractReport, Report

    check = CheckResult("pre_satisfiable", "fail", "bad \x00 byte <&> \ud800 and \U0001d11e",
                        witness={"s": "\x1b[31m"})
    text = to_junit(Report(contracts=[ContractReport("m:C", [check])]))
    root = ET.fromstring(text)  # parses: nothing illegal in it
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "bad \\u0000 byte <&> \\ud800 and \U0001d11e"
