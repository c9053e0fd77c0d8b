"""A module's ``__file__`` is the module's own data: it may rebind it to anything.
``hoare verify`` uses it as a path only when it is a non-empty ``str`` with no NUL
(``source.module_file``), or the import spec's origin:
finding the module a file was imported as (``discover``), a class's file and line
(``units``, ``source.class_line``). Anything else verifies the module as usual, never an
internal error."""

from __future__ import annotations

import json
import textwrap
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoare.cli.parser import main
from hoare.declaration.source import module_file

MODULE = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class Rebinding:
    def __bool__(self):
        raise RuntimeError("no truth")

    def __eq__(self, other):
        raise RuntimeError("no equality")

    __hash__ = None

    def __fspath__(self):
        raise RuntimeError("no path")


class Num(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class Checked(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 3, "big enough"),)

    def forward(self, input: Num) -> Num:
        return self.contract_result


# last: inspect.getmodule (pydantic's docstring reading) needs it while classes are made
__file__ = {value}
'''

# what a module may rebind its __file__ to: not a path, a path that cannot be resolved,
# an object whose every dunder raises
REBOUND = ["42", "None", "''", "b'mod.py'", "['mod.py']", "'\\x00mod.py'", "Rebinding()",
           "1.5", "object()", "'no/such/file.py'"]


@pytest.mark.parametrize("in_package", [False, True], ids=["file", "package"])
@pytest.mark.parametrize("value", REBOUND)
def test_a_rebound_file_still_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str], value: str,
                                       in_package: bool) -> None:
    folder = tmp_path / "pkg" if in_package else tmp_path
    folder.mkdir(exist_ok=True)
    if in_package:
        (folder / "__init__.py").write_text("")
    name = f"rebound_{abs(hash((value, in_package)))}"
    target = folder / f"{name}.py"
    target.write_text(textwrap.dedent(MODULE.format(value=value)))
    monkeypatch.chdir(tmp_path)
    status = main(["verify", str(target.relative_to(tmp_path)), "--no-cache", "--format",
                   "json"])
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert report["errors"] == [], report["errors"]
    assert status == 0, out
    (checked,) = report["contracts"]
    assert checked["checks"], checked
    for where in (checked, *checked["checks"]):
        location = where["location"]
        # the module's file, or the path its ``__file__`` names when that is one
        assert location is None or type(location["file"]) is str, where
        assert "internal error" not in where.get("message", ""), where


class _RaisingFile:
    @property
    def __file__(self) -> str:
        raise RuntimeError("no file")


@given(st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.binary(), st.text(),
                 st.lists(st.text(), max_size=2), st.builds(object)))
def test_module_file_is_a_non_empty_str_or_none(value: object) -> None:
    module = types.ModuleType("m")
    module.__file__ = value  # type: ignore[assignment]
    assert module_file(module) == (value if isinstance(value, str) and value and
                                   "\x00" not in value else None)
    assert module_file(_RaisingFile()) is None
    assert module_file(None) is None
