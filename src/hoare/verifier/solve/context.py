"""Which z3 context the verifier builds terms in, and the terms cached per context.

z3py builds every term in ``z3.main_ctx()`` unless told otherwise, and the answer to a
query near its resource limit depends on what that context has seen before (term ids,
the solver's internal caches). So a verdict could depend on what else the process had
done with z3: compiling a contract's decoding schema at its first call once turned a
later ``hoare verify``'s ``fail`` into ``unknown``. The rule:

* each verification (``hoare.verify``, a unit of ``hoare verify``) and each decoding
  compile runs in a fresh context of its own: ``with fresh():``, so its verdicts do
  not depend on the process's history;
* the run-time pre-flight keeps its long-lived terms in the main context: ``with MAIN:``.

``with context:`` holds ``Z3_LOCK`` (z3 is used from one thread at a time, see
``z3_lock``) and points z3py's default context at ``context`` until the block ends; it
nests. A term built in one context never meets a term of another: what is cached
across calls is cached per context (``per_context``), and the constants ``true()`` and
``false()`` are the active context's. A fresh context costs about 3 ms and is freed
with its last term.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, cast

import z3
import z3.z3 as _z3py

from hoare.verifier.solve.lock import Z3_LOCK

__all__ = ["MAIN", "Z3Context", "active", "false", "fresh", "in_fresh_context", "per_context",
           "true"]

F = TypeVar("F", bound=Callable[..., Any])

_CACHE_SIZE = 1024  # entries per cached function and context; cleared when full


class Z3Context:
    """A z3 context, the terms cached in it, and ``with`` to build in it."""

    __slots__ = ("_saved", "caches", "ctx", "false", "true")

    def __init__(self, ctx: z3.Context | None = None) -> None:
        self.ctx = ctx if ctx is not None else z3.Context()
        self.caches: dict[Callable[..., Any], dict[Any, Any]] = {}
        self.true = z3.BoolVal(True, self.ctx)
        self.false = z3.BoolVal(False, self.ctx)
        self._saved: list[tuple[z3.Context | None, Z3Context]] = []

    def __enter__(self) -> Z3Context:
        Z3_LOCK.acquire()
        self._saved.append((_z3py._main_ctx, _ACTIVE[0]))
        _z3py._main_ctx = self.ctx
        _ACTIVE[0] = self
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _z3py._main_ctx, _ACTIVE[0] = self._saved.pop()
        Z3_LOCK.release()


MAIN = Z3Context(z3.main_ctx())
_ACTIVE: list[Z3Context] = [MAIN]


def fresh() -> Z3Context:
    """A new context of its own (enter it with ``with``)."""
    return Z3Context()


def active() -> Z3Context:
    """The context terms are built in now (the caller holds ``Z3_LOCK``)."""
    return _ACTIVE[0]


def true() -> z3.BoolRef:
    """The expression ``True`` of the active context."""
    return _ACTIVE[0].true


def false() -> z3.BoolRef:
    """The expression ``False`` of the active context."""
    return _ACTIVE[0].false


def per_context(function: F) -> F:
    """``functools.cache`` for a function returning z3 terms: one cache per context."""

    @functools.wraps(function)
    def cached(*args: Any, **kwargs: Any) -> Any:
        caches = _ACTIVE[0].caches
        cache = caches.get(function)
        if cache is None:
            cache = caches[function] = {}
        key = (args, tuple(kwargs.items())) if kwargs else args
        try:
            return cache[key]
        except KeyError:
            pass
        value = function(*args, **kwargs)
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        cache[key] = value
        return value

    return cast(F, cached)


def in_fresh_context(function: F) -> F:
    """Run each call of ``function`` in a fresh context of its own (``with fresh():``)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with Z3Context():
            return function(*args, **kwargs)

    return cast(F, run)
