"""classify reads numbers from the server (issue 30): log-probabilities of any size,
NaN, infinities and non-numbers never raise, and the distribution is the exact softmax
over the finite answer set, computed stably (the largest term subtracted first)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_queries import Mood

from hoare.engines.base import Response, TokenLogprob, Usage
from hoare.engines.testing import DummyEngine
from hoare.errors import UsageError
from hoare.queries import NoLogprobs, classify, distribution_of

VALUES = ["alpha", "beta", "gamma"]
TOKENS = ["alpha", "beta", "gamma", "al", " Beta", "zzz", "", "a"]
ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.floats(-1e6, 1e6), st.integers(-10**400, 10**400),
                       st.sampled_from([1000.0, -1000.0, 709.8, -745.2, 1e308, -1e308]))
FOREIGN = st.one_of(ANY_NUMBER, st.none(), st.text(max_size=3), st.booleans())


def _exact(values: list[str], tokens: list[tuple[str, float]]) -> dict[str, float] | None:
    """The distribution the module docstring defines, in exact rational arithmetic over
    the finite log-probabilities (shifted by their max, so exp stays in range)."""
    from hoare.queries.classify import _normal

    texts = [_normal(v) for v in values]
    seen: set[str] = set()
    shares: list[tuple[int, float, int]] = []  # (value, logprob, ways it is shared)
    for token, logprob in tokens:
        key = _normal(token)
        if not key or key in seen:
            continue
        seen.add(key)
        matches = [i for i, text in enumerate(texts) if text.startswith(key)]
        shares += [(i, logprob, len(matches)) for i in matches]
    if not shares:
        return None
    top = max(logprob for _, logprob, _ in shares)
    mass = [Fraction(0)] * len(values)
    for i, logprob, ways in shares:
        mass[i] += Fraction(math.exp(logprob - top)) / ways
    total = sum(mass)
    return {v: float(m / total) for v, m in zip(values, mass, strict=True)}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TOKENS), st.floats(-800, 800)), max_size=8),
       st.floats(-1e4, 1e4))
def test_the_distribution_is_the_exact_softmax_and_shift_invariant(
        tokens: list[tuple[str, float]], shift: float) -> None:
    got = distribution_of(VALUES, tokens)
    expected = _exact(VALUES, tokens)
    if expected is None:
        assert got == {}
        return
    assert got == pytest.approx(expected, abs=1e-9)
    assert math.fsum(got.values()) == pytest.approx(1.0)
    # a log-probability is defined up to the normalising constant: +1000 or -1000 alike
    shifted = distribution_of(VALUES, [(t, lp + shift) for t, lp in tokens])
    assert shifted == pytest.approx(got, abs=1e-6)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.sampled_from(TOKENS), st.integers(), st.none()),
                          FOREIGN), max_size=8),
       st.one_of(st.just(1.0), st.floats(0, 100), st.just(1e-310), st.just(0.0)))
def test_any_number_from_the_server_gives_a_distribution_or_none(
        tokens: list[tuple[Any, Any]], temperature: float) -> None:
    """NaN, infinities, huge ints, None, text or bools as log-probabilities, and tokens
    that are not strings: never an exception; a distribution sums to 1 with every
    probability in [0, 1]."""
    got = distribution_of(VALUES, tokens, temperature)  # type: ignore[arg-type]
    if got:
        assert set(got) == set(VALUES)
        assert all(0.0 <= p <= 1.0 for p in got.values())
        assert math.fsum(got.values()) == pytest.approx(1.0)


def test_an_infinite_logprob_takes_all_the_mass_and_nan_tells_nothing() -> None:
    assert distribution_of(VALUES, [("alpha", math.inf), ("beta", 0.0)]) == {
        "alpha": 1.0, "beta": 0.0, "gamma": 0.0}
    assert distribution_of(VALUES, [("alpha", math.nan), ("beta", -1.0)]) == {
        "alpha": 0.0, "beta": 1.0, "gamma": 0.0}
    assert distribution_of(VALUES, [("alpha", -math.inf)]) == {}
    with pytest.raises(UsageError, match="temperature"):
        distribution_of(VALUES, [("alpha", 0.0)], temperature="hot")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="bias"):
        distribution_of(VALUES, [("alpha", 0.0)], bias=("alpha", "half"))  # type: ignore[arg-type]


def test_classify_survives_an_engine_reporting_a_logprob_of_plus_1000() -> None:
    """It raised OverflowError (math.exp(1000)) after the answer was accepted. (The
    OpenAI engine now refuses such logprobs itself; any other engine passes them on.)"""
    top = (("pos", 1000.0), ("neg", 999.0), ("neu", -1000.0))

    engine = DummyEngine(Response(("positive",), ("stop",), Usage(1, 1, 1), "m",
                                  logprobs=((TokenLogprob("pos", 1000.0, top),),)))
    result = classify(Mood("Great kettle"), engine, top_logprobs=3)
    assert result.value == "positive"
    assert result.distribution["positive"] == pytest.approx(1 / (1 + math.exp(-1)))
    assert result.distribution["negative"] == pytest.approx(1 / (1 + math.e))


@pytest.mark.parametrize("entry", [object(), TokenLogprob("pos", -0.1, 5)])  # type: ignore[arg-type]
def test_malformed_logprobs_from_an_engine_are_a_clear_error(entry: object) -> None:
    """A custom engine's logprobs are foreign data: a malformed entry is NoLogprobs
    naming the problem, not a TypeError from inside classify."""
    engine = DummyEngine(Response(("positive",), ("stop",), Usage(1, 1, 1), "m",
                                  logprobs=((entry,),)))  # type: ignore[arg-type]
    with pytest.raises(NoLogprobs, match="malformed"):
        classify(Mood("Great kettle"), engine, top_logprobs=3)
