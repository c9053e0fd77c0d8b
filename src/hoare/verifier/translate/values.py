"""Symbolic Python values: what a value of a pydantic type looks like to z3.

Every value a predicate can see is a ``Sym``. The classes keep Python's
distinctions that z3 does not have: ``None`` is a separate case of an
``Optional`` (a tag, never a magic number), a ``float`` (an IEEE-754 double) is
a tag for finite/``nan``/``+inf``/``-inf`` *plus* its value as a real (pydantic
accepts ``nan``/``inf`` unless a bound or ``allow_inf_nan=False`` excludes them;
rounding is modelled by ``floats.FloatSemantics.rounded``), a ``list`` is a symbolic length with a
bounded number of element slots (elements past the slots are *havoc*: fresh
unconstrained values, which keeps every refutation sound).

z3 terms are built under ``Z3_LOCK`` (z3 contexts are not thread-safe and the runtime
pre-flight may run in several threads), in the context ``z3_context`` makes active: a
fresh one per check, the main one for the pre-flight.
"""

from __future__ import annotations

import contextvars
import enum
import itertools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from hoare.unmodelled import Opaque, Unrepresentable
from hoare.verifier.solve.lock import Z3_LOCK

__all__ = [
    "EXACT_INTS",
    "FIN",
    "FLOAT_MAX",
    "HALF_SUBNORMAL",
    "NAN",
    "NINF",
    "NONE",
    "OVERFLOW",
    "PINF",
    "SETS",
    "UNIT_ROUNDOFF",
    "Z3_LOCK",
    "Opaque",
    "SBool",
    "SColl",
    "SEnum",
    "SFloat",
    "SInt",
    "SList",
    "SModel",
    "SNone",
    "SNumber",
    "SObj",
    "SOpaque",
    "SOpt",
    "SSelf",
    "SStr",
    "STruth",
    "Sym",
    "bool_val",
    "const_to_sym",
    "decode_z3_string",
    "double_value",
    "float_const",
    "fresh_name",
    "int_val",
    "real_val",
    "str_val",
    "tag_is",
]


# Float tags. A float is ``(tag, real)``; ``real`` is meaningful when ``tag == FIN``.
FIN, NAN, PINF, NINF = 0, 1, 2, 3

_counter = itertools.count()
_scope: contextvars.ContextVar[tuple[str, Iterator[int]] | None] = contextvars.ContextVar(
    "hoare_z3_names", default=None)


def tag_is(tag: z3.ArithRef, k: int) -> z3.BoolRef:
    """``tag == k`` for a float tag, folded when the tag is a numeral (most floats are
    known finite)."""
    if z3.is_int_value(tag):
        return bool_val(tag.as_long() == k)
    return tag == k


def fresh_name(base: str) -> str:
    """A z3 constant name, unique within the current ``naming`` scope (else in the
    process). Scoped names make one contract's formulas identical from run to run,
    so that verdicts under a resource limit reproduce."""
    scope = _scope.get()
    if scope is None:
        return f"g{next(_counter)}.{base}"
    prefix, counter = scope
    return f"{prefix}{next(counter)}.{base}"


@contextmanager
def naming(prefix: str) -> Iterator[None]:
    """Name the z3 constants created inside with ``prefix`` and a fresh counter."""
    token = _scope.set((prefix, itertools.count()))
    try:
        yield
    finally:
        _scope.reset(token)


class Sym:
    """Base class of symbolic values."""

    __slots__ = ()

    kind = "value"


@dataclass(frozen=True, eq=False)
class SInt(Sym):
    e: z3.ArithRef
    kind = "int"


@dataclass(frozen=True, eq=False)
class SBool(Sym):
    e: z3.BoolRef
    kind = "bool"


@dataclass(frozen=True, eq=False)
class SFloat(Sym):
    """A Python float: ``tag`` is FIN, NAN, PINF or NINF; ``r`` the value when finite."""

    tag: z3.ArithRef
    r: z3.ArithRef
    kind = "float"


@dataclass(frozen=True, eq=False)
class SNumber(SFloat):
    """An int *or* a float, which one known only at run time (``max(n, x)``,
    ``n if c else x``): an int when ``is_int`` holds (then ``tag`` is FIN and ``r``
    its exact value). Comparisons, ``abs``, ``-``, ``math.isfinite``, ``int()``
    read it as a number; whatever depends on the type (``str()``,
    ``isinstance``) is opaque."""

    is_int: z3.BoolRef
    kind = "number"


@dataclass(frozen=True, eq=False)
class SStr(Sym):
    e: z3.SeqRef
    kind = "str"


class SStripped(SStr):
    """``source.strip()`` (or ``lstrip``/``rstrip``), defined lazily.

    Its truthiness (``if not s.strip()``) is exactly "``source`` has a
    non-whitespace character", one regex membership; the full definition of the
    stripped string (three strings and regexes) is only added, through
    ``define``, when its value is used otherwise.
    """

    source: z3.SeqRef
    mode: str
    _define: Callable[[z3.SeqRef, str], z3.SeqRef]
    _value: z3.SeqRef | None

    def __init__(self, source: z3.SeqRef, mode: str,
                 define: Callable[[z3.SeqRef, str], z3.SeqRef]) -> None:
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "_define", define)
        object.__setattr__(self, "_value", None)

    @property
    def e(self) -> z3.SeqRef:
        value = self._value
        if value is None:
            value = self._define(self.source, self.mode)
            object.__setattr__(self, "_value", value)
        return value


