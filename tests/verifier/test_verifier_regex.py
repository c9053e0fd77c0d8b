"""Regex translation against what really validates: a pydantic model with
``Field(pattern=p)`` under the Rust engine (the default) and under
``regex_engine='python-re'``, and Python's ``re.search/match/fullmatch``.

Generated small patterns (classes, nested classes, escapes, anchors, quantifiers,
alternation, flags) and generated strings (ASCII, non-ASCII, astral, newlines).
Untranslated: skipped, but a pattern the engine rejects must never be
translated. Exact translations must agree; approximated ones must bracket.
"""

from __future__ import annotations

import functools
import os
import re
import warnings

import pytest
import z3
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from test_verifier_strings import _raw, twin

from hoare.verifier.translate.regex import RegexTranslation, field_pattern, translate_pattern

EXAMPLES = 400 if os.environ.get("HOARE_NIGHTLY") else 60

_ATOMS = ["a", "b", "1", "_", "-", " ", "é", "\u0663", ".", r"\d", r"\w", r"\s", r"\D", r"\W",
          r"\S", r"\.", r"\-", r"\n", r"\x41", r"\u0663", "[a-c]", "[^a]", "[[a-c]]",
          r"[\d_]", r"[^\s]", "[a-]", "[]a]"] * 3 + [
          r"\b", r"\<", r"[\w&&b]", "[:a:]", r"\p{L}", r"\U00030000", "\U00030000",
          "\U0002ffc0", "(?=a)", "{", "]"]
_PREFIX = ["", "", "", "^", "^", r"\A", "(?i)", "(?s)"]
_SUFFIX = ["", "", "", "$", "$", r"\z", r"\Z", "$\n"]
_QUANT = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "{,2}", "*?", "++", "{2}{1}"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    def piece(depth: int) -> str:
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            inner = "|".join(piece(depth + 1) for _ in range(draw(st.integers(1, 2))))
            body = draw(st.sampled_from(["(", "(?:"])) + inner + ")"
        else:
            body = "".join(draw(st.sampled_from(_ATOMS))
                           for _ in range(draw(st.integers(1, 2))))
        return body + draw(st.sampled_from(_QUANT))

    alternatives = [draw(st.sampled_from(_PREFIX)) + piece(0) + draw(st.sampled_from(_SUFFIX))
                    for _ in range(draw(st.integers(1, 2)))]
    return "|".join(alternatives)


_CHARS = ("a", "b", "c", "A", "1", "_", "-", " ", "\n", "\t", "é", "\u0663", "\u0300",
          "\u00b2", "\u3000", "[", "]", "<", ".", "\U00030000", "\U00031350", "\U0001d7d8",
          "\U000e0100", "\U0010fffd")
texts = st.lists(st.one_of(st.sampled_from(_CHARS), st.characters(codec="utf-8")),
                 max_size=5).map("".join)


