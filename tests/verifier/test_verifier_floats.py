"""Python floats are IEEE-754 doubles: the z3 translation against Python, value by value.

The translation keeps float *values* as reals but over-approximates every rounded
operation (a fresh value within the rounding error bound of the exact result,
``±inf`` past the overflow threshold). For a concrete assignment of the inputs the
model must allow what Python actually does: its result (``result == python``
satisfiable together with "nothing raised"), or the exception it raises
(``raises E`` satisfiable). The values are IEEE edge cases (±0.0, subnormals,
2**53±1, the overflow threshold, nan, ±inf, huge ints, bools) and random ones; each
operand is either symbolic or a constant (constants are folded by Python itself).

``HOARE_NIGHTLY=1`` runs many more examples.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, assume, given, reject, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from verifier_support import predicate_source

from hoare import Post, Pre
from hoare.declaration.models import type_spec
from hoare.verifier.search.concrete import bind
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.predicates import Translation, translate
from hoare.verifier.translate.semantics import Semantics
from hoare.verifier.translate.types import TypeBuilder
from hoare.verifier.translate.values import (
    FIN,
    NAN,
    NINF,
    OVERFLOW,
    PINF,
    Opaque,
    SBool,
    SFloat,
    SInt,
    SNumber,
    STruth,
    Sym,
    const_to_sym,
)

COVERS = {"abs", "int", "float", "round", "math.isnan", "math.isinf", "math.isfinite", "min",
          "max"}

NIGHTLY = os.environ.get("HOARE_NIGHTLY") == "1"
EXAMPLES = 2_000 if NIGHTLY else 60
PREDICATE_EXAMPLES = 300 if NIGHTLY else 12
PROFILE = settings(max_examples=EXAMPLES, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

MAX = 1.7976931348623157e308
EDGE_FLOATS = [0.0, -0.0, 5e-324, -5e-324, 1e-323, 2.2250738585072014e-308, 1e-300, 1e-200,
               0.1, 0.25, 0.5, 1.0, -1.0, 1.5, 2.5, -3.0, 10.0, 2.0 ** 53, 2.0 ** 53 + 2,
               1e16, 1e200, 1e300, 1e308, -1e308, MAX, -MAX, math.nan, math.inf, -math.inf]
THRESHOLD = 2**1024 - 2**970  # the smallest int that float() refuses
EDGE_INTS = [0, 1, -1, 2, 3, -7, 10, 2**53 - 1, 2**53, 2**53 + 1, -(2**53 + 1), 10**16 + 1,
             THRESHOLD - 1, THRESHOLD, -THRESHOLD, 10**400]

floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats())
ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-1000, 1000), st.integers())
numbers = st.one_of(floats, ints, st.booleans())


# -- a Semantics that records what the translation says ---------------------------------------


class Probe(Semantics):
    """The hooks of ``Semantics`` as plain lists."""

    def __init__(self) -> None:
        self.errors: list[tuple[z3.BoolRef, str]] = []
        self.defs: list[z3.BoolRef] = []
        self.notes: list[str] = []

    def error(self, cond: z3.BoolRef, exc: str) -> None:
        self.errors.append((cond, exc))

    def define(self, constraint: z3.BoolRef) -> None:
        self.defs.append(constraint)

    def havoc_note(self, reason: str) -> None:
        self.notes.append(reason)


_names = iter(range(10**9))


MODES = ("constant", "symbolic", "int or float")
modes = st.sampled_from(MODES)


def operand(value: int | float | bool, mode: str | bool) -> tuple[Sym, list[z3.BoolRef]]:
    """A ``Sym`` for ``value`` and the equalities binding it (none for a constant).
    ``int or float``: a value whose type is itself symbolic (``n if c else x``)."""
    if mode in (False, "constant"):
        return const_to_sym(value), []
    name = f"v{next(_names)}"
    if mode == "int or float" and not isinstance(value, bool):
        is_int = z3.Bool(name + ".is_int")
        i = z3.Int(name + ".int")
        x, bind_x = operand(float(value) if isinstance(value, float) else 0.0, "symbolic")
        mixed = Probe().ite(is_int, SInt(i), x)
        assert isinstance(mixed, SNumber)
        if isinstance(value, int):
            return mixed, [is_int, i == value]
        return mixed, [z3.Not(is_int), *bind_x]
    if isinstance(value, bool):
        b = z3.Bool(name)
        return SBool(b), [b == value]
    if isinstance(value, int):
        i = z3.Int(name)
        return SInt(i), [i == value]
    tag, r = z3.Int(name + ".tag"), z3.Real(name)
    return SFloat(tag, r), [tag == _tag(value)] + ([r == _q(value)] if math.isfinite(value)
                                                   else [])


def _tag(value: float) -> int:
    if math.isnan(value):
        return NAN
    if math.isinf(value):
        return PINF if value > 0 else NINF
    return FIN


def _q(value: float | int) -> z3.ArithRef:
    q = Fraction(value)
    return z3.RealVal(f"{q.numerator}/{q.denominator}")


def equals(sym: Sym | z3.BoolRef, value: object) -> z3.BoolRef:
    """``sym`` is Python's ``value`` (same type, same value; a value of unknown type
    only by its truthiness)."""
    if isinstance(sym, z3.BoolRef):
        sym = SBool(sym)
    if isinstance(sym, STruth):
        return sym.e == bool(value)
    if isinstance(sym, SNumber) and isinstance(value, (int, float)):
        if isinstance(value, int):  # a bool is an int here (``is`` on it is opaque)
            return z3.And(sym.is_int, sym.tag == FIN, sym.r == int(value))
        return z3.And(z3.Not(sym.is_int), equals(SFloat(sym.tag, sym.r), value))
    if isinstance(value, bool):
        assert isinstance(sym, SBool), (sym, value)
        return sym.e == value
    if isinstance(value, int):
        assert isinstance(sym, SInt), (sym, value)
        return sym.e == value
    assert isinstance(value, float) and isinstance(sym, SFloat), (sym, value)
    if math.isfinite(value):
        return z3.And(sym.tag == FIN, sym.r == _q(value))
    return sym.tag == _tag(value)


UNDECIDED = {"count": 0}


def _sat(*constraints: z3.BoolRef) -> bool:
    """Is the model consistent with Python here? An example z3 cannot decide within a
    deterministic resource limit (a nonlinear `%` of huge operands, say) checks nothing,
    so it is rejected (and counted) rather than passed."""
    solver = z3.Solver()
    solver.set("timeout", 20_000)
    solver.set("rlimit", 20_000_000)
    solver.add(*constraints)
    answer = solver.check()
    if answer == z3.unknown:
        UNDECIDED["count"] += 1
        reject()
    return answer == z3.sat


def python(fn: Callable[[], object]) -> tuple[str, object]:
    try:
        return "value", fn()
    except (ArithmeticError, ValueError, TypeError) as error:
        return "raises", type(error).__name__


def assert_consistent(probe: Probe, result: Sym | z3.BoolRef, bindings: list[z3.BoolRef],
                      outcome: tuple[str, object]) -> None:
    """Python's outcome is one the model allows."""
    kind, value = outcome
    raised = [cond for cond, exc in probe.errors]
    if kind == "raises":
        matching = [cond for cond, exc in probe.errors if exc == value]
        assert matching, f"Python raises {value}; the model never does ({probe.errors})"
        assert _sat(*bindings, *probe.defs, z3.Or(*matching)), \
            f"Python raises {value}; the model excludes it"
        return
    if isinstance(value, complex):
        pytest.fail("a complex result must be opaque")
    no_error = z3.Not(z3.Or(*raised)) if raised else z3.BoolVal(True)
    assert _sat(*bindings, *probe.defs, no_error, equals(result, value)), \
        f"Python gives {value!r}; the model excludes it"


