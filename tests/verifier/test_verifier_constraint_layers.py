"""The domain is what pydantic-core enforces (issue 29 item 1): constraint layers.

pydantic applies ``Annotated`` metadata in order and each core-schema key holds the
value of the last layer that sets it (``Annotated[int, Field(ge=5), Field(ge=0)]``
accepts 3; ``constr(max_length=3)`` under ``Field(max_length=5)`` accepts 'abcd').
The translation used to conjoin every layer, so a value pydantic accepts was outside
the z3 domain (a false 'no input passes'). Oracle: real pydantic, value by value,
over generated stacks of ``Field``/``annotated_types``/``StringConstraints`` layers.
"""

from __future__ import annotations

from typing import Annotated, Any

import annotated_types as at
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, StringConstraints, ValidationError, constr
from pydantic.fields import FieldInfo

from hoare.declaration.models import type_spec
from hoare.verifier.search.concrete import assign
from hoare.verifier.translate.metadata import SINGLE_CONSTRAINTS, flatten
from hoare.verifier.translate.types import TypeBuilder
from hoare.verifier.translate.values import Z3_LOCK, SOpaque

PROFILE = settings(max_examples=150, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])

_SMALL = st.integers(-6, 6)
_LENGTH = st.integers(0, 5)
_PATTERNS = st.sampled_from(["^a", "b$", "^[a-c]+$", "x", "^.{2}$"])

_NUMBER_LAYERS = st.one_of(
    _SMALL.map(lambda k: Field(ge=k)), _SMALL.map(lambda k: Field(gt=k)),
    _SMALL.map(lambda k: Field(le=k)), _SMALL.map(lambda k: Field(lt=k)),
    _SMALL.map(at.Ge), _SMALL.map(at.Le), _SMALL.map(at.Gt),
    st.integers(1, 4).map(lambda m: Field(multiple_of=m)),
    st.tuples(_SMALL, _SMALL).map(lambda b: at.Interval(ge=b[0], le=b[1])))

_STRING_LAYERS = st.one_of(
    _LENGTH.map(lambda k: Field(min_length=k)), _LENGTH.map(lambda k: Field(max_length=k)),
    _LENGTH.map(at.MaxLen), _LENGTH.map(at.MinLen),
    st.tuples(_LENGTH, _LENGTH).map(lambda b: at.Len(b[0], b[1])),
    _PATTERNS.map(lambda p: Field(pattern=p)),
    st.builds(StringConstraints, min_length=st.none() | _LENGTH,
              max_length=st.none() | _LENGTH, pattern=st.none() | _PATTERNS))

_STRING_BASES = st.one_of(st.just(str), _LENGTH.map(lambda k: constr(max_length=k)),
                          _PATTERNS.map(lambda p: constr(pattern=p)))


def _in_domain(model: type[BaseModel], value: object) -> tuple[bool | None, bool]:
    """(is ``value`` in the z3 domain of ``model.f`` — None when the field is opaque,
    is the translation exact)."""
    with Z3_LOCK:
        typed = TypeBuilder("output").build(type_spec(model))
        sym = typed.root.fields["f"]
        if isinstance(sym, SOpaque):
            return None, False
        solver = z3.Solver()
        # the verifier's own bound on list slots is not a type constraint
        solver.add(*[c.expr for c in typed.constraints if c.kind != "bound"],
                   *assign(sym, value).equalities())
        return solver.check() == z3.sat, not typed.dropped


def _check(annotation: Any, values: list[object]) -> None:
    model = type("M", (BaseModel,), {"__annotations__": {"f": annotation},
                                      "__module__": __name__})
    for value in values:
        try:
            model.model_validate({"f": value})
            accepted = True
        except ValidationError:
            accepted = False
        inside, exact = _in_domain(model, value)
        if inside is None:
            continue
        if accepted:
            assert inside, (annotation, value, "pydantic accepts it, the domain does not")
        elif exact:
            assert not inside, (annotation, value, "pydantic rejects it, the exact domain not")


@PROFILE
@given(base=st.sampled_from([int, float]), layers=st.lists(_NUMBER_LAYERS, min_size=1,
                                                            max_size=4),
       values=st.lists(st.integers(-8, 8), min_size=1, max_size=6))
def test_numeric_layers_mean_what_pydantic_core_enforces(base: type, layers: list[Any],
                                                         values: list[int]) -> None:
    _check(Annotated[(base, *layers)], [base(v) for v in values])  # type: ignore[misc]


@PROFILE
@given(base=_STRING_BASES, layers=st.lists(_STRING_LAYERS, min_size=1, max_size=4),
       values=st.lists(st.text("abcx ", max_size=6), min_size=1, max_size=6))
def test_string_layers_mean_what_pydantic_core_enforces(base: Any, layers: list[Any],
                                                        values: list[str]) -> None:
    _check(Annotated[(base, *layers)], values)  # type: ignore[misc]


def test_the_last_layer_wins_per_key() -> None:
    _check(Annotated[int, Field(ge=5), Field(ge=0)], [3, -1, 6])
    _check(Annotated[int, Field(le=5), Field(le=10)], [7, 11])
    _check(Annotated[str, Field(pattern="^a"), Field(pattern="b$")], ["xb", "ax", "ab"])
    _check(Annotated[constr(max_length=3), Field(max_length=5)], ["abcd", "abcdef"])


def _without(key: str) -> Any:
    from pydantic import GetPydanticSchema

    return GetPydanticSchema(lambda tp, handler: {k: v for k, v in handler(tp).items()
                                                  if k != key})


def _setting(key: str, value: object) -> Any:
    from pydantic import GetPydanticSchema

    return GetPydanticSchema(lambda tp, handler: {**handler(tp), key: value})


