"""The one place that finds a predicate's source: its ``def`` or ``lambda`` node.

Used when a contract is defined (the text a condition shows: ``source_expression``,
``raise_literals``) and by the verifier (the code it translates), so both always
read the same node. The whole module is parsed (once per file), then the node is matched by the
code object's first line, its arguments and, when several lambdas share a line
(``[Pre(lambda x: ..., "a"), Pre(lambda x: ..., "b")]``), by the columns of its
bytecode (``co_positions``). The predicate is never called on symbolic values.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import types
from collections.abc import Callable

from hoare.unmodelled import SourceNotFound

__all__ = ["FunctionNode", "SourceNotFound", "class_line", "function_node", "module_file",
           "raise_literals", "source_expression"]

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_Index = dict[int, list[FunctionNode]]  # function nodes by first line


@functools.lru_cache(maxsize=256)
def _module_index(filename: str, stamp: int) -> tuple[_Index, dict[str, list[int]]] | None:
    """The module's function nodes by first line, and its classes' lines by name
    (parsed and walked once per file)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError, RecursionError):  # ValueError: a NUL byte
        return None
    index: _Index = {}
    classes: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            index.setdefault(node.lineno, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            index.setdefault(_first_line(node), []).append(node)
        elif isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, []).append(node.lineno)
    return index, classes


def _module_tree(filename: str, stamp: int) -> _Index | None:
    found = _module_index(filename, stamp)
    return None if found is None else found[0]


def _class_lines(filename: str, stamp: int) -> dict[str, list[int]]:
    found = _module_index(filename, stamp)
    return {} if found is None else found[1]


def module_file(module: object) -> str | None:
    """A module's ``__file__`` when it is a non-empty ``str`` with no NUL (no path has
    one), else None: a module may rebind its own ``__file__`` to anything (or a foreign
    object's attribute may raise), and it is used as a path."""
    try:
        filename = getattr(module, "__file__", None)
    except Exception:
        return None
    return filename if type(filename) is str and filename and "\x00" not in filename \
        else None


def class_line(cls: type) -> int | None:
    """The line of ``class <name>`` in its module's file (the first, if the name is
    defined twice), or None when the source cannot be read."""
    line = getattr(cls, "__firstlineno__", None)  # Python 3.13+
    if isinstance(line, int):
        return line
    filename = module_file(inspect.getmodule(cls))
    if filename is None:
        return None
    lines = linecache.getlines(filename)
    if not lines:
        return None
    found = _class_lines(filename, hash("".join(lines))).get(cls.__name__)
    return min(found) if found else None


def _code(fn: Callable[..., object]) -> types.CodeType:
    """``fn``'s code object (behind ``functools.wraps``); a foreign callable, whose
    ``__wrapped__``/``__code__`` may raise anything, has none to read."""
    try:
        code = getattr(inspect.unwrap(fn), "__code__", None)
    except Exception as error:
        raise SourceNotFound(f"a {type(fn).__name__} whose code cannot be read "
                             f"({type(error).__name__})") from None
    if not isinstance(code, types.CodeType):
        raise SourceNotFound(f"a {type(fn).__name__} is not a Python function")
    return code


def _globals(fn: Callable[..., object]) -> dict[str, object] | None:
    """``fn.__globals__`` when it is a dict (linecache's module globals), else None."""
    try:
        found = getattr(fn, "__globals__", None)
    except Exception:  # a foreign callable's attribute
        return None
    return found if type(found) is dict else None


def _arg_names(node: FunctionNode) -> list[str]:
    args = node.args
    return [a.arg for a in (*args.posonlyargs, *args.args)]


def _first_line(node: FunctionNode) -> int:
    if isinstance(node, ast.Lambda):
        return node.lineno
    lines = [node.lineno, *(d.lineno for d in node.decorator_list)]
    return min(lines)


def _positions(code: types.CodeType) -> list[tuple[int, int]]:
    """(line, column) of the code's instructions that carry a position."""
    out = []
    for line, end_line, col, end_col in code.co_positions():
        if line is None or col is None or end_line is None or end_col is None:
            continue
        if (end_line, end_col) > (line, col):  # RESUME & co. carry an empty span
            out.append((line, col))
    return out


def _contains(node: FunctionNode, line: int, col: int) -> bool:
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return start <= (line, col) < end


def function_node(fn: Callable[..., object]) -> FunctionNode:
    """The ``def`` or ``lambda`` node of ``fn``; raises ``SourceNotFound``."""
    code = _code(fn)
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, _globals(fn))
    if not lines:
        raise SourceNotFound(f"no source for {code.co_name} ({filename})")
    index = _module_tree(filename, hash("".join(lines)))
    if index is None:
        raise SourceNotFound(f"the source of {filename} does not parse")
    names = list(code.co_varnames[:code.co_argcount])
    if code.co_name == "<lambda>":
        candidates: list[FunctionNode] = [
            n for n in index.get(code.co_firstlineno, ())
            if isinstance(n, ast.Lambda) and _arg_names(n) == names]
        if len(candidates) > 1:
            positions = _positions(code)
            candidates = [n for n in candidates
                          if positions and all(_contains(n, line, col)
                                               for line, col in positions)]
    else:
        candidates = [
            n for n in index.get(code.co_firstlineno, ())
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == code.co_name]
    if len(candidates) != 1:
        raise SourceNotFound(
            f"cannot locate the source of {code.co_name} at {filename}:{code.co_firstlineno}"
            f" ({len(candidates)} candidates)")
    return candidates[0]


def source_expression(fn: Callable[..., object]) -> str | None:
    """The boolean expression a condition computes, as written, when it has one:
    a lambda's body, or the operand of a function whose body is one ``return``."""
    try:
        node = function_node(fn)
    except SourceNotFound:
        return None
    if isinstance(node, ast.Lambda):
        return ast.unparse(node.body)
    body = [s for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return ast.unparse(body[0].value)
    return None


def raise_literals(fn: Callable[..., object]) -> frozenset[str]:
    """The literal texts of ``raise X("...")`` statements in ``fn``'s source: messages
    the author wrote, which ``feedback="messages"`` may show the model."""
    try:
        node = function_node(fn)
    except SourceNotFound:
        return frozenset()
    texts = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call) and sub.exc.args:
            first = sub.exc.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                texts.add(first.value)
    return frozenset(texts)
