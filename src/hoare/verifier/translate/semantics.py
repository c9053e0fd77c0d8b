"""Python's operators on symbolic values, with Python's semantics, not z3's.

* ``//`` and ``%`` floor (Python) where z3's integer ``/`` and ``%`` are Euclidean;
  a zero divisor *raises* (``ZeroDivisionError``), which makes the predicate fail.
* ``s[i]`` with a negative ``i`` counts from the end (z3's ``SubString(s, -1, 1)``
  is ``""``); out of range raises ``IndexError``.
* floats are IEEE-754 doubles: a tag (finite, ``nan``, ``+inf``, ``-inf``) and,
  when finite, a real value. ``nan`` compares unequal to everything, ``inf - inf``
  is ``nan``, ``x / 0.0`` raises. Comparisons are exact (Python compares an int
  with a float exactly, without converting it). Every *rounded* operation (float
  ``+ - * / %``, int to float conversion, int ``/`` int, ``**``) is a sound
  over-approximation (``rounded``): a fresh value within the rounding error bound
  of the exact real result (``2**-53·|exact| + 2**-1075``, covering subnormals and
  underflow to 0.0), of the same sign, equal to it when it is evidently a double;
  ``±inf`` exactly when ``|exact| >= 2**1024 - 2**970`` (the round-to-nearest-even
  overflow threshold), or ``OverflowError`` where Python raises instead (int to
  float, int / int, ``**``). Each rounding is existentially quantified, so the
  modelled pass *and* fail sets both contain Python's: a refutation (``fail``,
  ``warn``, ``unsatisfiable``) holds for real doubles, and a ``pass`` rests on a
  witness replayed through real Python. Why reals and not z3's ``FPSort(11, 53)``:
  most predicates only compare floats with constants, and over the reals these
  stay linear (fast, and ``qe`` eliminates the output for the pre-flight), where
  bit-blasted doubles are slow and mix badly with exact int/float comparisons.
  Constant operands are computed by Python itself (exact).
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
import enum
import functools
import math
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.unicode_classes import plain_strings
from hoare.verifier.translate.values import (
    EXACT_INTS,
    FIN,
    FLOAT_MAX,
    HALF_SUBNORMAL,
    NAN,
    NINF,
    NONE,
    OVERFLOW,
    PINF,
    UNIT_ROUNDOFF,
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
    SObj,
    SOpaque,
    SOpt,
    SStr,
    SStripped,
    STruth,
    Sym,
    bool_val,
    const_to_sym,
    double_value,
    float_const,
    fresh_name,
    int_val,
    real_val,
)

__all__ = ["Semantics"]



def tag_is(tag: z3.ArithRef, k: int) -> z3.BoolRef:
    """``tag == k``, folded when the tag is a numeral (most floats are known finite)."""
    if z3.is_int_value(tag):
        return bool_val(tag.as_long() == k)
    return tag == k


def _and(*parts: z3.BoolRef) -> z3.BoolRef:
    kept = [p for p in parts if not is_true(p)]
    if any(is_false(p) for p in kept):
        return false()
    if not kept:
        return true()
    return kept[0] if len(kept) == 1 else z3.And(*kept)


def _or(*parts: z3.BoolRef) -> z3.BoolRef:
    kept = [p for p in parts if not is_false(p)]
    if any(is_true(p) for p in kept):
        return true()
    if not kept:
        return false()
    return kept[0] if len(kept) == 1 else z3.Or(*kept)


def _not(p: z3.BoolRef) -> z3.BoolRef:
    if is_true(p):
        return false()
    if is_false(p):
        return true()
    return z3.Not(p)


def _if(c: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    if is_true(c):
        return a
    if is_false(c):
        return b
    return z3.If(c, a, b)


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
        return value.e.as_long()
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


SETS = ("set", "frozenset", "setlit")  # SColl containers that are sets ("setlit": a display)


def _identity_eq(obj: object) -> bool:
    """Is ``==`` on ``obj`` identity? (modules, functions and builtins, classes whose
    metaclass is ``type`` or ``EnumMeta``: none of them define ``__eq__``)."""
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                        types.MethodType)):
        return True
    return isinstance(obj, type) and type(obj) in (type, enum.EnumMeta)


_OPERATORS = ("__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__",
              "__contains__", "__add__", "__radd__", "__mul__", "__rmul__", "__mod__",
              "__len__", "__bool__", "__str__", "__format__", "__getitem__", "__iter__",
              "__int__", "__index__", "__float__", "__abs__", "__neg__")


@functools.lru_cache(maxsize=256)
def _mixin_data_is_value(cls: type, mixin: type) -> bool:
    """Does every member of the mixin enum ``cls`` hold exactly its ``.value`` as its
    ``mixin`` data, with ``mixin``'s operators (none redefined below it)?"""
    for klass in cls.__mro__:
        if klass is mixin:
            break
        if klass.__module__ == "enum":
            continue
        for name in _OPERATORS:
            found = klass.__dict__.get(name)
            if found is None:
                continue
            function = getattr(found, "__func__", found)
            if getattr(function, "__module__", None) != "enum" and not any(
                    function is getattr(b, name, None) for b in (str, int, float, object)):
                return False  # written by the user (the enum machinery copies its own)
    data = {str: str.__str__, int: int.__index__, float: float.__float__}[mixin]
    try:
        return all(type(m.value) is mixin and data(m) == m.value  # type: ignore[operator]
                   for m in cls)  # type: ignore[attr-defined]
    except Exception:  # a member's own code may raise anything
        return False


