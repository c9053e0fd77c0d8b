"""Numeric builtins and ``math`` predicates: ``abs``, ``int``, ``float``, ``bool``,
``math.isnan``/``isinf``/``isfinite``. The operators themselves live in
``semantics.py``; these handlers only route arguments to it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import z3

from ..values import FIN, NAN, NINF, PINF, SBool, SFloat, SInt, Sym
from .registry import CallSite, function

if TYPE_CHECKING:
    from ..predicates import _Translator as Translator


@function(abs, "abs", precision="exact")
def _abs(t: Translator, call: CallSite) -> Sym:
    return t.absolute(call.one(t))


@function(int, "int", precision="exact", note="of a number or bool (not of a str)")
def _int(t: Translator, call: CallSite) -> Sym:
    return t.to_int(call.one(t))


@function(float, "float", precision="exact", note="of a number or bool (not of a str)")
def _float(t: Translator, call: CallSite) -> Sym:
    return t.to_float(call.one(t))


@function(bool, "bool", precision="exact")
def _bool(t: Translator, call: CallSite) -> Sym:
    call.only_positional(0, 1)
    if not call.args:
        return SBool(z3.BoolVal(False))
    return SBool(t.truthy(call.one(t)))


def _float_class(t: Translator, call: CallSite, finite_answer: bool) -> SFloat | SBool:
    """The argument as a float, or the constant answer for an int or bool."""
    value = t.numeric(t.unwrap(call.one(t)))
    if isinstance(value, (SInt, SBool)):
        return SBool(z3.BoolVal(finite_answer))
    if not isinstance(value, SFloat):
        t.error(z3.BoolVal(True), "TypeError")
        return SBool(z3.BoolVal(False))
    t.uses_float = True
    return value


@function(math.isnan, "math.isnan", precision="exact")
def _isnan(t: Translator, call: CallSite) -> Sym:
    value = _float_class(t, call, False)
    return value if isinstance(value, SBool) else SBool(value.tag == NAN)


@function(math.isinf, "math.isinf", precision="exact")
def _isinf(t: Translator, call: CallSite) -> Sym:
    value = _float_class(t, call, False)
    return value if isinstance(value, SBool) else SBool(
        z3.Or(value.tag == PINF, value.tag == NINF))


@function(math.isfinite, "math.isfinite", precision="exact")
def _isfinite(t: Translator, call: CallSite) -> Sym:
    value = _float_class(t, call, True)
    return value if isinstance(value, SBool) else SBool(value.tag == FIN)
