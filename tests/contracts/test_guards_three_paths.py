"""Guards that hold on every path that drives an engine (issue 28 item 3): a contract,
a query and an agent treat a predicate's result the same way. An awaitable returned by
a (sync) predicate, which is truthy but never ran, is a failed check, closed so it never
warns "never awaited"; a result whose ``__bool__`` raises is a failed check. Written
over the three paths so the planned single driver keeps them."""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hoare import Contract, LLMDataModel, Post, contract
from hoare.engines import FunctionEngine
from hoare.engines.base import Engine
from hoare.engines.testing import ScriptedEngine


class Q(LLMDataModel):
    n: int


class A(LLMDataModel):
    n: int


async def _later() -> bool:
    return True


class _BoolRaises:
    def __bool__(self) -> bool:
        raise ValueError("no truth value")


class _Truthy:
    """A foreign result whose other dunders raise; its truth is plain."""

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        raise ValueError("no equality")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        raise ValueError("no repr")


RESULTS: dict[str, tuple[Callable[[], Any], bool]] = {
    "awaitable": (_later, False),  # truthy, never awaited: fails, and is closed
    "bool-raises": (_BoolRaises, False),
    "truthy-foreign": (_Truthy, True),
    "false": (lambda: 0, False),
    "true": (lambda: 1, True),
}


def _contract(result: Callable[[], Any]) -> bool:
    @contract(remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0})
    class Checked(Contract[Q, A]):
        prompt = "Answer."
        post_conditions = (Post(lambda a: result(), "the check"),)

        def forward(self, q: Q) -> A:
            return self.contract_result if self.contract_successful else A(n=-1)

    shared = Checked(engine=FunctionEngine(lambda r: '{"n": 2}'))
    shared(Q(n=1))
    return bool(shared.contract_successful)


def _query(result: Callable[[], Any]) -> bool:
    from hoare.queries import Query

    @dataclass
    class Ask(Query[int]):
        """Give a number."""

        n: int
        post_conditions = [Post(lambda answer: result(), "the check")]

        def fallback(self, outcome: Any) -> int:
            return -1

    return Ask(1).run(FunctionEngine(lambda r: "2"), max_requests=1) != -1


def _agent(result: Callable[[], Any]) -> bool:
    from hoare.agents import ContractAgent

    agent = ContractAgent(FunctionEngine(lambda r: json.dumps({"answer": "2"})),
                          agent_type="constrained",
                          answer_postcondition=lambda answer: result())
    return agent.run("t").success


PATHS = {"contract": _contract, "query": _query, "agent": _agent}


@pytest.mark.parametrize("result", sorted(RESULTS))
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_predicates_result_counts_the_same_on_every_path(path: str, result: str) -> None:
    make, holds = RESULTS[result]
    gc.collect()  # what earlier tests left is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert PATHS[path](make) is holds
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def _contract_engine(engine: FunctionEngine) -> Any:
    @contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Plain(Contract[Q, A]):
        prompt = "Answer."

        def forward(self, q: Q) -> A:
            return self.contract_result if self.contract_successful else A(n=-1)

    return Plain(engine=engine)(Q(n=1))


def _query_engine(engine: FunctionEngine) -> Any:
    from hoare.queries import Query

    @dataclass
    class Ask(Query[int]):
        """Give a number."""

        n: int

    return Ask(1).run(engine)


def _agent_engine(engine: FunctionEngine) -> Any:
    from hoare.agents import ContractAgent

    return ContractAgent(engine, agent_type="constrained").run("t")


ENGINE_PATHS = {"contract": _contract_engine, "query": _query_engine,
                "agent": _agent_engine}


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("path", sorted(ENGINE_PATHS))
def test_an_interrupt_from_the_engine_propagates_unchanged(
        path: str, interrupt: type[BaseException]) -> None:
    raised = interrupt()
    calls: list[int] = []

    def answer(request: Any) -> str:
        calls.append(1)
        raise raised

    with pytest.raises(interrupt) as caught:
        ENGINE_PATHS[path](FunctionEngine(answer))
    assert caught.value is raised and calls == [1]  # not retried, not wrapped


def _deep_contract(engine: Engine) -> bool:
    @contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Listed(Contract[Q, A]):
        prompt = "Answer."

        def forward(self, q: Q) -> A:
            return self.contract_result if self.contract_successful else A(n=-1)

    return bool(Listed(engine=engine)(Q(n=1)).n == 2)


def _deep_query(engine: Engine) -> bool:
    from hoare.queries import Query

    @dataclass
    class Ask(Query[A]):
        """Give a number."""

        n: int

    return bool(Ask(1).run(engine).n == 2)


def _deep_agent(engine: Engine) -> bool:
    from hoare.agents import ContractAgent

    result = ContractAgent(engine, answer_type=A).run("t")
    return bool(result.success and result.answer.n == 2)


@pytest.mark.parametrize("depth", [5_000, 100_000])
@pytest.mark.parametrize("path", ["contract", "query", "agent"])
def test_an_answer_nested_past_any_bound_is_a_failed_attempt(path: str, depth: int) -> None:
    deep = '{"n": ' + "[" * depth + "]" * depth + "}"
    run = {"contract": _deep_contract, "query": _deep_query, "agent": _deep_agent}[path]
    assert run(ScriptedEngine(deep, '{"n": 2}')) is True
