"""Each check kind: pass, fail and unknown; ``self`` attributes; reproducibility."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.replay import check_witnesses, statuses
from pydantic import BaseModel, Field, ValidationError

from hoare import Contract, Pipeline, Post, Pre, contract, verify
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig
from hoare.verifier.checks.contracts import check_contract
from hoare.verifier.report.model import CheckResult, ContractReport
from hoare.verifier.solve.solver import SolverOptions

OPTIONS = SolverOptions(timeout_ms=10_000, rlimit=5_000_000)


class Query(BaseModel):
    text: str = Field(min_length=1)
    limit: int = Field(ge=0, le=10)


class Score(BaseModel):
    score: int = Field(ge=0, le=10)
    reason: str = ""


def run(cls: type, instance: object | None = None, options: SolverOptions = OPTIONS
        ) -> ContractReport:
    desc = describe(cls, ContractConfig())
    report = check_contract(desc, options, instance)
    check_witnesses(desc, report, instance)
    return report


def one(report: ContractReport, kind: str, predicate: str | None = None) -> CheckResult:
    (check,) = statuses(report, kind, predicate)
    return check


def make(*, pre: tuple[Any, ...] = (), post: tuple[Any, ...] = (), methods: dict[str, Any]
         | None = None, input_type: Any = Query, output_type: Any = Score) -> type:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": input_type, "return": output_type}
    namespace = {"forward": forward, "pre_conditions": list(pre),
                 "post_conditions": list(post), "__module__": __name__, **(methods or {})}
    return type("Plain", (), namespace)


def looks_fine(text: str) -> bool:
    return "!" not in text


# -- pre_satisfiable ----------------------------------------------------------------------


def test_pre_satisfiable_pass_fail_unknown() -> None:
    ok = run(make(pre=(Pre(lambda q: q.limit > 5, "limit above 5"),)))
    assert one(ok, "pre_satisfiable").status == "pass"
    assert one(ok, "pre_satisfiable").witness["limit"] > 5

    bad = one(run(make(pre=(Pre(lambda q: q.limit > 10, "limit above 10"),))),
              "pre_satisfiable")
    assert bad.status == "fail"
    assert bad.constraints == ["le=10 (Query.limit)", '"limit above 10"']

    opaque = one(run(make(pre=(Pre(lambda q: looks_fine(q.text), "fine"),))),
                 "pre_satisfiable")
    assert opaque.status == "unknown" and "looks_fine" in opaque.message


def test_an_unsatisfiable_opaque_free_part_still_fails() -> None:
    """Leaving an opaque predicate out only widens the set: a refutation holds."""
    cls = make(pre=(Pre(lambda q: looks_fine(q.text), "fine"),
                    Pre(lambda q: q.limit < 0, "negative limit")))
    assert one(run(cls), "pre_satisfiable").status == "fail"


# -- post_satisfiable ---------------------------------------------------------------------


def test_post_satisfiable_pass_fail_unknown() -> None:
    def post(self: object, output: Score, input: Query) -> bool:
        if output.score > input.limit:
            raise ValueError("score above the limit")
        return True

    ok = one(run(make(methods={"post": post})), "post_satisfiable")
    assert ok.status == "pass"
    assert ok.witness["output"]["score"] <= ok.witness["input"]["limit"]

    def strict(self: object, output: Score) -> None:
        if output.score <= 10:
            raise ValueError("score must exceed 10")

    bad = one(run(make(methods={"post": strict})), "post_satisfiable")
    assert bad.status == "fail"
    assert bad.constraints == ["le=10 (Score.score)", '"score must exceed 10"']

    unknown = one(run(make(post=(Post(lambda s: looks_fine(s.reason), "fine"),))),
                  "post_satisfiable")
    assert unknown.status == "unknown"


def test_post_depends_on_the_pre_conditions() -> None:
    """A post reading the input is satisfiable only for inputs passing pre."""
    cls = make(pre=(Pre(lambda q: q.limit == 10, "limit 10"),),
               post=(Post(lambda s, q: s.score > q.limit, "score above the limit"),))
    check = one(run(cls), "post_satisfiable")
    assert check.status == "fail"
    assert check.constraints == ["le=10 (Score.score)", '"limit 10"', '"score above the limit"']
    assert one(run(make(post=cls.post_conditions)), "post_satisfiable").status == "pass"


def test_post_with_act_uses_the_act_output_type() -> None:
    class Retrieved(BaseModel):
        cap: int = Field(ge=3, le=5)

    def act(self: object, input: Query) -> Retrieved:
        raise NotImplementedError

    act.__annotations__ = {"input": Query, "return": Retrieved}

    def post(self: object, output: Score, input: Retrieved) -> bool:
        return output.score > input.cap + 7

    check = one(run(make(methods={"act": act, "post": post})), "post_satisfiable")
    assert check.status == "fail"
    assert "ge=3 (Retrieved.cap)" in check.constraints
    ok = one(run(make(methods={"act": act, "post": lambda self, o, i: o.score == i.cap})),
             "post_satisfiable")
    assert ok.status == "pass" and ok.witness["act_output"]["cap"] == \
        ok.witness["output"]["score"]


# -- predicate_vacuous ------------------------------------------------------------------


def test_predicate_vacuous_pass_warn_fail_unknown() -> None:
    cls = make(post=(
        Post(lambda s: s.score >= 2, "at least 2"),
        Post(lambda s: s.score >= 0, "not negative"),
        Post(lambda s: (s.score == 3) and (s.score < 3), "contradiction"),
        Post(lambda s: looks_fine(s.reason), "fine"),
    ))
    report = run(cls)
    passing = one(report, "predicate_vacuous", "post_conditions[0]")
    assert passing.status == "pass"
    assert passing.witness["score"] >= 2 > passing.counterexample["score"]
    warn = one(report, "predicate_vacuous", "post_conditions[1]")
    assert warn.status == "warn" and warn.constraints == ["ge=0 (Score.score)"]
    fail = one(report, "predicate_vacuous", "post_conditions[2]")
    assert fail.status == "fail"
    assert one(report, "predicate_vacuous", "post_conditions[3]").status == "unknown"


def test_guards_of_a_method_are_named_in_the_core() -> None:
    def post(self: object, output: Score) -> bool:
        if not output.reason.strip():
            raise ValueError("give a reason")
        if output.score < 11:
            raise ValueError(f"score {output.score} is too low")
        return True

    check = one(run(make(methods={"post": post})), "post_satisfiable")
    assert check.status == "fail"
    assert check.constraints == ["le=10 (Score.score)", '"score {output.score} is too low"']


def test_division_by_zero_is_a_failure_case() -> None:
    cls = make(pre=(Pre(lambda q: 100 // q.limit > 5, "ratio"),))
    check = one(run(cls), "predicate_vacuous")
    assert check.status == "pass"
    assert check.counterexample["limit"] == 0 or 100 // check.counterexample["limit"] <= 5


# -- self attributes -----------------------------------------------------------------------


class Threshold:
    def __init__(self, minimum: int = 4, name: str = "t") -> None:
        self.minimum = minimum
        self.name = name

    def post(self, output: Score) -> bool:
        return output.score >= self.minimum

    def forward(self, input: Query) -> Score:
        raise NotImplementedError


def test_self_attributes_from_init_defaults_and_from_instances() -> None:
    static = one(run(Threshold), "post_satisfiable")
    assert static.status == "pass" and static.witness["output"]["score"] >= 4
    impossible = one(run(Threshold, Threshold(minimum=11)), "post_satisfiable")
    assert impossible.status == "fail"


class Unknown:
    def __init__(self, minimum: int) -> None:
        self.minimum = minimum

    def post(self, output: Score) -> bool:
        return output.score >= self.minimum

    def forward(self, input: Query) -> Score:
        raise NotImplementedError


def test_unresolved_self_attribute_is_a_reported_assumption() -> None:
    report = run(Unknown, None)
    check = one(report, "post_satisfiable")
    assert check.status == "pass"
    assert any("self.minimum" in a for a in check.assumptions)
    vacuous = one(report, "predicate_vacuous")
    assert vacuous.status == "pass"


# -- composition -------------------------------------------------------------------------------


@contract()
class Rate(Contract):
    prompt = "rate"
    post_conditions = (Post(lambda s: s.score >= 5, "at least 5"),)

    def forward(self, input: Query) -> Score:
        return self.contract_result  # type: ignore[no-any-return]


@contract()
class NeedsHigh(Contract):
    prompt = "use"
    pre_conditions = (Pre(lambda s: s.score >= 3, "score at least 3"),)

    def forward(self, input: Score) -> Query:
        return self.contract_result  # type: ignore[no-any-return]


@contract()
class NeedsTop(Contract):
    prompt = "use"
    pre_conditions = (Pre(lambda s: s.score == 10, "top score"),)

    def forward(self, input: Score) -> Query:
        return self.contract_result  # type: ignore[no-any-return]


@contract()
class NeedsOpaque(Contract):
    prompt = "use"
    pre_conditions = (Pre(lambda s: looks_fine(s.reason), "fine"),)

    def forward(self, input: Score) -> Query:
        return self.contract_result  # type: ignore[no-any-return]


class Text(BaseModel):
    text: str


@contract()
class NeedsText(Contract):
    prompt = "use"

    def forward(self, input: Text) -> Query:
        return self.contract_result  # type: ignore[no-any-return]


def _composition(*stages: Contract) -> CheckResult:
    report = verify(Pipeline(*stages))
    (check,) = report.pipelines[0].checks
    return check


def test_composition_pass_fail_unknown() -> None:
    assert _composition(Rate(), NeedsHigh()).status == "pass"
    fail = _composition(Rate(), NeedsTop())
    assert fail.status == "fail"
    assert 5 <= fail.counterexample["score"] < 10
    assert _composition(Rate(), NeedsOpaque()).status == "unknown"


def test_composition_type_mismatch_has_a_counterexample() -> None:
    check = _composition(Rate(), NeedsText())
    assert check.status == "fail"
    assert "input type rejects" in check.message
    with pytest.raises(ValidationError):
        Text.model_validate(Score.model_validate(check.counterexample).model_dump())


def test_three_stage_pipeline_checks_each_pair() -> None:
    report = verify(Pipeline(Rate(), NeedsHigh(), NeedsText(), NeedsHigh()))
    first, second, third = report.pipelines[0].checks
    assert first.status == "pass"
    assert second.status == "pass"  # a Query is a valid Text: extra fields are ignored
    assert third.status == "fail"  # a Query is not a Score


# -- limits and reproducibility ----------------------------------------------------------------


def test_resource_limit_gives_unknown_and_is_reproducible() -> None:
    class Cubes(BaseModel):
        a: int
        b: int
        c: int

    cls = make(pre=(Pre(lambda x: x.a ** 3 + x.b ** 3 + x.c ** 3 == 33, "cubes"),),
               input_type=Cubes)
    tight = SolverOptions(timeout_ms=60_000, rlimit=300_000)
    first = [c.status for c in run(cls, options=tight).checks]
    second = [c.status for c in run(cls, options=tight).checks]
    assert first == second
    assert first[0] == "unknown"
    assert "resource limit" in run(cls, options=tight).checks[0].message


def test_same_contract_same_report_twice() -> None:
    cls = make(pre=(Pre(lambda q: q.limit > 5 and q.text.startswith("a"), "a query"),),
               post=(Post(lambda s, q: s.score <= q.limit, "bounded"),))
    first = run(cls).checks
    second = run(cls).checks
    assert [(c.status, c.witness, c.counterexample) for c in first] == \
        [(c.status, c.witness, c.counterexample) for c in second]


# -- post_total ---------------------------------------------------------------------------------


def test_post_total_pass_and_warn_with_a_confirmed_input() -> None:
    total = make(pre=(Pre(lambda q: q.limit >= 3, "limit at least 3"),),
                 post=(Post(lambda s, q: s.score <= q.limit - 3, "score 3 below the limit"),))
    assert one(run(total), "post_total").status == "pass"
    weak = make(post=(Post(lambda s, q: s.score <= q.limit - 3, "score 3 below the limit"),))
    check = one(run(weak), "post_total")
    assert check.status == "warn"
    limit = Query.model_validate(check.counterexample).limit
    assert limit < 3  # and indeed no score in 0..10 is <= limit - 3:
    assert not any(s <= limit - 3 for s in range(11))


def test_post_total_is_skipped_when_it_cannot_be_decided() -> None:
    strings = make(post=(Post(lambda s, q: s.reason in q.text, "quote the query"),))
    assert statuses(run(strings), "post_total") == []
    no_input = make(post=(Post(lambda s: s.score > 3, "above 3"),))
    assert statuses(run(no_input), "post_total") == []
