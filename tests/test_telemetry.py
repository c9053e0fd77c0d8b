"""OpenTelemetry spans (``hoare.telemetry.instrument()``), read back from the SDK's
in-memory exporter: one span per contracted call with hoare's attributes and the GenAI
totals, one CLIENT ``chat`` span per engine call under it (against the loopback
OpenAI-compatible server too), the right parents under asyncio and threads (threads in
a child process), agent and tool spans, and nothing at all when not instrumented."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from library_under_test import LIBRARY
from openai_server import OpenAIServer, completion
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from hoare import Contract, LLMDataModel, Post, configure, contract, telemetry
from hoare.engines import FunctionEngine, Request

ROOT = Path(__file__).resolve().parents[1]


class Q(LLMDataModel):
    n: int


class A(LLMDataModel):
    n: int


@contract(remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
class Positive(Contract[Q, A]):
    prompt = "Answer a positive number."
    post_conditions = (Post(lambda a: a.n > 0, "positive"),)

    def forward(self, q: Q) -> A:
        if q.n < 0:
            raise ValueError("negative input: no best effort")
        return self.contract_result if self.contract_successful else A(n=1)


def scripted(*answers: str) -> FunctionEngine:
    queue = iter(answers)
    return FunctionEngine(lambda request: next(queue))


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[Any]]:
    """The finished spans by name; every engine span also under "chat"."""
    out: dict[str, list[Any]] = {}
    for span in exporter.get_finished_spans():
        out.setdefault(span.name, []).append(span)
        if span.name.startswith("chat "):
            out.setdefault("chat", []).append(span)
    return out


def test_a_call_with_one_remedy_is_one_span_with_two_engine_spans(
        spans: InMemorySpanExporter) -> None:
    configure(label="otel-run")
    try:
        result = Positive(engine=scripted('{"n": -3}', '{"n": 4}'))(Q(n=1))
    finally:
        configure(label=None)
    assert result.n == 4
    found = by_name(spans)
    (call,) = found["hoare.contract test_telemetry:Positive"]
    chats = sorted(found["chat"], key=lambda s: s.start_time)
    assert len(chats) == 2
    assert call.kind is SpanKind.INTERNAL and all(c.kind is SpanKind.CLIENT for c in chats)
    assert all(c.parent is not None and c.parent.span_id == call.context.span_id
               for c in chats)
    assert all(c.context.trace_id == call.context.trace_id for c in chats)
    assert [c.attributes["hoare.attempt"] for c in chats] == [1, 2]
    assert all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
    attributes = dict(call.attributes or {})
    assert attributes["hoare.contract"] == "test_telemetry:Positive"
    assert (attributes["hoare.outcome"], attributes["hoare.attempts"],
            attributes["hoare.remedies"], attributes["hoare.label"]) == \
        ("success", 2, 1, "otel-run")
    assert attributes["hoare.failed_families"] == ("post_conditions[0]",)
    assert attributes["gen_ai.provider.name"] == "hoare.FunctionEngine"
    assert attributes["gen_ai.request.model"] == "function"
    assert {c.name for c in chats} == {"chat function"}
    assert call.status.status_code is StatusCode.UNSET
    assert call.start_time <= chats[0].start_time and chats[1].end_time <= call.end_time


def test_failure_and_error_outcomes(spans: InMemorySpanExporter) -> None:
    assert Positive(engine=scripted(*['{"n": 0}'] * 3))(Q(n=1)).n == 1  # best effort
    with pytest.raises(ValueError, match="negative input"):
        Positive(engine=scripted('{"n": 5}'))(Q(n=-1))

    def broken(request: Request) -> str:
        raise ConnectionError("engine down")

    configure_engine = Positive(engine=FunctionEngine(broken))
    configure_engine(Q(n=1))  # the engine fails: forward gives its best effort
    calls = by_name(spans)["hoare.contract test_telemetry:Positive"]
    assert [c.attributes["hoare.outcome"] for c in calls] == ["failure", "error", "failure"]
    assert calls[1].status.status_code is StatusCode.ERROR
    assert calls[1].attributes["error.type"] == "ValueError"
    failed_chats = [c for c in by_name(spans)["chat"]
                    if c.status.status_code is StatusCode.ERROR]
    assert failed_chats and all(c.attributes["error.type"] == "ConnectionError"
                                for c in failed_chats)


def test_genai_attributes_from_a_real_openai_compatible_server(
        spans: InMemorySpanExporter) -> None:
    with OpenAIServer([completion('{"n": 0}', prompt_tokens=11, completion_tokens=3,
                                  model="served-model"),
                       completion('{"n": 7}', prompt_tokens=13, completion_tokens=4,
                                  model="served-model", finish_reason="length")]) as server:
        engine = server.engine(model="asked-model")
        assert Positive(engine=engine)(Q(n=1)).n == 7
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    found = by_name(spans)
    (call,) = found["hoare.contract test_telemetry:Positive"]
    chats = sorted(found["chat asked-model"], key=lambda s: s.start_time)
    assert [dict(c.attributes)["gen_ai.usage.input_tokens"] for c in chats] == [11, 13]
    assert [dict(c.attributes)["gen_ai.usage.output_tokens"] for c in chats] == [3, 4]
    first = dict(chats[0].attributes or {})
    assert (first["gen_ai.provider.name"], first["gen_ai.request.model"],
            first["gen_ai.response.model"], first["server.address"], first["server.port"]) \
        == ("openai", "asked-model", "served-model", "127.0.0.1", port)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("length",)
    totals = dict(call.attributes or {})
    assert (totals["gen_ai.usage.input_tokens"], totals["gen_ai.usage.output_tokens"],
            totals["gen_ai.request.model"]) == (24, 7, "asked-model")


def test_a_span_made_inside_the_engine_nests_under_its_chat_span(
        spans: InMemorySpanExporter) -> None:
    tracer = telemetry.tracer

    def answer(request: Request) -> str:
        with tracer.start_as_current_span("user work"):
            return '{"n": 2}'

    Positive(engine=FunctionEngine(answer))(Q(n=1))
    found = by_name(spans)
    (work,) = found["user work"]
    (chat,) = found["chat"]
    assert work.parent is not None and work.parent.span_id == chat.context.span_id


def test_concurrent_async_calls_keep_their_own_spans(spans: InMemorySpanExporter) -> None:
    async def answer(request: Request) -> str:
        await asyncio.sleep(0.001 * (request.input.n % 5))
        return json.dumps({"n": request.input.n if request.attempt > 1 else -1})

    shared = Positive(engine=FunctionEngine(answer))

    async def main() -> list[A]:
        return await asyncio.gather(*(shared.acall(Q(n=n)) for n in range(1, 41)))

    assert [a.n for a in asyncio.run(main())] == list(range(1, 41))
    found = by_name(spans)
    calls = found["hoare.contract test_telemetry:Positive"]
    assert len(calls) == 40 and len(found["chat"]) == 80
    children: dict[int, int] = {}
    for chat in found["chat"]:
        children[chat.parent.span_id] = children.get(chat.parent.span_id, 0) + 1
    assert children == {c.context.span_id: 2 for c in calls}
    assert len({c.context.trace_id for c in calls}) == 40  # each call its own trace


THREADS = textwrap.dedent(r'''
    import json, threading
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from hoare import Contract, LLMDataModel, Post, contract, telemetry
    from hoare.engines import FunctionEngine

    class Q(LLMDataModel):
        n: int

    class A(LLMDataModel):
        n: int

    @contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Echo(Contract[Q, A]):
        prompt = "Echo."
        post_conditions = (Post(lambda a: a.n > 0, "positive"),)
        def forward(self, q: Q) -> A:
            return self.contract_result if self.contract_successful else A(n=0)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    shared = Echo(engine=FunctionEngine(
        lambda r: json.dumps({"n": r.input.n if r.attempt > 1 else 0})))
    errors = []
    def work(base):
        try:
            for n in range(base, base + 50):
                assert shared(Q(n=n)).n == n
        except BaseException as error:
            errors.append(repr(error))
    threads = [threading.Thread(target=work, args=(1 + 1000 * t,)) for t in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name.startswith("hoare.contract")]
    chats = [s for s in spans if s.name == "chat function"]
    parents = {}
    for chat in chats:
        parents[chat.parent.span_id] = parents.get(chat.parent.span_id, 0) + 1
    print(json.dumps({"errors": errors, "calls": len(calls), "chats": len(chats),
                      "two_each": parents == {c.context.span_id: 2 for c in calls}}))
''')


def test_eight_threads_on_one_instance_in_a_child_process() -> None:
    done = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": LIBRARY})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"errors": [], "calls": 400, "chats": 800,
                                       "two_each": True}


def test_nothing_is_emitted_when_not_instrumented() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    telemetry.uninstrument()
    Positive(engine=scripted('{"n": 2}'))(Q(n=1))
    assert exporter.get_finished_spans() == () and not telemetry.instrumented()


def test_agent_runs_and_tool_calls_are_spans(spans: InMemorySpanExporter) -> None:
    from hoare.agents import ContractAgent, pre, tool

    @tool
    @pre(lambda args: args["b"] != 0, "no division by zero")
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    engine = scripted(json.dumps({"tool": "divide", "args": {"a": 6, "b": 3}}),
                      json.dumps({"answer": "2"}))
    assert ContractAgent(engine, tools=[divide], agent_type="constrained").run("6/3").success
    found = by_name(spans)
    (agent,) = found["invoke_agent agent:constrained[divide]"]
    (call,) = found["execute_tool divide"]
    chats = found["chat"]
    assert agent.attributes["hoare.outcome"] == "success"
    assert call.attributes["gen_ai.tool.name"] == "divide"
    assert call.parent.span_id == agent.context.span_id
    assert len(chats) == 2 and all(c.parent.span_id == agent.context.span_id for c in chats)


# -- tracing never changes a result (issue 28 item 3) --------------------------------------
class _Broken(Exception):
    """What a broken span processor raises."""


def _processor(hook: str) -> Any:
    """A span processor whose ``hook`` (``on_start`` or ``on_end``) raises."""
    from opentelemetry.sdk.trace import SpanProcessor

    def raising(self: Any, *args: Any, **kwargs: Any) -> None:
        raise _Broken(f"{hook} is broken")

    return type(f"Broken_{hook}", (SpanProcessor,), {hook: raising})()


def _divide_tool() -> Any:
    from hoare.agents import pre, tool

    @tool
    @pre(lambda args: args["b"] != 0, "no division by zero")
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    return divide


def _run(path: str, engine: Any) -> Any:
    """One call down ``path`` (a contract, an agent run): what the caller gets."""
    if path == "contract":
        shared = Positive(engine=engine)
        value = shared(Q(n=1))
        return value.n, shared.contract_successful
    from hoare.agents import ContractAgent

    result = ContractAgent(engine, tools=[_divide_tool()], agent_type="constrained").run("t")
    return result.answer, result.success, [e.type.value for e in result.events]


def _answers(path: str) -> list[Any]:
    if path == "contract":
        return ['{"n": 2}']
    return [json.dumps({"tool": "divide", "args": {"a": 6, "b": 3}}), json.dumps({"answer": "2"})]


PATHS = ["contract", "agent"]  # queries emit no spans


@pytest.mark.parametrize("hook", ["on_start", "on_end"])
@pytest.mark.parametrize("path", PATHS)
def test_a_span_processor_that_raises_never_changes_a_result(hook: str, path: str) -> None:
    untraced = _run(path, scripted(*_answers(path)))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(_processor(hook))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    try:
        traced = _run(path, scripted(*_answers(path)))
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    assert traced == untraced
    assert untraced[1] is True  # the paid answer, not a fallback


def _with_usage(answers: list[str], tokens: Any) -> FunctionEngine:
    from hoare.engines import Response, Usage

    queue = iter(answers)
    return FunctionEngine(lambda request: Response(
        (next(queue),), ("stop",), Usage(1, tokens, tokens), "m"))


@pytest.mark.parametrize("tokens", [float("nan"), float("inf"), float("-inf"), -1, 2.5e300])
@pytest.mark.parametrize("path", PATHS)
def test_usage_that_is_not_a_finite_count_never_changes_a_result(
        spans: InMemorySpanExporter, path: str, tokens: Any) -> None:
    traced = _run(path, _with_usage(_answers(path), tokens))
    telemetry.uninstrument()
    untraced = _run(path, _with_usage(_answers(path), tokens))
    assert traced == untraced and traced[1] is True
    for chat in by_name(spans)["chat"]:
        usage = chat.attributes.get("gen_ai.usage.input_tokens")
        assert usage is None or (isinstance(usage, int) and usage >= 0)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, asyncio.CancelledError])
@pytest.mark.parametrize("path", PATHS)
def test_every_span_ends_with_an_error_status_when_an_interrupt_stops_the_call(
        spans: InMemorySpanExporter, path: str, interrupt: type[BaseException]) -> None:
    def answer(request: Request) -> str:
        raise interrupt()

    with pytest.raises(interrupt):
        _run(path, FunctionEngine(answer))
    finished = spans.get_finished_spans()
    names = sorted(s.name.split(" ")[0] for s in finished)
    assert names == (["chat", "hoare.contract"] if path == "contract" else
                     ["chat", "invoke_agent"])
    assert all(s.status.status_code is StatusCode.ERROR and
               s.attributes["error.type"] == interrupt.__qualname__ for s in finished)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, asyncio.CancelledError])
def test_a_tool_span_ends_when_an_interrupt_stops_the_tool(
        spans: InMemorySpanExporter, interrupt: type[BaseException]) -> None:
    from hoare.agents import ContractAgent, tool

    @tool
    def halt() -> str:
        """Stop."""
        raise interrupt()

    agent = ContractAgent(scripted(json.dumps({"tool": "halt", "args": {}})), tools=[halt],
                          agent_type="constrained")
    with pytest.raises(interrupt):
        agent.run("t")
    found = by_name(spans)
    (call,) = found["execute_tool halt"]
    (run,) = found["invoke_agent agent:constrained[halt]"]
    assert call.status.status_code is StatusCode.ERROR is run.status.status_code
    assert agent.tool_stats()["halt"]["calls"] == 0  # interrupted: not counted


def test_an_async_contract_call_cancelled_ends_its_spans(spans: InMemorySpanExporter) -> None:
    async def answer(request: Request) -> str:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(Positive(engine=FunctionEngine(answer)).acall(Q(n=1)))
    finished = spans.get_finished_spans()
    assert len(finished) == 2
    assert all(s.status.status_code is StatusCode.ERROR for s in finished)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.floats(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70)))
def test_every_usage_number_leaves_the_result_alone(tokens: Any) -> None:
    """Every float (nan, inf, -0.0, subnormals) and int a server could report as usage:
    the traced call answers what the untraced one does, and the span keeps only
    counts OpenTelemetry can hold."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    untraced = _run("contract", _with_usage(_answers("contract"), tokens))
    telemetry.instrument(tracer_provider=provider)
    try:
        traced = _run("contract", _with_usage(_answers("contract"), tokens))
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    assert traced == untraced == (2, True)
    for span in exporter.get_finished_spans():
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            value = span.attributes.get(key)
            assert value is None or (type(value) is int and 0 <= value < 2 ** 63)


@given(st.one_of(st.floats(), st.integers(), st.booleans(), st.none(), st.text(max_size=3)))
def test_a_span_keeps_a_usage_value_only_as_an_int64_count(value: Any) -> None:
    """What reaches a span's usage attributes, from any engine's response (engines
    that clamp usage themselves or not): a non-negative int64, or nothing."""
    kept = telemetry._usage_attributes(value, 7)
    assert kept["gen_ai.usage.output_tokens"] == 7
    count = kept.get("gen_ai.usage.input_tokens")
    holds = not isinstance(value, bool) and isinstance(value, (int, float)) and \
        value == value and abs(value) != float("inf") and 0 <= int(value) < 2 ** 63
    assert (count is not None) is holds
    if holds:
        assert count == int(value)
