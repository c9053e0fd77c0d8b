"""``@pre``/``@post`` on tools and plain functions (cyllama's API).

A pre-condition receives the call's arguments as a dict (``lambda args: args["x"] != 0``,
cyllama's style) or, when every parameter of the lambda is a parameter of the function,
as those arguments (``lambda x: x != 0``, icontract's style); a single parameter named
``args`` means the dict unless the function has a parameter ``args``. A post-condition
receives ``(result)`` or ``(result, args)``. Conditions are checked in the order written;
a condition that raises, or returns an awaitable (an ``async def`` predicate, never
awaited), is a violation. The conditions live on the function as
``_contracts`` (a ``ContractSpec``). Called directly, the function checks them under
each condition's policy (default ``ENFORCE``: a violation raises ``ContractTermination``);
inside an agent, under the agent's context (``context.py``).
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from hoare.agents.context import checked_policy, current_context, handle, holds
from hoare.agents.policy import ContractPolicy
from hoare.agents.violation import ContractViolation
from hoare.errors import ContractDefinitionError

__all__ = ["ContractSpec", "PostCondition", "PreCondition", "post", "pre"]

F = TypeVar("F", bound=Callable[..., Any])


class _CheckedFunction(Protocol):
    """What ``_checked`` returns: a function that carries its ``ContractSpec`` (and the
    names of its parameters, for icontract-style predicates)."""

    _contracts: ContractSpec
    __hoare_checked__: bool
    __hoare_parameters__: tuple[str, ...]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def predicate_source(predicate: Callable[..., Any]) -> str:
    """How a violation names its predicate, as cyllama shows it: a lambda's source text,
    ``lambda …`` included (told apart from other lambdas on its line, one line however
    many it spans), ``'<lambda>'`` when its source is not available (a REPL); a
    function's name; another callable's type name."""
    try:
        name = getattr(predicate, "__name__", None)
    except Exception:
        name = None
    if not isinstance(name, str):
        try:
            return type(predicate).__qualname__
        except Exception:
            return "<predicate>"
    if name != "<lambda>":
        return name
    from hoare.declaration.source import function_node

    try:
        node = function_node(predicate)
        if isinstance(node, ast.Lambda):
            return ast.unparse(node)
    except Exception:  # no source (a REPL, exec), or none that can be told apart
        pass
    return name


def _arity(predicate: Callable[..., Any]) -> list[str]:
    try:
        parameters = inspect.signature(predicate).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


@dataclass
class PreCondition:
    """A condition on a call's arguments."""

    predicate: Callable[..., Any]
    message: str = ""
    predicate_str: str = ""
    policy: ContractPolicy | None = None
    by_name: tuple[str, ...] = ()  # icontract style: the parameters it takes, by name

    def __post_init__(self) -> None:
        if not self.predicate_str:
            self.predicate_str = predicate_source(self.predicate)

    def check(self, args: dict[str, Any]) -> bool:
        """Does it hold? A predicate that raises does not."""
        try:
            if self.by_name:
                return holds(self.predicate(*(args[name] for name in self.by_name)))
            return holds(self.predicate(args))
        except Exception:
            return False


@dataclass
class PostCondition:
    """A condition on a call's result (and, with two parameters, its arguments)."""

    predicate: Callable[..., Any]
    message: str = ""
    predicate_str: str = ""
    policy: ContractPolicy | None = None
    needs_args: bool = False

    def __post_init__(self) -> None:
        if not self.predicate_str:
            self.predicate_str = predicate_source(self.predicate)
        if not self.needs_args:
            self.needs_args = len(_arity(self.predicate)) >= 2

    def check(self, result: Any, args: dict[str, Any] | None = None) -> bool:
        """Does it hold? A predicate that raises does not."""
        try:
            if self.needs_args:
                return holds(self.predicate(result, args or {}))
            return holds(self.predicate(result))
        except Exception:
            return False


@dataclass
class ContractSpec:
    """A function's conditions, in the order they are checked."""

    preconditions: list[PreCondition] = field(default_factory=list)
    postconditions: list[PostCondition] = field(default_factory=list)


def _effective(condition_policy: ContractPolicy | None) -> ContractPolicy:
    if condition_policy is not None:
        return condition_policy
    context = current_context()
    return context.policy if context is not None else ContractPolicy.ENFORCE


