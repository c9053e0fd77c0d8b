"""``hoare eval``: run a contract over a dataset of inputs before deploying, record
every call in the stats store, and print the figures ``hoare stats`` gives.

The dataset is JSON Lines: each line is one input, as JSON the contract's input type
validates, or ``{"input": ...}`` around it (other keys are ignored). A line that is
not JSON or not a valid input is reported with its number and skipped; it is never
sent to the model and never recorded. A call that raises (its ``forward`` gave up)
counts as a failed call, as the store records it.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from hoare.errors import UsageError

__all__ = ["EvalError", "EvalRun", "load_dataset", "open_regular", "resolve", "run_eval"]


class EvalError(UsageError):
    """A usage error: a target that is not a contract, an unreadable dataset."""


@dataclass
class EvalRun:
    """What one evaluation did: calls made, their successes, the skipped lines."""

    calls: int = 0
    successes: int = 0
    raised: int = 0
    skipped: list[str] = field(default_factory=list)  # "line N: why"
    started: float = 0.0


def resolve(target: str, what: str) -> Any:
    """``module:attribute`` (the module imported from the current directory too).

    The module is the user's code, run at import: what it prints goes to stderr (the
    command's output, JSON for ``--json``, stays clean), and a ``sys.exit`` in it is
    an import error like any other (it ended ``hoare schema``/``eval`` with the
    module's status, 0 included, having done nothing)."""
    import contextlib

    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise EvalError(f"{what} {target!r}: give module:attribute (e.g. "
                        f"myapp.contracts:Triage)")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except (Exception, SystemExit) as error:
        raise EvalError(f"{what} {target!r}: cannot import {module_name}: "
                        f"{type(error).__name__}: {error}") from error
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise EvalError(f"{what} {target!r}: {module_name} has no {attribute}") from None
        except Exception as error:  # a module __getattr__ or descriptor that raises
            raise EvalError(f"{what} {target!r}: reading {part} raised "
                            f"{type(error).__name__}: {error}") from error
    return value


def open_regular(path: Path, what: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file; ``EvalError`` otherwise. A
    FIFO, device or socket is refused, never read as a file (reading one may block
    forever): opened without blocking, then checked on the open descriptor."""
    import os
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise EvalError(f"{what}: cannot be read: {error}") from error
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) \
                else "not a regular file"
            raise EvalError(f"{what}: cannot be read: {kind}")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


MAX_LINE = 16 * 1024 * 1024  # bytes of one dataset line; a longer one is skipped


def _lines(handle: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """``(number, line)`` of a binary file, a line of more than ``MAX_LINE`` bytes as
    None (read past, never held whole)."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of that line
                line = handle.readline(MAX_LINE)
            yield number, None
            continue
        yield number, line


def load_dataset(path: Path, validate: Callable[[object], Any], run: EvalRun
                 ) -> Iterator[Any]:
    """The valid inputs of ``path``, in order; the others (a line that is not UTF-8,
    not JSON, nested too deep, too long, or not a valid input) are noted in ``run``
    with their line number and skipped."""
    handle = open_regular(path, f"dataset {path}")
    with handle:
        try:
            for number, raw in _lines(handle):
                if raw is None:
                    run.skipped.append(f"line {number}: longer than {MAX_LINE} bytes")
                    continue
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM
                    raw = raw[3:]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    run.skipped.append(f"line {number}: not UTF-8 (byte {error.start + 1}: "
                                       f"{error.reason})")
                    continue
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except RecursionError:
                    run.skipped.append(f"line {number}: JSON nested too deeply")
                    continue
                except ValueError as error:
                    run.skipped.append(f"line {number}: not JSON ({error})")
                    continue
                candidates = [item]
                if isinstance(item, dict) and "input" in item:
                    candidates.insert(0, item["input"])
                problem = ""
                for candidate in candidates:
                    try:
                        value = validate(candidate)
                    except RecursionError:
                        problem = problem or "nested too deeply"
                    except Exception as error:
                        problem = problem or " ".join(str(error).split())[:300]
                    else:
                        yield value
                        break
                else:
                    run.skipped.append(f"line {number}: not a valid input: {problem}")
        except OSError as error:
            raise EvalError(f"dataset {path}: cannot be read: {error}") from error


class _Progress:
    """A one-line progress bar on a terminal; nothing otherwise."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total = stream, total
        self.shown = stream.isatty()
        self.lock = threading.Lock()
        self.last = 0.0

        self.line = ""  # the bar as last drawn (redrawn under a log record)

    def update(self, run: EvalRun, final: bool = False) -> None:
        if not self.shown:
            return
        now = time.monotonic()
        with self.lock:
            if not final and now - self.last < 0.1:
                return
            self.last = now
            width = 30
            done = run.calls
            filled = width * done // self.total if self.total else width
            rate = f"{run.successes / done:.3f}" if done else "–"
            self.line = (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}  "
                         f"P_succ {rate}")
            self.stream.write("\r" + self.line + ("\n" if final else ""))
            self.stream.flush()
            if final:
                self.line = ""

    def write_record(self, text: str) -> None:
        """A log line above the bar: the bar's line is cleared, the text written, and
        the bar drawn again below it, so warnings never break into the bar."""
        with self.lock:
            self.stream.write("\r\033[K" + text + "\n" + ("\r" + self.line if self.line else ""))
            self.stream.flush()


class _AboveTheBar(logging.Handler):
    """hoare's log records while a progress bar is shown, when nothing else handles them
    (Python's last-resort handler would write them into the bar's line)."""

    def __init__(self, bar: _Progress) -> None:
        super().__init__(logging.WARNING)
        self.bar = bar

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.bar.write_record(self.format(record))
        except Exception:
            self.handleError(record)


def run_eval(target: str, dataset: Path, engine: Any = None, jobs: int = 1,
             progress: TextIO | None = None) -> tuple[str, EvalRun]:
    """Call the contract ``target`` on each input of ``dataset`` (``jobs`` threads,
    one shared instance); return the contract's name and what was done. The calls are
    recorded by the store configured beforehand (``hoare.configure(stats=...)``)."""
    from hoare.contracts.base import Contract
    from hoare.contracts.runtime import runtime_of

    found = resolve(target, "contract")
    if isinstance(found, type) and issubclass(found, Contract):
        try:
            instance = found(engine=engine) if engine is not None else found()
        except Exception as error:
            raise EvalError(f"contract {target!r}: cannot be created: "
                            f"{type(error).__name__}: {error}") from error
    elif isinstance(found, Contract):
        if engine is not None:
            raise EvalError(f"{target!r} is a contract instance with its own engine; give "
                            f"the class to use --engine")
        instance = found
    else:
        raise EvalError(f"{target!r} is not a hoare contract (a @contract class)")
    description = runtime_of(instance).description
    run = EvalRun(started=time.time())
    inputs = list(load_dataset(dataset, description.input.validate, run))
    bar = _Progress(progress or sys.stderr, len(inputs))
    lock = threading.Lock()

    def one(value: Any) -> None:
        ok = False
        try:
            instance(value)
            ok = bool(instance.contract_successful)
        except Exception:
            with lock:
                run.raised += 1
        with lock:
            run.calls += 1
            run.successes += ok
        bar.update(run)

    hoare_log = logging.getLogger("hoare")
    above = _AboveTheBar(bar) if bar.shown and not hoare_log.hasHandlers() else None
    if above is not None:
        hoare_log.addHandler(above)
    try:
        if jobs <= 1:
            for value in inputs:
                one(value)
        else:
            with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hoare-eval") as pool:
                list(pool.map(one, inputs))
    finally:
        if above is not None:
            hoare_log.removeHandler(above)
    bar.update(run, final=True)
    return description.name, run
