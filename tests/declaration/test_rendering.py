"""A valid input is rendered into its prompt whatever it holds (``TypeSpec.dump_json``).

pydantic accepts, in an ``Any`` field or a ``list[Any]``, values its JSON serialiser
cannot write: a foreign object, bytes that are not UTF-8, lone surrogates, a list that
holds itself, nesting 100,000 deep, ``nan``, an int of 5,000 digits, objects whose
dunders raise. Rendering one used to raise inside every attempt, so a contract failed
on an input it had accepted. Now the text is always JSON, and never shows a secret.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretBytes, SecretStr

from hoare import Contract, LLMDataModel, contract
from hoare.declaration.models import type_spec
from hoare.engines import FunctionEngine
from hoare.engines.base import Request


class Raises(Exception):
    pass


def _raise(*_args: object) -> Any:
    raise Raises("a foreign dunder")


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> list[object]:
    loop: list[object] = [1]
    loop.append(loop)
    return loop


ODD: dict[str, Any] = {
    "object": object,
    "bytes_not_utf8": lambda: b"\xff\xfe",
    "lone_surrogate": lambda: "a\ud800b",
    "max_code_point": lambda: "\U0010ffff",
    "cycle": _cycle,
    "nested_100000": lambda: _nested(100_000),
    "nan": lambda: float("nan"),
    "minus_zero": lambda: -0.0,
    "int_5000_digits": lambda: 10**5000,
    "set": lambda: {1, 2},
    "complex": lambda: 1j,
    "deque": lambda: deque([1]),
    "dunders_raise": lambda: type("Hostile", (), {
        "__repr__": _raise, "__str__": _raise, "__iter__": _raise, "__len__": _raise,
        "__class__": property(_raise), "__eq__": _raise, "__hash__": _raise})(),
    "secret": lambda: SecretStr("the-secret-text"),
    "secret_bytes": lambda: SecretBytes(b"the-secret-text"),
}


class Holder(BaseModel):
    value: Any = None
    more: list[Any] = []


class Entry(LLMDataModel):
    value: Any = None


def _shapes(value: object) -> list[tuple[Any, object]]:
    return [(list[Any], [value, 1]), (dict[str, Any], {"k": value}), (Any, value),
            (Holder, Holder(value=value, more=[value])),
            (Holder, Holder.model_construct(value={"deep": [value]}))]


@settings(max_examples=80, deadline=None)
@given(names=st.lists(st.sampled_from(sorted(ODD)), min_size=1, max_size=3))
def test_every_valid_value_is_rendered_as_json_without_its_secrets(names: list[str]) -> None:
    value: object = [ODD[name]() for name in names]
    for annotation, given_value in _shapes(value):
        spec = type_spec(annotation)
        validated = spec.validate(given_value)  # pydantic accepts it
        text = spec.dump_json(validated)
        assert type(text) is str
        json.loads(text, parse_int=str)  # JSON (NaN included; ints beyond int() too)
        assert "the-secret-text" not in text
        json.dumps(spec.dump(validated))  # dump: JSON-compatible too


@contract(policy="enforce", remedy_retry_params={"tries": 1, "delay": 0})
class Rendered(Contract[Entry, Entry]):
    prompt = "Echo."

    def forward(self, value: Entry) -> Entry:
        return value


def _reads_its_messages(request: Request) -> str:
    assert "Input" in request.messages[-1].content
    return '{"value": 1}'


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(ODD)))
def test_a_contract_renders_an_input_json_cannot_hold(name: str) -> None:
    """The engine reads the rendered messages (as every real engine does): the call
    succeeds instead of failing every attempt on the rendering."""
    instance = Rendered(engine=FunctionEngine(_reads_its_messages))
    instance(Entry(value=[ODD[name]()]))
    assert instance.contract_successful
