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
import sys
import threading
from collections import OrderedDict
from typing import Any

from hoare.forking import hold_across_fork
from hoare.queries.query import Query, QueryRuntime, init_fields
from hoare.queries.templates import fields_of

__all__ = ["auto_example_lines", "find_example"]

_CACHE: OrderedDict[tuple[str, str, str | None], tuple[Any, Any]] = OrderedDict()
_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _LOCK)  # free in a forked child
_SIZE = 256


def find_example(query: Query[Any], runtime: QueryRuntime, near_miss: str | None = None
                 ) -> tuple[Any, Any]:
    """(a valid answer or None, a near miss of predicate ``near_miss`` or None), as JSON
    values. ``near_miss`` must be the id of one of the query's post-conditions."""
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
    from hoare.verifier.search import find_examples  # the verifier loads z3: on first use

    try:
        given = runtime.input.model.model_construct(**init_fields(query))
    except Exception:  # no z3 seeds then (an example is an optional help); the search runs
        given = None
    valid, miss = find_examples(runtime.description, runtime.output, given, (query,),
                                near_miss)
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
