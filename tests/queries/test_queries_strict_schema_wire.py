"""An answer type whose defaults JSON cannot carry (``nan``, ``inf``, inside lists,
dicts and nested models) still goes out, on a real server (127.0.0.1, the real
``openai`` client), as strict JSON, for a query and for a contract; a default the
schema shows is the field's real default, read back from JSON. The default is left
out, never sent as ``NaN`` nor as ``null`` in its place; validation is unchanged.

Failing before: httpx refuses to encode ``NaN``, so every request of such a query or
contract failed before it was sent (three attempts spent, no request), and a list
default ``[inf]`` was shown as ``[null]``."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, completion
from pydantic import BaseModel, Field, create_model

from hoare import Contract, contract
from hoare.declaration.models import type_spec
from hoare.queries import Query

specials = st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1.5, 0.0])
defaults = st.one_of(
    specials.map(lambda v: (float, v)),
    st.lists(specials, max_size=3).map(lambda v: (list[float], v)),
    st.dictionaries(st.sampled_from("ab"), specials, max_size=2).map(
        lambda v: (dict[str, float], v)),
    st.tuples(specials, specials).map(lambda v: (tuple[float, float], v)),
)


class Point(BaseModel):
    x: float = 0.0


def answer_type(fields: list[tuple[Any, Any]]) -> type[BaseModel]:
    made: dict[str, Any] = {f"f{i}": (kind, Field(default=value))
                            for i, (kind, value) in enumerate(fields)}
    made["where"] = (Point, Field(default=Point(x=math.nan)))
    return create_model("Answer", **made)


def same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float):
        return (math.isnan(left) and math.isnan(right)) or (
            left == right and math.copysign(1, left) == math.copysign(1, right))
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, BaseModel):
        return same(left.model_dump(), right)
    return bool(left == right)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(defaults, min_size=1, max_size=3))
def test_a_schema_is_strict_json_and_its_defaults_are_the_real_ones(
        fields: list[tuple[Any, Any]]) -> None:
    model = answer_type(fields)
    schema = type_spec(model).schema
    json.dumps(schema, allow_nan=False)
    for name, shown in schema["properties"].items():
        if "default" in shown:
            assert same(model.model_fields[name].default, shown["default"]), name


@pytest.fixture(scope="module")
def server() -> Any:
    with OpenAIServer() as running:
        yield running


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(defaults, min_size=1, max_size=3))
def test_a_query_and_a_contract_reach_the_server(server: Any,
                                                 fields: list[tuple[Any, Any]]) -> None:
    model = answer_type(fields)

    @dataclass
    class Ask(Query[model]):  # type: ignore[valid-type]  # a generated answer type
        """Answer."""

        n: int

    @contract(remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0}, policy="enforce")
    class Asked(Contract):
        prompt = "Answer."

        def forward(self, n: int) -> model:  # type: ignore[valid-type]  # generated
            return self.contract_result  # type: ignore[no-any-return]  # the answer

    sent = len(server.bodies)
    server.push(completion("{}"), completion("{}"))
    assert isinstance(Ask(1).run(server.engine()), model)
    assert isinstance(Asked(engine=server.engine())(1), model)
    bodies = server.bodies[sent:]
    assert len(bodies) == 2
    for body in bodies:
        json.dumps(body, allow_nan=False)
