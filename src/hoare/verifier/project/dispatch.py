"""Many units in worker processes: the parent's side of ``python -m
hoare.verifier.project.worker`` (``worker`` is the child's side).

``run_units`` gives every unit's result in order, checked in this process or in
workers; ``Dispatch`` feeds units to worker processes as the caller finds them, bounds
each import's time, and turns a worker that dies, hangs or writes garbage into that
unit's import error. Apart from ``units`` (what one unit's check is) because this is
process management: pipes, threads, time bounds, exit statuses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeGuard

from hoare.verifier.project.targets import Unit
from hoare.verifier.project.units import error_result, run_unit_safely
from hoare.verifier.solve.solver import SolverOptions

__all__ = ["DEFAULT_IMPORT_TIMEOUT", "Dispatch", "run_units"]

# Seconds a worker may spend importing one unit (``--import-timeout``, ``[tool.hoare]
# import_timeout``): an import that loops or waits forever is reported as that unit's
# import error, not waited on.
DEFAULT_IMPORT_TIMEOUT = 60.0


def _spawn() -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-m", "hoare.verifier.project.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="surrogateescape", env=env,
                            cwd=os.getcwd())


def _finish(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        try:
            process.stdin.close()
        except OSError:
            pass
    process.wait()


def run_units(units: Sequence[Unit], options: SolverOptions, jobs: int,
              overrides: dict[str, dict[str, int]] | None = None,
              import_timeout: float = DEFAULT_IMPORT_TIMEOUT, *, isolated: bool = False
              ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, result)`` of every unit, in ``units`` order. ``jobs`` > 1 or
    ``isolated``: in worker processes that each import their own units, so a module
    that exits or hangs at import is that unit's error, not the caller's end. Else in
    this process (the caller vouches for the code it imports)."""
    if isolated and units:
        yield from _subprocesses(units, options, max(1, min(jobs, len(units))), overrides,
                                 import_timeout)
        return
    if jobs <= 1 or len(units) <= 1:
        for index, unit in enumerate(units):
            yield index, run_unit_safely(unit, options, overrides)
        return
    yield from _subprocesses(units, options, min(jobs, len(units)), overrides,
                             import_timeout)


def _subprocesses(units: Sequence[Unit], options: SolverOptions, workers: int,
                  overrides: dict[str, dict[str, int]] | None, import_timeout: float
                  ) -> Iterator[tuple[int, dict[str, Any]]]:
    dispatch = Dispatch(units, options, workers, overrides, import_timeout)
    for index in range(len(units)):
        dispatch.send(index)
    dispatch.close()
    for index in range(len(units)):
        yield index, dispatch.result(index)
    dispatch.join()


_SIGNALS = {-int(s): s.name for s in signal.Signals}


def _ended(status: int | None) -> str:
    """How a worker process ended, for the unit's error."""
    if status is None:
        return "closed its result channel"
    if status < 0:
        return f"was killed by {_SIGNALS.get(status, f'signal {-status}')}"
    return f"exited with status {status}"


def _well_formed(found: object) -> TypeGuard[dict[str, Any]]:
    """A worker's answer has the shape of a unit result (a module that writes to the
    result channel cannot pass garbage off as a verdict)."""
    return isinstance(found, dict) and set(found) == {"contracts", "pipelines", "errors"} \
        and all(isinstance(found[k], list) and all(isinstance(v, dict) for v in found[k])
                for k in found)


class _Worker:
    """One ``python -m hoare.verifier.project.worker`` process and a thread reading its answers
    into a queue, so the parent can wait for one with a time bound."""

    def __init__(self) -> None:
        import queue

        self.process = _spawn()
        self.lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.ready = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            for line in stream:
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put("")  # end of stream

    def next(self, timeout: float | None) -> str | None:
        """The next answer line; "" at the end of the stream; None on timeout."""
        import queue

        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def kill(self) -> None:
        try:
            self.process.kill()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable
            pass


