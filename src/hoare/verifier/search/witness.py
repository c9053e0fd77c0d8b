"""z3 models → JSON values of the model types, and their replay in Python.

A ``pass`` resting on a witness is only reported after the witness has been
validated by pydantic and every translated predicate has accepted it, called
for real on the validated value (on a real instance, or on an instance made
with ``object.__new__`` and given the attributes the verifier assumed). A
witness that does not replay makes the check ``unknown``.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import inspect
import math
import typing
import uuid
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import z3
from pydantic import BaseModel, ValidationError

from hoare.declaration.description import PredicateSource
from hoare.declaration.models import TypeSpec, format_validation_error
from hoare.unmodelled import WitnessError
from hoare.verifier.solve.z3util import is_true
from hoare.verifier.translate.values import (
    FIN,
    NAN,
    PINF,
    Z3_LOCK,
    SBool,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    decode_z3_string,
)

__all__ = ["NONE_FOUND", "PredicateRun", "WitnessError", "call_predicate", "concretize",
           "example_of", "json_safe", "validate"]


def _eval(model: z3.ModelRef, expr: z3.ExprRef) -> z3.ExprRef:
    return model.eval(expr, model_completion=True)


def _rational(value: z3.ExprRef) -> Fraction:
    if z3.is_rational_value(value):
        return Fraction(value.numerator_as_long(), value.denominator_as_long())
    if z3.is_int_value(value):
        return Fraction(value.as_long())
    if z3.is_algebraic_value(value):
        return Fraction(value.approx(30).as_fraction())
    raise WitnessError(f"not a number: {value}")


def concretize(sym: Sym, model: z3.ModelRef) -> Any:
    """The JSON-compatible Python value ``sym`` takes in ``model`` (floats may be
    ``nan``/``inf``; ``json_safe`` turns them into strings pydantic accepts)."""
    with Z3_LOCK:
        return _concrete(sym, model)


def _concrete(sym: Sym, model: z3.ModelRef) -> Any:
    if isinstance(sym, SInt):
        return _eval(model, sym.e).as_long()
    if isinstance(sym, SBool):
        return is_true(_eval(model, sym.e))
    if isinstance(sym, SFloat):
        tag = _eval(model, sym.tag).as_long()
        if tag == NAN:
            return math.nan
        if tag != FIN:
            return math.inf if tag == PINF else -math.inf
        return float(_rational(_eval(model, sym.r)))
    if isinstance(sym, SStr):
        value = _eval(model, sym.e)
        if not z3.is_string_value(value):
            raise WitnessError(f"not a string: {value}")
        return decode_z3_string(value.as_string())
    if isinstance(sym, SNone):
        return None
    if isinstance(sym, SOpt):
        if is_true(_eval(model, sym.none)):
            return None
        return _concrete(sym.inner, model)
    if isinstance(sym, SEnum):
        index = _eval(model, sym.idx).as_long()
        members = sym.members
        if not 0 <= index < len(members):
            raise WitnessError(f"no member {index} in {sym.cls.__name__}")
        value = members[index].value
        return value if isinstance(value, (str, int, float, bool)) or value is None \
            else members[index]
    if isinstance(sym, SList):
        n = _eval(model, sym.n).as_long()
        if n > len(sym.slots):
            raise WitnessError(f"{sym.path} would need {n} elements; {len(sym.slots)} are "
                               f"modelled")
        return [_concrete(slot, model) for slot in sym.slots[:n]]
    if isinstance(sym, SModel):
        return _model_dict(sym, model)
    if isinstance(sym, SOpaque):
        if sym.has_example:
            return sym.example
        raise WitnessError(sym.reason)
    raise WitnessError(f"cannot build a value of a {sym.kind}")


def _model_dict(sym: SModel, model: z3.ModelRef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cls = sym.cls
    fields = getattr(cls, "model_fields", {})
    for name, value in sym.fields.items():
        info = fields.get(name)
        key = name
        if info is not None:
            alias = info.validation_alias if isinstance(info.validation_alias, str) \
                else info.alias
            key = alias or name
        if isinstance(value, SOpaque):
            if info is not None and not info.is_required():
                continue  # the default
            if value.has_example:
                out[key] = value.example
                continue
            if info is not None:
                example = example_of(info.annotation)
                if example is not NONE_FOUND:
                    out[key] = example
                    continue
            raise WitnessError(value.reason)
        concrete = _concrete(value, model)
        if name in sym.omit and _same(concrete, sym.omit[name]):
            continue  # an invalid default: only reachable by leaving the field out
        out[key] = concrete
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(b, enum.Enum):
        b = b.value
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (type(a) is type(b) and a == b) or (isinstance(b, tuple) and a == list(b))


NONE_FOUND = object()  # ``example_of``'s answer when a type has no example


def example_of(annotation: Any, depth: int = 0) -> Any:
    """Some valid-looking value of an unmodelled type, for a witness's opaque field."""
    if depth > 4:
        return NONE_FOUND
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return example_of(typing.get_args(annotation)[0], depth + 1)
    if origin in (dict, typing.Dict):  # noqa: UP006
        return {}
    if origin in (set, frozenset, list, typing.List):  # noqa: UP006
        return []
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            return []
        items = [example_of(a, depth + 1) for a in args]
        return NONE_FOUND if any(i is NONE_FOUND for i in items) else items
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        for arg in typing.get_args(annotation):
            found = example_of(arg, depth + 1)
            if found is not NONE_FOUND:
                return found
        return NONE_FOUND
    simple: dict[Any, Any] = {
        int: 0, float: 0.0, str: "", bool: False, type(None): None, dict: {}, list: [],
        Any: None, datetime.datetime: "2024-01-01T00:00:00", datetime.date: "2024-01-01",
        datetime.time: "00:00:00", datetime.timedelta: 0, decimal.Decimal: "0",
        uuid.UUID: "00000000-0000-0000-0000-000000000000", bytes: "",
    }
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        members = list(annotation)
        return members[0].value if members else NONE_FOUND
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        out = {}
        for name, info in annotation.model_fields.items():
            if not info.is_required():
                continue
            found = example_of(info.annotation, depth + 1)
            if found is NONE_FOUND:
                return NONE_FOUND
            out[info.alias or name] = found
        return out
    return NONE_FOUND


