"""The declaration boundary against real pydantic and foreign objects.

Real pydantic is the oracle: what ``TypeAdapter(annotation)`` accepts, ``TypeSpec``
accepts as the same value of the same type, and what it refuses with a
``ValidationError`` is refused so too, whatever the value's dunders do. Foreign objects
whose dunders raise (``__class__``, ``__eq__``, ``__repr__``, a ``__getattr__`` that
answers every name…) reach the boundary as inputs, as values inside inputs, as
predicates and as a condition's arguments: each is refused with a clear error or
handled, never lets its own exception escape from hoare's bookkeeping.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from decimal import Decimal
from typing import Any, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from hoare import Contract, LLMDataModel, contract
from hoare.declaration.conditions import Post, Pre
from hoare.declaration.models import format_validation_error, safe_repr, secret_values, type_spec
from hoare.engines import FunctionEngine
from hoare.errors import ContractDefinitionError


class Dunder(Exception):
    """What a hostile object's dunder raises."""


DUNDERS = ("__eq__", "__hash__", "__bool__", "__len__", "__iter__", "__repr__", "__str__",
           "__format__", "__getattr__", "__class__", "__index__", "__float__", "__int__",
           "__getattribute__", "__dict__", "__wrapped__", "__signature__", "__call__")


def _raise(*_args: object, **_kwargs: object) -> Any:
    raise Dunder("a hostile dunder")


def hostile_class(names: frozenset[str], callable_: bool = False) -> type:
    """A class whose dunders ``names`` raise (properties for the attributes Python reads
    as data: ``__class__``, ``__dict__``, ``__wrapped__``, ``__signature__``)."""
    namespace: dict[str, Any] = {}
    for name in names:
        if name in ("__class__", "__dict__", "__wrapped__", "__signature__"):
            namespace[name] = property(_raise)
        elif name == "__getattribute__":
            def read(self: object, attribute: str) -> Any:
                if attribute.startswith("__") and attribute != "__call__":
                    raise Dunder(attribute)
                return object.__getattribute__(self, attribute)
            namespace[name] = read
        elif name != "__call__":
            namespace[name] = _raise
    if callable_:
        namespace["__call__"] = _raise if "__call__" in names else (lambda self, *a: True)
    return type("Hostile", (), namespace)


dunder_sets = st.frozensets(st.sampled_from(DUNDERS), min_size=1)


