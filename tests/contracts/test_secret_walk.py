"""Every secret a call holds is found, wherever it hides (spec §8.4): the walk behind
redaction looks into models and their extra fields, dataclasses, mapping keys and
values, lists, tuples, sets and deques, at any depth, through cycles, for
``SecretStr``, ``SecretBytes`` and ``Secret[T]``; and a contract never shows such a
secret in a violation, whatever the input's shape."""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Secret, SecretBytes, SecretStr

from hoare import Contract, LLMDataModel, Post, contract
from hoare.declaration.models import secret_values
from hoare.engines import FunctionEngine


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = "n"


class Holder(BaseModel):
    value: Any = None


@dataclasses.dataclass
class Box:
    value: Any


def _wrap(kind: str, inner: object) -> object:
    if kind == "list":
        return [1, inner, "x"]
    if kind == "tuple":
        return ("x", inner)
    if kind == "set":
        return {inner} if _hashable(inner) else [inner]
    if kind == "frozenset":
        return frozenset({inner}) if _hashable(inner) else (inner,)
    if kind == "dict_value":
        return {"k": inner}
    if kind == "dict_key":
        return {inner: 1} if _hashable(inner) else {"k": inner}
    if kind == "deque":
        return deque([inner])
    if kind == "dataclass":
        return Box(inner)
    if kind == "model_any":
        return Holder(value=inner)
    if kind == "model_extra":
        return Loose(extra_field=inner)
    raise AssertionError(kind)


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


KINDS = ["list", "tuple", "set", "frozenset", "dict_value", "dict_key", "deque",
         "dataclass", "model_any", "model_extra"]
secrets = st.one_of(
    st.text(min_size=1, max_size=12).map(lambda t: ("s" + t, SecretStr("s" + t))),
    st.binary(min_size=1, max_size=8).map(
        lambda b: (("b" + b.hex()), SecretBytes(("b" + b.hex()).encode()))),
    st.integers(10**6, 10**9).map(lambda n: (str(n), Secret[int](n))),
)


@given(secret=secrets, shape=st.lists(st.sampled_from(KINDS), min_size=0, max_size=60))
def test_a_secret_is_found_in_any_nesting(secret: tuple[str, object],
                                          shape: list[str]) -> None:
    text, value = secret
    nested: object = value
    for kind in shape:
        nested = _wrap(kind, nested)
    assert text in secret_values(nested)


def test_a_secret_below_any_depth_bound_is_found() -> None:
    nested: object = SecretStr("deep-secret")
    for _ in range(5000):
        nested = [nested]
    assert secret_values(nested) == {"deep-secret"}


def test_a_cycle_ends_the_walk() -> None:
    loop: list[object] = [SecretStr("in-a-cycle")]
    loop.append(loop)
    table: dict[str, object] = {"self": None, "s": SecretStr("too")}
    table["self"] = table
    assert secret_values(loop, table) == {"in-a-cycle", "too"}


class Request_(LLMDataModel):
    model_config = ConfigDict(extra="allow")
    text: str


class Answer(LLMDataModel):
    text: str


@contract(remedy_retry_params={"tries": 1, "delay": 0})
class Echo(Contract[Request_, Answer]):
    prompt = "Echo."

    def pre(self, request: Request_) -> bool:
        token = (request.model_extra or {})["token"]
        raise ValueError(f"refused token {token.get_secret_value()}")

    def forward(self, request: Request_) -> Answer:
        return Answer(text="fallback")


def test_a_secret_in_an_extra_field_never_reaches_a_violation() -> None:
    """The contract's fast path may skip the walk for flat inputs; an ``extra="allow"``
    model is never flat, so the secret in its extra field is redacted."""
    echo = Echo(engine=FunctionEngine(lambda request: '{"text": "t"}'))
    echo(Request_(text="hi", token=SecretStr("tok-SECRET-42")))
    shown = " ".join(v.message for v in echo.contract_outcome.violations)
    assert "refused token" in shown
    assert "tok-SECRET-42" not in shown


class Keyed(LLMDataModel):
    text: str
    key: SecretStr


class Reply(LLMDataModel):
    text: str


@contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0}, preflight=False)
class EchoKey(Contract):
    """Its engine echoes the key into answers that fail their check."""

    prompt = "Answer without the key."
    post_conditions = (Post(lambda reply: len(reply.text) < 3, "a short text"),)

    def forward(self, keyed: Keyed) -> Reply:
        return Reply(text="fallback")


@given(key=st.text(st.characters(min_codepoint=33, max_codepoint=0x10FFFF,
                                 exclude_categories=("Cs",)), min_size=6, max_size=20),
       shape=st.sampled_from(["json", "prose"]))
def test_an_answer_echoing_the_secret_is_redacted_in_every_attempt(key: str, shape: str
                                                                   ) -> None:
    """The raw answers an outcome keeps (``attempts[i].raw``) are redacted as its
    messages are: an engine echoing the input's secret does not show it there
    (before: every failed attempt's raw answer held it as the engine wrote it)."""
    import json

    def answer(request: object) -> str:
        return json.dumps({"text": f"the key is {key}"}) if shape == "json" \
            else f"I will not answer, the key is {key}"

    echo = EchoKey(engine=FunctionEngine(answer))
    echo(Keyed(text="hi", key=SecretStr(key)))
    outcome = echo.contract_outcome
    assert outcome is not None and not outcome.success and len(outcome.attempts) == 2
    for attempt in outcome.attempts:
        assert key not in " ".join(getattr(attempt.raw, "texts", (str(attempt.raw),)))
