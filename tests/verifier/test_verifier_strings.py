"""Strings against real Python: Unicode ``str`` tests, ``strip``, constants, and the
astral twins that keep string variables sound although z3 stops at U+2FFFF.

Differential: each ``str`` method predicate is translated and solved on a
generated value (ASCII, non-ASCII, astral); astral characters are given to z3
as their twins (``unicode_classes``), Python sees the original. Exact methods
must agree; approximated ones must allow Python's answer.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from verifier_support import predicate_source, z3_verdicts

from hoare.declaration.models import type_spec
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate import unicode_classes as uc
from hoare.verifier.translate.calls import registered
from hoare.verifier.translate.predicates import Translation, translate
from hoare.verifier.translate.types import TypeBuilder
from hoare.verifier.translate.values import Unrepresentable, decode_z3_string, str_val

EXAMPLES = 200 if os.environ.get("HOARE_NIGHTLY") else 25
METHODS = uc.STR_TESTS
COVERS = {f"str.{name}" for name in METHODS} | {"str.strip", "str.lstrip", "str.rstrip"}


class S(BaseModel):
    s: str


# -- the twin argument, over all of Unicode ----------------------------------------------
def test_every_astral_signature_has_its_reserved_twins() -> None:
    """Each signature an astral character has is the signature of ``TWIN_POOL``
    reserved characters ≤ U+2FFFF (the renaming the soundness argument needs)."""
    counts = uc.twin_counts()
    assert counts, "no astral signature found"
    assert all(n >= uc.TWIN_POOL for n in counts.values()), counts
    below = {sig for _a, _b, sig in uc._signature_runs(0, uc.MAX_CHAR)}
    assert uc.astral_signatures() <= below


def test_reserved_twins_are_not_constants() -> None:
    for lo, _hi in uc.RESERVED:
        with pytest.raises(Unrepresentable):
            str_val("a" + chr(lo))
    with pytest.raises(Unrepresentable):
        str_val("\U0010ffff")
    assert str_val("\U0002fff0" if not uc.is_reserved(0x2FFF0) else "\u0663") is not None


@functools.cache
def _twin_of(code: int) -> int:
    signature = uc.signature(code)
    for lo, hi in uc.RESERVED:
        for twin in range(lo, hi + 1):
            if uc.signature(twin) == signature:
                return twin
    raise AssertionError(f"no twin for U+{code:X}")


def twin(text: str) -> str:
    """``text`` with each astral character renamed to a twin (injective per
    signature is not needed here: one value, no equalities between values)."""
    return "".join(chr(_twin_of(ord(c))) if ord(c) > uc.MAX_CHAR else c for c in text)


# -- generated text ---------------------------------------------------------------------------
_INTERESTING = ("a", "Z", "5", " ", "\t", "\n", "_", "\u0663", "\u00b2", "\u2167", "\u00bd",
                "\u01c5", "\u00df", "\u0130", "\u03a3", "\u03c2", "\u0300", "\u00a0", "\u2028",
                "\u3000", "\u1680", "\x1c", "\x85", "\u200b", "\ufeff", "\U0001d7d8",
                "\U00010400", "\U00010428", "\U0001f600", "\U00030000", "\U000e0041",
                "\U000e0100", "\U000f0000", "\U0010fffd", "\U00031350")
texts = st.lists(st.one_of(st.sampled_from(_INTERESTING),
                           st.characters(codec="utf-8"),
                           st.characters(min_codepoint=0x30000, max_codepoint=0x10FFFF)),
                 max_size=5).map("".join)


def _raw(text: str) -> z3.SeqRef:
    """A z3 string of ``text`` (≤ U+2FFFF), reserved characters allowed: a *value*
    may hold them, only constants of the translation may not."""
    return z3.StringVal("".join(f"\\u{{{ord(c):x}}}" for c in text))




_PREDICATES: dict[str, Callable[[S], object]] = {
    "isdecimal": lambda x: x.s.isdecimal(), "isdigit": lambda x: x.s.isdigit(),
    "isnumeric": lambda x: x.s.isnumeric(), "isalpha": lambda x: x.s.isalpha(),
    "isalnum": lambda x: x.s.isalnum(), "isspace": lambda x: x.s.isspace(),
    "isupper": lambda x: x.s.isupper(), "islower": lambda x: x.s.islower(),
    "istitle": lambda x: x.s.istitle(), "isprintable": lambda x: x.s.isprintable(),
    "isascii": lambda x: x.s.isascii(),
    "strip": lambda x: x.s.strip() == "a", "lstrip": lambda x: x.s.lstrip() == "a ",
    "rstrip": lambda x: bool(x.s.rstrip()),
}


@functools.cache
def _translation(name: str) -> tuple[Translation, Any]:
    typed = TypeBuilder("input").build(type_spec(S))
    return translate(predicate_source(_PREDICATES[name]), [typed.value], None), typed


def _possible(name: str, value: S) -> tuple[bool, bool]:
    translation, typed = _translation(name)
    assert translation.opaque is None, translation.opaque
    return z3_verdicts(translation, [typed.value.fields["s"].e == _raw(twin(value.s))],
                       timeout_ms=30_000)


@pytest.mark.parametrize("name", sorted(_PREDICATES))
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=texts)
def test_str_method_agrees_with_python(name: str, text: str) -> None:
    value = S(s=text)
    translation, _ = _translation(name)
    real = call_predicate(translation.source, None, value).passed
    twin_real = call_predicate(translation.source, None, S(s=twin(text))).passed
    assert real == twin_real, "a twin behaves differently from its astral character"
    can_pass, can_fail = _possible(name, value)
    key = f"str.{name}"
    if registered()[key].precision == "exact":
        assert (can_pass, can_fail) == (real, not real), (text, real)
    else:
        assert can_pass if real else can_fail, (text, real)


@pytest.mark.parametrize("name", ["space", "decimal", "word"])
def test_fast_scans_are_the_str_tests(name: str) -> None:
    assert uc.class_ranges(name, uc.LAST_CODE_POINT) == \
        uc._ranges_where(uc._STR_TESTS[name], uc.LAST_CODE_POINT)


def test_exact_methods_are_the_small_classes() -> None:
    assert {name for name in METHODS if uc.method_is_exact(name)} == uc.EXACT_METHODS


def test_unicode_digit_is_a_digit() -> None:
    """Regression: an ASCII model of isdigit() refuses '٣' (the only answer here)."""
    assert _possible("isdigit", S(s="\u0663")) == (True, False)
    assert _possible("isdecimal", S(s="\u0663\u0664")) == (True, False)
    assert _possible("isspace", S(s="\u3000")) == (True, False)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=texts)
def test_constants_round_trip_or_are_unrepresentable(text: str) -> None:
    if any(uc.is_reserved(ord(c)) for c in text):
        with pytest.raises(Unrepresentable):
            str_val(text)
        return
    value = z3.simplify(str_val(text))
    assert decode_z3_string(value.as_string()) == text
    assert z3.simplify(z3.Length(value)).as_long() == len(text)



def test_string_ordering_above_every_z3_character_is_not_refuted() -> None:
    """Python orders a character above U+2FFFF after every character z3 has: an ordering
    that only such a character satisfies is possible, never refuted."""
    from pydantic import Field
    from test_verifier_types import contract_on, pre_status

    from hoare import Pre

    class Short(BaseModel):
        s: str = Field(max_length=3)

    above = contract_on(Short, Pre(lambda m: len(m.s) == 1 and m.s > "\U0002FFFF"))
    assert pre_status(above)[0] != "fail"
    two = contract_on(Short, Pre(lambda m: len(m.s) == 2 and m.s[0] > "\U0002F000"
                                 and m.s[1] > m.s[0]))
    assert pre_status(two)[0] != "fail"

    class Letters(BaseModel):
        s: str = Field(pattern="^[a-z]{1,3}$")

    # strings without astral characters keep their exact order: a contradiction is found
    assert pre_status(contract_on(Letters, Pre(lambda m: m.s > "b" and m.s < "a")))[0] == "fail"
    assert pre_status(contract_on(Letters, Pre(lambda m: m.s > "b" and m.s < "d")))[0] == "pass"
