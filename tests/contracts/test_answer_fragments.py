"""Regressions from a real small model (issue 16): a value nested inside a truncated
or malformed answer is never taken as the answer; a native-typed output that fails to
parse gets a violation naming its type (and the cut-off hint), and its schema reads
naturally (no "<class 'int'>", no "ClassIntValue" for the model to copy)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hoare import Contract, LLMDataModel, contract
from hoare.contracts.json_text import extract_json, json_candidates
from hoare.declaration.models import type_spec
from hoare.engines import FunctionEngine, Response, Usage


class Title(LLMDataModel):
    title: str


class Q(LLMDataModel):
    text: str


@contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Name(Contract[Q, Title]):
    prompt = "Give the text a title."

    def forward(self, q: Q) -> Title:
        return self.contract_result if self.contract_successful else Title(title="?")


def _answers(*texts: str, reason: str = "stop") -> FunctionEngine:
    queue = iter(texts)
    return FunctionEngine(lambda request: Response((next(queue),), (reason,), Usage(1, 1, 1),
                                                  "m"))


def test_a_fragment_of_a_truncated_answer_is_not_the_answer() -> None:
    truncated = 'Sure! Here is the JSON: {"title": {"title": "Title"}, "note": "the ti'
    assert '{"title": "Title"}' not in list(json_candidates(truncated))
    name = Name(engine=_answers(truncated, '{"title": "A real title"}'))
    assert name(Q(text="x")) == Title(title="A real title")
    first = name.contract_outcome.attempts[0]
    assert first.violations and "not a valid Title" in first.violations[0].message


def test_a_fragment_of_a_malformed_answer_is_not_the_answer() -> None:
    malformed = 'Answer: {"items": [1, 2,], "meta": {"title": "Title"}} done'
    assert list(json_candidates(malformed)) == [extract_json(malformed)]
    assert extract_json(malformed) == '{"items": [1, 2,], "meta": {"title": "Title"}}'
    name = Name(engine=_answers(malformed, malformed))
    assert name(Q(text="x")) == Title(title="?") and not name.contract_successful


def test_prose_brackets_before_the_answer_are_still_skipped() -> None:
    for text in ('See [notes] and {braces}: {"title": "ok"}',
                 "(a [draft) {\"title\": \"ok\"}",
                 'Two values: {"title": "ok"} and [1, 2]'):
        assert '{"title": "ok"}' in list(json_candidates(text)), text
        assert Name(engine=_answers(text))(Q(text="x")) == Title(title="ok")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12)
nested = st.dictionaries(st.text(max_size=4), json_values, min_size=1, max_size=4).filter(
    lambda d: any(isinstance(v, (dict, list)) and v for v in d.values()))


@settings(max_examples=300, deadline=None)
@given(nested, st.data())
def test_no_candidate_of_a_cut_off_or_broken_answer_parses(value: dict[str, Any],
                                                          data: Any) -> None:
    """Prose, then an object cut anywhere before its end, or with a trailing comma
    inside: every candidate the parser would try is a fragment, so none may parse."""
    text = json.dumps(value)
    cut = data.draw(st.integers(1, len(text) - 1))
    for broken in (text[:cut], text[:-1] + ", }"):
        answer = "Here is the answer: " + broken
        for candidate in json_candidates(answer):
            try:
                json.loads(candidate)
            except ValueError:
                continue
            raise AssertionError(f"{candidate!r} taken from {answer!r}")


@contract(remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0})
class Count(Contract[Q, int]):
    prompt = "Count the words."

    def forward(self, q: Q) -> int:
        return self.contract_result if self.contract_successful else -1


def test_a_native_output_that_does_not_parse_says_what_was_expected() -> None:
    count = Count(engine=_answers("The answer is fort", reason="length"))
    assert count(Q(text="a b")) == -1
    (violation,) = count.contract_outcome.attempts[0].violations
    assert "not a valid int" in violation.message
    assert "cut off (finish_reason=length)" in violation.message
    assert "JSONDecodeError" not in violation.message


def test_the_schema_of_a_native_output_reads_naturally() -> None:
    for annotation, shown in ((int, "int"), (list[str], "list[str]"), (bool, "bool")):
        text = json.dumps(type_spec(annotation).schema)
        assert "<class" not in text and "ClassIntValue" not in text
        assert f"the answer, of type {shown}" in text
    assert type_spec(int).validate_json("42") == 42  # a bare value still parses
    assert type_spec(int).validate_json('{"value": 7}') == 7
