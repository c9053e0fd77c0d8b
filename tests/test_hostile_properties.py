"""Properties of the hostile-world harness that need a real server, a budget meter or
a contract instance's lifetime (issue 30, item 3): numbers from outside (a real HTTP
server through the real ``openai`` client, a FunctionEngine's Response) never lower a
meter, never count twice and never reach an output as NaN/inf; no secret (a SecretStr
input, the API key) appears in any log, output or message in any spelling; copies of
a contract instance are fresh; a dropped instance is collectable. The sweep over every
entry point is ``tests/test_hostile_api.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import io
import json
import logging
import math
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hostile.generators import outside_numbers, secret_spellings
from hostile.properties import strict_json
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, Reply
from pydantic import Field, SecretStr

import hoare
from hoare import Contract, LLMDataModel, cli, contract
from hoare.engines import Budget, BudgetedEngine, FunctionEngine, Response, Spend, Usage
from hoare.engines.base import MAX_USAGE_COUNT

SECRET = "sk-hostile-\u00e9 \"quoted\" /slash+plus&amp\\back"
API_KEY = "sk-key \"quoted\" /slash+plus&amp\\back"  # a header carries ASCII only


class In(LLMDataModel):
    text: str = ""
    token: SecretStr = SecretStr(SECRET)


class Out(LLMDataModel):
    v: int = Field(ge=0, le=10)


def make_contract(engine: Any) -> Any:
    @contract(remedy_retry_params={"tries": 2, "delay": 0})
    class Echo(Contract):
        prompt = "echo"

        def post(self, o: Out, i: In) -> bool:
            if o.v == 7:
                raise ValueError(f"leaked {i.token.get_secret_value()}")
            return o.v < 5

        def forward(self, i: In) -> Out:
            return self.contract_result if self.contract_successful else Out(v=0)

    return Echo(engine=engine)


def _usage_counts(usage: Usage) -> list[object]:
    return [usage.requests, usage.input_tokens, usage.output_tokens,
            usage.cached_input_tokens]


@settings(max_examples=60)
@given(st.lists(st.tuples(outside_numbers(), outside_numbers()), min_size=1, max_size=6))
def test_a_budget_meter_never_goes_down_whatever_an_engine_reports(
        reported: list[tuple[object, object]]) -> None:
    """hostile-numbers-from-outside: a Spend fed usages built from any numbers (NaN,
    ±inf, negative, 10**20, not numbers) only grows, by whole counts within the cap."""
    answers: Iterator[tuple[object, object]] = iter(reported)

    def answer(request: object) -> Response:
        inputs, outputs = next(answers)
        return Response(('{"v": 1}',), ("stop",),
                        Usage(1, inputs, outputs, inputs))  # type: ignore[arg-type]

    spend = Spend(Budget(max_requests=100))
    engine = BudgetedEngine(FunctionEngine(answer), spend)
    instance = make_contract(engine)
    before = spend.usage
    for _ in reported:
        try:
            instance(In(text="x"))
        except StopIteration:  # pragma: no cover - one answer per call
            break
        now = spend.usage
        for old, new in zip(_usage_counts(before), _usage_counts(now), strict=True):
            assert isinstance(new, int) and 0 <= old <= new <= MAX_USAGE_COUNT * 100
        before = now
    assert spend.usage.requests == len(reported)


BAD_NUMBERS: list[object] = [float("nan"), float("inf"), -float("inf"), -5, 10**20, "12",
                             None, [3], {"n": 1}, 1.5, -0.0, 2**64]


@pytest.mark.parametrize("number", BAD_NUMBERS, ids=repr)
def test_server_numbers_never_reach_usage_unchecked(number: object) -> None:
    """hostile-numbers-from-outside: a real server (real `openai` client over HTTP)
    reporting any token count gives a Usage of whole counts in [0, cap], counted once."""
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"v": 1}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": number, "completion_tokens": number,
                      "total_tokens": number,
                      "prompt_tokens_details": {"cached_tokens": number}}}
    text = json.dumps(body, allow_nan=True)
    with OpenAIServer([Reply(200, text, {"Content-Type": "application/json"}, 0.0)]) \
            as server:
        instance = make_contract(server.engine(model="m"))
        instance(In(text="x"))
        outcome = instance.contract_outcome
    usage = outcome.usage
    counts = [value for key, value in vars(usage).items()
              if isinstance(value, (int, float))] if hasattr(usage, "__dict__") else []
    for value in counts:
        assert not isinstance(value, float) or math.isfinite(value), (usage, number)
        assert value >= 0, (usage, number)
    assert len(server.received) == 1


def _all_output(capture: io.StringIO, extra: list[str]) -> str:
    return capture.getvalue() + "\n".join(extra)


def test_no_secret_appears_in_any_log_output_or_message(tmp_path: Any) -> None:
    """hostile-no-secret: a SecretStr input and the API key never appear, in any
    spelling (raw, stripped, repr/JSON-escaped, URL-quoted), in log records (every
    logger at DEBUG), outcomes, raised errors or their reprs, with the model answering
    a failing output, one whose predicate quotes the secret, and a server error."""
    capture = io.StringIO()
    handler = logging.StreamHandler(capture)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    texts: list[str] = []
    store = tmp_path / "stats.sqlite"
    hoare.configure(stats=store, label="secret-run")
    try:
        script = ['{"v": 7}', '{"v": 9}', '{"v": 7}', '{"v": 7}',
                  Reply(401, {"error": {"message": f"bad key {SECRET}"}}, {}, 0.0),
                  Reply(500, {"error": {"message": "down"}}, {}, 0.0)]
        with OpenAIServer(script, default=Reply(500, {"error": {"message": "x"}}, {}, 0.0)) \
                as server:
            instance = make_contract(server.engine(model="m", api_key=API_KEY, max_retries=0))
            for _ in range(3):
                try:
                    instance(In(text="go"))
                except Exception as error:
                    texts += [str(error), repr(error)]
                outcome = instance.contract_outcome
                texts += [repr(outcome), str(outcome)]
                texts += [str(v) for v in getattr(outcome, "violations", ()) or ()]
                texts.append(repr(instance.contract_exception))
            texts += [json.dumps(b, ensure_ascii=False) for b in server.bodies
                      if "messages" in b]
        assert hoare.flush_stats()
        texts.append(store.read_bytes().decode("utf-8", "replace"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            cli.main(["stats", "--db", str(store), "--json"])
        texts.append(out.getvalue())
    finally:
        hoare.configure(stats=None, label=None)
        root.removeHandler(handler)
        root.setLevel(old_level)
    everything = _all_output(capture, texts)
    assert "secret-run" in everything  # the store and `hoare stats` were searched
    assert everything  # something was logged and said
    for spelling in secret_spellings(SECRET) + secret_spellings(API_KEY):
        if spelling in ("", " "):
            continue
        assert spelling not in everything, f"the secret leaked as {spelling!r}"


COPIES = [copy.copy, copy.deepcopy]


@pytest.mark.parametrize("copier", COPIES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("after_a_call", [False, True])
def test_a_copy_of_a_contract_instance_is_fresh(copier: Any, after_a_call: bool) -> None:
    """hostile-copies-fresh: a copy, made before or after a call, has no latest call of
    its own; calling it leaves the original's latest call as it was."""
    instance = make_contract(FunctionEngine(lambda request: '{"v": 1}'))
    if after_a_call:
        instance(In(text="original"))
    before = instance.contract_outcome
    duplicate = copier(instance)
    assert duplicate is not instance
    assert duplicate.contract_outcome is None
    duplicate(In(text="copy"))
    assert duplicate.contract_outcome is not None
    assert instance.contract_outcome is before


