"""Comparisons of symbolic values: ``==``, ``is``, ``<``/``<=``, ``in`` and hashing.

``==`` between values of incompatible types is ``False``; ordering them
(``None < 1``, ``"a" < 1``) raises ``TypeError``. Items inside a container compare
as Python does there (``is`` first, so a ``nan`` may equal itself). ``==`` with a
constant the verifier does not read as a value is decided only where it is
identity (modules, functions, plain classes).
"""

from __future__ import annotations

import enum
import types

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.floats import FloatSemantics
from hoare.verifier.translate.logic import z3_and, z3_if, z3_not, z3_or
from hoare.verifier.translate.unicode_classes import plain_strings
from hoare.verifier.translate.values import (
    FIN,
    NAN,
    NONE,
    SETS,
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
    tag_is,
)
from hoare.verifier.translate.views import open_model_reason


def _identity_eq(obj: object) -> bool:
    """Is ``==`` on ``obj`` identity? (modules, functions and builtins, classes whose
    metaclass is ``type`` or ``EnumMeta``: none of them define ``__eq__``)."""
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                        types.MethodType)):
        return True
    return isinstance(obj, type) and type(obj) in (type, enum.EnumMeta)



class ComparisonSemantics(FloatSemantics):
    """``==``, ``is``, ordering, membership, and the hashing ``in`` a set needs."""

    # -- equality and identity -----------------------------------------------------------
    def eq(self, a: Sym, b: Sym) -> z3.BoolRef:
        if isinstance(a, SOpaque):
            raise Opaque(a.reason)
        if isinstance(b, SOpaque):
            raise Opaque(b.reason)
        if isinstance(a, SOpt):
            return z3_if(a.none, self.eq(NONE, b), self.eq(a.inner, b))
        if isinstance(b, SOpt):
            return z3_if(b.none, self.eq(a, NONE), self.eq(a, b.inner))
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
                return z3_and(z3_not(tag_is(x.tag, NAN)), z3_not(tag_is(y.tag, NAN)),
                            x.tag == y.tag, z3_or(z3_not(tag_is(x.tag, FIN)), x.r == y.r))
            return self.int_expr(a) == self.int_expr(b)
        if isinstance(a, SStr) and isinstance(b, SStr):
            for s, t in ((a, b), (b, a)):
                if isinstance(s, SStripped) and not isinstance(t, SStripped) and \
                        z3.is_string_value(t.e) and t.e.as_string() == "":
                    return z3_not(self.has_non_space(s.source))
            return a.e == b.e
        if isinstance(a, (SList, SColl)) and isinstance(b, (SList, SColl)):
            return self.seq_eq(a, b)
        if isinstance(a, SModel) or isinstance(b, SModel):
            if isinstance(a, SModel) and isinstance(b, SModel):
                raise Opaque("equality of pydantic models")
            model = a if isinstance(a, SModel) else b
            assert isinstance(model, SModel)  # one side is a model (the condition above)
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
        ``nan`` the result is free (which object a value is, is not modelled). An
        optional is compared as the value it holds (its float may be that ``nan``)."""
        if isinstance(a, SOpt):
            return z3_if(a.none, self.item_eq(NONE, b), self.item_eq(a.inner, b))
        if isinstance(b, SOpt):
            return z3_if(b.none, self.item_eq(a, NONE), self.item_eq(a, b.inner))
        same = self.eq(a, b)
        x, y = self.numeric(a), self.numeric(b)
        if isinstance(x, SFloat) and isinstance(y, SFloat):
            both_nan = z3_and(tag_is(x.tag, NAN), tag_is(y.tag, NAN))
            if not is_false(both_nan):
                return z3_or(same, z3_and(both_nan, self.havoc_bool(
                    "two nan items compared in a container (Python tries `is` first)")))
        return same

    def hashable(self, value: Sym, when: z3.BoolRef | None = None) -> None:
        """Hashing ``value`` (``in`` a set) when ``when`` holds (default: always):
        ``None`` hashes, so an optional's inner value is hashed only when it is not
        ``None``; a list or a set raises ``TypeError``; a model, or a value whose type
        is not known, is opaque."""
        hashed = true() if when is None else when
        if isinstance(value, SOpt):
            self.hashable(value.inner, z3_and(hashed, z3_not(value.none)))
            return
        if isinstance(value, (SList, SColl)) and value.container in ("list", "set", "setlit"):
            self.error(hashed, "TypeError")  # unhashable
            return
        if isinstance(value, SColl):  # a tuple or frozenset hashes its items
            for item in value.items:
                self.hashable(item, hashed)
            return
        if isinstance(value, SList):  # a tuple field: every item present is hashed
            for index, slot in enumerate(value.slots):
                self.hashable(slot, z3_and(hashed, value.n > index))
            if not value.exact:
                tail = value.tail()  # one unconstrained item stands for every later one
                if _holds_optional(tail):
                    raise Opaque(f"hashing the items of {value.path} past the verifier's "
                                 f"bound (some may be None)")
                self.hashable(tail, z3_and(hashed, value.n > len(value.slots)))
            return
        if isinstance(value, (SModel, SOpaque, SObj, STruth)):
            raise Opaque(f"hashing a {value.kind}")

    def seq_eq(self, a: SList | SColl, b: SList | SColl) -> z3.BoolRef:
        if isinstance(a, SColl) and isinstance(b, SList):
            a, b = b, a
        family = {"list": "list", "tuple": "tuple", **{name: "set" for name in SETS}}
        if family.get(a.container, a.container) != family.get(b.container, b.container):
            return false()  # [1] != (1,) != {1}
        if family.get(a.container) == "set":
            raise Opaque("equality of sets (unordered, by hash)")
        if isinstance(a, SColl) and isinstance(b, SColl):
            if len(a.items) != len(b.items):
                return false()
            return z3_and(*[self.item_eq(x, y) for x, y in zip(a.items, b.items, strict=True)])
        if isinstance(a, SList) and isinstance(b, SColl):
            k = len(b.items)
            if k > len(a.slots):
                return z3_and(a.n == k, self.havoc_bool("list compared past its slots"))
            return z3_and(a.n == k, *[self.item_eq(a.slots[i], b.items[i]) for i in range(k)])
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
        if isinstance(a, SOpt):  # split on its None: the other side may be None too
            return z3_if(a.none, self.is_(NONE, b), self.is_(a.inner, b))
        if isinstance(b, SOpt):
            return z3_if(b.none, self.is_(a, NONE), self.is_(a, b.inner))
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
            plain = z3_and(*(z3.InRe(s.e, plain_strings()) for s in (a, b)
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
            return z3_or(*[self.item_eq(item, x) for x in container.items])
        if isinstance(container, SList):
            found = [z3_and(i < container.n, self.item_eq(slot, item))
                     for i, slot in enumerate(container.slots)]
            if not container.exact:
                found.append(z3_and(container.n > len(container.slots),
                                  self.havoc_bool(f"`in` past the verifier's bound on "
                                                  f"{container.path}")))
            return z3_or(*found)
        if isinstance(container, SEnum):
            raise Opaque("`in` on an enum member")
        if isinstance(container, SObj) and isinstance(container.obj, type) \
                and issubclass(container.obj, enum.Enum):
            raise Opaque("`in` on an Enum class")
        if isinstance(container, (SInt, SFloat, SBool, SNone)):
            self.error(true(), "TypeError")
            return false()
        raise Opaque(f"`in` on a {container.kind}")


def _holds_optional(value: Sym) -> bool:
    """Does ``value`` hold an optional anywhere (its hashing then depends on which
    items are None)?"""
    if isinstance(value, SOpt):
        return True
    if isinstance(value, SColl):
        return any(_holds_optional(item) for item in value.items)
    if isinstance(value, SList):
        return any(_holds_optional(slot) for slot in value.slots) or \
            (not value.exact and _holds_optional(value.tail()))
    return False
