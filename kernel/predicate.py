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
from .outcome import Phase, Violation, ViolationKind, exception_text


@dataclass(frozen=True, slots=True)
class Predicate:
    """A named check ``check(value, context)``, or ``check(value)`` when
    ``uses_context`` is false; ``context`` is the input actually used for
    post-conditions and ``None`` for pre-conditions. ``policy`` overrides the
    contract's policy for this predicate only."""

    id: str
    check: Callable[..., object]
    message: str
    family: str
    policy: Policy | None = None
    uses_context: bool = True


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
        family = predicate.family
        try:
            verdict = predicate.check(value, context) if predicate.uses_context \
                else predicate.check(value)
            if verdict is None or verdict:
                if family not in families:
                    families[family] = True
                continue
            message, error_type = predicate.message, None
        except Exception as error:  # a raising predicate is a failing one (spec §3.2)
            message = exception_text(error, predicate.message)
            error_type = type(error).__name__
        families[family] = False
        failures.append(Violation(ViolationKind.PREDICATE, phase, message, attempt, policy,
                                  predicate.id, family, error_type))
    trials.extend(families.items())
    return tuple(failures)