def _bound_arguments(signature: inspect.Signature, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return dict(kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def check_pre(spec: ContractSpec, location: str, arguments: dict[str, Any]) -> None:
    for condition in list(spec.preconditions):
        policy = _effective(condition.policy)
        if policy is ContractPolicy.IGNORE or condition.check(arguments):
            continue
        handle(ContractViolation("pre", location, condition.predicate_str,
                                 condition.message or condition.predicate_str,
                                 {"args": arguments}, policy), policy)


def check_post(spec: ContractSpec, location: str, result: Any,
               arguments: dict[str, Any]) -> None:
    for condition in list(spec.postconditions):
        policy = _effective(condition.policy)
        if policy is ContractPolicy.IGNORE or condition.check(result, arguments):
            continue
        handle(ContractViolation("post", location, condition.predicate_str,
                                 condition.message or condition.predicate_str,
                                 {"args": arguments, "result": result}, policy), policy)


def _checked(fn: Callable[..., Any]) -> _CheckedFunction:
    """``fn`` wrapped once: every ``@pre``/``@post`` adds to the same ``ContractSpec``."""
    if getattr(fn, "__hoare_checked__", False):
        return cast(_CheckedFunction, fn)  # a wrapper this function made
    spec = ContractSpec()
    signature = inspect.signature(fn)
    location = getattr(fn, "__name__", "function")

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            arguments = _bound_arguments(signature, args, kwargs)
            check_pre(spec, location, arguments)
            result = await fn(*args, **kwargs)
            check_post(spec, location, result, arguments)
            return result
        wrapper: Callable[..., Any] = acall
    else:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            arguments = _bound_arguments(signature, args, kwargs)
            check_pre(spec, location, arguments)
            result = fn(*args, **kwargs)
            check_post(spec, location, result, arguments)
            return result
        wrapper = call
    checked = cast(_CheckedFunction, wrapper)  # a function takes any attribute: given here
    checked._contracts = spec
    checked.__hoare_checked__ = True
    checked.__hoare_parameters__ = tuple(signature.parameters)
    return checked


def _by_name(predicate: Callable[..., Any], parameters: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters an icontract-style predicate takes by name, or () for the dict."""
    names = _arity(predicate)
    if not names or not set(names) <= set(parameters):
        return ()
    if names == ["args"] and "args" not in parameters:
        return ()
    return tuple(names)


def _decorator(add: Callable[[ContractSpec, tuple[str, ...]], None]) -> Callable[[F], F]:
    """A decorator that adds one condition (``add``) to a function's ``ContractSpec``,
    or to the function of a ``Tool`` (``@pre``/``@post`` above ``@tool``)."""

    def decorate(target: F) -> F:
        from hoare.agents.tool import Tool

        if isinstance(target, Tool):
            target.func = decorate(target.func)
            return target
        wrapper = _checked(target)
        add(wrapper._contracts, wrapper.__hoare_parameters__)
        # functools.wraps copied the signature, name and docstring: it stands for F
        return cast(F, wrapper)

    return decorate


def _checked_condition(kind: str, predicate: object, message: object,
                       policy: object) -> None:
    """Refuse at definition what would fail every check or every violation report."""
    if not callable(predicate):
        raise ContractDefinitionError(f"@{kind} needs a callable predicate, got "
                                      f"{type(predicate).__qualname__}")
    if not isinstance(message, str):
        raise ContractDefinitionError(f"@{kind}'s message must be a str, got "
                                      f"{type(message).__qualname__}")
    checked_policy(policy, f"@{kind}'s policy", optional=True)


def pre(predicate: Callable[..., Any], message: str = "",
        policy: ContractPolicy | None = None) -> Callable[[F], F]:
    """Add a pre-condition (checked before the conditions written below it)."""
    _checked_condition("pre", predicate, message, policy)
    return _decorator(lambda spec, parameters: spec.preconditions.insert(0, PreCondition(
        predicate, message, policy=policy, by_name=_by_name(predicate, parameters))))


def post(predicate: Callable[..., Any], message: str = "",
         policy: ContractPolicy | None = None) -> Callable[[F], F]:
    """Add a post-condition on ``(result)`` or ``(result, args)``."""
    _checked_condition("post", predicate, message, policy)
    return _decorator(lambda spec, _parameters: spec.postconditions.insert(
        0, PostCondition(predicate, message, policy=policy)))
