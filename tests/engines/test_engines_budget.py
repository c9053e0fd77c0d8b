"""Budgets refuse before sending, record after answering, and hold under threads."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest
from hostile.generators import outside_numbers
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, completion

from hoare.engines import (
    Budget,
    BudgetedEngine,
    BudgetExceeded,
    EngineError,
    Message,
    MissingPrice,
    Options,
    Price,
    Request,
    Response,
    Spend,
    Usage,
)
from hoare.engines.testing import DummyEngine, FailingEngine


def req(model: str | None = None) -> Request:
    return Request(messages=(Message("user", "hi"),), options=Options(model=model))


def counting(input_tokens: int = 10, output_tokens: int = 4) -> DummyEngine:
    """An engine that counts its calls (``calls``) and answers with fixed token usage."""
    return DummyEngine(Response(("ok",), ("stop",), Usage(1, input_tokens, output_tokens),
                                "counted"), model="counted")


def test_request_cap_is_exact_and_refuses_before_sending() -> None:
    with OpenAIServer(["a", "b", "c"]) as server:
        engine = BudgetedEngine(server.engine(), Budget(max_requests=2))
        engine.complete(req())
        engine.complete(req())
        with pytest.raises(BudgetExceeded) as caught:
            engine.complete(req())
        sent = len(server.bodies)
    assert sent == 2
    assert isinstance(caught.value, EngineError)
    assert "2 requests sent, cap max_requests=2" in str(caught.value)
    assert "not sent" in str(caught.value)
    assert engine.spent()["requests"] == 2


def test_token_caps_refuse_once_reached() -> None:
    script = [completion("a", prompt_tokens=6, completion_tokens=1),
              completion("b", prompt_tokens=6, completion_tokens=1), "never"]
    with OpenAIServer(script) as server:
        engine = BudgetedEngine(server.engine(), Budget(max_input_tokens=10))
        engine.complete(req())  # 6 < 10: the next one may go
        engine.complete(req())  # overshoots to 12; the cap is a stop line, not a forecast
        with pytest.raises(BudgetExceeded, match=r"12 input tokens spent, cap max_input_tokens=10"):
            engine.complete(req())
        sent = len(server.bodies)
    assert sent == 2
    assert engine.spent() == {"requests": 2, "input_tokens": 12, "output_tokens": 2, "cost": 0.0}


def test_output_token_cap() -> None:
    inner = counting(input_tokens=1, output_tokens=50)
    engine = BudgetedEngine(inner, Budget(max_output_tokens=50))
    engine.complete(req())
    with pytest.raises(BudgetExceeded, match="max_output_tokens=50"):
        engine.complete(req())
    assert inner.calls == 1


def test_cost_is_priced_per_model_and_capped() -> None:
    budget = Budget(max_cost=0.01, prices={"counted": Price(1000.0, 2000.0)})
    inner = counting(input_tokens=3, output_tokens=2)  # 3*1000/1e6 + 2*2000/1e6 = 0.007
    engine = BudgetedEngine(inner, budget)
    engine.complete(req())
    assert engine.spent()["cost"] == pytest.approx(0.007)
    engine.complete(req())
    with pytest.raises(BudgetExceeded, match=r"cost 0\.014 spent, cap max_cost=0\.01"):
        engine.complete(req())
    assert inner.calls == 2
    assert engine.spent()["cost"] == pytest.approx(0.014)


def test_unknown_model_with_cost_cap_fails_up_front() -> None:
    with pytest.raises(MissingPrice) as caught:
        BudgetedEngine(counting(), Budget(max_cost=1.0, prices={"other": Price(1, 1)}))
    assert "'counted'" in str(caught.value)
    assert "Price(" in str(caught.value)


def test_wildcard_price_and_per_request_model() -> None:
    budget = Budget(max_cost=1.0, prices={"*": Price(1.0, 1.0), "big": Price(100.0, 100.0)})
    engine = BudgetedEngine(counting(input_tokens=10_000, output_tokens=0), budget)
    engine.complete(req())  # "counted" at the '*' price
    engine.complete(req("big"))
    assert engine.spent()["cost"] == pytest.approx(0.01 + 1.0)


def test_unknown_request_model_with_cost_cap_is_refused_before_sending() -> None:
    inner = counting()
    engine = BudgetedEngine(inner, Budget(max_cost=1.0, prices={"counted": Price(1, 1)}))
    with pytest.raises(MissingPrice, match="'mystery'"):
        engine.complete(req("mystery"))
    assert inner.calls == 0
    assert engine.spent()["requests"] == 0


def test_no_caps_means_no_refusal_and_still_metered() -> None:
    engine = BudgetedEngine(DummyEngine("x"), Budget())
    for _ in range(20):
        engine.complete(req())
    assert engine.spent() == {"requests": 20, "input_tokens": 0, "output_tokens": 0, "cost": 0.0}


def test_concurrent_callers_never_exceed_the_request_cap() -> None:
    inner = counting()
    engine = BudgetedEngine(inner, Budget(max_requests=10))
    refused: list[BudgetExceeded] = []
    barrier = threading.Barrier(40)

    def call() -> None:
        barrier.wait()
        try:
            engine.complete(req())
        except BudgetExceeded as error:
            refused.append(error)

    threads = [threading.Thread(target=call) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert inner.calls == 10
    assert len(refused) == 30
    assert engine.spent()["requests"] == 10
    assert engine.spent()["input_tokens"] == 100


def test_async_budget() -> None:
    inner = counting()
    engine = BudgetedEngine(inner, Budget(max_requests=1))

    async def run() -> None:
        await engine.acomplete(req())
        with pytest.raises(BudgetExceeded):
            await engine.acomplete(req())

    asyncio.run(run())
    assert inner.calls == 1


def test_a_shared_meter_caps_several_engines_together() -> None:
    meter = Budget(max_requests=3).meter()
    first, second = counting(), counting()
    a, b = BudgetedEngine(first, meter), BudgetedEngine(second, meter)
    a.complete(req())
    b.complete(req())
    a.complete(req())
    with pytest.raises(BudgetExceeded):
        b.complete(req())
    assert (first.calls, second.calls) == (2, 1)
    assert isinstance(meter, Spend)
    assert meter.usage == Usage(3, 30, 12)


def test_a_failed_call_still_counts_as_a_request() -> None:
    engine = BudgetedEngine(FailingEngine(EngineError("wire broke")), Budget(max_requests=1))
    with pytest.raises(EngineError, match="wire broke"):
        engine.complete(req())
    with pytest.raises(BudgetExceeded):
        engine.complete(req())


@pytest.mark.parametrize("bad", [{"max_requests": -1}, {"max_cost": -0.5},
                                 {"max_input_tokens": "10"}])
def test_invalid_budgets_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Budget(**bad)  # type: ignore[arg-type]


def test_invalid_price_is_rejected() -> None:
    with pytest.raises(ValueError, match="input_per_million"):
        Price(-1.0, 1.0)


def test_a_request_an_inner_meter_refuses_is_not_counted_by_the_outer_one() -> None:
    inner = counting()
    outer_spend = Spend(Budget(max_requests=10))
    engine = BudgetedEngine(BudgetedEngine(inner, Budget(max_requests=1)), outer_spend)
    engine.complete(req())
    for _ in range(3):
        with pytest.raises(BudgetExceeded):
            engine.complete(req())
    assert inner.calls == 1 and outer_spend.spent()["requests"] == 1

    async def refused() -> None:
        with pytest.raises(BudgetExceeded):
            await engine.acomplete(req())

    asyncio.run(refused())
    assert outer_spend.spent()["requests"] == 1


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["max_requests", "max_input_tokens", "max_output_tokens",
                             "max_cost"]), value=outside_numbers())
def test_a_budget_cap_is_a_count_or_a_cost_or_refused(name: str, value: object) -> None:
    """A count cap is a whole number ≥ 0 (True and 1.5 were taken as caps); the cost cap a
    number ≥ 0 that is not NaN; anything else is a ValueError naming it."""
    try:
        budget = Budget(**{name: value})  # type: ignore[arg-type]  # hostile on purpose
    except ValueError as error:
        assert name in str(error)
        return
    cap = getattr(budget, name)
    if cap is None:  # no cap
        return
    if name == "max_cost":
        assert not isinstance(cap, bool) and isinstance(cap, int | float) and cap >= 0
    else:
        assert type(cap) is int and cap >= 0


@settings(max_examples=200, deadline=None)
@given(prices=st.tuples(*[st.floats(0, 1e308)] * 3),
       counts=st.tuples(*[st.integers(0, 10**12)] * 3))
def test_a_cost_of_finite_prices_is_finite(prices: tuple[float, float, float],
                                            counts: tuple[int, int, int]) -> None:
    """Finite prices of huge counts overflowed to an infinite cost in the meter."""
    price = Price(*prices)
    cost = price.cost(Usage(1, counts[0], counts[1], counts[2]))
    assert math.isfinite(cost) and cost >= 0
    spend = Budget(prices={"*": price}).meter()
    spend.record(Usage(1, counts[0], counts[1], counts[2]), price)
    spend.record(Usage(1, counts[0], counts[1], counts[2]), price)
    assert math.isfinite(spend.spent()["cost"])
