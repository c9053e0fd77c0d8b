"""Helpers shared by the verifier's differential tests: a predicate as the translator
sees it, and what z3 says a translated predicate can do on one concrete value."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from hoare.declaration.description import PredicateSource
from hoare.verifier.translate.predicates import Translation


def predicate_source(fn: Callable[..., object]) -> PredicateSource:
    """``fn`` as a pre-condition named ``p`` (no input parameter, not a method)."""
    return PredicateSource("p", "p", "the predicate", fn, "pre", False, False, None)


def z3_verdicts(translation: Translation, bindings: Sequence[z3.BoolRef],
                timeout_ms: int = 10_000) -> tuple[bool, bool]:
    """(can pass, can fail) of ``translation`` with its inputs fixed by ``bindings``;
    an undecided query fails the test (it would check nothing)."""
    answers = []
    for goal in (translation.passes(), translation.fails()):
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*bindings, *translation.defs, goal)
        answer = solver.check()
        assert answer != z3.unknown, solver.reason_unknown()
        answers.append(answer == z3.sat)
    return answers[0], answers[1]