def test_the_core_schema_not_the_annotations_decides() -> None:
    """A schema hook that drops or changes a constraint the annotations give: the
    domain is read against the compiled core schema (the field is opaque where the
    two differ), never the annotations alone."""
    _check(Annotated[int, Field(ge=5), _without("ge")], [3, 6])
    _check(Annotated[str, Field(max_length=1), _without("max_length")], ["abc"])
    _check(Annotated[str, Field(pattern="^a"), _setting("pattern", "^b")], ["a", "b"])
    _check(Annotated[float, _setting("le", 1.0)], [0.5, 2.0])
    from test_verifier_domains import OPTIONS, contract_on

    from hoare.declaration.conditions import Pre
    from hoare.declaration.description import describe
    from hoare.kernel import ContractConfig
    from hoare.verifier.checks.contracts import check_contract

    class In(BaseModel):
        n: Annotated[int, Field(ge=5), _without("ge")]

    assert In(n=3).n == 3
    desc = describe(contract_on(In, Pre(lambda i: i.n < 5, "small")), ContractConfig())
    statuses = {c.kind: c.status for c in check_contract(desc, OPTIONS).checks}
    assert statuses["pre_satisfiable"] != "fail", statuses


class _Level(__import__("enum").IntEnum):
    LOW = -3
    MID = 1
    HIGH = 5


_FINITE_BASES = st.one_of(
    st.lists(st.integers(-6, 6), min_size=1, max_size=4, unique=True).map(
        lambda values: __import__("typing").Literal[tuple(values)]),
    st.just(_Level), st.just(bool))


@PROFILE
@given(base=_FINITE_BASES, layers=st.lists(_NUMBER_LAYERS, min_size=1, max_size=3),
       values=st.lists(st.sampled_from([-3, 1, 5, 0, 2, -6, 6, True, False]), min_size=1,
                       max_size=6))
def test_constraints_on_finite_types_are_never_claimed_exact(
        base: Any, layers: list[Any], values: list[object]) -> None:
    """pydantic checks ``ge``… on a Literal, an enum or a bool with a function after
    the type: a domain without them is a superset, never an exact one."""
    model = type("M", (BaseModel,), {"__annotations__": {"f": Annotated[(base, *layers)]},
                                      "__module__": __name__})
    for value in values:
        try:
            held = model.model_validate({"f": value}).f
        except ValidationError:
            continue
        inside, _ = _in_domain(model, held)
        assert inside in (True, None), (base, layers, value)
    members = list(_Level) if base is _Level else [True, False] if base is bool else \
        list(__import__("typing").get_args(base))
    for member in members:
        try:
            model.model_validate({"f": member})
            continue
        except ValidationError:
            pass
        inside, exact = _in_domain(model, member)
        assert not (inside and exact), (base, layers, member, "a rejected member, 'exact'")


def test_constraints_on_a_model_or_none_are_never_claimed_exact() -> None:
    class N(BaseModel):
        x: int = 0

    for annotation in (Annotated[N, Field(ge=3)], Annotated[None, Field(ge=1)]):
        model = type("M", (BaseModel,), {"__annotations__": {"f": annotation},
                                          "__module__": __name__})
        with Z3_LOCK:
            typed = TypeBuilder("output").build(type_spec(model))
        assert typed.dropped, annotation


@PROFILE
@given(layers=st.lists(st.one_of(_LENGTH.map(lambda k: Field(max_length=k)),
                                 _LENGTH.map(lambda k: Field(min_length=k)),
                                 _LENGTH.map(at.MaxLen)), min_size=1, max_size=4),
       container=st.sampled_from([list[int], tuple[int, ...]]),
       sizes=st.lists(st.integers(0, 6), min_size=1, max_size=4))
def test_sequence_length_layers_mean_what_pydantic_core_enforces(
        layers: list[Any], container: Any, sizes: list[int]) -> None:
    make = list if container == list[int] else tuple
    _check(Annotated[(container, *layers)], [make(range(n)) for n in sizes])


def test_a_hook_dropping_a_sequence_length_is_not_translated() -> None:
    _check(Annotated[list[int], Field(max_length=1), _without("max_length")], [[1, 2, 3]])


# -- flatten's shortcut -------------------------------------------------------------------


def test_the_single_constraints_flatten_skips_are_never_grouped() -> None:
    """``flatten`` keeps an instance of exactly one of these types as it is, without
    asking the ``GroupedMetadata`` protocol: sound because each is slotted (no instance
    attribute can make one grouped) and not grouped itself."""
    for cls in SINGLE_CONSTRAINTS:
        value = cls(1)
        assert not hasattr(value, "__dict__") and "__slots__" in vars(cls)
        assert not isinstance(value, at.GroupedMetadata)


def _flatten_by_protocol(metadata: list[Any]) -> list[Any]:
    """``flatten`` as it was, asking the protocol of every item."""
    out: list[Any] = []
    for item in metadata:
        if item is None:
            continue
        if isinstance(item, FieldInfo):
            out.extend(_flatten_by_protocol(list(item.metadata)))
        elif isinstance(item, at.GroupedMetadata) and type(item).__name__ != \
                "StringConstraints":
            out.extend(_flatten_by_protocol(list(item)))
        else:
            out.append(item)
    return out


@PROFILE
@given(st.lists(st.one_of(_NUMBER_LAYERS, _STRING_LAYERS, st.none(),
                          st.builds(at.MinLen, _LENGTH), st.builds(at.MaxLen, _LENGTH),
                          st.builds(at.MultipleOf, st.integers(1, 4))), max_size=6))
def test_flatten_is_the_protocols_flattening(layers: list[Any]) -> None:
    assert flatten(layers) == _flatten_by_protocol(layers)