@pytest.fixture(autouse=True)
def _quiet_unraisable(monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic-core (the oracle and hoare's validators alike) reports a hostile
    ``__class__`` it swallowed as "unraisable", with the object's repr, which raises
    here: pytest's reporter would fail on that repr. Not an error of the code tested."""
    monkeypatch.setattr(sys, "unraisablehook", lambda _unraisable: None)


class Model(BaseModel):
    a: Any = None


class Typed(TypedDict):
    a: Any


@dataclasses.dataclass
class Data:
    a: Any


ANNOTATIONS: list[Any] = [int, float, str, bool, bytes, list[int], Any, object, Model,
                          list[Any], dict[str, Any], Optional[Model], Typed, Data,  # noqa: UP045
                          tuple[Any, ...], frozenset[int], Union[int, Model]]  # noqa: UP007


def _verdict(validate: Any, value: object) -> tuple[str, object]:
    try:
        seen = validate(value)
    except ValidationError:
        return "refused", None
    except Exception as error:  # the verdict compared, whatever it is
        return "raised", type(error)
    return "accepted", type(seen)


@settings(max_examples=60, deadline=None)
@given(names=dunder_sets)
def test_a_hostile_value_is_accepted_or_refused_as_pydantic_does(names: frozenset[str]
                                                                 ) -> None:
    """Alone, in a list, in a dict and inside a model built without validation."""
    value = hostile_class(names)()
    for annotation, shape in itertools.product(ANNOTATIONS, range(4)):
        given_value = [value, [value], {"a": value}, Model.model_construct(a=value)][shape]
        if shape == 3 and annotation is not Model:
            continue  # another model's instance is dumped first (TypeSpec.validate)
        expected = _verdict(TypeAdapter(annotation).validate_python, given_value)
        if expected[0] == "raised":  # pydantic itself lets the dunder's error through
            continue
        seen = _verdict(type_spec(annotation).validate, given_value)
        assert seen == expected, (annotation, shape, sorted(names))


MEMBERS: list[Any] = [int, float, str, bool, bytes, Decimal, type(None), list[int]]
VALUES: list[object] = ["1", 1, 1.0, True, b"1", "1.5", 1.5, [1], None, "true", 0, "0.0",
                        Decimal("2"), -0.0, 10**30, "\U0010ffff"]


@settings(max_examples=80, deadline=None)
@given(members=st.lists(st.sampled_from(MEMBERS), min_size=2, max_size=3, unique=True),
       value=st.sampled_from(VALUES), nested=st.booleans())
def test_every_order_of_a_union_validates_as_pydantic(members: list[Any], value: object,
                                                      nested: bool) -> None:
    """``int | float == float | int`` for ``typing``, not for pydantic, which tries the
    members in order: each order gets its own validation (``type_spec`` once cached the
    first order it saw for every other)."""
    for order in itertools.permutations(members):
        annotation: Any = Union[order]  # noqa: UP007
        given_value: object
        if nested:
            annotation, given_value = list[annotation], [value]
        else:
            given_value = value
        expected = _verdict(TypeAdapter(annotation).validate_python, given_value)
        try:
            seen: object = type_spec(annotation).validate(given_value)
        except ValidationError:
            assert expected[0] == "refused", (annotation, value)
            continue
        oracle = TypeAdapter(annotation).validate_python(given_value)
        assert expected[0] == "accepted" and seen == oracle, (annotation, value)
        assert repr(seen) == repr(oracle), (annotation, value)  # 1 is not 1.0


@settings(max_examples=60, deadline=None)
@given(names=dunder_sets, secret=st.text(min_size=1, max_size=12))
def test_the_secret_walk_reads_past_hostile_neighbours(names: frozenset[str],
                                                       secret: str) -> None:
    value = hostile_class(names)()
    found = secret_values([value, {"k": value}, Model.model_construct(a=[value]),
                           SecretStr(secret)])
    assert secret in found


def _contract_with(conditions: object, where: str = "pre") -> Any:
    class In(LLMDataModel):
        a: int = 0

    class Out(LLMDataModel):
        text: str = ""

    namespace = {"prompt": "p", f"{where}_conditions": conditions,
                 "forward": lambda self, i: Out(), "__module__": __name__}
    namespace["forward"].__annotations__ = {"i": In, "return": Out}
    cls = type("Hostile", (Contract,), namespace)
    return contract()(cls), In


@settings(max_examples=60, deadline=None)
@given(names=dunder_sets, kind=st.sampled_from([Pre, Post]))
def test_a_hostile_predicate_is_defined_or_refused_clearly(names: frozenset[str],
                                                           kind: type) -> None:
    """A foreign callable whose introspection raises is a predicate hoare cannot read,
    not a crash: the class is defined (its arity, source and message unknown) or refused
    with a ``ContractDefinitionError``; a call then ends with the predicate's verdict."""
    predicate = hostile_class(names, callable_=True)()
    try:
        condition = kind(predicate, None)
    except TypeError:  # not callable: Pre says so
        assert "__call__" in names or "__class__" in names
        return
    try:
        built, model = _contract_with([condition], "pre" if kind is Pre else "post")
    except ContractDefinitionError:
        return
    instance = built(engine=FunctionEngine(lambda request: '{"text": "t"}'))
    instance(model())
    assert instance.contract_outcome is not None


@settings(max_examples=60, deadline=None)
@given(names=dunder_sets, field=st.sampled_from(["message", "family", "id", "policy"]))
def test_a_hostile_condition_argument_is_refused_as_a_type_error(names: frozenset[str],
                                                                 field: str) -> None:
    with pytest.raises(TypeError) as raised:
        Pre(lambda value: True, **{field: hostile_class(names)()})
    assert field in str(raised.value) and "Hostile" in str(raised.value)


def test_a_str_subclass_argument_is_kept_as_plain_text() -> None:
    class Loud(str):
        def __eq__(self, other: object) -> bool:
            raise Dunder("eq")

        def __hash__(self) -> int:
            raise Dunder("hash")

        def __len__(self) -> int:
            raise Dunder("len")

    condition = Pre(lambda value: True, Loud("m"), family=Loud("f"), id=Loud("i"),
                    policy=Loud("enforce"))
    assert [type(getattr(condition, name)) for name in ("message", "family", "id")] == \
        [str, str, str]
    _contract_with([condition])  # its id is hashed and compared at definition


def test_a_repr_returning_a_hostile_str_subclass_is_shown_as_plain_text() -> None:
    class Loud(str):
        def __len__(self) -> int:
            raise Dunder("len")

        def __format__(self, spec: str) -> str:
            raise Dunder("format")

    class Shown:
        def __repr__(self) -> str:
            return Loud("x" * 300)

    assert type(safe_repr(Shown())) is str
    with pytest.raises(ValidationError) as raised:
        TypeAdapter(int).validate_python(Shown())
    assert "(got xxx" in format_validation_error(raised.value)


@settings(max_examples=60, deadline=None)
@given(names=dunder_sets, container=st.sampled_from([list, tuple]),
       where=st.sampled_from(["pre", "post"]))
def test_a_hostile_condition_list_or_item_is_a_definition_error(
        names: frozenset[str], container: type, where: str) -> None:
    """``pre_conditions``/``post_conditions``: a list or tuple subclass whose own
    dunders raise, or an item that is a foreign object, is refused naming the attribute
    (never the foreign object's own exception)."""
    hostile_list = type("HostileList", (container,), {
        name: _raise for name in names & {"__iter__", "__len__", "__getitem__", "__repr__",
                                          "__eq__", "__hash__", "__bool__"}})
    kind = Pre if where == "pre" else Post
    for declared in (hostile_list([kind(lambda value: True)]),
                     container([hostile_class(names)()])):
        try:
            _contract_with(declared, where)
        except ContractDefinitionError as error:
            assert f"{where}_conditions" in str(error)
