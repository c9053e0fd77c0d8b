"""Examples of valid answers for ``examples="auto"`` (``hoare.queries``): a value of the
output type that pydantic accepts and every post-condition accepts, called for real,
and a *near miss* that breaks exactly one named post-condition.

z3 proposes seeds for the given input (its fields bound to their values); the concrete
search (``falsify``) replays every candidate in Python, so an example is never a guess:
nothing is returned when nothing was found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["find_examples"]


def _z3_seeds(description: Any, given: Any, near_miss: str | None) -> list[Any]:
    """Answers z3 finds for this input: one that passes every translated post-condition
    and, with ``near_miss``, one that fails that one and passes the others. Seeds only:
    ``find_examples`` replays them for real. None as ``given``: no seeds."""
    if given is None:
        return []
    try:
        import z3

        from hoare.verifier.checks.model import (
            contract_model,
            model_value,
            predicate_assertions,
            type_assertions,
        )
        from hoare.verifier.search.concrete import bind
        from hoare.verifier.solve.context import fresh
        from hoare.verifier.solve.solver import Assertion, SolverOptions, solve

        options = SolverOptions(timeout_ms=500, rlimit=2_000_000)
        out: list[Any] = []
        with fresh():  # a context of its own: no verdict depends on this (solve.context)
            cm = contract_model(description, None)
            base = type_assertions(cm.output) + type_assertions(cm.used) + [
                Assertion(None, e, "def") for e in bind(cm.used.value, given)]
            goals = [predicate_assertions(cm.post)]
            if near_miss is not None:
                target = [t for t in cm.post if t.source.id == near_miss]
                others = [t for t in cm.post if t.source.id != near_miss]
                if target and target[0].opaque is None:
                    fails = z3.Or([c.cond for c in target[0].cases] or [z3.BoolVal(False)])
                    goals.append(predicate_assertions(others) + [
                        Assertion(None, d, "def") for d in target[0].defs] + [
                        Assertion("near miss", fails, "goal")])
            for goal in goals:
                found = solve(base + goal, options)
                if found.status == "sat" and found.model is not None:
                    out.append(model_value(cm.output, found.model))
        return out
    except Exception:  # an example is an optional help: no example rather than an error
        return []


def find_examples(description: Any, output: Any, given: Any, used: Sequence[Any],
                  near_miss: str | None = None) -> tuple[Any, Any]:
    """(a valid answer or None, a near miss of post-condition ``near_miss`` or None), as
    JSON values. ``description`` is the contract's, ``output`` its output spec, ``given``
    the input as the model sees it (None: no z3 seeds), ``used`` what the
    post-conditions receive as the input; ``near_miss``, when given, is the id of one of
    the post-conditions."""
    from hoare.verifier.search.candidates import constants_of
    from hoare.verifier.search.falsify import VERIFY_BUDGET, find_passing, search
    from hoare.verifier.search.witness import call_predicate

    posts = list(description.post)
    constants = constants_of(posts, *used)
    seeds = _z3_seeds(description, given, near_miss)
    found = find_passing(output, posts, None, used=tuple(used), seeds=seeds,
                         constants=constants, budget=VERIFY_BUDGET, from_json=True)
    valid = None if found is None else found.value
    miss = None
    if near_miss is not None:
        target = next(p for p in posts if p.id == near_miss)
        others = [p for p in posts if p is not target]

        def accept(value: Any, input_used: Any) -> bool:
            return (not call_predicate(target, None, value, input_used).passed
                    and all(call_predicate(p, None, value, input_used).passed
                            for p in others))
        hit = search(output, accept, tuple(used), seeds, constants, VERIFY_BUDGET, True)
        miss = None if hit is None else hit.value
    return valid, miss
