"""Predicates and their evaluation (spec §3.2).

A predicate fails when it raises or returns a falsy value other than ``None``
(``None`` is what a ``pre`` that only raises returns). All predicates of a phase
are evaluated, without short-circuit, so per-family statistics stay unbiased and
every failing message reaches the corrective prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .config import Policy
from .outcome import Phase, Violation, ViolationKind


@dataclass(frozen=True, slots=True)
class Predicate:
    """A named check ``check(value, context)``; ``context`` is the input actually used
    for post-conditions and ``None`` for pre-conditions. ``policy`` overrides the
    contract's policy for this predicate only."""

    id: str
    check: Callable[[object, object], object]
    message: str
    family: str
    policy: Policy | None = None


def evaluate(
    predicates: Sequence[Predicate],
    value: object,
    context: object,
    phase: Phase,
    attempt: int,
    contract_policy: Policy,
    trials: list[tuple[str, bool]],
) -> tuple[Violation, ...]:
    """Evaluate every non-ignored predicate on ``value``; return the violations.

    Appends one ``(family, passed)`` trial per family evaluated to ``trials``.
    """
    failures: list[Violation] = []
    families: dict[str, bool] = {}
    for predicate in predicates:
        policy = predicate.policy or contract_policy
        if policy is Policy.IGNORE:
            continue
        message = predicate.message
        error_type: str | None = None
        try:
            verdict = predicate.check(value, context)
            passed = verdict is None or bool(verdict)
        except Exception as error:  # a raising predicate is a failing one (spec §3.2)
            passed = False
            message = str(error) or message
            error_type = type(error).__name__
        families[predicate.family] = families.get(predicate.family, True) and passed
        if not passed:
            failures.append(
                Violation(
                    ViolationKind.PREDICATE,
                    phase,
                    message,
                    attempt,
                    policy,
                    predicate.id,
                    predicate.family,
                    error_type,
                )
            )
    trials.extend(families.items())
    return tuple(failures)
