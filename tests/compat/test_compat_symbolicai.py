"""``hoare.compat.symbolicai.LLMDataModel``: SymbolicAI's prompt helpers in their
formats (``str()``, ``format_field``, ``simplify_json_schema``,
``generate_example_json``, ``instruct_llm``), on a model that still works as a
contract's output; ``hoare.LLMDataModel`` itself stays plain pydantic."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import pytest
from pydantic import ValidationError

import hoare
from hoare import Contract, Field, contract
from hoare.compat.symbolicai import LLMDataModel
from hoare.engines import FunctionEngine


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Doc(LLMDataModel):
    title: str = Field(description="the title")
    pages: int


class Answer(LLMDataModel):
    text: str = Field(description="the answer")
    kind: Literal["a", "b"]
    color: Color
    docs: list[Doc] = Field(default_factory=list, description="sources")
    score: float | None = None
    meta: dict[str, int]


class Q(LLMDataModel):
    text: str


@contract()
class Reply(Contract[Q, Doc]):
    prompt = "Cite a document."

    def forward(self, q: Q) -> Doc:
        return self.contract_result


ANSWER = Answer(text="hi", kind="a", color=Color.RED, docs=[Doc(title="T", pages=3)],
                meta={"x": 1}, section_header="Answer")


def test_str_renders_fields_nested_and_under_the_header() -> None:
    assert str(ANSWER) == (
        "[[Answer]]\n"
        "  text: hi\n"
        "  kind: a\n"
        "  color: red\n"
        "  docs:\n"
        "    - : title: T\n"
        "      pages: 3\n"
        "  score: None\n"
        "  meta:\n"
        "    x: 1\n")
    assert str(Doc(title="T", pages=3)) == "  title: T\n  pages: 3\n"  # no header


def test_format_field() -> None:
    assert ANSWER.format_field("n", 5) == "n: 5"
    assert ANSWER.format_field("n", None, 2) == "  n: None"
    assert ANSWER.format_field("xs", []) == "xs:\n"
    assert ANSWER.format_field("xs", ["a", ""]) == "xs:\n  - : a\n  - :"
    assert ANSWER.format_field("d", {"k": [1]}) == "d:\n  k:\n    - : 1"


def test_simplify_json_schema() -> None:
    assert Answer.simplify_json_schema() == (
        "[[Schema]]\n"
        '- "text" (string, required): the answer\n'
        "- \"kind\" (enum ('a', 'b'), required): Kind\n"
        "- \"color\" (enum ('red', 'blue'), required): No description provided.\n"
        '- "docs" (array of nested object (Doc), optional): sources\n'
        "  - Nested fields:\n"
        '  - "title" (string, required): the title\n'
        '  - "pages" (integer, required): Pages\n'
        '- "score" (number or null, optional): Score\n'
        '- "meta" (object of integer, required): Meta\n'
        "\n"
        "[[Definitions]]\n"
        "- Color:\n"
        "  Enum values: 'red', 'blue'\n"
        "- Doc:\n"
        '  - "title" (string, required): the title\n'
        '  - "pages" (integer, required): Pages')


def test_generate_example_json_and_instruct_llm() -> None:
    example = Answer.generate_example_json()
    assert example == {"text": "example_string", "kind": "a", "color": "red",
                       "docs": [{"title": "example_string", "pages": 123}], "score": None,
                       "meta": {"example_string": 123}}
    Answer.model_validate(example)  # the placeholder is a valid instance
    text = Answer.instruct_llm()
    assert text.startswith("\n[[Result]]\nReturn a JSON object with the following schema:\n\n"
                           "[[Schema]]\n")
    block = text.split("[[Example]]\n```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == example


def test_section_header_is_never_serialised_and_the_model_works_in_a_contract() -> None:
    assert "section_header" not in ANSWER.model_dump()
    got = Reply(engine=FunctionEngine(lambda r: '{"title": "A", "pages": 2}'))(Q(text="x"))
    assert got == Doc(title="A", pages=2) and str(got) == "  title: A\n  pages: 2\n"
    assert not hasattr(hoare.LLMDataModel, "instruct_llm")  # the core model stays plain


# -- behaviours SymbolicAI's own LLMDataModel tests rely on (written here anew) -----------
from hoare.compat.symbolicai import Const, build_dynamic_llm_datamodel  # noqa: E402


def _examples(text: str) -> list[object]:
    import re

    return [json.loads(block) for block in
            re.findall(r"\[\[Example(?: \d+)?]]\s+```json\s+(.*?)\s+```", text, re.S)]


class Address(LLMDataModel):
    street: str
    city: str


class Person(LLMDataModel):
    name: str
    age: int | None


def test_union_fields_get_one_example_per_alternative() -> None:
    both = build_dynamic_llm_datamodel(list[Address] | dict[str, int])
    found = _examples(both.instruct_llm())
    assert {type(e["value"]) for e in found} == {list, dict}  # type: ignore[index]
    optional = _examples(build_dynamic_llm_datamodel(str | None).instruct_llm())
    assert [e["value"] for e in optional] == ["example_string"]  # type: ignore[index]
    assert LLMDataModel.generate_example_json(build_dynamic_llm_datamodel(int | str)) == {
        "value": 123}
    with pytest.raises(ValidationError):
        build_dynamic_llm_datamodel(int | str)(value=[1, 2])


def test_const_fields() -> None:
    class Fixed(LLMDataModel):
        kind: str = Const("fixed_value")
        n: int

    assert Fixed(n=1).kind == "fixed_value"
    with pytest.raises(ValidationError):
        Fixed(kind="other", n=1)
    assert "fixed_value" in Fixed.simplify_json_schema()


def test_deep_and_recursive_models_print() -> None:
    class Chain(LLMDataModel):
        value: str
        child: Chain | None = None

    current = None
    for index in range(1000):
        current = Chain(value=f"level_{index}", child=current)
    text = str(current)
    assert text.startswith("  value: level_999") and "…" in text
    assert "children" not in Chain.simplify_json_schema() and "child" in \
        Chain.simplify_json_schema()


def test_int_keys_and_defaults_of_hooks() -> None:
    class IntKeys(LLMDataModel):
        names: dict[int, str]

    assert IntKeys(names={"1": "a"}).names == {1: "a"}  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        IntKeys(names={"x": "a"})  # type: ignore[dict-item]
    address = Address(street="A", city="B")
    assert address.validate() is None and address.remedy() is None
    example = LLMDataModel.generate_example_json(Person)
    assert example == {"name": "example_string", "age": 123}


def _verdicts(base: type[hoare.LLMDataModel], post: Any) -> dict[str, str]:
    """``hoare verify``'s verdicts on one contract whose models derive from ``base``."""

    class Ask(base):  # type: ignore[valid-type,misc]
        text: str = Field(min_length=1)

    class Count(base):  # type: ignore[valid-type,misc]
        n: int = Field(ge=0, le=10)
        label: Literal["few", "many"] = "few"

    @contract
    class Counting(Contract):
        prompt = "Count the words."
        post_conditions = [hoare.Post(post, "the post-condition")]

        def forward(self, input: Ask) -> Count:
            return self.contract_result  # type: ignore[no-any-return]

    report = hoare.verify(Counting)
    return {c.subject: c.status for c in report.contracts[0].checks}  # type: ignore[attr-defined]


@pytest.mark.parametrize("post", [
    lambda c: c.n < 5,  # can pass, can fail
    lambda c: c.n <= 10,  # the type implies it: vacuous
    lambda c: c.n > 10,  # no output passes
    lambda c: c.label == "many" or c.n == 3,
])
def test_the_verifier_sees_through_the_compat_model_as_through_the_plain_one(post: Any) -> None:
    """The compat model's own ``__str__`` (SymbolicAI's text) must not make its values
    opaque to ``hoare verify``: the verdicts equal those on ``hoare.LLMDataModel``."""
    plain = _verdicts(hoare.LLMDataModel, post)
    assert "unknown" not in plain.values()
    assert _verdicts(LLMDataModel, post) == plain


def test_str_of_a_compat_model_stays_unmodelled() -> None:
    """``str(output)`` renders SymbolicAI's text, which the verifier does not model:
    a post-condition reading it is unknown, never a verdict."""
    verdicts = _verdicts(LLMDataModel, lambda c: "n: 3" in str(c))
    assert verdicts["post_satisfiable"] == "unknown"
