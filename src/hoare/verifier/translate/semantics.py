"""Python's operators on symbolic values, with Python's semantics, not z3's.

``Semantics`` is the whole set, layered by kind of value: ``views`` (truthiness,
optionals, enum data, merging), ``floats`` (IEEE-754 doubles), ``comparisons``,
``arithmetic``, and here the builtins (``abs``, ``len``, ``int``, ``round``,
``float``, ``str``, ``min``/``max``).

* ``//`` and ``%`` floor (Python) where z3's integer ``/`` and ``%`` are Euclidean;
  a zero divisor *raises* (``ZeroDivisionError``), which makes the predicate fail.
* ``s[i]`` with a negative ``i`` counts from the end (z3's ``SubString(s, -1, 1)``
  is ``""``); out of range raises ``IndexError``.
* floats are IEEE-754 doubles over the reals, every rounding a sound
  over-approximation (``floats``).
* comparisons of incompatible types (``None < 1``, ``"a" < 1``) raise ``TypeError``;
  ``==`` between them is ``False``.

Every operation that can raise records the condition with ``error()``; the
predicate translator guards it with the current path and short-circuit
condition. Cases we do not model exactly become *havoc*: a fresh unconstrained
value, which over-approximates and keeps refutations sound. Anything else raises
``Opaque``.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from fractions import Fraction

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.translate.arithmetic import ArithmeticSemantics
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.values import (
    NAN,
    NINF,
    PINF,
    Opaque,
    SBool,
    SColl,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SNumber,
    SStr,
    Sym,
    int_val,
    real_val,
    tag_is,
)

__all__ = ["Semantics"]


class Semantics(ArithmeticSemantics):
    """Operators and builtins on ``Sym``s; a translator subclasses it and provides
    the hooks (``error``, ``define``, ``havoc_note``)."""

    # -- builtins -----------------------------------------------------------------------
    def absolute(self, value: Sym) -> Sym:
        value = self.numeric(self.unwrap(value))
        if isinstance(value, SFloat):
            tag = value.tag
            if not z3.is_int_value(tag):
                tag = z3.If(tag == NINF, PINF, tag)
            elif tag.as_long() == NINF:
                tag = int_val(PINF)
            if isinstance(value, SNumber):
                return SNumber(tag, z3.If(value.r < 0, -value.r, value.r), value.is_int)
            return SFloat(tag, z3.If(value.r < 0, -value.r, value.r))
        if isinstance(value, (SInt, SBool)):
            x = self.int_expr(value)
            return SInt(z3.If(x < 0, -x, x))
        self.not_a_number(value, "abs()")
        return SInt(int_val(0))

    def length(self, value: Sym) -> SInt:
        value = self.unwrap(value)
        if isinstance(value, SStr):
            return SInt(z3.Length(value.e))
        if isinstance(value, SList):
            return SInt(value.n)
        if isinstance(value, SColl):
            if value.container == "setlit":
                raise Opaque("len() of a set display (equal items collapse)")
            return SInt(int_val(len(value.items)))
        if isinstance(value, (SInt, SFloat, SBool, SModel, SEnum)):
            if isinstance(value, SEnum) and issubclass(value.cls, str):
                return self.length(self.base(value))
            self.type_error(value)
            return SInt(int_val(0))
        raise Opaque(f"len() of a {value.kind}")

    def to_int(self, value: Sym) -> Sym:
        value = self.numeric(self.unwrap(value))
        if isinstance(value, (SInt, SBool)):
            return SInt(self.int_expr(value))
        if isinstance(value, SFloat):
            self.error(tag_is(value.tag, NAN), "ValueError")
            self.error(z3_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)), "OverflowError")
            r = value.r
            return SInt(z3.If(r >= 0, z3.ToInt(r), -z3.ToInt(-r)))
        raise Opaque(f"int() of a {value.kind}")

    def round_half_even(self, value: Sym) -> Sym:
        """``round(x)``: the nearest int, ties to even (exact: a double is a real);
        ``nan`` raises ``ValueError``, ``±inf`` ``OverflowError``."""
        value = self.numeric(self.unwrap(value))
        if isinstance(value, (SInt, SBool)):
            return SInt(self.int_expr(value))
        if not isinstance(value, SFloat):
            self.not_a_number(value, "round()")
            return SInt(int_val(0))
        self.uses_float = True
        self.error(tag_is(value.tag, NAN), "ValueError")
        self.error(z3_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)), "OverflowError")
        floor = z3.ToInt(value.r)
        fraction = value.r - z3.ToReal(floor)
        half = real_val(Fraction(1, 2))
        return SInt(z3.If(fraction > half, floor + 1,
                          z3.If(fraction < half, floor,
                                z3.If(floor % 2 == 0, floor, floor + 1))))

    def to_float(self, value: Sym) -> Sym:
        """``float(x)``: an int is rounded (a huge one raises ``OverflowError``)."""
        value = self.numeric(self.unwrap(value))
        if self.is_number(value):
            return self.to_double(value)
        raise Opaque(f"float() of a {value.kind}")

    def to_str(self, value: Sym) -> Sym:
        value = self.unwrap(value) if not isinstance(value, SNone) else value
        if isinstance(value, SStr):
            return value
        if isinstance(value, SInt):
            x = value.e
            digits = z3.IntToStr(z3.If(x >= 0, x, -x))
            limit = sys.get_int_max_str_digits()
            if limit:  # CPython refuses to print an int of more digits (ValueError)
                bound = z3.IntVal(10) ** limit  # a term: its digits are never printed
                self.error(z3_or(x >= bound, -x >= bound), "ValueError")
            return SStr(z3.If(x >= 0, digits, z3.Concat(z3.StringVal("-"), digits)))
        if isinstance(value, SBool):
            return SStr(z3.If(value.e, z3.StringVal("True"), z3.StringVal("False")))
        if isinstance(value, SNone):
            return SStr(z3.StringVal("None"))
        raise Opaque(f"str() of a {value.kind}")

    def min_max(self, name: str, values: list[tuple[z3.BoolRef, Sym]],
                empty_raises: bool = True) -> Sym:
        """``min``/``max`` over (present, value) pairs, Python's choice on ties:
        the first extreme value wins; ``nan`` poisons like Python's comparisons."""
        result: Sym | None = None
        present_any: z3.BoolRef = false()
        for present, value in values:
            if result is None:
                result, present_any = value, present
                continue
            with self.only_when(z3_and(present, present_any)):  # compared only then
                better = self.compare("<", value, result) if name == "min" else \
                    self.compare(">", value, result)
            take = z3_and(present, z3_or(z3_not(present_any), better))
            result = self.ite(take, value, result)
            present_any = z3_or(present_any, present)
        if result is None:
            if empty_raises:
                self.error(true(), "ValueError")
            return SInt(int_val(0))
        if empty_raises:
            self.error(z3_not(present_any), "ValueError")
        return result


KNOWN_BUILTINS: dict[str, Callable[..., object]] = {
    name: getattr(builtins, name) for name in (
        "len", "abs", "min", "max", "all", "any", "sum", "int", "float", "str", "bool",
        "isinstance")
}
