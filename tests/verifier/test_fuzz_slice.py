"""The fuzzer of ``hoare verify`` and the pre-flight (tests/fuzz, ``make fuzz``): a
fixed-seed slice of about 300 cases on every ``make test``, and tests that the
fuzzer itself can find what it looks for (a planted contradiction of each kind is
reported; its generators reach the whole domain)."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz.cases import Case, draw_case
from fuzz.minimize import minimize, smaller_bodies
from fuzz.models import Model, Pool, field_type
from fuzz.oracle import CaseResult, Contradiction, run_case
from fuzz.run import BASELINE, Summary, case_seed, check_baseline
from fuzz.values import draw_float, draw_int, draw_text, floats, ints, texts
from hypothesis import find, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

import hoare
from hoare.verifier.report.model import CheckResult, Report

ROOT = Path(__file__).resolve().parents[2]
SLICE_SEED = 20261127
SLICE_CASES = 300


def _slice_baseline() -> dict[str, Any]:
    runs = json.loads(BASELINE.read_text())["runs"]
    return next(r for r in runs if r["cases"] == SLICE_CASES)


@pytest.mark.serial
def test_fixed_seed_slice_finds_no_contradiction() -> None:
    """300 cases in two worker processes (a child, so a crash fails the test): exit 0
    means no contradiction and a definite share not below the slice's baseline."""
    baseline = _slice_baseline()
    assert baseline["seed"] == SLICE_SEED
    env = {**os.environ, "PYTHONPATH": LIBRARY, "HOARE_FUZZ_CASES": str(SLICE_CASES),
           "HOARE_FUZZ_SEED": str(SLICE_SEED), "HOARE_FUZZ_JOBS": "2"}
    env.pop("HOARE_FUZZ_ONLY", None)
    child = subprocess.run([sys.executable, "-m", "fuzz"], cwd=ROOT / "tests", env=env,
                           capture_output=True, text=True, timeout=600)
    print(child.stdout[-3000:])
    assert child.returncode == 0, child.stdout[-20000:] + child.stderr[-5000:]
    assert f"{SLICE_CASES} cases" in child.stdout
    assert "CONTRADICTION" not in child.stdout


# -- the oracle finds a planted contradiction of each kind ----------------------------------

def _case_with(posts: list[str], pres: list[str] | None = None) -> Case:
    """A small fixed case: In(n0: int), Out(f0: int in 0..3)."""
    from fuzz.models import FieldType

    def ints_0_3(rng: Any, pool: Pool) -> int:
        return int(rng.randrange(-2, 6))

    int_in = FieldType("int = Field(ge=0, le=3)", "int", ints_0_3,
                       finite=tuple(range(-2, 6)))
    return Case(1, [], Model("In", [("n0", int_in)], ""), Model("Out", [("f0", int_in)], ""),
                pres or [], posts, Pool())


def _planted(monkeypatch: pytest.MonkeyPatch, rewrite: Callable[[CheckResult], None]
             ) -> None:
    """Let ``hoare.verify`` answer, then rewrite its checks (a planted verifier bug)."""
    real = hoare.verify

    def lying(target: Any, **options: Any) -> Report:
        report: Report = real(target, **options)
        for contract in report.contracts:
            for check in contract.checks:
                rewrite(check)
        return report

    monkeypatch.setattr(hoare, "verify", lying)


def _kinds(result: CaseResult) -> set[str]:
    return {c.kind for c in result.contradictions}


def test_a_sound_case_has_no_contradiction() -> None:
    result = run_case(_case_with(["o.f0 > i.n0"], ["i.n0 < 3"]))
    assert result.skipped is None and not result.contradictions, result.contradictions
    assert result.statuses["post_satisfiable:pass"] == 1


@pytest.mark.parametrize("kind", ["pre_satisfiable", "post_satisfiable"])
def test_a_fail_behind_a_passing_value_is_found(monkeypatch: pytest.MonkeyPatch,
                                                kind: str) -> None:
    def rewrite(check: CheckResult) -> None:
        if check.kind == kind:
            check.status = "fail"

    _planted(monkeypatch, rewrite)
    result = run_case(_case_with(["o.f0 >= 1"], ["i.n0 <= 2"]))
    assert f"{kind} fail" in _kinds(result)


