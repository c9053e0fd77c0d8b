"""A pre-flight refusal names the input's own values in an f-string message."""

from __future__ import annotations

import sys
from pathlib import Path

from hoare.engines import FunctionEngine
from hoare.verifier.preflight import fill_placeholders

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import review_pipeline


def test_the_refusal_quotes_the_inputs_values_not_placeholders() -> None:
    calls: list[object] = []
    contract = review_pipeline.ScoreReview(
        engine=FunctionEngine(lambda request: calls.append(request) or "{}"))
    review = review_pipeline.Review(product="p", text="bad", min_score=7, max_score=3)
    contract(input=review)
    assert calls == []  # refused before any engine call
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
