"""Random pydantic models as source text, with a value drawer per field.

A ``FieldType`` is an annotation (source text), the module-level definitions it
needs (enum classes, ``Annotated`` aliases, nested and generic models), the kind
the predicate grammar reads it as, and ``draw``: raw values (JSON-able, before
validation) that cover the type's domain and its edges. The drawn values are a
superset of the valid ones: pydantic itself decides what is valid.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .values import draw_char, draw_float, draw_int, draw_text

__all__ = ["FieldType", "Model", "Pool", "draw_model", "field_type"]


@dataclass
class Pool:
    """Constants the predicates mention: drawn values gather near them."""

    ints: list[int] = field(default_factory=list)
    floats: list[float] = field(default_factory=list)
    strs: list[str] = field(default_factory=list)


Drawer = Callable[[random.Random, Pool], Any]


@dataclass
class FieldType:
    annotation: str
    kind: str  # int | float | str | bool | enum | literal | list | model
    draw: Drawer
    defs: list[str] = field(default_factory=list)
    optional: bool = False
    finite: tuple[Any, ...] | None = None  # every raw value worth trying, when few
    members: tuple[tuple[str, Any], ...] = ()  # enum: (name, value); literal: ((repr, value))
    enum_name: str = ""
    enum_base: str = ""  # "", "str", "int", "StrEnum", "IntEnum"
    item: FieldType | None = None  # list element
    fields: tuple[tuple[str, FieldType], ...] = ()  # nested model
    model_name: str = ""
    features: tuple[str, ...] = ()  # what it covers, for the coverage table


@dataclass
class Model:
    name: str
    fields: list[tuple[str, FieldType]]
    config: str  # a ``model_config = ...`` line or ""
    base: str = "BaseModel"
    parent_fields: int = 0  # the first fields are declared on a parent class
    features: tuple[str, ...] = ()

    def defs(self) -> list[str]:
        seen: list[str] = []
        for _name, ftype in self.fields:
            for d in _all_defs(ftype):
                if d not in seen:
                    seen.append(d)
        return seen

    def source(self) -> str:
        lines = []
        own = self.fields
        base = self.base
        if self.parent_fields:
            parent = self.fields[:self.parent_fields]
            own = self.fields[self.parent_fields:]
            lines.append(f"class {self.name}Base({self.base}):")
            if self.config:
                lines.append(f"    {self.config}")
            lines += [f"    {n}: {t.annotation}" for n, t in parent] or ["    pass"]
            lines.append("")
            base = f"{self.name}Base"
        lines.append(f"class {self.name}({base}):")
        if self.config and not self.parent_fields:
            lines.append(f"    {self.config}")
        lines += [f"    {n}: {t.annotation}" for n, t in own] or ["    pass"]
        return "\n".join(lines) + "\n"

    def draw_raw(self, rng: random.Random, pool: Pool) -> dict[str, Any]:
        """A raw (JSON-able) value; now and then a field is left out or an extra added."""
        raw = {name: ftype.draw(rng, pool) for name, ftype in self.fields}
        if raw and rng.random() < 0.03:
            raw.pop(rng.choice(list(raw)))
        if rng.random() < 0.03:
            raw["extra_field"] = 1
        return raw

    def finite_raws(self, limit: int = 3000) -> list[dict[str, Any]] | None:
        """Every raw value of a superset of the domain, when the product is small."""
        supersets = []
        size = 1
        for _name, ftype in self.fields:
            if ftype.finite is None:
                return None
            supersets.append(ftype.finite)
            size *= len(ftype.finite)
            if size > limit:
                return None
        names = [n for n, _t in self.fields]
        return [dict(zip(names, combo, strict=True))
                for combo in itertools.product(*supersets)]


def _all_defs(ftype: FieldType) -> list[str]:
    out: list[str] = []
    if ftype.item is not None:
        out += _all_defs(ftype.item)
    for _n, sub in ftype.fields:
        out += _all_defs(sub)
    return out + ftype.defs


_COUNTER = itertools.count()


def _uid(prefix: str) -> str:
    return f"{prefix}{next(_COUNTER)}"


def _pick_int(rng: random.Random, pool: Pool) -> int:
    return draw_int(rng, pool.ints)


def _pick_float(rng: random.Random, pool: Pool) -> float:
    return draw_float(rng, [*pool.floats, *pool.ints])


def _pick_str(rng: random.Random, pool: Pool, alphabet: str = "") -> str:
    if pool.strs and rng.random() < 0.3:
        base = rng.choice(pool.strs)
        roll = rng.random()
        if roll < 0.4:
            return base
        if roll < 0.7:
            return base + draw_text(rng, 2, alphabet or None)
        return draw_text(rng, 2, alphabet or None) + base
    if rng.random() < 0.1:
        return " " + draw_text(rng, 3, alphabet or None) + rng.choice([" ", "\n", "\u3000"])
    return draw_text(rng, 6, alphabet or None)


def _int_type(rng: random.Random) -> FieldType:
    low = rng.randrange(-5, 6)
    high = low + rng.randrange(-1, 8)
    form = rng.choice(["plain", "field", "field", "annotated", "alias", "strict", "multiple",
                       "gt_lt", "conint"])
    defs: list[str] = []
    bounded = True
    if form == "plain":
        annotation, bounded = "int", False
    elif form == "field":
        annotation = f"int = Field(ge={low}, le={high})"
    elif form == "gt_lt":
        annotation = f"int = Field(gt={low - 1}, lt={high + 1})"
    elif form == "annotated":
        annotation = f"Annotated[int, Field(ge={low}), Field(le={high})]"
    elif form == "alias":
        alias = _uid("Low")
        defs.append(f"{alias} = Annotated[int, Field(ge={low})]")
        annotation = f"Annotated[{alias}, Field(le={high})]"
    elif form == "strict":
        annotation = f"Annotated[StrictInt, Field(ge={low}, le={high})]"
    elif form == "conint":
        annotation = f"conint(ge={low}, le={high})"
    else:
        k = rng.choice([2, 3, 5])
        annotation = f"int = Field(ge={low}, le={high + 6}, multiple_of={k})"
        high += 6

    def draw(r: random.Random, pool: Pool) -> Any:
        if bounded and r.random() < 0.6:
            return r.randrange(low - 2, high + 3)
        value = _pick_int(r, pool)
        if r.random() < 0.04:
            return float(value) if abs(value) < 2 ** 60 else value
        return value

    finite = tuple(range(low - 2, high + 3)) if bounded else None
    return FieldType(annotation, "int", draw, defs, finite=finite, features=(f"int:{form}",))


def _float_type(rng: random.Random) -> FieldType:
    low = rng.choice([-2.5, -1.0, 0.0, -0.0, 0.5, 1.0])
    high = low + rng.choice([0.0, 0.5, 1.0, 3.0, 100.0])
    form = rng.choice(["plain", "plain", "field", "gt_lt", "annotated", "finite", "multiple",
                       "strict", "alias"])
    defs: list[str] = []
    if form == "plain":
        annotation = "float"
    elif form == "field":
        annotation = f"float = Field(ge={low!r}, le={high!r})"
    elif form == "gt_lt":
        annotation = f"float = Field(gt={low!r}, lt={high!r})"
    elif form == "annotated":
        annotation = f"Annotated[float, Field(ge={low!r})]"
    elif form == "finite":
        annotation = "float = Field(allow_inf_nan=False)"
    elif form == "multiple":
        annotation = f"float = Field(multiple_of={rng.choice([0.5, 0.25, 2.0, 0.1])!r})"
    elif form == "strict":
        annotation = "StrictFloat"
    else:
        alias = _uid("Ratio")
        defs.append(f"{alias} = Annotated[float, Field(ge=0.0, le=1.0)]")
        annotation = alias

    def draw(r: random.Random, pool: Pool) -> Any:
        if r.random() < 0.25:
            return near(r, r.choice([low, high]))
        if r.random() < 0.05:
            return r.randrange(-3, 4)  # an int where a float is expected
        return _pick_float(r, pool)

    return FieldType(annotation, "float", draw, defs, features=(f"float:{form}",))


def near(rng: random.Random, value: float) -> float:
    from .values import near as _near

    return _near(rng, value)


PATTERNS: tuple[str, ...] = (
    r"^[a-z]*$", r"^[ab]+$", r"^\d{1,3}$", r"^\w+$", r"^[^ ]*$", r"^.{2}$", r"a", r"b$",
    r"^[A-Z][a-z]*$", r"^\s*$", r"^(ab|ba)*$", r"^[a-c]?x?$", r"^\S+$",
)


def _str_type(rng: random.Random) -> FieldType:
    form = rng.choice(["plain", "plain", "length", "pattern", "constraints", "annotated",
                       "alias", "strict", "constr"])
    low = rng.randrange(0, 3)
    high = low + rng.randrange(0, 4)
    defs: list[str] = []
    alphabet = ""
    if form == "plain":
        annotation = "str"
    elif form == "length":
        annotation = f"str = Field(min_length={low}, max_length={high})"
    elif form == "pattern":
        pattern = rng.choice(PATTERNS)
        alphabet = "abxAB1 "
        annotation = f"str = Field(pattern={pattern!r})"
    elif form == "constraints":
        options = [f"min_length={low}", f"max_length={high}"]
        options += rng.sample(["strip_whitespace=True", "to_lower=True", "to_upper=True",
                               f"pattern={rng.choice(PATTERNS)!r}"], rng.randrange(0, 3))
        annotation = f"Annotated[str, StringConstraints({', '.join(options)})]"
        alphabet = "abAB "
    elif form == "annotated":
        annotation = f"Annotated[str, Field(max_length={high})]"
    elif form == "alias":
        alias = _uid("Short")
        defs.append(f"{alias} = Annotated[str, Field(max_length={high + 1})]")
        annotation = f"Annotated[{alias}, Field(min_length={low})]"
    elif form == "strict":
        annotation = f"Annotated[StrictStr, Field(max_length={high + 2})]"
    else:
        annotation = f"constr(min_length={low}, max_length={high})"

    def draw(r: random.Random, pool: Pool) -> Any:
        if r.random() < 0.03:
            return r.randrange(-3, 30)  # a number where a str is expected
        return _pick_str(r, pool, alphabet)

    return FieldType(annotation, "str", draw, defs, features=(f"str:{form}",))


def _bool_type(rng: random.Random) -> FieldType:
    strict = rng.random() < 0.2
    annotation = "StrictBool" if strict else "bool"

    def draw(r: random.Random, pool: Pool) -> Any:
        return r.choice([True, False, True, False, 0, 1, "true", "no", 2, None])

    return FieldType(annotation, "bool", draw, finite=(True, False, 0, 1, "yes", 2),
                     features=(f"bool:{'strict' if strict else 'lax'}",))


# "Enum-missing": a str Enum whose ``_missing_`` builds a member for any other value
# (pydantic-core calls ``cls(value)``), so its domain is wider than its members
ENUM_KINDS = ("Enum-int", "Enum-str", "str-mixin", "int-mixin", "StrEnum", "IntEnum",
              "Enum-missing")
_MISSING_HOOK = ("    @classmethod\n    def _missing_(cls, value):\n"
                 "        member = object.__new__(cls)\n        member._value_ = value\n"
                 "        member._name_ = 'X' + str(value)\n        return member\n")


def _enum_type(rng: random.Random) -> FieldType:
    kind = rng.choice(ENUM_KINDS)
    name = _uid("Color")
    count = rng.randrange(1, 4)
    if kind in ("Enum-int", "int-mixin", "IntEnum"):
        values: list[Any] = rng.sample([0, 1, 2, 3, -1, 10], count)
    else:
        values = rng.sample(["a", "b", "red", "A", "", "ß", " a"], count)
    members = tuple((f"M{k}", v) for k, v in enumerate(values))
    base = {"Enum-int": "Enum", "Enum-str": "Enum", "Enum-missing": "Enum",
            "str-mixin": "str, Enum",
            "int-mixin": "int, Enum", "StrEnum": "StrEnum", "IntEnum": "IntEnum"}[kind]
    body = "\n".join(f"    {m} = {v!r}" for m, v in members)
    hook = _MISSING_HOOK if kind == "Enum-missing" else ""
    defs = [f"class {name}({base}):\n{body}\n{hook}"]
    superset = tuple(v for _m, v in members) + (("zz", 7) if isinstance(values[0], str)
                                                 else (7, "a"))

    def draw(r: random.Random, pool: Pool) -> Any:
        return r.choice(superset)

    enum_base = {"Enum-int": "", "Enum-str": "", "Enum-missing": "", "str-mixin": "str",
                 "int-mixin": "int",
                 "StrEnum": "str", "IntEnum": "int"}[kind]
    return FieldType(name, "enum", draw, defs, finite=superset, members=members,
                     enum_name=name, enum_base=enum_base, features=(f"enum:{kind}",))


def _literal_type(rng: random.Random) -> FieldType:
    options: list[Any] = rng.sample(["a", "b", "c", "", "ß", 1, 2, 0, True, False],
                                    rng.randrange(1, 4))
    annotation = f"Literal[{', '.join(repr(o) for o in options)}]"
    superset = tuple(dict.fromkeys([*options, "a", "d", 1, 3]))

    def draw(r: random.Random, pool: Pool) -> Any:
        return r.choice(superset)

    mixed = len({type(o) for o in options}) > 1
    return FieldType(annotation, "literal", draw, finite=superset,
                     members=tuple((repr(o), o) for o in options),
                     features=("literal:mixed" if mixed else "literal:plain",))


def _list_type(rng: random.Random, depth: int) -> FieldType:
    item = rng.choice([_int_type, _str_type, _float_type])(rng)
    item.defs = list(item.defs)
    inner = item.annotation.split(" = ")[0] if " = Field(" in item.annotation else \
        item.annotation
    if " = Field(" in item.annotation:
        constraint = item.annotation.split(" = ", 1)[1]
        inner = f"Annotated[{inner}, {constraint}]"
    item = FieldType(inner, item.kind, item.draw, item.defs, finite=item.finite,
                     features=item.features)
    low = rng.randrange(0, 2)
    high = low + rng.randrange(0, 4)
    container = rng.choice(["list", "list", "tuple"])
    if container == "tuple":
        annotation = f"tuple[{inner}, ...]"
    else:
        annotation = f"list[{inner}] = Field(min_length={low}, max_length={high})"

    def draw(r: random.Random, pool: Pool) -> Any:
        return [item.draw(r, pool) for _ in range(r.randrange(0, high + 3))]

    return FieldType(annotation, "list", draw, item=item,
                     features=(f"{container}:{item.kind}", *item.features))


def _model_type(rng: random.Random, depth: int) -> FieldType:
    name = _uid("Inner")
    generic = rng.random() < 0.3
    inner_fields = [(f"x{k}", _scalar(rng)) for k in range(rng.randrange(1, 3))]
    if generic:
        box = _uid("Box")
        first = inner_fields[0][1]
        plain = first.annotation.split(" = ")[0]
        defs = [*first.defs,
                f"class {box}(BaseModel, Generic[T]):\n    x0: T\n",
                f"{name} = {box}[{plain}]\n"]
        inner_fields = [("x0", FieldType(plain, first.kind, first.draw, first.defs,
                                         finite=first.finite, members=first.members,
                                         enum_name=first.enum_name,
                                         enum_base=first.enum_base))]
    else:
        lines = [f"class {name}(BaseModel):"] + [f"    {n}: {t.annotation}"
                                                 for n, t in inner_fields]
        defs = ["\n".join(lines) + "\n"]

    def draw(r: random.Random, pool: Pool) -> Any:
        return {n: t.draw(r, pool) for n, t in inner_fields}

    sub_defs = [d for _n, t in inner_fields for d in t.defs]
    return FieldType(name, "model", draw, [*sub_defs, *defs] if not generic else defs,
                     fields=tuple(inner_fields), model_name=name,
                     features=("model:generic" if generic else "model:nested",))


def _scalar(rng: random.Random) -> FieldType:
    maker = rng.choice([_int_type, _int_type, _float_type, _float_type, _str_type, _str_type,
                        _bool_type, _enum_type, _literal_type])
    return maker(rng)


OTHER_TYPES: tuple[str, ...] = (
    "Union[int, str]", "Union[str, int]", "Union[float, int]", "Union[int, float]",
    "Union[int, bool]", "Union[bool, int]", "Union[float, str]", "Literal[1, True]",
    "Literal[True, 1]", "Literal[1.5, 'a']", "tuple[int, str]", "set[int]",
    "frozenset[str]", "dict[str, int]", "list[Optional[int]]", "Optional[list[int]]",
)


def _other_type(rng: random.Random) -> FieldType:
    """Unions, mixed literals and the other collections (mostly outside the verifier's
    exact model: their verdicts must come out unknown, not wrong)."""
    annotation = rng.choice(OTHER_TYPES)
    pool_values: tuple[Any, ...] = (0, 1, 2, -1, 1.0, 1.5, 2.0, "a", "1", "", "nan", True,
                                    False, None, [1, "a"], [1, 1], ["a"], {"a": 1}, [None, 2])

    def draw(r: random.Random, pool: Pool) -> Any:
        return r.choice(pool_values) if r.random() < 0.8 else _pick_int(r, pool)

    return FieldType(annotation, "other", draw, features=(f"other:{annotation}",))


def field_type(rng: random.Random, depth: int = 0) -> FieldType:
    """A field's type: a scalar, now and then wrapped in Optional/Union, a list, a model."""
    roll = rng.random()
    if roll > 0.94:
        return _other_type(rng)
    if roll < 0.1 and depth == 0:
        return _list_type(rng, depth)
    if roll < 0.17 and depth == 0:
        return _model_type(rng, depth)
    ftype = _scalar(rng)
    if rng.random() < 0.15:
        plain = ftype.annotation.split(" = ")[0]
        wrapper = rng.choice(["Optional[{}]", "Union[{}, None]", "{} | None"])
        default = " = None" if rng.random() < 0.5 else ""
        if " = Field(" in ftype.annotation:
            constraint = ftype.annotation.split(" = ", 1)[1]
            plain = f"Annotated[{plain}, {constraint}]"
        annotation = wrapper.format(plain) + default
        inner_draw = ftype.draw

        def draw(r: random.Random, pool: Pool) -> Any:
            return None if r.random() < 0.25 else inner_draw(r, pool)

        finite = None if ftype.finite is None else (*ftype.finite, None)
        return FieldType(annotation, ftype.kind, draw, ftype.defs, True, finite,
                         ftype.members, ftype.enum_name, ftype.enum_base,
                         features=(*ftype.features, "optional"))
    return ftype


