"""Declarative pre- and post-conditions: ``Pre(fn, message, family=...)``, ``Post(...)``.

``fn`` takes the value (``Post`` may also take the input actually used, as a
second parameter). It fails by returning a falsy value (``None`` excepted) or by
raising; the violation message is then the exception's text or ``message``.
Without a message, the condition's own source expression is used, so a
corrective prompt never says nothing.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from .kernel import Policy

__all__ = ["Condition", "Post", "Pre", "is_asynchronous", "positional_arity", "raise_literals",
           "required_parameters", "source_expression"]


@dataclass(frozen=True)
class Condition:
    """Common shape of ``Pre`` and ``Post``."""

    fn: Callable[..., object]
    message: str | None = None
    family: str | None = None
    policy: Policy | str | None = None
    id: str | None = None
    _policy: Policy | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"{type(self).__name__} needs a callable, got {self.fn!r}")
        if self.message is not None and not isinstance(self.message, str):
            raise TypeError(f"{type(self).__name__} message must be a string, "
                            f"got {self.message!r}")
        parsed = None if self.policy is None else Policy.parse(self.policy)
        object.__setattr__(self, "_policy", parsed)

    @property
    def effective_policy(self) -> Policy | None:
        """The per-predicate policy override, if any (spec §2.2)."""
        return self._policy

    def describe(self) -> str:
        """The message, or the source expression, or the function's name."""
        return self.message or source_expression(self.fn) or str(
            getattr(self.fn, "__qualname__", None) or repr(self.fn))


class Pre(Condition):
    """A pre-condition: ``fn(input)``."""


class Post(Condition):
    """A post-condition: ``fn(output)`` or ``fn(output, input)``."""


def positional_arity(fn: Callable[..., object]) -> int:
    """How many positional arguments ``fn`` accepts (a ``*args`` counts as many)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    count = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return 1 << 16
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def required_parameters(fn: Callable[..., object]) -> tuple[int, list[str]]:
    """How many positional arguments ``fn`` requires (no default), and the names of its
    keyword-only parameters without a default (which a predicate never receives)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0, []
    positional, keywords = 0, []
    for parameter in signature.parameters.values():
        if parameter.default is not inspect.Parameter.empty:
            continue
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
        elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            keywords.append(parameter.name)
    return positional, keywords


def is_asynchronous(fn: object) -> bool:
    """An ``async def`` function (also behind ``functools.partial`` or as a callable
    object's ``__call__``): calling it returns a coroutine, never a verdict."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    call = inspect.getattr_static(type(fn), "__call__", None)
    return inspect.iscoroutinefunction(call)


def raise_literals(fn: Callable[..., object]) -> frozenset[str]:
    """The literal texts of ``raise X("...")`` statements in ``fn``'s source: messages
    the author wrote, which ``feedback="messages"`` may show the model."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    texts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            first = node.exc.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                texts.add(first.value)
    return frozenset(texts)


def source_expression(fn: Callable[..., object]) -> str | None:
    """The boolean expression a condition computes, as written, when it has one:
    a lambda's body, or the operand of a function whose body is one ``return``."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    node = _find_function(source, getattr(fn, "__name__", ""),
                          getattr(getattr(fn, "__code__", None), "co_firstlineno", 0),
                          _first_line(fn))
    if isinstance(node, ast.Lambda):
        return ast.unparse(node.body)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = [s for s in node.body if not (isinstance(s, ast.Expr)
                                            and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            return ast.unparse(body[0].value)
    return None


def _first_line(fn: Callable[..., object]) -> int:
    try:
        return inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        return 0


def _find_function(source: str, name: str, code_line: int, first_line: int) -> ast.AST | None:
    """The lambda or def that ``source`` (from ``inspect.getsource``) defines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        # getsource returns whole lines: a lambda inside a larger expression may not parse
        # alone; try wrapping it as an expression.
        try:
            tree = ast.parse("(" + source.strip().rstrip(",") + ")")
        except SyntaxError:
            return None
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    if name == "<lambda>":
        if len(lambdas) == 1:
            return lambdas[0]
        offset = code_line - first_line + 1 if code_line and first_line else None
        on_line = [n for n in lambdas if offset is None or n.lineno == offset]
        return on_line[0] if len(on_line) == 1 else None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None
