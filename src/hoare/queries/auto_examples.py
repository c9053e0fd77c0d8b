"""``examples="auto"``: show the model a valid answer, found by the verifier, instead of a
hand-written demonstration file.

The example is an answer of the query's type that pydantic accepts and every
post-condition accepts, called for real on this query (the verifier's concrete
search, seeded with the answers z3 finds for this query's fields); a *near miss* passes
every post-condition but the one named, so the model sees the boundary. Nothing is
shown when no such value is found: an example is never a guess.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from hoare.queries.query import Query, QueryRuntime, init_fields
from hoare.queries.templates import fields_of

__all__ = ["auto_example_lines", "find_example"]

_CACHE: OrderedDict[tuple[str, str, str | None], tuple[Any, Any]] = OrderedDict()
_LOCK = threading.Lock()
_SIZE = 256


def _z3_answers(query: Query[Any], runtime: QueryRuntime, near_miss: str | None
                ) -> list[Any]:
    """Answers z3 finds for *this* query (its fields bound to their values): one that
    passes every translated post-condition and, with ``near_miss``, one that fails that
    one and passes the others. Seeds only: ``find_example`` replays them for real."""
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

        fields = init_fields(query)
        options = SolverOptions(timeout_ms=500, rlimit=2_000_000)
        out: list[Any] = []
        with fresh():  # a context of its own: no verdict depends on this (z3_context)
            cm = contract_model(runtime.description, None)
            given = runtime.input.model.model_construct(**fields)
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


def find_example(query: Query[Any], runtime: QueryRuntime, near_miss: str | None = None
                 ) -> tuple[Any, Any]:
    """(a valid answer or None, a near miss of predicate ``near_miss`` or None), as JSON
    values. ``near_miss`` must be the id of one of the query's post-conditions."""
    from hoare.verifier.search.candidates import constants_of
    from hoare.verifier.search.falsify import VERIFY_BUDGET, find_passing, search
    from hoare.verifier.search.witness import call_predicate

    posts = list(runtime.description.post)
    if near_miss is not None and near_miss not in {p.id for p in posts}:
        raise ValueError(f"near_miss={near_miss!r} is not a post-condition of "
                         f"{type(query).__name__}; its ids are {[p.id for p in posts]}")
    key = (runtime.description.name, json.dumps(fields_of(query), sort_keys=True,
                                                default=str), near_miss)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    spec = runtime.output
    constants = constants_of(posts, query)
    seeds = _z3_answers(query, runtime, near_miss)
    found = find_passing(spec, posts, None, used=(query,), seeds=seeds, constants=constants,
                         budget=VERIFY_BUDGET, from_json=True)
    valid = None if found is None else found.value
    miss = None
    if near_miss is not None:
        target = next(p for p in posts if p.id == near_miss)
        others = [p for p in posts if p is not target]

        def accept(value: Any, used: Any) -> bool:
            return (not call_predicate(target, None, value, used).passed
                    and all(call_predicate(p, None, value, used).passed for p in others))
        hit = search(spec, accept, (query,), seeds, constants, VERIFY_BUDGET, True)
        miss = None if hit is None else hit.value
    with _LOCK:
        _CACHE[key] = (valid, miss)
        while len(_CACHE) > _SIZE:
            _CACHE.popitem(last=False)
    return valid, miss


def auto_example_lines(query: Query[Any], runtime: QueryRuntime, near_miss: str | None
                       ) -> list[str]:
    """The system prompt's example paragraphs (none when nothing was found)."""
    valid, miss = find_example(query, runtime, near_miss)
    if runtime.output.wrapped:  # shown as the schema in the prompt asks: {"value": ...}
        valid = None if valid is None else {"value": valid}
        miss = None if miss is None else {"value": miss}
    lines = []
    if valid is not None:
        lines.append("An example of an answer with the right format that satisfies every "
                     f"condition:\n{json.dumps(valid, ensure_ascii=False)}")
    if miss is not None:
        target = next(p for p in runtime.description.post if p.id == near_miss)
        lines.append(f"An answer that would be rejected, because it breaks "
                     f"\"{target.message}\":\n{json.dumps(miss, ensure_ascii=False)}")
    return lines
