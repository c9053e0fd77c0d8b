"""What docs/verify.md and the pre-commit hook say about ``hoare verify`` is what it does:
the synopsis lists every option, the ``[tool.hoare]`` example loads, the hook's
command runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hoare.cli.parser import build_parser, main
from hoare.verifier.project.config import load

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")


def _verify_options() -> list[set[str]]:
    """The option strings of each ``hoare verify`` option (``{"-j", "--jobs"}``, ...)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    verify = commands.choices["verify"]  # type: ignore[index]
    return [set(a.option_strings) for a in verify._actions
            if a.option_strings and a.option_strings[0] not in ("-h", "--help")]


def test_the_synopsis_lists_every_option() -> None:
    (synopsis,) = re.findall(r"```\n(hoare verify \[TARGET.*?)```", PAGE, re.S)
    written = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", synopsis))
    options = _verify_options()
    assert [o for o in options if not o & written] == []  # each option, in some spelling
    assert written <= set().union(*options)  # and nothing that does not exist


def test_the_tool_hoare_example_loads(tmp_path: Path) -> None:
    (block,) = re.findall(r"```toml\n(\[tool\.hoare\].*?)```", PAGE, re.S)
    (tmp_path / "pyproject.toml").write_text(block)
    config = load(tmp_path / "pyproject.toml")
    assert config.targets == ["src/myapp/contracts"] and config.strict is True
    assert config.jobs == 0 and config.format == "table"
    assert config.ignore == {"myapp.rules:Refund.predicate_vacuous[post]":
                             "kept as documentation of intent"}
    assert config.overrides == {"myapp.rules:Heavy": {"rlimit": 50000000}}


def test_the_pre_commit_hook_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    (entry,) = re.findall(r"^\s*entry:\s*(.+)$", hooks, re.M)
    command = entry.split()
    assert command[:2] == ["hoare", "verify"]
    (tmp_path / "unrelated_doc_x.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    assert main([*command[1:], "unrelated_doc_x.py"]) == 0
    assert "error" not in capsys.readouterr().err


def test_no_check_repeats_an_assumption(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    fixtures = Path(__file__).parents[1] / "fixtures"
    assert main(["verify", str(fixtures / "sound"), "--no-cache", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for contract in report["contracts"]:
        for check in contract["checks"]:
            stated = [a.split(": ", 1)[-1] if a.startswith(("witness: ", "counterexample: "))
                      else a for a in check["assumptions"]]
            assert len(stated) == len(set(stated)), check