class Dispatch:
    """Units sent to ``python -m hoare.verifier.project.worker`` processes one at a time, as
    the caller finds them (it may still be looking: a unit is checked while the next
    one's cache key is made); each result is collected by the unit's index.

    Plain subprocesses rather than a fork pool: safe when the caller runs threads,
    never re-imports the caller's ``__main__``, and a unit's import cannot end or
    hijack ``hoare verify``: a worker that exits (``os._exit``, ``sys.exit`` from a
    thread, a signal, a crash in native code) or closes its result channel costs only
    the unit it was on, reported as that unit's error; an import that takes longer than
    ``import_timeout`` seconds is killed and reported the same way."""

    def __init__(self, units: Sequence[Unit], options: SolverOptions, workers: int,
                 overrides: dict[str, dict[str, int]] | None,
                 import_timeout: float = DEFAULT_IMPORT_TIMEOUT) -> None:
        import queue

        self._units = units
        self._options = options
        self._overrides = overrides or {}
        self._import_timeout = import_timeout
        self._todo: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._results: dict[int, dict[str, Any]] = {}
        self._done = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.grow(workers)

    def grow(self, workers: int) -> None:
        """Run ``workers`` worker processes in all (more units found than expected),
        never more than there are units: ``-j 100000`` on one file starts one."""
        if self._closed:
            return
        while len(self._threads) < min(workers, len(self._units)):
            thread = threading.Thread(target=self._feed, daemon=True)
            self._threads.append(thread)
            thread.start()

    def send(self, index: int) -> None:
        self._todo.put(index)

    def close(self) -> None:
        """No more units: each feeding thread stops when the queue is empty."""
        self._closed = True
        for _thread in self._threads:
            self._todo.put(None)

    def result(self, index: int) -> dict[str, Any]:
        with self._done:
            while index not in self._results:
                if not any(t.is_alive() for t in self._threads):
                    raise RuntimeError("hoare verify: every worker process stopped")
                self._done.wait(0.5)
            return self._results.pop(index)

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _request(self, worker: _Worker, index: int) -> None:
        """Send the unit to the worker (a dead one: its end of stream says so later)."""
        import json
        from dataclasses import asdict

        from hoare.verifier.project.worker import encode_unit

        stream = worker.process.stdin
        assert stream is not None
        request = {"unit": encode_unit(self._units[index]), "options": asdict(self._options),
                   "overrides": self._overrides}
        try:
            stream.write(json.dumps(request) + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def _answer(self, worker: _Worker, index: int, sent: bool = False,
                on_imported: Callable[[], None] | None = None) -> tuple[dict[str, Any], bool]:
        """The unit's result, and whether the worker can take another unit. ``sent``:
        the request went ahead already (``_feed``); ``on_imported``: called when the
        worker says the unit's import is done."""
        import json

        from hoare.verifier.project.worker import IMPORTED, READY

        process = worker.process
        unit = self._units[index]
        if not worker.ready:  # its start is not the unit's import: not time-bound
            first = worker.next(None)
            worker.ready = first is not None and first.strip() == json.dumps(READY)
            if not worker.ready:
                start_status = process.wait()
                return error_result(unit, f"the worker process died while starting (it "
                                          f"{_ended(start_status)}); nothing in it was checked"), \
                    False
        if not sent:
            self._request(worker, index)
        importing = True
        while True:
            line = worker.next(self._import_timeout if importing else None)
            if line is None:
                worker.kill()
                return error_result(unit, f"import did not finish within "
                                          f"{self._import_timeout:g} s (a loop or a wait at "
                                          f"import time?); set --import-timeout or "
                                          f"[tool.hoare] import_timeout to allow more"), False
            if not line:
                try:
                    status: int | None = process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    status = None
                when = "importing" if importing else "checking"
                return error_result(unit, f"the worker process died while {when} it (it "
                                          f"{_ended(status)}); nothing in it was checked"), False
            try:
                found = json.loads(line)
            except ValueError:
                found = None
            if importing and found == IMPORTED:
                importing = False
                if on_imported is not None:
                    on_imported()
                continue
            if not _well_formed(found):
                worker.kill()
                return error_result(unit, "the worker process sent a malformed result "
                                          "(something wrote to its result channel); "
                                          "nothing in it was checked"), False
            return found, True

    def _feed(self) -> None:
        """Run units until told to stop; a worker that dies is replaced, and the unit
        it died on is reported as that unit's error.

        The next unit is sent while this one is checked (once its import is done), so
        the worker starts it as soon as it sends this one's result instead of idling
        while this process, busy with keys or other threads, reads the result and
        answers (~0.4 ms a unit, up to the 5 ms of a thread switch; ~4% of a cold
        run's workers). Never while it imports: an import that hangs holds no other
        unit. A unit sent to a worker that ended before starting it is carried to the
        next worker of this thread."""
        import functools
        import queue

        carried: list[int] = []  # sent to a worker that ended before starting them
        ahead: list[int] = []  # sent to the live worker: begun when its unit is done
        stopping = False  # this thread took its end-of-queue mark

        def send_ahead(worker: _Worker) -> None:
            nonlocal stopping
            if stopping or ahead:
                return
            if carried:
                following = carried.pop(0)
            else:
                try:
                    taken = self._todo.get_nowait()
                except queue.Empty:
                    return
                if taken is None:
                    stopping = True
                    return
                following = taken
            ahead.append(following)
            self._request(worker, following)

        while True:
            worker = _Worker()
            try:
                while True:
                    sent = bool(ahead)
                    if ahead:
                        index = ahead.pop()
                    elif carried:
                        index = carried.pop(0)
                    elif stopping:
                        return
                    else:
                        taken = self._todo.get()
                        if taken is None:
                            return
                        index = taken
                    try:
                        result, alive = self._answer(worker, index, sent,
                                                     functools.partial(send_ahead, worker))
                    except Exception as error:  # never lose a unit to a parent-side bug
                        result, alive = error_result(
                            self._units[index],
                            f"internal error: {type(error).__name__}: {error}"), False
                    with self._done:
                        self._results[index] = result
                        self._done.notify_all()
                    if not alive:
                        if ahead:  # never started here: the next worker takes it, and
                            worker.kill()  # this one must not (nor be waited on for it)
                        carried.extend(ahead)
                        ahead.clear()
                        break
            finally:
                if worker.process.poll() is None and not self._closed_worker(worker):
                    worker.kill()

    @staticmethod
    def _closed_worker(worker: _Worker) -> bool:
        """Ask a healthy worker to stop (end of its input) and wait for it."""
        try:
            _finish(worker.process)
        except OSError:
            return False
        return True