# -- operators ----------------------------------------------------------------------------------

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow}


@PROFILE
@given(a=numbers, b=numbers, op=st.sampled_from(sorted(BINARY)), sym_a=modes, sym_b=modes)
def test_binary_operators_allow_what_python_does(a: Any, b: Any, op: str, sym_a: str,
                                                 sym_b: str) -> None:
    if op == "**":  # keep Python fast: no huge powers
        assume(not (isinstance(b, int) and abs(b) > 8))
        assume(not (isinstance(a, int) and abs(a) > 2**64 and isinstance(b, int)))
    outcome = python(lambda: BINARY[op](a, b))
    probe = Probe()
    x, bind_x = operand(a, sym_a)
    y, bind_y = operand(b, sym_b)
    try:
        result = probe.binop(op, x, y)
    except Opaque:
        # only powers, and `/ // %` whose operand's type is symbolic, are untranslated
        assert op == "**" or (op in ("/", "//", "%") and (
            isinstance(x, SNumber) or isinstance(y, SNumber))), (op, a, b)
        return
    assert_consistent(probe, result, bind_x + bind_y, outcome)


UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Probe, Sym], Sym | z3.BoolRef]]] = {
    "-": (operator.neg, lambda p, v: p.unary("-", v)),
    "+": (operator.pos, lambda p, v: p.unary("+", v)),
    "abs": (abs, lambda p, v: p.absolute(v)),
    "int": (int, lambda p, v: p.to_int(v)),
    "round": (round, lambda p, v: p.round_half_even(v)),
    "float": (float, lambda p, v: p.to_float(v)),
    "bool": (bool, lambda p, v: p.truthy(v)),
    "math.isnan": (math.isnan, lambda p, v: p.is_nan(v)),
    "math.isinf": (math.isinf, lambda p, v: p.is_inf(v)),
    "math.isfinite": (math.isfinite, lambda p, v: p.is_finite(v)),
}


