"""The run-time pre-flight: verdicts, caching, and zero engine calls when no
output can satisfy the post-conditions."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from hoare import Contract, Post, contract
from hoare.declaration.description import describe
from hoare.engines.testing import DummyEngine
from hoare.kernel import ContractConfig, Verdict, ViolationKind
from hoare.verifier.runtime.preflight import Preflight


class Query(BaseModel):
    text: str = Field(min_length=1)
    limit: int = Field(ge=-5, le=20)
    options: list[str] = Field(default_factory=list, max_length=4)


class Score(BaseModel):
    score: int = Field(ge=0, le=10)
    reason: str = Field(min_length=1)
    label: str = "none"


def plain(*post: Post, methods: dict[str, Any] | None = None, init: Any = None) -> type:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": Query, "return": Score}
    namespace: dict[str, Any] = {"forward": forward, "post_conditions": list(post),
                                 "__module__": __name__, **(methods or {})}
    if init is not None:
        namespace["__init__"] = init
    return type("Plain", (), namespace)


def preflight(cls: type) -> Preflight | None:
    return Preflight.for_description(describe(cls, ContractConfig()))


def test_class_level_verdicts() -> None:
    impossible = preflight(plain(Post(lambda s: s.score > 10, "score above 10")))
    assert impossible is not None
    result = impossible.check(object(), Query(text="q", limit=1))
    assert result.verdict is Verdict.UNSATISFIABLE
    assert 'le=10 (Score.score)' in result.reason and '"score above 10"' in result.reason
    possible = preflight(plain(Post(lambda s: s.score > 3, "score above 3")))
    assert possible is not None
    assert possible.check(object(), Query(text="q", limit=1)).verdict is Verdict.SATISFIABLE


def test_nothing_to_check_gives_no_preflight() -> None:
    assert preflight(plain()) is None
    assert preflight(plain(Post(lambda s: len(s.reason.split()) > 2, "words"))) is None


def test_opaque_post_conditions_give_unknown_never_satisfiable() -> None:
    checker = preflight(plain(Post(lambda s: s.score > 3, "above 3"),
                              Post(lambda s: len(s.reason.split()) > 2, "words")))
    assert checker is not None
    result = checker.check(object(), Query(text="q", limit=1))
    assert result.verdict is Verdict.UNKNOWN and "opaque" in result.reason


def test_input_dependent_verdicts_by_quantifier_elimination() -> None:
    cls = plain(Post(lambda s, q: s.score <= q.limit, "score within the limit"),
                Post(lambda s: s.reason.strip() != "", "a reason"))
    checker = preflight(cls)
    assert checker is not None and checker.reads_input
    assert checker.check(object(), Query(text="q", limit=-1)).verdict is Verdict.UNSATISFIABLE
    assert checker.check(object(), Query(text="q", limit=0)).verdict is Verdict.SATISFIABLE
    (prepared,) = checker._prepared.values()
    assert prepared.phi is not None  # decided in Python, without z3, per call


def test_input_dependent_verdicts_with_strings_use_the_solver() -> None:
    cls = plain(Post(lambda s, q: s.label in q.options, "a label among the options"),
                Post(lambda s, q: not s.label.startswith(q.text), "not the query"))
    checker = preflight(cls)
    assert checker is not None
    no_options = Query(text="q", limit=0, options=[])
    result = checker.check(object(), no_options)
    assert result.verdict is Verdict.UNSATISFIABLE and "options" in result.reason
    only_query = Query(text="q", limit=0, options=["q1", "qq"])
    assert checker.check(object(), only_query).verdict is Verdict.UNSATISFIABLE
    fine = Query(text="q", limit=0, options=["q1", "ok"])
    assert checker.check(object(), fine).verdict is Verdict.SATISFIABLE


POSTS = [
    lambda s, q: s.score <= q.limit,
    lambda s, q: s.score * 2 == q.limit or s.score > 9,
    lambda s, q: q.limit < 0 or s.score % 3 == q.limit % 3,
    lambda s, q: s.score // 4 == q.limit // 4 and s.score != q.limit,
    lambda s, q: abs(q.limit - s.score) >= 12,
]


@pytest.mark.parametrize("index", range(len(POSTS)))
@settings(max_examples=25, deadline=None)
@given(limit=st.integers(-5, 20))
def test_preflight_agrees_with_brute_force(index: int, limit: int) -> None:
    post = POSTS[index]
    checker = preflight(plain(Post(post, "post")))
    assert checker is not None
    query = Query(text="q", limit=limit)
    exists = any(post(Score(score=n, reason="r"), query) for n in range(11))
    verdict = checker.check(object(), query).verdict
    assert verdict is (Verdict.SATISFIABLE if exists else Verdict.UNSATISFIABLE)


def test_self_attributes_key_the_cache() -> None:
    def init(self: Any, minimum: int = 3) -> None:
        self.minimum = minimum

    def post(self: Any, output: Score) -> bool:
        return output.score >= self.minimum

    cls = plain(methods={"post": post}, init=init)
    checker = preflight(cls)
    assert checker is not None and checker.attributes == ("minimum",)
    query = Query(text="q", limit=0)
    assert checker.check(cls(5), query).verdict is Verdict.SATISFIABLE
    assert checker.check(cls(11), query).verdict is Verdict.UNSATISFIABLE
    assert checker.check(cls(5), query).verdict is Verdict.SATISFIABLE
    assert len(checker._prepared) == 2


def test_threads_share_one_preflight() -> None:
    checker = preflight(plain(Post(lambda s, q: s.score <= q.limit, "within")))
    assert checker is not None
    results: list[tuple[int, Verdict]] = []

    def worker(offset: int) -> None:
        for limit in range(-5, 20):
            verdict = checker.check(object(), Query(text="q", limit=limit)).verdict
            results.append((limit, verdict))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 * 25
    for limit, verdict in results:
        assert verdict is (Verdict.SATISFIABLE if limit >= 0 else Verdict.UNSATISFIABLE)


def test_unexpected_input_shape_is_unknown() -> None:
    checker = preflight(plain(Post(lambda s, q: s.score <= q.limit, "within")))
    assert checker is not None
    assert checker.check(object(), {"limit": 3}).verdict is Verdict.UNKNOWN


# -- end to end: the contract runtime calls the pre-flight ---------------------------------


class Request(BaseModel):
    budget: int = Field(ge=0)


class Plan(BaseModel):
    cost: int = Field(ge=10)
    steps: list[str] = Field(min_length=1)


@contract(policy="observe")
class MakePlan(Contract):
    prompt = "Plan within the budget."
    post_conditions = (Post(lambda plan, request: plan.cost <= request.budget,
                            "the plan fits the budget"),)

    def forward(self, input: Request) -> Plan:
        return self.contract_result or Plan(cost=10, steps=["fallback"])


def test_preflight_saves_every_engine_call_on_an_impossible_input() -> None:
    engine = DummyEngine('{"cost": 12, "steps": ["do it"]}')
    planner = MakePlan(engine=engine)
    result = planner(Request(budget=5))  # every plan costs at least 10
    assert engine.requests == []
    outcome = planner.contract_outcome
    assert outcome is not None and not outcome.success
    assert outcome.preflight is not None
    assert outcome.preflight.verdict is Verdict.UNSATISFIABLE
    assert "ge=10 (Plan.cost)" in outcome.preflight.reason
    assert [v.kind for v in outcome.violations] == [ViolationKind.UNSATISFIABLE]
    assert result.steps == ["fallback"]

    planner(Request(budget=50))
    assert engine.calls == 1 and planner.contract_successful


LIMIT = 5


def test_a_changed_module_constant_is_seen() -> None:
    global LIMIT
    checker = preflight(plain(Post(lambda s: s.score > LIMIT, "above the limit")))
    assert checker is not None
    query = Query(text="q", limit=0)
    assert checker.check(object(), query).verdict is Verdict.SATISFIABLE
    LIMIT = 10
    try:
        assert checker.check(object(), query).verdict is Verdict.UNSATISFIABLE
    finally:
        LIMIT = 5
    assert checker.check(object(), query).verdict is Verdict.SATISFIABLE


def test_output_validators_never_block_a_call() -> None:
    from pydantic import field_validator

    class Clamped(BaseModel):
        score: int = Field(ge=0, le=10)

        @field_validator("score")
        @classmethod
        def clamp(cls, value: int) -> int:
            return min(value, 10)  # may change the value: the field is opaque

    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": Query, "return": Clamped}
    cls = type("Plain", (), {"forward": forward, "__module__": __name__,
                             "post_conditions": [Post(lambda s: s.score > 10, "above 10")]})
    # the field is opaque (the validator may change it): nothing to check, no refusal
    assert preflight(cls) is None


def test_characters_beyond_z3_strings_give_unknown() -> None:
    checker = preflight(plain(Post(lambda s, q: s.reason == q.text, "echo")))
    assert checker is not None
    flag = "\U0001F3F4\U000E0067\U000E0062\U000E007F"  # a flag: tag characters
    assert checker.check(object(), Query(text=flag, limit=0)).verdict is Verdict.UNKNOWN
    assert checker.check(object(), Query(text="ok", limit=0)).verdict is Verdict.SATISFIABLE
