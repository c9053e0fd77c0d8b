"""The default instance prompt shows the model the values the query holds, with the
YAML reader as the oracle: generated field values (nested lists, tuples and dicts of
floats with ``nan``/``inf``/``-0.0``, text to U+10FFFF, ``None``) read back from the
prompt equal to the query's own; a value pydantic cannot dump (bytes that are not
UTF-8, an object whose ``repr`` raises) is shown, never an error; the examples' cache
key tells ``nan`` from ``None``.

Failing before: a ``nan`` or ``inf`` inside a ``list``/``dict``/``Any`` field was shown
as ``null`` (pydantic's JSON mode), so the model saw a value the query does not hold,
and ``b"\\xff"`` or an object of a class pydantic has no schema for made the query fail
before any request."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.engines.base import Response
from hoare.engines.function import FunctionEngine
from hoare.queries import Query, get_text
from hoare.queries.templates import fields_of, render


@dataclass
class Holds(Query[str]):
    """Say ok."""

    data: Any
    xs: list[float]
    __parser__ = get_text


floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [math.nan, math.inf, -math.inf, -0.0])
texts = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                              exclude_categories=("Cs",)), max_size=8)
leaves = st.none() | st.booleans() | st.integers() | floats | texts
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) |
                      st.tuples(inner, inner) |
                      st.dictionaries(texts, inner, max_size=3), max_leaves=12)


def same(left: Any, right: Any) -> bool:
    """Equal as the model reads it: a tuple is a list, ``nan`` equals ``nan``, the sign
    of a zero counts."""
    if isinstance(left, float) and isinstance(right, float):
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, st.lists(floats, max_size=4))
def test_the_instance_prompt_reads_back_as_the_query(data: Any, xs: list[float]) -> None:
    shown = yaml.safe_load(render(Holds(data, xs), "instance", {}))
    assert same(shown["data"], data), (shown["data"], data)
    assert same(shown["xs"], xs)


class Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@given(st.sampled_from([b"\xff\xfe", Unshowable(), {"k": Unshowable()}, [b"\x80"]]))
@settings(max_examples=10, deadline=None)
def test_a_value_pydantic_cannot_dump_is_shown_and_the_query_runs(value: Any) -> None:
    seen: list[str] = []

    def answer(request: Any) -> Response:
        seen.append(request.messages[-1].content)
        return Response(texts=("ok",))

    assert Holds(value, []).run(FunctionEngine(answer)) == "ok"
    assert seen and "data:" in seen[0]


def test_the_key_of_a_query_tells_nan_from_none() -> None:
    def key(data: Any) -> str:
        return json.dumps(fields_of(Holds(data, [])), sort_keys=True, default=str)

    assert key([math.nan]) != key([None])
    assert key({"a": math.inf}) != key({"a": None})
