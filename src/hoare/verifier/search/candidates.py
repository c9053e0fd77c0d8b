"""Candidate values of a type, for the concrete searches (falsification, sampled
witnesses): the literals the predicates mention (``Constants``), and the ``Sampler`` that
builds values from the typed domain (types, bounds, ``Literal``/enum members, patterns,
defaults, ``examples``, constants ±1, IEEE edge values, non-ASCII and astral strings).

Deterministic: a fixed seed; the caller's budget decides how many are drawn."""

from __future__ import annotations

import ast
import enum
import itertools
import math
import random
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hoare.declaration.description import PredicateSource
from hoare.declaration.models import TypeSpec
from hoare.declaration.source import SourceNotFound, function_node
from hoare.verifier.search.patterns import pattern_samples
from hoare.verifier.search.witness import NONE_FOUND, example_of

__all__ = ["OMIT", "SEED", "Constants", "Sampler", "constants_of", "replaced"]

SEED = 20261123

# 2**53 ± 1 as JSON integers: a float field rounds 2**53 + 1 to 2**53.
_EDGE_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 5e-324, -5e-324, 2.0 ** 53 - 1, 2.0 ** 53,
                2 ** 53 + 1, -(2 ** 53) - 1, 1e308, -1e308, 1.7976931348623157e308,
                math.nan, math.inf, -math.inf)
_EDGE_INTS = (0, 1, -1, 2, -2, 10, 100, 2 ** 53 - 1, 2 ** 53 + 1, 2 ** 63, -(2 ** 63) - 1)
_EDGE_STRS = ("", " ", "a", "A", "0", "ab", "a b", "\t", "\n", "é", "ß", "İ", "日本", "𝄞",
              "a𝄞", " a ", "aaaa", "-1", "1.5", "null", "true")
_FIELD_CAP = 48  # candidates kept per field


@dataclass
class Constants:
    """Literal values the constraints and predicates mention."""

    numbers: list[int | float] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)

    def add(self, value: object, depth: int = 0) -> None:
        if isinstance(value, enum.Enum):
            value = value.value
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            if value not in self.numbers or (isinstance(value, float) and math.isnan(value)):
                self.numbers.append(value)
        elif isinstance(value, str):
            if value not in self.strings and len(value) <= 200:
                self.strings.append(value)
        elif isinstance(value, (list, tuple, set, frozenset)) and depth < 2:
            for item in list(value)[:64]:
                self.add(item, depth + 1)
        elif isinstance(value, dict) and depth < 2:
            for key, item in list(value.items())[:64]:
                self.add(key, depth + 1)
                self.add(item, depth + 1)
        elif isinstance(value, BaseModel) and depth < 2:
            self.add(value.model_dump(), depth + 1)


def constants_of(sources: Iterable[PredicateSource], *values: object) -> Constants:
    """The constants of the predicates' code (literals, and the plain values of the
    globals and closure variables they name), plus those of ``values`` (an instance's
    attributes, the concrete input)."""
    found = Constants()
    for source in sources:
        fn = source.fn
        try:
            node = function_node(fn)
        except (SourceNotFound, OSError, TypeError):
            continue
        names = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant):
                found.add(sub.value)
            elif isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                names.add(sub.attr)
        scope = dict(getattr(fn, "__globals__", {}))
        code = getattr(fn, "__code__", None)
        for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None)
                              or (), strict=False):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                continue
        for name in names:
            if name in scope and not callable(scope[name]):
                found.add(scope[name])
    for value in values:
        if isinstance(value, (BaseModel, dict, list, tuple, set, frozenset, str, int, float)):
            found.add(value)
        else:
            for attr in (getattr(value, "__dict__", None) or {}).values():
                found.add(attr)
    return found



class _Omit:
    """Leave the field out: pydantic uses its default."""


OMIT = _Omit()


