"""A count a policy or a selector takes (``max_requests``, ``num_completions``,
``tries``, ``top_logprobs``, ``take(k)``, ``most_similar(k)``, ``closest(k)``) is a
whole number: ``True``, ``1.0``, ``nan``, ``inf`` and negative numbers are refused
when given, by the same rule everywhere, never taken as 1 nor failing later, when
examples are chosen.

Failing before: ``max_requests=True`` and ``top_logprobs=True`` ran as 1, ``take(1.5)``
and ``most_similar(nan)`` were accepted and failed with a ``TypeError`` at selection."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.engines.testing import DummyEngine
from hoare.errors import UsageError
from hoare.queries import Query, classify, closest, few_shot, most_similar, take


@dataclass
class Pick(Query[Literal["a", "b"]]):
    """Pick."""

    n: int


not_counts = st.one_of(st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
                       st.integers(max_value=-1), st.text(max_size=2), st.none())


def refused(call: Any) -> bool:
    try:
        call()
    except (UsageError, ValueError):
        return True
    return False


@settings(max_examples=60, deadline=None)
@given(not_counts)
def test_every_count_refuses_what_is_not_a_whole_number(value: Any) -> None:
    engine = DummyEngine("a")
    assert refused(lambda: take(value))
    assert refused(lambda: most_similar(value))
    assert refused(lambda: closest(value, lambda texts: [(1.0,)] * len(texts)))
    assert refused(lambda: classify(Pick(1), engine, top_logprobs=value))
    if value is not None:  # None is "no cap"
        assert refused(lambda: next(iter(few_shot(Pick(1), engine, max_requests=value))))
    for key in ("num_completions", "tries"):
        assert refused(lambda key=key: next(iter(few_shot(Pick(1), engine,
                                                          **{key: value}))))


@pytest.mark.parametrize("k", [0, 1, 3])
def test_whole_numbers_are_taken(k: int) -> None:
    assert take(k)(None, list(range(5))) == list(range(k))
    assert math.isfinite(k)