@PROFILE
@given(a=numbers, name=st.sampled_from(sorted(UNARY)), mode=modes)
def test_unary_functions_allow_what_python_does(a: Any, name: str, mode: str) -> None:
    real, model = UNARY[name]
    outcome = python(lambda: real(a))
    probe = Probe()
    x, bindings = operand(a, mode)
    assert_consistent(probe, model(probe, x), bindings, outcome)


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne}


def _model_compare(probe: Probe, op: str, x: Sym, y: Sym) -> z3.BoolRef:
    if op == "==":
        return probe.eq(x, y)
    if op == "!=":
        return z3.Not(probe.eq(x, y))
    return probe.compare(op, x, y)


@PROFILE
@given(a=numbers, b=numbers, op=st.sampled_from(sorted(COMPARE)), sym_a=modes, sym_b=modes)
def test_comparisons_are_exact(a: Any, b: Any, op: str, sym_a: str, sym_b: str) -> None:
    """int against float compares exactly (no conversion): the model must give
    Python's answer and only it."""
    real = COMPARE[op](a, b)
    probe = Probe()
    x, bind_x = operand(a, sym_a)
    y, bind_y = operand(b, sym_b)
    cond = _model_compare(probe, op, x, y)
    assert not probe.errors
    assert _sat(*bind_x, *bind_y, *probe.defs, cond == real)
    assert not _sat(*bind_x, *bind_y, *probe.defs, cond != real)


@PROFILE
@given(a=numbers, b=numbers, name=st.sampled_from(["min", "max"]), sym_a=modes, sym_b=modes)
def test_min_max_allow_what_python_does(a: Any, b: Any, name: str, sym_a: str,
                                        sym_b: str) -> None:
    outcome = python(lambda: (min if name == "min" else max)(a, b))
    probe = Probe()
    x, bind_x = operand(a, sym_a)
    y, bind_y = operand(b, sym_b)
    result = probe.min_max(name, [(z3.BoolVal(True), x), (z3.BoolVal(True), y)])
    assert_consistent(probe, result, bind_x + bind_y, outcome)


@PROFILE
@given(a=numbers, b=numbers, c=numbers, ops=st.tuples(st.sampled_from("+-*/"),
                                                      st.sampled_from("+-*/")),
       chosen=st.sampled_from(["min", "max", "-"]))
def test_chained_operations_allow_what_python_does(a: Any, b: Any, c: Any,
                                                   ops: tuple[str, str], chosen: str) -> None:
    """Two operations in a row, the second on a value whose type may be symbolic
    (``max(a, b)``): each rounding is allowed independently."""
    first, second = ops
    pick = {"min": min, "max": max}.get(chosen)
    inner = (lambda: pick(a, b)) if pick else (lambda: BINARY[first](a, b))
    outcome = python(lambda: BINARY[second](inner(), c))
    probe = Probe()
    x, bind_x = operand(a, True)
    y, bind_y = operand(b, True)
    z, bind_z = operand(c, True)
    if pick:
        middle = probe.min_max(chosen, [(z3.BoolVal(True), x), (z3.BoolVal(True), y)])
    else:
        middle = probe.binop(first, x, y)
    try:
        result = probe.binop(second, middle, z)
    except Opaque:
        assert second == "/" and isinstance(middle, SNumber), (second, middle)
        return
    assert_consistent(probe, result, bind_x + bind_y + bind_z, outcome)


