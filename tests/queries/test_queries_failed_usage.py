"""What an engine's error says its request cost (a refusal, a filtered answer) reaches a
query call's outcome usage, its stats record and the session's spent budget, as the
answers' usage does: generated sequences of refusals, filtered and valid answers with
random usages, sync and async (spec/pipeline.md §8.12)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.contracts import configuration
from hoare.engines.base import ContentFiltered, Message, ModelRefusal, Request, Response, Usage
from hoare.queries import Query, afew_shot, few_shot
from hoare.queries.policies import outcome_of

TRIES = 4


@dataclass
class Pick(Query[int]):
    """Pick a number."""

    n: int


class Scripted:
    """An engine answering from a script: a refusal, a filtered answer or ``"7"``, each
    with its usage."""

    def __init__(self, script: list[tuple[str, Usage]]) -> None:
        self.script = list(script)

    def complete(self, request: Request) -> Response:
        kind, usage = self.script.pop(0)
        if kind == "refusal":
            raise ModelRefusal("refused", refusal="no", usage=usage)
        if kind == "filtered":
            raise ContentFiltered("filtered", usage=usage)
        return Response(texts=("7",), usage=usage)

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


class Records:
    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []

    def record(self, record: tuple[Any, ...]) -> None:
        self.records.append(record)


USAGES = st.builds(Usage, st.just(1), st.integers(0, 10**6), st.integers(0, 10**6))
ANSWERS = st.lists(st.tuples(st.sampled_from(["refusal", "filtered", "valid"]), USAGES),
                   min_size=0, max_size=TRIES - 1)


def _tokens(usage: Any) -> tuple[int, int, int]:
    return (usage.get("requests", 0), usage.get("input_tokens", 0),
            usage.get("output_tokens", 0))


def _expected(script: list[tuple[str, Usage]]) -> Usage:
    """What the first kernel call sends: up to its first valid answer."""
    total = Usage()
    for kind, usage in script:
        total = total + usage
        if kind == "valid":
            break
    return total


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answers=ANSWERS, last=USAGES, asynchronous=st.booleans())
def test_a_query_calls_usage_sums_its_answers_and_errors(
        monkeypatch: pytest.MonkeyPatch, answers: list[tuple[str, Usage]], last: Usage,
        asynchronous: bool) -> None:
    script = [*answers, ("valid", last)]
    expected = _expected(script)
    store = Records()
    monkeypatch.setattr(configuration, "stats_store", lambda: store)
    if asynchronous:
        async def first() -> Any:
            async for solution in afew_shot(Pick(1), Scripted(script), tries=TRIES):
                return solution
            return None

        solution = asyncio.run(first())
    else:
        solution = next(few_shot(Pick(1), Scripted(script), tries=TRIES))
    assert solution is not None and solution.value == 7
    want = (expected.requests, expected.input_tokens, expected.output_tokens)
    assert _tokens(solution.outcome.usage) == want
    assert (solution.budget["num_requests"], solution.budget["input_tokens"],
            solution.budget["output_tokens"]) == want
    (record,) = store.records
    assert (record[9], record[10]) == want[1:]


@settings(max_examples=30, deadline=None)
@given(answers=st.lists(st.tuples(st.sampled_from(["refusal", "filtered"]), USAGES),
                        min_size=TRIES, max_size=TRIES))
def test_a_failed_query_calls_outcome_counts_every_refusal(
        answers: list[tuple[str, Usage]]) -> None:
    outcome = outcome_of(Pick(1), Scripted(answers), tries=TRIES)
    assert not outcome.success
    total = sum((usage for _, usage in answers), Usage())
    assert _tokens(outcome.usage) == (total.requests, total.input_tokens,
                                      total.output_tokens)


class Refusing:
    """An engine whose every answer is a refusal (or a filtered answer) with usage."""

    model = "m"

    def __init__(self, usages: list[tuple[bool, Usage]]) -> None:
        self.usages = list(usages)

    def complete(self, request: Request) -> Response:
        refused, usage = self.usages.pop(0)
        if refused:
            raise ModelRefusal("refused", refusal="no", usage=usage)
        raise ContentFiltered("filtered", usage=usage)

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


@given(usages=st.lists(st.tuples(st.booleans(), st.builds(
    Usage, st.just(1), st.integers(0, 1000), st.integers(0, 100), st.integers(0, 1000))),
    min_size=1, max_size=5), asynchronous=st.booleans())
def test_a_query_budget_counts_what_refusals_spent(
        usages: list[tuple[bool, Usage]], asynchronous: bool) -> None:
    """Every meter of a Delphyne budget counts a refusal's usage: requests and tokens
    (the hoare meters) and cached input tokens (``cached_input_tokens``'s cap)."""
    from hoare.queries import budget_from_limits

    budget = budget_from_limits({"num_requests": 100})
    engine = budget.engine(Refusing(usages))
    for _ in usages:
        request = Request(messages=(Message("user", "hi"),))
        with pytest.raises((ModelRefusal, ContentFiltered)):
            if asynchronous:
                asyncio.run(engine.acomplete(request))
            else:
                engine.complete(request)
    total = sum((usage for _, usage in usages), Usage())
    spent = budget.spent()
    assert (spent["num_requests"], spent["input_tokens"], spent["output_tokens"],
            spent["cached_input_tokens"]) == (total.requests, total.input_tokens,
                                              total.output_tokens, total.cached_input_tokens)
    assert spent["num_completions"] == 0


class Empty:
    """An engine answering no completion (paid for), then ``"7"``."""

    def __init__(self, empty: Usage, valid: Usage) -> None:
        self.script = [Response(texts=(), usage=empty), Response(texts=("7",), usage=valid)]

    def complete(self, request: Request) -> Response:
        return self.script.pop(0)

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


@given(USAGES, USAGES)
def test_an_empty_answers_usage_is_in_the_outcome(empty: Usage, valid: Usage) -> None:
    solution = next(few_shot(Pick(1), Empty(empty, valid), tries=TRIES))
    total = empty + valid
    want = (total.requests, total.input_tokens, total.output_tokens)
    assert _tokens(solution.outcome.usage) == want
    assert (solution.budget["num_requests"], solution.budget["input_tokens"],
            solution.budget["output_tokens"]) == want
