"""One lock around every z3 object's life, creation to release.

z3's Python objects are built in the active context (``z3.main_ctx()``, which
``z3_context`` points at a fresh context per check), and a context is not
thread-safe: building a term, solving, and even *freeing* one (``AstRef.__del__``
calls ``Z3_dec_ref``) from two threads at once corrupts it — a segmentation fault in
``Z3_solver_check_assumptions`` or ``Z3_dec_ref`` when a web server's threads share a
contract with pre-flight on, or call ``hoare.verify`` together. Two rules make it safe:

* Every entry point that touches z3 (``hoare.verify``, ``Preflight.check``,
  ``Preflight.for_description``, and the translation helpers below them) holds
  ``Z3_LOCK``, a re-entrant lock, for its whole duration (entering a ``Z3Context``
  takes it too). One lock for every context: the active context is process-wide.
* Freeing is made safe wherever it happens: the finalizer of every z3 class that
  releases a reference is wrapped so that it runs only under ``Z3_LOCK``. A z3 object
  dropped by a thread that cannot take the lock at once (another thread is solving)
  is queued, never waited for (a finalizer that blocks could deadlock with whatever
  lock the garbage collector interrupted), and released by a holder of the lock
  before it lets the lock go.

``tests/contracts/test_faults_threads.py`` runs many threads and event loops on one instance in
a child process, so a crash fails the test instead of the run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import z3

__all__ = ["Z3_LOCK", "Z3Lock"]


class Z3Lock:
    """A re-entrant lock that, before a holder releases it, releases the z3 objects
    other threads dropped meanwhile (any holder may: it holds the lock)."""

    __slots__ = ("_lock", "pending")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.pending: list[Callable[[], None]] = []

    @property
    def raw(self) -> Any:
        """The underlying ``RLock`` (the finalizers take it without a Python call)."""
        return self._lock

    def acquire(self, blocking: bool = True) -> bool:
        return self._lock.acquire(blocking)

    def release(self) -> None:
        if self.pending:
            self.drain()
        self._lock.release()

    def drain(self) -> None:
        """Release the queued z3 objects (the caller holds the lock)."""
        pending = self.pending
        while pending:
            finalize = pending.pop()
            try:
                finalize()
            except Exception:  # a finalizer's error is ignored, as Python does
                pass

    def __enter__(self) -> Z3Lock:
        self._lock.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.pending:
            self.drain()
        self._lock.release()


Z3_LOCK = Z3Lock()


def _hold_across_fork() -> None:
    """``os.fork`` waits for the z3 work in progress: a thread holding the lock at the
    fork does not exist in the child, whose first pre-flight would wait for it forever
    (and z3 would be caught mid-operation); the same thread releases it on both sides."""
    Z3_LOCK.raw.acquire()


def _release_after_fork() -> None:
    Z3_LOCK.raw.release()


os.register_at_fork(before=_hold_across_fork, after_in_parent=_release_after_fork,
                    after_in_child=_release_after_fork)


def _guard(finalizer: Callable[[Any], None]) -> Callable[[Any], None]:
    lock = Z3_LOCK  # held by the closure: module globals are None at interpreter exit
    raw = lock.raw  # the RLock itself: this runs for every z3 object freed

    def __del__(self: Any) -> None:
        if raw.acquire(False):
            try:
                finalizer(self)
            finally:
                if lock.pending:
                    lock.drain()
                raw.release()
        else:  # keeps `self` alive until the holder runs the real finalizer
            lock.pending.append(lambda: finalizer(self))

    __del__.__wrapped__ = finalizer  # type: ignore[attr-defined]  # a function takes attributes
    return __del__


def _install() -> None:
    """Wrap the finalizer of every z3 class that defines one (once)."""
    import z3.z3 as z3_api

    for value in [*vars(z3).values(), *vars(z3_api).values()]:
        if not isinstance(value, type):
            continue
        finalizer = value.__dict__.get("__del__")
        if finalizer is None or hasattr(finalizer, "__wrapped__"):
            continue
        value.__del__ = _guard(finalizer)  # type: ignore[attr-defined]  # z3 classes, patched once


_install()