def open_model_reason(model: SModel) -> str:
    """Why a construct on an open model (``SModel.open``) is not modelled."""
    name = model.cls.__name__
    return (f"{model.path}, a {name} built in Python: it may be an instance of a subclass "
            f"of {name} with its own methods (pydantic keeps it as it is unless "
            f"{name}.model_config sets revalidate_instances)")


class Semantics:
    """Operators on ``Sym``s. Subclasses provide ``error`` (record a raise),
    ``define`` (a definitional side constraint) and ``havoc_note``."""

    uses_float = False

    # -- hooks ------------------------------------------------------------------------
    def error(self, cond: z3.BoolRef, exc: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def define(self, constraint: z3.BoolRef) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def havoc_note(self, reason: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def havoc_bool(self, reason: str) -> z3.BoolRef:
        self.havoc_note(reason)
        return z3.Bool(fresh_name("havoc"))

    def havoc_float(self, reason: str) -> SFloat:
        self.havoc_note(reason)
        tag = z3.Int(fresh_name("havoc.tag"))
        self.define(z3.And(tag >= FIN, tag <= NINF))
        return SFloat(tag, z3.Real(fresh_name("havoc")))

    def has_non_space(self, s: z3.SeqRef) -> z3.BoolRef:
        """``bool(s.strip())``: ``s`` has a character that is not ``str.isspace``."""
        from hoare.verifier.translate import unicode_classes as uc

        not_space = uc.complement(uc.class_ranges("space"))
        anything = z3.Full(z3.ReSort(z3.StringSort()))
        return z3.InRe(s, z3.Concat(anything, uc.ranges_re(not_space), anything))

    # -- basic views --------------------------------------------------------------------
    def unwrap(self, value: Sym, exc: str = "TypeError") -> Sym:
        """The non-None part of an optional; using ``None`` raises ``exc``."""
        if isinstance(value, SOpt):
            self.error(value.none, exc)
            return self.unwrap(value.inner, exc)
        if isinstance(value, SNone):
            self.error(true(), exc)
        if isinstance(value, SOpaque):
            raise Opaque(value.reason)
        return value

    def truthy(self, value: Sym) -> z3.BoolRef:
        if isinstance(value, SBool):
            return value.e
        if isinstance(value, STruth):
            return value.e
        if isinstance(value, SInt):
            return value.e != 0
        if isinstance(value, SFloat):
            self.uses_float = True
            return _or(_not(tag_is(value.tag, FIN)), value.r != 0)
        if isinstance(value, SStripped):
            return self.has_non_space(value.source)
        if isinstance(value, SStr):
            return z3.Length(value.e) > 0
        if isinstance(value, SNone):
            return false()
        if isinstance(value, SOpt):
            return _and(_not(value.none), self.truthy(value.inner))
        if isinstance(value, SList):
            return value.n > 0
        if isinstance(value, SColl):
            return bool_val(bool(value.items))
        if isinstance(value, SModel):
            if value.open:  # a subclass may define __bool__ or __len__
                return self.havoc_bool(f"truth of {open_model_reason(value)}")
            return true()  # BaseModel defines neither __bool__ nor __len__
        if isinstance(value, SEnum):
            if issubclass(value.cls, (int, str, float)):
                return self.truthy(self.base(value))
            return true()
        if isinstance(value, SOpaque):
            if value.truthy is not None:
                return bool_val(value.truthy)
            raise Opaque(value.reason)
        if isinstance(value, SObj):
            if isinstance(value.obj, (type, type(len))) or callable(value.obj):
                return true()
        raise Opaque(f"truthiness of {value.kind}")

    def passes(self, value: Sym) -> z3.BoolRef:
        """A predicate's return value passes: ``None`` or truthy (spec §3.2)."""
        if isinstance(value, SNone):
            return true()
        if isinstance(value, SOpt):
            return _or(value.none, self.passes(value.inner))
        return self.truthy(value)

    # -- numbers ------------------------------------------------------------------------
    @staticmethod
    def is_number(value: Sym) -> bool:
        return isinstance(value, (SInt, SBool, SFloat)) or (
            isinstance(value, SEnum) and issubclass(value.cls, (int, float))
            and not issubclass(value.cls, bool))

    def not_a_number(self, value: Sym, what: str) -> None:
        """``what`` applied to a value that is not a number raises ``TypeError`` —
        unless the value's type is unknown (``a if c else b`` of an int and a float
        is known only by its truthiness): then the construct is opaque."""
        if isinstance(value, (STruth, SOpaque, SObj)):
            raise Opaque(f"{what} of a value of unknown type")
        self.type_error(value)

    def type_error(self, *operands: Sym) -> None:
        """An operation the operands' types do not support raises ``TypeError`` —
        unless an operand is an open model (``SModel.open``): a subclass may define
        the dunder method, so the construct is opaque."""
        for operand in operands:
            if isinstance(operand, SModel) and operand.open:
                raise Opaque(f"an operation on {open_model_reason(operand)}")
        self.error(true(), "TypeError")

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
            return SBool(_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)))
        return SBool(tag_is(value.tag, FIN))

    def int_expr(self, value: Sym) -> z3.ArithRef:
        if isinstance(value, SInt):
            return value.e
        if isinstance(value, SBool):
            return _if(value.e, int_val(1), int_val(0))
        raise Opaque(f"{value.kind} used as an int")

    def as_float(self, value: Sym) -> SFloat:
        self.uses_float = True
        if isinstance(value, SFloat):
            return value
        if isinstance(value, SEnum):
            return self.as_float(self.enum_value(value))
        return SFloat(int_val(FIN), z3.ToReal(self.int_expr(value)))

    def numeric(self, value: Sym) -> Sym:
        """A mixin enum member (``IntEnum``, ``StrEnum``…) is its value; a plain
        ``Enum`` member stays a member (arithmetic on it raises ``TypeError``)."""
        return self.base(value)

    def base(self, value: Sym) -> Sym:
        """A member of a ``str``/``int``/``float`` mixin enum (``(str, Enum)``,
        ``StrEnum``, ``IntEnum``, ``IntFlag``) used where its base type's methods run
        (``in``, ``startswith``, ``+``, ``==``, ``<``): the base-type data it holds.
        That is its ``.value`` only when every member's value has exactly the base
        type and equals the data (``class E(str, Enum): A = 1`` holds ``'1'``);
        otherwise, or when the enum defines its own operators, it is opaque."""
        if not isinstance(value, SEnum):
            return value
        mixin = next((t for t in (str, int, float) if issubclass(value.cls, t)), None)
        if mixin is None:
            return value
        if not _mixin_data_is_value(value.cls, mixin):
            raise Opaque(f"{value.cls.__name__} members used as {mixin.__name__}: their "
                         f"data is not exactly their value, or the enum defines operators")
        return self.enum_value(value)

    # -- enums --------------------------------------------------------------------------
    def enum_value(self, value: SEnum) -> Sym:
        members = value.members
        syms = [const_to_sym(m.value) for m in members]
        if not members:
            raise Opaque("empty enum")
        result = syms[-1]
        for index in range(len(members) - 2, -1, -1):
            result = self.ite(value.idx == index, syms[index], result)
        if isinstance(result, STruth):
            raise Opaque(f"values of {value.cls.__name__} have mixed types")
        return result

    def enum_name(self, value: SEnum) -> Sym:
        members = value.members
        result: Sym = const_to_sym(members[-1].name)
        for index in range(len(members) - 2, -1, -1):
            result = self.ite(value.idx == index, const_to_sym(members[index].name), result)
        return result

    # -- merging ------------------------------------------------------------------------
    def ite(self, cond: z3.BoolRef, a: Sym, b: Sym) -> Sym:
        """``a if cond else b`` as one symbolic value (same kinds), else truthiness only."""
        if is_true(cond):
            return a
        if is_false(cond):
            return b
        if isinstance(a, SInt) and isinstance(b, SInt):
            return SInt(z3.If(cond, a.e, b.e))
        if isinstance(a, SBool) and isinstance(b, SBool):
            return SBool(z3.If(cond, a.e, b.e))
        if self.mixed(a, b):
            x, y = self.as_number(a), self.as_number(b)
            return SNumber(z3.If(cond, x.tag, y.tag), z3.If(cond, x.r, y.r),
                           _if(cond, x.is_int, y.is_int))
        if isinstance(a, SFloat) and isinstance(b, SFloat):
            return SFloat(z3.If(cond, a.tag, b.tag), z3.If(cond, a.r, b.r))
        if isinstance(a, SStr) and isinstance(b, SStr):
            return SStr(z3.If(cond, a.e, b.e))
        if isinstance(a, SEnum) and isinstance(b, SEnum) and a.cls is b.cls:
            return SEnum(a.cls, z3.If(cond, a.idx, b.idx))
        if isinstance(a, SNone) and isinstance(b, SNone):
            return NONE
        if isinstance(a, SNone) and not isinstance(b, SOpaque):
            if isinstance(b, SOpt):
                return SOpt(_or(cond, b.none), b.inner)
            return SOpt(cond, b)
        if isinstance(b, SNone) and not isinstance(a, SOpaque):
            if isinstance(a, SOpt):
                return SOpt(_or(_not(cond), a.none), a.inner)
            return SOpt(_not(cond), a)
        if isinstance(a, SOpt) and isinstance(b, SOpt):
            inner = self.ite(cond, a.inner, b.inner)
            if not isinstance(inner, STruth):
                return SOpt(z3.If(cond, a.none, b.none), inner)
        if isinstance(a, SOpt) and not isinstance(b, (SOpt, SOpaque)):
            inner = self.ite(cond, a.inner, b)
            if not isinstance(inner, STruth):
                return SOpt(_and(cond, a.none), inner)
        if isinstance(b, SOpt) and not isinstance(a, (SOpt, SOpaque)):
            inner = self.ite(cond, a, b.inner)
            if not isinstance(inner, STruth):
                return SOpt(_and(_not(cond), b.none), inner)
        if isinstance(a, SModel) and isinstance(b, SModel) and a.cls is b.cls:
            fields = {k: self.ite(cond, a.fields[k], b.fields[k]) for k in a.fields}
            if not any(isinstance(v, STruth) for v in fields.values()):
                return SModel(a.cls, fields, a.path, open=a.open or b.open)
        if isinstance(a, SObj) and isinstance(b, SObj) and a.obj is b.obj:
            return a
        return STruth(z3.If(cond, self.truthy(a), self.truthy(b)))

    # -- equality and identity -----------------------------------------------------------
    def eq(self, a: Sym, b: Sym) -> z3.BoolRef:
        if isinstance(a, SOpaque):
            raise Opaque(a.reason)
        if isinstance(b, SOpaque):
            raise Opaque(b.reason)
        if isinstance(a, SOpt):
            return _if(a.none, self.eq(NONE, b), self.eq(a.inner, b))
        if isinstance(b, SOpt):
            return _if(b.none, self.eq(a, NONE), self.eq(a, b.inner))
        if isinstance(a, SNone) or isinstance(b, SNone):
            return bool_val(isinstance(a, SNone) and isinstance(b, SNone))
        if isinstance(a, SEnum) and isinstance(b, SEnum) and a.cls is b.cls:
            return a.idx == b.idx
        if isinstance(a, SEnum) or isinstance(b, SEnum):
            enum_side = a if isinstance(a, SEnum) else b
            assert isinstance(enum_side, SEnum)
            if issubclass(enum_side.cls, (int, str, float)):  # mixed-in: compare data
                return self.eq(self.base(a), self.base(b))
            return false()
        if self.is_number(a) and self.is_number(b):
            if isinstance(a, SFloat) or isinstance(b, SFloat):
                x, y = self.as_float(a), self.as_float(b)
                return _and(_not(tag_is(x.tag, NAN)), _not(tag_is(y.tag, NAN)),
                            x.tag == y.tag, _or(_not(tag_is(x.tag, FIN)), x.r == y.r))
            return self.int_expr(a) == self.int_expr(b)
        if isinstance(a, SStr) and isinstance(b, SStr):
            for x, y in ((a, b), (b, a)):
                if isinstance(x, SStripped) and not isinstance(y, SStripped) and \
                        z3.is_string_value(y.e) and y.e.as_string() == "":
                    return _not(self.has_non_space(x.source))
            return a.e == b.e
        if isinstance(a, (SList, SColl)) and isinstance(b, (SList, SColl)):
            return self.seq_eq(a, b)
        if isinstance(a, SModel) or isinstance(b, SModel):
            if isinstance(a, SModel) and isinstance(b, SModel):
                raise Opaque("equality of pydantic models")
            model = a if isinstance(a, SModel) else b
            if model.open:  # a subclass's __eq__ may say anything
                raise Opaque(f"`==` with {open_model_reason(model)}")
            return false()
        if isinstance(a, SObj) or isinstance(b, SObj):
            return self.object_eq(a, b)
        if isinstance(a, STruth) or isinstance(b, STruth):
            raise Opaque("equality of a value of unknown type")
        if a.kind != b.kind:
            return false()
        raise Opaque(f"equality of {a.kind} values")

    @staticmethod
    def object_eq(a: Sym, b: Sym) -> z3.BoolRef:
        """``==`` with an ``SObj`` (a module, a function, a class, or a constant the
        verifier does not read as a value): decided only where ``==`` is identity
        (modules, functions, plain classes); otherwise unknown (a dict, a nested
        constant, a user object may define ``__eq__``)."""
        objects = [v.obj for v in (a, b) if isinstance(v, SObj)]
        if not all(_identity_eq(obj) for obj in objects):
            raise Opaque(f"equality with the constant {objects[0]!r:.40}"
                         if not _identity_eq(objects[0]) else
                         f"equality with the constant {objects[-1]!r:.40}")
        if len(objects) == 2:
            return bool_val(objects[0] is objects[1])
        return false()

    def item_eq(self, a: Sym, b: Sym) -> z3.BoolRef:
        """Two items compared inside a container (``==`` of lists, ``in``): Python
        tries ``is`` first, so a ``nan`` may equal itself there; when both may be a
        ``nan`` the result is free (which object a value is, is not modelled)."""
        same = self.eq(a, b)
        x, y = self.numeric(a), self.numeric(b)
        if isinstance(x, SFloat) and isinstance(y, SFloat):
            both_nan = _and(tag_is(x.tag, NAN), tag_is(y.tag, NAN))
            if not is_false(both_nan):
                return _or(same, _and(both_nan, self.havoc_bool(
                    "two nan items compared in a container (Python tries `is` first)")))
        return same

    def hashable(self, value: Sym) -> None:
        """Hashing ``value`` (``in`` a set): a list raises ``TypeError``; a model, or a
        value whose type is not known, is opaque."""
        value = self.unwrap(value) if isinstance(value, SOpt) else value
        if isinstance(value, (SList, SColl)) and value.container in ("list", "set", "setlit"):
            self.error(true(), "TypeError")  # unhashable
            return
        if isinstance(value, SColl):  # a tuple or frozenset hashes its items
            for item in value.items:
                self.hashable(item)
            return
        if isinstance(value, SList):  # a tuple field: its items are of one type
            self.hashable(value.slots[0] if value.slots else value.tail())
            return
        if isinstance(value, (SModel, SOpaque, SObj, STruth)):
            raise Opaque(f"hashing a {value.kind}")

    def seq_eq(self, a: Sym, b: Sym) -> z3.BoolRef:
        if isinstance(a, SColl) and isinstance(b, SList):
            a, b = b, a
        family = {"list": "list", "tuple": "tuple", **{name: "set" for name in SETS}}
        if family.get(a.container, a.container) != family.get(  # type: ignore[attr-defined]
                b.container, b.container):  # type: ignore[attr-defined]
            return false()  # [1] != (1,) != {1}
        if family.get(a.container) == "set":  # type: ignore[attr-defined]
            raise Opaque("equality of sets (unordered, by hash)")
        if isinstance(a, SColl) and isinstance(b, SColl):
            if len(a.items) != len(b.items):
                return false()
            return _and(*[self.item_eq(x, y) for x, y in zip(a.items, b.items, strict=True)])
        if isinstance(a, SList) and isinstance(b, SColl):
            k = len(b.items)
            if k > len(a.slots):
                return _and(a.n == k, self.havoc_bool("list compared past its slots"))
            return _and(a.n == k, *[self.item_eq(a.slots[i], b.items[i]) for i in range(k)])
        raise Opaque("equality of two symbolic lists")

    def is_(self, a: Sym, b: Sym) -> z3.BoolRef:
        """``a is b``: defined for ``None``, booleans and enum members (singletons)."""
        if isinstance(b, SNone) or isinstance(a, SNone):
            other = a if isinstance(b, SNone) else b
            if isinstance(other, SNone):
                return true()
            if isinstance(other, SOpt):
                return other.none
            if isinstance(other, SOpaque) and other.truthy is True:
                return false()
            if isinstance(other, SOpaque):
                raise Opaque(other.reason)
            return false()
        if isinstance(a, SNumber) or isinstance(b, SNumber):
            raise Opaque("`is` on a value whose type is known only at run time")
        if isinstance(a, SOpt):
            return _and(_not(a.none), self.is_(a.inner, b))
        if isinstance(b, SOpt):
            return _and(_not(b.none), self.is_(a, b.inner))
        if isinstance(a, SEnum) and isinstance(b, SEnum):
            return self.eq(a, b)
        if isinstance(a, SEnum) or isinstance(b, SEnum):
            other = a if isinstance(b, SEnum) else b
            if isinstance(other, (SInt, SStr, SFloat, SBool, SModel, SList)):
                return false()  # a member is never identical to a plain value
        if isinstance(a, SBool) and isinstance(b, SBool):
            return a.e == b.e
        if isinstance(a, SBool) or isinstance(b, SBool):
            other = a if isinstance(b, SBool) else b
            if isinstance(other, (SInt, SStr, SFloat, SList, SModel)):
                return false()
        raise Opaque("`is` between values other than None, booleans and enum members")

    # -- ordering -----------------------------------------------------------------------
    def compare(self, op: str, a: Sym, b: Sym) -> z3.BoolRef:
        """``<``, ``<=``, ``>``, ``>=``; ``None`` or mixed types raise ``TypeError``."""
        a = self.unwrap(a)
        b = self.unwrap(b)
        if op in (">", ">="):
            return self.compare("<" if op == ">" else "<=", b, a)
        if isinstance(a, SEnum) and not issubclass(a.cls, (int, str, float)):
            self.error(true(), "TypeError")
            return false()
        if isinstance(b, SEnum) and not issubclass(b.cls, (int, str, float)):
            self.error(true(), "TypeError")
            return false()
        a, b = self.numeric(a), self.numeric(b)
        if self.is_number(a) and self.is_number(b):
            if isinstance(a, SFloat) or isinstance(b, SFloat):
                return self.float_less(op, self.as_float(a), self.as_float(b))
            x, y = self.int_expr(a), self.int_expr(b)
            return x < y if op == "<" else x <= y
        if isinstance(a, SStr) and isinstance(b, SStr):
            # Exact on strings without reserved twins; a twin stands for an astral
            # character (above every z3 character), so there the result is free.
            exact = a.e < b.e if op == "<" else a.e <= b.e
            plain = _and(*(z3.InRe(s.e, plain_strings()) for s in (a, b)
                           if not z3.is_string_value(s.e)))
            if is_true(plain):
                return exact
            free = self.havoc_bool("ordering of strings holding astral characters")
            return z3.If(plain, exact, free)
        if isinstance(a, (SList, SColl, SModel, SObj, STruth)) or \
                isinstance(b, (SList, SColl, SModel, SObj, STruth)):
            if {a.kind, b.kind} <= {"list", "collection"}:
                raise Opaque("ordering of sequences")
            if isinstance(a, STruth) or isinstance(b, STruth):
                raise Opaque("ordering of a value of unknown type")
        self.type_error(a, b)
        return false()

    def float_less(self, op: str, a: SFloat, b: SFloat) -> z3.BoolRef:
        not_nan = _and(_not(tag_is(a.tag, NAN)), _not(tag_is(b.tag, NAN)))

        def rank(t: z3.ArithRef) -> z3.ArithRef:
            if z3.is_int_value(t):
                return int_val({NINF: 0, FIN: 1, PINF: 2, NAN: 1}[t.as_long()])
            return z3.If(t == NINF, 0, z3.If(t == PINF, 2, 1))

        both_fin = _and(tag_is(a.tag, FIN), tag_is(b.tag, FIN))
        strictly = _or(rank(a.tag) < rank(b.tag), _and(both_fin, a.r < b.r))
        if op == "<":
            return _and(not_nan, strictly)
        same = _and(a.tag == b.tag, _or(_not(tag_is(a.tag, FIN)), a.r == b.r))
        return _and(not_nan, _or(strictly, same))

    def index_operand(self, value: Sym, what: str) -> Sym | None:
        """``value`` used as ``what`` (an index, a slice bound): an int, a bool or an
        int enum member (``__index__``); another modelled type raises ``TypeError``
        (None is returned); a value whose type is not known is opaque."""
        value = self.base(self.unwrap(value))
        if isinstance(value, (SInt, SBool)):
            return value
        if isinstance(value, (STruth, SOpaque, SObj, SNumber)):
            raise Opaque(f"{what} of a value whose type is not known")
        self.type_error(value)
        return None

    def str_operand(self, value: Sym, what: str) -> SStr | None:
        """``value`` where a ``str`` method needs a ``str`` (``in``, ``startswith``'s
        argument, ``re.search``'s text): a str enum member is its data; a value of
        another modelled type raises ``TypeError`` (None is returned); a value whose
        type is not known makes ``what`` opaque."""
        value = self.base(self.unwrap(value))
        if isinstance(value, SStr):
            return value
        if isinstance(value, (STruth, SOpaque, SObj)):
            raise Opaque(f"{what} of a value of unknown type")
        self.type_error(value)
        return None

    # -- membership ---------------------------------------------------------------------
    def contains(self, container: Sym, item: Sym) -> z3.BoolRef:
        """``item in container``."""
        container = self.base(self.unwrap(container))
        if isinstance(container, SStr):
            text = self.str_operand(item, "`in` a str")
            return z3.Contains(container.e, text.e) if text is not None else false()
        if isinstance(container, SColl):
            if container.container in SETS:
                self.hashable(item)  # `in` a set hashes the item first
            return _or(*[self.item_eq(item, x) for x in container.items])
        if isinstance(container, SList):
            found = [_and(i < container.n, self.item_eq(slot, item))
                     for i, slot in enumerate(container.slots)]
            if not container.exact:
                found.append(_and(container.n > len(container.slots),
                                  self.havoc_bool(f"`in` past the verifier's bound on "
                                                  f"{container.path}")))
            return _or(*found)
        if isinstance(container, SEnum):
            raise Opaque("`in` on an enum member")
        if isinstance(container, SObj) and isinstance(container.obj, type) \
                and issubclass(container.obj, enum.Enum):
            raise Opaque("`in` on an Enum class")
        if isinstance(container, (SInt, SFloat, SBool, SNone)):
            self.error(true(), "TypeError")
            return false()
        raise Opaque(f"`in` on a {container.kind}")

    # -- arithmetic ---------------------------------------------------------------------
    def unary(self, op: str, value: Sym) -> Sym:
        if op == "not":
            return SBool(_not(self.truthy(value)))
        value = self.numeric(self.unwrap(value))
        if isinstance(value, SFloat):
            if op == "+":
                return value
            if op == "-":
                tag = value.tag
                if not z3.is_int_value(tag):
                    tag = z3.If(tag == PINF, NINF, z3.If(tag == NINF, PINF, tag))
                elif tag.as_long() in (PINF, NINF):
                    tag = int_val(NINF if tag.as_long() == PINF else PINF)
                if isinstance(value, SNumber):
                    return SNumber(tag, -value.r, value.is_int)
                return SFloat(tag, -value.r)
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
            safe = _if(y == 0, int_val(1), y)
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

    # -- values that are an int or a float --------------------------------------------------
    @staticmethod
    def mixed(a: Sym, b: Sym) -> bool:
        """Do ``a`` and ``b`` merge into an ``SNumber`` (numbers of different types;
        a bool counts as an int, and ``is`` on an ``SNumber`` is opaque)?"""
        numbers = (SInt, SBool, SFloat)
        if not (isinstance(a, numbers) and isinstance(b, numbers)):
            return False
        return isinstance(a, SNumber) or isinstance(b, SNumber) or type(a) is not type(b)

    @staticmethod
    def as_number(value: Sym) -> SNumber:
        if isinstance(value, SNumber):
            return value
        if isinstance(value, SFloat):
            return SNumber(value.tag, value.r, false())
        if isinstance(value, SBool):
            return SNumber(int_val(FIN), _if(value.e, real_val(1), real_val(0)), true())
        assert isinstance(value, SInt)
        return SNumber(int_val(FIN), z3.ToReal(value.e), true())

    @contextmanager
    def only_when(self, cond: z3.BoolRef) -> Iterator[None]:
        """Errors recorded inside raise only when ``cond`` also holds."""
        had_own = "error" in self.__dict__
        outer = self.error

        def error(c: z3.BoolRef, exc: str) -> None:
            outer(_and(cond, c), exc)

        self.error = error  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            if had_own:
                self.error = outer  # type: ignore[method-assign]
            else:
                del self.error

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

        both_int = _and(is_int(a), is_int(b))
        with self.only_when(both_int):
            ints = self.binop(op, int_view(a), int_view(b))
        with self.only_when(_not(both_int)):
            floats = self.float_binop(op, a, b)
        return self.ite(both_int, ints, floats)

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
        magnitude = _if(exact >= 0, exact, -exact)
        fits = magnitude < real_val(OVERFLOW)
        if overflow is not None:
            self.error(_not(fits), overflow)
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
        tag = _if(fits, int_val(FIN), _if(exact > 0, int_val(PINF), int_val(NINF)))
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
            self.error(_and(value.is_int, _not(tag_is(converted.tag, FIN))), "OverflowError")
            return SFloat(_if(value.is_int, int_val(FIN), value.tag),
                          _if(value.is_int, converted.r, value.r))
        if isinstance(value, SFloat):
            return value
        if isinstance(value, SBool):
            return SFloat(int_val(FIN), _if(value.e, real_val(1), real_val(0)))
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
            safe = _if(y == 0, int_val(1), y)
            return self.rounded(z3.ToReal(x) / z3.ToReal(safe), "OverflowError")
        if op == "**":
            return self.float_power(a, b)
        x, y = self.to_double(a), self.to_double(b)
        fin_x, fin_y = tag_is(x.tag, FIN), tag_is(y.tag, FIN)
        nan_x, nan_y = tag_is(x.tag, NAN), tag_is(y.tag, NAN)
        pinf_x, pinf_y = tag_is(x.tag, PINF), tag_is(y.tag, PINF)
        ninf_x, ninf_y = tag_is(x.tag, NINF), tag_is(y.tag, NINF)
        inf_x, inf_y = _or(pinf_x, ninf_x), _or(pinf_y, ninf_y)
        both = _and(fin_x, fin_y)
        if op == "-":
            y = self.unary("-", y)  # type: ignore[assignment]
            assert isinstance(y, SFloat)
            return self.float_binop("+", x, y)
        if op == "+":
            nan = _or(nan_x, nan_y, _and(pinf_x, ninf_y), _and(ninf_x, pinf_y))
            if _is_zero(x.r) and is_true(fin_x):
                total = SFloat(y.tag, y.r)  # 0.0 + y == y exactly (up to the sign of 0)
            elif _is_zero(y.r) and is_true(fin_y):
                total = SFloat(x.tag, x.r)
            else:
                total = self.rounded(x.r + y.r) if not is_false(both) else \
                    SFloat(int_val(FIN), real_val(0))
            tag = _if(nan, int_val(NAN), _if(_or(pinf_x, pinf_y), int_val(PINF),
                                             _if(_or(ninf_x, ninf_y), int_val(NINF),
                                                 total.tag)))
            return SFloat(tag, total.r)
        if op == "*":
            zero_x, zero_y = _and(fin_x, x.r == 0), _and(fin_y, y.r == 0)
            nan = _or(nan_x, nan_y, _and(inf_x, zero_y), _and(inf_y, zero_x))
            pos_x = _if(fin_x, x.r > 0, pinf_x)
            pos_y = _if(fin_y, y.r > 0, pinf_y)
            power = _power_of_two(y) if _power_of_two(y) is not None else _power_of_two(x)
            product = self.rounded(x.r * y.r, scaled=power) if not is_false(both) else \
                SFloat(int_val(FIN), real_val(0))
            tag = _if(nan, int_val(NAN), _if(_or(inf_x, inf_y),
                                             _if(pos_x == pos_y, int_val(PINF), int_val(NINF)),
                                             product.tag))
            return SFloat(tag, product.r)
        if op == "/":
            self.error(_and(fin_y, y.r == 0), "ZeroDivisionError")
            nan = _or(nan_x, nan_y, _and(inf_x, inf_y))
            pos_x = _if(fin_x, x.r > 0, pinf_x)
            pos_y = _if(fin_y, y.r > 0, pinf_y)
            safe = _if(y.r == 0, real_val(1), y.r)
            power = _power_of_two(y)
            quotient = self.rounded(x.r / safe, scaled=None if power is None else -power) \
                if not is_false(both) else SFloat(int_val(FIN), real_val(0))
            tag = _if(nan, int_val(NAN), _if(inf_x, _if(pos_x == pos_y, int_val(PINF),
                                                        int_val(NINF)),
                                             _if(inf_y, int_val(FIN), quotient.tag)))
            return SFloat(tag, _if(both, quotient.r, real_val(0)))
        if op in ("//", "%"):
            self.error(_and(fin_y, y.r == 0), "ZeroDivisionError")
            safe = _if(y.r == 0, real_val(1), y.r)
            ratio = x.r / safe
            floor = z3.ToReal(z3.ToInt(ratio))
            if op == "%":
                # fmod is exact; Python adds the divisor when the signs differ (rounded)
                exact = self.rounded(x.r - safe * floor)
            else:
                # (x - fmod(x, y)) / y, then snapped to an integer: exact while the
                # quotient stays below 2**50; beyond it, any value
                small = _and(ratio < 2**50, ratio > -2**50)
                exact = SFloat(int_val(FIN), floor)
                if not is_true(small):
                    exact = self.ite(small, exact, self.havoc_float(  # type: ignore[assignment]
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
        magnitude = _if(exact >= 0, exact, -exact)
        overflowed = z3.Bool(fresh_name("pow.overflow"))
        # pow's result is inf only near or above FLOAT_MAX, finite only below 2**1025
        self.define(z3.Implies(overflowed, magnitude >= real_val(FLOAT_MAX / 2)))
        self.define(z3.Implies(z3.Not(overflowed), magnitude <= real_val(2 * OVERFLOW)))
        fin = tag_is(a.tag, FIN)
        self.error(_and(fin, overflowed), "OverflowError")
        value = self.rounded(exact, ulps=2)
        negative_inf = tag_is(a.tag, NINF) if k % 2 else false()
        tag = _if(tag_is(a.tag, NAN), int_val(NAN),
                  _if(negative_inf, int_val(NINF),
                      _if(fin, int_val(FIN), int_val(PINF))))
        return SFloat(tag, value.r)

    def fold(self, op: str, a: Sym, b: Sym) -> Sym | None:
        """``a op b`` computed by Python when both are constants (exact)."""
        x, y = _python_number(a), _python_number(b)
        if x is None or y is None:
            return None
        try:
            result = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                      "/": lambda: x / y, "//": lambda: x // y, "%": lambda: x % y,
                      "**": lambda: x ** y}[op]()
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
            self.error(_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)), "OverflowError")
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
        self.error(_or(tag_is(value.tag, PINF), tag_is(value.tag, NINF)), "OverflowError")
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
                self.error(_or(x >= bound, -x >= bound), "ValueError")
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
            better = self.compare("<", value, result) if name == "min" else \
                self.compare(">", value, result)
            take = _and(present, _or(_not(present_any), better))
            result = self.ite(take, value, result)
            present_any = _or(present_any, present)
        if result is None:
            if empty_raises:
                self.error(true(), "ValueError")
            return SInt(int_val(0))
        if empty_raises:
            self.error(_not(present_any), "ValueError")
        return result


KNOWN_BUILTINS: dict[str, Callable[..., object]] = {
    name: getattr(builtins, name) for name in (
        "len", "abs", "min", "max", "all", "any", "sum", "int", "float", "str", "bool",
        "isinstance")
}
