"""Negative verdicts are falsified before they are reported, and predicate statements
(bare ``return``, falling off the end, ``raise`` in branches, locals) mean what
Python means.

A translator bug is simulated by corrupting translations (a failure case that
always holds, or none at all): the falsifier must then find a concrete value,
turn the verdict into ``unknown`` and log the bug; true negative verdicts stay.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest
import z3
from fixtures.replay import passes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from verifier_support import predicate_source

from hoare import Contract, Pipeline, Post, Pre, contract
from hoare.declaration.description import PredicateSource, describe
from hoare.declaration.models import type_spec
from hoare.engines.testing import DummyEngine
from hoare.kernel import ContractConfig, Verdict
from hoare.verifier.checks import contracts as checks
from hoare.verifier.checks import model as checks_model
from hoare.verifier.checks import pipelines as composition
from hoare.verifier.checks.contracts import check_contract
from hoare.verifier.checks.pipelines import check_pipeline
from hoare.verifier.report.model import CheckResult, ContractReport
from hoare.verifier.runtime import preflight
from hoare.verifier.search import candidates, patterns
from hoare.verifier.search.concrete import bind
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.solve import qe
from hoare.verifier.solve.solver import SolverOptions
from hoare.verifier.translate import predicates as predicates_module
from hoare.verifier.translate.predicates import FailureCase, Translation, translate
from hoare.verifier.translate.types import TypeBuilder

OPTIONS = SolverOptions(timeout_ms=10_000, rlimit=5_000_000)


class Query(BaseModel):
    text: str = Field(min_length=1, max_length=6)
    n: int = Field(ge=3, le=7)


class Answer(BaseModel):
    word: Literal["yes", "no"]
    score: float = Field(ge=0.25, le=0.75)
    tag: str = Field(pattern=r"^[A-Z]{2}-\d{3}$")


def make(*, pre: tuple[Any, ...] = (), post: tuple[Any, ...] = (),
         methods: dict[str, Any] | None = None, input_type: Any = Query,
         output_type: Any = Answer) -> type:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": input_type, "return": output_type}
    namespace = {"forward": forward, "pre_conditions": list(pre), "post_conditions": list(post),
                 "__module__": __name__, **(methods or {})}
    return type("Plain", (), namespace)


def run(cls: type) -> ContractReport:
    return check_contract(describe(cls, ContractConfig()), OPTIONS)


def find(report: ContractReport, kind: str, predicate: str | None = None) -> CheckResult:
    (check,) = [c for c in report.checks if c.kind == kind and
                (predicate is None or c.predicate == predicate)]
    return check


# -- simulated translator bugs -------------------------------------------------------------


def _never_passes(t: Translation) -> Translation:
    if t.opaque is None:
        t.cases.append(FailureCase(z3.BoolVal(True), "a translator bug", "check"))
    return t


def _never_fails(t: Translation) -> Translation:
    if t.opaque is None:
        t.cases.clear()
    return t


def _loose(how: Callable[[Translation], Translation]) -> Callable[[Translation], Translation]:
    """``how``, on a translation that also rests on a registry entry that is not exact:
    a ``fail``/``warn`` proved on exact parts only skips the concrete search
    (``checks/exactness.py``, as the pre-flight's exact refusals do), so the safety net
    is shown where it stays (``test_verify_exact_refutations`` shows the skip)."""

    def planted(t: Translation) -> Translation:
        t = how(t)
        t.constructs = t.constructs | {"a planted loose entry"}
        return t

    return planted


@pytest.fixture
def corrupt(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``corrupt(how, module=checks_model)``: every translation made by ``module`` is
    corrupted."""

    def install(how: Callable[[Translation], Translation], module: Any = checks_model) -> None:
        def broken(*args: Any, **kwargs: Any) -> Translation:
            return how(translate(*args, **kwargs))

        monkeypatch.setattr(module, "translate", broken)

    yield install


@pytest.fixture
def no_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampling shortcut settles most checks before z3 is asked (and finds the
    values below): without it, the corrupted translation decides and the falsifier
    alone must catch it."""
    monkeypatch.setattr(checks, "sampled_passing", lambda *args: None)
    monkeypatch.setattr(checks, "sampled_failing", lambda *args: None)
    monkeypatch.setattr(checks, "sampled_example", lambda *args: None)


def _refuted(check: CheckResult, caplog: pytest.LogCaptureFixture) -> None:
    assert check.status == "unknown", check
    assert any("refuted" in note for note in check.notes), check.notes
    assert any(r.name == "hoare.verifier" and r.levelno == logging.WARNING and
               "translator bug" in r.getMessage() for r in caplog.records)


PRE = Pre(lambda q: q.text.startswith("zz") and q.n == 6, "zz and six")
POST = Post(lambda o, q: o.score == 0.5 and o.word == "no" and o.tag.endswith("7")
            and len(q.text) >= 2, "all of it")


def test_a_refuted_pre_and_post_fail_become_unknown(corrupt: Any, no_sampling: None,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    corrupt(_loose(_never_passes))
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        report = run(make(pre=(PRE,), post=(POST,)))
    pre = find(report, "pre_satisfiable")
    _refuted(pre, caplog)
    value = Query.model_validate(pre.counterexample)
    assert PRE.fn(value)
    post = find(report, "post_satisfiable")
    _refuted(post, caplog)
    used = Query.model_validate(post.witness)
    output = Answer.model_validate_json(Answer.model_validate(post.counterexample)
                                        .model_dump_json())
    assert PRE.fn(used) and POST.fn(output, used)
    for check in report.checks:
        if check.kind == "predicate_vacuous":
            _refuted(check, caplog)


def test_a_refuted_warn_becomes_unknown(corrupt: Any, no_sampling: None,
                                        caplog: pytest.LogCaptureFixture) -> None:
    corrupt(_loose(_never_fails))
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        report = run(make(post=(Post(lambda o: o.tag != "QQ-123", "not QQ-123"),)))
    vacuity = find(report, "predicate_vacuous")
    _refuted(vacuity, caplog)
    assert vacuity.counterexample["tag"] == "QQ-123"


def test_true_negative_verdicts_stay(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        report = run(make(pre=(Pre(lambda q: q.n > 7, "n above 7"),),
                          post=(Post(lambda o: o.score > 0.75, "score above 0.75"),
                                Post(lambda o: o.score <= 0.75 or o.word == "x", "weak"))))
    assert find(report, "pre_satisfiable").status == "fail"
    assert find(report, "post_satisfiable").status == "fail"
    statuses = sorted(c.status for c in report.checks if c.kind == "predicate_vacuous")
    assert statuses == ["fail", "fail", "warn"]
    assert not [r for r in caplog.records if "translator bug" in r.getMessage()]


class Total(BaseModel):
    n: int = Field(ge=0, le=10)


class Guess(BaseModel):
    g: int = Field(ge=0, le=5)


def test_a_refuted_total_warn_becomes_unknown(monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """A true post_total warn stays; one resting on a wrong elimination and a wrong
    confirmation (both forged here) is refuted by a sampled output."""
    honest = find(run(make(post=(Post(lambda o, q: o.g >= q.n, "g at least n"),),
                           input_type=Total, output_type=Guess)), "post_total")
    assert honest.status == "warn" and honest.counterexample["n"] > 5
    real_solve = checks.solve

    def forged(assertions: Any, options: Any, *rest: Any, **kwargs: Any) -> Any:
        result = real_solve(assertions, options, *rest, **kwargs)
        if not rest and not kwargs and result.status == "sat":  # the confirmation query
            return checks.QueryResult("unsat", core=["forged"])
        return result

    monkeypatch.setattr(qe, "eliminate", lambda *args, **kwargs: z3.BoolVal(False))
    monkeypatch.setattr(checks, "solve", forged)
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        report = run(make(post=(Post(lambda o, q: o.g >= q.n - 5, "g at least n - 5"),),
                          input_type=Total, output_type=Guess))
    total = find(report, "post_total")
    _refuted(total, caplog)
    assert total.counterexample["g"] >= total.witness["n"] - 5


# -- pre-flight -----------------------------------------------------------------------------


class Score(BaseModel):
    score: int = Field(ge=0, le=10)
    note: str = ""


def test_preflight_refuses_only_what_sampling_cannot_refute(
        corrupt: Any, caplog: pytest.LogCaptureFixture) -> None:
    true_cls = make(post=(Post(lambda s: s.score > 10, "above 10"),), output_type=Score)
    checker = preflight.Preflight(describe(true_cls, ContractConfig()))
    assert checker.check(object(), Query(text="q", n=3)).verdict is Verdict.UNSATISFIABLE
    corrupt(_never_passes, preflight)
    cls = make(post=(Post(lambda s, q: s.score == q.n + 1 and s.note == "ok", "n+1"),),
               output_type=Score)
    checker = preflight.Preflight(describe(cls, ContractConfig()))
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        result = checker.check(object(), Query(text="q", n=6))
    assert result.verdict is Verdict.UNKNOWN and "refuted" in result.reason
    assert "'score': 7" in result.reason and "'note': 'ok'" in result.reason
    assert checker.check(object(), Query(text="q", n=6)).verdict is Verdict.UNKNOWN


def test_a_refuted_preflight_lets_the_call_reach_the_engine(
        corrupt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    corrupt(_never_passes, preflight)
    monkeypatch.setattr(preflight, "_REGISTRY", preflight.weakref.WeakKeyDictionary())
    engine = DummyEngine('{"score": 4, "note": "ok"}')

    @contract
    class Rate(Contract):
        prompt = "Rate the query."
        post_conditions = [Post(lambda s, q: s.score == q.n + 1, "score is n + 1")]

        def forward(self, input: Query) -> Score:
            return self.contract_result or Score(score=0)

    result = Rate(engine=engine)(Query(text="q", n=3))
    assert engine.requests and result.score == 4


# -- composition ----------------------------------------------------------------------------


class Middle(BaseModel):
    tag: str = Field(pattern=r"^[A-Z]{2}-[0-9]{3}$")


def test_a_refuted_composition_pass_becomes_unknown(monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    @contract
    class First(Contract):
        prompt = "Tag it."

        def forward(self, input: Query) -> Middle:
            return Middle(tag="AA-000")

    @contract
    class Second(Contract):
        prompt = "Score it."
        pre_conditions = [Pre(lambda m: not m.tag.startswith("ZZ"), "no ZZ")]

        def forward(self, input: Middle) -> Score:
            return Score(score=0)

    honest = check_pipeline([First(), Second()], "p", OPTIONS).checks[0]
    assert honest.status == "fail"
    monkeypatch.setattr(checks_model, "translate", lambda *a, **k: _never_fails(translate(*a, **k)))
    with caplog.at_level(logging.WARNING, "hoare.verifier"):
        refuted = check_pipeline([First(), Second()], "p", OPTIONS).checks[0]
    _refuted(refuted, caplog)
    assert refuted.counterexample["tag"].startswith("ZZ")
    assert Pipeline  # the public pipeline type is what check_pipeline verifies
    assert composition.check_pipeline is check_pipeline


# -- the sampler ----------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [r"^[A-Z]{2}-\d{3}$", r"^(ab|cd)+x?$", r"[a-c]{1,3}",
                                     r"^\w+@\w+\.com$"])
def test_pattern_samples_match(pattern: str) -> None:
    samples = patterns.pattern_samples(pattern, random.Random(1))
    assert samples and all(re.search(pattern, s) for s in samples), samples


def test_candidates_cover_edges_and_constants_deterministically() -> None:
    class Shape(BaseModel):
        x: float
        k: int = Field(ge=-3, lt=40)
        s: str = Field("", max_length=3)

    constants = candidates.Constants()
    constants.add(17)
    constants.add("hey")
    spec = type_spec(Shape)
    first = list(candidates.Sampler(constants).candidates(spec, 300))
    assert first == list(candidates.Sampler(constants).candidates(spec, 300))
    xs = {repr(c.get("x")) for c in first}
    assert {"nan", "inf", "-inf", "-0.0", "5e-324", "9007199254740993", "9007199254740991.0",
            "1e+308", "17.0", "18.0", "16.0"} <= xs
    ks = {c.get("k") for c in first}
    assert {-4, -3, 16, 17, 18, 39, 40} <= ks
    ss = {c.get("s") for c in first}
    assert {"", "hey", "𝄞", "é", "aaa", "aaaa"} <= ss


# -- statements: None returns, raise in branches, locals -----------------------------------


class V(BaseModel):
    i: int
    s: str = ""
    b: bool = False


def bare_return_guard(v: V) -> bool | None:
    if v.i >= 5:
        return
    return False


def return_none_guard(v: V) -> bool | None:
    if v.i >= 5:
        return None
    return v.b


def guard_falls_off(v: V) -> bool | None:
    if v.i < 0:
        return False
    if v.s == "x":
        raise ValueError("x")
    return None


def raise_in_branches(v: V) -> None:
    if v.b:
        if v.i > 2:
            raise ValueError("big")
    elif v.s:
        raise ValueError("text without b")
    else:
        return
    if v.i == -1:
        raise ValueError("minus one")


def nested_bare_return(v: V) -> bool | None:
    i = v.i
    if v.b:
        if i > 0:
            return
        raise ValueError("b needs a positive i")
    return v.i < 0


STATEMENTS = [bare_return_guard, return_none_guard, guard_falls_off, raise_in_branches,
              nested_bare_return]




def _z3_passes(fn: Callable[..., object], value: V) -> tuple[bool, bool]:
    typed = TypeBuilder("input").build(type_spec(V))
    t = translate(predicate_source(fn), [typed.value], None)
    assert t.opaque is None, t.opaque
    answers = []
    for goal in (t.passes(), t.fails()):
        solver = z3.Solver()
        solver.add(*bind(typed.value, value), *t.defs, goal)
        answers.append(solver.check() == z3.sat)
    return answers[0], answers[1]


@pytest.mark.parametrize("fn", STATEMENTS, ids=[f.__name__ for f in STATEMENTS])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.builds(V, i=st.integers(-3, 8), s=st.sampled_from(["", "x", "ab"]),
                       b=st.booleans()))
def test_statements_with_none_returns_agree_with_python(fn: Callable[..., object],
                                                        value: V) -> None:
    real = call_predicate(predicate_source(fn), None, value).passed
    assert _z3_passes(fn, value) == (real, not real), (value, real)


def test_bare_return_in_a_guard_is_not_a_failure() -> None:
    """Before: the bare ``return`` did not count as a passing exit, so the path after
    the ``if`` was not excluded and ``post_satisfiable`` was a false ``fail``."""

    def post(self: object, out: Score) -> bool | None:
        if out.score >= 5:
            return
        return False

    report = run(make(methods={"post": post}, output_type=Score))
    assert find(report, "post_satisfiable").status == "pass"
    assert find(report, "predicate_vacuous").status == "pass"


LIMIT = 100


def test_a_local_read_before_assignment_is_not_the_global() -> None:
    """Before: ``LIMIT`` unbound on one path was read as the module's ``LIMIT`` (100),
    and the predicate was reported as never failing (``warn``); Python raises
    UnboundLocalError there."""

    def post(self: object, out: Score) -> bool:
        if out.score > 5:
            LIMIT = 100
        return out.score < LIMIT

    t = translate(PredicateSource("post", "post", "m", post, "post", True, False, None),
                  [TypeBuilder("output").build(type_spec(Score)).value], None)
    assert t.opaque is not None and "LIMIT" in t.opaque
    report = run(make(methods={"post": post}, output_type=Score))
    assert find(report, "predicate_vacuous").status == "unknown"
    obj = object()
    assert not passes(PredicateSource("post", "post", "m", post, "post", True, False, None),
                      obj, Score(score=1))


def test_statement_module_is_the_one_under_test() -> None:
    assert predicates_module.translate is translate


class Items(BaseModel):
    xs: list[int] = []
    n: int = 0


def test_in_place_list_update_is_opaque() -> None:
    """``ys += [1]`` extends the model's own list: never modelled as a fresh value."""

    def grows(v: Items) -> bool:
        ys = v.xs
        ys += [1]
        return len(v.xs) > 0

    def counts(v: Items) -> bool:
        k = v.n
        k += 2
        return k > v.n

    typed = TypeBuilder("input").build(type_spec(Items))
    assert translate(predicate_source(grows), [typed.value], None).opaque is not None
    assert passes(predicate_source(grows), None, Items())
    assert translate(predicate_source(counts), [typed.value], None).opaque is None


class Tree(BaseModel):
    label: str = ""
    children: list[Tree] = []


def test_recursive_models_are_sampled_to_a_bounded_depth() -> None:
    spec = type_spec(Tree)
    values = list(candidates.Sampler().candidates(spec, 50))
    assert values and all(isinstance(v, dict) for v in values)
    assert any(v.get("children") for v in values)
    for value in values[:10]:
        Tree.model_validate(value)


def test_a_changed_parameter_default_makes_the_translation_stale() -> None:
    """A pre-condition's default parameter is baked into its translation (the kernel
    calls a pre-condition with the value alone, so the default is what it sees)."""

    def above(v: V, k: int = 3) -> bool:
        return v.i > k

    typed = TypeBuilder("input").build(type_spec(V))
    t = translate(predicate_source(above), [typed.value], None)
    assert t.opaque is None and not t.stale()
    above.__defaults__ = (10,)
    assert t.stale()


class Falsy(BaseModel):
    x: int = Field(ge=0, le=3)

    def __bool__(self) -> bool:
        return self.x > 1


class Wrap(BaseModel):
    inner: Falsy


def test_a_model_with_its_own_truth_is_opaque(caplog: pytest.LogCaptureFixture) -> None:
    """Before: ``return o.inner`` was taken as always true (a model has no
    ``__bool__``), a false ``warn``; now opaque (and the falsifier would refute it)."""
    source = PredicateSource("p", "p", "m", lambda o: o.inner, "post", False, False, None)
    t = translate(source, [TypeBuilder("output").build(type_spec(Wrap)).value], None)
    assert t.opaque is not None and "Falsy" in t.opaque
    assert not passes(source, None, Wrap(inner=Falsy(x=0)))
    report = run(make(post=(Post(lambda o: o.inner, "inner is true"),), output_type=Wrap))
    assert find(report, "predicate_vacuous").status == "unknown"
