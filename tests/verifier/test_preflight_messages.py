"""A pre-flight refusal names the input's own values in an f-string message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hoare import Contract, ContractDefinitionError, LLMDataModel, contract
from hoare.engines.testing import DummyEngine
from hoare.verifier.runtime.placeholders import fill_placeholders

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import review_pipeline


def test_the_refusal_quotes_the_inputs_values_not_placeholders() -> None:
    engine = DummyEngine("{}")
    contract = review_pipeline.ScoreReview(engine=engine)
    review = review_pipeline.Review(product="p", text="bad", min_score=7, max_score=3)
    contract(input=review)
    assert engine.requests == []  # refused before any engine call
    (violation,) = contract.contract_outcome.violations  # type: ignore[attr-defined]
    assert '"the score must be between 7 and 3"' in violation.message
    assert "{input." not in violation.message


def test_only_the_inputs_placeholders_are_filled() -> None:
    class Nested:
        name = "x"

    class Value:
        limit = 2.5
        nested = Nested()

        def __str__(self) -> str:
            return "VALUE"

    names = frozenset({"inp"})
    text = "{inp.limit:.2f} {inp.nested.name} {out.score} {inp.missing} {inp} {inp.limit:?}"
    assert fill_placeholders(text, names, Value()) == \
        "2.50 x {out.score} {inp.missing} VALUE {inp.limit:?}"
    assert fill_placeholders("{a.b}", frozenset(), object()) == "{a.b}"


class _In(LLMDataModel):
    x: int


class _Plain:
    def __init__(self, v: int) -> None:
        self.v = v


def test_a_plain_class_as_output_type_says_what_works() -> None:
    with pytest.raises(ContractDefinitionError) as caught:
        @contract()
        class C(Contract):
            prompt = "p"

            def forward(self, input: _In) -> _Plain:
                return self.contract_result  # type: ignore[no-any-return]

    text = str(caught.value)
    assert "return type _Plain is a plain class" in text and "LLMDataModel" in text
    assert "arbitrary_types_allowed" not in text  # pydantic's advice would validate nothing
