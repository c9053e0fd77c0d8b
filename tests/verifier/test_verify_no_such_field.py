"""``no_such_field``: a predicate reading an attribute its value's type does not have
(``o.lable`` for ``o.label``) is reported, naming the attribute and the closest field.
``fail`` (exit 1) only where exact: an output (validated from JSON into exactly the
class) of a model without ``extra="allow"`` and without a lookup of its own; an input
(maybe a subclass instance from the caller) or an extra-allowing model is a ``warn``.
Real attributes (fields, properties, methods, computed fields, private attributes,
class variables, pydantic's API) are never flagged: checked against real Python."""

from __future__ import annotations

import importlib.util
import itertools
import keyword
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from hoare.cli.parser import main
from hoare.verifier.checks.fields import check_fields

_COUNTER = itertools.count()

IDENTIFIER = st.from_regex(r"[a-z][a-z0-9_]{2,11}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and not n.startswith("model_"))

MODULE = '''
from typing import Any, ClassVar

from pydantic import ConfigDict, PrivateAttr, computed_field, field_validator, model_validator

from hoare import Contract, LLMDataModel, Post, Pre, contract


class Inner(LLMDataModel):
    depth: int = 0


class Value(LLMDataModel):
    model_config = ConfigDict(extra={extra!r})
{fields}
    inner: Inner = Inner()
    kind: ClassVar[str] = "k"
    _secret: int = PrivateAttr(default=0)

    @property
    def shown(self) -> str:
        return "s"

    @computed_field
    @property
    def computed(self) -> int:
        return 1

    def helper(self) -> int:
        return 2
{lookup}

@contract()
class Checked(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda i: {pre}, "pre"),)
    post_conditions = (Post(lambda o: {post}, "post"),
                       Post(lambda o, i: {post_input}, "post with the input"))

    def forward(self, input: Value) -> Value:
        return self.contract_result
'''


def _load(tmp: Path, *, fields: list[str], pre: str = "True", post: str = "True",
          post_input: str = "True", extra: str = "ignore", lookup: str = "") -> Any:
    name = f"nsf_generated_{next(_COUNTER)}"
    body = "\n".join(f"    {f}: int = 0" for f in fields) or "    pass"
    path = tmp / f"{name}.py"
    path.write_text(MODULE.format(fields=body, pre=pre, post=post, post_input=post_input,
                                  extra=extra, lookup=lookup))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _found(module: Any) -> list[tuple[str, str, str]]:
    return [(r.status, r.predicate or "", r.message)
            for r in check_fields(module.Checked.__hoare__)]


def _real_attribute(cls: type[BaseModel], name: str) -> bool:
    """The oracle: does an instance built the way an output is (from JSON) have it?"""
    instance = cls.model_validate_json("{}")
    try:
        getattr(instance, name)
    except AttributeError:
        return False
    return True


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(fields=st.lists(IDENTIFIER, min_size=1, max_size=4, unique=True), data=st.data())
def test_a_typo_is_a_fail_on_the_output_and_a_warn_on_the_input(
        fields: list[str], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    field = data.draw(st.sampled_from(fields))
    position = data.draw(st.integers(0, len(field) - 1))
    typo = data.draw(st.sampled_from([field[:position] + field[position + 1:],
                                      field[:position] + "x" + field[position:],
                                      field + "s"]))
    assume(typo.isidentifier() and not keyword.iskeyword(typo) and typo not in fields)
    module = _load(tmp_path_factory.mktemp("nsf"), fields=fields, pre=f"i.{typo} > 0",
                   post=f"o.{typo} > 0", post_input=f"i.{typo} == o.{fields[0]}")
    assume(not _real_attribute(module.Value, typo))  # e.g. "copy" is a real method
    found = _found(module)
    assert [(status, predicate) for status, predicate, _ in found] == [
        ("warn", "pre_conditions[0]"), ("fail", "post_conditions[0]"),
        ("warn", "post_conditions[1]")]
    for _status, _predicate, message in found:
        assert repr(typo) in message


@SETTINGS
@given(fields=st.lists(IDENTIFIER, min_size=1, max_size=4, unique=True),
       probe=st.sampled_from(["shown", "computed", "helper()", "kind", "_secret",
                              "model_dump()", "model_fields", "model_config",
                              "model_fields_set", "inner.depth", "__class__",
                              "__dict__", "model_extra", "__pydantic_fields_set__"]))
def test_real_attributes_are_never_flagged(fields: list[str], probe: str,
                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    read = f"(o.{fields[0]}, o.{probe})"
    module = _load(tmp_path_factory.mktemp("nsf"), fields=fields, pre=f"(i.{fields[-1]}, "
                   f"i.{probe})", post=read, post_input=f"(i.{probe}, o.{probe})")
    assert _found(module) == []
    instance = module.Value.model_validate_json("{}")  # the oracle agrees: all are real
    for name in (fields[0], probe.removesuffix("()")):
        target: Any = instance
        for part in name.split("."):
            target = getattr(target, part)


@SETTINGS
@given(name=IDENTIFIER)
def test_only_exact_lookups_fail(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("nsf")
    assume(name not in ("depth",))
    allowing = _load(tmp, fields=["label"], post=f"o.{name}_x > 0", extra="allow")
    assert [s for s, _, _ in _found(allowing)] == ["warn"]  # JSON may carry it
    for lookup in ("def __getattr__(self, attribute):\n        return 1",
                   "def __getattribute__(self, attribute):\n        return 1",
                   "def model_post_init(self, context):\n"
                   "        object.__setattr__(self, 'extra_x', 1)",
                   "def __init__(self, **data):\n        super().__init__(**data)"):
        looking = _load(tmp, fields=["label"], post=f"o.{name}_x > 0",
                        lookup=f"\n    {lookup}\n")
        assert _found(looking) == []  # its own code may add or answer anything
    nested = _load(tmp, fields=["label"], post=f"o.inner.{name}_x > 0")
    ((status, _, message),) = _found(nested)
    assert status == "fail" and "Inner" in message
    # validators of its own may return another object (a subclass instance): warn
    for lookup in ("@model_validator(mode='after')\n    def swap(self):\n        return self",
                   "@model_validator(mode='wrap')\n    @classmethod\n"
                   "    def swap(cls, data, handler):\n        return handler(data)"):
        validated = _load(tmp, fields=["label"], post=f"o.{name}_x > 0",
                          lookup=f"\n    {lookup}\n")
        assert [s for s, _, _ in _found(validated)] == ["warn"]
    replaced = _load(tmp, fields=["label"], post=f"o.inner.{name}_x > 0",
                     lookup="\n    @field_validator('inner')\n    @classmethod\n"
                            "    def swap(cls, value):\n        return value\n")
    assert [s for s, _, _ in _found(replaced)] == ["warn"]


def test_the_closest_field_is_named(tmp_path: Path) -> None:
    module = _load(tmp_path, fields=["label", "score"], post="o.lable == 'x'")
    ((status, predicate, message),) = _found(module)
    assert (status, predicate) == ("fail", "post_conditions[0]")
    assert "'lable'" in message and "did you mean 'label'?" in message


def test_a_rebound_or_guarded_name_is_not_the_parameter(tmp_path: Path) -> None:
    module = _load(tmp_path, fields=["label"],
                   post="all(o.nope for o in [1]) and (lambda o: o.nah)(1)",
                   pre="hasattr(i, 'maybe') and i.maybe")
    assert _found(module) == []


def test_hoare_verify_exits_1_on_a_typo_in_a_post_condition(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _load(tmp_path, fields=["label"], post="o.lable == 'x'")
    status = main(["verify", module.__file__, "--no-cache", "--format", "sarif"])
    out = capsys.readouterr().out
    assert status == 1
    import json

    log = json.loads(out)
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "no_such_field"]
    assert result["level"] == "error" and "lable" in result["message"]["text"]
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert "o.lable" in Path(module.__file__).read_text().splitlines()[line - 1]
    warn_only = _load(tmp_path, fields=["label"], pre="i.lable == 'x'")
    assert main(["verify", warn_only.__file__, "--no-cache"]) == 0  # a warning only
    capsys.readouterr()
