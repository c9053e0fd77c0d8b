"""IEEE-754 doubles over the reals: float classes, rounding, float arithmetic.

A float is a tag (finite, ``nan``, ``+inf``, ``-inf``) and, when finite, a real
value. ``nan`` compares unequal to everything, ``inf - inf`` is ``nan``, ``x / 0.0``
raises. Comparisons are exact (Python compares an int with a float exactly,
without converting it). Every *rounded* operation (float ``+ - * / %``, int to
float conversion, int ``/`` int, ``**``) is a sound over-approximation
(``rounded``): a fresh value within the rounding error bound of the exact real
result (``2**-53·|exact| + 2**-1075``, covering subnormals and underflow to 0.0),
of the same sign, equal to it when it is evidently a double; ``±inf`` exactly
when ``|exact| >= 2**1024 - 2**970`` (the round-to-nearest-even overflow
threshold), or ``OverflowError`` where Python raises instead (int to float, int /
int, ``**``). Each rounding is existentially quantified, so the modelled pass
*and* fail sets both contain Python's: a refutation (``fail``, ``warn``,
``unsatisfiable``) holds for real doubles, and a ``pass`` rests on a witness
replayed through real Python. Why reals and not z3's ``FPSort(11, 53)``: most
predicates only compare floats with constants, and over the reals these stay
linear (fast, and ``qe`` eliminates the output for the pre-flight), where
bit-blasted doubles are slow and mix badly with exact int/float comparisons.
Constant operands are computed by Python itself (exact).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.logic import z3_and, z3_if, z3_not, z3_or
from hoare.verifier.translate.values import (
    EXACT_INTS,
    FIN,
    FLOAT_MAX,
    HALF_SUBNORMAL,
    NAN,
    NINF,
    OVERFLOW,
    PINF,
    UNIT_ROUNDOFF,
    Opaque,
    SBool,
    SEnum,
    SFloat,
    SInt,
    SNumber,
    Sym,
    bool_val,
    double_value,
    float_const,
    fresh_name,
    int_val,
    real_val,
    tag_is,
)
from hoare.verifier.translate.views import ValueViews


def _fraction(e: z3.ArithRef) -> Fraction | None:
    """The value of a numeral, else None."""
    if z3.is_int_value(e):
        return Fraction(e.as_long())
    if z3.is_rational_value(e):
        return Fraction(e.numerator_as_long(), e.denominator_as_long())
    return None


def _power_of_two(value: SFloat) -> int | None:
    """``k`` when ``value`` is the constant ``±2**k`` (scaling by it is exact but for
    overflow and subnormal results)."""
    if not (z3.is_int_value(value.tag) and value.tag.as_long() == FIN):
        return None
    q = _fraction(value.r)
    if q is None or q == 0:
        return None
    n, d = abs(q.numerator), q.denominator
    if d == 1 and n & (n - 1) == 0:
        return n.bit_length() - 1
    if n == 1 and d & (d - 1) == 0:
        return -(d.bit_length() - 1)
    return None


def _is_zero(e: z3.ArithRef) -> bool:
    return _fraction(e) == 0


def _python_number(value: Sym) -> int | float | None:
    """The Python number a constant ``Sym`` stands for (None when symbolic)."""
    if isinstance(value, SBool) and (is_true(value.e) or is_false(value.e)):
        return is_true(value.e)
    if isinstance(value, SInt) and z3.is_int_value(value.e):
        return int(value.e.as_long())
    if isinstance(value, SFloat) and not isinstance(value, SNumber) and \
            z3.is_int_value(value.tag):
        tag = value.tag.as_long()
        if tag == NAN:
            return math.nan
        if tag in (PINF, NINF):
            return math.inf if tag == PINF else -math.inf
        q = _fraction(value.r)
        return double_value(q) if q is not None else None
    return None


def negated(value: SFloat) -> SFloat:
    """``-x`` of a float (or of an ``SNumber``, which stays one): the sign of the
    value flips, and ``+inf``/``-inf`` swap tags."""
    tag = value.tag
    if not z3.is_int_value(tag):
        tag = z3.If(tag == PINF, NINF, z3.If(tag == NINF, PINF, tag))
    elif tag.as_long() in (PINF, NINF):
        tag = int_val(NINF if tag.as_long() == PINF else PINF)
    if isinstance(value, SNumber):
        return SNumber(tag, -value.r, value.is_int)
    return SFloat(tag, -value.r)


class FloatSemantics(ValueViews):
    """Float classes (``math.isnan`` & co.), rounding and float arithmetic."""

    def is_nan(self, value: Sym) -> SBool:
        """``math.isnan(x)``: an int or bool is never nan; other types raise."""
        return self.float_class("isnan", value)

    def is_inf(self, value: Sym) -> SBool:
        return self.float_class("isinf", value)

    def is_finite(self, value: Sym) -> SBool:
        return self.float_class("isfinite", value)

    def float_class(self, name: str, value: Sym) -> SBool:
        value = self.numeric(self.unwrap(value))
        if isinstance(value, (SInt, SBool)):
            # math.isfinite(n) converts n to float: a huge int raises OverflowError
            self.to_double(value)
            return SBool(bool_val(name == "isfinite"))
        if not isinstance(value, SFloat):
            self.not_a_number(value, f"math.{name}()")
            return SBool(false())
        if isinstance(value, SNumber):
            self.to_double(value)  # an int is converted: a huge one raises OverflowError
        self.uses_float = True
        if name == "isnan":
            return SBool(tag_is(value.tag, NAN))
        if name == "isinf":
            return SBool(z3_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)))
        return SBool(tag_is(value.tag, FIN))

    # -- IEEE-754 doubles ----------------------------------------------------------------
    def rounded(self, exact: z3.ArithRef, overflow: str | None = None,
                integral: bool = False, ulps: int = 1, scaled: int | None = None) -> SFloat:
        """The double nearest to the real ``exact`` (round-to-nearest-even), as a sound
        over-approximation: a fresh value within ``ulps * 2**-53 * |exact| +
        ulps * 2**-1075`` of ``exact``, of the same sign (or zero), and never past a
        double that is evidently one (rounding is monotonic and leaves doubles alone):
        between the integers around ``exact`` when ``|exact| <= 2**53``, between the
        multiples of 2**-32 around it when ``|exact| <= 2**21``. ``|exact| >=
        OVERFLOW`` gives ``±inf``, or raises ``overflow`` when given (int to float
        conversion, int / int). ``integral``: ``exact`` is known to be an integer.
        ``scaled``: ``exact`` is a double times ``2**scaled``, which is exact when
        ``scaled >= 0`` (up to overflow) and loses subnormal bits only otherwise."""
        self.uses_float = True
        q = _fraction(exact)
        if q is not None:
            if abs(q) >= OVERFLOW:
                if overflow is not None:
                    self.error(true(), overflow)
                    return SFloat(int_val(FIN), real_val(0))
                return SFloat(int_val(PINF if q > 0 else NINF), real_val(0))
            return float_const(float(q))  # Fraction -> float rounds correctly
        magnitude = z3_if(exact >= 0, exact, -exact)
        fits = magnitude < real_val(OVERFLOW)
        if overflow is not None:
            self.error(z3_not(fits), overflow)
        memo: dict[tuple[int, int, bool, int | None], tuple[z3.ArithRef, z3.ArithRef]] = \
            self.__dict__.setdefault(
            "_rounding_memo", {})
        key = (exact.get_id(), ulps, integral, scaled)
        if scaled is not None and scaled >= 0:
            value = exact
        elif key in memo:  # the same expression rounds to the same double
            value = memo[key][1]
        else:
            value = z3.Real(fresh_name("rounded"))
            memo[key] = (exact, value)  # keeps `exact` alive: its id is not reused
            # a bound, not the double: a claim that no replay backs (the pre-flight's
            # "satisfiable", post_total's "pass") must not rest on it
            self.havoc_note("float rounding of a computed value (modelled within its "
                            "error bound)")
            slack = real_val(HALF_SUBNORMAL) if scaled is not None else \
                real_val(UNIT_ROUNDOFF * ulps) * magnitude + real_val(HALF_SUBNORMAL * ulps)
            bounds = [value - exact <= slack, exact - value <= slack,
                      z3.Implies(exact >= 0, value >= 0), z3.Implies(exact <= 0, value <= 0),
                      value <= real_val(FLOAT_MAX), value >= -real_val(FLOAT_MAX)]
            if integral:
                bounds.append(z3.Implies(magnitude <= EXACT_INTS, value == exact))
            else:
                # correctly (or faithfully, for pow) rounded: never past a neighbouring
                # double, and these grids are made of doubles
                for step, reach in ((1, EXACT_INTS), (Fraction(1, 2**32), 2**21)):
                    scale = real_val(1 / Fraction(step))
                    below = z3.ToReal(z3.ToInt(exact * scale)) / scale
                    above = -z3.ToReal(z3.ToInt(-exact * scale)) / scale
                    bounds.append(z3.Implies(magnitude <= reach,
                                             z3.And(value >= below, value <= above)))
            self.define(z3.Implies(fits, z3.And(*bounds)))
        if overflow is not None:
            return SFloat(int_val(FIN), value)
        tag = z3_if(fits, int_val(FIN), z3_if(exact > 0, int_val(PINF), int_val(NINF)))
        return SFloat(tag, value)

    def to_double(self, value: Sym) -> SFloat:
        """An operand of float arithmetic: an int is converted first (rounded; a huge
        one raises ``OverflowError``), as Python does."""
        self.uses_float = True
        if isinstance(value, SEnum):
            return self.to_double(self.enum_value(value))
        if isinstance(value, SNumber):
            # an int is converted (rounded, or OverflowError); a float is itself
            converted = self.rounded(value.r, integral=True)
            self.error(z3_and(value.is_int, z3_not(tag_is(converted.tag, FIN))), "OverflowError")
            return SFloat(z3_if(value.is_int, int_val(FIN), value.tag),
                          z3_if(value.is_int, converted.r, value.r))
        if isinstance(value, SFloat):
            return value
        if isinstance(value, SBool):
            return SFloat(int_val(FIN), z3_if(value.e, real_val(1), real_val(0)))
        return self.rounded(z3.ToReal(self.int_expr(value)), "OverflowError", integral=True)

    def float_binop(self, op: str, a: Sym, b: Sym) -> Sym:
        """Float ``+ - * / // % **`` (and int ``/``) with Python's results: rounded
        (``rounded``), overflow to ``±inf``, ``nan`` and infinities by IEEE-754, zero
        divisors raising. Constant operands are computed by Python itself."""
        self.uses_float = True
        folded = self.fold(op, a, b)
        if folded is not None:
            return folded
        if op == "/" and not isinstance(a, SFloat) and not isinstance(b, SFloat):
            # int / int is correctly rounded from the exact quotient (no conversion first)
            x, y = self.int_expr(a), self.int_expr(b)
            self.error(y == 0, "ZeroDivisionError")
            safe = z3_if(y == 0, int_val(1), y)
            return self.rounded(z3.ToReal(x) / z3.ToReal(safe), "OverflowError")
        if op == "**":
            return self.float_power(a, b)
        x, y = self.to_double(a), self.to_double(b)
        fin_x, fin_y = tag_is(x.tag, FIN), tag_is(y.tag, FIN)
        nan_x, nan_y = tag_is(x.tag, NAN), tag_is(y.tag, NAN)
        pinf_x, pinf_y = tag_is(x.tag, PINF), tag_is(y.tag, PINF)
        ninf_x, ninf_y = tag_is(x.tag, NINF), tag_is(y.tag, NINF)
        inf_x, inf_y = z3_or(pinf_x, ninf_x), z3_or(pinf_y, ninf_y)
        both = z3_and(fin_x, fin_y)
        if op == "-":
            return self.float_binop("+", x, negated(y))
        if op == "+":
            nan = z3_or(nan_x, nan_y, z3_and(pinf_x, ninf_y), z3_and(ninf_x, pinf_y))
            if _is_zero(x.r) and is_true(fin_x):
                total = SFloat(y.tag, y.r)  # 0.0 + y == y exactly (up to the sign of 0)
            elif _is_zero(y.r) and is_true(fin_y):
                total = SFloat(x.tag, x.r)
            else:
                total = self.rounded(x.r + y.r) if not is_false(both) else \
                    SFloat(int_val(FIN), real_val(0))
            tag = z3_if(nan, int_val(NAN), z3_if(z3_or(pinf_x, pinf_y), int_val(PINF),
                                             z3_if(z3_or(ninf_x, ninf_y), int_val(NINF),
                                                 total.tag)))
            return SFloat(tag, total.r)
        if op == "*":
            zero_x, zero_y = z3_and(fin_x, x.r == 0), z3_and(fin_y, y.r == 0)
            nan = z3_or(nan_x, nan_y, z3_and(inf_x, zero_y), z3_and(inf_y, zero_x))
            pos_x = z3_if(fin_x, x.r > 0, pinf_x)
            pos_y = z3_if(fin_y, y.r > 0, pinf_y)
            power = _power_of_two(y) if _power_of_two(y) is not None else _power_of_two(x)
            product = self.rounded(x.r * y.r, scaled=power) if not is_false(both) else \
                SFloat(int_val(FIN), real_val(0))
            tag = z3_if(nan, int_val(NAN), z3_if(z3_or(inf_x, inf_y),
                                             z3_if(pos_x == pos_y, int_val(PINF), int_val(NINF)),
                                             product.tag))
            return SFloat(tag, product.r)
        if op == "/":
            self.error(z3_and(fin_y, y.r == 0), "ZeroDivisionError")
            nan = z3_or(nan_x, nan_y, z3_and(inf_x, inf_y))
            pos_x = z3_if(fin_x, x.r > 0, pinf_x)
            pos_y = z3_if(fin_y, y.r > 0, pinf_y)
            safe = z3_if(y.r == 0, real_val(1), y.r)
            power = _power_of_two(y)
            quotient = self.rounded(x.r / safe, scaled=None if power is None else -power) \
                if not is_false(both) else SFloat(int_val(FIN), real_val(0))
            tag = z3_if(nan, int_val(NAN), z3_if(inf_x, z3_if(pos_x == pos_y, int_val(PINF),
                                                        int_val(NINF)),
                                             z3_if(inf_y, int_val(FIN), quotient.tag)))
            return SFloat(tag, z3_if(both, quotient.r, real_val(0)))
        if op in ("//", "%"):
            self.error(z3_and(fin_y, y.r == 0), "ZeroDivisionError")
            safe = z3_if(y.r == 0, real_val(1), y.r)
            ratio = x.r / safe
            floor = z3.ToReal(z3.ToInt(ratio))
            exact: Sym
            if op == "%":
                # fmod is exact; Python adds the divisor when the signs differ (rounded)
                exact = self.rounded(x.r - safe * floor)
            else:
                # (x - fmod(x, y)) / y, then snapped to an integer: exact while the
                # quotient stays below 2**50; beyond it, any value
                small = z3_and(ratio < 2**50, ratio > -2**50)
                exact = SFloat(int_val(FIN), floor)
                if not is_true(small):
                    exact = self.ite(small, exact, self.havoc_float(
                        "float `//` with a quotient of 2**50 or more"))
            if is_true(both):
                return exact
            return self.ite(both, exact, self.havoc_float(f"float `{op}` with nan/inf"))
        raise Opaque(f"operator {op} on floats")

    def float_power(self, a: Sym, b: Sym) -> Sym:
        """``x ** k`` for a float ``x`` and a constant ``k`` in 0..4: C's ``pow``, within
        one ulp (it need not round correctly); a finite result too large raises
        ``OverflowError`` (Python does not return ``inf`` there)."""
        if not (isinstance(b, SInt) and z3.is_int_value(b.e) and 0 <= b.e.as_long() <= 4):
            raise Opaque("float `**` with an exponent other than a constant 0..4")
        if not isinstance(a, SFloat) or isinstance(a, SNumber):
            raise Opaque("`**` of an int by a float, or of a value that is an int or a float")
        k = b.e.as_long()
        if k == 0:
            return SFloat(int_val(FIN), real_val(1))  # even nan ** 0 == 1.0
        if k == 1:
            return a
        exact: z3.ArithRef = a.r
        for _ in range(k - 1):
            exact = exact * a.r
        magnitude = z3_if(exact >= 0, exact, -exact)
        overflowed = z3.Bool(fresh_name("pow.overflow"))
        # pow's result is inf only near or above FLOAT_MAX, finite only below 2**1025
        self.define(z3.Implies(overflowed, magnitude >= real_val(FLOAT_MAX / 2)))
        self.define(z3.Implies(z3.Not(overflowed), magnitude <= real_val(2 * OVERFLOW)))
        fin = tag_is(a.tag, FIN)
        self.error(z3_and(fin, overflowed), "OverflowError")
        value = self.rounded(exact, ulps=2)
        negative_inf = tag_is(a.tag, NINF) if k % 2 else false()
        tag = z3_if(tag_is(a.tag, NAN), int_val(NAN),
                  z3_if(negative_inf, int_val(NINF),
                      z3_if(fin, int_val(FIN), int_val(PINF))))
        return SFloat(tag, value.r)

    def fold(self, op: str, a: Sym, b: Sym) -> Sym | None:
        """``a op b`` computed by Python when both are constants (exact)."""
        x, y = _python_number(a), _python_number(b)
        if x is None or y is None:
            return None
        try:
            operations: dict[str, Callable[[], int | float]] = {
                "+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                "/": lambda: x / y, "//": lambda: x // y, "%": lambda: x % y,
                "**": lambda: x ** y}
            result = operations[op]()
        except (ZeroDivisionError, OverflowError, ValueError) as error:
            self.error(true(), type(error).__name__)
            return SFloat(int_val(FIN), real_val(0))
        except KeyError:
            return None
        if isinstance(result, float):
            return float_const(result)
        if isinstance(result, int) and not isinstance(result, bool):
            return SInt(int_val(result))
        return None

    def float_less(self, op: str, a: SFloat, b: SFloat) -> z3.BoolRef:
        not_nan = z3_and(z3_not(tag_is(a.tag, NAN)), z3_not(tag_is(b.tag, NAN)))

        def rank(t: z3.ArithRef) -> z3.ArithRef:
            if z3.is_int_value(t):
                return int_val({NINF: 0, FIN: 1, PINF: 2, NAN: 1}[t.as_long()])
            return z3.If(t == NINF, 0, z3.If(t == PINF, 2, 1))

        both_fin = z3_and(tag_is(a.tag, FIN), tag_is(b.tag, FIN))
        strictly = z3_or(rank(a.tag) < rank(b.tag), z3_and(both_fin, a.r < b.r))
        if op == "<":
            return z3_and(not_nan, strictly)
        same = z3_and(a.tag == b.tag, z3_or(z3_not(tag_is(a.tag, FIN)), a.r == b.r))
        return z3_and(not_nan, z3_or(strictly, same))

