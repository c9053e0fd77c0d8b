"""Which user validators only *narrow* a domain (reject values, never change them)?

An after-validator that returns its argument unchanged on every path, and
mutates nothing, removes values from a field's domain and adds none: ignoring
it over-approximates the domain, which keeps every refutation sound. Anything
else (a validator that may return another value, mutate, call unknown code, or
whose source cannot be read) may change the values: the field or model is then
opaque. The analysis is syntactic and conservative: it answers ``None`` (only
narrows) or the reason it cannot tell.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable

from .source import SourceNotFound, function_node

__all__ = ["only_narrows"]

# Calls allowed in a narrowing validator: builtins and methods that read, never write.
_PURE_NAMES = frozenset({
    "len", "isinstance", "any", "all", "sum", "min", "max", "abs", "str", "int", "float",
    "bool", "round", "sorted", "set", "frozenset", "list", "tuple", "repr", "ord", "chr",
    "range", "enumerate", "zip", "type", "hasattr",
})
_PURE_METHODS = frozenset({
    "strip", "lstrip", "rstrip", "lower", "upper", "casefold", "title", "startswith",
    "endswith", "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace",
    "islower", "isupper", "isascii", "split", "rsplit", "splitlines", "count", "index",
    "find", "rfind", "replace", "join", "format", "get", "keys", "values", "items",
    "is_integer", "encode", "partition", "rpartition", "fullmatch", "match", "search",
})
_FORBIDDEN_NAMES = frozenset({"setattr", "delattr", "vars", "object", "exec", "eval",
                              "globals", "locals", "__dict__", "super"})


def _error_class(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith(("Error", "Exception", "Warning"))


def only_narrows(fn: Callable[..., object], value_index: int) -> str | None:
    """``None`` when ``fn`` returns its parameter number ``value_index`` unchanged on
    every path and mutates nothing; otherwise why that is not known."""
    if getattr(fn, "__self__", None) is not None:  # a bound (class) method
        value_index += 1
    target = getattr(fn, "__func__", fn)
    target = inspect.unwrap(target) if callable(target) else target
    if not callable(target) or not hasattr(target, "__code__"):
        return f"{fn!r:.40} is not a Python function"
    try:
        node = function_node(target)
    except (SourceNotFound, OSError, TypeError) as error:
        return f"its source is not available ({error})"
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if value_index >= len(params):
        return "it takes no value parameter"
    name = params[value_index]
    if isinstance(node, ast.Lambda):
        body: list[ast.stmt] = [ast.Return(node.body)]
    else:
        body = node.body
        for decorator in node.decorator_list:
            dname = decorator.id if isinstance(decorator, ast.Name) else \
                decorator.func.id if isinstance(decorator, ast.Call) and isinstance(
                    decorator.func, ast.Name) else getattr(decorator, "attr", "")
            if dname not in ("classmethod", "staticmethod", "field_validator",
                             "model_validator"):
                return f"it is decorated with {ast.unparse(decorator)}"
    if not body or not _ends(body):
        return "it may end without returning its argument"
    for stmt in body:
        problem = _statement(stmt, name)
        if problem:
            return problem
    return None


def _ends(body: list[ast.stmt]) -> bool:
    """Every path through ``body`` ends in ``return`` or ``raise``."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return bool(last.orelse) and _ends(last.body) and _ends(last.orelse)
    return False


def _statement(stmt: ast.AST, name: str) -> str | None:
    for node in ast.walk(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            return "it defines a nested function or class"
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global,
                             ast.Nonlocal, ast.Delete, ast.With, ast.AsyncWith, ast.Try,
                             ast.NamedExpr, ast.AugAssign, ast.AnnAssign, ast.Import,
                             ast.ImportFrom)):
            return f"it uses {type(node).__name__}"
        if isinstance(node, ast.Return):
            if not (isinstance(node.value, ast.Name) and node.value.id == name):
                shown = ast.unparse(node.value) if node.value is not None else "None"
                return f"it returns {shown}, not its argument"
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Name) or target.id == name:
                    return f"it assigns {ast.unparse(target)}"
        if isinstance(node, (ast.For, ast.comprehension)):
            targets = [n for n in ast.walk(node.target)]
            if any(not isinstance(t, (ast.Name, ast.Tuple, ast.Store)) or (
                    isinstance(t, ast.Name) and t.id == name) for t in targets):
                return "it rebinds its argument in a loop"
        if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
            return f"it uses {node.id}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return f"it uses {node.attr}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and (func.id in _PURE_NAMES or _error_class(func)):
                continue
            if isinstance(func, ast.Attribute) and func.attr in _PURE_METHODS:
                continue
            if isinstance(func, ast.Attribute) and _error_class(func):
                continue
            return f"it calls {ast.unparse(func)}"
    return None