def test_a_warn_behind_a_failing_value_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def rewrite(check: CheckResult) -> None:
        if check.kind == "predicate_vacuous":
            check.status = "warn"

    _planted(monkeypatch, rewrite)
    result = run_case(_case_with(["o.f0 >= 2"]))
    assert "predicate_vacuous warn" in _kinds(result)


def test_a_never_passing_verdict_behind_a_passing_value_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def rewrite(check: CheckResult) -> None:
        if check.kind == "predicate_vacuous":
            check.status = "fail"

    _planted(monkeypatch, rewrite)
    result = run_case(_case_with(["o.f0 == 3"]))
    assert "predicate_vacuous fail" in _kinds(result)


def test_a_witness_that_does_not_replay_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def rewrite(check: CheckResult) -> None:
        if check.kind == "post_satisfiable" and check.status == "pass":
            check.witness = {"input": {"n0": 1}, "output": {"f0": 0}}  # fails o.f0 > i.n0
        if check.kind == "pre_satisfiable" and check.status == "pass":
            check.witness = {"n0": 99}  # outside the type

    _planted(monkeypatch, rewrite)
    result = run_case(_case_with(["o.f0 > i.n0"]))
    assert {"post_satisfiable pass", "pre_satisfiable pass"} <= _kinds(result)


def test_a_total_pass_with_an_input_without_output_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def rewrite(check: CheckResult) -> None:
        if check.kind == "post_total":
            check.status = "pass"

    _planted(monkeypatch, rewrite)
    result = run_case(_case_with(["o.f0 > i.n0"]))  # no output for n0 == 3
    assert result.statuses["post_total:pass"] == 1  # the planted one (z3 says warn)
    assert "post_total pass" in _kinds(result)


def test_a_refusing_preflight_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from hoare.kernel import PreflightResult, Verdict
    from hoare.verifier.runtime.preflight import Preflight

    monkeypatch.setattr(Preflight, "check", lambda self, instance, used: PreflightResult(
        Verdict.UNSATISFIABLE, "planted"))
    result = run_case(_case_with(["o.f0 > i.n0"]))
    assert "preflight unsatisfiable" in _kinds(result)


