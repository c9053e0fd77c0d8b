"""The one driver (``hoare.contracts.driver``, issue 28) seen from the three front ends:
a contract, a query and an agent each get one CLIENT ``chat`` span per engine call, and
that span ends, with the error, whatever stops the call: an engine error, an
interrupt, a cancellation. Queries had no engine spans before the driver was shared."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine
from hoare.engines.base import Engine, Request, Response


class Q(LLMDataModel):
    n: int


class A(LLMDataModel):
    n: int


@contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Answer(Contract[Q, A]):
    prompt = "Answer."

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else A(n=-1)


def _query_class() -> type:
    from hoare.queries import Query

    @dataclass
    class AskQuery(Query[A]):
        """Give a number."""

        n: int

        def fallback(self, outcome: Any) -> A:
            return A(n=-1)

    return AskQuery


def _contract(engine: Engine) -> object:
    return Answer(engine=engine)(Q(n=1))


def _query(engine: Engine) -> object:
    return _query_class()(1).run(engine)


def _agent(engine: Engine) -> object:
    from hoare.agents import ContractAgent

    return ContractAgent(engine, agent_type="constrained", max_iterations=2).run("t")


PATHS: dict[str, Callable[[Engine], object]] = {
    "contract": _contract, "query": _query, "agent": _agent}
ANSWERS = {"contract": '{"n": 2}', "query": '{"n": 2}', "agent": json.dumps({"answer": "2"})}


def _chat_spans(exporter: InMemorySpanExporter) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_each_engine_call_has_one_chat_span(path: str,
                                            spans: InMemorySpanExporter) -> None:
    answer = ANSWERS[path]
    PATHS[path](FunctionEngine(lambda request: answer))
    chats = _chat_spans(spans)
    assert len(chats) == 1 and chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].status.status_code is not StatusCode.ERROR


@pytest.mark.parametrize("path", sorted(PATHS))
def test_each_call_has_a_span_above_its_chat_spans(path: str,
                                                    spans: InMemorySpanExporter) -> None:
    """A contract's and a query's call span (closed from its one record), an agent's
    run span: each engine call's span is its child."""
    answer = ANSWERS[path]
    PATHS[path](FunctionEngine(lambda request: answer))
    finished = spans.get_finished_spans()
    chats = [s for s in finished if s.kind is SpanKind.CLIENT]
    parents = {s.context.span_id: s for s in finished if s.kind is not SpanKind.CLIENT}
    assert chats and all(c.parent is not None and c.parent.span_id in parents
                         for c in chats)
    parent = chats[0].parent
    assert parent is not None
    attributes = parents[parent.span_id].attributes
    assert attributes is not None and attributes.get("hoare.outcome") == "success"


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit, ValueError])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_chat_span_ends_whatever_stops_the_engine(
        path: str, stop: type[BaseException], spans: InMemorySpanExporter) -> None:
    """one-driver: an engine error or an interrupt ends the request's span."""
    raised = stop("stopped")

    def answer(request: Any) -> str:
        raise raised

    try:
        PATHS[path](FunctionEngine(answer))
    except BaseException as error:  # an interrupt propagates; an engine error may too
        assert error is raised or not isinstance(raised, KeyboardInterrupt | SystemExit)
    chats = _chat_spans(spans)
    assert chats, "the engine call's span ended"
    assert all(s.status.status_code is StatusCode.ERROR for s in chats)
    assert all(s.end_time is not None for s in chats)


@pytest.mark.parametrize("path", ["contract", "query"])
def test_a_cancelled_async_call_ends_its_chat_span(path: str,
                                                   spans: InMemorySpanExporter) -> None:
    """one-driver: a cancellation ends the request's span, then propagates."""
    started = asyncio.Event()

    _Stalled.started = started
    engine = _Stalled(lambda request: "{}")

    async def main() -> None:
        if path == "contract":
            task = asyncio.ensure_future(Answer(engine=engine).acall(Q(n=1)))
        else:
            task = asyncio.ensure_future(_query_class()(1).arun(engine))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    chats = _chat_spans(spans)
    assert len(chats) == 1 and chats[0].status.status_code is StatusCode.ERROR


class _Stalled(FunctionEngine):
    """A server that never answers an async request."""

    started: asyncio.Event

    async def acomplete(self, request: Request) -> Response:
        self.started.set()
        await asyncio.sleep(3600)
        raise AssertionError("never answered")


class _Foreign:
    """An engine's answer that is no ``Response``: every attribute and dunder raises."""

    def __getattr__(self, name: str) -> Any:
        raise ValueError(f"no {name}")

    def __str__(self) -> str:
        raise ValueError("no str")

    def __repr__(self) -> str:
        raise ValueError("no repr")

    def __bool__(self) -> bool:
        raise ValueError("no truth")


ANSWERS_NOT_RESPONSES: dict[str, Callable[[], object]] = {
    "foreign": _Foreign, "none": lambda: None, "text": lambda: '{"n": 2}',
    "mapping": lambda: {"texts": ('{"n": 2}',)}, "number": lambda: 2,
}


class _ForeignEngine(FunctionEngine):
    """An engine answering something that is not a ``Response``."""

    answer: Callable[[], object] = _Foreign

    def complete(self, request: Request) -> Any:
        return self.answer()


def _budgeted_contract(engine: Engine) -> object:
    from hoare.engines import Budget

    return Answer(engine=engine, budget=Budget(max_requests=5))(Q(n=1))


def _budgeted_query(engine: Engine) -> object:
    return _query_class()(1).run(engine, budget={"num_requests": 5})


FOREIGN_PATHS = {**PATHS, "contract+budget": _budgeted_contract,
                 "query+budget": _budgeted_query}


@pytest.mark.parametrize("answer", sorted(ANSWERS_NOT_RESPONSES))
@pytest.mark.parametrize("path", sorted(FOREIGN_PATHS))
def test_a_foreign_answer_is_a_failed_attempt_on_every_path(path: str, answer: str) -> None:
    """An answer that is not a Response never escapes as its own error: the call fails
    (a contract's and a query's fallback, an agent's unsuccessful run), with or without
    a budget's meter reading the answer."""
    engine = _ForeignEngine(lambda request: "{}")
    engine.answer = ANSWERS_NOT_RESPONSES[answer]
    result = FOREIGN_PATHS[path](engine)
    if path == "agent":
        assert result.success is False  # type: ignore[attr-defined]  # an AgentResult
    else:
        assert result == A(n=-1)
