"""The happy path's shortcuts (issue 31) give what the long way gives: a bare JSON
answer validated first reads as ``read_answer`` reads it, a pre-flight verdict kept
for every call is the one the full check gives, and the secret walk that moved into
``render`` still redacts every message an engine reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr, ValidationError, model_validator

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.contracts import call as call_module
from hoare.contracts.runtime import runtime_of
from hoare.declaration.models import read_answer
from hoare.engines import FunctionEngine, Request, Response
from hoare.errors import InvalidValue
from hoare.kernel import Verdict

FAST = {"delay": 0, "jitter": 0, "tries": 2}
SECRET = "hunter2-very-secret"
LIMIT = 10  # a module constant a post-condition reads


class Item(LLMDataModel):
    name: str = Field(min_length=1)
    count: int = Field(ge=0, le=100)


class Order(LLMDataModel):
    items: list[Item] = Field(max_length=3)
    note: str | None = None


class Ask(LLMDataModel):
    text: str
    limit: int = 5


@contract(remedy_retry_params=FAST, preflight=False)
class Ordering(Contract):
    prompt = "Order."

    def forward(self, input: Ask) -> Order:
        return self.contract_result


_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["name", "count", "items",
                                                             "note", "x"]),
                                            inner, max_size=4)),
    max_leaves=12)


def _answers() -> st.SearchStrategy[str]:
    """Answer texts that start with ``{`` and end with ``}`` (the shortcut's case):
    valid orders, near misses, objects followed by prose or by a second object, and
    broken JSON."""
    order = st.fixed_dictionaries({"items": st.lists(st.fixed_dictionaries(
        {"name": st.text(max_size=4), "count": st.integers(-3, 120)}), max_size=4)},
        optional={"note": st.one_of(st.none(), st.text(max_size=5))})
    texts = st.one_of(order.map(json.dumps), _JSON_VALUES.map(json.dumps))
    return st.one_of(
        texts,
        st.tuples(texts, st.sampled_from(["", " and {}", "} {", "\n{\"x\": 1}",
                                          " then {\"items\": []}"])).map("".join),
    ).filter(lambda text: text[:1] == "{" and text[-1:] == "}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_answers())
def test_a_bare_object_answer_reads_as_read_answer_reads_it(text: str) -> None:
    runtime = runtime_of(Ordering)
    spec = runtime.description.output
    try:
        expected: Any = read_answer(spec, text, "stop")
    except InvalidValue as error:
        with pytest.raises(InvalidValue) as raised:
            runtime.check_output(Response((text,), ("stop",)), Ask(text="t"))
        assert str(raised.value) == str(error)
        return
    found = runtime.check_output(Response((text,), ("stop",)), Ask(text="t"))
    assert type(found) is type(expected) and found == expected


def test_a_text_that_is_not_one_object_still_gives_its_leading_object() -> None:
    text = '{"items": []} (the order; no note) {}'
    assert text[:1] == "{" and text[-1:] == "}"
    with pytest.raises(ValidationError):
        Order.model_validate_json(text)
    found = runtime_of(Ordering).check_output(Response((text,), ("stop",)), Ask(text="t"))
    assert found == Order(items=[])


# -- the pre-flight verdict kept for every call ------------------------------------------

def _no_input_posts() -> type[Contract]:
    @contract(remedy_retry_params=FAST)
    class Plain(Contract):
        prompt = "Order."
        post_conditions = (Post(lambda order: len(order.items) <= 3, "few items"),)

        def forward(self, input: Ask) -> Order:
            return self.contract_result if self.contract_successful else Order(items=[])

    return Plain


def _input_posts() -> type[Contract]:
    @contract(remedy_retry_params=FAST)
    class Reads(Contract):
        prompt = "Order."

        def post(self, order: Order, ask: Ask) -> bool:
            return len(order.items) <= ask.limit

        def forward(self, input: Ask) -> Order:
            return self.contract_result if self.contract_successful else Order(items=[])

    return Reads


def _constant_posts() -> type[Contract]:
    @contract(remedy_retry_params=FAST)
    class ReadsConstant(Contract):
        prompt = "Order."

        def post(self, order: Order) -> bool:
            return len(order.items) <= LIMIT

        def forward(self, input: Ask) -> Order:
            return self.contract_result if self.contract_successful else Order(items=[])

    return ReadsConstant


@pytest.mark.parametrize("make", [_no_input_posts, _input_posts, _constant_posts])
def test_the_kept_verdict_is_the_full_check_s(make: Any) -> None:
    """Whatever the shortcut keeps, a fresh checker (no shortcut yet) agrees on every
    input; a verdict that depends on the input, or on a value that may change, is never
    kept."""
    cls = make()
    engine = FunctionEngine(lambda request: '{"items": []}')
    checker = runtime_of(cls).preflight_checker()
    if checker is None:
        pytest.skip("no pre-flight for this contract")
    for limit in (-1, 0, 2, 5):
        ask = Ask(text="t", limit=limit)
        instance = cls(engine=engine)
        instance(ask)
        kept = instance.contract_outcome.preflight
        fresh = type(checker)(checker.desc, checker.options)
        assert fresh.check(instance, ask).verdict is kept.verdict, limit
    if make is _no_input_posts:
        assert checker._constant is not None, "a verdict that holds for every call is kept"
        assert checker._constant.verdict is not Verdict.UNSATISFIABLE
    else:
        assert checker._constant is None


def test_a_changed_constant_is_seen_after_a_kept_verdict() -> None:
    """A post reading a module constant is never kept: when the constant makes every
    output impossible, the next call is refused (the stale check still runs)."""
    global LIMIT
    cls = _constant_posts()
    instance = cls(engine=FunctionEngine(lambda request: '{"items": []}'))
    instance(Ask(text="t"))
    assert instance.contract_outcome.preflight.verdict is not Verdict.UNSATISFIABLE
    saved, LIMIT = LIMIT, -1
    try:
        instance(Ask(text="t"))
        assert instance.contract_outcome.preflight.verdict is Verdict.UNSATISFIABLE
    finally:
        LIMIT = saved


# -- the secret walk, where its result is used ---------------------------------------------

class Inner(BaseModel):
    name: str = "x"


class SecretInner(Inner):
    password: SecretStr


class Holder(LLMDataModel):
    inner: Inner  # may hold a subclass instance with a secret: never a flat model


@contract(remedy_retry_params=FAST, preflight=False)
class Echo(Contract):
    prompt = "Echo."

    def forward(self, input: Holder) -> Item:
        return self.contract_result


def test_the_walk_runs_where_a_message_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request walks its input for secrets only where the result is used: when it
    quotes feedback, or when an engine reads its messages (``render``)."""
    walked: list[object] = []
    real = call_module.call_secrets

    def counting(value: object, flat: type | None) -> frozenset[str]:
        walked.append(value)
        return real(value, flat)

    monkeypatch.setattr(call_module, "call_secrets", counting)
    held = Holder(inner=SecretInner(password=SecretStr(SECRET)))
    silent = Echo(engine=FunctionEngine(lambda request: '{"name": "a", "count": 1}'))
    silent(held)
    assert silent.contract_successful
    assert walked == [], "no message rendered and no feedback: nothing to redact"
    seen: list[Request] = []

    def reading(request: Request) -> str:
        seen.append(request)
        assert all(SECRET not in m.content for m in request.messages)
        return f'{{"name": "", "count": 1, "echo": "{SECRET}"}}' if len(seen) == 1 \
            else '{"name": "a", "count": 1}'

    Echo(engine=FunctionEngine(reading))(held)
    assert len(seen) == 2 and walked, "the rendered requests walked their input"
    assert all(SECRET not in text for request in seen for text in request.feedback)
    assert all(SECRET not in m.content for request in seen for m in request.messages)


class Shouting(LLMDataModel):
    """An output model with its own ``model_validate_json``: the answer's shortcut to the
    compiled validator must not skip it."""

    word: str

    @classmethod
    def model_validate_json(cls, json_data: Any, **kwargs: Any) -> Shouting:
        found = super().model_validate_json(json_data, **kwargs)
        return cls(word=found.word.upper())


def test_an_output_model_s_own_model_validate_json_is_honoured() -> None:
    @contract(remedy_retry_params=FAST)
    class Shout(Contract[Ask, Shouting]):
        prompt = "shout"

        def forward(self, input: Ask) -> Shouting:
            return self.contract_result

    runtime = runtime_of(Shout)
    assert runtime.output_json is None  # the override is seen at decoration
    assert Shout(engine=FunctionEngine(lambda r: '{"word": "hi"}'))(Ask(text="t")) == \
        Shouting(word="HI")
    assert runtime_of(Ordering).output_json is Order.__pydantic_validator__


class Limits(LLMDataModel):
    """An input model with constraints ``model_construct`` can bypass."""

    name: str = Field(min_length=1, max_length=5)
    count: int = Field(ge=0, le=100)
    ratio: float = Field(ge=0.0, le=1.0)
    tags: list[str] = Field(default_factory=list, max_length=2)


def _limits_contract() -> Any:
    @contract(remedy_retry_params=FAST)
    class Limited(Contract[Limits, Item]):
        prompt = "p"

        def forward(self, input: Limits) -> Item:
            return self.contract_result

    return Limited


_values = st.fixed_dictionaries({
    "name": st.one_of(st.text(max_size=7), st.integers(), st.none()),
    "count": st.one_of(st.integers(-5, 105), st.floats(allow_nan=True), st.text(max_size=2)),
    "ratio": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-1, 2)),
    "tags": st.one_of(st.lists(st.text(max_size=2), max_size=4), st.none()),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values, st.sampled_from(["construct", "validate", "dict"]))
