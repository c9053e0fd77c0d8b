"""Delphyne's ``MakeSum`` query on hoare: a typed query held to a contract.

Offline (the default) a ``DummyModel`` answers from ``make_sum.demo.yaml``: its
first answer breaks the post-condition, so the repair loop shows up; the stream
then yields every answer that satisfies the contract. ``--live`` asks a real
model instead (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``HOARE_MODEL``).

``hoare verify examples/`` (``make verify``) checks this query with z3 like a
contract: satisfiable post-conditions, and the input for which no answer exists
(an empty ``allowed`` with a non-zero target) reported as a warning.

Run: ``python examples/make_sum.py`` (offline) or ``--live``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from hoare import Post
from hoare.engines import Engine
from hoare.queries import DummyModel, Query, few_shot, standard_model, with_tags

DEMOS = Path(__file__).with_name("make_sum.demo.yaml")


@dataclass
class MakeSum(Query[list[int]]):
    """Given a list of allowed numbers and a target number, you must find a sub-list
    whose elements sum up to the target. Just answer with a list of numbers as a JSON
    object and nothing else."""

    allowed: list[int]
    target: int

    post_conditions = [
        Post(lambda xs, q: sum(xs) == q.target, "the numbers must sum to the target"),
        Post(lambda xs, q: all(x in q.allowed for x in xs),
             "only numbers from `allowed` may be used"),
    ]


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a != "--live"]
    if unknown:
        print(f"usage: python examples/make_sum.py [--live]  (unknown: {unknown[0]})",
              file=sys.stderr)
        return 2
    engine: Engine
    if "--live" in argv:
        engine = standard_model(os.environ.get("HOARE_MODEL", "gpt-4o-mini"))
    else:
        engine = DummyModel(DEMOS)
    query = MakeSum(allowed=[1, 2, 3, 4], target=5)
    print("run:", query.run(engine))
    for solution in few_shot(query, engine, examples=DEMOS, max_requests=4,
                             select_examples=[with_tags("example")]):
        print(f"solution: {solution.value}  (after {solution.attempts} answer(s); "
              f"{solution.budget['num_requests']} request(s) so far)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