def json_safe(value: Any) -> Any:
    """A JSON value: non-finite floats become ``"nan"``/``"inf"``/``"-inf"`` (pydantic
    accepts those strings for floats), enum members their values."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most leaves
        return value  # (exact types: an enum's member may subclass str or int)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    return value


def validate(spec: TypeSpec, value: Any) -> tuple[bool, Any, str]:
    """(ok, what user code would see, error text) for a witness value."""
    try:
        return True, spec.validate(value), ""
    except ValidationError as error:
        return False, None, format_validation_error(error)
    except Exception as error:  # a validator raising something else
        return False, None, f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class PredicateRun:
    passed: bool
    detail: str


# the two plain verdicts, made once: the searches call predicates ~270 times per unit
_PASSED = PredicateRun(True, "")
_RETURNED_FALSE = PredicateRun(False, "returned False")


def call_predicate(source: PredicateSource, instance: object, value: object,
                   used: object = None) -> PredicateRun:
    """Call a predicate for real, with the kernel's semantics (spec §3.2)."""
    args = [value, used] if source.takes_input else [value]
    try:
        result = source.fn(instance, *args) if source.is_method else source.fn(*args)
    except Exception as error:
        return PredicateRun(False, f"raised {type(error).__name__}: {error}")
    if result is True:  # the bool itself: never awaitable (nor a subclass: bool has none)
        return _PASSED
    if result is False:
        return _RETURNED_FALSE
    if inspect.isawaitable(result):  # as at run time: an awaitable verdict fails
        close = getattr(result, "close", None)
        if callable(close):
            close()  # never awaited: no "never awaited" warning
        return PredicateRun(False, "returned an awaitable, not a verdict")
    if result is None or bool(result):
        return _PASSED
    return PredicateRun(False, f"returned {result!r:.60}")
