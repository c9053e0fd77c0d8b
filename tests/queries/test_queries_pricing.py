"""Delphyne's budget keys mapped onto hoare's meters, model pricing, ``standard_model``."""

from __future__ import annotations

import asyncio
import threading

import pytest

from hoare.engines.base import BudgetExceeded, Message, Options, Request, Response, Usage
from hoare.engines.budget import MissingPrice, Price
from hoare.queries import (
    KNOWN_PRICING,
    ModelPricing,
    budget_entry,
    budget_from_limits,
    pricing_for,
    standard_model,
)


class Scripted:
    """An engine answering n texts and fixed usage; counts what reached it."""

    def __init__(self, model: str = "m", input_tokens: int = 100, output_tokens: int = 10,
                 cached: int = 0) -> None:
        self.model = model
        self.usage = Usage(1, input_tokens, output_tokens, cached)
        self.sent = 0
        self.lock = threading.Lock()

    def complete(self, request: Request) -> Response:
        with self.lock:
            self.sent += 1
        return Response(texts=("x",) * max(1, request.options.n), usage=self.usage)

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


def _request(n: int = 1) -> Request:
    return Request(messages=(Message("user", "hi"),), options=Options(n=n))


def test_keys_are_parsed_and_bad_ones_named() -> None:
    assert budget_entry("num_requests") == "num_requests"
    assert budget_entry("price", "large") == "price__large"
    with pytest.raises(ValueError, match="unknown budget category 'tokens'"):
        budget_entry("tokens")
    for bad in ("num_request", "price__", "tokens__x", 3):
        with pytest.raises(ValueError, match="budget key"):
            budget_from_limits({bad: 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="number >= 0"):
        budget_from_limits({"num_requests": -1})


def test_pricing_prefix_lookup() -> None:
    assert pricing_for("gpt-4o-2024-08-06") == KNOWN_PRICING["gpt-4o"]
    assert pricing_for("gpt-4o-mini-2024-07-18") == KNOWN_PRICING["gpt-4o-mini"]
    assert pricing_for("gpt-4o") == KNOWN_PRICING["gpt-4o"]
    assert pricing_for("gpt-4omni") is None and pricing_for("llama") is None
    with pytest.raises(ValueError):
        ModelPricing(-1.0, 0.0, 0.0)


def test_cost_charges_cached_input_at_its_own_price() -> None:
    pricing = ModelPricing(2.0, 0.5, 8.0)
    usage = Usage(1, 1_000_000, 1_000_000, 400_000)
    assert pricing.cost(usage) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 8.0)
    assert Price(2.0, 8.0).cost(usage) == pytest.approx(2.0 + 8.0)  # no cached price given
    assert Price(2.0, 8.0, 0.5).cost(Usage(1, 10, 0, 50)) == pytest.approx(10 * 0.5 / 1e6)


def test_requests_count_globally_and_per_model_class() -> None:
    budget = budget_from_limits({"num_requests": 4, "num_requests__small": 2})
    small = budget.engine(Scripted("s"), model_class="small")
    large = budget.engine(Scripted("l"), model_class="large")
    small.complete(_request())
    small.complete(_request())
    with pytest.raises(BudgetExceeded):
        small.complete(_request())
    large.complete(_request())
    large.complete(_request())
    with pytest.raises(BudgetExceeded):  # the global cap: 4 sent
        large.complete(_request())
    spent = budget.spent()
    assert spent["num_requests"] == 4
    assert spent["num_requests__small"] == 2 and spent["num_requests__large"] == 2


def test_completions_are_refused_before_sending() -> None:
    inner = Scripted()
    engine = budget_from_limits({"num_completions": 5}).engine(inner)
    engine.complete(_request(n=3))
    with pytest.raises(BudgetExceeded, match="num_completions"):
        engine.complete(_request(n=3))
    assert inner.sent == 1
    engine.complete(_request(n=2))
    assert inner.sent == 2