def test_minimize_keeps_the_contradiction_and_shrinks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted bug (every post_satisfiable is a fail): no predicate is needed to show
    it, so the minimizer drops them all and the contradiction stays."""
    def rewrite(check: CheckResult) -> None:
        if check.kind == "post_satisfiable":
            check.status = "fail"

    _planted(monkeypatch, rewrite)
    case = _case_with(["o.f0 >= 0", "(o.f0 == 3 or o.f0 == 2) and i.n0 < 9", "o.f0 < 9"],
                      ["i.n0 >= 0"])
    first = run_case(case)
    found = next(c for c in first.contradictions if c.kind == "post_satisfiable fail")
    small, result = minimize(case, found, run_case, seconds=60)
    assert any(c.kind == found.kind for c in result.contradictions)
    assert small.pres == [] and small.posts == [], (small.pres, small.posts)


@given(st.data())
@settings(max_examples=60)
def test_smaller_bodies_are_sub_expressions(data: st.DataObject) -> None:
    import random

    rng = random.Random(data.draw(st.integers(0, 2 ** 32)))
    case = draw_case(rng.getrandbits(63))
    for body in [*case.pres, *case.posts]:
        tree = ast.parse(body, mode="eval")
        for smaller in smaller_bodies(body):
            smaller_tree = ast.parse(smaller, mode="eval")
            assert len(list(ast.walk(smaller_tree))) < len(list(ast.walk(tree))), (body, smaller)


# -- the generators reach the whole domain --------------------------------------------------


def test_float_strategy_reaches_every_class() -> None:
    for wanted in (math.isnan, math.isinf, lambda x: x == 0 and math.copysign(1, x) < 0,
                   lambda x: x != 0 and abs(x) < 2.2250738585072014e-308,
                   lambda x: x == 1.7976931348623157e308):
        find(floats(), wanted)


def test_text_strategy_reaches_every_plane_and_surrogates() -> None:
    find(texts(), lambda s: any(0xD800 <= ord(c) <= 0xDFFF for c in s))
    find(texts(), lambda s: any(ord(c) > 0xFFFF for c in s))
    find(texts(), lambda s: "ß" in s or "İ" in s)
    find(texts(), lambda s: any(c.isspace() and not c.isascii() for c in s))


def test_int_strategy_reaches_past_64_bits() -> None:
    find(ints(), lambda n: abs(n) > 2 ** 64)


def _draws(fn: Callable[[Any], Any], count: int = 20000) -> Iterator[Any]:
    import random

    rng = random.Random(5)
    return (fn(rng) for _ in range(count))


def test_random_drawers_reach_every_class() -> None:
    floats_drawn = list(_draws(draw_float))
    assert any(math.isnan(x) for x in floats_drawn)
    assert any(x == math.inf for x in floats_drawn) and any(x == -math.inf for x in floats_drawn)
    assert any(x == 0 and math.copysign(1, x) < 0 for x in floats_drawn)
    assert any(0 < abs(x) < 2.2250738585072014e-308 for x in floats_drawn)
    chars = "".join(_draws(lambda r: draw_text(r, 8)))
    assert any(0xD800 <= ord(c) <= 0xDFFF for c in chars)
    assert any(ord(c) > 0xFFFF for c in chars) and "\U0010ffff" in chars
    assert "ß" in chars and "İ" in chars and "\u0301" in chars
    assert any(abs(n) > 2 ** 64 for n in _draws(draw_int))


def test_model_generator_covers_the_type_forms() -> None:
    import random

    rng = random.Random(3)
    features = {f for _ in range(3000) for f in field_type(rng).features}
    for wanted in ("int:alias", "int:multiple", "float:finite", "str:pattern",
                   "str:constraints", "enum:StrEnum", "enum:IntEnum", "enum:str-mixin",
                   "enum:int-mixin", "enum:Enum-int", "literal:mixed", "optional",
                   "model:generic", "model:nested", "tuple:int", "list:str"):
        assert wanted in features, wanted


def test_grammar_produces_every_registered_call() -> None:
    """Coverage follows the registry: a new registry key without a production fails."""

    from hoare.verifier.translate.calls import registered
    REGISTRY = registered()

    covered: Counter[str] = Counter()
    for seed in range(2000):
        case = draw_case(case_seed(1, seed))
        covered.update(case.covered)
    produced = {k.removeprefix("call:") for k in covered if k.startswith("call:")}
    assert set(REGISTRY) <= produced, sorted(set(REGISTRY) - produced)


def test_baseline_comparison_fails_below_the_recorded_share() -> None:
    recorded = _slice_baseline()
    low = Summary(statuses=Counter({"pre_satisfiable:unknown": 99, "pre_satisfiable:pass": 1}))
    assert check_baseline(low, recorded["seed"], recorded["cases"]) is not None
    high = Summary(statuses=Counter({"pre_satisfiable:pass": 5}))
    assert check_baseline(high, recorded["seed"], recorded["cases"]) is None
    assert check_baseline(low, recorded["seed"] + 1, recorded["cases"]) is None


def test_bad_environment_is_refused_by_name() -> None:
    env = {**os.environ, "PYTHONPATH": LIBRARY, "HOARE_FUZZ_CASES": "many"}
    child = subprocess.run([sys.executable, "-m", "fuzz"], cwd=ROOT / "tests", env=env,
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 2 and "HOARE_FUZZ_CASES" in child.stderr, child.stderr


def test_summary_counts_a_contradiction_once_per_case() -> None:
    result = CaseResult(1, contradictions=[Contradiction("a fail", "x", "1"),
                                           Contradiction("b fail", "y", "2")])
    summary = Summary()
    summary.add(0, result)
    assert len(summary.found) == 1


def test_generated_cases_compile_and_load() -> None:
    """A case the generator writes is valid Python that pydantic accepts (a case that
    does not load tests nothing: the runner counts it as refused)."""
    import warnings

    from fuzz.cases import load, unload

    refused = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # `x is 1` is legal, and generated
        for index in range(400):
            case = draw_case(case_seed(SLICE_SEED + 1, index))
            try:
                unload(load(case.render()))
            except Exception as error:
                refused.append((index, f"{type(error).__name__}: {error}"))
    assert not refused, refused[:3]
