"""Per-input pre-flight without z3: eliminate the output once, evaluate in Python.

For a post-condition that reads the input, the question at run time is
``Φ(u) = ∃ output. type(output) ∧ post(output, u)`` for the concrete input ``u``.
When that component is linear arithmetic (ints, reals, booleans), z3's ``qe``
tactic turns ``Φ`` into a quantifier-free formula over the input's constants
*once per class*; a call then only evaluates that formula on the input's values
in pure Python (microseconds). z3's integer ``div``/``mod`` are Euclidean; the
evaluator follows z3's semantics, not Python's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import z3
from z3 import z3core as _C

from hoare.unmodelled import Unsupported
from hoare.verifier.solve.z3util import is_false, is_true, named_constants

__all__ = ["Compiled", "compile_formula", "eliminate", "rounds_to_int"]

Compiled = Callable[[dict[str, Any]], Any]


def eliminate(formula: z3.BoolRef, keep: set[str], timeout_ms: int = 2_000
              ) -> z3.BoolRef | None:
    """``∃ (constants not in keep). formula`` without quantifiers, or None (not
    linear arithmetic, or the tactic failed). A formula that rounds reals to integers
    is not tried: ``qe`` would only run to its timeout (``rounds_to_int``), for every
    caller (the pre-flight, ``post_total``)."""
    if rounds_to_int(formula):
        return None
    found = named_constants(formula)
    for const in found.values():
        if not (z3.is_int(const) or z3.is_real(const) or z3.is_bool(const)):
            return None
    bound = [c for name, c in found.items() if name not in keep]
    if not bound:
        return formula
    goal = z3.Goal()
    goal.add(z3.Exists(bound, formula))
    tactic = z3.TryFor(z3.Then(z3.Tactic("qe"), z3.Tactic("simplify")), timeout_ms)
    try:
        result = tactic(goal)
    except z3.Z3Exception:
        return None
    if len(result) != 1:
        return None
    subgoal = result[0]
    out = z3.And(*subgoal) if len(subgoal) != 1 else subgoal[0]
    if len(subgoal) == 0:
        out = z3.BoolVal(True)
    if _has_quantifier(out):
        return None
    return out


_ROUNDING = frozenset({z3.Z3_OP_TO_INT, z3.Z3_OP_IS_INT})


def rounds_to_int(formula: z3.ExprRef) -> bool:
    """Does ``formula`` round reals to integers (``to_int``, ``is_int``)? The float
    translation does (a double's rounding, float ``//`` and ``%``, ``int()``), and
    ``qe`` does not eliminate such a mixed integer/real formula: it runs until its
    timeout (0.1 to 0.3 s of CPU, and the whole timeout of wall time on a loaded
    machine), even for ``o.a + 1.0 <= i.x`` or ``o.a <= i.x // 1.0``. Walked with
    z3's C API, as ``z3util`` walks (the Python wrappers cost several times more, on
    every ``post_total`` check and pre-flight compile)."""
    return _finds(formula, lambda ctx, ast, kind: kind == z3.Z3_APP_AST and _C.Z3_get_decl_kind(
        ctx, _C.Z3_get_app_decl(ctx, _C.Z3_to_app(ctx, ast))) in _ROUNDING)


def _has_quantifier(expr: z3.ExprRef) -> bool:
    return _finds(expr, lambda _ctx, _ast, kind: kind == z3.Z3_QUANTIFIER_AST)


def _finds(expr: z3.ExprRef, found: Callable[[Any, Any, int], bool]) -> bool:
    """Whether ``found(ctx, ast, kind)`` holds at a node of ``expr`` reached through
    applications' arguments (a quantifier's body is not entered: neither caller needs
    it), each shared node visited once."""
    ctx = expr.ctx_ref()
    stack = [expr.as_ast()]
    seen: set[int] = set()
    while stack:
        ast = stack.pop()
        key = _C.Z3_get_ast_id(ctx, ast)
        if key in seen:
            continue
        seen.add(key)
        kind = _C.Z3_get_ast_kind(ctx, ast)
        if found(ctx, ast, kind):
            return True
        if kind == z3.Z3_APP_AST:
            app = _C.Z3_to_app(ctx, ast)
            stack.extend(_C.Z3_get_app_arg(ctx, app, i)
                         for i in range(_C.Z3_get_app_num_args(ctx, app)))
    return False


def _zdiv(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    r = a % abs(b)
    return (a - r) // b


def _zmod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    return a % abs(b)


def _floor(x: Fraction | int) -> int:
    return int(Fraction(x).__floor__())


_NARY: dict[int, Callable[[Iterable[Any]], Any]] = {
    z3.Z3_OP_AND: all, z3.Z3_OP_OR: any,
    z3.Z3_OP_ADD: sum, z3.Z3_OP_MUL: lambda xs: _product(xs),
}
_BINARY: dict[int, Callable[[Any, Any], Any]] = {
    z3.Z3_OP_LE: lambda a, b: a <= b, z3.Z3_OP_LT: lambda a, b: a < b,
    z3.Z3_OP_GE: lambda a, b: a >= b, z3.Z3_OP_GT: lambda a, b: a > b,
    z3.Z3_OP_EQ: lambda a, b: a == b, z3.Z3_OP_IMPLIES: lambda a, b: (not a) or b,
    z3.Z3_OP_IDIV: _zdiv, z3.Z3_OP_MOD: _zmod, z3.Z3_OP_XOR: lambda a, b: a != b,
    z3.Z3_OP_DIV: lambda a, b: Fraction(a) / Fraction(b),
}


def _product(xs: Iterable[Any]) -> Any:
    result: Any = 1
    for x in xs:
        result = result * x
    return result



def compile_formula(expr: z3.ExprRef) -> Compiled | None:
    """A Python function of ``{constant name: value}`` computing ``expr`` (None when
    an operator is not supported)."""
    memo: dict[int, Compiled] = {}
    try:
        return _compile(expr, memo)
    except (Unsupported, RecursionError, z3.Z3Exception):
        return None


def _compile(expr: z3.ExprRef, memo: dict[int, Compiled]) -> Compiled:
    key = expr.get_id()
    if key in memo:
        return memo[key]
    result = _compile_node(expr, memo)
    memo[key] = result
    return result


def _compile_node(expr: z3.ExprRef, memo: dict[int, Compiled]) -> Compiled:
    if is_true(expr):
        return lambda env: True
    if is_false(expr):
        return lambda env: False
    if z3.is_int_value(expr):
        value_i = expr.as_long()
        return lambda env: value_i
    if z3.is_rational_value(expr):
        value_q = Fraction(expr.numerator_as_long(),
                           expr.denominator_as_long())
        return lambda env: value_q
    if z3.is_const(expr) and expr.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        name = expr.decl().name()
        default: Any = False if z3.is_bool(expr) else 0
        # A constant the input does not assign (a list slot past its length, the value
        # of a None optional) only occurs under a guard that makes it irrelevant.
        return lambda env: env.get(name, default)
    kind = expr.decl().kind()
    children = [_compile(c, memo) for c in expr.children()]
    if kind in _NARY:
        combine = _NARY[kind]
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            return lambda env: combine(c(env) for c in children)
        return lambda env: combine([c(env) for c in children])
    if kind == z3.Z3_OP_NOT:
        (inner,) = children
        return lambda env: not inner(env)
    if kind == z3.Z3_OP_ITE:
        cond, then, other = children
        return lambda env: then(env) if cond(env) else other(env)
    if kind == z3.Z3_OP_UMINUS:
        (inner,) = children
        return lambda env: -inner(env)
    if kind == z3.Z3_OP_SUB:
        first, *rest = children
        return lambda env: first(env) - sum(c(env) for c in rest)
    if kind == z3.Z3_OP_DISTINCT:
        return lambda env: len({c(env) for c in children}) == len(children)
    if kind == z3.Z3_OP_TO_REAL:
        (inner,) = children
        return lambda env: Fraction(inner(env))
    if kind == z3.Z3_OP_TO_INT:
        (inner,) = children
        return lambda env: _floor(inner(env))
    if kind == z3.Z3_OP_IS_INT:
        (inner,) = children
        return lambda env: Fraction(inner(env)).denominator == 1
    if kind in _BINARY and len(children) == 2:
        op = _BINARY[kind]
        left, right = children
        return lambda env: op(left(env), right(env))
    raise Unsupported(str(expr.decl()))
