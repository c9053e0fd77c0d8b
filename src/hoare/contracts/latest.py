"""The latest call of an instance in each thread and asyncio task: what
``contract_outcome``, ``contract_result``… read, every context seeing its own latest
call, never another's. The caller's context holds only an empty ``Slot`` per instance;
the state it names lives in the instance (``Latest``), so a context never keeps an
instance, its input or its output alive. A finished call leaves a ``Done``: its outcome
and budget meter only."""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from hoare.engines.budget import Spend
from hoare.kernel import Outcome

if TYPE_CHECKING:
    from hoare.contracts.call import Call


class Slot:
    """The identity of one call, all a caller's context holds for an instance. Its state
    is in the instance's ``Latest.calls`` under ``key``, a weak reference to the slot:
    it goes when the instance goes, or when no context holds the slot any more (the
    context's next call of the instance replaced it, or the thread ended)."""

    __slots__ = ("__weakref__", "key")

    def __init__(self, forget: Callable[[weakref.ref[Slot]], None]) -> None:
        self.key = weakref.ref(self, forget)


_FREE_VARIABLES: list[contextvars.ContextVar[Slot | None]] = []
"""Context variables of collected instances, reused by new ones: a context keeps one
entry per variable (an empty slot at most), so a thread calling many short-lived
instances holds as many entries as instances were ever alive at once, not one per
instance ever called."""


class Latest:
    """An instance's latest call in each thread or task: ``var`` holds the slot of the
    current context's latest call, ``calls`` what that call left (``Call`` while it
    runs, then ``Done``)."""

    __slots__ = ("__weakref__", "calls", "forget", "var")

    def __init__(self) -> None:
        try:
            self.var = _FREE_VARIABLES.pop()
        except IndexError:
            self.var = contextvars.ContextVar("hoare:latest", default=None)
        self.calls: dict[weakref.ref[Slot], Call | Done] = {}
        # a slot's weakref callback: refers to this object weakly, so a slot a context
        # still holds never keeps the instance's calls (or the instance) alive
        self.forget = partial(_forget_slot, weakref.ref(self))

    def get(self) -> Call | Done | None:
        slot = self.var.get()
        return None if slot is None else self.calls.get(slot.key)

    def __del__(self, _free: Callable[[Any], None] = _FREE_VARIABLES.append) -> None:
        try:
            _free(self.var)  # the instance is gone: its stale slots name nothing any more
        except Exception:  # at interpreter exit
            pass


def _forget_slot(latest: weakref.ref[Latest], key: weakref.ref[Slot]) -> None:
    """No context holds the slot any more: drop what it named."""
    found = latest()
    if found is not None:
        found.calls.pop(key, None)


class Done:
    """A finished call as its instance's latest: its outcome and budget meter only, not
    the call's engine or kwargs."""

    __slots__ = ("outcome", "spend")
    running = False

    def __init__(self, outcome: Outcome | None, spend: Spend | None) -> None:
        self.outcome = outcome
        self.spend = spend
