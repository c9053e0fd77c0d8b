"""The atoms of a post-condition JSON Schema can say, and what each keyword means.

Read from a post-condition's source (a guess, proved or dropped by ``decoding``): the
atoms on one top-level output field (``o.f <= 5`` → ``maximum``, ``o.f in ("a", "b")``
→ ``enum``, ``len(o.f) >= 2`` → ``minLength``...). Each keyword's meaning is given twice:
in z3, on a field's symbolic value (for the proofs), and on a concrete value (for the
sampled replay that backs each proof)."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import z3

from hoare.declaration.description import PredicateSource
from hoare.declaration.source import function_node
from hoare.verifier.translate.values import (
    FIN,
    NINF,
    PINF,
    SFloat,
    SInt,
    SList,
    SStr,
    Sym,
    real_val,
    str_val,
)

__all__ = [
    "BOUND_KEYWORDS",
    "atoms",
    "keyword_holds",
    "keyword_meaning",
    "post_body",
    "schema_keyword",
]


# -- the atoms, read from the source ---------------------------------------------------

_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}
BOUND_KEYWORDS = {ast.GtE: "minimum", ast.Gt: "exclusiveMinimum", ast.LtE: "maximum",
          ast.Lt: "exclusiveMaximum"}


def _constant(node: ast.expr) -> tuple[bool, Any]:
    """A literal number or string (``-3`` included)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) \
            and not isinstance(node.value, bool):
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        ok, value = _constant(node.operand)
        if ok and isinstance(value, (int, float)):
            return True, -value
    return False, None


def _field(node: ast.expr, param: str) -> str | None:
    """``o.f`` for the output parameter ``o``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == param:
        return node.attr
    return None


def _subject(node: ast.expr, param: str) -> tuple[str, bool] | None:
    """``(f, is_len)`` for ``o.f`` or ``len(o.f)``."""
    name = _field(node, param)
    if name is not None:
        return name, False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "len" and len(node.args) == 1 and not node.keywords:
        name = _field(node.args[0], param)
        if name is not None:
            return name, True
    return None


def atoms(node: ast.expr, param: str) -> Iterator[tuple[str, str, Any]]:
    """``(field, keyword, value)`` guesses for one boolean expression."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            yield from atoms(value, param)
        return
    if isinstance(node, ast.Compare):
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            yield from _comparison(left, op, right, param)
            left = right
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("startswith", "endswith") and len(node.args) == 1 \
            and not node.keywords:
        name = _field(node.func.value, param)
        ok, value = _constant(node.args[0])
        if name is not None and ok and isinstance(value, str):
            yield name, node.func.attr, value


def _comparison(left: ast.expr, op: ast.cmpop, right: ast.expr, param: str
                ) -> Iterator[tuple[str, str, Any]]:
    if isinstance(op, ast.In):
        name = _field(left, param)
        if name is not None and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            values = [_constant(e) for e in right.elts]
            if values and all(ok for ok, _ in values):
                yield name, "enum", [v for _, v in values]
        return
    subject, constant, operator = _subject(left, param), right, type(op)
    if subject is None:
        subject, constant = _subject(right, param), left
        operator = _FLIP.get(operator, operator)
    ok, value = _constant(constant)
    if subject is None or not ok or operator not in (*BOUND_KEYWORDS, ast.Eq):
        return
    name, is_len = subject
    if operator is ast.Eq:
        if is_len and isinstance(value, int):
            yield name, "length_min", value
            yield name, "length_max", value
        elif not is_len:
            yield name, "enum", [value]
        return
    keyword = BOUND_KEYWORDS[operator]
    if is_len:
        if not isinstance(value, (int, float)):
            return
        # len(x) >= k: at least ceil(k); len(x) > k: at least floor(k) + 1; ...
        if keyword == "minimum":
            yield name, "length_min", math.ceil(value)
        elif keyword == "exclusiveMinimum":
            yield name, "length_min", math.floor(value) + 1
        elif keyword == "maximum":
            yield name, "length_max", math.floor(value)
        else:
            yield name, "length_max", math.ceil(value) - 1
    elif isinstance(value, (int, float)) and math.isfinite(value):
        yield name, keyword, value


