"""What an engine's error says its request cost (a refusal, a filtered answer: paid for,
but not answers) reaches the call's outcome usage, its raised error, and the stats
record, as the answers' usage does: generated sequences of refusals, filtered and valid
answers with random usages, on the loopback server through the real ``openai`` client,
sync and async, streamed and not (spec/pipeline.md §8.12)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import MODEL, OpenAIServer, Reply, completion

from hoare import Contract, ContractViolationError, Field, LLMDataModel, contract
from hoare.contracts import configuration
from hoare.contracts.driver import spent_by
from hoare.engines.base import ContentFiltered, ModelRefusal, Response, Usage

FAST = {"delay": 0, "jitter": 0, "tries": 4}
REFUSAL = "I cannot help with that request, sorry. " * 8  # long: its tokens are plausible


class Question(LLMDataModel):
    text: str = Field(description="the question")


class Answer(LLMDataModel):
    value: int = Field(description="the answer")


@contract(remedy_retry_params=FAST, policy="enforce")
class Ask(Contract[Question, Answer]):
    prompt = "Answer the question with a number."

    def forward(self, question: Question) -> Answer:
        return self.contract_result


@contract(remedy_retry_params=FAST, policy="enforce", stream=True)
class AskStreamed(Ask):
    pass


GOOD = json.dumps({"value": 42})


def _body(message: dict[str, Any], finish: str, prompt: int, output: int) -> Reply:
    return Reply(200, {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output}})


def scripted(kind: str, prompt: int, output: int) -> Reply:
    """One server answer: a refusal, a filtered answer or the valid answer."""
    if kind == "refusal":
        return _body({"role": "assistant", "content": None, "refusal": REFUSAL}, "stop",
                     prompt, output)
    if kind == "filtered":
        return _body({"role": "assistant", "content": None}, "content_filter", prompt, output)
    return completion(GOOD, prompt_tokens=prompt, completion_tokens=output)


class Tally:
    """A pass-through engine that sums what its engine's answers and errors cost: the
    oracle (the engine's own checked counts, whatever it clamped)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.total = Usage()

    def _count(self, usage: object) -> None:
        if isinstance(usage, Usage):
            self.total = self.total + usage

    def complete(self, request: Any) -> Any:
        try:
            response = self.inner.complete(request)
        except Exception as error:
            self._count(getattr(error, "usage", None))
            raise
        self._count(response.usage if isinstance(response, Response) else None)
        return response

    async def acomplete(self, request: Any) -> Any:
        try:
            response = await self.inner.acomplete(request)
        except Exception as error:
            self._count(getattr(error, "usage", None))
            raise
        self._count(response.usage if isinstance(response, Response) else None)
        return response


class Records:
    """A stats store that keeps the records it is given."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []

    def record(self, record: tuple[Any, ...]) -> None:
        self.records.append(record)


def _tokens(usage: Any) -> tuple[int, int, int]:
    return (usage.get("requests", 0), usage.get("input_tokens", 0),
            usage.get("output_tokens", 0))


ANSWERS = st.lists(st.tuples(st.sampled_from(["refusal", "filtered", "valid"]),
                             st.integers(0, 60), st.integers(0, 40)), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answers=ANSWERS, asynchronous=st.booleans(), streamed=st.booleans())
def test_outcome_and_record_usage_sum_answers_and_errors(
        monkeypatch: pytest.MonkeyPatch, answers: list[tuple[str, int, int]],
        asynchronous: bool, streamed: bool) -> None:
    answers = answers + [("valid", 1, 1)] * FAST["tries"]  # the server never runs dry
    script = [(_streamed if streamed else scripted)(*answer) for answer in answers]
    store = Records()
    monkeypatch.setattr(configuration, "stats_store", lambda: store)
    with OpenAIServer(script) as server:
        tally = Tally(server.engine(max_retries=0))
        ask = (AskStreamed if streamed else Ask)(engine=tally)
        if asynchronous:  # the call's latest outcome is seen in its own context
            raised, outcome, exception = asyncio.run(_acalled(ask))
        else:
            raised, outcome, exception = _called(ask)
    sent = min(FAST["tries"], next(i + 1 for i, a in enumerate(answers) if a[0] == "valid"))
    assert outcome is not None
    expected = (tally.total.requests, tally.total.input_tokens, tally.total.output_tokens)
    assert expected[0] == sent
    assert _tokens(outcome.usage) == expected
    assert (raised is None) == any(kind == "valid" for kind, _, _ in answers[:sent])
    if raised is not None:
        assert raised.outcome is outcome
        assert exception is not None
        assert exception.outcome is outcome
    (record,) = store.records
    assert (record[9], record[10]) == expected[1:]


Called = tuple[ContractViolationError | None, Any, Any]
QUESTION = Question(text="six times seven?")


def _called(ask: Ask) -> Called:
    try:
        ask(QUESTION)
    except ContractViolationError as error:
        return error, ask.contract_outcome, ask.contract_exception
    return None, ask.contract_outcome, ask.contract_exception


async def _acalled(ask: Ask) -> Called:
    try:
        await ask.acall(QUESTION)
    except ContractViolationError as error:
        return error, ask.contract_outcome, ask.contract_exception
    return None, ask.contract_outcome, ask.contract_exception


def _streamed(kind: str, prompt: int, output: int) -> Reply:
    """A streamed answer: its pieces are its output tokens (the server counts them)."""
    from openai_server import stream

    pieces = ["x"] * output if kind != "valid" else [GOOD[:5], GOOD[5:]] + [" "] * output
    if kind == "refusal":
        return stream(refusal=REFUSAL, prompt_tokens=prompt)
    if kind == "filtered":
        return stream(prompt_tokens=prompt, finish_reason="content_filter")
    return stream(*pieces, prompt_tokens=prompt)


def test_the_stats_store_counts_a_refusals_tokens(tmp_path: Any) -> None:
    """The repro: a refusal costing 100/50, then a valid answer costing 3/2."""
    import hoare
    from hoare.stats.query import query

    path = str(tmp_path / "usage.db")
    with OpenAIServer([scripted("refusal", 100, 50), scripted("valid", 3, 2)]) as running:
        hoare.configure(stats=path, label="usage")
        try:
            ask = Ask(engine=running.engine(max_retries=0))
            assert ask(Question(text="six times seven?")) == Answer(value=42)
            assert hoare.flush_stats()
        finally:
            hoare.configure(stats=None, label=None)
    outcome = ask.contract_outcome
    assert outcome is not None
    assert _tokens(outcome.usage) == (2, 103, 52)
    (row,) = query(path)
    assert (row["input_tokens"], row["output_tokens"]) == (103, 52)


class _Hostile(Exception):
    """An engine error whose ``usage`` cannot be read, or is not a ``Usage``."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how

    def __getattribute__(self, name: str) -> Any:
        if name == "usage":
            how = object.__getattribute__(self, "how")
            if how == "raises":
                raise RuntimeError("no usage here")
            if how == "lookalike":
                return type("Lookalike", (), {"requests": 5, "input_tokens": 9,
                                              "output_tokens": 9})()
            if how == "dict":
                return {"requests": 1, "input_tokens": 7}
        return object.__getattribute__(self, name)


class _Counted(Usage):
    """A ``Usage`` subclass whose ``__add__`` lies: only its fields are read."""

    def __add__(self, other: Usage) -> Usage:
        raise RuntimeError("not added")


@pytest.mark.parametrize("how", ["raises", "lookalike", "dict", "missing"])
def test_a_foreign_errors_usage_counts_as_none(how: str) -> None:
    assert spent_by(_Hostile(how)) is None


@given(st.integers(-5, 2**70), st.integers(-5, 2**70), st.integers(-5, 2**70))
def test_a_real_usage_is_copied_plainly(requests: int, inputs: int, outputs: int) -> None:
    spent = spent_by(ModelRefusal("no", usage=_Counted(requests, inputs, outputs)))
    assert type(spent) is Usage
    assert spent == Usage(requests, inputs, outputs)
    filtered = spent_by(ContentFiltered("withheld", usage=Usage(requests, inputs, outputs)))
    assert filtered == Usage(requests, inputs, outputs)


class _Failing:
    """An engine whose errors' ``usage`` is hostile, then a valid answer."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)

    def complete(self, request: Any) -> Response:
        if self.errors:
            raise self.errors.pop(0)
        return Response(texts=(GOOD,), usage=Usage(1, 3, 2))

    async def acomplete(self, request: Any) -> Response:
        return self.complete(request)


def test_hostile_errors_never_fail_the_call_nor_count() -> None:
    from hoare.engines.base import RetryableEngineError

    class Hostile(RetryableEngineError):
        @property
        def usage(self) -> Usage:
            raise RuntimeError("unreadable")

    ask = Seen(engine=_Failing(Hostile("one"), ModelRefusal("no", usage=Usage(1, 10, 4))))
    assert ask(Question(text="q")) == Answer(value=42)
    outcome = ask.contract_outcome
    assert outcome is not None
    assert _tokens(outcome.usage) == (2, 13, 6)
    assert ask.seen == [(2, 13, 6)]  # what forward saw: the same


@contract(remedy_retry_params=FAST)
class Seen(Ask):
    """Keeps the usage its ``forward`` sees in ``contract_outcome``."""

    seen: list[tuple[int, int, int]]

    def forward(self, question: Question) -> Answer:
        outcome = self.contract_outcome
        assert outcome is not None
        vars(self).setdefault("seen", []).append(_tokens(outcome.usage))
        return self.contract_result if self.contract_successful else Answer(value=0)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10**6), st.integers(0, 10**6)),
                min_size=1, max_size=3))
def test_on_violation_sees_what_the_refusals_cost(
        refusals: list[tuple[bool, int, int]]) -> None:
    """The handler, ``forward`` and the outcome after the call see the same usage."""
    errors = [ModelRefusal("no", usage=Usage(1, i, o)) if refused
              else ContentFiltered("withheld", usage=Usage(1, i, o))
              for refused, i, o in refusals]
    handled: list[tuple[int, int, int]] = []

    @contract(remedy_retry_params={**FAST, "tries": len(refusals)}, policy="observe",
              on_violation=lambda outcome: handled.append(_tokens(outcome.usage)))
    class Observed(Seen):
        pass

    ask = Observed(engine=_Failing(*errors))
    ask(Question(text="q"))  # observe: forward runs on the failed outcome
    total = (len(refusals), sum(i for _, i, _ in refusals), sum(o for _, _, o in refusals))
    outcome = ask.contract_outcome
    assert outcome is not None and not outcome.success
    assert handled == [total]
    assert ask.seen == [total]
    assert _tokens(outcome.usage) == total
    exception = ask.contract_exception
    assert isinstance(exception, ContractViolationError) and exception.outcome is outcome


THREADS_CHILD = r'''
import threading
from typing import Any
from hoare import Contract, Field, LLMDataModel, contract
from hoare.engines.base import ContentFiltered, ModelRefusal, Response, Usage

class Question(LLMDataModel):
    text: str = Field(description="the question")

class Answer(LLMDataModel):
    value: int = Field(description="the answer")

class Engine:
    """Attempt 1 is refused or filtered, attempt 2 answered; each request's usage is
    told by the question's number, so every thread's sum is its own."""
    def complete(self, request: Any) -> Response:
        k = int(request.input.text)
        if request.attempt == 1:
            error = ModelRefusal if k % 2 else ContentFiltered
            raise error("no", usage=Usage(1, 100 * k, k))
        return Response(texts=('{"value": %d}' % k,), usage=Usage(1, 3, 2))
    async def acomplete(self, request: Any) -> Response:
        return self.complete(request)

@contract(remedy_retry_params={"delay": 0, "jitter": 0, "tries": 2})
class Ask(Contract[Question, Answer]):
    prompt = "Answer."
    def forward(self, question: Question) -> Answer:
        return self.contract_result

ask = Ask(engine=Engine())
wrong = []
def run(k: int) -> None:
    for _ in range(20):
        ask(Question(text=str(k)))
        usage = dict(ask.contract_outcome.usage)
        if usage != {"requests": 2, "input_tokens": 100 * k + 3, "output_tokens": k + 2}:
            wrong.append((k, usage))
threads = [threading.Thread(target=run, args=(k,)) for k in range(1, 9)]
for t in threads: t.start()
for t in threads: t.join()
print("wrong", wrong[:3], len(wrong))
'''


def test_threads_sharing_an_instance_each_count_their_own_refusals() -> None:
    """A shared instance under 8 threads: each call's outcome counts its own refusal
    (child process: threads in the test process would share its state)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", THREADS_CHILD], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "wrong [] 0", done.stdout
