"""A remedy attempt whose request would repeat an earlier one byte for byte (the model
repeated its answer; at temperature 0 the same answer comes back) is never sent
unchanged (issue 16): ``resend="vary"`` changes the seed and raises the temperature to
at least 0.7, counted in ``outcome.usage["varied_resends"]``; ``resend="stop"`` ends
the stage with the reason in the outcome."""

from __future__ import annotations

import json

import pytest
from openai_server import OpenAIServer

from hoare import Contract, LLMDataModel, Post, contract
from hoare.engines import FunctionEngine, Options, Request
from hoare.engines.testing import ScriptedEngine
from hoare.kernel import ViolationKind


class Q(LLMDataModel):
    text: str


class A(LLMDataModel):
    n: int


def _positive(resend: str) -> type[Contract[Q, A]]:
    @contract(resend=resend, remedy_retry_params={"tries": 4, "delay": 0, "jitter": 0})  # type: ignore[call-overload]
    class Positive(Contract[Q, A]):
        prompt = "A positive number."
        post_conditions = [Post(lambda a: a.n > 0, "positive")]

        def forward(self, q: Q) -> A:
            return self.contract_result if self.contract_successful else A(n=0)

    return Positive


def greedy(seen: list[Request]) -> FunctionEngine:
    """A model at temperature 0: the same request gets the same answer; only a request
    with a seed set (a varied re-send) gets a good one."""
    def answer(request: Request) -> str:
        seen.append(request)
        return '{"n": 5}' if request.options.seed is not None else '{"n": -1}'

    return FunctionEngine(answer)


def test_an_identical_resend_is_varied_and_counted() -> None:
    """resend-never-identical: a remedy request that would repeat an earlier one is varied."""
    seen: list[Request] = []
    positive = _positive("vary")(engine=greedy(seen))
    assert positive(Q(text="x")) == A(n=5)
    # 1: fresh; 2: quotes answer 1 and its error; 3 would quote the same: varied
    assert len(seen) == 3
    assert [r.options.seed for r in seen] == [None, None, 7919 * 3]
    assert [m.content for m in seen[1].messages] == [m.content for m in seen[2].messages]
    assert positive.contract_outcome.usage["varied_resends"] == 1


def test_stop_ends_the_stage_and_says_why() -> None:
    """resend-never-identical: with resend="stop" it is not sent at all."""
    seen: list[Request] = []
    positive = _positive("stop")(engine=greedy(seen))
    assert positive(Q(text="x")) == A(n=0)  # the fallback
    assert len(seen) == 2  # the third request was not sent
    last = positive.contract_outcome.attempts[-1]
    (violation,) = last.violations
    assert violation.kind is ViolationKind.ERROR
    assert "resend an earlier request unchanged" in violation.message


def test_different_requests_are_sent_as_they_are() -> None:
    engine = ScriptedEngine('{"n": -1}', '{"n": -2}', '{"n": -3}', '{"n": 4}')
    positive = _positive("vary")(engine=engine)
    assert positive(Q(text="x")) == A(n=4)
    assert all(r.options.seed is None for r in engine.requests)
    assert "varied_resends" not in positive.contract_outcome.usage


def test_on_the_wire_temperature_zero_becomes_point_seven() -> None:
    with OpenAIServer(['{"n": -1}', '{"n": -1}', '{"n": 3}']) as server:
        engine = server.engine(default_options=Options(temperature=0.0, seed=1, timeout=10))
        assert _positive("vary")(engine=engine)(Q(text="x")) == A(n=3)
        bodies = server.bodies
    assert [(b.get("temperature"), b.get("seed")) for b in bodies] == [
        (0.0, 1), (0.0, 1), (0.7, 7919 * 3)]
    assert json.dumps(bodies[1]["messages"]) == json.dumps(bodies[2]["messages"])


def test_an_unknown_resend_is_refused() -> None:
    with pytest.raises(ValueError, match="resend must be 'vary'"):
        contract(resend="again")  # type: ignore[call-overload]
