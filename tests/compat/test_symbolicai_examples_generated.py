"""``generate_example_json`` is a placeholder instance, with pydantic as the oracle:
for generated field types (nested lists, sets, tuples, dicts, optionals, unions,
``Annotated``, ``NewType``, enums, literals, nested and recursive models, dates,
``Decimal``, ``UUID``), the example ``instruct_llm`` shows the model validates as the
model it describes, from its JSON. (Constraints such as ``min_length`` are SymbolicAI's
placeholders' blind spot and are not drawn.)

Failing before: ``Annotated[int, ...]`` and ``NewType`` fields got ``"example_value"``
(a string where the schema asks an integer), as did dates, ``Decimal`` and ``UUID``."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import uuid
from typing import Annotated, Any, Literal, NewType, Optional, Union

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, create_model

from hoare.compat.symbolicai import LLMDataModel

UserId = NewType("UserId", int)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1


class Inner(LLMDataModel):
    a: int
    tags: list[str] = []


class Tree(LLMDataModel):
    child: Optional[Tree] = None  # noqa: UP045  # SymbolicAI's users write Optional
    n: int


LEAVES = [int, str, float, bool, type(None), Color, Level, Inner, Tree, Literal["x", 1],
          Literal[True], Any, bytes, Annotated[int, "meta"],
          Annotated[str, Field(description="d")], Annotated[float, Field(title="t")], UserId,
          datetime.date, datetime.datetime, decimal.Decimal, uuid.UUID, frozenset[int],
          dict, list, tuple]


def wrap(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    pair = st.tuples(inner, inner)
    return st.one_of(
        inner.map(lambda a: list[a]), inner.map(lambda a: tuple[a, ...]),
        inner.map(lambda a: dict[str, a]), inner.map(lambda a: dict[int, a]),
        inner.map(lambda a: Optional[a]),  # noqa: UP045
        inner.map(lambda a: Annotated[a, "m"]),
        pair.map(lambda p: tuple[p[0], p[1]]), pair.map(lambda p: Union[p[0], p[1]]))  # noqa: UP007


annotations = st.recursive(st.sampled_from(LEAVES), wrap, max_leaves=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(annotations, min_size=1, max_size=3))
def test_the_example_validates_as_its_model(fields: list[Any]) -> None:
    try:
        model = create_model("Generated", __base__=LLMDataModel,
                             **{f"f{i}": (t, ...) for i, t in enumerate(fields)})
    except Exception:  # a combination pydantic refuses (a set of models): not a model
        return
    example = model.generate_example_json()
    assert model.instruct_llm()
    model.model_validate_json(json.dumps(example, default=str))