# -- the traps of real arithmetic, one by one --------------------------------------------------


def _can(probe: Probe, bindings: list[z3.BoolRef], result: Sym, value: object) -> bool:
    raised = [cond for cond, _ in probe.errors]
    no_error = z3.Not(z3.Or(*raised)) if raised else z3.BoolVal(True)
    return _sat(*bindings, *probe.defs, no_error, equals(result, value))


def test_rounding_absorbs_a_small_addend() -> None:
    probe = Probe()
    x, bindings = operand(1e16, True)
    result = probe.binop("+", x, const_to_sym(1.0))
    assert _can(probe, bindings, result, 1e16)  # over the reals: impossible


def test_exact_results_stay_exact() -> None:
    """Integers up to 2**53 and short dyadic fractions are doubles: no rounding."""
    for a, b, op in ((2.5, 2, "*"), (3, 2, "/"), (0.25, 0.5, "+"), (7.0, 2.0, "-")):
        probe = Probe()
        x, bind_x = operand(a, True)
        y, bind_y = operand(b, True)
        result = probe.binop(op, x, y)
        assert isinstance(result, SFloat)
        exact = BINARY[op](a, b)
        assert not _sat(*bind_x, *bind_y, *probe.defs, result.r != _q(exact))


def test_overflow_gives_infinity_and_underflow_gives_zero() -> None:
    probe = Probe()
    x, bindings = operand(1e308, True)
    big = probe.binop("*", x, const_to_sym(10))
    assert _can(probe, bindings, big, math.inf)
    assert not _can(probe, bindings, big, 1e308)
    probe = Probe()
    x, bindings = operand(1e-300, True)
    tiny = probe.binop("*", x, x)
    assert _can(probe, bindings, tiny, 0.0)


def test_int_to_float_conversion_rounds_and_overflows() -> None:
    probe = Probe()
    n, bindings = operand(2**53 + 1, True)
    converted = probe.to_float(n)
    assert _can(probe, bindings, converted, float(2**53 + 1))
    assert _sat(*bindings, *probe.defs, z3.Not(probe.eq(converted, n)))  # float(n) != n
    probe = Probe()
    n, bindings = operand(THRESHOLD, True)
    probe.binop("+", n, const_to_sym(0.5))
    assert [exc for _, exc in probe.errors] == ["OverflowError"]
    assert _sat(*bindings, *probe.defs, probe.errors[0][0])
    probe = Probe()
    n, bindings = operand(THRESHOLD - 1, True)
    probe.to_float(n)
    assert not _sat(*bindings, *probe.defs, z3.Or(*[c for c, _ in probe.errors]))


def test_overflow_threshold_is_round_to_nearest_even() -> None:
    assert float(THRESHOLD - 1) == MAX
    with pytest.raises(OverflowError):
        float(THRESHOLD)
    assert Fraction(OVERFLOW) == THRESHOLD


def test_float_power_overflow_raises() -> None:
    probe = Probe()
    x, bindings = operand(1e200, True)
    probe.binop("**", x, const_to_sym(2))
    assert _sat(*bindings, *probe.defs, z3.Or(*[c for c, e in probe.errors
                                                 if e == "OverflowError"]))
    with pytest.raises(OverflowError):
        1e200 ** 2  # noqa: B018


def test_comparison_of_int_and_float_is_exact() -> None:
    probe = Probe()
    n, bind_n = operand(2**53 + 1, True)
    f, bind_f = operand(2.0**53, True)
    assert not _sat(*bind_n, *bind_f, probe.eq(n, f))  # Python: 2**53 + 1 != 2.0**53