@functools.cache
def _model(pattern: str, engine: str) -> type[BaseModel] | None:
    """The model pydantic builds for ``pattern`` under ``engine``; None if it refuses."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)

            class M(BaseModel):
                model_config = ConfigDict(regex_engine=engine)  # type: ignore[typeddict-item]
                x: str = Field(pattern=pattern)
    except Exception:
        return None
    return M


def _accepts(model: type[BaseModel], text: str) -> bool:
    try:
        model(x=text)
    except ValidationError:
        return False
    return True


def _member(regex: z3.ReRef, text: str) -> bool:
    solver = z3.Solver()
    solver.set("timeout", 30_000)
    s = z3.String("s")
    solver.add(s == _raw(twin(text)), z3.InRe(s, regex))
    answer = solver.check()
    assert answer != z3.unknown, solver.reason_unknown()
    return answer == z3.sat


def _agrees(translation: RegexTranslation, real: bool, text: str) -> None:
    assert translation.regex is not None and translation.under is not None
    over = _member(translation.regex, text)
    if translation.exact:
        assert over == real, (text, real)
    else:
        assert over or not real, ("over-approximation excludes", text)
        assert real or not _member(translation.under, text), ("under-approximation", text)


@pytest.mark.parametrize("engine", ["rust-regex", "python-re"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(pattern=patterns(), text=texts)
def test_field_pattern_agrees_with_pydantic(engine: str, pattern: str, text: str) -> None:
    translation = field_pattern(pattern, engine)
    model = _model(pattern, engine)
    if model is None:
        assert translation.regex is None, "translated a pattern the engine rejects"
        return
    assume(translation.regex is not None)
    twin_real = _accepts(model, twin(text))
    real = _accepts(model, text)
    assert real == twin_real, "an astral character and its twin differ"
    _agrees(translation, real, text)


@pytest.mark.parametrize("mode", ["search", "match", "fullmatch"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(pattern=patterns(), text=texts)
def test_python_re_calls_agree(mode: str, pattern: str, text: str) -> None:
    translation = translate_pattern(pattern, "python-re", mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            compiled = re.compile(pattern)
    except re.error:
        assert translation.regex is None
        return
    assume(translation.regex is not None)
    real = getattr(compiled, mode)(text) is not None
    _agrees(translation, real, text)


@pytest.mark.parametrize(("pattern", "engine", "text"), [
    ("[[a-c]]", "rust-regex", "b"),  # a nested class in Rust, not '[' then ']'
    (r"^\d+$", "rust-regex", "\u0663"),
    (r"^\d+$", "python-re", "\u0663"),
    ("a$", "python-re", "a\n"),  # Python's $ matches before a final newline
    (r"^\w+$", "python-re", "\u00e9t\u00e9"),
])
def test_regressions_are_accepted(pattern: str, engine: str, text: str) -> None:
    model = _model(pattern, engine)
    assert model is not None and _accepts(model, text)
    translation = field_pattern(pattern, engine)
    assert translation.regex is not None, translation.reason
    assert _member(translation.regex, text)


@pytest.mark.parametrize(("pattern", "engine"), [
    (r"\<a", "rust-regex"), (r"\<a", "python-re"), ("(?=a)a", "python-re"),
    (r"a\Z", "rust-regex"), (r"a\z", "python-re"), ("[\\w&&b]", "rust-regex"),
    ("\U00030000", "python-re"), ("[a-\U00030000]", "rust-regex"), ("(?i)a", "python-re"),
])
def test_unsupported_or_rejected_is_not_translated(pattern: str, engine: str) -> None:
    assert field_pattern(pattern, engine).regex is None


def test_a_compiled_pattern_runs_on_python_re_and_flags_are_opaque() -> None:
    assert field_pattern("a", "python-re", re.IGNORECASE | re.UNICODE).regex is None
    assert field_pattern("a", "python-re", re.compile("a").flags).regex is not None


# -- whole contracts: the old translation refused these valid inputs ------------------------
def test_contracts_needing_unicode_or_nested_classes_are_not_refused() -> None:
    from test_verifier_types import contract_on, pre_status

    from hoare.declaration.conditions import Pre

    class Nested(BaseModel):
        code: str = Field(pattern=r"^[[a-c]]$")  # Rust: one of a, b, c

    class Digits(BaseModel):
        model_config = ConfigDict(regex_engine="python-re")
        n: str = Field(pattern=r"^\d$")

    class Dollar(BaseModel):
        model_config = ConfigDict(regex_engine="python-re")
        line: str = Field(pattern=r"^ok$")

    assert pre_status(contract_on(Nested, Pre(lambda m: m.code == "b")))[0] == "pass"
    assert pre_status(contract_on(Digits, Pre(lambda m: m.n != "0" and not m.n.isascii()))
                      )[0] == "pass"
    assert pre_status(contract_on(Dollar, Pre(lambda m: m.line == "ok\n")))[0] == "pass"
    assert pre_status(contract_on(Dollar, Pre(lambda m: m.line == "ok\n\n")))[0] == "fail"


# -- re.* calls inside predicates, through the translator ----------------------------------
_RE_PREDICATES = {
    "search-word": lambda x: re.search(r"^\w+$", x.s) is not None,
    "match-digits": lambda x: re.match(r"\d+", x.s) is not None,
    "fullmatch-dot": lambda x: re.fullmatch(r"a.\W", x.s) is not None,
}


@functools.cache
def _re_translation(name: str) -> tuple[object, object]:
    from test_verifier_strings import S

    from hoare.declaration.description import PredicateSource
    from hoare.declaration.models import type_spec
    from hoare.verifier.translate.predicates import translate
    from hoare.verifier.translate.types import TypeBuilder

    typed = TypeBuilder("input").build(type_spec(S))
    source = PredicateSource("p", "p", "the predicate", _RE_PREDICATES[name], "pre", False,
                             False, None)
    return translate(source, [typed.value], None), typed


@pytest.mark.parametrize("name", sorted(_RE_PREDICATES))
@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(text=texts)
def test_re_calls_in_predicates_allow_pythons_answer(name: str, text: str) -> None:
    from test_verifier_strings import S

    from hoare.verifier.search.witness import call_predicate

    translation, typed = _re_translation(name)
    assert translation.opaque is None, translation.opaque  # type: ignore[attr-defined]
    real = call_predicate(translation.source, None, S(s=text)).passed  # type: ignore[attr-defined]
    possible = []
    for goal in (translation.passes(), translation.fails()):  # type: ignore[attr-defined]
        solver = z3.Solver()
        solver.set("timeout", 30_000)
        solver.add(typed.value.fields["s"].e == _raw(twin(text)),  # type: ignore[attr-defined]
                   *translation.defs, goal)  # type: ignore[attr-defined]
        answer = solver.check()
        assert answer != z3.unknown
        possible.append(answer == z3.sat)
    assert possible[0] if real else possible[1], (text, real)
    if all(ord(c) <= 0xFF for c in text):  # exact on Latin-1
        assert possible == [real, not real], (text, real)
