"""What ``hoare verify`` finds and where it says a problem is.

* Identity is the object, not the name: every contract class a factory makes is
  verified and reported (two products share ``__hoare__.name``); ``module:Name``
  selects by the module attribute name as well as by ``__qualname__``.
* An import error is located where the user fixes it: the deepest frame in the
  target's own file (else that file, line 1), never in the standard library or in
  hoare's own files; a predicate with the wrong number of parameters is located at
  the predicate's line, in every format.
* ``[tool.hoare] overrides`` naming no contract is warned about, with the closest name.
"""

from __future__ import annotations

import json
import os
import sysconfig
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hoare
from hoare.cli.parser import main
from hoare.errors import ContractDefinitionError

FACTORY = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class Num(LLMDataModel):
    n: int = Field(ge=0, le=10)


def make(limit):
    @contract()
    class Checked(Contract):
        prompt = "p"
        pre_conditions = (Pre(lambda q: q.n > limit, "over the limit"),)

        def forward(self, input: Num) -> Num:
            return self.contract_result

    return Checked


{products}
'''


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object],
                                                                      str]:
    status = main(["verify", *argv, "--no-cache", "--format", "json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=st.lists(st.sampled_from([-1, 3, 10, 50]), min_size=2, max_size=4))
def test_every_product_of_a_factory_is_verified(
        limits: list[int], tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path_factory.mktemp("factory")
    products = "\n".join(f"P{i} = make({limit})" for i, limit in enumerate(limits))
    (directory / "factory_mod.py").write_text(FACTORY.format(products=products))
    status, report, _err = _json(capsys, str(directory / "factory_mod.py"))
    contracts = report["contracts"]
    assert isinstance(contracts, list) and len(contracts) == len(limits)
    assert len({c["name"] for c in contracts}) == len(limits)  # each named apart
    # n in [0, 10]: "n > limit" is satisfiable iff limit < 10
    expected = ["pass" if limit < 10 else "fail" for limit in limits]
    got = [next(k["status"] for k in c["checks"] if k["kind"] == "pre_satisfiable")
           for c in contracts]
    assert got == expected
    assert status == (1 if "fail" in expected else 0)


def test_module_name_selects_by_attribute_and_by_qualname(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    products = "Easy = make(3)\nHard = make(50)\nAlias = Easy\n"
    (tmp_path / "factory_sel.py").write_text(FACTORY.format(products=products))
    target = str(tmp_path / "factory_sel.py")
    status, report, _ = _json(capsys, f"{target}:Hard")
    (only,) = report["contracts"]  # type: ignore[misc]
    assert status == 1 and only["status"] == "fail"
    status, report, _ = _json(capsys, f"{target}:Alias")
    (only,) = report["contracts"]  # type: ignore[misc]
    assert status == 0 and only["status"] == "pass"
    status, report, _ = _json(capsys, f"{target}:make.<locals>.Checked".replace(
        "make.<locals>.Checked", "Checked"))
    assert status == 2  # no attribute and no qualname is "Checked"
    status, report, _ = _json(capsys, f"{target}:Missing")
    assert status == 2 and "Missing" in report["errors"][0]["error"]  # type: ignore[index]


def test_the_same_class_held_by_two_modules_is_reported_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "maker_x.py").write_text(FACTORY.format(products=""))
    (tmp_path / "holder_a.py").write_text("from maker_x import make\n\nShared = make(3)\n")
    (tmp_path / "holder_b.py").write_text("from holder_a import Shared\n")
    monkey_cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        status, report, _ = _json(capsys, ".")
    finally:
        os.chdir(monkey_cwd)
    assert status == 0
    assert len(report["contracts"]) == 1  # type: ignore[arg-type]


# -- where an import error is ------------------------------------------------------------

LOCATED = {
    # name: (source bytes, expected line in the user's file)
    "stdlib_raise": (b"import json\n\nvalue = json.loads('{')\n", 3),
    "stdlib_callback": (b"import functools\n\nfunctools.reduce(lambda a, b: a / b, [1, 0])\n",
                        3),
    "builtin_raise": (b"x = 1\nsorted([1, 'a'])\n", 2),
    "nul_bytes": (b"x = 1\n\0\ny = 2\n", 1),
    "not_utf8": (b"x = 1\ns = '\xff\xfe'\n", None),
    "syntax": (b"x = 1\ndef broken(:\n", 2),
    "hoare_raises": (textwrap.dedent('''\
        from hoare import Contract, Post, contract

        @contract()
        class Bad(Contract):
            prompt = "p"
            post_conditions = (
                Post(lambda a, b, c: True, "three parameters"),
            )

            def forward(self, input: str) -> str:
                return self.contract_result
        ''').encode(), 7),
    "hoare_method_arity": (textwrap.dedent('''\
        from hoare import Contract, contract

        @contract()
        class Bad(Contract):
            prompt = "p"

            def post(self, value, a, b, c):
                return True

            def forward(self, input: str) -> str:
                return self.contract_result
        ''').encode(), 7),
    "exit_status": (b"import sys\nsys.exit(3)\n", 2),
}


def _outside(file: str) -> bool:
    real = os.path.realpath(file)
    roots = [os.path.realpath(sysconfig.get_path("stdlib")),
             os.path.realpath(os.path.dirname(hoare.__file__))]
    return any(real.startswith(root + os.sep) for root in roots)


@pytest.mark.parametrize("name", sorted(LOCATED))
def test_an_import_error_is_located_in_the_user_s_file(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, line = LOCATED[name]
    path = tmp_path / f"loc_{name}.py"
    path.write_bytes(source)
    for chosen in ("json", "sarif"):
        status = main(["verify", str(path), "--no-cache", "--format", chosen])
        out = capsys.readouterr().out
        assert status == 2
        if chosen == "json":
            (error,) = json.loads(out)["errors"]
            assert error["file"] == str(path), error
            assert not _outside(error["file"])
            if line is not None:
                assert error["line"] == line, error
        else:
            (result,) = json.loads(out)["runs"][0]["results"]
            physical = result["locations"][0]["physicalLocation"]
            assert physical["artifactLocation"]["uri"].endswith(f"loc_{name}.py")
            if line is not None:
                assert physical["region"]["startLine"] == line


def test_a_helper_s_error_is_located_at_the_import_in_the_user_s_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "helper_mod_q.py").write_text("x = 1\nraise RuntimeError('helper')\n")
    (tmp_path / "user_mod_q.py").write_text("import os\nimport helper_mod_q\n")
    status, report, _ = _json(capsys, str(tmp_path / "user_mod_q.py"))
    (error,) = report["errors"]  # type: ignore[misc]
    assert status == 2 and (error["file"], error["line"]) == (
        str(tmp_path / "user_mod_q.py"), 2)


WRONG_SHAPES = {
    "three": lambda a, b, c: True,
    "keyword_only": lambda *, key: True,
    "four": lambda a, b, c, d: True,
}


@pytest.mark.parametrize("shape", sorted(WRONG_SHAPES))
def test_a_wrong_arity_predicate_carries_its_own_location(shape: str) -> None:
    from hoare import Contract, Post, contract

    predicate = WRONG_SHAPES[shape]
    with pytest.raises(ContractDefinitionError) as caught:

        @contract()
        class Wrong(Contract):
            prompt = "p"
            post_conditions = (Post(predicate, "wrong shape"),)

            def forward(self, input: str) -> str:
                return self.contract_result

    error = caught.value
    assert (error.file, error.line) == (  # type: ignore[attr-defined]
        predicate.__code__.co_filename, predicate.__code__.co_firstlineno)
    assert any("defined at" in note for note in getattr(error, "__notes__", []))


# -- [tool.hoare] overrides that name nothing --------------------------------------------


def test_an_override_naming_no_contract_is_warned_about_with_the_closest_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ovr_mod.py").write_text(FACTORY.format(products="Heavy = make(3)"))
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.hoare.overrides."ovr_mod:make.<locals>.Checkd"]
        rlimit = 20000000

        [tool.hoare.overrides."ovr_mod:make.<locals>.Checked"]
        rlimit = 20000000

        [tool.hoare.overrides."zzz:Unrelated"]
        rlimit = 20000000
        '''))
    monkeypatch.chdir(tmp_path)
    status, report, err = _json(capsys, "ovr_mod.py")
    assert status == 0, err
    assert [c["name"] for c in report["contracts"]] == [  # type: ignore[union-attr]
        "ovr_mod:make.<locals>.Checked"]
    warnings = [line for line in err.splitlines() if "overrides" in line]
    assert len(warnings) == 2, err
    assert any("'ovr_mod:make.<locals>.Checkd'" in w and
               "did you mean 'ovr_mod:make.<locals>.Checked'" in w for w in warnings), err
    assert any("'zzz:Unrelated'" in w for w in warnings), err


