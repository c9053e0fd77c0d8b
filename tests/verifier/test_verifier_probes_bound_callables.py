"""Outside-reviewer probes: predicates that are bound callables (issue 29).

Class: the source of a bound method (``Post(checker.check)``, ``Post(Rules.check)`` on
a classmethod) lists a first parameter, ``self`` or ``cls``, that the call does not
pass. ``no_such_field`` took it for the output and reported ``self.limit`` as an
attribute ``Out`` does not have: a false ``fail`` on a contract that works. The
parameters of a bound callable now start after the bound one, as Python calls it;
an attribute the output really lacks is still reported.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from hoare import Contract, Post, contract, verify


class In(BaseModel):
    d: int = 0


class Out(BaseModel):
    n: int = Field(ge=0, le=10)


class Checker:
    limit = 5

    def below(self, o: Out) -> bool:
        return o.n < self.limit

    def above_half(self, o: Out, i: In) -> bool:
        return o.n * 2 > self.limit + i.d

    @classmethod
    def at_most(cls, o: Out) -> bool:
        return o.n <= cls.limit

    def misspelt(self, o: Out) -> bool:
        return bool(o.nn < self.limit)  # type: ignore[attr-defined]  # the typo under test


def _verify(condition: Any) -> dict[str, str]:
    @contract(post_remedy=False)
    class C(Contract[In, Out]):
        prompt = "p"
        post_conditions = [Post(condition, "a bound callable")]

        def forward(self, input: In) -> Out:
            result: Out = self.contract_result
            return result

    return {c.kind: c.status for c in verify(C).contracts[0].checks}


def _bound(name: str, limit: int) -> Any:
    checker = Checker()
    checker.limit = limit
    return Checker.at_most if name == "at_most" else getattr(checker, name)


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["below", "above_half", "at_most"]), limit=st.integers(1, 10),
       n=st.integers(0, 10))
def test_a_bound_callable_that_passes_is_not_failed(name: str, limit: int, n: int) -> None:
    condition = _bound(name, limit)
    output = Out(n=n)
    arguments = (output, In()) if name == "above_half" else (output,)
    if not condition(*arguments):
        return
    statuses = _verify(condition)
    assert "fail" not in statuses.values(), (name, limit, statuses)


@pytest.mark.parametrize("name", ["below", "at_most"])
def test_the_minimized_probe(name: str) -> None:
    statuses = _verify(_bound(name, 5))
    assert "no_such_field" not in statuses, statuses


def test_a_misspelt_field_in_a_bound_method_is_still_reported() -> None:
    """No false unknown: the check still reads past the bound parameter."""
    assert _verify(Checker().misspelt).get("no_such_field") == "fail"
