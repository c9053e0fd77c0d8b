"""Shrink a case that shows a contradiction: drop predicates, replace a predicate's
expression by one of its sub-expressions, drop fields no predicate reads; keep a
change when the same kind of contradiction is still found."""

from __future__ import annotations

import ast
import copy
import re
import time
from collections.abc import Callable, Iterator

from .cases import Case
from .oracle import CaseResult, Contradiction

__all__ = ["minimize", "smaller_bodies"]


def smaller_bodies(body: str) -> Iterator[str]:
    """``body`` with one node replaced by one of its child expressions (each way)."""
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError:
        return
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr)]
    seen = {body}
    for index, node in enumerate(nodes):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        if isinstance(node, ast.Compare) and len(node.ops) > 1:  # a chain: one link
            for k in range(len(node.ops)):
                left = node.left if k == 0 else node.comparators[k - 1]
                children.append(ast.Compare(left, [node.ops[k]], [node.comparators[k]]))
        for child in children:
            copied = copy.deepcopy(tree)
            target = [n for n in ast.walk(copied) if isinstance(n, ast.expr)][index]
            replacement = copy.deepcopy(child)
            if not _replace(copied, target, replacement):
                continue
            try:
                text = ast.unparse(copied)
                ast.parse(text, mode="eval")  # a format spec moved out of its f-string
            except (SyntaxError, ValueError):
                continue
            if text not in seen:
                seen.add(text)
                yield text


def _replace(tree: ast.AST, target: ast.AST, replacement: ast.AST) -> bool:
    if isinstance(tree, ast.Expression) and tree.body is target:
        tree.body = replacement  # type: ignore[assignment]
        return True
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, name, replacement)
                return True
            if isinstance(value, list) and any(v is target for v in value):
                setattr(parent, name, [replacement if v is target else v for v in value])
                return True
    return False


def _variants(case: Case) -> Iterator[Case]:
    for k in range(len(case.pres)):
        yield case.without_pre(k)
    for k in range(len(case.posts)):
        yield case.without_post(k)
    if case.method is not None:
        yield case.with_method(None)
        for k in range(len(case.method) - 1):  # drop a statement (an if with its body)
            if case.method[k].startswith("    "):
                continue
            width = 2 if case.method[k].startswith("if ") else 1
            yield case.with_method(case.method[:k] + case.method[k + width:])
    if case.stage2 is not None:
        yield case.with_stage2(None)
        for k in range(len(case.stage2)):
            yield case.with_stage2([b for j, b in enumerate(case.stage2) if j != k])
        for k, body in enumerate(case.stage2):
            for smaller in smaller_bodies(body):
                yield case.with_stage2([smaller if j == k else b
                                        for j, b in enumerate(case.stage2)])
    bodies = " ".join([*case.pres, *case.posts, *(case.stage2 or ()), *(case.method or ())])
    for role, model in (("o", case.out), ("i", case.inp)):
        for name, _t in model.fields:
            if not re.search(rf"\b{role}\.{name}\b", bodies):
                yield case.without_field(role, name)
    for k, body in enumerate(case.pres):
        for smaller in smaller_bodies(body):
            yield case.with_pre(k, smaller)
    for k, body in enumerate(case.posts):
        for smaller in smaller_bodies(body):
            yield case.with_post(k, smaller)


def minimize(case: Case, found: Contradiction, run: Callable[[Case], CaseResult],
             seconds: float = 60.0) -> tuple[Case, CaseResult]:
    """The smallest case reached within ``seconds`` still showing ``found.kind``."""
    deadline = time.monotonic() + seconds
    best = case
    best_result = run(case)
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for variant in _variants(best):
            if time.monotonic() > deadline:
                break
            try:
                result = run(variant)
            except Exception:
                continue
            if any(c.kind == found.kind for c in result.contradictions):
                best, best_result, progress = variant, result, True
                break
    if not any(c.kind == found.kind for c in best_result.contradictions):
        return case, run(case)
    return best, best_result