class Sampler:
    """Candidate JSON values of a type, in a fixed order."""

    def __init__(self, constants: Constants | None = None, seed: int = SEED) -> None:
        self.constants = constants or Constants()
        self.rng = random.Random(seed)
        # each top-level model's columns as ``models`` drew from them (after ``probe``)
        self.columns: dict[type, list[tuple[str, list[Any]]]] = {}

    # -- leaves -------------------------------------------------------------------------
    def ints(self, bounds: dict[str, Any]) -> list[int]:
        """The constants themselves and the bounds first (a predicate comparing with a
        constant is the common case), then their neighbours, edges, random values."""
        numbers = [c for c in self.constants.numbers
                   if not isinstance(c, float) or math.isfinite(c)]
        points = [v for k, v in bounds.items() if k in ("ge", "gt", "le", "lt", "multiple_of",
                                                        "min_length", "max_length")
                  and isinstance(v, (int, float)) and math.isfinite(v)]
        out: list[int] = [math.floor(c) for c in numbers]
        out += [math.floor(p) for p in points] + [0, 1, -1]
        for c in [*numbers, *points]:
            base = math.floor(c)
            out += [base + 1, base - 1, base + 2, base - 2]
        lo = _bound(bounds, "ge", "gt", +1, -1000)
        hi = _bound(bounds, "le", "lt", -1, 1000)
        step = bounds.get("multiple_of")
        if isinstance(step, int) and step:
            out += [step * k for k in range(-3, 4)]
        if lo <= hi:
            out += [self.rng.randint(int(lo), int(hi)) for _ in range(6)]
        out += list(_EDGE_INTS[3:])
        return _unique(out)

    def floats(self, bounds: dict[str, Any]) -> list[float]:
        points = [float(v) for k, v in bounds.items()
                  if k in ("ge", "gt", "le", "lt", "multiple_of") and isinstance(v, (int, float))]
        near = [float(c) for c in [*self.constants.numbers, *points]
                if math.isfinite(float(c))]
        out: list[float] = [*near, *_EDGE_FLOATS[:6]]
        for c in near:
            out += [math.nextafter(c, math.inf), math.nextafter(c, -math.inf), c - 1, c + 1,
                    c / 2, c + 0.5, c - 0.5]
        lo = _bound(bounds, "ge", "gt", 0, -1000.0)
        hi = _bound(bounds, "le", "lt", 0, 1000.0)
        if lo <= hi and math.isfinite(lo) and math.isfinite(hi):
            out += [self.rng.uniform(lo, hi) for _ in range(4)]
        out += list(_EDGE_FLOATS[6:])
        return _unique(out)

    def strings(self, bounds: dict[str, Any]) -> list[str]:
        """Pattern samples, variations of the constants, strings at the length bounds
        and at the lengths the constants name (blank ones too: "is it blank?" is a
        common predicate), then edge cases: interleaved, so each kind survives the
        per-field cap."""
        pattern = bounds.get("pattern")
        patterned = pattern_samples(pattern, self.rng) if isinstance(pattern, str) else []
        varied: list[str] = []
        for c in self.constants.strings:
            varied += [c, c + c, c + "a", "a" + c, " " + c, c + " ", c[:-1], c[1:], c.upper(),
                       c.lower(), c + "𝄞"]
        sized: list[str] = []
        for key in ("min_length", "max_length"):
            n = bounds.get(key)
            if isinstance(n, int) and 0 <= n <= 4096:
                sized += ["a" * n, " " * n, "a" * max(n - 1, 0), "a" * (n + 1), "é" * n,
                          "𝄞" * n]
        for n in self.constants.numbers:
            if isinstance(n, int) and 0 <= n <= 256:
                sized += ["a" * n, "a" * (n + 1), "a" * max(n - 1, 0)]
            if not isinstance(n, float) or math.isfinite(n):
                sized.append(str(n))
        return _unique(_interleave([patterned, varied, sized, list(_EDGE_STRS)]))

    # -- types --------------------------------------------------------------------------
    def values(self, annotation: Any, bounds: dict[str, Any] | None = None, depth: int = 0
               ) -> list[Any]:
        """Candidate values of ``annotation`` (JSON-compatible, a few per shape)."""
        bounds = dict(bounds or {})
        if depth > 4:
            return []
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            inner, *extra = typing.get_args(annotation)
            for item in extra:
                bounds.update(_bounds_of(item))
            return self.values(inner, bounds, depth)
        if annotation is type(None) or annotation is None:
            return [None]
        if origin is typing.Literal:
            return [a.value if isinstance(a, enum.Enum) else a for a in typing.get_args(
                annotation)]
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            parts = [self.values(a, bounds, depth + 1) for a in typing.get_args(annotation)]
            return _unique(_interleave(parts))[:_FIELD_CAP * 2]
        if annotation is bool:
            return [True, False]
        if annotation is int:
            return self.ints(bounds)[:_FIELD_CAP]
        if annotation is float:
            return self.floats(bounds)[:_FIELD_CAP]
        if annotation is str:
            return self.strings(bounds)[:_FIELD_CAP]
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return [m.value for m in annotation]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return list(self.models(annotation, 12, depth + 1))
        if origin in (list, set, frozenset, tuple) or annotation in (list, set, tuple):
            return self.sequences(annotation, bounds, depth)
        if origin is dict or annotation is dict:
            return [{}]
        found = example_of(annotation)
        return [] if found is NONE_FOUND else [found]

    def sequences(self, annotation: Any, bounds: dict[str, Any], depth: int) -> list[Any]:
        args = typing.get_args(annotation)
        origin = typing.get_origin(annotation) or annotation
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            slots = [self.values(a, None, depth + 1) or [None] for a in args]
            return [[s[k % len(s)] for s in slots] for k in range(4)]
        items = self.values(args[0], None, depth + 1) if args else [0, "a", None]
        items = items or [None]
        lengths = [0, 1, 2, 3]
        for key in ("min_length", "max_length"):
            n = bounds.get(key)
            if isinstance(n, int) and 0 <= n <= 64:
                lengths += [n, n + 1, max(n - 1, 0)]
        out: list[Any] = []
        for n in _unique(lengths):
            out.append([items[k % len(items)] for k in range(n)])
            out.append([self.rng.choice(items) for _ in range(n)])
            if items:
                out.append([items[0]] * n)
        return _unique(out)

    def field_values(self, info: Any, depth: int = 0) -> list[Any]:
        bounds: dict[str, Any] = {}
        for item in info.metadata:
            bounds.update(_bounds_of(item))
        out: list[Any] = []
        if not info.is_required():
            out.append(OMIT)
        out += list(info.examples or [])
        out += self.values(info.annotation, bounds, depth)
        return _unique(out)[:_FIELD_CAP * 2]

    def models(self, model: type[BaseModel], limit: int, depth: int = 0,
               probe: Callable[[dict[str, Any]], bool] | None = None
               ) -> Iterator[dict[str, Any]]:
        """Dicts of field values: every field's k-th candidate, then random mixes.
        ``probe`` (does pydantic accept this row?): before the mixes, drop each field's
        values that no row one field away from a valid row accepts, so the mixes are
        mostly valid values, the ones that test a predicate."""
        columns: list[tuple[str, list[Any]]] = []
        for name, info in model.model_fields.items():
            key = info.alias or name
            values = self.field_values(info, depth) if depth <= 4 else [OMIT]
            columns.append((key, values or [OMIT]))
        if not columns:
            yield {}
            return
        longest = max(len(v) for _, v in columns)
        produced = 0
        for k in range(longest):
            yield _row(columns, _kth(k))
            produced += 1
            if produced >= limit:
                return
        if probe is not None:  # only now: a search that succeeds early never pays for it
            columns = _accepted(columns, probe, longest)
        if depth == 0:
            self.columns[model] = columns
        # Every combination of the first candidates of each field (a conjunction over
        # several fields needs them together), then random mixes.
        width = max(2, int((limit / 3) ** (1 / len(columns))))
        heads = [(key, values[:width]) for key, values in columns]
        for combo in itertools.product(*(values for _, values in heads)):
            yield {key: value for (key, _), value in zip(heads, combo, strict=True)
                   if value is not OMIT}
            produced += 1
            if produced >= limit:
                return
        while produced < limit:  # random mixes, drawn a batch of rows at a time
            batch = min(limit - produced, 256)
            picks = [self.rng.choices(values, k=batch) for _key, values in columns]
            for k in range(batch):
                yield {key: pick[k] for (key, _values), pick in zip(columns, picks,
                                                                   strict=True)
                       if pick[k] is not OMIT}
            produced += batch

    def candidates(self, spec: TypeSpec, limit: int,
                   probe: Callable[[Any], bool] | None = None) -> Iterator[Any]:
        """Candidate JSON values for ``spec`` (a model: dicts; a wrapped type: values)."""
        if not spec.wrapped:
            yield from self.models(spec.model, limit, probe=probe)
            return
        info = spec.model.model_fields.get("value")
        values = self.field_values(info) if info is not None else self.values(spec.annotation)
        values = [v for v in values if v is not OMIT]
        yield from values[:limit]
        for _ in range(max(0, limit - len(values))):
            if not values:
                return
            yield self.rng.choice(values)


