"""Declarative pre- and post-conditions: ``Pre(fn, message, family=...)``, ``Post(...)``.

``fn`` takes the value (``Post`` may also take the input actually used, as a
second parameter). It fails by returning a falsy value (``None`` excepted) or by
raising; the violation message is then the exception's text or ``message``.
Without a message, the condition's own source expression is used, so a
corrective prompt never says nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from hoare.declaration.source import (  # re-exported for description.py
    raise_literals,
    source_expression,
)
from hoare.errors import shown
from hoare.kernel import Policy

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
        kind = type(self).__name__
        if not callable(self.fn):
            raise TypeError(f"{kind} needs a callable, got {shown(self.fn)}")
        for name in ("message", "family", "id"):
            given = getattr(self, name)
            if given is not None and not issubclass(type(given), str):  # not __class__
                raise TypeError(f"{kind} {name} must be a string, got {shown(given)}")
            if given is not None and type(given) is not str:  # a str subclass's dunders
                object.__setattr__(self, name, str.__str__(given))  # are foreign code
        policy = self.policy
        if policy is not None and not issubclass(type(policy), Policy | str):
            raise TypeError(f"{kind} policy must be a Policy or its name, got {shown(policy)}")
        if issubclass(type(policy), str) and not issubclass(type(policy), Policy):
            policy = str.__str__(cast("str", policy))  # a str subclass's __eq__/__hash__
        parsed = None if policy is None else Policy.parse(policy)
        object.__setattr__(self, "_policy", parsed)

    @property
    def effective_policy(self) -> Policy | None:
        """The per-predicate policy override, if any (spec §2.2)."""
        return self._policy

    def describe(self) -> str:
        """The message, or the source expression, or the function's name."""
        if self.message:
            return self.message
        found = source_expression(self.fn)
        if found:
            return found
        try:
            name = getattr(self.fn, "__qualname__", None)
        except Exception:  # a foreign callable's attribute
            name = None
        return name if type(name) is str and name else shown(self.fn)


class Pre(Condition):
    """A pre-condition: ``fn(input)``."""


class Post(Condition):
    """A post-condition: ``fn(output)`` or ``fn(output, input)``."""


def positional_arity(fn: Callable[..., object]) -> int:
    """How many positional arguments ``fn`` accepts (a ``*args`` counts as many)."""
    try:
        signature = inspect.signature(fn)
    except Exception:  # no signature (TypeError, ValueError), or a foreign callable's
        return 1       # attribute raised: taken as one value, as a builtin would be
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
    except Exception:  # as positional_arity: nothing known to be required
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
    object's ``__call__``): calling it returns a coroutine, never a verdict. A foreign
    callable whose attributes raise is not known to be one (a call returning an
    awaitable is still refused when it happens)."""
    try:
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            return True
        if inspect.isfunction(fn) or inspect.ismethod(fn):
            return False
        call = inspect.getattr_static(type(fn), "__call__", None)
        return inspect.iscoroutinefunction(call)
    except Exception:
        return False
