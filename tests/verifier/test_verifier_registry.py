"""Every call the translator models agrees with Python, and every one is tested.

Differential tests: for each registered construct (``hoare.verifier.translate.calls``), a few
small predicates using it are translated once; hypothesis generates values, each
is bound to the symbolic input, and z3 is asked whether the predicate can pass
and whether it can fail. For an ``exact`` construct Python's verdict (calling
the predicate for real: a raise is a failure) must be the only possible one; for
an ``over`` construct it must be among the possible ones. Lists are generated
past the verifier's element slots, so the havoc of ``over`` constructs is
exercised too.

Coverage: a test module declares the registry keys it tests differentially in a
module-level ``COVERS`` set; the union over ``tests/test_verifier_*.py`` must be
exactly the set of registered keys (see ``calls/registry.py``).
"""

from __future__ import annotations

import enum
import functools
import importlib
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from verifier_support import predicate_source, z3_verdicts

from hoare.declaration.models import type_spec
from hoare.verifier.search.concrete import bind
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.calls import function, markdown_table, method, registered, reset
from hoare.verifier.translate.predicates import Translation, translate
from hoare.verifier.translate.types import TypeBuilder


class Color(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class V(BaseModel):
    i: int
    j: int
    f: float
    s: str
    b: bool
    o: int | None = None
    xs: list[int] = Field(default_factory=list)  # 3 slots: longer lists are havoc
    tp: tuple[int, ...] = ()
    c: Color = Color.RED


NUMBERS = (int, float)


@dataclass(frozen=True)
class Case:
    key: str  # the registry key the predicate exercises
    fn: Callable[[V], object]


CASES: list[Case] = [
    Case("abs", lambda v: abs(v.f) > 2),
    Case("abs", lambda v: abs(v.i) < 3),
    Case("abs", lambda v: abs(v.s) == 1),  # TypeError
    Case("abs", lambda v: abs(v.o) > 1),  # TypeError on None
    Case("int", lambda v: int(v.f) == 2),  # nan: ValueError, inf: OverflowError
    Case("int", lambda v: int(v.f) == -1),  # truncates towards zero
    Case("int", lambda v: int(v.b) + int(v.i) > 1),
    Case("float", lambda v: float(v.i) / 2 == 1.5),
    Case("float", lambda v: float(v.f) == v.f),
    Case("float", lambda v: float(v.b) > 0.5),
    Case("bool", lambda v: bool(v.s)),
    Case("bool", lambda v: bool(v.o) or bool()),  # noqa: UP018
    Case("bool", lambda v: bool(v.f)),
    Case("bool", lambda v: bool(v.xs) == (v.i > 0)),
    Case("str", lambda v: str(v.i) == "-12"),
    Case("str", lambda v: str(v.i).startswith("-")),
    Case("str", lambda v: str(v.o) == "None"),
    Case("str", lambda v: str(v.b) == "True" and str(v.s) == v.s),
    Case("isinstance", lambda v: isinstance(v.o, int)),
    Case("isinstance", lambda v: isinstance(v.b, int) and not isinstance(v.i, bool)),
    Case("isinstance", lambda v: isinstance(v.c, str) == isinstance(v.f, float)),
    Case("isinstance", lambda v: isinstance(v.xs, (tuple, str)) or v.i > 0),
    Case("isinstance", lambda v: isinstance(v.o, NUMBERS) or v.i > 0),
    Case("math.isnan", lambda v: math.isnan(v.f)),
    Case("math.isnan", lambda v: math.isnan(v.i) or v.i > 2),
    Case("math.isnan", lambda v: math.isnan(v.o)),  # TypeError on None
    Case("math.isinf", lambda v: math.isinf(v.f) and v.f > 0),
    Case("math.isinf", lambda v: not math.isinf(v.i)),
    Case("math.isfinite", lambda v: math.isfinite(v.f) and v.f > 1),
    Case("math.isfinite", lambda v: math.isfinite(v.b)),
    Case("len", lambda v: len(v.s) == 2),
    Case("len", lambda v: len(v.xs) > 3),
    Case("len", lambda v: len([x for x in v.xs if x > 0]) == 2),
    Case("len", lambda v: len(v.i) == 1),  # TypeError
    Case("len", lambda v: len(v.tp) + len((1, v.i)) == 3),
    Case("all", lambda v: all(x > 0 for x in v.xs)),
    Case("all", lambda v: all(v.xs)),
    Case("all", lambda v: all(10 // x > 1 for x in v.xs)),  # ZeroDivisionError
    Case("any", lambda v: any(x == v.i for x in v.xs)),
    Case("any", lambda v: any([v.b, v.s])),
    Case("any", lambda v: any(x > 1 for x in v.tp)),
    Case("sum", lambda v: sum(v.xs) == v.i),
    Case("sum", lambda v: sum(x for x in v.xs if x > 0) > 2),
    Case("sum", lambda v: sum(v.tp, 10) > 10),
    Case("sum", lambda v: sum(v.xs, v.f) > 1),
    Case("min", lambda v: min(v.xs) < 0),  # empty: ValueError
    Case("min", lambda v: min(v.xs, default=5) < 3),
    Case("min", lambda v: min(v.i, v.j, 3) == v.j),
    Case("min", lambda v: min(v.f, 0.5) == v.f),
    Case("max", lambda v: max(v.xs) > 2),
    Case("max", lambda v: max(v.tp, default=-9) == -9),
    Case("max", lambda v: max(v.f, 1.0) == 1.0),
    Case("max", lambda v: max(v.i, v.j) == v.i),
    Case("list.count", lambda v: v.xs.count(1) == 2),
    Case("list.count", lambda v: [v.i, v.j, 1].count(v.j) >= 2),
    Case("tuple.count", lambda v: v.tp.count(1) == 1),
    Case("tuple.count", lambda v: (v.i, v.j, 1).count(1) == 2),
    Case("str.strip", lambda v: v.s.strip() == ""),
    Case("str.strip", lambda v: v.s.strip() == "a"),
    Case("str.strip", lambda v: len(v.s) - len(v.s.strip()) >= 2),
    Case("str.strip", lambda v: bool(v.s.strip())),
    Case("str.lstrip", lambda v: v.s.lstrip() == "a "),
    Case("str.lstrip", lambda v: not v.s.lstrip()),
    Case("str.rstrip", lambda v: v.s.rstrip() == " a"),
    Case("str.rstrip", lambda v: v.s.lstrip() == v.s.rstrip()),
    Case("str.startswith", lambda v: v.s.startswith(("a", "b"))),
    Case("str.startswith", lambda v: v.s.startswith(v.c.value)),
    Case("str.startswith", lambda v: v.c.startswith("r")),  # a str enum member
    Case("str.startswith", lambda v: v.s.startswith(v.o)),  # TypeError
    Case("str.endswith", lambda v: v.s.endswith("b")),
    Case("str.endswith", lambda v: v.s.endswith(("a ", ""))),
    Case("str.find", lambda v: v.s.find("b") == 1),
    Case("str.find", lambda v: v.s.find("") == 0 and v.s.find("ab") < 0),
    Case("str.index", lambda v: v.s.index("a") >= 0),  # ValueError
    Case("str.index", lambda v: v.s.index("b") == 1),
    Case("str.removeprefix", lambda v: v.s.removeprefix("a") == "b"),
    Case("str.removeprefix", lambda v: v.s.removeprefix("") == v.s),
    Case("str.removesuffix", lambda v: v.s.removesuffix("b") == "a"),
    Case("str.removesuffix", lambda v: v.s.removesuffix(v.s) == ""),
    Case("re.match", lambda v: re.match("a+b", v.s)),
    Case("re.match", lambda v: re.match("[ab]", v.s) is None),
    Case("re.search", lambda v: re.search("[a-z]+", v.s)),
    Case("re.search", lambda v: re.search("b$", v.s) is not None),
    Case("re.fullmatch", lambda v: re.fullmatch("a[b ]*", v.s) is not None),
    Case("re.fullmatch", lambda v: re.fullmatch("(ab)*", v.s)),
]

COVERS = frozenset(case.key for case in CASES)




@functools.cache
def _translation(index: int) -> tuple[Translation, Any]:
    """The translation of ``CASES[index]`` and the symbolic input it reads."""
    typed = TypeBuilder("input").build(type_spec(V))
    return translate(predicate_source(CASES[index].fn), [typed.value], None), typed


def test_every_case_is_translated_through_its_registry_entry() -> None:
    for index, case in enumerate(CASES):
        translation, _ = _translation(index)
        assert translation.opaque is None, (case.key, translation.opaque)
        assert case.key in translation.constructs, (case.key, translation.constructs)


def _possible(translation: Translation, typed: Any, value: V) -> tuple[bool, bool]:
    """(can pass, can fail) for this concrete value."""
    return z3_verdicts(translation, bind(typed.value, value))


# Floats without rounding (quarters) plus the special values; strings over a small
# alphabet with whitespace, so that affixes, strips and patterns hit often.
floats = st.one_of(st.integers(-16, 16).map(lambda n: n / 4),
                   st.sampled_from([math.nan, math.inf, -math.inf, -0.0]))
ints = st.integers(-13, 13)
values = st.builds(
    V, i=ints, j=st.integers(-4, 4), f=floats,
    s=st.text(alphabet="ab \t", max_size=4), b=st.booleans(),
    o=st.one_of(st.none(), st.integers(-5, 5)),
    xs=st.lists(st.integers(-3, 3), max_size=5),
    tp=st.lists(st.integers(-2, 2), max_size=3).map(tuple),
    c=st.sampled_from(Color))


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[f"{c.key}-{i}" for i, c in enumerate(CASES)])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_translation_agrees_with_python(index: int, value: V) -> None:
    translation, typed = _translation(index)
    real = call_predicate(translation.source, None, value).passed
    can_pass, can_fail = _possible(translation, typed, value)
    if registered()[CASES[index].key].precision == "exact":
        assert (can_pass, can_fail) == (real, not real), (value, real)
    else:  # an over-approximation: Python's verdict is among the possible ones
        assert can_pass if real else can_fail, (value, real)


# -- coverage ---------------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent  # tests/verifier/


def _declared_coverage() -> dict[str, frozenset[str]]:
    """Module name → the ``COVERS`` set of every verifier test module declaring one."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    out = {}
    for path in sorted(TESTS.glob("test_verifier_*.py")):
        if "COVERS" not in path.read_text(encoding="utf-8"):
            continue
        module = sys.modules.get(path.stem) or importlib.import_module(path.stem)
        covers = getattr(module, "COVERS", None)
        if covers is not None:
            out[path.stem] = frozenset(covers)
    return out


def test_every_registered_construct_has_a_differential_test() -> None:
    declared = _declared_coverage()
    assert __name__.rsplit(".", 1)[-1] in declared
    covered = frozenset().union(*declared.values())
    untested = sorted(set(registered()) - covered)
    unknown = {name: sorted(keys - set(registered())) for name, keys in declared.items()
               if keys - set(registered())}
    assert not untested, f"registered without a differential test (COVERS): {untested}"
    assert not unknown, f"COVERS names keys that are not registered: {unknown}"


def test_unregistered_calls_are_opaque_and_say_where() -> None:
    typed = TypeBuilder("input").build(type_spec(V))
    cases = {
        "call to print() in": lambda v: print(v) or True,
        "call to math.floor() in": lambda v: math.floor(v.f) == 1,
        "str.lower() in": lambda v: v.s.lower() == "a",
        "int.bit_length() in": lambda v: v.i.bit_length() == 1,
        "list.index() in": lambda v: v.xs.index(1) == 0,
        "set.count() in": lambda v: {v.i}.count(1) == 0,  # sets have no count()
    }
    for expected, fn in cases.items():
        translation = translate(predicate_source(fn), [typed.value], None)
        assert translation.opaque is not None, expected
        assert expected in translation.opaque and '"the predicate"' in translation.opaque, \
            translation.opaque


def test_registered_calls_used_outside_their_model_are_opaque() -> None:
    typed = TypeBuilder("input").build(type_spec(V))
    for fn in (lambda v: v.s.strip("a") == "", lambda v: min(v.xs, key=abs) == 1,
               lambda v: re.match(v.s, "a"), lambda v: re.search("a", v.s, re.I),
               lambda v: isinstance(v.i, 3), lambda v: len(v.s, v.s) == 1):
        translation = translate(predicate_source(fn), [typed.value], None)
        assert translation.opaque is not None and '"the predicate"' in translation.opaque, \
            translation.opaque


def test_the_soundness_table_lists_every_construct_once_with_its_precision() -> None:
    rows = markdown_table().splitlines()[2:]
    keys = [row.split("`")[1] for row in rows]
    assert keys == sorted(registered()) and len(set(keys)) == len(keys)
    for row, key in zip(rows, keys, strict=True):
        assert f"| {registered()[key].precision} |" in row
        assert registered()[key].precision in ("exact", "over")


def test_a_construct_cannot_be_registered_twice_or_without_a_precision() -> None:
    before = dict(registered())
    with pytest.raises(ValueError, match="registered twice"):
        function(object(), "len", precision="exact")(lambda t, call: None)  # type: ignore
    with pytest.raises(ValueError, match="precision"):
        method("str", "casefold", precision="under")(lambda t, r, call: None)  # type: ignore
    assert registered() == before


def test_reset_forgets_the_registrations_and_the_next_use_registers_every_family_again() -> None:
    before = dict(registered())
    extra = object()
    function(extra, "test.extra", precision="exact")(lambda t, call: None)  # type: ignore[arg-type,return-value]  # a handler is never called here
    assert "test.extra" in registered()
    reset()
    typed = TypeBuilder("input").build(type_spec(V))
    translation = translate(predicate_source(lambda v: len(v.s) > 0), [typed.value], None)
    assert translation.opaque is None and "len" in translation.constructs  # a lookup registers
    assert dict(registered()) == before  # the families again, without the extra handler
