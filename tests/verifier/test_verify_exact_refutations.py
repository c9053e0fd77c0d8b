"""A ``fail`` or ``warn`` of ``hoare verify`` proved on exact parts only skips the
falsifier's concrete search (``checks/exactness.py``); one resting on a loose part keeps
it, and the skip never changes a verdict (generated contracts, checked with the search
forced on every negative verdict)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from hoare import Post, Pre
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig
from hoare.verifier.checks import contracts as checks
from hoare.verifier.checks.contracts import check_contract
from hoare.verifier.checks.exactness import exact_refutation
from hoare.verifier.report.model import ContractReport
from hoare.verifier.solve.solver import Assertion, SolverOptions

OPTIONS = SolverOptions(timeout_ms=10_000, rlimit=5_000_000)


class Query(BaseModel):
    n: int = Field(ge=3, le=7)
    x: float = Field(ge=0.0, le=1.0)
    items: list[int] = Field(default_factory=list, max_length=3)


class Answer(BaseModel):
    score: float = Field(ge=0.25, le=0.75)
    word: str = Field(min_length=1, max_length=5)


def make(pre: tuple[Any, ...] = (), post: tuple[Any, ...] = (), input_type: Any = Query,
         output_type: Any = Answer) -> type:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": input_type, "return": output_type}
    return type("Plain", (), {"forward": forward, "pre_conditions": list(pre),
                              "post_conditions": list(post), "__module__": __name__})


def run(cls: type) -> ContractReport:
    return check_contract(describe(cls, ContractConfig()), OPTIONS)


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of the checks whose verdict went through the falsifier's search."""
    calls: list[str] = []
    real = checks.falsify

    def spy(cm: Any, result: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(result.kind)
        return real(cm, result, *args, **kwargs)

    monkeypatch.setattr(checks, "falsify", spy)
    return calls


def statuses(report: ContractReport) -> list[tuple[str, str]]:
    return [(c.kind, c.status) for c in report.checks]


def test_exact_negative_verdicts_skip_the_concrete_search(searches: list[str]) -> None:
    """Failed before: each of these verdicts ran the search (tens of milliseconds)."""
    report = run(make(pre=(Pre(lambda q: q.n > 7, "n above 7"),),
                      post=(Post(lambda o: o.score > 0.75, "score above 0.75"),
                            Post(lambda o: o.score <= 0.75 or o.word == "x", "weak"))))
    assert statuses(report) == [("pre_satisfiable", "fail"), ("post_satisfiable", "fail"),
                                ("predicate_vacuous", "fail"), ("predicate_vacuous", "fail"),
                                ("predicate_vacuous", "warn")]
    assert searches == []


@pytest.mark.parametrize("pre", [
    Pre(lambda q: q.x + 0.1 > 5.0, "float rounding"),  # havoc: rounding is not modelled
    Pre(lambda q: len(q.items) > 3, "a list's length"),  # an over-approximating entry
])
def test_a_verdict_resting_on_a_loose_part_keeps_the_search(searches: list[str],
                                                            pre: Any) -> None:
    report = run(make(pre=(pre,)))
    assert statuses(report)[:2] == [("pre_satisfiable", "fail"), ("post_satisfiable", "fail")]
    assert "pre_satisfiable" in searches and "predicate_vacuous" in searches


def test_a_core_label_is_exact_only_when_every_owner_is() -> None:
    import z3

    x = z3.Int("x")
    shared = Assertion("shared", x > 1, "pred")
    alone = Assertion("alone", x < 0, "pred")
    assert exact_refutation(["shared", "alone"], [([shared, alone], True)])
    assert not exact_refutation(["shared"], [([shared], True), ([shared], False)])
    assert not exact_refutation(["unowned"], [([shared], True)])
    # an unlabelled assertion is always part of the proof
    assert not exact_refutation(["shared"], [([shared], True),
                                             ([Assertion(None, x > 5, "def")], False)])
    # a verifier bound is never part of a reported proof
    assert exact_refutation(["shared"], [([shared], True),
                                         ([Assertion("bound", x < 9, "bound")], False)])


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _condition(kind: Any, field: str, op: str, constant: int, message: str) -> Any:
    compare = _OPS[op]
    return kind(lambda value: compare(getattr(value, field), constant), message)


@st.composite
def contracts(draw: st.DrawFn) -> type:
    """Contracts like ``bench/generate_contracts.py``'s: bounded ints and strings, and
    conditions comparing a field with a constant that may contradict a bound."""
    low, high = draw(st.integers(-3, 10)), draw(st.integers(-3, 25))
    short, long = draw(st.integers(0, 4)), draw(st.integers(0, 8))
    input_type = create_model("In", count=(int, Field(ge=low, le=high)),
                              name=(str, Field(min_length=short, max_length=long)))
    output_type = create_model("Out", score=(int, Field(ge=draw(st.integers(0, 5)),
                                                        le=draw(st.integers(0, 12)))))
    pre = [_condition(Pre, "count", draw(st.sampled_from(sorted(_OPS))),
                      draw(st.integers(-5, 30)), f"pre {k}")
           for k in range(draw(st.integers(0, 2)))]
    post = [_condition(Post, "score", draw(st.sampled_from(sorted(_OPS))),
                       draw(st.integers(-2, 15)), f"post {k}")
            for k in range(draw(st.integers(0, 2)))]
    return make(tuple(pre), tuple(post), input_type, output_type)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(contracts())
def test_skipping_the_search_never_changes_a_verdict(cls: type) -> None:
    """Every check's status and message with the skip equal those with the search run
    on every negative verdict (a refuted verdict would be ``unknown`` there)."""
    skipped = run(cls)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks, "exact_refutation", lambda *args: False)
        searched = run(cls)
    assert [(c.kind, c.status, c.message) for c in skipped.checks] == \
        [(c.kind, c.status, c.message) for c in searched.checks]