SWAPPED_ALIASES = 0.05  # output models whose first two fields read each other's key
CONFIGS: tuple[str, ...] = (
    "", "", "", "model_config = ConfigDict(strict=True)",
    "model_config = ConfigDict(extra='forbid')", "model_config = ConfigDict(extra='allow')",
    "model_config = ConfigDict(str_strip_whitespace=True)",
    "model_config = ConfigDict(str_to_lower=True)",
    "model_config = ConfigDict(str_max_length=3)",
    "model_config = ConfigDict(regex_engine='python-re')",
    "model_config = ConfigDict(allow_inf_nan=False)",
    "model_config = ConfigDict(coerce_numbers_to_str=True)",
    "model_config = ConfigDict(frozen=True, str_min_length=1)",
)


def draw_model(rng: random.Random, name: str, count: int) -> Model:
    """A model of ``count`` fields named ``{name[0].lower()}0..``."""
    prefix = "f" if name == "Out" else "n"
    fields = [(f"{prefix}{k}", field_type(rng)) for k in range(count)]
    config = rng.choice(CONFIGS)
    parent = rng.randrange(0, count + 1) if count and rng.random() < 0.15 else 0
    features = [f"config:{config.split('(', 1)[1][:-1] if config else 'default'}"]
    # decided from what was drawn, not from ``rng``: the other cases stay as they were
    roll = random.Random(f"{[t.annotation for _, t in fields]}|{config}").random()
    if prefix == "f" and count >= 2 and roll < SWAPPED_ALIASES:
        # each of two fields of one type is read from the other's key: the JSON text
        # {"f0": 1, "f1": 2} validates to f0 == 2, f1 == 1 (a decoding schema keyed by
        # field name constrained the wrong field)
        fields[1] = ("f1", fields[0][1])
        swap = "alias_generator=lambda n: {'f0': 'f1', 'f1': 'f0'}.get(n, n)"
        config = f"model_config = ConfigDict({swap}, " + config.split("(", 1)[1] \
            if config else f"model_config = ConfigDict({swap})"
        config = config.replace(", )", ")")
        features.append("model:swapped-aliases")
    if parent:
        features.append("model:inherited")
    return Model(name, fields, config, parent_fields=parent, features=tuple(features))


def char_alphabet(rng: random.Random) -> str:
    return "".join(draw_char(rng) for _ in range(3))
