"""Which user validators only *narrow* a domain (reject values, never change them)?

An after-validator that returns its argument unchanged on every path, and
mutates nothing, removes values from a field's domain and adds none: ignoring
it over-approximates the domain, which keeps every refutation sound. Anything
else (a validator that may return another value, mutate, call unknown code, or
whose source cannot be read) may change the values: the field or model is then
opaque. The analysis is syntactic and conservative: it answers ``None`` (only
narrows) or the reason it cannot tell.

It sits with the declaration, not in the verifier, because two places ask it the same
question: the verifier's domain (``verifier/translate/types.py``) and the contract
boundary, which runs a field's after validator again on an input exactly when it
only narrows (``declaration/revalidation.py``), without loading the verifier or z3.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable

from hoare.declaration.source import SourceNotFound, function_node

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


def only_narrows(fn: Callable[..., object], value_index: int, *, immutable: bool = False,
                  immutable_attrs: frozenset[str] = frozenset()) -> str | None:
    """``None`` when ``fn`` returns its parameter number ``value_index`` unchanged on
    every path and mutates nothing; otherwise why that is not known.

    Reading methods (``strip``, ``get``…) are allowed on values known to be of
    built-in immutable types: the parameter when ``immutable``, its attributes
    named in ``immutable_attrs`` (a model's ``str``/``int``… fields), literals,
    results of built-in conversions, the ``data`` of a validation-info parameter
    and module-level names (a user method called ``get`` could mutate the value)."""
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
    shadowed = _PURE_NAMES & (set(getattr(target, "__globals__", {})) |
                              set(target.__code__.co_freevars) | set(params) |
                              _locals(node, params))
    if shadowed:
        return f"its {sorted(shadowed)[0]} may not be the builtin"
    scope = _Scope(name, immutable, immutable_attrs, set(params) - {name},
                   _locals(node, params))
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
        problem = _statement(stmt, scope)
        if problem:
            return problem
    return None


class _Scope:
    def __init__(self, name: str, immutable: bool, attrs: frozenset[str],
                 others: set[str], local: set[str]) -> None:
        self.name, self.immutable, self.attrs = name, immutable, attrs
        self.others, self.local = others, local

    def readable(self, receiver: ast.expr) -> bool:
        """May a reading method be called on ``receiver`` without running user code
        that could change the value?"""
        if isinstance(receiver, ast.Constant):
            return True
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and \
                receiver.func.id in _CONVERSIONS:
            return True
        if isinstance(receiver, ast.Name):
            if receiver.id == self.name:
                return self.immutable
            return receiver.id not in self.local and receiver.id not in self.others
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name):
            owner = receiver.value.id
            if owner == self.name:
                return receiver.attr in self.attrs
            if owner in self.others:
                return receiver.attr == "data"  # ValidationInfo.data: a plain dict
        return False


_CONVERSIONS = frozenset({"str", "int", "float", "list", "tuple", "set", "frozenset",
                          "sorted", "repr"})


def _locals(node: ast.AST, params: list[str]) -> set[str]:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)}
    return names - set(params)


def _ends(body: list[ast.stmt]) -> bool:
    """Every path through ``body`` ends in ``return`` or ``raise``."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return bool(last.orelse) and _ends(last.body) and _ends(last.orelse)
    return False


def _statement(stmt: ast.AST, scope: _Scope) -> str | None:
    name = scope.name
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
            if isinstance(func, ast.Attribute) and func.attr in _PURE_METHODS and \
                    scope.readable(func.value):
                continue
            if isinstance(func, ast.Attribute) and _error_class(func):
                continue
            return f"it calls {ast.unparse(func)}"
    return None
