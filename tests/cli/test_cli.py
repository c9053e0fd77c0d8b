"""``hoare verify``: exit statuses, the table, ``--json``, ``python -m hoare``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from library_under_test import LIBRARY

from hoare.cli.parser import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
SOUND = str(FIXTURES / "sound")
BROKEN = str(FIXTURES / "broken" / "pre_unsatisfiable.py")
OPAQUE = str(FIXTURES / "broken" / "opaque.py")


def test_sound_set_exits_0_with_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", SOUND]) == 0
    out = capsys.readouterr().out
    assert "contract" in out and "PASS" in out and "pre_satisfiable" in out
    assert re.search(r"in \d+\.\d\d s", out)  # the time taken
    assert "13 pass, 0 fail, 0 warn, 0 unknown" in out


def test_a_failing_check_exits_1_and_names_the_conflict(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", BROKEN]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert 'conflict: le=100 (Order.quantity) ∧ "bulk orders only (over 100)"' in out


def test_unknown_exits_0_unless_strict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", OPAQUE]) == 0
    assert main(["verify", OPAQUE, "--strict"]) == 1
    assert "UNKNOWN" in capsys.readouterr().out


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(FIXTURES / "broken"), "--json", "--rlimit", "1000000"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"contracts", "pipelines", "summary"}
    assert set(data["summary"]) == {"pass", "fail", "warn", "unknown"}
    total = sum(data["summary"].values())
    checks = [c for group in ("contracts", "pipelines") for r in data[group]
              for c in r["checks"]]
    assert len(checks) == total
    for report in data["contracts"] + data["pipelines"]:
        assert ":" in report["name"]
        for check in report["checks"]:
            assert set(check) >= {"kind", "status", "message", "witness", "counterexample"}
            assert check["status"] in ("pass", "fail", "warn", "unknown")
    (pipeline,) = data["pipelines"]
    assert pipeline["checks"][0]["kind"] == "composition"
    assert pipeline["checks"][0]["counterexample"]["quality"] < 7


@pytest.mark.parametrize("argv", [
    ["verify", "no/such/file.py"],
    ["verify", "no_such_module_xyz"],
    ["verify"],
    ["verify", SOUND, "--timeout-ms", "0"],
    ["verify", SOUND, "--bogus"],
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err


def test_import_error_exits_2_naming_the_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken_import.py"
    bad.write_text("import this_module_does_not_exist_42\n")
    assert main(["verify", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "broken_import.py" in err and "this_module_does_not_exist_42" in err


def test_module_names_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "mycontracts_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rules.py").write_text((FIXTURES / "broken" / "vacuous.py").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "mycontracts_pkg.rules"]) == 1
    assert "mycontracts_pkg.rules:AnswerWithWeakCheck" in capsys.readouterr().out


def test_python_dash_m_hoare() -> None:
    env = {**os.environ, "PYTHONPATH": LIBRARY}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", SOUND, "--json"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["fail"] == 0
    usage = subprocess.run([sys.executable, "-m", "hoare", "verify"], cwd=ROOT,
                           capture_output=True, text=True, env=env, timeout=300)
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_files_inside_packages_keep_their_relative_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "shop_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        "from hoare import Field, LLMDataModel\n\n\n"
        "class Item(LLMDataModel):\n    n: int = Field(ge=0, le=3)\n")
    (package / "contracts.py").write_text(
        "from hoare import Contract, Pre, contract\n\nfrom .models import Item\n\n\n"
        "@contract()\nclass Buy(Contract):\n    prompt = 'p'\n"
        "    pre_conditions = (Pre(lambda i: i.n > 3, 'more than 3'),)\n\n"
        "    def forward(self, input: Item) -> Item:\n        return self.contract_result\n")
    monkeypatch.chdir(tmp_path)
    assert main(["verify", str(package)]) == 1
    out = capsys.readouterr().out
    assert "shop_pkg.contracts:Buy" in out
    assert 'conflict: le=3 (Item.n) ∧ "more than 3"' in out


def test_jobs_give_the_same_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    target = str(FIXTURES / "broken")
    assert main(["verify", target, "--json", "--rlimit", "1000000"]) == 1
    one = json.loads(capsys.readouterr().out)
    assert main(["verify", target, "--json", "--rlimit", "1000000", "--jobs", "3"]) == 1
    three = json.loads(capsys.readouterr().out)

    def verdicts(data: dict[str, object]) -> list[tuple[str, str, str]]:
        return [(r["name"], c["kind"], c["status"]) for group in ("contracts", "pipelines")
                for r in data[group] for c in r["checks"]]  # type: ignore[attr-defined]

    assert verdicts(one) == verdicts(three)
    assert one["summary"] == three["summary"]
