"""Inputs built in Python are not outputs built from JSON (issue 29 items 1 and 3).

The facts, written down against real pydantic: a ``str``/``int``/``float`` subclass
instance given to a field comes out as exactly the base type (lax and strict), but
a model instance of a subclass is kept as it is when the model's class does not
revalidate instances (``revalidate_instances='never'``, the default), and so is the
contract input itself (``TypeSpec.validate``). A subclass can define ``__bool__``,
``__eq__``, ``__len__``, ``__index__``, ``__lt__``…: whatever depends on them is not
modelled for a model value an input (or act's result) holds, while an output
validated from JSON is exactly its class and keeps its exact translation.

Differential tests: hypothesis builds real subclass instances with dunder methods
returning generated values; every verdict claiming something for all inputs (no
input passes, the condition can never fail) must hold for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field
from test_verifier_domains import OPTIONS, contract_on

from hoare.declaration.conditions import Pre
from hoare.declaration.description import describe
from hoare.declaration.models import type_spec
from hoare.kernel import ContractConfig
from hoare.verifier.checks.contracts import check_contract

PROFILE = settings(max_examples=25, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])


# -- the facts ------------------------------------------------------------------------------


class _Str(str):
    def upper(self) -> str:  # type: ignore[override]
        return "overridden"


class _Int(int):
    def __add__(self, other: object) -> int:  # type: ignore[override]
        return 0


class _Float(float):
    def is_integer(self) -> bool:  # type: ignore[override]
        return True


class Scalars(BaseModel):
    s: str
    n: int
    x: float
    items: list[str]
    maybe: Annotated[str, Field(max_length=50)] | None = None


class StrictScalars(Scalars):
    model_config = ConfigDict(strict=True)


@PROFILE
@given(text=st.text(max_size=20), number=st.integers(), real=st.floats(allow_nan=False))
@pytest.mark.parametrize("model", [Scalars, StrictScalars])
def test_builtin_subclass_values_come_out_as_the_exact_base_type(
        model: type[Scalars], text: str, number: int, real: float) -> None:
    value = model(s=_Str(text), n=_Int(number), x=_Float(real), items=[_Str(text)],
                  maybe=_Str(text[:50]))
    assert type(value.s) is str and value.s == text
    assert type(value.n) is int and value.n == number
    assert type(value.x) is float
    assert type(value.items[0]) is str and type(value.maybe) is str
    # containers too: a list subclass, a tuple subclass (a namedtuple) come out exact
    sequences = _Sequences(items=_List([number]), pair=_Pair(number, number))
    assert type(sequences.items) is list and type(sequences.pair) is tuple


class _List(list):  # type: ignore[type-arg]
    pass


_Pair = __import__("collections").namedtuple("_Pair", "a b")


class _Sequences(BaseModel):
    items: list[int]
    pair: tuple[int, ...]


def _nested(mode: str) -> tuple[type[BaseModel], type[BaseModel]]:
    class N(BaseModel):
        model_config = ConfigDict(revalidate_instances=mode)  # type: ignore[typeddict-item]
        x: int = 0

    class In(BaseModel):
        n: N

    return N, In


def test_subclass_model_instances_are_kept_unless_revalidated() -> None:
    for mode, kept in (("never", True), ("always", False), ("subclass-instances", False)):
        n_cls, in_cls = _nested(mode)
        sub = type("Sub", (n_cls,), {"__bool__": lambda self: False})
        held = in_cls(n=sub()).n
        assert (type(held) is sub) is kept, mode
        assert (type(held) is n_cls) is not kept, mode
        # the contract input itself: the call boundary validates it again, into exactly
        # the declared classes (issue 29), whatever the caller built
        outer_sub = type("OuterSub", (in_cls,), {})
        checked = type_spec(in_cls).validate(outer_sub(n=sub()))
        assert type(checked) is in_cls and type(checked.n) is n_cls
        # from JSON: always exactly the class
        assert type(in_cls.model_validate_json('{"n": {"x": 1}}').n) is n_cls


# -- verdicts over every input the caller can pass -------------------------------------------


class Marker:
    """A class unrelated to N that a subclass of N may also derive from."""


# (predicate over the input i whose field n is an N, dunder methods a subclass defines
#  with values drawn by hypothesis)
Construct = tuple[str, Callable[[Any], object], dict[str, st.SearchStrategy[Any]]]

CONSTRUCTS: list[Construct] = [
    ("not i.n", lambda i: not i.n, {"__bool__": st.booleans()}),
    ("bool(i.n)", lambda i: bool(i.n), {"__bool__": st.booleans()}),
    ("i.n and i.n.x == 0", lambda i: i.n and i.n.x == 0, {"__bool__": st.booleans()}),
    ("len(i.n) > 2", lambda i: len(i.n) > 2, {"__len__": st.integers(0, 9)}),
    ("i.n == 3", lambda i: i.n == 3, {"__eq__": st.booleans()}),
    ("i.n != 'a'", lambda i: i.n != "a", {"__ne__": st.booleans()}),
    ("i.n in [1, 2]", lambda i: i.n in [1, 2], {"__eq__": st.booleans()}),
    ("i.n < 3", lambda i: i.n < 3, {"__lt__": st.booleans()}),
    ("'abc'[i.n] == 'b'", lambda i: "abc"[i.n] == "b", {"__index__": st.integers(-3, 2)}),
    ("isinstance(i.n, Marker)", lambda i: isinstance(i.n, Marker), {"": st.just(None)}),
    ("not i", lambda i: not i, {"__bool__": st.booleans()}),
]


def _dunder(name: str, result: object) -> Callable[..., object]:
    return lambda self, *args: result


def _instance(in_cls: type[BaseModel], n_cls: type[BaseModel], top: bool,
              dunders: dict[str, object]) -> BaseModel:
    """A valid input whose N (or the input itself, ``top``) is a subclass instance."""
    namespace = {k: _dunder(k, v) for k, v in dunders.items() if k}
    if "__eq__" in namespace:
        namespace["__hash__"] = None  # type: ignore[assignment]
    bases: tuple[type, ...] = (n_cls, Marker) if "" in dunders else (n_cls,)
    if top:
        sub = type("InSub", (in_cls,), namespace)
        return type_spec(in_cls).validate(sub(n=n_cls()))
    sub = type("NSub", bases, namespace)
    return type_spec(in_cls).validate(in_cls(n=sub()))


def _report(in_cls: type[BaseModel], condition: Callable[[Any], object]) -> dict[str, str]:
    desc = describe(contract_on(in_cls, Pre(condition, "the condition")), ContractConfig())
    report = check_contract(desc, OPTIONS)
    return {c.kind: c.status for c in report.checks}


def _real(condition: Callable[[Any], object], value: object) -> bool:
    try:
        return bool(condition(value))
    except Exception:  # a raising pre-condition fails
        return False


@pytest.mark.parametrize(("text", "condition", "strategies"), CONSTRUCTS,
                         ids=[c[0] for c in CONSTRUCTS])
def test_verdicts_hold_for_subclass_instances_of_input_models(
        text: str, condition: Callable[[Any], object],
        strategies: dict[str, st.SearchStrategy[Any]]) -> None:
    n_cls, in_cls = _nested("never")
    verdicts = _report(in_cls, condition)
    top = text == "not i"

    @PROFILE
    @given(st.fixed_dictionaries(strategies))
    def run(dunders: dict[str, object]) -> None:
        value = _instance(in_cls, n_cls, top, dunders)
        passes = _real(condition, value)
        if verdicts.get("pre_satisfiable") == "fail":
            assert not passes, (text, dunders, "pre_satisfiable fail, yet this input passes")
        if verdicts.get("predicate_vacuous") == "warn":  # "can never fail"
            assert passes, (text, dunders, "'can never fail', yet this input fails it")

    run()


@pytest.mark.parametrize("mode", ["always", "subclass-instances"])
def test_revalidated_models_keep_their_exact_verdicts(mode: str) -> None:
    """N revalidates its instances: the input holds exactly an N, whose truth is True."""
    _, in_cls = _nested(mode)
    assert _report(in_cls, lambda i: not i.n)["pre_satisfiable"] == "fail"


def test_outputs_from_json_keep_their_exact_verdicts() -> None:
    """An output is validated from JSON: exactly its class, never a subclass."""
    from hoare import Contract, Post, contract

    _, in_cls = _nested("never")

    @contract(post_remedy=False)
    class C(Contract):
        prompt = "p"
        post_conditions = [Post(lambda o: not o.n, "never true")]

        def forward(self, input: int) -> in_cls:  # type: ignore[valid-type]
            return self.contract_result

    report = check_contract(C.__hoare__, OPTIONS)  # type: ignore[attr-defined]
    statuses = {c.kind: c.status for c in report.checks}
    assert statuses["post_satisfiable"] == "fail", statuses


# -- concrete binding: only values of exactly the modelled type ------------------------------


class _Model(BaseModel):
    s: str = ""


class _SubModel(_Model):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


class _Lying(str):
    def __str__(self) -> str:
        return "something else"


@PROFILE
@given(text=st.text(max_size=10), number=st.integers())
def test_bind_refuses_instances_of_subclasses(text: str, number: int) -> None:
    """``bind`` (a concrete value into its symbolic value) took a str subclass through
    ``str(value)`` (its own ``__str__``) and any subclass instance of a model: the
    translation does not describe them, so they are a BindError (unknown)."""
    from hoare.verifier.search.concrete import BindError, bind
    from hoare.verifier.translate.types import TypeBuilder
    from hoare.verifier.translate.values import Z3_LOCK

    with Z3_LOCK:
        typed = TypeBuilder("input").build(type_spec(Scalars))
        root = typed.root
        for name, value in (("s", _Lying(text)), ("s", _Str(text)), ("n", _Int(number)),
                            ("x", _Float(number)), ("items", [_Str(text)])):
            with pytest.raises(BindError):
                bind(root.fields[name], value)
        plain = text.encode("ascii", "replace").decode()  # z3 holds every ASCII text
        assert bind(root.fields["s"], plain) is not None
        assert bind(root.fields["x"], number) is not None  # pydantic makes an int a float
        model_sym = TypeBuilder("input").build(type_spec(_Model)).root
        with pytest.raises(BindError):
            bind(model_sym, _SubModel(s=text))
        assert bind(model_sym, _Model(s=plain)) is not None
