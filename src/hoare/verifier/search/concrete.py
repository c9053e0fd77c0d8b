"""Concrete Python values → values of a symbolic value's z3 constants.

Used by the run-time pre-flight (the input actually used is known) and by the
differential tests (a translation must agree with Python on concrete values).
List elements past the modelled slots stay unassigned: the translation treats
them as havoc, so a refutation stays sound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from hoare.unmodelled import BindError
from hoare.verifier.solve.z3util import (
    constant_names as constants,  # re-exported: older import path
)
from hoare.verifier.translate.values import (
    FIN,
    NAN,
    NINF,
    PINF,
    Opaque,
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
    bool_val,
    int_val,
    real_val,
    str_val,
)

__all__ = ["Assignment", "BindError", "Extractor", "assign", "bind", "constants"]


@dataclass
class Assignment:
    """z3 constant name → (constant, Python value: bool, int, Fraction or str).
    ``exact`` is False when part of the value stays unassigned."""

    values: dict[str, tuple[z3.ExprRef, Any]] = field(default_factory=dict)
    exact: bool = True

    def set(self, const: z3.ExprRef, value: Any) -> None:
        self.values[const.decl().name()] = (const, value)

    def equalities(self, relevant: AbstractSet[str] | None = None) -> list[z3.BoolRef]:
        out = []
        for name, (const, value) in self.values.items():
            if relevant is not None and name not in relevant:
                continue
            out.append(const == _literal(const, value))
        return out

    def pairs(self) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """(constant, value) substitutions."""
        return [(const, _literal(const, value)) for const, value in self.values.values()]

    def env(self) -> dict[str, Any]:
        return {name: value for name, (_const, value) in self.values.items()}


def _literal(const: z3.ExprRef, value: Any) -> z3.ExprRef:
    if isinstance(value, bool):
        return bool_val(value)
    if isinstance(value, str):
        return str_val(value)
    if z3.is_real(const):
        return real_val(value)
    return int_val(int(value))


def assign(sym: Sym, value: Any, *, strict: bool = False) -> Assignment:
    """The values ``sym``'s constants take when it denotes ``value``. ``strict``: the
    value must have exactly the Python type ``sym`` stands for (an ``int`` is then no
    ``float``, ``True`` no ``int``, an ``IntEnum`` member no ``int``): used for values
    pydantic never converted, such as defaults. Without it too, a value must be
    exactly its type (an ``int`` may stand for a ``float``): an instance of a subclass
    of ``str``, ``int`` or a model brings methods of its own, which the symbolic value
    does not have."""
    out = Assignment()
    _assign(sym, value, out, strict)
    return out


def bind(sym: Sym, value: Any) -> list[z3.BoolRef]:
    """Equalities making ``sym`` denote ``value``; raises ``BindError`` for a value z3
    cannot hold."""
    try:
        return assign(sym, value).equalities()
    except Opaque as error:
        raise BindError(str(error)) from error


_EXACT_TYPES: dict[type, type] = {SBool: bool, SInt: int, SFloat: float, SStr: str}


def _assign(sym: Sym, value: Any, out: Assignment, strict: bool = False) -> None:
    if strict and type(sym) in _EXACT_TYPES and type(value) is not _EXACT_TYPES[type(sym)]:
        raise BindError(f"expected exactly {_EXACT_TYPES[type(sym)].__name__}, got "
                        f"{type(value).__name__}")
    if isinstance(sym, SOpt):
        out.set(sym.none, value is None)
        if value is not None:
            _assign(sym.inner, value, out, strict)
        return
    if isinstance(sym, SNone):
        if value is not None:
            raise BindError(f"expected None, got {type(value).__name__}")
        return
    if isinstance(sym, SOpaque):
        out.exact = False
        return
    if isinstance(sym, SBool):
        if not isinstance(value, bool):
            raise BindError(f"expected bool, got {type(value).__name__}")
        _set(out, sym.e, value)
        return
    if isinstance(sym, SInt):
        if type(value) is not int:  # a subclass (IntEnum, bool…) behaves otherwise
            raise BindError(f"expected int, got {type(value).__name__}")
        _set(out, sym.e, int(value))
        return
    if isinstance(sym, SFloat):
        if type(value) not in (int, float):
            raise BindError(f"expected float, got {type(value).__name__}")
        number = float(value)
        if math.isnan(number):
            _set(out, sym.tag, NAN)
        elif math.isinf(number):
            _set(out, sym.tag, PINF if number > 0 else NINF)
        else:
            _set(out, sym.tag, FIN)
            _set(out, sym.r, Fraction(number))
        return
    if isinstance(sym, SStr):
        if type(value) is not str:  # a subclass's methods (and __str__) are its own
            raise BindError(f"expected str, got {type(value).__name__}")
        _set(out, sym.e, value)
        return
    if isinstance(sym, SEnum):
        members = sym.members
        position = next((i for i, m in enumerate(members) if m is value), None)
        if position is None:
            raise BindError(f"expected {sym.cls.__name__}, got {value!r:.40}")
        _set(out, sym.idx, position)
        return
    if isinstance(sym, SList):
        if type(value) not in (list, tuple) or (
                strict and type(value) is not (tuple if sym.container == "tuple" else list)):
            raise BindError(f"expected a {sym.container}, got {type(value).__name__}")
        _set(out, sym.n, len(value))
        if len(value) > len(sym.slots):
            out.exact = False
        for slot, item in zip(sym.slots, value, strict=False):
            _assign(slot, item, out, strict)
        return
    if isinstance(sym, SModel):
        if type(value) is not sym.cls:  # a subclass may override what predicates use
            raise BindError(f"expected {sym.cls.__name__}, got {type(value).__name__}")
        for name, field_sym in sym.fields.items():
            _assign(field_sym, getattr(value, name), out, strict)
        return
    raise BindError(f"cannot bind a {sym.kind}")


def _set(out: Assignment, expr: z3.ExprRef, value: Any) -> None:
    if z3.is_const(expr) and expr.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        out.set(expr, value)


Extract = Callable[[Any, dict[str, Any]], bool]


class Extractor:
    """A compiled ``assign`` for one symbolic value: z3 names are looked up once, so a
    call is plain Python (the run-time pre-flight's per-call path). Only the
    constants in ``relevant`` (and what leads to them) are extracted; the call
    returns whether the extracted part is exact. Raises ``BindError``."""

    def __init__(self, sym: Sym, relevant: set[str] | None = None) -> None:
        self.relevant = relevant
        self.consts: dict[str, z3.ExprRef] = {}
        self._run = self._build(sym) or (lambda value, env: True)

    def __call__(self, value: Any) -> tuple[dict[str, Any], bool]:
        env: dict[str, Any] = {}
        exact = self._run(value, env)
        return env, exact

    def equalities(self, env: dict[str, Any]) -> list[z3.BoolRef]:
        return [self.consts[name] == _literal(self.consts[name], value)
                for name, value in env.items()]

    def _name(self, expr: z3.ExprRef) -> str | None:
        if not (z3.is_const(expr) and expr.decl().kind() == z3.Z3_OP_UNINTERPRETED):
            return None
        name: str = expr.decl().name()
        if self.relevant is not None and name not in self.relevant:
            return None
        self.consts[name] = expr
        return name

    def _build(self, sym: Sym) -> Extract | None:
        """None: nothing relevant below ``sym``."""
        if isinstance(sym, SOpt):
            none = self._name(sym.none)
            inner = self._build(sym.inner)
            if none is None and inner is None:
                return None

            def optional(value: Any, env: dict[str, Any]) -> bool:
                if none is not None:
                    env[none] = value is None
                if value is None or inner is None:
                    return True
                return inner(value, env)
            return optional
        if isinstance(sym, SOpaque):
            return lambda value, env: False
        if isinstance(sym, SNone):
            return None
        if isinstance(sym, (SBool, SInt, SStr)):
            scalar_name = self._name(sym.e)  # (its own name: the closure keeps it a str)
            if scalar_name is None:
                return None
            exact = _EXACT_TYPES[type(sym)]

            def scalar(value: Any, env: dict[str, Any]) -> bool:
                # exactly the type: a subclass (an IntEnum member, a str subclass, an
                # unvalidated value) behaves differently in predicates
                if type(value) is not exact:
                    raise BindError(f"expected {exact.__name__}, got "
                                    f"{type(value).__name__}")
                env[scalar_name] = value
                return True
            return scalar
        if isinstance(sym, SFloat):
            tag, real = self._name(sym.tag), self._name(sym.r)
            if tag is None and real is None:
                return None

            def floating(value: Any, env: dict[str, Any]) -> bool:
                if type(value) is not float:  # an int (unvalidated, or act's) is no float
                    raise BindError(f"expected float, got {type(value).__name__}")
                number = float(value)
                if math.isnan(number):
                    code = NAN
                elif math.isinf(number):
                    code = PINF if number > 0 else NINF
                else:
                    code = FIN
                    if real is not None:
                        env[real] = Fraction(number)
                if tag is not None:
                    env[tag] = code
                return True
            return floating
        if isinstance(sym, SEnum):
            name = self._name(sym.idx)
            if name is None:
                return None
            index = {id(m): i for i, m in enumerate(sym.members)}

            def member(value: Any, env: dict[str, Any]) -> bool:
                position = index.get(id(value))
                if position is None:
                    raise BindError(f"expected {sym.cls.__name__}, got {value!r:.40}")
                env[name] = position
                return True
            return member
        if isinstance(sym, SList):
            length = self._name(sym.n)
            slots = [self._build(slot) for slot in sym.slots]
            if length is None and all(s is None for s in slots):
                return None
            limit = len(sym.slots)

            container = tuple if sym.container == "tuple" else list

            def sequence(value: Any, env: dict[str, Any]) -> bool:
                if type(value) is not container:  # `() == []` is False
                    raise BindError(f"expected a {container.__name__}, got "
                                    f"{type(value).__name__}")
                if length is not None:
                    env[length] = len(value)
                exact = len(value) <= limit
                for extract, item in zip(slots, value, strict=False):
                    if extract is not None:
                        exact = extract(item, env) and exact
                return exact
            return sequence
        if isinstance(sym, SModel):
            built = [(name, self._build(field_sym)) for name, field_sym in sym.fields.items()]
            fields = [(name, f) for name, f in built if f is not None]
            cls = sym.cls
            if not fields:
                return None

            def model(value: Any, env: dict[str, Any]) -> bool:
                if type(value) is not cls:  # a subclass may behave otherwise
                    raise BindError(f"expected {cls.__name__}, got {type(value).__name__}")
                exact = True
                for name, extract in fields:
                    exact = extract(getattr(value, name), env) and exact
                return exact
            return model
        raise BindError(f"cannot bind a {sym.kind}")
