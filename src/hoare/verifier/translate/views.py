"""How the operators see a symbolic value: the base class of the semantics.

``ValueViews`` holds the hooks a translator provides (``error``, ``define``,
``havoc_note``) and the views every operator starts from: the non-None part of an
optional (``unwrap``), Python's truthiness (``truthy``), a mixin enum member's data
(``base``), an int or float view (``int_expr``, ``as_float``, ``as_number``), the
value of an enum member, and the merge of two values under a condition (``ite``).
The operators themselves are layered on it by kind of value: ``floats`` (IEEE-754
doubles), ``comparisons`` (``==``, ``is``, ``<``, ``in``), ``arithmetic`` and
``semantics`` (the builtins, and the whole ``Semantics``).
"""

from __future__ import annotations

import enum
import functools
import re
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.logic import z3_and, z3_if, z3_not, z3_or
from hoare.verifier.translate.values import (
    FIN,
    NINF,
    NONE,
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
    fresh_name,
    int_val,
    real_val,
    tag_is,
)

_OPERATORS = ("__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__",
              "__contains__", "__add__", "__radd__", "__mul__", "__rmul__", "__mod__",
              "__len__", "__bool__", "__str__", "__format__", "__getitem__", "__iter__",
              "__int__", "__index__", "__float__", "__abs__", "__neg__")


@functools.lru_cache(maxsize=256)
def _mixin_data_is_value(cls: type[enum.Enum], mixin: type) -> bool:
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
    readers: dict[type, Callable[[Any], object]] = {  # a member is a `mixin` instance
        str: str.__str__, int: int.__index__, float: float.__float__}
    data = readers[mixin]
    try:
        return all(type(m.value) is mixin and data(m) == m.value for m in cls)
    except Exception:  # a member's own code may raise anything
        return False


def open_model_reason(model: SModel) -> str:
    """Why a construct on an open model (``SModel.open``) is not modelled."""
    name = model.cls.__name__
    return (f"{model.path}, a {name} built in Python: it may be an instance of a subclass "
            f"of {name} with its own methods (pydantic keeps it as it is unless "
            f"{name}.model_config sets revalidate_instances)")



class ValueViews:
    """The views of ``Sym``s the operators share. Subclasses provide ``error`` (record
    a raise), ``define`` (a definitional side constraint) and ``havoc_note``."""
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
            return z3_or(z3_not(tag_is(value.tag, FIN)), value.r != 0)
        if isinstance(value, SStripped):
            return self.has_non_space(value.source)
        if isinstance(value, SStr):
            return z3.Length(value.e) > 0
        if isinstance(value, SNone):
            return false()
        if isinstance(value, SOpt):
            return z3_and(z3_not(value.none), self.truthy(value.inner))
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
            return z3_or(value.none, self.passes(value.inner))
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
        the dunder method, so the construct is opaque; so is one on an object whose
        type is not known to lack it (``inert``)."""
        for operand in operands:
            if isinstance(operand, SModel) and operand.open:
                raise Opaque(f"an operation on {open_model_reason(operand)}")
            if isinstance(operand, SObj) and not inert(operand.obj):
                raise Opaque(f"an operation on a {type(operand.obj).__name__} object")
        self.error(true(), "TypeError")

    def int_expr(self, value: Sym) -> z3.ArithRef:
        if isinstance(value, SInt):
            return value.e
        if isinstance(value, SBool):
            return z3_if(value.e, int_val(1), int_val(0))
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
                           z3_if(cond, x.is_int, y.is_int))
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
                return SOpt(z3_or(cond, b.none), b.inner)
            return SOpt(cond, b)
        if isinstance(b, SNone) and not isinstance(a, SOpaque):
            if isinstance(a, SOpt):
                return SOpt(z3_or(z3_not(cond), a.none), a.inner)
            return SOpt(z3_not(cond), a)
        if isinstance(a, SOpt) and isinstance(b, SOpt):
            inner = self.ite(cond, a.inner, b.inner)
            if not isinstance(inner, STruth):
                return SOpt(z3.If(cond, a.none, b.none), inner)
        if isinstance(a, SOpt) and not isinstance(b, (SOpt, SOpaque)):
            inner = self.ite(cond, a.inner, b)
            if not isinstance(inner, STruth):
                return SOpt(z3_and(cond, a.none), inner)
        if isinstance(b, SOpt) and not isinstance(a, (SOpt, SOpaque)):
            inner = self.ite(cond, a, b.inner)
            if not isinstance(inner, STruth):
                return SOpt(z3_and(z3_not(cond), b.none), inner)
        if isinstance(a, SModel) and isinstance(b, SModel) and a.cls is b.cls:
            fields = {k: self.ite(cond, a.fields[k], b.fields[k]) for k in a.fields}
            if not any(isinstance(v, STruth) for v in fields.values()):
                return SModel(a.cls, fields, a.path, open=a.open or b.open)
        if isinstance(a, SObj) and isinstance(b, SObj) and a.obj is b.obj:
            return a
        return STruth(z3.If(cond, self.truthy(a), self.truthy(b)))

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
            return SNumber(int_val(FIN), z3_if(value.e, real_val(1), real_val(0)), true())
        assert isinstance(value, SInt)
        return SNumber(int_val(FIN), z3.ToReal(value.e), true())

    @contextmanager
    def only_when(self, cond: z3.BoolRef) -> Iterator[None]:
        """Errors recorded inside raise only when ``cond`` also holds."""
        had_own = "error" in self.__dict__
        outer = self.error
        guard = cond

        def error(cond: z3.BoolRef, exc: str) -> None:
            outer(z3_and(guard, cond), exc)

        self.error = error  # type: ignore[method-assign]  # the hook, wrapped for the block
        try:
            yield
        finally:
            if had_own:
                self.error = outer  # type: ignore[method-assign]  # the instance's own hook
            else:
                del self.error

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


_INERT_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                types.MethodType, re.Pattern)
_BINARY_OPERATORS = frozenset(
    f"__{name}__" for name in (
        "lt", "le", "gt", "ge", "add", "radd", "sub", "rsub", "mul", "rmul", "truediv",
        "rtruediv", "floordiv", "rfloordiv", "mod", "rmod", "divmod", "rdivmod", "pow",
        "rpow", "matmul", "rmatmul", "and", "rand", "or", "ror", "xor", "rxor", "lshift",
        "rlshift", "rshift", "rrshift", "neg", "pos", "abs", "invert"))


def inert(obj: object) -> bool:
    """Is ``obj`` a module, a function, a compiled pattern, or a class whose metaclass
    defines no operator of its own (``type``, ``EnumType``, pydantic's)? Operators
    between such an object and a value raise ``TypeError``. Any other object held as
    ``SObj`` (an int too large for z3, an instance of a user's class or of a ``str``
    or ``int`` subclass) may define them."""
    if type(obj) in _INERT_TYPES:
        return True
    if isinstance(obj, type):
        return not any(name in vars(cls) for cls in type.mro(type(obj))
                       if cls not in (type, object) for name in _BINARY_OPERATORS)
    return False

