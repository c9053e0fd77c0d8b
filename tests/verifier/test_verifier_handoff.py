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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    create_model,
    field_serializer,
)

from hoare.declaration.conditions import Post, Pre
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig
from hoare.verifier.checks.handoff import Link, handoff
from hoare.verifier.checks.model import contract_model, predicate_assertions, type_assertions
from hoare.verifier.checks.pipelines import check_pair
from hoare.verifier.search.concrete import BindError, assign
from hoare.verifier.solve.solver import Assertion, SolverOptions, solve
from hoare.verifier.translate.logic import z3_not
from hoare.verifier.translate.values import Z3_LOCK, naming

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
    link = Link()
    with Z3_LOCK, naming("handoff."):
        accepted = handoff(a, b, link)
    if not link.exact:
        return False
    base = type_assertions(a.output) + predicate_assertions(a.post) + [
        Assertion(None, d, "def") for d in link.defs]
    b_types = [c for c in b.input.constraints if c.kind == "type" and c.label is not None]
    reasons = [z3_not(accepted), *[cond for _note, cond in link.regions],
               *[z3.Not(c.expr) for c in b_types]]
    for reason in reasons:
        if z3.is_false(reason):
            continue
        if solve([*base, Assertion("goal", reason, "goal")], OPTIONS).status != "unsat":
            return False
    return True


def verdict(a: Any, b: Any) -> str:
    return check_pair(a, b, OPTIONS, 0).status


def really_rejects(b_model: type[BaseModel], a_value: BaseModel) -> None:
    """The premise: ``Pipeline``'s hand-off (``TypeSpec.validate``) rejects A's value."""
    from hoare.declaration.models import type_spec

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
    from hoare.declaration.models import type_spec

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


class Copy(BaseModel):
    title: str
    words: int


def test_another_models_instance_in_a_native_output_is_dumped() -> None:
    a = stage(str, Draft | None, post=(Post(lambda d: d is not None, "a draft"),))
    assert verdict(a, stage(Copy, str)) == "pass"
    maybe = stage(str, Draft | None)
    assert verdict(maybe, stage(Copy, str)) == "fail"  # None is not a Copy


# -- differential: the translated hand-off admits what pydantic really does -----------------


_KINDS: dict[str, tuple[Any, list[Any]]] = {
    "int": (int, [0, 1, -3, 9007199254740993, 7]),
    "float": (float, [0.0, 1.0, 2.5, -0.0, 1e300]),
    "bool": (bool, [True, False]),
    "str": (str, ["", "red", " x "]),
    "enum": (Color, [Color.RED, Color.BLUE]),
    "opt_int": (int | None, [None, 2]),
    "list": (list[int], [[], [1, 2]]),
}


@st.composite
def pairs(draw: Any) -> tuple[type[BaseModel], type[BaseModel], list[dict[str, Any]]]:
    a_fields: dict[str, Any] = {}
    b_fields: dict[str, Any] = {}
    rows: list[dict[str, Any]] = [{}]
    for index in range(draw(st.integers(1, 3))):
        name = f"f{index}"
        a_kind = draw(st.sampled_from(sorted(_KINDS)))
        a_type, values = _KINDS[a_kind]
        a_kwargs: dict[str, Any] = {}
        if draw(st.integers(0, 5)) == 0:
            a_kwargs["exclude"] = True
        a_fields[name] = (a_type, Field(**a_kwargs))
        rows = [dict(row, **{name: value}) for row in rows
                for value in draw(st.lists(st.sampled_from(values), min_size=1, max_size=2))]
        if draw(st.integers(0, 4)) == 0:
            continue  # B has no such field
        b_type = _KINDS[draw(st.sampled_from(sorted(_KINDS)))][0]
        b_kwargs: dict[str, Any] = {}
        if draw(st.integers(0, 4)) == 0:
            b_kwargs["alias"] = name.upper()
        if draw(st.integers(0, 3)) == 0:
            b_kwargs["default"] = draw(st.sampled_from([None, 0, "d"]))
        if draw(st.integers(0, 3)) == 0:
            b_kwargs["strict"] = True
        b_fields[name] = (b_type, Field(**b_kwargs))
    b_config = draw(st.fixed_dictionaries({}, optional={
        "strict": st.booleans(), "extra": st.sampled_from(["forbid", "ignore"]),
        "validate_by_name": st.booleans(), "str_strip_whitespace": st.booleans()}))
    a_model = create_model("A", **a_fields)
    b_model = create_model("B", __config__=ConfigDict(**b_config), **b_fields)
    return a_model, b_model, rows[:8]


def _satisfiable(formulas: list[z3.BoolRef]) -> bool:
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    solver.add(*formulas)
    return solver.check() != z3.unsat


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs())
def test_the_handoff_translation_admits_the_real_outcome(generated: Any) -> None:
    from hoare.declaration.models import type_spec

    a_model, b_model, rows = generated
    a, b = stage(str, a_model), stage(b_model, str)
    link = Link()
    with Z3_LOCK, naming("handoff.diff."):
        accepted = handoff(a, b, link)
    b_types = z3.And(*[c.expr for c in b.input.constraints if c.kind == "type"])
    for row in rows:
        try:
            a_value = a_model.model_validate(row)
        except ValidationError:
            continue
        with Z3_LOCK:
            a_equal = assign(a.output.root, a_value).equalities()
            base = [*link.defs, *a_equal]
        try:
            b_value = type_spec(b_model).validate(a_value)
        except ValidationError:
            with Z3_LOCK:
                rejected = z3.Or(z3.Not(accepted), z3.Not(b_types),
                                 *[cond for _note, cond in link.regions])
                assert _satisfiable([*base, rejected]), (a_model.model_fields,
                                                         b_model.model_fields, row)
            continue
        try:
            with Z3_LOCK:
                b_equal = assign(b.input.root, b_value).equalities()
        except BindError:
            continue  # a value the symbolic B cannot hold is opaque there
        with Z3_LOCK:
            assert _satisfiable([*base, accepted, *b_equal]), (
                a_model.model_fields, b_model.model_fields, row, b_value)
