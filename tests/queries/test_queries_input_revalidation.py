"""A query's fields are a contract's input: every model instance in them is validated
again before the query runs (``QueryRuntime.validate``), however the caller built it,
as ``TypeSpec.validate`` does for a contract (tests/declaration/test_input_revalidation.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fuzz.values import ints
from hypothesis import given, settings
from pydantic import BaseModel, Field, ValidationError

from hoare import ContractViolationError
from hoare.engines.base import Request, Response, Usage
from hoare.kernel import ViolationKind
from hoare.queries import Query
from hoare.queries.query import runtime_of


class Inner(BaseModel):
    x: int = Field(ge=0, le=3)


class LooseInner(Inner):
    x: int = -5


@dataclass
class Double(Query[int]):
    """Double it."""

    inner: Inner
    many: list[Inner]


class Counting:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        return Response(texts=("2",), usage=Usage(1, 1, 1))

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


@pytest.mark.parametrize("query", [
    Double(Inner.model_construct(x=-5), []),
    Double(LooseInner(), []),
    Double(Inner(x=1), [Inner.model_construct(x=9)]),
], ids=["model_construct", "loose subclass", "in a list"])
def test_a_query_holding_an_instance_that_breaks_its_constraints_never_runs(
        query: Double) -> None:
    with pytest.raises(ValidationError):
        runtime_of(Double).validate(query)
    engine = Counting()
    with pytest.raises(ContractViolationError) as raised:
        query.run(engine)
    assert engine.requests == []
    outcome = raised.value.outcome
    assert outcome is not None
    assert [v.kind for v in outcome.violations] == [ViolationKind.TYPE]


@settings(max_examples=200, deadline=None)
@given(x=ints())
def test_generated_instances_reach_the_query_only_inside_the_constraints(x: int) -> None:
    query = Double(Inner(x=0), [Inner.model_construct(x=x)])
    try:
        seen = runtime_of(Double).validate(query)
    except ValidationError:
        assert not 0 <= x <= 3
        return
    assert 0 <= x <= 3 and type(seen.many[0]) is Inner and seen.many[0].x == x
