"""The call running in this thread or asyncio task (``CURRENT_CALL``), a context
variable set around each call and reset after it, so nested contract calls stay apart.
An instance's shared hooks find their call's ``forward`` and ``act`` through it, and a
predicate that raises records its error on it."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING

from hoare.contracts.driver import with_spent
from hoare.kernel import Outcome

if TYPE_CHECKING:
    from hoare.contracts.call import Call


CURRENT_CALL: contextvars.ContextVar[Call] = contextvars.ContextVar("hoare:call")


def current_forward(used: object, outcome: Outcome) -> object:
    """The hooks' ``forward``: the user's ``forward`` for the current call, with its extra
    kwargs; the call keeps the outcome (what ``contract_*`` read) and what it raised."""
    call = CURRENT_CALL.get()
    spent = call.error_usage  # what the engine's errors cost: the kernel sums answers only
    call.outcome = outcome if spent is None else with_spent(outcome, spent)
    try:
        rest = call.rest
        if rest:
            return call.runtime.description.forward(call.instance, used, **rest)
        return call.runtime.description.forward(call.instance, used)
    except BaseException as error:  # remembered so the call is recorded as failed
        call.forward_error = error
        raise


def current_act(accepted: object) -> object:
    """The shared hooks' ``act``: the current call's."""
    return CURRENT_CALL.get().act(accepted)


def handled_by(handler: Callable[[Outcome], object]) -> Callable[[Outcome], object]:
    """An instance's ``on_violation`` handler given the outcome with what the current
    call's engine errors cost (the kernel sums answers only), as ``forward`` sees it."""
    def handle(outcome: Outcome) -> object:
        call = CURRENT_CALL.get(None)
        spent = None if call is None else call.error_usage
        return handler(outcome if spent is None else with_spent(outcome, spent))
    return handle
