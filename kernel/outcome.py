"""What a contracted call produces: phases, violations, attempts and the ``Outcome``.

Spec: spec/pipeline.md §1 (phases) and §5 (the outcome record). An ``Outcome``
is built once per call and never shared between calls.
"""

from __future__ import annotations

import enum
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

from .config import Policy


class Phase(enum.Enum):
    """The phases of one call, in the order they run (spec §1)."""

    INPUT = "input"
    PRE = "pre"
    ACT = "act"
    PREFLIGHT = "preflight"
    POST = "post"
    FORWARD = "forward"
    RESULT = "result"


class ViolationKind(enum.Enum):
    """Why a check failed (spec §5.1)."""

    TYPE = "type"  # a type-check hook rejected a value
    PREDICATE = "predicate"  # a pre/post predicate returned a falsy value or raised
    ERROR = "error"  # a hook that is not a check raised (act, the engine)
    UNSATISFIABLE = "unsatisfiable"  # the pre-flight check proved no output can pass


class Verdict(enum.Enum):
    """Answer of the pre-flight satisfiability hook (spec §3.4)."""

    SATISFIABLE = "satisfiable"
    UNSATISFIABLE = "unsatisfiable"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PreflightResult:
    """A pre-flight verdict with the reason shown to the user (e.g. an unsat core)."""

    verdict: Verdict
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Violation:
    """One failed check. ``attempt`` is 0 for the caller's own input, n for the n-th
    engine call of its stage; ``policy`` is the effective policy that governed it."""

    kind: ViolationKind
    phase: Phase
    message: str
    attempt: int
    policy: Policy
    predicate: str | None = None
    family: str | None = None
    error_type: str | None = None

    def describe(self) -> str:
        """One line naming where the violation happened and why."""
        where = self.phase.value
        if self.predicate is not None:
            where += f":{self.predicate}"
        raised = f" ({self.error_type})" if self.error_type else ""
        return f"[{where} attempt {self.attempt}] {self.kind.value}{raised}: {self.message}"


class Attempt(NamedTuple):
    """One engine call: the ``number``-th of its stage's, what it was told
    (``feedback``), what it said (``raw``), and what was wrong with it
    (``violations``; empty when its candidate was accepted)."""

    phase: Phase
    number: int
    raw: object
    feedback: tuple[Violation, ...]
    violations: tuple[Violation, ...]


class Outcome(NamedTuple):
    """The complete record of one call (spec §5); immutable.

    ``success`` is the contract's verdict before ``forward`` runs. ``result`` is the
    validated output on success, else ``None``. ``input_used`` is the input
    ``forward`` receives: the post-act input on success, the original input on
    failure. ``clock_marks`` records when each phase began (``None``: the call
    ended); the kernel appends the ``forward`` and ``result`` marks as they happen.
    """

    success: bool
    result: object
    original_input: object
    input_used: object
    policy: Policy
    violations: tuple[Violation, ...]
    attempts: tuple[Attempt, ...]
    trials: tuple[tuple[str, bool], ...]
    delays: tuple[float, ...]
    usage: Mapping[str, int]
    clock_marks: list[tuple[Phase | None, int]]
    preflight: PreflightResult | None = None
    exception: ContractViolationError | None = None
    handler_error: str | None = None

    @property
    def timings_ns(self) -> dict[str, int]:
        """Nanoseconds spent in each phase that ended (spec §5)."""
        timings: dict[str, int] = {}
        marks = self.clock_marks
        for (phase, start), (_, end) in pairwise(marks):
            if phase is not None:
                timings[phase.value] = timings.get(phase.value, 0) + end - start
        return timings

    @property
    def generation_attempts(self) -> int:
        """Engine calls made by the post stage (generation and post-remedies)."""
        return [a.phase for a in self.attempts].count(Phase.POST)

    @property
    def pre_remedies(self) -> int:
        """Engine calls made by the pre stage (input repairs)."""
        return [a.phase for a in self.attempts].count(Phase.PRE)

    @property
    def post_remedies(self) -> int:
        """Generation attempts after the first one."""
        return max(0, self.generation_attempts - 1)

    def summary(self) -> str:
        """A readable account of the violations, one per line."""
        if self.success:
            return "contract satisfied"
        return "\n".join(v.describe() for v in self.violations) or "contract failed"


def exception_text(error: BaseException, fallback: str | None = None) -> str:
    """``str(error)``; when that is empty or raises, ``fallback``, else a text naming
    the exception's type. Never raises: hooks are foreign code, and an exception
    whose ``__str__`` raises (or returns a non-string) must not crash the call that
    reports it (spec §3)."""
    try:
        text = str(error)
    except Exception:
        text = None
    if text:
        return text
    if fallback is not None:
        return fallback
    return type(error).__name__ + (" (its str() raised)" if text is None else "")


def _picklable(value: object) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def rebuild_error(cls: type[BaseException], args: tuple[object, ...],
                  state: dict[str, object]) -> BaseException:
    """An exception rebuilt from a pickle without calling its ``__init__`` (whose
    signature may differ from ``args``, e.g. keyword-only arguments)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class HoareError(Exception):
    """Root of every exception hoare defines (the whole tree is drawn in ``hoare.errors``).
    It lives in the kernel so that the kernel's own exceptions belong to the tree while
    the kernel imports nothing from the library."""

    def __reduce__(self) -> tuple[object, ...]:
        """Every error crosses a process boundary (``ProcessPoolExecutor``, logging to
        another process): its type, ``args`` and message survive; attributes that cannot
        be pickled are dropped rather than failing the whole error."""
        args = tuple(a if _picklable(a) else str(a) for a in self.args)
        state = {k: v for k, v in vars(self).items() if _picklable(v)}
        return (rebuild_error, (type(self), args, state))


class ContractViolationError(HoareError):
    """Raised by a failed call under ``enforce``/``quick_enforce`` (and, as
    ``ResultTypeError``, when ``forward`` returns the wrong type). Carries the outcome."""

    outcome: Outcome | None

    def __init__(self, message: str, outcome: Outcome | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome

    @property
    def violations(self) -> tuple[Violation, ...]:
        """The violations of the failed call."""
        return () if self.outcome is None else self.outcome.violations


class ResultTypeError(ContractViolationError, TypeError):
    """``forward`` returned a value of the wrong type (spec §3.7)."""
