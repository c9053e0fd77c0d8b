"""Scalar field types → z3, with their constraints: ``int`` and ``float`` bounds
(``ge``/``gt``/``le``/``lt``, ``multiple_of``, ``allow_inf_nan``), ``str`` lengths,
patterns and ``ascii_only``, ``Literal[...]`` and ``Enum`` members.

``ScalarTypes`` is the base of ``types.TypeBuilder``: it holds the builder's state
(the dropped constraints and assumptions, which say why a type set is not exact)
and the per-scalar translations; a constraint it cannot translate is dropped with
its reason (the modelled set grows, so refutations stay sound).
"""

from __future__ import annotations

import decimal
import enum
import numbers
import operator
import re
import typing
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import annotated_types as at
import z3

from hoare.verifier.solve.z3util import is_true
from hoare.verifier.translate.metadata import (
    COMPARED_KEYS,
    ENUM_DOMAIN_HOOKS,
    IGNORED_METADATA,
    atoms,
    custom_behaviour,
)
from hoare.verifier.translate.regex import field_pattern
from hoare.verifier.translate.values import (
    FIN,
    NINF,
    NONE,
    PINF,
    SBool,
    SEnum,
    SFloat,
    SInt,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    fresh_name,
    int_val,
    real_val,
    str_val,
)

__all__ = ["Constraint", "ScalarTypes", "implies"]


@dataclass(frozen=True)
class Constraint:
    """``expr`` holds for every valid value. ``label`` None: structural (always
    asserted, never in a core). ``kind``: "type", "bound" (verifier bound)."""

    label: str | None
    expr: z3.BoolRef
    kind: Literal["type", "bound"] = "type"


def implies(guard: z3.BoolRef, expr: z3.BoolRef) -> z3.BoolRef:
    """``guard ⇒ expr``, or ``expr`` alone when the guard is true."""
    return expr if is_true(guard) else z3.Implies(guard, expr)


def _number(value: object) -> Fraction | None:
    """A bound as an exact rational; None for a bool, a nan or an infinity, or what
    ``Fraction`` does not take (it takes rationals, floats, decimals and strings)."""
    if not isinstance(value, (numbers.Rational, float, decimal.Decimal, str)):
        return None
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, float) and (value != value or value in (float("inf"),
                                                                     float("-inf"))):
            return None
        return Fraction(value)
    except (TypeError, ValueError):
        return None