def test_a_dropped_instance_is_collectable_after_every_entry_point_kind() -> None:
    """hostile-copies-fresh, dropped-instances-collected: a contract instance (hoare
    and the SymbolicAI shim), and an agent, called then dropped, are collected: a
    weakref dies."""
    from hoare.agents import ContractAgent
    from hoare.compat import symbolicai

    engine = FunctionEngine(lambda request: '{"v": 1}')
    refs: list[weakref.ref[Any]] = []
    instance = make_contract(engine)
    instance(In(text="x"))
    refs.append(weakref.ref(instance))
    del instance

    @symbolicai.contract(remedy_retry_params={"tries": 1, "delay": 0})
    class Shim(symbolicai.Expression):
        prompt = "p"

        def forward(self, i: In) -> Out:
            return self.contract_result if self.contract_successful else Out(v=0)

    shim = Shim(engine=engine)
    shim(In(text="y"))
    refs.append(weakref.ref(shim))
    del shim
    agent = ContractAgent(FunctionEngine(lambda request: "done"), max_iterations=2)
    agent.run("go")
    refs.append(weakref.ref(agent))
    del agent
    gc.collect()
    alive = [ref for ref in refs if ref() is not None]
    assert not alive, alive


def test_strict_json_rejects_what_it_must() -> None:
    """The harness's JSON check itself: NaN, Infinity and trailing garbage fail."""
    for bad in ("NaN", '{"a": Infinity}', "[1] x", '"\\ud800"'):
        with pytest.raises(ValueError):
            strict_json(bad)
    assert strict_json('{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "\u00e9"]}


INTERRUPTS = [KeyboardInterrupt, SystemExit, asyncio.CancelledError]
WHERE = ["pre", "post", "forward", "engine"]


@pytest.mark.parametrize("exception", INTERRUPTS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("asynchronous", [False, True])
def test_an_interrupt_propagates_unchanged_after_every_span_ended(
        exception: type[BaseException], where: str, asynchronous: bool) -> None:
    """hostile-interrupts-propagate: KeyboardInterrupt, SystemExit or CancelledError
    raised in a pre- or post-condition, forward or the engine reaches the caller as the
    same exception, sync or async, with every span it started ended."""
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    from hoare import telemetry

    class Counting(SpanProcessor):
        def __init__(self) -> None:
            self.started = 0
            self.ended = 0

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            self.started += 1

        def on_end(self, span: Any) -> None:
            self.ended += 1

    raised = exception("hostile")

    def boom(*_args: object) -> Any:
        raise raised

    engine = FunctionEngine(boom if where == "engine" else (lambda request: '{"v": 1}'))

    @contract(remedy_retry_params={"tries": 2, "delay": 0})
    class Interrupted(Contract):
        prompt = "x"

        def pre(self, i: In) -> bool:
            return boom() if where == "pre" else True  # type: ignore[no-any-return]

        def post(self, o: Out, i: In) -> bool:
            return boom() if where == "post" else True  # type: ignore[no-any-return]

        def forward(self, i: In) -> Out:
            if where == "forward":
                boom()
            return self.contract_result if self.contract_successful else Out(v=0)

    counting = Counting()
    provider = TracerProvider()
    provider.add_span_processor(counting)
    telemetry.instrument(tracer_provider=provider)
    try:
        instance = Interrupted(engine=engine)
        with pytest.raises(exception) as caught:
            if asynchronous:
                asyncio.run(instance.acall(In(text="x")))
            else:
                instance(In(text="x"))
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    assert caught.value is raised
    assert counting.started >= 1
    assert counting.ended == counting.started
