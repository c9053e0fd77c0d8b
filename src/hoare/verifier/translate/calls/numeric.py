"""Numeric builtins and ``math`` predicates: ``abs``, ``int``, ``float``, ``bool``,
``round``, ``math.isnan``/``isinf``/``isfinite``. The operators themselves live in
``semantics.py``; these handlers only route arguments to it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import z3

from hoare.verifier.translate.calls.registry import CallSite, Family
from hoare.verifier.translate.values import SBool, Sym

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator


FAMILY = Family("numeric")


@FAMILY.function(abs, "abs", precision="exact")
def _abs(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.absolute(call.one(t))


@FAMILY.function(int, "int", precision="exact", note="of a number or bool (not of a str)")
def _int(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.to_int(call.one(t))


@FAMILY.function(float, "float", precision="over",
          note="of a number or bool (not of a str); an int is rounded to a double within "
               "the IEEE-754 error bound, OverflowError when huge")
def _float(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.to_float(call.one(t))


@FAMILY.function(round, "round", precision="exact", note="without ndigits (round half to even)")
def _round(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.round_half_even(call.one(t))


@FAMILY.function(bool, "bool", precision="exact")
def _bool(t: ExpressionTranslator, call: CallSite) -> Sym:
    call.only_positional(0, 1)
    if not call.args:
        return SBool(z3.BoolVal(False))
    return SBool(t.truthy(call.one(t)))


@FAMILY.function(math.isnan, "math.isnan", precision="exact",
          note="an int is converted first (OverflowError when huge)")
def _isnan(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.is_nan(call.one(t))


@FAMILY.function(math.isinf, "math.isinf", precision="exact",
          note="an int is converted first (OverflowError when huge)")
def _isinf(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.is_inf(call.one(t))


@FAMILY.function(math.isfinite, "math.isfinite", precision="exact",
          note="an int is converted first (OverflowError when huge)")
def _isfinite(t: ExpressionTranslator, call: CallSite) -> Sym:
    return t.is_finite(call.one(t))
