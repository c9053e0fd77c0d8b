"""Hostile predicates and hostile exceptions against the kernel (spec §3, §3.2), and the
library's reading of predicate shapes (async, literal raise texts) and of nan/inf."""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hoare import Field, LLMDataModel
from hoare.declaration.conditions import is_asynchronous, raise_literals
from hoare.kernel import (
    ContractConfig,
    Hooks,
    Phase,
    Policy,
    Predicate,
    PreflightResult,
    Verdict,
    ViolationKind,
    evaluate,
    exception_text,
    run_call,
    run_sync,
)


def _hostile_class(str_behaviour: str) -> type[Exception]:
    """An exception class whose ``__str__`` raises, returns a non-string, or is empty."""

    class Weird(Exception):
        def __str__(self) -> str:
            if str_behaviour == "raise":
                raise RuntimeError("str() refused")
            if str_behaviour == "bytes":
                return b"bytes"  # type: ignore[return-value]
            if str_behaviour == "recurse":
                return str(self)
            return ""

        def __repr__(self) -> str:
            raise RuntimeError("repr() refused")

    return Weird


BEHAVIOURS = ["raise", "bytes", "recurse", "empty"]


@settings(max_examples=30, deadline=None)
@given(behaviour=st.sampled_from(BEHAVIOURS), message=st.text(max_size=20),
       policy=st.sampled_from([Policy.OBSERVE, Policy.ENFORCE]))
def test_hostile_predicate_exceptions_are_failures_with_a_message(
        behaviour: str, message: str, policy: Policy) -> None:
    error_class = _hostile_class(behaviour)

    def check(value: object) -> bool:
        raise error_class()

    trials: list[tuple[str, bool]] = []
    violations = evaluate([Predicate("p", check, message, "fam", uses_context=False)], 1,
                          None, Phase.POST, 1, policy, trials)
    assert len(violations) == 1
    assert violations[0].message == message  # no usable text: the predicate's own message
    assert violations[0].error_type == "Weird"
    assert trials == [("fam", False)]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_exception_text_never_raises(behaviour: str) -> None:
    text = exception_text(_hostile_class(behaviour)())
    assert "Weird" in text


def _hooks(**overrides: Any) -> Hooks:
    base: dict[str, Any] = {
        "check_input": lambda raw: raw,
        "check_output": lambda raw, used: raw,
        "forward": lambda used, outcome: outcome,
    }
    base.update(overrides)
    return Hooks(**base)


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_hostile_hook_exceptions_never_crash_a_call(behaviour: str) -> None:
    error_class = _hostile_class(behaviour)

    def boom(*args: object) -> object:
        raise error_class()

    def hostile_preflight(used: object) -> object:
        return error_class()  # not a verdict, and its repr raises

    hooks = _hooks(check_input=boom, on_violation=boom)
    outcome, _ = run_sync(run_call(1, ContractConfig(), hooks), lambda effect: "answer")
    assert not outcome.success
    assert "Weird" in outcome.violations[0].message
    assert outcome.handler_error is not None and outcome.handler_error.startswith("Weird: ")

    hooks = _hooks(act=boom, preflight=hostile_preflight)
    outcome, _ = run_sync(run_call(1, ContractConfig(), hooks), lambda effect: "answer")
    assert outcome.violations[0].kind is ViolationKind.ERROR
    assert "Weird" in outcome.violations[0].message

    hooks = _hooks(preflight=hostile_preflight)
    outcome, _ = run_sync(run_call(1, ContractConfig(), hooks), lambda effect: "answer")
    assert outcome.success
    assert outcome.preflight is not None and outcome.preflight.verdict is Verdict.UNKNOWN
    assert "Weird" in outcome.preflight.reason

    def engine(effect: object) -> object:
        raise error_class()

    single = ContractConfig(post_remedy=False)
    outcome, _ = run_sync(run_call(1, single, _hooks(preflight=boom)), engine)
    assert outcome.preflight == PreflightResult(Verdict.UNKNOWN, outcome.preflight.reason)
    assert "Weird" in outcome.preflight.reason
    assert [v.kind for v in outcome.violations] == [ViolationKind.ERROR]
    assert "Weird" in outcome.summary()


# -- the library's reading of predicate shapes ----------------------------------------------

async def _async_check(value: object) -> bool:
    return True


class _AsyncCallable:
    async def __call__(self, value: object) -> bool:
        return True


def test_asynchronous_predicates_are_recognised() -> None:
    assert is_asynchronous(_async_check)
    assert is_asynchronous(functools.partial(_async_check))
    assert is_asynchronous(_AsyncCallable())
    assert not is_asynchronous(lambda value: True)
    assert not is_asynchronous(len)


def test_raise_literals_are_the_author_texts() -> None:
    def check(value: int) -> bool:
        if value < 0:
            raise ValueError("value must be >= 0")
        if value > 10:
            raise ValueError(f"value {value} too large")
        raise KeyError(value)

    assert raise_literals(check) == frozenset({"value must be >= 0"})
    assert raise_literals(len) == frozenset()


class Measure(LLMDataModel):
    x: float = Field(description="a measurement")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_llm_data_model_rejects_nan_and_inf(text: str) -> None:
    with pytest.raises(ValidationError):
        Measure.model_validate_json(f'{{"x": {text}}}')
    with pytest.raises(ValidationError):
        Measure(x=float(text.lower().replace("infinity", "inf")))
    assert Measure(x=1.5).x == 1.5
    assert not math.isnan(Measure(x=0.0).x)
