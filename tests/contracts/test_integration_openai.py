"""Contracts driving the real ``openai`` client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest
from openai_server import OpenAIServer, completion, error

from hoare import Contract, ContractViolationError, Field, LLMDataModel, Post, contract
from hoare.engines import Budget, BudgetExceeded, Price, RequestRejected
from hoare.kernel import ViolationKind

FAST = {"delay": 0, "jitter": 0, "tries": 3}


class Ticket(LLMDataModel):
    title: str = Field(description="the ticket title")
    body: str = Field(description="what the customer wrote")


class Triage(LLMDataModel):
    priority: int = Field(ge=1, le=4, description="1 = urgent … 4 = whenever")
    team: str = Field(description="the team that owns the issue")


FALLBACK = Triage(priority=4, team="inbox")


class _TriageBase(Contract):
    prompt = "Triage the support ticket: choose a priority and the owning team."
    post_conditions = [Post(lambda t, ticket: t.priority == 1 or "outage" not in ticket.body,
                            "an outage is always priority 1")]

    def forward(self, ticket: Ticket) -> Triage:
        return self.contract_result if self.contract_successful else FALLBACK  # type: ignore


@contract(remedy_retry_params=FAST)
class TriageObserve(_TriageBase):
    pass


@contract(remedy_retry_params=FAST, policy="enforce")
class TriageEnforce(_TriageBase):
    pass


OUTAGE = Ticket(title="site down", body="total outage since 9am")
GOOD = json.dumps({"priority": 1, "team": "sre"})
WRONG = json.dumps({"priority": 3, "team": "sre"})


def test_happy_path_sends_the_schema_and_returns_the_typed_result() -> None:
    with OpenAIServer([completion(GOOD, prompt_tokens=120, completion_tokens=9)]) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE) == Triage(priority=1, team="sre")
        (body,) = server.bodies
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["priority"][
        "maximum"] == 4
    assert body["messages"][0]["role"] == "system"
    assert "total outage since 9am" in body["messages"][1]["content"]
    assert triage.contract_outcome.usage == {"requests": 1, "input_tokens": 120,
                                             "output_tokens": 9}


def test_async_happy_path() -> None:
    with OpenAIServer([GOOD, GOOD]) as server:
        triage = TriageObserve(engine=server.engine())

        async def main() -> list[Triage]:
            return list(await asyncio.gather(triage.acall(OUTAGE), triage.acall(OUTAGE)))

        assert asyncio.run(main()) == [Triage(priority=1, team="sre")] * 2
        assert len(server.bodies) == 2


def test_post_condition_failure_is_repaired_on_retry() -> None:
    with OpenAIServer([WRONG, GOOD]) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE).priority == 1
        second = server.bodies[1]["messages"][-1]["content"]
    assert "an outage is always priority 1" in second and WRONG in second
    assert triage.contract_outcome.generation_attempts == 2


def test_malformed_json_is_repaired() -> None:
    with OpenAIServer(['{"priority": 1, "team": ', "```json\n" + GOOD + "\n```"]) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE).team == "sre"
        assert "not a valid Triage" in server.bodies[1]["messages"][-1]["content"]
    first = triage.contract_outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.TYPE


def test_rate_limits_and_server_errors_are_retried_below_the_contract() -> None:
    sleeps: list[float] = []
    script = [error(429, "slow down", retry_after=1.5), error(500, "oops"), GOOD]
    with OpenAIServer(script) as server:
        triage = TriageObserve(engine=server.engine(sleeps=sleeps))
        assert triage(OUTAGE).priority == 1
        assert len(server.bodies) == 3
    assert sleeps[0] == 1.5  # Retry-After honoured
    assert triage.contract_outcome.generation_attempts == 1  # transport retries are not attempts


def test_exhaustion_falls_back_under_observe_and_raises_under_enforce() -> None:
    with OpenAIServer([WRONG] * 3) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE) == FALLBACK
        assert len(server.bodies) == 3
    assert not triage.contract_successful
    assert triage.contract_exception is not None
    with OpenAIServer([WRONG] * 3) as server:
        strict = TriageEnforce(engine=server.engine())
        with pytest.raises(ContractViolationError, match="an outage is always priority 1"):
            strict(OUTAGE)
        assert len(server.bodies) == 3


def test_budget_cap_stops_the_remedy_loop_before_sending() -> None:
    with OpenAIServer([WRONG] * 3) as server:
        triage = TriageObserve(engine=server.engine(), budget=Budget(max_requests=2))
        assert triage(OUTAGE) == FALLBACK
        assert len(server.bodies) == 2  # the third request was never sent
    outcome = triage.contract_outcome
    assert outcome.generation_attempts == 3 and len(outcome.delays) == 2
    last = outcome.attempts[-1].violations[0]
    assert last.error_type == BudgetExceeded.__name__
    assert triage.contract_perf_stats()["contract_outcome"]["spend"]["requests"] == 2


def test_cost_cap_with_prices() -> None:
    prices = {"test-model": Price(input_per_million=1_000_000, output_per_million=0)}
    with OpenAIServer([completion(WRONG, prompt_tokens=3), GOOD]) as server:
        triage = TriageObserve(engine=server.engine(),
                               budget=Budget(max_cost=2.0, prices=prices))
        assert triage(OUTAGE) == FALLBACK  # 3 input tokens cost 3.0 > 2.0: no second request
        assert len(server.bodies) == 1
    assert triage.contract_perf_stats()["contract_outcome"]["spend"]["cost"] == pytest.approx(3.0)


def test_a_rejected_request_is_not_retried_by_remedies() -> None:
    with OpenAIServer([error(401, "bad key")]) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE) == FALLBACK
        assert len(server.bodies) == 1
    (violation,) = triage.contract_outcome.violations
    assert violation.error_type == RequestRejected.__name__ and "401" in violation.message
    assert triage.contract_outcome.delays == ()


def test_server_without_structured_output_still_works() -> None:
    with OpenAIServer([GOOD], reject_response_format=True) as server:
        triage = TriageObserve(engine=server.engine())
        assert triage(OUTAGE).priority == 1
        assert "response_format" not in server.bodies[-1]
