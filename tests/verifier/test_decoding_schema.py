"""The contract compiled into a structured-output schema (``hoare.verifier.runtime.decoding``):
every supported post-condition form folded, what is dropped and why, OpenAI's strict
subset, llama.cpp's dialect, the residual proof (enforced / residual / unknown), and
a differential test with ``jsonschema`` and the real predicates as the oracles: the
schema never rejects an output the contract accepts, and an output the schema
accepts passes every predicate proved enforced."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.contracts.runtime import runtime_of
from hoare.engines.openai_request import is_strict_compatible
from hoare.verifier.runtime.decoding import compile_contract


class Q(LLMDataModel):
    text: str


class Review(LLMDataModel):
    sentiment: str
    stars: int = Field(ge=1, le=10)
    title: str
    tags: list[str]
    score: float
    code: str = "A-1"


def opaque_check(review: Review) -> bool:  # a helper z3 does not model
    return hash(review.title) != 0


@contract()
class Rate(Contract[Q, Review]):
    prompt = "Rate."
    post_conditions = [
        Post(lambda r: r.stars <= 5, "at most 5"),
        Post(lambda r: r.sentiment in ("positive", "negative", "neutral"), "sentiment"),
        Post(lambda r: 3 <= len(r.title) <= 40 and r.title.startswith("Re: "), "title"),
        Post(lambda r: len(r.tags) >= 1 and len(r.tags) < 4, "tags"),
        Post(lambda r: (r.sentiment == "positive") == (r.stars >= 4), "consistent"),
        Post(lambda r: 0.0 <= r.score < 1.0, "score"),
        Post(lambda r: r.code.endswith(".x") and opaque_check(r), "opaque"),
        Post(lambda r: r.code == "A-1.x" or r.stars == 1, "either"),
    ]

    def forward(self, q: Q) -> Review:
        return self.contract_result


DESC = runtime_of(Rate).description


def props(schema: dict[str, Any]) -> dict[str, Any]:
    """The fields' schemas; for an ``anyOf`` of object branches (the finite-domain
    fold), each keyword must agree across branches except ``enum``, whose values are
    joined."""
    if "anyOf" not in schema:
        return schema["properties"]
    merged: dict[str, Any] = {}
    for branch in schema["anyOf"]:
        for name, node in branch["properties"].items():
            into = merged.setdefault(name, {})
            for key, value in node.items():
                if key == "enum":
                    into["enum"] = into.get("enum", []) + [v for v in value
                                                           if v not in into.get("enum", [])]
                else:
                    assert into.setdefault(key, value) == value, (name, key)
    return merged


def test_every_supported_form_is_folded_into_the_schema() -> None:
    compiled = compile_contract(DESC, "json_schema")
    p = props(compiled.schema)
    assert (p["stars"]["minimum"], p["stars"]["maximum"]) == (1, 5)  # type's, then post's
    assert sorted(p["sentiment"]["enum"]) == ["negative", "neutral", "positive"]
    assert (p["title"]["minLength"], p["title"]["maxLength"]) == (3, 40)
    assert p["title"]["pattern"] == r"^Re: [\s\S]*$"
    assert (p["tags"]["minItems"], p["tags"]["maxItems"]) == (1, 3)
    assert (p["score"]["minimum"], p["score"]["exclusiveMaximum"]) == (0.0, 1.0)
    assert "pattern" not in p["code"]  # from the opaque post: not proved, dropped
    assert any(d.startswith("code: endswith '.x' (from post_conditions[6])")
               and "not proved" in d for d in compiled.dropped)


def test_the_residual_proof() -> None:
    compiled = compile_contract(DESC, "json_schema")
    # [4], sentiment <-> stars over finite domains: folded as an anyOf (issue 34)
    assert set(compiled.enforced) == {f"post_conditions[{i}]" for i in (0, 1, 2, 3, 4)}
    assert "proved by enumeration" in compiled.enforced["post_conditions[4]"]
    # [5], 0.0 <= score < 1.0: exclusiveMaximum 1.0 admits the text 0.99999999999999999,
    # which pydantic reads as 1.0 (the nearest double): a decoder checks the text
    assert set(compiled.residual) == {"post_conditions[5]", "post_conditions[7]"}
    assert set(compiled.unknown) == {"post_conditions[6]"}  # opaque: stays unproved
    assert "opaque_check" in compiled.unknown["post_conditions[6]"]


def test_a_spent_time_budget_folds_nothing_more_and_proves_nothing_more() -> None:
    """A contract's first call compiles its schema: the compile has a time budget, and
    what it did not prove in time is not folded (always sound) and stays unproved."""
    spent = compile_contract(DESC, "json_schema", seconds=0)
    assert spent.schema == DESC.output.schema  # the type's schema, nothing folded
    assert spent.folded == [] and spent.enforced == {}
    assert len(spent.dropped) >= 6
    assert all("time budget (0 s) was spent" in d for d in spent.dropped)
    assert all("time budget" in why or "opaque_check" in why
               for why in spent.unknown.values())
    assert set(spent.unknown) | set(spent.residual) == {f"post_conditions[{i}]"
                                                         for i in range(8)}


def test_openai_strict_subset() -> None:
    compiled = compile_contract(DESC, "openai_strict")
    p = props(compiled.schema)
    assert "minLength" not in p["title"] and "maxLength" not in p["title"]
    assert any("title: minLength 3" in d and "strict subset" in d for d in compiled.dropped)
    assert compiled.schema["additionalProperties"] is False
    assert set(compiled.schema["required"]) == set(p)  # the defaulted `code` too
    assert is_strict_compatible(compiled.schema)
    # the length bounds are no longer enforced by the decoder: the title stays residual
    assert "post_conditions[2]" in compiled.residual
    assert "post_conditions[0]" in compiled.enforced


def test_llama_cpp_dialect() -> None:
    compiled = compile_contract(DESC, "llama_cpp")
    p = props(compiled.schema)
    assert p["stars"]["maximum"] == 5  # sent (harmless); its grammar ignores it, but the
    assert p["stars"]["enum"] == [1, 2, 3, 4, 5]  # range also goes out as an enum:
    assert "post_conditions[0]" in compiled.enforced and "post_conditions[5]" in \
        compiled.residual  # a float range cannot be listed
    assert "pattern" not in p["title"]  # never sent to llama.cpp
    assert "post_conditions[2]" in compiled.residual
    assert {"post_conditions[1]", "post_conditions[3]"} <= set(compiled.enforced)
    assert any("title: startswith" in d and "llama_cpp" in d for d in compiled.dropped)


class Small(LLMDataModel):
    n: int
    word: str
    items: list[int]


@contract()
class Odd(Contract[Q, Small]):
    prompt = "Odd."
    post_conditions = [
        Post(lambda s: len(s.n) > 2 if False else True, "never folded"),  # type: ignore[arg-type]
        Post(lambda s: s.missing > 1, "no such field"),  # type: ignore[attr-defined]
        Post(lambda s: s.n == 3 and s.word == "hi" and len(s.items) == 2, "exact"),
        Post(lambda s: -2 < s.n, "lower"),
    ]

    def forward(self, q: Q) -> Small:
        return self.contract_result


def test_equalities_lengths_and_what_is_dropped() -> None:
    compiled = compile_contract(runtime_of(Odd).description, "json_schema")
    p = props(compiled.schema)
    assert p["n"]["enum"] == [3] and p["word"]["enum"] == ["hi"]
    assert (p["items"]["minItems"], p["items"]["maxItems"]) == (2, 2)
    assert p["n"]["exclusiveMinimum"] == -2
    assert any(d.startswith("missing:") and "not a field" in d for d in compiled.dropped)


def outputs() -> st.SearchStrategy[dict[str, Any]]:
    words = st.sampled_from(["positive", "negative", "neutral", "meh", ""])
    titles = st.one_of(st.sampled_from(["Re: ok", "Re: ", "Re: a\nb", "Hi", "Re"]),
                       st.text(max_size=45).map(lambda t: "Re: " + t), st.text(max_size=5))
    return st.fixed_dictionaries({
        "sentiment": words, "stars": st.integers(1, 10), "title": titles,
        "tags": st.lists(st.sampled_from(["a", "b"]), max_size=5),
        "score": st.one_of(st.sampled_from([0.0, 0.5, 1.0, -0.0, 0.9999999999999999]),
                           st.floats(-2, 2, allow_nan=False)),
        "code": st.sampled_from(["A-1", "A-1.x", "b.x"])})


@settings(max_examples=400, deadline=None)
@given(outputs())
def test_the_schema_agrees_with_pydantic_and_the_predicates(data: dict[str, Any]) -> None:
    """jsonschema (the schema's meaning) against pydantic and the real predicates."""
    review = Review.model_validate(data)
    sources = {s.id: s for s in DESC.post}
    passes = {name: bool(source.fn(review)) for name, source in sources.items()}
    for dialect in ("json_schema", "openai_strict", "llama_cpp"):
        compiled = COMPILED[dialect]
        try:
            jsonschema.validate(json.loads(review.model_dump_json()), compiled.schema)
            accepted = True
        except jsonschema.ValidationError:
            accepted = False
        if all(passes.values()):  # folding never excludes an output the contract takes
            assert accepted, (dialect, data)
        if accepted:  # what the schema accepts passes every enforced predicate
            assert all(passes[name] for name in compiled.enforced), (dialect, data)


COMPILED = {d: compile_contract(DESC, d) for d in ("json_schema", "openai_strict", "llama_cpp")}


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="dialect must be one of"):
        compile_contract(DESC, "grammar")


def test_a_predicate_returning_an_awaitable_fails_when_replayed() -> None:
    """The verifier replays predicates as the runtime runs them: an awaitable verdict
    (a lambda calling an async function) fails, and is closed, never left unawaited."""
    import warnings

    from hoare.verifier.search.witness import call_predicate

    async def check(value: object) -> bool:
        return True

    source = DESC.post[0].__class__(
        id="p", family="p", message="m", fn=lambda r: check(r), phase="post",
        is_method=False, takes_input=False, policy=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = call_predicate(source, None, object())
    assert not run.passed and "awaitable" in run.detail