def _fmt(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class ScalarTypes:
    """The scalar half of the type builder: builder state, notes, and the scalars."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.dropped: list[str] = []
        self.assumptions: list[str] = []
        self.uses_float = False
        self.leaves = 0
        self.opaque_models: dict[type, str] = {}  # models whose values are not modelled

    def note_before(self, what: str) -> None:
        """A validator running before the type's validation: the value still has the
        type and its constraints, but maybe not every such value is reachable."""
        note = (f"{what} runs before validation: values it never produces are "
                f"included")
        if note not in self.dropped:
            self.dropped.append(note)

    def note_narrowed(self, what: str) -> None:
        note = f"{what} only rejects values: the constraint it adds is not translated"
        if note not in self.dropped:
            self.dropped.append(note)

    # -- scalars ------------------------------------------------------------------------
    def numeric_constraints(self, sym: SInt | SFloat, items: list[Any], owner: str,
                            guard: z3.BoolRef, constraints: list[Constraint], *,
                            config: dict[str, Any] | None = None) -> None:
        allow_special = True if config is None else config.get("allow_inf_nan", True)
        for item in items:
            for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
                if isinstance(item, getattr(at, attr.capitalize())):
                    bound = _number(getattr(item, attr))
                    label = f"{attr}={_fmt(getattr(item, attr))} ({owner})"
                    if bound is None:
                        self.dropped.append(f"{label}: bound not modelled")
                        continue
                    if isinstance(sym, SFloat):  # pydantic compares with the bound as a float
                        try:
                            bound = Fraction(float(bound))
                        except OverflowError:
                            self.dropped.append(f"{label}: bound beyond the float range")
                            continue
                    constraints.append(Constraint(label, implies(guard, _bound(sym, op,
                                                                                bound))))
            if isinstance(item, at.MultipleOf):
                label = f"multiple_of={_fmt(item.multiple_of)} ({owner})"
                m = item.multiple_of
                if isinstance(sym, SInt) and isinstance(m, int) and not isinstance(m, bool) \
                        and m != 0:
                    constraints.append(Constraint(label, implies(guard, sym.e % abs(m) == 0)))
                else:
                    self.dropped.append(f"{label}: float multiple_of uses a tolerance")
            name = type(item).__name__
            if name == "AllowInfNan" or (name == "_PydanticGeneralMetadata"
                                         and hasattr(item, "allow_inf_nan")):
                allow_special = bool(item.allow_inf_nan)
            elif name not in IGNORED_METADATA and not isinstance(item, (at.Gt, at.Ge, at.Lt, at.Le,
                                                                at.MultipleOf)):
                self.note_unknown(item, owner)
        if isinstance(sym, SFloat) and not allow_special:
            constraints.append(Constraint(f"allow_inf_nan=False ({owner})",
                                          implies(guard, sym.tag == FIN)))

    def string_constraints(self, sym: SStr, items: list[Any], owner: str, guard: z3.BoolRef,
                           constraints: list[Constraint], config: dict[str, Any]) -> None:
        engine = config.get("regex_engine", "rust-regex")
        lengths: list[tuple[str, int]] = []
        patterns: list[str | re.Pattern[str]] = []
        transforms = [k for k in ("str_strip_whitespace", "str_to_lower", "str_to_upper")
                      if config.get(k)]
        for item in items:
            name = type(item).__name__
            if isinstance(item, at.MinLen):
                lengths.append(("min_length", item.min_length))
            elif isinstance(item, at.MaxLen):
                lengths.append(("max_length", item.max_length))
            elif name in ("_PydanticGeneralMetadata", "StringConstraints"):
                data = getattr(item, "__dict__", {})
                for key in ("strip_whitespace", "to_lower", "to_upper"):
                    if data.get(key) or getattr(item, key, None):
                        transforms.append(key)
                if getattr(item, "min_length", None) is not None and name == "StringConstraints":
                    lengths.append(("min_length", item.min_length))
                if getattr(item, "max_length", None) is not None and name == "StringConstraints":
                    lengths.append(("max_length", item.max_length))
                pattern = getattr(item, "pattern", None) or data.get("pattern")
                if pattern is not None:
                    patterns.append(pattern)  # a compiled re.Pattern runs on Python's re
                if getattr(item, "ascii_only", None):
                    constraints.append(Constraint(f"ascii_only ({owner})",
                                                  implies(guard, _ascii(sym.e))))
            elif name not in IGNORED_METADATA:
                self.note_unknown(item, owner)
        # The model-wide lengths apply only where the field sets none of its own.
        for key in ("min_length", "max_length"):
            if config.get(f"str_{key}") is not None and all(k != key for k, _ in lengths):
                lengths.append((key, int(config[f"str_{key}"])))
        if any(t.endswith(("to_lower", "to_upper")) for t in transforms):
            # pydantic checks lengths and patterns *before* changing the case, and a
            # case change may change the length ('ß'.upper() == 'SS'): the final value
            # satisfies none of them for sure.
            self.dropped.append(f"{', '.join(sorted(set(transforms)))} on {owner}: the "
                                f"value's case is changed after its constraints are "
                                f"checked; the constraints are not applied")
            return
        for key, bound in lengths:
            length = z3.Length(sym.e)
            expr = length >= bound if key == "min_length" else length <= bound
            constraints.append(Constraint(f"{key}={bound} ({owner})", implies(guard, expr)))
        for pattern in patterns:
            if isinstance(pattern, str):
                label = f"pattern={pattern!r} ({owner})"
                translation = field_pattern(pattern, engine)
            else:  # a compiled re.Pattern runs on Python's re
                label = f"pattern={pattern.pattern!r} ({owner})"
                translation = field_pattern(pattern.pattern, "python-re", pattern.flags)
            if translation.regex is None:
                self.dropped.append(f"{label}: {translation.reason}")
                continue
            if not translation.exact:
                self.dropped.append(f"{label}: Unicode classes over-approximated")
            constraints.append(Constraint(label, implies(guard, z3.InRe(sym.e,
                                                                         translation.regex))))
        if transforms:
            self.dropped.append(f"{', '.join(sorted(set(transforms)))} on {owner}: the value "
                                f"is stripped before its constraints are checked; that it "
                                f"has no surrounding whitespace is not modelled")

    def note_unapplied(self, items: list[Any], owner: str) -> None:
        """Constraints on a bool, a Literal, an enum, None or a model: pydantic checks
        them with a function after the type's validation (``Annotated[Literal[1, 5],
        Field(ge=3)]`` rejects 1); the translation does not apply them: not exact."""
        for item in items:
            for key, _ in atoms(item) or ():
                if key in COMPARED_KEYS:
                    note = (f"{key} on {owner}: checked by pydantic after the type's "
                            f"validation; not translated")
                    if note not in self.dropped:
                        self.dropped.append(note)

    def note_unknown(self, item: object, owner: str) -> None:
        note = f"{type(item).__name__} on {owner}: not translated"
        if type(item).__name__ in ("BeforeValidator", "AfterValidator", "WrapValidator",
                                   "PlainValidator"):
            return
        if note not in self.dropped:
            self.dropped.append(note)

    def literal(self, ann: Any, path: str, owner: str, guard: z3.BoolRef,
                constraints: list[Constraint], config: dict[str, Any] | None = None) -> Sym:
        values = list(typing.get_args(ann))
        if config and config.get("use_enum_values"):  # members are stored as their values
            values = [v.value if isinstance(v, enum.Enum) else v for v in values]
        label = f"Literal[{', '.join(repr(v) for v in values)}] ({owner})"
        has_none = None in values
        values = [v for v in values if v is not None]
        if not values:
            return NONE
        kinds = {type(v) for v in values}
        sym: Sym
        if kinds == {bool}:
            sym = SBool(z3.Bool(fresh_name(path)))
            expr = z3.Or(*[sym.e == v for v in values])
        elif kinds == {int}:
            sym = SInt(z3.Int(fresh_name(path)))
            expr = z3.Or(*[sym.e == v for v in values])
        elif kinds == {str}:
            sym = SStr(z3.String(fresh_name(path)))
            expr = z3.Or(*[sym.e == str_val(v) for v in values])  # const_to_sym of a str
        elif len(kinds) == 1 and issubclass(cls := next(iter(kinds)), enum.Enum):
            members = list(cls)
            sym = SEnum(cls, z3.Int(fresh_name(path)))
            expr = z3.Or(*[sym.idx == members.index(v) for v in values])
        else:
            return SOpaque(f"{owner}: Literal of mixed types not modelled",
                           example=values[0])
        self.leaves += 1
        if has_none:
            none = z3.Bool(fresh_name(path + ".none"))
            constraints.append(Constraint(label, implies(guard, z3.Or(none, expr))))
            return SOpt(none, sym)
        constraints.append(Constraint(label, implies(guard, expr)))
        return sym

    def enumeration(self, cls: type[enum.Enum], path: str, owner: str, guard: z3.BoolRef,
                    constraints: list[Constraint], config: dict[str, Any]) -> Sym:
        members = list(cls)
        if not members:
            return SOpaque(f"{owner}: empty enum {cls.__name__}")
        if issubclass(cls, enum.Flag):
            return SOpaque(f"{owner}: {cls.__name__} is a Flag: pydantic accepts every "
                           f"combination of its members, not only the members")
        custom = custom_behaviour(cls, enum.Enum) or \
            custom_behaviour(cls, enum.Enum, ENUM_DOMAIN_HOOKS)
        if custom is not None:
            return SOpaque(f"{owner}: {cls.__name__} defines {custom}")
        self.leaves += 1
        if config.get("use_enum_values"):
            values = [m.value for m in members]
            literal = Literal[tuple(values)]  # type: ignore[valid-type]  # built at run time
            return self.literal(literal, path, owner, guard, constraints)
        idx = z3.Int(fresh_name(path))
        constraints.append(Constraint(f"{cls.__name__} ({owner})",
                                      implies(guard, z3.And(idx >= 0, idx < len(members)))))
        return SEnum(cls, idx)


def _ascii(expr: z3.SeqRef) -> z3.BoolRef:
    return z3.InRe(expr, z3.Star(z3.Range(z3.StringVal("\\u{0}"), z3.StringVal("\\u{7f}"))))


_COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def _bound(sym: SInt | SFloat, op: str, bound: Fraction) -> z3.BoolRef:
    if isinstance(sym, SInt):
        x: z3.ArithRef = sym.e if bound.denominator == 1 else z3.ToReal(sym.e)
        b = int_val(int(bound)) if bound.denominator == 1 else real_val(bound)
        return _COMPARE[op](x, b)
    finite = sym.tag == FIN
    b = real_val(bound)
    compare = _COMPARE[op](sym.r, b)
    infinite = sym.tag == (PINF if op in (">", ">=") else NINF)
    return z3.Or(z3.And(finite, compare), infinite)