def _accepted(columns: list[tuple[str, list[Any]]], probe: Callable[[dict[str, Any]], bool],
              longest: int) -> list[tuple[str, list[Any]]]:
    """Each field's values that pydantic accepts in a row otherwise equal to the first
    valid k-th row (all of them when no k-th row is valid, or none of a field's is)."""
    base = None
    for k in range(longest):
        row = _row(columns, _kth(k))
        if probe(row):
            base = row
            break
    if base is None:
        return columns
    out = []
    for key, values in columns:
        kept = [v for v in values if probe(replaced(base, key, v))]
        out.append((key, kept or values))
    return out


def replaced(row: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = dict(row)
    if value is OMIT:
        out.pop(key, None)
    else:
        out[key] = value
    return out


def _kth(k: int) -> Callable[[list[Any]], Any]:
    """A column's ``k``-th value, wrapping round (``_row``'s pick)."""
    return lambda values: values[k % len(values)]


def _row(columns: list[tuple[str, list[Any]]], pick: Callable[[list[Any]], Any]
         ) -> dict[str, Any]:
    out = {}
    for key, values in columns:
        value = pick(values)
        if value is not OMIT:
            out[key] = value
    return out


def _bound(bounds: dict[str, Any], inclusive: str, exclusive: str, nudge: int | float,
           default: float) -> float:
    if isinstance(bounds.get(inclusive), (int, float)):
        return float(bounds[inclusive])
    if isinstance(bounds.get(exclusive), (int, float)):
        return float(bounds[exclusive]) + nudge
    return default


def _bounds_of(item: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length",
                 "pattern"):
        value = getattr(item, name, None)
        if value is not None:
            out[name] = value
    metadata = getattr(item, "metadata", None)  # a nested FieldInfo
    if isinstance(metadata, list):
        for sub in metadata:
            out.update(_bounds_of(sub))
    return out


def _unique(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    seen: set[str] = set()
    for value in values:
        key = f"{type(value).__name__}:{value!r}"
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _interleave(parts: Sequence[Sequence[Any]]) -> list[Any]:
    out = []
    for k in range(max((len(p) for p in parts), default=0)):
        out += [p[k] for p in parts if k < len(p)]
    return out

