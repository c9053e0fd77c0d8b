"""Small helpers over z3 expressions, shared by the verifier's modules.

* ``constant_names``: the names of the uninterpreted constants of an expression
  (memoised on AST ids, walked with z3's C API: the Python wrappers cost ~10x more);
* ``named_constants``: the same constants as expressions, by name;
* ``is_true``/``is_false``: whether an expression is the literal true/false, in one
  call to z3 (``z3.is_true`` builds two Python wrappers per call, on a hot path);
* ``group_by_constants``: split items (assertions) into groups sharing no
  constant, by union-find. Independent groups are solved apart: z3's string
  solver degrades when unrelated string constraints share one query.

Neither walk enters regular expressions: the translator builds them from
literal patterns, so they hold no constant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import z3
from z3 import z3core as _C

__all__ = ["constant_names", "group_by_constants", "is_false", "is_true", "named_constants"]

T = TypeVar("T")

_EMPTY: frozenset[str] = frozenset()


def is_true(expr: object) -> bool:
    """``z3.is_true``: ``expr`` is the expression ``True``."""
    return isinstance(expr, z3.ExprRef) and \
        _C.Z3_get_bool_value(expr.ctx_ref(), expr.as_ast()) == z3.Z3_L_TRUE


def is_false(expr: object) -> bool:
    """``z3.is_false``: ``expr`` is the expression ``False``."""
    return isinstance(expr, z3.ExprRef) and \
        _C.Z3_get_bool_value(expr.ctx_ref(), expr.as_ast()) == z3.Z3_L_FALSE


def constant_names(expr: z3.ExprRef, memo: dict[int, frozenset[str]] | None = None
                   ) -> frozenset[str]:
    """Names of the uninterpreted constants in ``expr``. ``memo`` maps AST ids to
    results; ids are only unique while the ASTs live, so whoever shares a memo
    across expressions must keep them alive."""
    memo = memo if memo is not None else {}
    ctx = expr.ctx_ref()
    root = expr.as_ast()
    root_id = _C.Z3_get_ast_id(ctx, root)
    if root_id in memo:
        return memo[root_id]
    stack: list[tuple[Any, int, bool]] = [(root, root_id, False)]
    while stack:
        ast, key, expanded = stack.pop()
        if key in memo:
            continue
        if _C.Z3_get_ast_kind(ctx, ast) != z3.Z3_APP_AST:
            memo[key] = _EMPTY  # numerals are apps; quantifiers/vars do not occur here
            continue
        app = _C.Z3_to_app(ctx, ast)
        count = _C.Z3_get_app_num_args(ctx, app)
        if count == 0:
            decl = _C.Z3_get_app_decl(ctx, app)
            if _C.Z3_get_decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
                name = _C.Z3_get_symbol_string(ctx, _C.Z3_get_decl_name(ctx, decl))
                memo[key] = frozenset((name,))
            else:
                memo[key] = _EMPTY
            continue
        if _C.Z3_get_sort_kind(ctx, _C.Z3_get_sort(ctx, ast)) == z3.Z3_RE_SORT:
            memo[key] = _EMPTY
            continue
        children = [_C.Z3_get_app_arg(ctx, app, i) for i in range(count)]
        ids = [_C.Z3_get_ast_id(ctx, child) for child in children]
        if expanded:
            names: set[str] = set()
            for child_id in ids:
                names |= memo[child_id]
            memo[key] = frozenset(names) if names else _EMPTY
            continue
        stack.append((ast, key, True))
        stack.extend((child, child_id, False)
                     for child, child_id in zip(children, ids, strict=True)
                     if child_id not in memo)
    return memo[root_id]


def named_constants(expr: z3.ExprRef) -> dict[str, z3.ExprRef]:
    """The uninterpreted constants of ``expr``, by name (to evaluate them in a
    model or substitute values for them)."""
    out: dict[str, z3.ExprRef] = {}
    ctx = expr.ctx_ref()
    stack: list[Any] = [expr.as_ast()]
    seen: set[int] = set()
    while stack:
        ast = stack.pop()
        key = _C.Z3_get_ast_id(ctx, ast)
        if key in seen:
            continue
        seen.add(key)
        kind = _C.Z3_get_ast_kind(ctx, ast)
        if kind == z3.Z3_QUANTIFIER_AST:
            stack.append(_C.Z3_get_quantifier_body(ctx, ast))
            continue
        if kind != z3.Z3_APP_AST or \
                _C.Z3_get_sort_kind(ctx, _C.Z3_get_sort(ctx, ast)) == z3.Z3_RE_SORT:
            continue
        app = _C.Z3_to_app(ctx, ast)
        count = _C.Z3_get_app_num_args(ctx, app)
        if count == 0:
            decl = _C.Z3_get_app_decl(ctx, app)
            if _C.Z3_get_decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
                name = _C.Z3_get_symbol_string(ctx, _C.Z3_get_decl_name(ctx, decl))
                out[name] = z3.z3._to_expr_ref(ast, expr.ctx)
            continue
        stack.extend(_C.Z3_get_app_arg(ctx, app, i) for i in range(count))
    return out


def group_by_constants(items: Sequence[T], names_of: Callable[[T], frozenset[str]]
                       ) -> list[tuple[list[T], frozenset[str]]]:
    """Split ``items`` into groups that share no constant (``names_of`` gives an
    item's constant names), each with the union of its names. Groups come in the
    order of their first item, items in their given order; the items without any
    constant form one last group (with no names)."""
    names = [names_of(item) for item in items]
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    for group in names:
        first = None
        for name in group:
            root = find(name)
            if first is None:
                first = root
            elif root != first:
                parent[root] = first
    buckets: dict[str, tuple[list[T], set[str]]] = {}
    constant_free: list[T] = []
    for item, group in zip(items, names, strict=True):
        if not group:
            constant_free.append(item)
            continue
        bucket = buckets.setdefault(find(next(iter(group))), ([], set()))
        bucket[0].append(item)
        bucket[1].update(group)
    out = [(grouped, frozenset(group)) for grouped, group in buckets.values()]
    if constant_free:
        out.append((constant_free, _EMPTY))
    return out