def post_body(source: PredicateSource) -> tuple[ast.expr, str] | None:
    """The boolean expression of a post-condition and its output parameter."""
    try:
        node = function_node(source.fn)
    except Exception:
        return None
    args = [a.arg for a in node.args.args]
    if source.is_method:
        args = args[1:]
    if not args:
        return None
    if isinstance(node, ast.Lambda):
        return node.body, args[0]
    body = [s for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value, args[0]
    return None


# -- what a keyword means: in z3, and on a concrete value ---------------------------------

def keyword_meaning(sym: Sym, keyword: str, value: Any, decoded: bool = False
                    ) -> z3.BoolRef | None:
    """What a constraint says about a field's value, in z3 (None: not for this type).

    ``decoded``: what the float pydantic reads from a JSON number the constraint
    admits satisfies. A decoder checks the number's text, pydantic rounds it to the
    nearest double (monotone, so bounds survive only as non-strict ones on the rounded
    bound) and a text past the largest double becomes ``inf``."""
    if decoded and isinstance(sym, SFloat) and type(sym) is SFloat:
        return _decoded_float(sym, keyword, value)
    if isinstance(sym, SInt):
        e = z3.ToReal(sym.e)
        bound = _number(value)
        if keyword == "enum":
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                return None
            return z3.Or([sym.e == v for v in value])
        return _compare(e, keyword, bound) if bound is not None else None
    if isinstance(sym, SFloat) and type(sym) is SFloat:
        finite = sym.tag == FIN
        if keyword == "enum":
            if not all(isinstance(v, (int, float)) for v in value):
                return None
            return z3.And(finite, z3.Or([sym.r == real_val(Fraction(v)) for v in value]))
        bound = _number(value)
        compared = _compare(sym.r, keyword, bound) if bound is not None else None
        return None if compared is None else z3.And(finite, compared)
    if isinstance(sym, SStr):
        if keyword == "enum":
            if not all(isinstance(v, str) for v in value):
                return None
            return z3.Or([sym.e == str_val(v) for v in value])
        if keyword == "minLength":
            return z3.Length(sym.e) >= value
        if keyword == "maxLength":
            return z3.Length(sym.e) <= value
        if keyword == "startswith":
            return z3.PrefixOf(str_val(value), sym.e)
        if keyword == "endswith":
            return z3.SuffixOf(str_val(value), sym.e)
        return None
    if isinstance(sym, SList) and sym.container == "list":
        if keyword == "minItems":
            return sym.n >= value
        if keyword == "maxItems":
            return sym.n <= value
    return None


def _decoded_float(sym: SFloat, keyword: str, value: Any) -> z3.BoolRef | None:
    if keyword == "enum":
        if not isinstance(value, (list, tuple)):
            return None
        options = [_decoded_float(sym, "const", v) for v in value]
        return None if any(o is None for o in options) else z3.Or(*options)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        rounded = real_val(Fraction(float(value)))
    except (OverflowError, ValueError):
        return None
    if keyword == "const":
        return z3.And(sym.tag == FIN, sym.r == rounded)
    if keyword in ("minimum", "exclusiveMinimum"):
        return z3.Or(z3.And(sym.tag == FIN, sym.r >= rounded), sym.tag == PINF)
    if keyword in ("maximum", "exclusiveMaximum"):
        return z3.Or(z3.And(sym.tag == FIN, sym.r <= rounded), sym.tag == NINF)
    return None


def _number(value: Any) -> z3.ArithRef | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return real_val(Fraction(value))


def _compare(e: z3.ArithRef, keyword: str, bound: z3.ArithRef) -> z3.BoolRef | None:
    return {"minimum": lambda: e >= bound, "maximum": lambda: e <= bound,
            "exclusiveMinimum": lambda: e > bound,
            "exclusiveMaximum": lambda: e < bound}.get(keyword, lambda: None)()


def keyword_holds(keyword: str, value: Any, actual: Any) -> bool:
    """The constraint checked on a concrete field value (for the sampled replay)."""
    try:
        if keyword == "enum":
            return any(actual == v and type(actual) is not bool for v in value)
        if keyword in ("minLength", "minItems"):
            return bool(len(actual) >= value)
        if keyword in ("maxLength", "maxItems"):
            return bool(len(actual) <= value)
        if keyword == "startswith":
            return isinstance(actual, str) and actual.startswith(value)
        if keyword == "endswith":
            return isinstance(actual, str) and actual.endswith(value)
        if isinstance(actual, bool) or not isinstance(actual, (int, float)) \
                or not math.isfinite(actual):
            return False
        return bool({"minimum": actual >= value, "maximum": actual <= value,
                     "exclusiveMinimum": actual > value,
                     "exclusiveMaximum": actual < value}[keyword])
    except Exception:
        return False


def schema_keyword(sym: Sym, raw: str) -> str | None:
    """The JSON Schema keyword of a guessed atom on a field of this type."""
    if raw in ("length_min", "length_max"):
        if isinstance(sym, SStr):
            return "minLength" if raw == "length_min" else "maxLength"
        if isinstance(sym, SList) and sym.container == "list":
            return "minItems" if raw == "length_min" else "maxItems"
        return None
    return raw
