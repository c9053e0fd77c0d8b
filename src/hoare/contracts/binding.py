"""A contract's conditions bound to one instance. ``bind_predicate`` makes the kernel
``Predicate`` that calls the user's function (a method with the instance bound first):
an awaitable verdict fails instead of counting as true, and an exception is recorded
on the current call, redacted of its secrets. ``Bound`` holds an instance's predicates
and hooks, built at its first call."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from hoare.contracts import configuration
from hoare.contracts.current import CURRENT_CALL, handled_by
from hoare.declaration.description import PredicateSource
from hoare.declaration.models import redact, secret_values
from hoare.errors import SecretRedacted, safe_text
from hoare.kernel import Hooks, Predicate, PreflightResult

if TYPE_CHECKING:
    from hoare.contracts.base import Contract
    from hoare.contracts.runtime import Runtime
    from hoare.stats.records import RecordedAs


def bind_predicate(source: PredicateSource, instance: object) -> Predicate:
    """A kernel predicate calling the user's function: a method gets the instance
    bound first; a condition without an input parameter gets no context."""
    fn = partial(source.fn, instance) if source.is_method else source.fn
    return Predicate(source.id, _synchronous(fn, source.id, 2 if source.takes_input else 1),
                     source.message, source.family, source.policy, source.takes_input)


def _synchronous(fn: Callable[..., object], name: str, arity: int) -> Callable[..., object]:
    """``fn`` whose awaitable verdicts fail instead of counting as true: an ``async def``
    predicate is refused at decoration, but a plain function may still return a
    coroutine (a lambda calling an async function). One closure per arity: this runs
    for every predicate of every call."""

    if arity == 1:
        def check1(value: object) -> object:
            try:
                verdict = fn(value)
            except Exception as error:
                shown = _raised(error, (value,))
                if shown is error:
                    raise
                raise shown from None
            if verdict is True or verdict is False or verdict is None:
                return verdict
            return _verdict(verdict, name)
        return check1

    def check2(value: object, context: object) -> object:
        try:
            verdict = fn(value, context)
        except Exception as error:
            shown = _raised(error, (value, context))
            if shown is error:
                raise
            raise shown from None
        if verdict is True or verdict is False or verdict is None:
            return verdict
        return _verdict(verdict, name)
    return check2


def _raised(error: Exception, args: tuple[object, ...]) -> Exception:
    """What a predicate's exception becomes: recorded as the call's latest error (what
    ``contract_exception`` carries), its text redacted of the call's secrets."""
    shown: Exception = error
    secrets = secret_values(*args)
    if secrets:
        text = safe_text(error)
        if redact(text, secrets) != text:
            shown = SecretRedacted(type(error).__name__, redact(text, secrets))
    current = CURRENT_CALL.get(None)
    if current is not None:
        current.last_error = shown  # never the unredacted original
    return shown


def _verdict(verdict: object, name: str) -> object:
    if inspect.isawaitable(verdict):
        close = getattr(verdict, "close", None)
        if callable(close):
            close()  # never awaited: close it so Python does not warn later
        raise TypeError(f"predicate {name} returned a {type(verdict).__name__}, not a "
                        f"truth value: predicates run synchronously (plain def)")
    return verdict


class Bound:
    """Hooks of one instance (predicates see ``self``), built on its first call."""

    __slots__ = ("handler", "hooks", "post", "pre", "preflight", "recorded_as")

    def __init__(self, instance: Contract[Any, Any], runtime: Runtime) -> None:
        description = runtime.description
        self.pre = tuple(bind_predicate(p, instance) for p in description.pre)
        self.post = tuple(bind_predicate(p, instance) for p in description.post)
        checker = runtime.preflight_checker()
        self.preflight: Callable[[object], PreflightResult] | None = None
        if checker is not None:  # on, off or shadow: decorator, configure, [tool.hoare]
            self.preflight = configuration.preflight_hook(
                runtime.preflight_choice, description.name,
                partial(checker.check, instance))  # check(instance, used), no frame
        method = getattr(instance, "on_violation", None)
        self.handler = handled_by(runtime.handler or method or runtime.log_violation)
        self.hooks: Hooks | None = None  # the hooks of a call without extra kwargs
        # the engine, and what names its stats records with that engine
        self.recorded_as: tuple[object, RecordedAs] | None = None