class SNone(Sym):
    """The constant ``None``."""

    __slots__ = ()
    kind = "None"

    def __repr__(self) -> str:
        return "NONE"


NONE = SNone()


@dataclass(frozen=True, eq=False)
class SOpt(Sym):
    """``inner`` unless ``none`` holds, in which case the value is ``None``."""

    none: z3.BoolRef
    inner: Sym
    kind = "optional"


@dataclass(frozen=True, eq=False)
class SModel(Sym):
    """An instance of a pydantic model. ``omit``: fields whose default violates the
    field's own constraints (pydantic does not validate defaults); a witness must
    leave such a field out to get that value. ``open``: the instance was built in
    Python and its class keeps subclass instances as they are (``revalidate_instances
    ='never'``), so it may be an instance of any subclass, whose ``__eq__``,
    ``__bool__``, ``__len__``, ``__index__``… are not ``cls``'s: what depends on them
    is not modelled. An output validated from JSON is never open."""

    cls: type
    fields: dict[str, Sym]
    path: str
    omit: dict[str, object] = field(default_factory=dict)
    open: bool = False
    kind = "model"


@dataclass(frozen=True, eq=False)
class SList(Sym):
    """A list of length ``n`` whose first ``len(slots)`` elements are modelled.

    ``tail()`` builds a fresh, unconstrained element (an element past the slots).
    ``exact`` is True when the type bounds the length by the number of slots.
    """

    n: z3.ArithRef
    slots: tuple[Sym, ...]
    path: str
    tail: Callable[[], Sym]
    exact: bool
    container: str = "list"
    kind = "list"


@dataclass(frozen=True, eq=False)
class SEnum(Sym):
    """A member of ``cls`` by index into ``list(cls)``."""

    cls: type[enum.Enum]
    idx: z3.ArithRef
    kind = "enum"

    @property
    def members(self) -> list[enum.Enum]:
        return list(self.cls)


SETS = ("set", "frozenset", "setlit")  # SColl containers that are sets ("setlit": a display)


@dataclass(frozen=True, eq=False)
class SColl(Sym):
    """A literal collection of constants (tuple, list, set, frozenset)."""

    items: tuple[Sym, ...]
    container: str
    kind = "collection"


_MISSING = object()


@dataclass(frozen=True, eq=False)
class SOpaque(Sym):
    """A value the verifier does not model (a ``dict``, a ``Union``, a ``datetime``…).

    Using it makes the predicate opaque; ``truthy`` is its truthiness when known
    (a ``re.Match`` is always truthy); ``example`` a value for witnesses.
    """

    reason: str
    truthy: bool | None = None
    example: object = _MISSING
    kind = "opaque"

    @property
    def has_example(self) -> bool:
        return self.example is not _MISSING


@dataclass(frozen=True, eq=False)
class STruth(Sym):
    """A value known only by its truthiness (``a or b`` of different types)."""

    e: z3.BoolRef
    kind = "truth"


@dataclass(frozen=True, eq=False)
class SObj(Sym):
    """A Python object that is not a value: a builtin, a module, a class."""

    obj: object
    kind = "object"


@dataclass(eq=False)
class SSelf(Sym):
    """``self`` of a method predicate; attributes come from ``resolve``."""

    resolve: Callable[[str], Sym]
    kind = "self"


# -- constants ------------------------------------------------------------------------


# z3 builds an int constant from its decimal text, which CPython refuses past
# ``sys.get_int_max_str_digits()`` digits (4300 by default): a bigger int is not
# representable (the bound stays far below the smallest limit CPython allows, 640).
_INT_BITS = 2000


def int_val(value: int) -> z3.ArithRef:
    """The z3 constant of ``value``; an int of more than ``_INT_BITS`` bits raises
    ``Unrepresentable`` (its decimal text may be refused)."""
    if int(value).bit_length() > _INT_BITS:
        raise Unrepresentable(f"an int of {int(value).bit_length()} bits")
    return z3.IntVal(int(value))


def real_val(value: Fraction | float | int) -> z3.ArithRef:
    q = Fraction(value)
    return z3.RealVal(f"{q.numerator}/{q.denominator}") if q.denominator != 1 else \
        z3.RealVal(q.numerator)


def bool_val(value: bool) -> z3.BoolRef:
    return z3.BoolVal(bool(value))


MAX_CHAR = 0x2FFFF  # the last character of z3's (default, unicode) string alphabet


