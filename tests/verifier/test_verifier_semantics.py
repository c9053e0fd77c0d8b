"""Predicate translation agrees with Python, value by value.

Each predicate is translated once; for a concrete value, the value is bound to
the symbolic input and z3 is asked whether the predicate can pass and whether it
can fail. Python's own verdict (calling the predicate for real) must be the only
possible one. The values avoid float rounding (reals are not floats: reports
say so) but include nan, ±inf, negative divisors, zero divisors, whitespace.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from verifier_support import predicate_source, z3_verdicts

from hoare.declaration.models import type_spec
from hoare.verifier.search.concrete import bind
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.predicates import Translation, translate
from hoare.verifier.translate.types import TypeBuilder


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 0
    HIGH = 2


class V(BaseModel):
    i: int
    j: int
    f: float
    s: str
    b: bool
    o: int | None = None
    xs: list[int] = Field(default_factory=list, max_length=3)
    c: Color = Color.RED
    lv: Level = Level.LOW


LIMIT = 3
WORDS = ("ab", "ba")

PREDICATES: list[Callable[[V], object]] = [
    lambda v: v.i // v.j == -4,
    lambda v: v.i % v.j == 1,
    lambda v: v.i % v.j == v.i - v.j * (v.i // v.j),
    lambda v: 10 // v.i > 1,
    lambda v: 10 / v.i > 1,
    lambda v: v.f / v.j > 0,
    lambda v: v.s[-1] == "a",
    lambda v: v.s[1:] == "b",
    lambda v: v.s[-2:-1] == "a",
    lambda v: (v.i == v.j) and (v.i < v.j),
    lambda v: v.i in [1, 2],
    lambda v: v.i not in (LIMIT, 5),
    lambda v: v.s in WORDS,
    lambda v: 0 < v.i <= v.j < 10,
    lambda v: v.f > 0,
    lambda v: v.f != v.f,
    lambda v: v.f == v.f,
    lambda v: not (v.f <= 1.5),
    lambda v: v.f - v.f == 0,
    lambda v: v.f + v.i > 2,
    lambda v: v.f * 2 >= v.i,
    lambda v: -v.f < 1,
    lambda v: abs(v.f) > 2,
    lambda v: math.isnan(v.f) or math.isinf(v.f),
    lambda v: math.isfinite(v.f) and int(v.f) == 2,
    lambda v: max(v.f, 1.0) == 1.0,
    lambda v: min(v.i, v.j, 3) == v.j,
    lambda v: v.o is None or v.o > 3,
    lambda v: v.o > 3,
    lambda v: (v.o or 0) + 1 > 1,
    lambda v: all(x > 0 for x in v.xs),
    lambda v: any(x == v.i for x in v.xs),
    lambda v: sum(v.xs) == v.i,
    lambda v: sum(x for x in v.xs if x > 1) > 2,
    lambda v: max(v.xs) > 2,
    lambda v: min(v.xs, default=5) < 3,
    lambda v: len([x for x in v.xs if x < 0]) == 1,
    lambda v: len(v.xs) == 2 and v.xs[-1] == 3,
    lambda v: v.xs[v.i] > 0,
    lambda v: v.xs.count(1) == 2,
    lambda v: v.xs == [1, 2],
    lambda v: v.s.strip() == "",
    lambda v: v.s.strip() == "a",
    lambda v: v.s.lstrip() == v.s.rstrip(),
    lambda v: bool(v.s.strip()),
    lambda v: v.s.startswith(("a", "b")),
    lambda v: v.s.endswith("b"),
    lambda v: v.s.find("b") == 1,
    lambda v: v.s.removeprefix("a") == "b",
    lambda v: v.s * 2 == "abab",
    lambda v: v.s + "!" == "a!",
    lambda v: v.s < "b",
    lambda v: v.i < v.s,
    lambda v: v.s == 1,
    lambda v: len(v.s) - len(v.s.strip()) >= 2,
    lambda v: v.c == Color.RED,
    lambda v: v.c is Color.BLUE,
    lambda v: v.c.value == "blue",
    lambda v: v.c == "red",
    lambda v: v.lv == 2,
    lambda v: v.lv > Level.LOW,
    lambda v: re.search("[a-z]+", v.s),
    lambda v: re.fullmatch("a[b ]*", v.s) is not None,
    lambda v: abs(v.i) < 3,
    lambda v: str(v.i) == "-12",
    lambda v: str(v.i).startswith("-"),
    lambda v: v.i if v.b else v.s,
    lambda v: v.b + v.b == 2,
    lambda v: isinstance(v.o, int),
    lambda v: v.i ** 2 > 10,
    lambda v: float(v.i) / 2 == 1.5,
    lambda v: None,
    lambda v: v.o,
]




@pytest.fixture(scope="module")
def translations() -> dict[int, tuple[Translation, Any]]:
    out = {}
    for index, fn in enumerate(PREDICATES):
        typed = TypeBuilder("input").build(type_spec(V))
        out[index] = (translate(predicate_source(fn), [typed.value], None), typed)
    return out


def _z3_verdicts(translation: Translation, typed: Any, value: V) -> tuple[bool, bool]:
    """(can pass, can fail) for this concrete value."""
    return z3_verdicts(translation, bind(typed.value, value))


def test_every_predicate_is_translated(translations: dict[int, tuple[Translation, Any]]
                                       ) -> None:
    opaque = {i: t.opaque for i, (t, _) in translations.items() if t.opaque}
    assert not opaque


floats = st.one_of(st.integers(-40, 40).map(lambda n: n / 4),
                   st.sampled_from([math.nan, math.inf, -math.inf, -0.0]))
values = st.builds(
    V, i=st.integers(-13, 13), j=st.integers(-4, 4), f=floats,
    s=st.text(alphabet="ab \t", max_size=4), b=st.booleans(),
    o=st.one_of(st.none(), st.integers(-5, 5)),
    xs=st.lists(st.integers(-3, 3), max_size=3), c=st.sampled_from(Color),
    lv=st.sampled_from(Level))


@pytest.mark.parametrize("index", range(len(PREDICATES)))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_translation_agrees_with_python(translations: dict[int, tuple[Translation, Any]],
                                        index: int, value: V) -> None:
    translation, typed = translations[index]
    real = call_predicate(translation.source, None, value).passed
    can_pass, can_fail = _z3_verdicts(translation, typed, value)
    assert (can_pass, can_fail) == (real, not real), (value, real)


# -- the traps, one by one ----------------------------------------------------------------


def _verdict(fn: Callable[[V], object], **fields: Any) -> tuple[bool, bool]:
    typed = TypeBuilder("input").build(type_spec(V))
    translation = translate(predicate_source(fn), [typed.value], None)
    assert translation.opaque is None, translation.opaque
    base: dict[str, Any] = {"i": 0, "j": 1, "f": 0.0, "s": "", "b": False}
    return _z3_verdicts(translation, typed, V(**{**base, **fields}))


def test_floor_division_and_modulo_follow_python_not_z3() -> None:
    assert _verdict(lambda v: v.i // v.j == -4, i=7, j=-2) == (True, False)  # z3 says -3
    assert _verdict(lambda v: v.i % v.j == -1, i=7, j=-2) == (True, False)  # z3 says 1
    assert _verdict(lambda v: v.i % v.j == 1, i=-7, j=2) == (True, False)


def test_division_by_zero_makes_the_predicate_fail() -> None:
    assert _verdict(lambda v: 10 // v.i > 0 or True, i=0) == (False, True)
    assert _verdict(lambda v: v.f / v.i >= 0 or True, i=0) == (False, True)
    assert _verdict(lambda v: v.i != 0 and 10 // v.i > 0, i=0) == (False, True)  # guarded


def test_negative_index_counts_from_the_end() -> None:
    assert _verdict(lambda v: v.s[-1] == "b", s="ab") == (True, False)  # SubString(s,-1,1)==""
    assert _verdict(lambda v: v.s[-3] == "a", s="ab") == (False, True)  # IndexError


def test_nan_and_infinity() -> None:
    assert _verdict(lambda v: v.f == v.f, f=math.nan) == (False, True)
    assert _verdict(lambda v: v.f > 1e308, f=math.inf) == (True, False)
    assert _verdict(lambda v: v.f - v.f == 0, f=math.inf) == (False, True)  # inf - inf = nan
    assert _verdict(lambda v: bool(v.f), f=math.nan) == (True, False)  # nan is truthy


def test_boolean_and_membership_are_not_evaluated_on_z3_objects() -> None:
    # Calling these on z3 values silently computes `r == b` and `False`.
    assert _verdict(lambda v: (v.i == v.j) and (v.i < v.j), i=1, j=1) == (False, True)
    assert _verdict(lambda v: v.i in [1, 2], i=2) == (True, False)


def test_a_predicate_returning_none_passes() -> None:
    assert _verdict(lambda v: re.search("z", v.s), s="ab") == (True, False)
    assert _verdict(lambda v: v.o, o=None) == (True, False)
    assert _verdict(lambda v: v.o, o=0) == (False, True)


def test_opaque_constructs_are_reported_with_a_reason() -> None:
    typed = TypeBuilder("input").build(type_spec(V))
    cases = {
        "call to print()": lambda v: print(v) or True,
        "str.lower()": lambda v: v.s.lower() == "a",
        "f-string": lambda v: f"{v.i}" == "1",
    }
    for reason, fn in cases.items():
        translation = translate(predicate_source(fn), [typed.value], None)
        assert translation.opaque is not None
        assert reason.split("(")[0].split("-")[0] in translation.opaque or "JoinedStr" in \
            translation.opaque, translation.opaque


# -- statements: early returns, guards, asserts, loops --------------------------------------


def early_return(v: V) -> bool:
    if v.i > 5:
        return True
    if v.i < 0:
        raise ValueError("negative")
    return v.j > 0


def guards_and_assert(v: V) -> None:
    """Only raises: returns None, which passes."""
    if not v.s.strip():
        raise ValueError("blank")
    assert v.j != 0, "j must not be zero"
    ratio = v.i // v.j
    if ratio > 2:
        raise ValueError(f"ratio {ratio} too high")


def loop_total(v: V) -> bool:
    total = 0
    for x in v.xs:
        if x < -2:
            raise ValueError("too small")
        total += x
    return total <= v.i


def loop_early_exit(v: V) -> bool:
    for x in v.xs:
        if x == v.j:
            return True
    return False


def nested(v: V) -> bool:
    if v.b:
        if v.o is None:
            return False
        label = "big" if v.o > 2 else "small"
    else:
        label = v.s
    return label in ("big", "a", "ab")


def tuple_assign(v: V) -> bool:
    low, high = min(v.i, v.j), max(v.i, v.j)
    high -= 1
    return low <= high


STATEMENTS = [early_return, guards_and_assert, loop_total, loop_early_exit, nested,
              tuple_assign]


@pytest.mark.parametrize("fn", STATEMENTS, ids=[f.__name__ for f in STATEMENTS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_statements_agree_with_python(fn: Callable[[V], object], value: V) -> None:
    typed = TypeBuilder("input").build(type_spec(V))
    translation = translate(predicate_source(fn), [typed.value], None)
    assert translation.opaque is None, translation.opaque
    real = call_predicate(translation.source, None, value).passed
    assert _z3_verdicts(translation, typed, value) == (real, not real), value