def test_mixed_types_are_never_a_type_error() -> None:
    """``abs``/``math.isfinite``/``-`` of an int-or-float value (``n if c else x``,
    ``max(n, x)``) are translated, never "always raises TypeError"."""
    probe = Probe()
    mixed = probe.ite(z3.Bool("c"), SInt(z3.Int("i")), SFloat(z3.IntVal(FIN), z3.Real("r")))
    assert isinstance(mixed, SNumber)
    for apply in (probe.absolute, probe.is_finite, probe.is_nan,
                  lambda v: probe.unary("-", v), probe.round_half_even, probe.to_int):
        apply(mixed)
    assert not [exc for _, exc in probe.errors if exc == "TypeError"]
    # only a huge int raises (math.isfinite converts it to a float)
    assert {exc for _, exc in probe.errors} <= {"OverflowError", "ValueError"}


def test_bool_is_an_int_in_arithmetic() -> None:
    for a, b, op in ((True, 1.5, "+"), (True, True, "/"), (False, 2.5, "*"), (True, 2, "-")):
        probe = Probe()
        x, bind_x = operand(a, True)
        y, bind_y = operand(b, True)
        assert_consistent(probe, probe.binop(op, x, y), bind_x + bind_y,
                          python(lambda a=a, b=b, op=op: BINARY[op](a, b)))


# -- predicates: translation against Python ------------------------------------------------------


class N(BaseModel):
    x: float
    y: float
    i: int
    j: int
    b: bool
    fs: list[float] = Field(default_factory=list, max_length=3)


PREDICATES: list[Callable[[N], object]] = [
    lambda v: v.x + v.y > 1.0,
    lambda v: v.x + 1.0 == v.x,
    lambda v: v.x * 10 < 1e308,
    lambda v: v.x * v.y == 0.0,
    lambda v: v.x - v.y >= 0,
    lambda v: v.x / v.y <= 2.5,
    lambda v: v.x // v.y == 3,
    lambda v: v.x % v.y < 1,
    lambda v: v.x ** 2 > 1e300,
    lambda v: v.i / v.j == 0.5,
    lambda v: v.i + v.x == v.i,
    lambda v: float(v.i) == v.i,
    lambda v: int(v.x) == v.i,
    lambda v: abs(v.x) <= abs(v.i),
    lambda v: min(v.x, v.y) <= v.i,
    lambda v: max(v.i, v.j, 3) > v.x,
    lambda v: math.isfinite(v.x * v.y),
    lambda v: math.isnan(v.x - v.y) or math.isinf(v.i * 1.0),
    lambda v: v.b + v.x > v.i,
    lambda v: v.b * 2.5 == v.x,
    lambda v: v.i * 0.5 < v.x,
    lambda v: -v.x < v.y,
    lambda v: v.x == v.i,
    lambda v: v.x < v.i,
    lambda v: (v.x + v.y) - v.x == v.y,
    lambda v: math.isfinite(v.i),
    lambda v: max(v.x, v.i) > 2,
    lambda v: abs(max(v.i, v.x)) >= 1,
    lambda v: math.isfinite(min(v.i, v.x)),
    lambda v: round(v.x) == v.i,
    lambda v: max(v.i, v.x) + 1 > v.x,
    lambda v: min(v.i, v.j, v.x) * 2 >= v.y,
    lambda v: -max(v.i, v.b) < v.j,
    lambda v: sum(v.fs) <= v.x,
    lambda v: max(v.fs, default=0) >= v.i,
    lambda v: sum(f * 0.1 for f in v.fs) == v.y,
]




@pytest.fixture(scope="module")
def translations() -> dict[int, tuple[Translation, Any]]:
    out = {}
    for index, fn in enumerate(PREDICATES):
        typed = TypeBuilder("input").build(type_spec(N))
        out[index] = (translate(predicate_source(fn), [typed.value], None), typed)
    return out


def test_every_float_predicate_is_translated(translations: dict[int, tuple[Translation, Any]]
                                            ) -> None:
    assert {i: t.opaque for i, (t, _) in translations.items() if t.opaque} == {}


values = st.builds(N, x=floats, y=floats, i=ints, j=ints, b=st.booleans(),
                   fs=st.lists(floats, max_size=3))


