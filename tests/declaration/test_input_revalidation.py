"""``TypeSpec.validate``, the boundary every value built in Python crosses (a contract's
input, a pipeline hand-off, an agent's answer): every model and dataclass instance inside
is validated again, as pydantic-core does under ``revalidate_instances='always'``, so the
value user code and the verifier's verdicts see satisfies its type's constraints however
the caller built it. These tests pin what pydantic-core really does there (the class of
the result, ``fields_set``, extras, private attributes, frozen models, ``RootModel``,
dataclasses, ``TypedDict``, native types, generic and recursive models)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Generic, Optional, TypeVar

import pytest
from fuzz.values import floats, ints, texts
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Json,
    PlainValidator,
    PrivateAttr,
    RootModel,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from hoare.declaration import models
from hoare.declaration.models import type_spec
from hoare.declaration.revalidation import revalidation_is_forced


class Inner(BaseModel):
    x: int = Field(ge=0, le=3)


class LooseInner(Inner):
    x: int = -5  # the constraint dropped by a subclass


class WiderInner(Inner):
    y: int = 1


class Outer(BaseModel):
    inner: Inner
    _note: int = PrivateAttr(default=7)


class OuterSub(Outer):
    z: int = 3


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)
    a: int = Field(ge=0)


class Roots(RootModel[list[Inner]]):
    pass


@pydantic_dataclass
class PydanticData:
    a: int = Field(ge=0)


@dataclasses.dataclass
class PlainData:
    inner: Inner


class Typed(TypedDict):
    inner: Inner


T = TypeVar("T")


class Generic1(BaseModel, Generic[T]):
    v: T
    w: int = Field(ge=0)


class Tree(BaseModel):
    a: int = Field(ge=0)
    child: Optional[Tree] = None  # noqa: UP045  (pydantic resolves it either way)


class Forbidding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int


class ForbiddingSub(Forbidding):
    b: int = 2


class Allowing(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int = Field(ge=0)


def broken_inner() -> Inner:
    return Inner.model_construct(x=-5)


def test_the_pydantic_core_here_revalidates_nested_instances() -> None:
    """The environment the rest relies on: prebuilt validators can be turned off."""
    assert revalidation_is_forced()


@pytest.mark.parametrize("annotation, value", [
    (Outer, Outer.model_construct(inner=broken_inner())),
    (Outer, Outer(inner=LooseInner())),
    (Outer, Outer.model_construct(inner=Inner.model_construct())),  # a field left out
    (Inner, broken_inner()),
    (Frozen, Frozen.model_construct(a=-1)),
    (Roots, Roots.model_construct([broken_inner()])),
    (PlainData, PlainData(inner=broken_inner())),
    (Typed, {"inner": broken_inner()}),
    (list[Inner], [Inner(x=1), broken_inner()]),
    (dict[str, Inner], {"k": broken_inner()}),
    (Optional[Inner], broken_inner()),  # noqa: UP045
    (tuple[int, Inner], (1, broken_inner())),
    (Generic1[int], Generic1[int].model_construct(v="x", w=1)),
    (Generic1[int], Generic1[int].model_construct(v=1, w=-1)),
    (Tree, Tree(a=1, child=Tree(a=2, child=Tree.model_construct(a=-1)))),
    (Forbidding, ForbiddingSub(a=1)),  # the subclass's field is an extra input
])
def test_an_instance_breaking_its_constraints_is_refused(annotation: object,
                                                         value: object) -> None:
    with pytest.raises(ValidationError):
        type_spec(annotation).validate(value)


def test_a_mutated_instance_is_refused() -> None:
    outer = Outer(inner=Inner(x=1))
    outer.inner.x = 9  # no validate_assignment: pydantic lets it through
    with pytest.raises(ValidationError):
        type_spec(Outer).validate(outer)
    data = PydanticData(a=1)
    object.__setattr__(data, "a", -1)
    with pytest.raises(ValidationError):
        type_spec(PydanticData).validate(data)


def test_a_valid_value_comes_back_as_a_copy_of_exactly_the_declared_classes() -> None:
    given = OuterSub(inner=WiderInner(x=1))
    given._note = 99
    seen = type_spec(Outer).validate(given)
    assert type(seen) is Outer and type(seen.inner) is Inner  # not the subclasses
    assert seen is not given and seen.inner is not given.inner
    assert seen.inner.x == 1 and "z" not in seen.__dict__ and "y" not in seen.inner.__dict__
    assert seen._note == 7  # private attributes are not carried: their defaults
    assert seen.model_fields_set == given.model_fields_set == {"inner"}
    frozen = type_spec(Frozen).validate(Frozen(a=1))
    assert type(frozen) is Frozen and frozen.a == 1
    allowing = type_spec(Allowing).validate(Allowing(a=1, b=2))
    assert allowing.__pydantic_extra__ == {"b": 2}  # extras kept (extra="allow")
    roots = type_spec(Roots).validate(Roots([WiderInner(x=2)]))
    assert type(roots.root[0]) is Inner


def test_values_with_no_instance_inside_are_validated_as_before() -> None:
    assert type_spec(int).validate(3) == 3
    assert type_spec(list[int]).validate([1, "2"]) == [1, 2]
    assert type_spec(Typed).validate({"inner": {"x": 1}}) == {"inner": Inner(x=1)}


class Aliased(BaseModel):
    x: int = Field(alias="X", ge=0)
    y: int = Field(validation_alias=AliasPath("deep", 0), default=0, ge=0)


class Generated(BaseModel):
    model_config = ConfigDict(alias_generator=str.upper)
    z: int = Field(ge=0)


class Parsed(BaseModel):
    """Validators and types whose input is not what they leave in the field."""

    tags: Annotated[list[str], BeforeValidator(lambda text: text.split(","))]
    count: Json[int]
    hidden: Annotated[str, AfterValidator(SecretStr)]  # the field holds a SecretStr
    loud: str
    anything: Annotated[int, PlainValidator(lambda value: f"<{value}>")]
    n: int = Field(default=0, ge=0)

    @field_validator("loud")
    @classmethod
    def shout(cls, value: str) -> str:
        return value + "!"

    @model_validator(mode="after")
    def count_calls(self) -> Parsed:
        CALLS.append(self.loud)
        return self


CALLS: list[str] = []


class CustomInit(BaseModel):
    x: int = Field(alias="X", ge=0)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)


def test_an_instance_keeps_the_values_its_validators_produced() -> None:
    """An instance is checked against what validation leaves in a field: aliases,
    before validators, ``Json``, after/plain validators and a model's own after
    validators neither refuse it nor run again (pydantic's own revalidation would)."""
    for model, value in [(Aliased, Aliased.model_validate({"X": 1, "deep": [2]})),
                         (Generated, Generated(Z=3)), (CustomInit, CustomInit(X=4))]:
        seen = type_spec(model).validate(value)
        assert seen == value and seen is not value
    CALLS.clear()
    parsed = Parsed(tags="a,b", count="5", hidden="h", loud="hi", anything=1)
    assert CALLS == ["hi!"]
    seen = type_spec(Parsed).validate(parsed)
    assert (seen.tags, seen.count, seen.loud, seen.anything) == (["a", "b"], 5, "hi!", "<1>")
    assert isinstance(seen.hidden, SecretStr) and seen.hidden.get_secret_value() == "h"
    assert CALLS == ["hi!"]  # the model validator did not run again
    broken = Parsed.model_construct(**{**dict(parsed), "n": -1})
    with pytest.raises(ValidationError):  # what the fields' types say is still checked
        type_spec(Parsed).validate(broken)
    with pytest.raises(ValidationError):
        type_spec(Parsed).validate(Parsed.model_construct(**{**dict(parsed), "count": "x"}))
    with pytest.raises(ValidationError):
        type_spec(Aliased).validate(Aliased.model_construct(x=-1))


def test_data_is_validated_as_pydantic_validates_it() -> None:
    """A value the caller wrote (a dict) goes through every validator once; an instance
    inside it is validated again as under ``revalidate_instances='always'``."""
    CALLS.clear()
    seen = type_spec(Parsed).validate({"tags": "a,b", "count": "5", "hidden": "h",
                                       "loud": "hi", "anything": 1})
    assert (seen.tags, seen.count, seen.loud, seen.anything) == (["a", "b"], 5, "hi!", "<1>")
    assert CALLS == ["hi!"]
    holder = type_spec(list[Aliased])
    # an instance inside data is checked as one (pydantic's own revalidation refuses it)
    assert holder.validate([Aliased(X=1), {"X": 2}]) == [Aliased(X=1), Aliased(X=2)]
    with pytest.raises(ValidationError) as raised:
        holder.validate([Aliased.model_construct(x=-1)])
    assert [item["loc"] for item in raised.value.errors()] == [("value", 0, "x")]  # no branch
    with pytest.raises(ValidationError):  # data keeps pydantic's rules: by alias here
        holder.validate([{"x": 1}])
    nested = type_spec(list[Parsed]).validate([Parsed(tags="a", count="1", hidden="h",
                                                      loud="l", anything=2)])
    assert (nested[0].tags, nested[0].loud) == (["a"], "l!")  # not run again
    with pytest.raises(ValidationError):  # a JSON text in a dict is parsed, as before
        type_spec(Parsed).validate({"tags": "a", "count": "x", "hidden": "h", "loud": "l",
                                    "anything": 1})


@settings(max_examples=300, deadline=None)
@given(x=ints(), how=st.sampled_from(["construct", "nested construct", "subclass default",
                                      "mutated", "list"]))
def test_generated_instances_pass_only_inside_the_constraints(x: int, how: str) -> None:
    """Whatever way an instance was built, the boundary lets it through exactly when
    its values satisfy the declared constraints (0 <= x <= 3)."""
    if how == "construct":
        value: object = Outer.model_construct(inner=Inner.model_construct(x=x))
    elif how == "nested construct":
        value = Outer(inner=Inner.model_construct(x=x))
    elif how == "subclass default":
        loose = type("Loose", (Inner,), {"__annotations__": {"x": int}, "x": x})
        value = Outer(inner=loose())
    elif how == "mutated":
        value = Outer(inner=Inner(x=0))
        value.inner.x = x  # type: ignore[attr-defined]  # Outer's inner
    else:
        value = [Inner(x=0), Inner.model_construct(x=x)]
    spec = type_spec(list[Inner] if how == "list" else Outer)
    try:
        seen = spec.validate(value)
    except ValidationError:
        assert not 0 <= x <= 3
        return
    assert 0 <= x <= 3
    inner = seen[1] if how == "list" else seen.inner
    assert type(inner) is Inner and inner.x == x


class Mixed(BaseModel):
    f: float = Field(ge=0, allow_inf_nan=False)
    s: str = Field(max_length=2)


@settings(max_examples=300, deadline=None)
@given(f=floats(), s=texts())
def test_generated_floats_and_texts_pass_only_inside_the_constraints(f: float,
                                                                     s: str) -> None:
    value = Mixed.model_construct(f=f, s=s)
    try:
        seen = type_spec(Mixed).validate(value)
    except ValidationError:
        assert not (f >= 0 and f != float("inf") and len(s) <= 2)
        return
    assert seen.f >= 0 and seen.f != float("inf") and len(seen.s) <= 2


def test_without_forced_revalidation_the_dump_is_validated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pydantic-core whose prebuilt validators cannot be turned off: the value's dump
    is validated instead, which refuses the same instances."""
    monkeypatch.setattr(models, "revalidation_is_forced", lambda: False)
    for annotation, value in [(Outer, Outer.model_construct(inner=broken_inner())),
                              (Outer, Outer(inner=LooseInner())),
                              (list[Inner], [broken_inner()])]:
        with pytest.raises(ValidationError):
            type_spec(annotation).validate(value)
    assert type_spec(Outer).validate(Outer(inner=Inner(x=2))).inner.x == 2
    assert type_spec(list[Inner]).validate([Inner(x=2)]) == [Inner(x=2)]