# -- the Python API finds what `hoare verify` finds --------------------------------------


def test_the_python_api_verifies_every_factory_product(tmp_path: Path) -> None:
    import importlib.util

    from hoare.verifier import DiscoveryError, discover, verify

    path = tmp_path / "api_factory_mod.py"
    path.write_text(FACTORY.format(products="Low = make(3)\nHigh = make(50)\n"))
    spec = importlib.util.spec_from_file_location("api_factory_mod", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = verify(module)
    assert [c.status for c in report.contracts] == ["pass", "fail"]
    assert len({c.name for c in report.contracts}) == 2
    os.mkfifo(tmp_path / "api_fifo.py")
    with pytest.raises(DiscoveryError, match="FIFO"):
        discover([str(tmp_path / "api_fifo.py")])  # refused, not waited on


DOCUMENTED = '''
from hoare import LLMDataModel, Field


class Documented(LLMDataModel):
    count: int = Field(ge=0)
    """How many there are."""
    name: str
    """The name, as shown."""


def where():
    import inspect
    return inspect.getmodule(inspect.currentframe())
'''


def test_an_imported_file_is_known_to_inspect_before_it_runs(tmp_path: Path) -> None:
    """``import_file`` fills ``inspect``'s file cache for the module before running it
    (pydantic asks ``inspect.getmodule`` of every frame while it reads attribute
    docstrings, and an unknown file costs a walk of every loaded module): the module's
    frames map to it, the docstrings pydantic reads are the same, and no walk runs."""
    import inspect

    from hoare.verifier.project.discovery import import_file

    path = tmp_path / "documented_module_xyz.py"
    path.write_text(DOCUMENTED)
    walked: list[str] = []
    real = inspect.ismodule

    def counting(value: object) -> bool:  # the scan calls it once per loaded module
        walked.append("")
        return real(value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inspect, "ismodule", counting)
        module = import_file(path)
    fields = module.Documented.model_fields
    assert fields["count"].description == "How many there are."
    assert fields["name"].description == "The name, as shown."
    assert module.where() is module
    assert len(walked) < 50, len(walked)  # no walk of the ~1,000 loaded modules