@pytest.mark.parametrize("index", range(len(PREDICATES)))
@settings(max_examples=PREDICATE_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_predicate_translation_allows_what_python_does(
        translations: dict[int, tuple[Translation, Any]], index: int, value: N) -> None:
    translation, typed = translations[index]
    real = call_predicate(translation.source, None, value).passed
    goal = translation.passes() if real else translation.fails()
    assert _sat(*bind(typed.value, value), *translation.defs, goal), (value, real)


# -- verdicts: the old real-number model refuted these wrongly -----------------------------------


class Reading(BaseModel):
    x: float = Field(ge=1.0, le=1e300)
    tiny: float = Field(gt=0.0, le=1e-300)
    n: int = Field(ge=0)


class Echo(BaseModel):
    text: str = ""


def _vacuity(*conditions: Any) -> list[str]:
    from hoare.declaration.description import describe
    from hoare.kernel import ContractConfig
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.solve.solver import SolverOptions

    def forward(self: object, input: Reading) -> Echo:
        raise NotImplementedError

    forward.__annotations__ = {"input": Reading, "return": Echo}
    cls = type("FloatContract", (), {"forward": forward, "pre_conditions": list(conditions),
                                     "__module__": __name__})
    report = check_contract(describe(cls, ContractConfig()),
                            SolverOptions(timeout_ms=10_000, rlimit=5_000_000))
    return [c.status for c in report.checks if c.kind == "predicate_vacuous"]


@pytest.mark.parametrize("condition", [
    Pre(lambda r: r.x + 1.0 != r.x, "adding one changes x"),  # not for x >= 2**53
    Pre(lambda r: math.isfinite(r.x * 1e10), "x * 1e10 stays finite"),  # overflow
    Pre(lambda r: r.tiny * r.tiny > 0, "the square of tiny is positive"),  # underflow
    Pre(lambda r: float(r.n) == r.n, "n is a double"),  # 2**53 + 1 is not
    Pre(lambda r: r.n + 0.5 > 0, "n plus a half is positive"),  # OverflowError for a huge n
], ids=["absorption", "overflow", "underflow", "conversion", "conversion-overflow"])
def test_a_predicate_that_can_fail_on_doubles_is_not_warned_as_vacuous(condition: Pre) -> None:
    assert _vacuity(condition) != ["warn"]  # the old model said: can never fail


def test_a_predicate_that_can_pass_on_doubles_is_not_failed() -> None:
    statuses = _vacuity(Pre(lambda r: r.x + 1.0 == r.x, "adding one leaves x unchanged"))
    assert statuses != ["fail"]  # the old model said: can never pass


def test_a_real_contradiction_is_still_refuted() -> None:
    assert _vacuity(Pre(lambda r: r.x * 2 < 1.0, "twice x below one")) == ["fail"]
    # rounding is monotonic and leaves doubles alone: x >= 1 gives x * 100 >= 100.0
    assert _vacuity(Pre(lambda r: r.x * 100 < 100, "a hundred x below 100")) == ["fail"]
    assert _vacuity(Pre(lambda r: r.x / 4 < 0.25, "a quarter of x below 0.25")) == ["fail"]
    assert _vacuity(Pre(lambda r: r.x >= 1.0, "x at least one")) == ["warn"]


class Offset(BaseModel):
    offset: float = Field(ge=0.0, le=10.0)


class Value(BaseModel):
    x: float = Field(ge=1.0, le=1e300)


def test_preflight_does_not_refuse_an_input_with_a_float_answer() -> None:
    from hoare.declaration.description import describe
    from hoare.kernel import ContractConfig, Verdict
    from hoare.verifier.runtime.preflight import Preflight

    def forward(self: object, input: Offset) -> Value:
        raise NotImplementedError

    forward.__annotations__ = {"input": Offset, "return": Value}
    post = Post(lambda o, q: o.x + q.offset == o.x, "the offset is absorbed")
    cls = type("Absorb", (), {"forward": forward, "post_conditions": [post],
                              "__module__": __name__})
    checker = Preflight.for_description(describe(cls, ContractConfig()))
    assert checker is not None
    # x = 1e300 absorbs an offset of 1.0: an answer exists, so the call must proceed
    assert 1e300 + 1.0 == 1e300
    verdict = checker.check(object(), Offset(offset=1.0)).verdict
    assert verdict is not Verdict.UNSATISFIABLE
