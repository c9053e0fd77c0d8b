"""The per-class call plan (``Runtime``): what a contract class decides once, and that
none of it weakens a call. The secret walk of a request is skipped only for an input
of exactly a flat model (every field typed atomic) whose values are all atomic at run
time: any nesting that can hold a model, ``Any`` or ``object`` (a subclass instance
adding a ``SecretStr``), and any instance pydantic let through unvalidated, is walked
and its secrets redacted."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    SecretBytes,
    SecretStr,
    create_model,
    field_validator,
)

from hoare import Contract, Field, LLMDataModel, contract
from hoare.contracts.runtime import _flat_model, call_secrets
from hoare.declaration.models import TypeSpec, secret_values
from hoare.engines import FunctionEngine, Request
from hoare.engines.testing import ScriptedEngine
from hoare.kernel import Phase

FAST = {"delay": 0, "jitter": 0, "tries": 2}
SECRET = "hunter2-very-secret"
# the contract layer's modules that walk values for secrets (the call plan skips the walk)
WALKERS = [sys.modules[f"hoare.contracts.{name}"]
           for name in ("runtime", "binding", "call", "lifecycle", "logs")]
# an unvalidated secret in a str field makes pydantic warn when it dumps the prompt
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")


class Out(LLMDataModel):
    value: int = Field(description="the value")


class Flat(LLMDataModel):
    text: str
    tier: Literal["free", "pro"] = "free"
    n: int = Field(default=1, ge=0)
    ratio: float | None = None
    raw: bytes = b""
    flag: Optional[bool] = None  # noqa: UP045 - the typing spelling on purpose


class Inner(BaseModel):
    name: str = "x"


class SecretInner(Inner):
    """A subclass instance a field typed ``Inner`` accepts as is, holding a secret."""

    password: SecretStr


def _spec(model: type[BaseModel]) -> TypeSpec:
    return TypeSpec(model, model, False)


def _echoing_contract(model: type[BaseModel]) -> type[Contract]:
    """A contract whose engine first answers invalid text quoting the secret (so the
    remedy prompt quotes it back), then a valid answer; every request is kept."""

    @contract(remedy_retry_params=FAST, preflight=False)
    class Echo(Contract):
        prompt = "p"

        def forward(self, value: model) -> Out:  # type: ignore[valid-type]
            return Out(value=0)

    return Echo


def _requests_for(model: type[BaseModel], value: object, refused: bool = False
                  ) -> list[Request]:
    """The requests of a call on ``value``; ``refused``: the input check refuses it (an
    instance breaking its type, validated again at the boundary), nothing is sent and
    the refusal quotes no secret."""
    engine = ScriptedEngine(f"the password is {SECRET}", '{"value": 1}')
    instance = _echoing_contract(model)(engine=engine)
    instance(value)
    if refused:
        outcome = instance.contract_outcome
        assert engine.calls == 0 and outcome is not None
        assert [v.phase for v in outcome.violations] == [Phase.INPUT]
        assert not any(SECRET in v.message for v in outcome.violations)
        return engine.requests
    assert engine.calls == 2, "the first answer was rejected and the remedy sent"
    return engine.requests


def _leaks(requests: list[Request]) -> bool:
    return any(SECRET in message.content for request in requests
               for message in request.messages) \
        or any(SECRET in text for request in requests for text in request.feedback)


# -- nesting shapes: a field that can hold a subclass instance (or anything) ------------

_LEAVES = st.sampled_from(["model", "any", "object"])
_WRAPPERS = st.lists(st.sampled_from(["list", "dict", "tuple", "optional", "model",
                                      "annotated"]), max_size=3)


def _leaf(kind: str) -> tuple[object, object]:
    value = SecretInner(password=SecretStr(SECRET))
    annotation = {"model": Inner, "any": Any, "object": object}[kind]
    return annotation, value


def _wrap(annotation: object, value: object, wrapper: str, depth: int) -> tuple[object, object]:
    if wrapper == "list":
        return list[annotation], [value]  # type: ignore[valid-type]
    if wrapper == "dict":
        return dict[str, annotation], {"k": value}  # type: ignore[valid-type]
    if wrapper == "tuple":
        return tuple[annotation, ...], (value,)  # type: ignore[valid-type]
    if wrapper == "optional":
        return Optional[annotation], value  # noqa: UP045
    if wrapper == "annotated":
        return Annotated[annotation, "note"], value
    holder = create_model(f"Holder{depth}", inner=(annotation, ...))
    return holder, holder.model_construct(inner=value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaf=_LEAVES, wrappers=_WRAPPERS, flat_fields=st.integers(0, 2))
def test_a_secret_nested_in_any_shape_is_redacted(leaf: str, wrappers: list[str],
                                                  flat_fields: int) -> None:
    annotation, value = _leaf(leaf)
    for depth, wrapper in enumerate(wrappers):
        annotation, value = _wrap(annotation, value, wrapper, depth)
    extra = {f"plain{i}": (str, "p") for i in range(flat_fields)}
    model = create_model("Shaped", field=(annotation, ...), **extra)  # type: ignore[call-overload]
    assert _flat_model(_spec(model)) is None, "a field that can hold a secret is walked"
    built = model.model_validate({"field": value})
    assert secret_values(built) == {SECRET}
    assert call_secrets(built, _flat_model(_spec(model))) == {SECRET}
    assert not _leaks(_requests_for(model, built))


class ConstructedOnly(LLMDataModel):
    text: str


class WithValidator(LLMDataModel):
    text: str

    @field_validator("text")
    @classmethod
    def hide(cls, value: str) -> Any:
        return SecretStr(value)


class WithAnnotatedValidator(LLMDataModel):
    text: Annotated[str, AfterValidator(lambda value: SecretStr(value))]


class WithSecretDefault(LLMDataModel):
    text: str = SecretStr(SECRET)  # type: ignore[assignment]  # defaults are not validated


class FlatSub(Flat):
    password: SecretStr = SecretStr(SECRET)


def _top_level_cases() -> list[tuple[type[BaseModel], object, bool]]:
    """(model, value, refused by the input check)"""
    mutated = Flat(text="t")
    mutated.text = SecretStr(SECRET)  # type: ignore[assignment]  # no validate_assignment
    return [
        (Flat, Flat.model_construct(text=SecretStr(SECRET)), True),
        (Flat, mutated, True),
        # a subclass instance: validated into a Flat, its secret field dropped, and
        # still redacted (the caller's own input is walked too)
        (Flat, FlatSub(text="t"), False),
        (WithValidator, {"text": SECRET}, False),
        (WithAnnotatedValidator, {"text": SECRET}, False),
        (WithSecretDefault, {}, False),
    ]


@pytest.mark.parametrize("index", range(len(_top_level_cases())))
def test_a_secret_at_the_top_level_is_redacted(index: int) -> None:
    model, value, refused = _top_level_cases()[index]
    assert not _leaks(_requests_for(model, value, refused))


def test_the_plan_names_only_flat_models() -> None:
    assert _flat_model(_spec(Flat)) is Flat
    for model in (WithValidator, WithAnnotatedValidator, WithSecretDefault, FlatSub):
        assert _flat_model(_spec(model)) is None, model.__name__
    for annotation in (Inner, Any, object, list[str], dict[str, int], SecretStr, SecretBytes,
                       str | Inner, Literal["a", 1] | list[int]):
        model = create_model("One", field=(annotation, ...))
        assert _flat_model(_spec(model)) is None, annotation
    with_factory = create_model("Factory", field=(str, Field(default_factory=lambda: "x")))
    assert _flat_model(_spec(with_factory)) is None
    assert _flat_model(TypeSpec(int, Flat, True)) is None  # a wrapped native type


_ATOMS = st.one_of(st.text(), st.integers(), st.floats(allow_nan=True), st.booleans(),
                   st.none(), st.binary())
_VALUES = st.recursive(
    st.one_of(_ATOMS, st.builds(SecretStr, st.text()), st.builds(SecretBytes, st.binary()),
              st.builds(lambda t: Inner(name=t), st.text())),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(text=_VALUES, ratio=_VALUES, raw=_VALUES, subclass=st.booleans())
def test_the_fast_path_finds_what_the_walk_finds(text: object, ratio: object, raw: object,
                                                 subclass: bool) -> None:
    """Whatever a flat model instance holds (validated or not), the plan's answer is
    the walk's."""
    fields = {"text": text, "ratio": ratio, "raw": raw}
    value = (FlatSub if subclass else Flat).model_construct(**fields)
    assert call_secrets(value, Flat) == secret_values(value)


def test_a_flat_valid_input_skips_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    real = secret_values

    def counting(*values: object) -> frozenset[str]:
        walked.extend(values)
        return real(*values)

    for module in WALKERS:
        assert module.secret_values is real
        monkeypatch.setattr(module, "secret_values", counting)
    happy = _echoing_contract(Flat)(engine=FunctionEngine(lambda request: '{"value": 1}'))
    for value in (Flat(text="plain"), Flat(text="t", ratio=0.5, raw=b"r", flag=True)):
        happy(value)
        assert happy.contract_successful
    assert not any(isinstance(v, Flat) for v in walked), "the happy path walked its input"
    # the same contract with a secret in the value walks it and redacts
    walked.clear()
    assert not _leaks(_requests_for(Flat, FlatSub(text="t")))
    assert any(isinstance(v, Flat) for v in walked)
