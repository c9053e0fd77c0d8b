"""What ``os.fork`` holds so that a child forked while other threads call contracts
finds every lock of the call path free and the counts it guards whole.

Only the forking thread survives a fork: a lock another thread held at that moment
stays held in the child for good, and the child's first call waiting for it hangs
(a web server's workers forking, ``multiprocessing``'s fork start method). The locks
of the call path are held for microseconds, so the forking thread takes them all
before the fork (all at once, never waiting while it holds one: some are taken while
another is held) and lets them go on both sides after it, as the standard library
does for its own locks (``logging``). Held here:
the success counters of every contract and query class (the kernel's
``SuccessTracker``, which the kernel may not change to register itself: found by
walking the decorated classes at the fork, so a call pays nothing), and the locks
registered with ``hold_across_fork`` (an agent's counters, a query class's attempt
rates). z3's lock, held for a whole pre-flight check, is held across the fork by
``hoare.verifier.solve.lock``; the stats store starts a fresh writer in the child
(``hoare.stats.store``).

A lock held while z3's is taken, or for as long as a cache entry is built (which may
take z3's lock), would keep the fork waiting, or wait for z3's lock that the fork
already holds (its own hook, first): such locks are registered with ``free_in_child``
instead and made new in the child (what they guard is a cache whose entry the dead
thread never stored, built again on first use).
``fork_safe_locks`` says which locks are covered (``tests/test_fork_locks.py``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["fork_safe_locks", "free_in_child", "hold_across_fork"]

Lock = Any  # a threading.Lock or RLock: what ``acquire``/``release`` takes

_registered: weakref.WeakKeyDictionary[Any, tuple[Lock, ...]] = weakref.WeakKeyDictionary()
_renewed: weakref.WeakKeyDictionary[Any, tuple[Lock, ...]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()
_held: list[Lock] = []  # taken before the fork, released after it (one forking thread)
_missed: list[Lock] = []  # not free in time before the fork: made new in the child
PATIENCE = 2.0
"""How long a fork waits for the registered locks to be free together (seconds)."""


def hold_across_fork(owner: object, *locks: Lock) -> None:
    """Hold ``locks`` across every fork for as long as ``owner`` lives. A lock given
    here must never be held while another lock of the call path is taken."""
    with _registry_lock:
        _registered[owner] = locks


def free_in_child(owner: object, *locks: Lock) -> None:
    """Make ``locks`` new in every forked child for as long as ``owner`` lives: for a
    lock held while another is taken, which the fork may not take in turn."""
    with _registry_lock:
        _renewed[owner] = locks


def fork_safe_locks() -> frozenset[int]:
    """The ids of the locks free in a forked child (held across the fork or made new
    in the child), the success counters' included."""
    with _registry_lock:
        locks = [lock for table in (_registered, _renewed)
                 for owned in table.values() for lock in owned]
    return frozenset(id(lock) for lock in (*locks, *_class_locks()))


def _subclasses(root: type) -> Iterator[type]:
    seen: set[type] = set()
    stack = [root]
    while stack:
        subclasses: list[type] = type.__subclasses__(stack.pop())
        for cls in subclasses:
            if cls not in seen:
                seen.add(cls)
                stack.append(cls)
                yield cls


_ROOTS = (("hoare.contracts.base", "Contract", "__hoare_runtime__"),
          ("hoare.queries.query", "Query", "__hoare_query_runtime__"))
"""Where the decorated classes are: the module, its base class, the runtime's name."""


def _class_locks() -> Iterator[Lock]:
    """The success counters' locks of every decorated contract and query class (their
    modules looked up, never imported: a module not loaded has no class to hold)."""
    for module, root, attribute in _ROOTS:
        found = sys.modules.get(module)
        base = getattr(found, root, None) if found is not None else None
        if not isinstance(base, type):
            continue
        for cls in _subclasses(base):
            runtime = cls.__dict__.get(attribute)
            tracker = getattr(runtime, "tracker", None)
            # the kernel's SuccessTracker has no public lock and may not change
            lock = getattr(tracker, "_lock", None)
            if lock is not None:
                yield lock


def _take_all(locks: list[Lock], first: int, patience: float) -> int | None:
    """Take every one of ``locks``, waiting (``patience`` seconds at most) only for
    ``locks[first]``, while holding none, then for none: ``None`` when all are held,
    else the index of one that was not free (what was taken is let go)."""
    if not locks[first].acquire(timeout=max(patience, 0.0)):
        return first
    for index, lock in enumerate(locks):
        if index != first and not lock.acquire(blocking=False):
            for taken in (first, *(k for k in range(index) if k != first)):
                locks[taken].release()
            return index
    return None


def _before_fork() -> None:
    """Take every lock, never waiting while holding one (the busy one is waited for
    alone, then the others tried, as C++'s ``std::lock`` does): a lock may be taken
    while another is held (an engine's lock while it learns a server's format, the
    configuration's while the engine is built), so taking them in turn, in whatever
    order they were registered, could wait for a thread that waits for us. The
    registry's is last: a lock of the call path may be held while its owner registers
    a new one. Should they not all be free together within ``PATIENCE`` seconds (a
    thread forking from inside a critical section), the fork goes on with those that
    are, and the child makes the others new."""
    with _registry_lock:
        registered = [lock for locks in _registered.values() for lock in locks]
    try:
        found = [*registered, *_class_locks()]
    except Exception:  # a class walk that fails must not stop the fork
        found = registered
    locks = list({id(lock): lock for lock in found}.values())
    locks.append(_registry_lock)  # so that the child may register
    deadline = time.monotonic() + PATIENCE
    busy: int | None = 0
    while busy is not None:
        busy = _take_all(locks, busy, deadline - time.monotonic())
        if busy is not None and time.monotonic() > deadline:
            for lock in locks:
                (_held if lock.acquire(blocking=False) else _missed).append(lock)
            return
    _held.extend(locks)


def _after_fork() -> None:
    _missed.clear()
    while _held:
        _held.pop().release()


def _after_fork_in_child() -> None:
    """Release what the fork held, and make new the locks another thread may have
    held (``_at_fork_reinit``: the standard library's own, for its locks and
    conditions); a reentrant one the forking thread holds itself is left as it is."""
    missed = list(_missed)
    _after_fork()
    for lock in missed:  # another thread held it throughout: made new
        lock._at_fork_reinit()
    for locks in list(_renewed.values()):
        for lock in locks:
            owned = getattr(lock, "_is_owned", None)
            if owned is None or not owned():
                lock._at_fork_reinit()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork,
                    after_in_child=_after_fork_in_child)
