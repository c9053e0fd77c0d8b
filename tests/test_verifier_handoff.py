"""Composition models the hand-off ``Pipeline`` really runs (``TypeSpec.validate``:
the same model passes as it is, another model is dumped and validated).

Each regression pipeline always (or sometimes) fails at run time, while the
translation of the hand-off used to claim that B accepts every output of A. The
tests look at the translation itself (before the concrete search that guards
``pass`` verdicts) and at the verdict, and they run the real pipeline.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any

import pytest
import z3
from hoare.kernel import ContractConfig
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    field_serializer,
)

from hoare.conditions import Post, Pre
from hoare.description import describe
from hoare.verifier.checks import contract_model, predicate_assertions, type_assertions
from hoare.verifier.composition import _handoff, _Link, _pipeline_pair
from hoare.verifier.semantics import _not
from hoare.verifier.solver import Assertion, SolverOptions, solve
from hoare.verifier.values import Z3_LOCK, naming

OPTIONS = SolverOptions(timeout_ms=10_000, rlimit=5_000_000)


def stage(input_type: Any, output_type: Any, pre: tuple[Pre, ...] = (),
          post: tuple[Post, ...] = ()) -> Any:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": input_type, "return": output_type}
    cls = type("Stage", (), {"forward": forward, "pre_conditions": list(pre),
                             "post_conditions": list(post), "__module__": __name__})
    return contract_model(describe(cls, ContractConfig()))


def translation_claims_acceptance(a: Any, b: Any) -> bool:
    """Does the translated hand-off alone prove that B's type accepts every output
    of A (no reason for a rejection is satisfiable)?"""
    link = _Link()
    with Z3_LOCK, naming("handoff."):
        accepted = _handoff(a, b, link)
    if not link.exact:
        return False
    base = type_assertions(a.output) + predicate_assertions(a.post) + [
        Assertion(None, d, "def") for d in link.defs]
    b_types = [c for c in b.input.constraints if c.kind == "type" and c.label is not None]
    reasons = [_not(accepted), *[cond for _note, cond in link.regions],
               *[z3.Not(c.expr) for c in b_types]]
    for reason in reasons:
        if z3.is_false(reason):
            continue
        if solve([*base, Assertion("goal", reason, "goal")], OPTIONS).status != "unsat":
            return False
    return True


def verdict(a: Any, b: Any) -> str:
    return _pipeline_pair(a, b, OPTIONS, 0).status


def really_rejects(b_model: type[BaseModel], a_value: BaseModel) -> None:
    """The premise: ``Pipeline``'s hand-off (``TypeSpec.validate``) rejects A's value."""
    from hoare.models import type_spec

    with pytest.raises(ValidationError):
        type_spec(b_model).validate(a_value)


def unsound_before(a: Any, b: Any, b_model: type[BaseModel], a_value: BaseModel) -> None:
    really_rejects(b_model, a_value)
    assert not translation_claims_acceptance(a, b)
    assert verdict(a, b) in ("fail", "unknown")


# -- aliases, exclusion, computed fields, serializers -----------------------------------------


class Draft(BaseModel):
    title: str = Field(min_length=1)
    words: int = Field(ge=0, le=100)


class AliasedDraft(BaseModel):
    title: str = Field(alias="Title")
    words: int


def test_an_alias_is_looked_up_in_the_dump() -> None:
    a, b = stage(str, Draft), stage(AliasedDraft, str)
    unsound_before(a, b, AliasedDraft, Draft(title="t", words=1))
    assert verdict(a, b) == "fail"


class PopulatedDraft(BaseModel):
    model_config = ConfigDict(validate_by_name=True)
    title: str = Field(alias="Title")
    words: int


def test_validate_by_name_accepts_the_dump() -> None:
    assert verdict(stage(str, Draft), stage(PopulatedDraft, str)) == "pass"


class SecretDraft(BaseModel):
    title: str = Field(min_length=1)
    words: int = Field(ge=0, le=100, exclude=True)


def test_an_excluded_field_is_not_handed_over() -> None:
    a, b = stage(str, SecretDraft), stage(Draft, str)
    unsound_before(a, b, Draft, SecretDraft(title="t", words=1))
    assert verdict(a, b) == "fail"


class CountedDraft(BaseModel):
    title: str = Field(min_length=1)
    words: int = Field(ge=0, le=100)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pages(self) -> int:
        return self.words // 10


class StrictDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    words: int


def test_a_computed_field_is_an_extra_key() -> None:
    a, b = stage(str, CountedDraft), stage(StrictDraft, str)
    unsound_before(a, b, StrictDraft, CountedDraft(title="t", words=1))
    assert verdict(a, b) == "fail"


class ScaledDraft(BaseModel):
    title: str = Field(min_length=1)
    words: int = Field(ge=1, le=100)

    @field_serializer("words")
    def in_thousands(self, value: int) -> int:
        return value * 1000


def test_a_field_serializer_changes_what_is_handed_over() -> None:
    a, b = stage(str, ScaledDraft), stage(Draft, str)
    unsound_before(a, b, Draft, ScaledDraft(title="t", words=1))
    assert verdict(a, b) == "fail"


# -- conversions ------------------------------------------------------------------------------


class Count(BaseModel):
    n: int


class Measure(BaseModel):
    n: float


def test_a_large_int_is_rounded_to_a_float() -> None:
    a = stage(str, Count, post=(Post(lambda c: c.n == 9007199254740993, "2**53 + 1"),))
    b = stage(Measure, str, pre=(Pre(lambda m: m.n != 9007199254740992, "not 2**53"),))
    value = Count(n=9007199254740993)
    from hoare.models import type_spec

    assert type_spec(Measure).validate(value).n == 9007199254740992  # rounded
    assert not translation_claims_acceptance(a, b)
    assert verdict(a, b) == "fail"


def test_small_ints_become_floats_exactly() -> None:
    a = stage(str, Count, post=(Post(lambda c: 0 <= c.n <= 1000, "small"),))
    b = stage(Measure, str, pre=(Pre(lambda m: m.n <= 1000, "at most 1000"),))
    assert verdict(a, b) == "pass"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Named(BaseModel):
    color: str


class StrictColored(BaseModel):
    model_config = ConfigDict(strict=True)
    color: Color


class Colored(BaseModel):
    color: Color


def test_strict_mode_refuses_a_string_for_an_enum() -> None:
    a = stage(str, Named, post=(Post(lambda n: n.color == "red", "red"),))
    b = stage(StrictColored, str)
    unsound_before(a, b, StrictColored, Named(color="red"))
    assert verdict(a, b) == "fail"
    assert verdict(a, stage(Colored, str)) == "pass"  # lax mode converts it


class Whole(BaseModel):
    n: float = Field(ge=0, le=10)


def test_an_integral_float_becomes_an_int() -> None:
    a = stage(str, Whole, post=(Post(lambda w: w.n == 3.0, "three"),))
    b = stage(Count, str, pre=(Pre(lambda c: c.n == 3, "three"),))
    assert verdict(a, b) == "pass"


class Shifted(BaseModel):
    words: Annotated[int, BeforeValidator(lambda v: v - 100), Field(ge=0)]
    title: str


def test_a_before_validator_of_b_sees_the_value() -> None:
    a, b = stage(str, Draft), stage(Shifted, str)
    unsound_before(a, b, Shifted, Draft(title="t", words=1))
    assert verdict(a, b) == "fail"


class Loud(BaseModel):
    model_config = ConfigDict(str_to_upper=True)
    title: str
    words: int


def test_string_transforms_of_b_are_not_an_identity() -> None:
    a = stage(str, Draft, post=(Post(lambda d: d.title == "quiet", "quiet"),))
    b = stage(Loud, str, pre=(Pre(lambda d: d.title == "quiet", "still quiet"),))
    assert verdict(a, b) in ("fail", "unknown")


def test_the_same_model_passes_as_it_is() -> None:
    a = stage(str, Draft, post=(Post(lambda d: d.words > 5, "long"),))
    b = stage(Draft, str, pre=(Pre(lambda d: d.words > 5, "long enough"),))
    assert verdict(a, b) == "pass"


def test_a_native_value_is_not_a_model() -> None:
    a, b = stage(str, int), stage(Draft, str)
    assert verdict(a, b) == "fail"
