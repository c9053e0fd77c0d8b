"""``[tool.hoare]`` and the targets of ``hoare verify``: precedence (flags over the
table over defaults), unknown keys and reason-less ignores refused, ignores applied;
files, directories, dotted modules, packages with their submodules, ``module:Name``,
factory-made classes, and nothing found."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hoare.cli.parser import main

VACUOUS = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class Q(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class Weak(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n >= 0, "never fails"),)

    def forward(self, input: Q) -> Q:
        return self.contract_result


@contract()
class Impossible(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 10, "never passes"),)

    def forward(self, input: Q) -> Q:
        return self.contract_result
'''


def _project(tmp_path: Path, table: str = "", monkeypatch: pytest.MonkeyPatch | None = None,
             module: str = "rules_mod") -> Path:
    """A project with ``<module>.py`` (each test its own name: modules stay imported
    in this process) and a ``pyproject.toml`` holding ``table``."""
    (tmp_path / f"{module}.py").write_text(VACUOUS)
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\nversion = '0'\n\n" + textwrap.dedent(table))
    if monkeypatch is not None:
        monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    status = main(["verify", *argv, "--no-cache", "--format", "json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def test_targets_and_strict_come_from_the_table(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, '''
        [tool.hoare]
        targets = ["rules_m1.py"]
        ignore = {"rules_m1:Impossible" = "a known-bad example kept for the docs"}
        strict = true
    ''', monkeypatch, "rules_m1")
    status, report, _ = _json(capsys)  # no target on the command line
    names = [c["name"] for c in report["contracts"]]  # type: ignore[index,union-attr]
    assert names == ["rules_m1:Weak", "rules_m1:Impossible"]
    assert status == 0  # the warn does not fail; the failing contract is ignored
    assert report["summary"]["ignored"] > 0  # type: ignore[index]


def test_flags_override_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, '''
        [tool.hoare]
        targets = ["does_not_exist.py"]
        format = "junit"
        rlimit = 1
    ''', monkeypatch, "rules_m2")
    # rlimit = 1 makes every z3 query unknown; --rlimit on the command line wins
    status = main(["verify", "rules_m2.py:Weak", "--no-cache", "--rlimit", "10000000"])
    out = capsys.readouterr().out
    assert status == 0 and out.startswith("<?xml")  # the table's format, the flag's rlimit
    assert "<skipped" not in out
    status = main(["verify", "rules_m2.py:Weak", "--no-cache", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["unknown"] > 0  # the table's rlimit = 1


@pytest.mark.parametrize("table, named", [
    ("[tool.hoare]\nstrictness = true\n", "'strictness'"),
    ("[tool.hoare]\nignore = [\"rules_m2:Weak.predicate_vacuous\"]\n", "needs a reason"),
    ("[tool.hoare.ignore]\n\"rules_m2:Weak\" = \"  \"\n", "needs a reason"),
    ("[tool.hoare]\njobs = \"many\"\n", "jobs"),
    ("[tool.hoare]\nformat = \"html\"\n", "format"),
    ("[tool.hoare]\ntimeout_ms = -3\n", "timeout_ms"),
    ("[tool.hoare.overrides.\"rules_m2:Weak\"]\nmemory = 3\n", "'memory'"),
    ("[tool.hoare\n", "not valid TOML"),
])
def test_bad_configuration_is_a_usage_error_naming_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        table: str, named: str) -> None:
    _project(tmp_path, table, monkeypatch, "rules_m3")
    assert main(["verify", "rules_m3.py", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert named in err and "pyproject.toml" in err


def test_an_ignore_entry_names_one_check_and_a_stale_one_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, '''
        [[tool.hoare.ignore]]
        check = "rules_m4:Weak.predicate_vacuous[pre_conditions[0]]"
        reason = "documents the domain"

        [[tool.hoare.ignore]]
        check = "rules_m4:Gone.pre_satisfiable"
        reason = "an old contract"
    ''', monkeypatch, "rules_m4")
    status, report, err = _json(capsys, "rules_m4.py")
    assert status == 1  # Impossible still fails
    weak = report["contracts"][0]  # type: ignore[index]
    ignored = [c for c in weak["checks"] if c["ignored"]]
    assert [(c["kind"], c["status"], c["ignored"]) for c in ignored] == [
        ("predicate_vacuous", "warn", "documents the domain")]
    assert weak["status"] == "pass"
    assert "'rules_m4:Gone.pre_satisfiable' matches no check" in err


def test_overrides_set_one_contracts_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, '''
        [tool.hoare.overrides."rules_m5:Impossible"]
        rlimit = 1
    ''', monkeypatch, "rules_m5")
    _, report, _ = _json(capsys, "rules_m5.py")
    weak, impossible = report["contracts"]  # type: ignore[misc]
    assert impossible["checks"][0]["status"] == "unknown"  # starved by its override
    assert weak["checks"][0]["status"] == "pass"


def test_module_class_targets_and_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    package = tmp_path / "shop_pkg_cfg"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "rules.py").write_text(VACUOUS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    _, report, _ = _json(capsys, "shop_pkg_cfg")  # a package name: its submodules too
    assert [c["name"] for c in report["contracts"]] == [  # type: ignore[index]
        "shop_pkg_cfg.inner.rules:Weak", "shop_pkg_cfg.inner.rules:Impossible"]
    _, report, _ = _json(capsys, "shop_pkg_cfg.inner.rules:Impossible")
    assert [c["name"] for c in report["contracts"]] == [  # type: ignore[index]
        "shop_pkg_cfg.inner.rules:Impossible"]
    status, _, err = _json(capsys, "shop_pkg_cfg.inner.rules:Nope")
    assert status == 2 and "no @contract class or Pipeline named Nope" in err


def test_classes_made_by_a_factory_elsewhere_are_found(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    (tmp_path / "factory_mod_cfg.py").write_text(textwrap.dedent('''
        from hoare import Contract, Field, LLMDataModel, Pre, contract


        class Q(LLMDataModel):
            n: int = Field(ge=0, le=10)


        def make(limit):
            @contract()
            class Made(Contract):
                prompt = "p"
                pre_conditions = (Pre(lambda q: q.n > limit, "above the limit"),)

                def forward(self, input: Q) -> Q:
                    return self.contract_result
            return Made
    '''))
    (tmp_path / "uses_factory_cfg.py").write_text(
        "from factory_mod_cfg import make\n\nStrict = make(20)\n")
    monkeypatch.chdir(tmp_path)
    status, report, _ = _json(capsys, ".")
    (made,) = report["contracts"]  # type: ignore[misc]
    assert made["checks"][0]["kind"] == "pre_satisfiable"
    assert made["checks"][0]["status"] == "fail" and status == 1  # n > 20 with n <= 10


def test_nothing_found_warns_and_fails_only_when_strict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    status, report, err = _json(capsys, "plain.py")
    assert status == 0 and report["contracts"] == [] and "no @contract class" in err
    status, _, err = _json(capsys, "plain.py", "--strict")
    assert status == 1 and "no @contract class" in err


def test_excluded_paths_are_not_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "skip_me").mkdir()
    (tmp_path / "skip_me" / "boom.py").write_text("raise SystemExit('imported!')\n")
    (tmp_path / "ok_cfg.py").write_text(VACUOUS)
    monkeypatch.chdir(tmp_path)
    status, report, _ = _json(capsys, ".", "--exclude", "skip_me")
    assert status == 1 and report["errors"] == []
    status, report, _ = _json(capsys, ".")
    assert status == 2 and "imported!" in report["errors"][0]["error"]  # type: ignore[index]


def test_only_affected_verifies_the_changed_files_and_their_importers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.hoare]\ntargets = [\"app\"]\n")
    app = tmp_path / "app"
    app.mkdir()
    (app / "aff_models.py").write_text(
        "from hoare import Field, LLMDataModel\n\n\n"
        "class Q(LLMDataModel):\n    n: int = Field(ge=0, le=10)\n")
    contract = VACUOUS.split("\n\n\n@contract()")[0].replace(
        "class Q(LLMDataModel):\n    n: int = Field(ge=0, le=10)", "from aff_models import Q")
    (app / "aff_uses.py").write_text(contract + "\n\n\n@contract()" +
                                     VACUOUS.split("\n\n\n@contract()")[1])
    (app / "aff_other.py").write_text(VACUOUS.replace("Weak", "Other"))
    (tmp_path / "notes.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    # a changed model: the file that imports it is verified, the unrelated one is not
    status, report, _ = _json(capsys, "--only-affected", "app/aff_models.py")
    assert [c["name"] for c in report["contracts"]] == ["app.aff_uses:Weak"]  # type: ignore[index]
    # a changed file no contract depends on: nothing to verify, and that passes
    status, report, err = _json(capsys, "--only-affected", "notes.py", "--strict")
    assert status == 0 and report["contracts"] == [] and err == ""


def test_the_library_call_takes_the_same_targets(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import hoare
    from hoare.verifier import DiscoveryError

    _project(tmp_path, "", monkeypatch, "rules_lib")
    report = hoare.verify("rules_lib.py:Impossible")
    (contract,) = report.contracts
    assert contract.name == "rules_lib:Impossible" and contract.status == "fail"
    assert contract.checks[0].line is not None  # located, as in the CLI's reports
    with pytest.raises(DiscoveryError):
        hoare.verify("rules_lib.py:Missing")
