"""Where a violation goes: the ``ContractContext`` of the running agent or tool call.

The context is held in a ``contextvars.ContextVar`` (cyllama uses a thread-local): each
thread and each asyncio task sees the context its own caller bound, so two agents running
at once never handle each other's ``contract_assert``. Outside any context a violation
follows its own policy (default ``ENFORCE``) with the default handler.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .policy import ContractPolicy
from .violation import ContractTermination, ContractViolation, ViolationHandler

__all__ = ["ContractContext", "contract_assert", "contract_context", "current_context",
           "default_handler", "handle"]

log = logging.getLogger("hoare.agents")


def default_handler(violation: ContractViolation) -> None:
    """Log ``Contract violation [kind] at location: message`` at WARNING."""
    log.warning("Contract violation [%s] at %s: %s", violation.kind, violation.location,
                violation.message)


@dataclass
class ContractContext:
    """The policy, handler and location violations are handled with."""

    policy: ContractPolicy = ContractPolicy.ENFORCE
    handler: ViolationHandler | None = None
    location: str = "unknown"

    def handle_violation(self, violation: ContractViolation) -> bool:
        """Apply the violation's policy: ``True`` to continue (``IGNORE``, ``OBSERVE``);
        raises ``ContractTermination`` under ``ENFORCE`` (after the handler) and
        ``QUICK_ENFORCE`` (no handler). ``handler=None`` does nothing beyond the policy."""
        policy = violation.policy
        if policy is ContractPolicy.IGNORE:
            return True
        if policy is ContractPolicy.QUICK_ENFORCE:
            raise ContractTermination(violation)
        if self.handler is not None:
            self.handler(violation)
        if policy is ContractPolicy.ENFORCE:
            raise ContractTermination(violation)
        return True


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


def handle(violation: ContractViolation) -> bool:
    """Handle ``violation`` in the current context, else with the default handler."""
    context = _CURRENT.get()
    if context is None:
        context = ContractContext(violation.policy, default_handler, violation.location)
    return context.handle_violation(violation)


def contract_assert(condition: object, message: str = "Assertion failed",
                    policy: ContractPolicy | None = None) -> None:
    """A run-time check inside a tool: a false ``condition`` is an ``assert`` violation,
    handled by the calling agent's context (its policy unless ``policy`` is given), or,
    outside any agent, under ``policy`` (default ``ENFORCE``: ``ContractTermination``)."""
    if condition:
        return
    context = _CURRENT.get()
    effective = policy or (context.policy if context is not None else ContractPolicy.ENFORCE)
    if effective is ContractPolicy.IGNORE:
        return
    location = context.location if context is not None else "contract_assert"
    handle(ContractViolation("assert", location, "", message, {}, effective))
