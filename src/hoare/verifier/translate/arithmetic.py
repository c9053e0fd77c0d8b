"""Arithmetic operators on symbolic values: unary ``+ - ~ not`` and binary
``+ - * / // % **`` on ints, floats, strings and values that are an int or a float.

``//`` and ``%`` floor (Python) where z3's integer ``/`` and ``%`` are Euclidean; a
zero divisor *raises* (``ZeroDivisionError``), which makes the predicate fail.
Float arithmetic is ``floats.FloatSemantics.float_binop``.
"""

from __future__ import annotations

import z3

from hoare.verifier.solve.context import true
from hoare.verifier.translate.comparisons import ComparisonSemantics
from hoare.verifier.translate.floats import negated
from hoare.verifier.translate.logic import z3_and, z3_if, z3_not
from hoare.verifier.translate.values import (
    Opaque,
    SBool,
    SColl,
    SFloat,
    SInt,
    SList,
    SNone,
    SNumber,
    SStr,
    Sym,
    int_val,
)


class ArithmeticSemantics(ComparisonSemantics):
    """Python's arithmetic operators over ``Sym``s."""

    # -- arithmetic ---------------------------------------------------------------------
    def unary(self, op: str, value: Sym) -> Sym:
        if op == "not":
            return SBool(z3_not(self.truthy(value)))
        value = self.numeric(self.unwrap(value))
        if isinstance(value, SFloat):
            if op == "+":
                return value
            if op == "-":
                return negated(value)
            if isinstance(value, SNumber):
                raise Opaque(f"unary `{op}` of a value that is an int or a float")
            self.type_error(value)
            return value
        if isinstance(value, (SInt, SBool)):
            x = self.int_expr(value)
            return SInt({"+": x, "-": -x, "~": -x - 1}[op])
        self.not_a_number(value, f"unary `{op}`")
        return SInt(int_val(0))

    def binop(self, op: str, a: Sym, b: Sym) -> Sym:
        a, b = self.base(self.unwrap(a)), self.base(self.unwrap(b))  # a mixin is its data
        if op == "%" and isinstance(a, SStr):
            raise Opaque("printf-style `%` formatting")
        if isinstance(a, SStr) and isinstance(b, SStr):
            if op == "+":
                return SStr(z3.Concat(a.e, b.e))
            self.error(true(), "TypeError")
            return a
        if op == "*" and (isinstance(a, SStr) or isinstance(b, SStr)):
            text, count = (a, b) if isinstance(a, SStr) else (b, a)
            assert isinstance(text, SStr)  # one side is a str (the condition above)
            if isinstance(count, SInt) and z3.is_int_value(count.e) and \
                    count.e.as_long() <= 16:
                k = count.e.as_long()
                if k <= 0:
                    return SStr(z3.StringVal(""))
                return SStr(z3.Concat(*([text.e] * k)) if k > 1 else text.e)
            if isinstance(count, (SInt, SBool)):
                raise Opaque("string repetition by a symbolic count")
        a, b = self.numeric(a), self.numeric(b)
        if not (self.is_number(a) and self.is_number(b)):
            if isinstance(a, (SList, SColl)) or isinstance(b, (SList, SColl)):
                raise Opaque(f"`{op}` on sequences")
            if isinstance(a, (SStr, SInt, SFloat, SBool, SNone)) and \
                    isinstance(b, (SStr, SInt, SFloat, SBool, SNone)):
                self.error(true(), "TypeError")
                return SInt(int_val(0))
            raise Opaque(f"`{op}` on {a.kind} and {b.kind}")
        if isinstance(a, SNumber) or isinstance(b, SNumber):
            return self.mixed_binop(op, a, b)
        if isinstance(a, SFloat) or isinstance(b, SFloat) or op == "/":
            return self.float_binop(op, a, b)
        x, y = self.int_expr(a), self.int_expr(b)
        if op == "+":
            return SInt(x + y)
        if op == "-":
            return SInt(x - y)
        if op == "*":
            return SInt(x * y)
        if op in ("//", "%"):
            self.error(y == 0, "ZeroDivisionError")
            # z3 integer division is Euclidean; Python floors. For y > 0 they agree;
            # for y < 0, floor(x / y) == floor(-x / -y).
            safe = z3_if(y == 0, int_val(1), y)
            quotient = z3.If(safe > 0, x / safe, (-x) / (-safe))
            if op == "//":
                return SInt(quotient)
            return SInt(x - safe * quotient)
        if op == "**":
            if z3.is_int_value(y) and 0 <= y.as_long() <= 8:
                result: z3.ArithRef = int_val(1)
                for _ in range(y.as_long()):
                    result = result * x
                return SInt(z3.simplify(result) if z3.is_int_value(x) else result)
            raise Opaque("`**` with a symbolic or large exponent")
        raise Opaque(f"operator {op} on ints")

    def mixed_binop(self, op: str, a: Sym, b: Sym) -> Sym:
        """``a op b`` where one side is an int or a float (``SNumber``). With a float
        on the other side, Python converts an int first: float arithmetic. Otherwise
        ``+ - *`` are int arithmetic when both are ints, float arithmetic else."""
        plain_float = [isinstance(v, SFloat) and not isinstance(v, SNumber) for v in (a, b)]
        if any(plain_float):
            return self.float_binop(op, a, b)
        if op not in ("+", "-", "*"):
            raise Opaque(f"`{op}` on a value that is an int or a float")

        def is_int(v: Sym) -> z3.BoolRef:
            return v.is_int if isinstance(v, SNumber) else true()

        def int_view(v: Sym) -> Sym:
            return SInt(z3.ToInt(v.r)) if isinstance(v, SNumber) else v

        both_int = z3_and(is_int(a), is_int(b))
        with self.only_when(both_int):
            ints = self.binop(op, int_view(a), int_view(b))
        with self.only_when(z3_not(both_int)):
            floats = self.float_binop(op, a, b)
        return self.ite(both_int, ints, floats)

