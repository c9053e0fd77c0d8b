"""Inside a call of an instance (its forward, predicates), ``contract_outcome`` and the
properties built on it answer from the call itself (``CURRENT_CALL``) instead of the
instance's per-context ``Latest``: a shortcut that must give exactly what ``Latest``
gives. Random programs of nested calls of two instances, each reading both instances'
outcomes before, between and after nested calls, check the shortcut against the
``Latest`` lookup at every read."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine
from hoare.kernel import Outcome

FAST = {"delay": 0, "jitter": 0, "tries": 1}


class Number(LLMDataModel):
    n: int


def latest_lookup(instance: object) -> Outcome | None:
    """What ``Latest`` says is ``instance``'s latest outcome in this context."""
    latest = vars(instance).get("_hoare_latest_value")
    if latest is None:
        return None
    found = latest.get()
    return None if found is None else found.outcome


# a program: per nesting level, the steps forward takes ("read", or a call of 0 or 1)
step = st.sampled_from(["read", "call0", "call1", "task"])
programs = st.lists(st.lists(step, max_size=4), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.lists(st.booleans(), min_size=8, max_size=8))
def test_outcome_inside_a_call_is_the_latest_lookup(program: list[list[str]],
                                                    passes: list[bool]) -> None:
    mismatches: list[str] = []
    answers = iter(passes * 50)

    def engine_fn(request: Any) -> str:
        return '{"n": 1}' if next(answers) else '{"n": -1}'

    instances: list[Any] = []

    def check(where: str) -> None:
        for index, instance in enumerate(instances):
            for name in ("contract_outcome",):
                shown = getattr(instance, name)
                if shown is not latest_lookup(instance):
                    mismatches.append(f"{where}: instance {index} {name}")

    def make(index: int) -> Any:
        @contract(remedy_retry_params=FAST)
        class Nested(Contract[Number, Number]):
            prompt = "n"

            def post(self, output: Number) -> bool:
                check(f"post of {index}")
                return output.n > 0

            def forward(self, input: Number, depth: int = 0) -> Number:
                check(f"forward of {index} at depth {depth}, entry")
                for what in (program[depth] if depth < len(program) else []):
                    if what == "read":
                        check(f"forward of {index} at depth {depth}")
                    elif what == "task":
                        async def later() -> None:
                            check(f"task in {index} at {depth}")
                        asyncio.run(later())  # a new loop: the context is copied
                    else:
                        other = instances[int(what[-1])]
                        if depth + 1 < len(program):
                            other(Number(n=depth), depth=depth + 1)
                        check(f"forward of {index} at {depth}, after {what}")
                return input if not self.contract_successful else self.contract_result

        return Nested(engine=FunctionEngine(engine_fn))

    instances.extend([make(0), make(1)])
    instances[0](Number(n=0))
    check("outside, after")
    assert mismatches == []