def test_price_and_tokens_caps() -> None:
    budget = budget_from_limits({"price": 0.001, "output_tokens": 1000})
    with pytest.raises(MissingPrice, match="'m'"):
        budget.engine(Scripted())
    inner = Scripted(input_tokens=200, output_tokens=10)
    engine = budget.engine(inner, pricing=ModelPricing(1.0, 1.0, 1.0))
    for _ in range(4):
        engine.complete(_request())  # 210 tokens at $1/M each: $0.00021 a call
    with pytest.raises(BudgetExceeded):
        for _ in range(10):
            engine.complete(_request())
    spent = budget.spent()
    assert spent["price"] <= 0.001 + 210e-6  # at most one request's overshoot
    assert spent["output_tokens"] == 10 * spent["num_requests"]


def test_cached_tokens_are_counted_and_capped() -> None:
    budget = budget_from_limits({"cached_input_tokens": 100})
    engine = budget.engine(Scripted(cached=60))
    engine.complete(_request())
    engine.complete(_request())
    with pytest.raises(BudgetExceeded, match="cached_input_tokens"):
        engine.complete(_request())
    assert budget.spent()["cached_input_tokens"] == 120


def test_many_threads_never_overspend_requests() -> None:
    budget = budget_from_limits({"num_requests": 25, "num_completions": 40})
    inner = Scripted()
    engine = budget.engine(inner, model_class="c")
    barrier = threading.Barrier(8)
    refused = []

    def work() -> None:
        barrier.wait()
        for _ in range(10):
            try:
                engine.complete(_request(n=1))
            except BudgetExceeded:
                refused.append(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inner.sent == 25 and len(refused) == 80 - 25
    assert budget.spent()["num_requests__c"] == 25


def test_async_use() -> None:
    budget = budget_from_limits({"num_requests": 3})
    engine = budget.engine(Scripted())

    async def main() -> list[object]:
        return await asyncio.gather(*(engine.acomplete(_request()) for _ in range(5)),
                                    return_exceptions=True)

    results = asyncio.run(main())
    assert sum(isinstance(r, BudgetExceeded) for r in results) == 2


def test_standard_model_resolves_pricing_without_network() -> None:
    model = standard_model("gpt-4o-mini-2024-07-18", api_key="k",
                           base_url="http://127.0.0.1:9/v1")
    assert model.pricing == KNOWN_PRICING["gpt-4o-mini"]
    assert model.cost(Usage(1, 1_000_000, 0)) == pytest.approx(0.15)
    local = standard_model("my-local-model", base_url="http://127.0.0.1:9/v1", api_key="k",
                           model_class="small", pricing=None)
    assert local.pricing is None and local.cost(Usage()) is None
    assert local.model_class == "small" and local.inner.model == "my-local-model"
    with pytest.raises(TypeError, match="pricing"):
        standard_model("x", pricing="cheap", api_key="k")  # type: ignore[arg-type]


def test_every_standard_model_of_delphyne_has_a_price() -> None:
    """Delphyne's table at e451493: every ``StandardModelName`` is priced, by its exact
    name and as a dated snapshot of it; the families are all there."""
    from hoare.queries.pricing import (
        DEEPSEEK_MODELS,
        GEMINI_MODELS,
        MISTRAL_MODELS,
        OPENAI_MODELS,
        STANDARD_MODELS,
    )

    assert {"gpt-5.1", "gpt-5.2", "gpt-5-pro"} <= set(STANDARD_MODELS)
    assert MISTRAL_MODELS and DEEPSEEK_MODELS and GEMINI_MODELS and OPENAI_MODELS
    assert set(STANDARD_MODELS) == set(KNOWN_PRICING)
    for name in STANDARD_MODELS:
        assert pricing_for(name) is KNOWN_PRICING[name], name
        assert pricing_for(f"{name}-2099-01-01") is KNOWN_PRICING[name], name
        price = KNOWN_PRICING[name]
        assert 0 <= price.dollars_per_million_cached_input <= price.dollars_per_million_input
        assert price.dollars_per_million_output > 0
    assert pricing_for("gpt-5.2").dollars_per_million_output == 14.00
    assert pricing_for("deepseek-reasoner").dollars_per_million_input == 0.55
    assert pricing_for("gemini-2.5-flash-lite") == ModelPricing(0.10, 0.025, 0.40)