def test_the_input_shortcut_checks_as_the_long_way(values: dict[str, Any], how: str) -> None:
    """An input of exactly the declared model goes straight to its validator
    (``Runtime.input_validator``): the same value, or the same error, as
    ``TypeSpec.validate`` gives, for instances built any way (unvalidated too)."""
    if how == "construct":
        raw: Any = Limits.model_construct(**values)
    elif how == "validate":
        try:
            raw = Limits(**values)
        except ValidationError:
            return
    else:
        raw = dict(values)
    fast = runtime_of(_limits_contract())
    slow = runtime_of(_limits_contract())
    slow.input_ready, slow.input_validator = True, None  # the long way only
    try:
        expected = slow.check_input(raw)
    except InvalidValue as error:
        with pytest.raises(InvalidValue) as raised:
            fast.check_input(raw)
        assert str(raised.value) == str(error)
        return
    found = fast.check_input(raw)
    assert type(found) is type(expected) is Limits and found == expected
    assert found is not raw  # a validated copy, never the caller's object
    assert (fast.input_ready and fast.input_validator is not None) or how == "dict"



class Positive(LLMDataModel):
    n: int = Field(gt=0)


class _Counting:
    """A validator that counts its runs and hands each to the real one."""

    def __init__(self, real: Any) -> None:
        self.real, self.runs = real, 0

    def validate_python(self, value: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.real.validate_python(value, **kwargs)


def test_a_refused_input_is_validated_once() -> None:
    """The input shortcut's refusal is the refusal, in the long way's words: the input's
    validator runs once per check, accepted or refused, not again to word the error."""
    @contract(remedy_retry_params=FAST)
    class Once(Contract[Positive, Item]):
        prompt = "p"

        def forward(self, input: Positive) -> Item:
            return Item(name="x")

    runtime = runtime_of(Once)
    spec = runtime.description.input
    real = spec.instance_validator()
    assert real is not None
    counting = _Counting(real)
    vars(spec)["_instance_boundary"] = counting  # what validate and the shortcut use
    runtime.input_ready = False
    assert runtime.check_input(Positive.model_construct(n=3)) == Positive(n=3)
    assert counting.runs == 1
    with pytest.raises(InvalidValue) as refused:
        runtime.check_input(Positive.model_construct(n=-1))
    assert counting.runs == 2
    runtime.input_ready, runtime.input_validator = True, None  # the long way only
    with pytest.raises(InvalidValue) as long_way:
        runtime.check_input(Positive.model_construct(n=-1))
    assert str(refused.value) == str(long_way.value)


class CountedAnswer(LLMDataModel):
    """An output model whose (before) validator counts the texts it is given."""

    n: int = Field(gt=0)

    @model_validator(mode="before")
    @classmethod
    def counted(cls, data: Any) -> Any:
        ANSWERS_SEEN.append(data)
        return data


ANSWERS_SEEN: list[Any] = []


@pytest.mark.parametrize("text", ['{"n": -1}', '{"n": "x"}', '{"m": 1}'])
def test_a_refused_answer_is_validated_once(text: str) -> None:
    """A bare JSON answer refused by the shortcut is not validated again by
    ``read_answer`` (its first candidate is that very text), and the refusal reads as
    ``read_answer`` words it."""
    @contract(remedy_retry_params=FAST)
    class Answering(Contract[Ask, CountedAnswer]):
        prompt = "p"

        def forward(self, input: Ask) -> CountedAnswer:
            return self.contract_result

    runtime = runtime_of(Answering)
    ANSWERS_SEEN.clear()
    with pytest.raises(InvalidValue) as refused:
        runtime.check_output(Response((text,), ("stop",)), Ask(text="t"))
    assert len(ANSWERS_SEEN) == 1, ANSWERS_SEEN
    with pytest.raises(InvalidValue) as direct:
        read_answer(runtime.description.output, text, "stop")
    assert str(refused.value) == str(direct.value)
