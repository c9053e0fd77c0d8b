"""Budgets under load: a shared cap is never overspent by concurrency.

The rule: a request reserves (atomically) one request and a worst-case bound of its
tokens and cost before it is sent, and settles with the real usage after. Many threads
or tasks sharing one meter then spend at most what one caller alone would: the cap,
plus at most the overshoot of the last request admitted alone.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from hoare.engines import (
    Budget,
    BudgetedEngine,
    BudgetExceeded,
    EngineError,
    Message,
    Options,
    Price,
    Request,
    Response,
    Spend,
    TransportRetry,
    Usage,
)
from hoare.engines.budget import request_bound
from hoare.engines.transport import Failure

PROMPT = "x" * 40  # a 40-byte prompt: 48 tokens at worst, 12 in this engine's accounting


def req(max_tokens: int | None = None) -> Request:
    return Request(messages=(Message("user", PROMPT),), options=Options(max_tokens=max_tokens))


class Slow:
    """An honest engine: usage within the worst-case bound, a little latency to overlap."""

    model = "slow"

    def __init__(self, input_tokens: int = 12, output_tokens: int = 5,
                 fail_every: int = 0) -> None:
        self.usage = Usage(1, input_tokens, output_tokens)
        self.calls = 0
        self.fail_every = fail_every
        self._lock = threading.Lock()

    def _count(self) -> int:
        with self._lock:
            self.calls += 1
            return self.calls

    def complete(self, request: Request) -> Response:
        n = self._count()
        time.sleep(0.002)
        if self.fail_every and n % self.fail_every == 0:
            raise EngineError("flaky")
        return Response(("ok",), ("stop",), self.usage, self.model)

    async def acomplete(self, request: Request) -> Response:
        n = self._count()
        await asyncio.sleep(0.002)
        if self.fail_every and n % self.fail_every == 0:
            raise EngineError("flaky")
        return Response(("ok",), ("stop",), self.usage, self.model)


def hammer(engine: BudgetedEngine, request: Request, threads: int = 32,
           per_thread: int = 6) -> tuple[int, int]:
    """Call ``engine`` from many threads until refused; returns (answers, refusals)."""
    answers = refusals = 0
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work() -> None:
        nonlocal answers, refusals
        start.wait()
        for _ in range(per_thread):
            try:
                engine.complete(request)
                outcome = "answer"
            except BudgetExceeded:
                outcome = "refused"
            except EngineError:
                continue
            with lock:
                if outcome == "answer":
                    answers += 1
                else:
                    refusals += 1

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return answers, refusals


def test_input_token_cap_holds_under_32_threads() -> None:
    spend = Spend(Budget(max_input_tokens=120))
    answers, refusals = hammer(BudgetedEngine(Slow(), spend), req())
    spent = spend.spent()["input_tokens"]
    assert 120 <= spent <= 120 + 12, spent  # one caller alone would stop at 120
    assert answers == spent // 12 and refusals > 0


def test_output_token_cap_with_max_tokens_holds_under_32_threads() -> None:
    spend = Spend(Budget(max_output_tokens=50))
    hammer(BudgetedEngine(Slow(output_tokens=5), spend), req(max_tokens=5))
    assert 50 <= spend.spent()["output_tokens"] <= 55


def test_output_token_cap_without_max_tokens_serialises_and_holds() -> None:
    spend = Spend(Budget(max_output_tokens=50))
    hammer(BudgetedEngine(Slow(output_tokens=5), spend), req(), threads=16, per_thread=4)
    assert 50 <= spend.spent()["output_tokens"] <= 55


def test_cost_cap_holds_under_32_threads() -> None:
    budget = Budget(max_cost=1.0, prices={"*": Price(20_000.0, 40_000.0)})  # 12·0.02+5·0.04
    spend = Spend(budget)
    hammer(BudgetedEngine(Slow(), spend), req(max_tokens=5))
    per_call = 12 * 0.02 + 5 * 0.04
    assert 1.0 <= spend.spent()["cost"] <= 1.0 + per_call + 1e-9


def test_request_cap_is_exact_under_32_threads() -> None:
    spend = Spend(Budget(max_requests=37))
    engine = Slow()
    answers, _ = hammer(BudgetedEngine(engine, spend), req())
    assert answers == engine.calls == spend.spent()["requests"] == 37


def test_failed_calls_release_their_reservation() -> None:
    spend = Spend(Budget(max_input_tokens=120))
    engine = Slow(fail_every=3)
    hammer(BudgetedEngine(engine, spend), req(), threads=8, per_thread=12)
    spent = spend.spent()
    assert 120 <= spent["input_tokens"] <= 132  # the failures' holds did not starve the rest
    assert spent["requests"] == engine.calls  # a failed call was still sent


def test_async_tasks_sharing_a_meter_hold_the_cap_without_deadlock() -> None:
    spend = Spend(Budget(max_input_tokens=120))
    engine = BudgetedEngine(Slow(), spend)

    async def one() -> str:
        try:
            await engine.acomplete(req())
            return "answer"
        except BudgetExceeded:
            return "refused"

    async def main() -> list[str]:
        return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(64))), 60)

    results = asyncio.run(main())
    assert 120 <= spend.spent()["input_tokens"] <= 132
    assert results.count("answer") == spend.spent()["input_tokens"] // 12


def test_the_worst_case_bound_covers_bytes_messages_and_schema() -> None:
    budget = Budget(max_input_tokens=1, max_output_tokens=1)
    request = Request(messages=(Message("system", "é" * 3), Message("user", "ab")),
                      schema={"type": "object"}, options=Options(max_tokens=7, n=2))
    bound = request_bound(request, budget)
    assert bound.input_tokens >= len(("é" * 3).encode()) + 2 + len('{"type": "object"}')
    assert bound.output_tokens == 14
    assert request_bound(Request(messages=(Message("user", "x"),)), budget).output_tokens is None


class Wire:
    """An engine whose every send fails on the wire: its transport retries."""

    model = "wire"

    def __init__(self, retries: int) -> None:
        self.sends = 0
        self.transport = TransportRetry(max_retries=retries, sleep=lambda s: None)

    def complete(self, request: Request) -> Response:
        def send() -> Response:
            self.sends += 1
            raise ConnectionError("refused")
        return self.transport.call(send, lambda e: Failure("connection", str(e)))

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


@pytest.mark.parametrize("cap", [1, 3])
def test_transport_retries_are_requests(cap: int) -> None:
    wire = Wire(retries=10)
    engine = BudgetedEngine(wire, Budget(max_requests=cap))
    with pytest.raises(BudgetExceeded, match="transport retr"):
        engine.complete(req())
    assert wire.sends == cap == engine.spent()["requests"]