def str_val(value: str) -> z3.SeqRef:
    """A z3 string constant equal to ``value``: z3 interprets ``\\u{..}`` escapes in
    string literals, so every backslash and non-printable character is escaped.
    z3 strings stop at U+2FFFF (and would read a larger escape as plain text), so
    such a string raises ``Unrepresentable``; so does one holding a reserved
    astral twin (``unicode_classes``), which keeps string variables sound for
    values with astral characters."""
    if all(32 <= ord(ch) < 127 and ch != "\\" for ch in value):
        return z3.StringVal(value)
    from hoare.verifier.translate.unicode_classes import is_reserved

    if any(ord(ch) > 0xFFFF and is_reserved(ord(ch)) for ch in value):
        raise Unrepresentable(f"the string {value[:20]!r} has a character above U+2FFFF "
                              f"or one reserved as an astral twin")
    return z3.StringVal("".join(
        ch if 32 <= ord(ch) < 127 and ch != "\\" else f"\\u{{{ord(ch):x}}}" for ch in value))


_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}")


def decode_z3_string(text: str) -> str:
    """The Python string of a z3 string value's ``as_string()`` rendering."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


# IEEE-754 binary64 with round-to-nearest-even, as exact rationals.
FLOAT_MAX = Fraction(1.7976931348623157e308)  # 2**1024 - 2**971
# The smallest magnitude that rounds to infinity: halfway between FLOAT_MAX and 2**1024;
# the tie goes to 2**1024 (FLOAT_MAX has an odd significand), so it overflows.
OVERFLOW = Fraction(2**1024 - 2**970)
UNIT_ROUNDOFF = Fraction(1, 2**53)  # |round(x) - x| <= 2**-53 * |x| in the normal range
HALF_SUBNORMAL = Fraction(1, 2**1075)  # |round(x) - x| <= 2**-1075 in the subnormal range
EXACT_INTS = 2**53  # every integer of at most this magnitude is a double


def double_value(value: Fraction) -> float | None:
    """``value`` as a Python float when it is exactly a double, else None."""
    try:
        as_float = float(value)
    except OverflowError:
        return None
    return as_float if Fraction(as_float) == value else None


def float_const(value: float) -> SFloat:
    if value != value:
        return SFloat(int_val(NAN), real_val(0))
    if value in (float("inf"), float("-inf")):
        return SFloat(int_val(PINF if value > 0 else NINF), real_val(0))
    return SFloat(int_val(FIN), real_val(value))


_SCALARS = (bool, int, float, str, type(None))
_SEQUENCES = (tuple, list, set, frozenset)
_MAX_ITEMS = 256
_MAX_DEPTH = 3


def _has_nan(value: object) -> bool:
    """Does ``value`` (a plain constant) hold a float ``nan``? Containers compare
    their items by identity first (``[x] == [x]`` for ``x = nan``), which the
    verifier does not model."""
    if type(value) is float:
        return value != value
    if type(value) in _SEQUENCES and isinstance(value, _SEQUENCES):
        return any(_has_nan(item) for item in value)
    return False


def const_to_sym(value: object) -> Sym:
    """The symbolic constant of a Python value (module constants, literals).

    Only values of the exact built-in types are read as values (a subclass may
    redefine ``==``, ``in``, ``hash``…): scalars; enum members (``SEnum``);
    tuples/lists/sets/frozensets of such values, nested up to ``_MAX_DEPTH``
    (``SColl``; a set only of hashable scalars, a container holding a ``nan`` not
    at all). Anything else is an ``SObj`` that only supports the operations the
    translator knows for it (calls of known builtins, attributes of modules…);
    comparing it with a value is opaque.
    """
    return _const(value, 0)


def _const(value: object, depth: int) -> Sym:
    kind = type(value)
    if value is None:
        return NONE
    if isinstance(value, enum.Enum):
        members = list(type(value))
        return SEnum(type(value), int_val(members.index(value)))
    if kind is bool:
        return SBool(bool_val(bool(value)))
    if kind is int and isinstance(value, int):
        try:
            return SInt(int_val(value))
        except Unrepresentable:
            return SObj(value)
    if kind is float and isinstance(value, float):
        return float_const(value)
    if kind is str and isinstance(value, str):
        return SStr(str_val(value))
    if kind in _SEQUENCES and isinstance(value, _SEQUENCES) and depth < _MAX_DEPTH \
            and len(value) <= _MAX_ITEMS and not _has_nan(value):
        items = list(value)
        if kind in (set, frozenset):
            if not all(type(item) in _SCALARS for item in items):
                return SObj(value)
            items = sorted(items, key=repr)
        inner = [_const(item, depth + 1) for item in items]
        if not any(isinstance(item, SObj) for item in inner):
            return SColl(tuple(inner), kind.__name__)
    return SObj(value)


def is_plain_data(value: Any, depth: int = 0) -> bool:
    """Plain, immutable-looking data the verifier may read as a constant: values of
    the exact built-in scalar types, enum members, and tuples/lists/sets of them
    (a subclass of ``str``/``int``/``list``… may redefine any operator)."""
    if type(value) in _SCALARS or isinstance(value, enum.Enum):
        return True
    if type(value) in _SEQUENCES and depth < _MAX_DEPTH and len(value) <= _MAX_ITEMS:
        return all(is_plain_data(item, depth + 1) for item in value)
    return False
