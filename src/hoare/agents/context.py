"""Where a violation goes: the ``ContractContext`` of the running agent or tool call.

The context is held in a ``contextvars.ContextVar`` (cyllama uses a thread-local): each
thread and each asyncio task sees the context its own caller bound, so two agents running
at once never handle each other's ``contract_assert``. Outside any context a violation
follows its own policy (default ``ENFORCE``) with the default handler.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hoare.agents.policy import ContractPolicy
from hoare.agents.violation import ContractTermination, ContractViolation, ViolationHandler
from hoare.errors import ContractDefinitionError

__all__ = ["ContractContext", "contract_assert", "contract_context", "current_context",
           "default_handler", "handle", "holds"]

log = logging.getLogger("hoare.agents")


def default_handler(violation: ContractViolation) -> None:
    """Log ``Contract violation [kind] at location: message`` at WARNING; the same
    violation again within a minute is counted, not repeated (``hoare.contracts.logs.REPEATED``:
    an agent looping on one failing tool would flood the log)."""
    from hoare.contracts.logs import REPEATED

    try:
        where, kind = str(violation.location), f"[{violation.kind}]: {violation.message}"
    except Exception:  # a foreign message whose __str__ raises: logging reports it
        where, kind = "unknown", "unprintable"
    REPEATED.warn(log, where, kind, "Contract violation [%s] at %s: %s", violation.kind,
                  violation.location, violation.message)


def holds(result: object) -> bool:
    """Whether a predicate's or a condition's result counts as holding. An awaitable
    (what an ``async def`` predicate returns: truthy, yet never run) does not, and is
    closed so it never warns "never awaited"; nor does a result whose ``__bool__`` (or
    whose ``__class__``, asked by ``isawaitable``) raises."""
    try:
        if inspect.isawaitable(result):
            close_awaitable(result)
            return False
        return bool(result)
    except Exception:
        return False


def checked_policy(policy: object, where: str, optional: bool = False) -> None:
    """Refuse a policy that is not a ``ContractPolicy`` (a string such as ``"enforce"``
    would otherwise be none of them, and silently act as none)."""
    if isinstance(policy, ContractPolicy) or (optional and policy is None):
        return
    raise ContractDefinitionError(
        f"{where} must be a ContractPolicy ({', '.join(p.name for p in ContractPolicy)})"
        f"{' or None' if optional else ''}, got {_type_name(policy)}")


def close_awaitable(awaitable: object) -> None:
    """Close a coroutine (or anything with ``close()``) that will never be awaited."""
    try:
        close = getattr(awaitable, "close", None)
        if callable(close):
            close()
    except Exception:
        log.debug("an awaitable did not close", exc_info=True)


@dataclass
class ContractContext:
    """The policy, handler and location violations are handled with."""

    policy: ContractPolicy = ContractPolicy.ENFORCE
    handler: ViolationHandler | None = None
    location: str = "unknown"

    def __post_init__(self) -> None:
        checked_policy(self.policy, "ContractContext.policy")
        if self.handler is not None and not callable(self.handler):
            raise ContractDefinitionError(
                f"ContractContext.handler must be callable or None, got "
                f"{_type_name(self.handler)}")

    def handle_violation(self, violation: ContractViolation,
                         policy: ContractPolicy | None = None) -> bool:
        """Apply this context's policy (or ``policy``, a check's own) and handler, and
        record it as ``violation.policy``. ``True`` to continue: ``IGNORE`` (handler not
        called), ``OBSERVE`` (handler called); ``ENFORCE`` calls the handler, then raises
        ``ContractTermination``; ``QUICK_ENFORCE`` raises it with no handler.

        A handler that raises is logged and the policy still applies: under
        ``ENFORCE`` the ``ContractTermination`` is chained from the handler's error,
        under ``OBSERVE`` the run continues (a broken logger must neither let an
        enforced violation through nor stop an observed one). ``KeyboardInterrupt``,
        ``SystemExit`` and cancellation from the handler propagate unchanged."""
        if policy is not None:
            checked_policy(policy, "handle_violation's policy")
        effective = self.policy if policy is None else policy
        violation.policy = effective
        if effective is ContractPolicy.IGNORE:
            return True
        if effective is ContractPolicy.QUICK_ENFORCE:
            raise ContractTermination(violation)
        if self.handler is not None:
            try:
                answer = self.handler(violation)
                if inspect.isawaitable(answer):  # an async handler: nothing would await it
                    close = getattr(answer, "close", None)
                    if callable(close):
                        close()
                    raise TypeError("the violation handler is async; handlers run "
                                    "synchronously: pass a plain function")
            except Exception as error:
                log.warning("the violation handler raised %s on a %s violation at %s; "
                            "the %s policy applies", _type_name(error), violation.kind,
                            violation.location, effective.name, exc_info=True)
                if effective is ContractPolicy.ENFORCE:
                    raise ContractTermination(violation) from error
                return True
        if effective is ContractPolicy.ENFORCE:
            raise ContractTermination(violation)
        return True


def _message_text(message: object) -> str:
    """A non-text message as text (its ``str()``, or its type's name when that raises)."""
    try:
        text = str(message)
        if isinstance(text, str):
            return str.__str__(text)
    except Exception:
        pass
    return f"<{_type_name(message)} message>"


def _type_name(value: object) -> str:
    try:
        return type(value).__qualname__
    except Exception:
        return "object"


_CURRENT: contextvars.ContextVar[ContractContext | None] = contextvars.ContextVar(
    "hoare.agents.context", default=None)


def current_context() -> ContractContext | None:
    """The context bound in this thread or task, if any."""
    return _CURRENT.get()


@contextmanager
def contract_context(context: ContractContext) -> Iterator[ContractContext]:
    """Bind ``context`` for the calls made inside the ``with`` block (this thread or
    task only); the previous one is restored after."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def handle(violation: ContractViolation, policy: ContractPolicy | None = None) -> bool:
    """Handle ``violation`` in the current context (under ``policy``, a check's own,
    when given), else under ``policy`` or the violation's own with the default
    handler."""
    context = _CURRENT.get()
    if context is None:
        context = ContractContext(policy or violation.policy, default_handler,
                                  violation.location)
    return context.handle_violation(violation, policy)


def contract_assert(condition: object, message: str = "Assertion failed",
                    policy: ContractPolicy | None = None) -> None:
    """A run-time check inside a tool: a false ``condition`` is an ``assert`` violation,
    handled by the calling agent's context (its policy unless ``policy`` is given), or,
    outside any agent, under ``policy`` (default ``ENFORCE``: ``ContractTermination``).
    An awaitable ``condition`` (an unawaited ``async`` check) or one whose ``__bool__``
    raises is false."""
    if holds(condition):
        return
    checked_policy(policy, "contract_assert's policy", optional=True)
    if not isinstance(message, str):
        message = _message_text(message)
    context = _CURRENT.get()
    effective = policy or (context.policy if context is not None else ContractPolicy.ENFORCE)
    if effective is ContractPolicy.IGNORE:
        return
    location = context.location if context is not None else "contract_assert"
    handle(ContractViolation("assert", location, "", message, {}, effective), effective)
