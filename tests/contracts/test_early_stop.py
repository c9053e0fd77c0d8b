"""Streams stopped early (issue 16, item 3): a doomed answer is cancelled as soon as a
complete field or a post-condition on complete fields fails, through the real
``openai`` client and the loopback server's server-sent events; and a stop never
rejects an answer the full check accepts (a property test against pydantic and the
predicates themselves)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, stream
from pydantic import AfterValidator, ConfigDict, ValidationError, field_validator

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.contracts.early_stop import EarlyStop, plan_for, value_reads
from hoare.errors import RetryableEngineError
from hoare.kernel import ViolationKind


class Q(LLMDataModel):
    text: str


class A(LLMDataModel):
    label: str
    score: int = Field(ge=0, le=10)
    notes: str


def _label(a: A) -> bool:
    return a.label in ("good", "bad")


@contract(stream=True, remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Label(Contract[Q, A]):
    prompt = "Label it."
    post_conditions = [
        Post(lambda a: a.label in ("good", "bad"), "label is good or bad"),
        Post(lambda a, q: a.score <= len(q.text) + 5, "score at most len(text) + 5"),
        Post(lambda a: len(a.notes) < 40, "short notes"),
    ]

    def forward(self, q: Q) -> A:
        return self.contract_result


BAD = ['{"label"', ': "meh"', ', "score": 3', ', "notes": "', *["x"] * 30, '"}']
GOOD = ['{"label": "good"', ', "score": 3', ', "notes": "fine"}']


def test_a_doomed_stream_is_cancelled_and_the_remedy_goes_on() -> None:
    """early-stop-type-violation: the stopped attempt is one type violation, fed
    back; the rest of the stream is never read."""
    with OpenAIServer([stream(*BAD, interval=0.05), stream(*GOOD)]) as server:
        contracted = Label(engine=server.engine())
        assert contracted(Q(text="t")).label == "good"
        outcome = contracted.contract_outcome
        body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.streams_written()[0] < len(BAD) // 2  # the rest was never sent
    first = outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.TYPE and first.error_type == "StoppedEarly"
    assert first.message == "the answer was stopped early: label is good or bad"
    assert outcome.usage["stopped_early"] == 1 and outcome.success
    # the corrective prompt names the condition
    assert "label is good or bad" in server.bodies[1]["messages"][-1]["content"]


def test_a_field_that_fails_its_own_type_stops_the_stream_async() -> None:
    pieces = ['{"label": "good"', ', "score": 99', ', "notes": "', *["y"] * 30, '"}']
    with OpenAIServer([stream(*pieces, interval=0.05), stream(*GOOD)]) as server:
        contracted = Label(engine=server.engine())

        async def main() -> tuple[A, Any]:
            value = await contracted.acall(Q(text="t"))
            return value, contracted.contract_outcome  # this task's latest call

        result, outcome = asyncio.run(main())
    assert result.score == 3
    assert "field 'score' is not valid" in outcome.attempts[0].violations[0].message
    assert server.streams_written()[0] < len(pieces) // 2


def test_a_post_condition_reading_the_input_is_checked_early() -> None:
    pieces = ['{"label": "bad"', ', "score": 9', ', "notes": "', *["z"] * 30, '"}']
    with OpenAIServer([stream(*pieces, interval=0.05), stream(*GOOD)]) as server:
        contracted = Label(engine=server.engine())
        contracted(Q(text="t"))  # score 9 > len("t") + 5
        message = contracted.contract_outcome.attempts[0].violations[0].message
    assert message.endswith("score at most len(text) + 5")


def test_tokens_saved_are_estimated_from_complete_answers() -> None:
    @contract(stream=True, remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Fresh(Label):
        pass

    long_good = ['{"label": "good"', ', "score": 3', ', "notes": "', *["n"] * 20, '"}']
    with OpenAIServer([stream(*long_good), stream(*BAD), stream(*GOOD)]) as server:
        contracted = Fresh(engine=server.engine())
        contracted(Q(text="t"))
        contracted(Q(text="t"))
        usage = contracted.contract_outcome.usage
    # the complete answer had 24 chunks; the stopped one was cut after 3
    assert usage["stopped_early"] == 1 and usage["output_tokens_saved"] == 24 - 3


def test_no_stream_without_stream_true() -> None:
    @contract(remedy_retry_params={"tries": 1})
    class Plain(Contract[Q, A]):
        prompt = "Label it."

        def forward(self, q: Q) -> A:
            return self.contract_result

    with OpenAIServer(['{"label": "good", "score": 3, "notes": ""}']) as server:
        Plain(engine=server.engine())(Q(text="t"))
        assert "stream" not in server.bodies[0]


def test_what_can_be_stopped_early() -> None:
    plan = plan_for(Label.__hoare__)
    assert plan is not None
    assert {s.message: sorted(r) for s, r in plan.checks} == {
        "label is good or bad": ["label"], "score at most len(text) + 5": ["score"],
        "short notes": ["notes"]}

    class Checked(LLMDataModel):
        a: int

        @field_validator("a")
        @classmethod
        def positive(cls, value: int) -> int:
            return value

    class Frozen(LLMDataModel):
        model_config = ConfigDict(frozen=True)
        a: int

    class Strict(LLMDataModel):
        model_config = ConfigDict(strict=True)
        a: int

    class Aliased(LLMDataModel):  # {"x": "bad", "y": 1} passes: "x" is ignored
        x: int = Field(alias="y")

    class Annotated_(LLMDataModel):
        a: Annotated[int, AfterValidator(lambda v: v)]

    for output in (Checked, Frozen, Strict, int, Aliased, Annotated_):
        def forward(self: Any, q: Q) -> Any:
            return self.contract_result

        forward.__annotations__ = {"q": Q, "return": output}  # resolved, not a string
        made = contract(stream=True)(type("C", (Contract,), {"prompt": "x",
                                                             "forward": forward}))
        assert plan_for(made.__hoare__) is None, output

    @contract(stream=True)
    class Whole(Contract[Q, A]):
        prompt = "x"
        post_conditions = [Post(lambda a: _label(a), "passed on whole"),
                           Post(lambda a: a.label and [a for a in "xy"], "rebinds a")]

        def forward(self, q: Q) -> A:
            return self.contract_result

    assert [value_reads(s) for s in Whole.__hoare__.post] == [None, None]
    assert plan_for(Whole.__hoare__).checks == ()  # type: ignore[union-attr]


def _full_check(text: str, used: Q) -> bool:
    """What the contract decides on the whole answer: pydantic, then every predicate."""
    try:
        value = A.model_validate_json(text)
    except ValidationError:
        return False
    for source in Label.__hoare__.post:
        try:
            verdict = source.fn(value, used) if source.takes_input else source.fn(value)
        except Exception:
            return False
        if verdict is not None and not verdict:
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(label=st.sampled_from(["good", "bad", "meh", ""]),
       score=st.one_of(st.integers(-3, 14), st.floats(allow_nan=False, width=32),
                       st.text(max_size=3)),
       notes=st.text(max_size=50), text=st.text(max_size=8),
       order=st.permutations(["label", "score", "notes"]),
       cut=st.integers(1, 9))
def test_a_stop_never_rejects_an_answer_the_full_check_accepts(
        label: str, score: Any, notes: str, text: str, order: list[str], cut: int) -> None:
    """early-stop-sound: streamed in chunks, a stop happens only on an answer
    pydantic or a predicate rejects."""
    fields = {"label": label, "score": score, "notes": notes}
    answer = json.dumps({k: fields[k] for k in order})
    used = Q(text=text)
    plan = plan_for(Label.__hoare__)
    assert plan is not None

    def passes(source: Any, partial: object) -> bool:
        try:
            verdict = source.fn(partial, used) if source.takes_input else source.fn(partial)
        except Exception:
            return False
        return verdict is None or bool(verdict)

    watch = EarlyStop(plan, passes)
    reason = None
    for end in range(cut, len(answer) + cut, cut):  # the answer in chunks of `cut` chars
        reason = watch(answer[:end])
        if reason:
            break
    if reason is not None:
        assert not _full_check(answer, used), (answer, reason)


def test_the_engine_reports_a_broken_stream() -> None:
    from hoare.engines.base import Message, Request

    request = Request(messages=(Message("user", "x"),), watch=lambda text: None)
    with OpenAIServer([stream('{"a"', ": 1}")]) as server:
        response = server.engine().complete(request)
    assert response.text == '{"a": 1}' and response.stopped_early is None
    assert response.usage.output_tokens == 2 and response.finish_reasons == ("stop",)
    with pytest.raises(RetryableEngineError, match="ZeroDivisionError"):  # not a crash
        with OpenAIServer([stream('{"a"', ": 1}")]) as server:
            server.engine(max_retries=0).complete(Request(
                messages=(Message("user", "x"),), watch=lambda text: 1 / 0))  # type: ignore[arg-type, return-value]


class Inner(LLMDataModel):
    n: int = Field(le=5)


class B(LLMDataModel):
    tags: list[int] = Field(max_length=3)
    inner: Inner
    total: float


@contract(stream=True)
class Nested(Contract[Q, B]):
    prompt = "x"
    post_conditions = [Post(lambda b: sum(b.tags) < 10, "small tags"),
                       Post(lambda b: b.inner.n != 3, "not three"),
                       Post(lambda b: b.total > 1.5, "total above 1.5")]

    def forward(self, q: Q) -> B:
        return self.contract_result


@settings(max_examples=300, deadline=None)
@given(tags=st.lists(st.integers(-2, 12), max_size=5), n=st.integers(0, 7),
       total=st.one_of(st.integers(-20, 200), st.floats(-5, 5)),
       order=st.permutations(["tags", "inner", "total"]), cut=st.integers(1, 7),
       spaces=st.booleans())
def test_nested_values_and_numbers_are_judged_only_once_complete(
        tags: list[int], n: int, total: float, order: list[str], cut: int,
        spaces: bool) -> None:
    """early-stop-sound: nested values and numbers are judged only once complete;
    every rejected answer is stopped by the time it closes."""
    fields: dict[str, Any] = {"tags": tags, "inner": {"n": n}, "total": total}
    answer = json.dumps({k: fields[k] for k in order},
                        separators=(", ", ": ") if spaces else (",", ":"))
    plan = plan_for(Nested.__hoare__)
    assert plan is not None and len(plan.checks) == 3

    def passes(source: Any, partial: object) -> bool:
        try:
            verdict = source.fn(partial)
        except Exception:
            return False
        return verdict is None or bool(verdict)

    watch = EarlyStop(plan, passes)
    stopped = any(watch(answer[:end]) for end in range(cut, len(answer) + cut, cut))
    try:
        value = B.model_validate_json(answer)
        accepted = all(passes(s, value) for s in Nested.__hoare__.post)
    except ValidationError:
        accepted = False
    assert not (stopped and accepted), answer
    if not accepted:  # and it is caught at the latest when the object closes
        assert stopped, answer


def test_a_cache_replays_a_stopped_stream_as_stopped(tmp_path: Any) -> None:
    from hoare.engines import CachedEngine

    path = tmp_path / "cache.jsonl"
    with OpenAIServer([stream(*BAD, interval=0.02), stream(*GOOD)]) as server:
        recorded = Label(engine=CachedEngine(server.engine(), path, mode="create"))
        recorded(Q(text="t"))
    replayed = Label(engine=CachedEngine(None, path, mode="replay"))  # type: ignore[arg-type]
    assert replayed(Q(text="t")).label == "good"
    outcome = replayed.contract_outcome
    assert outcome.attempts[0].violations[0].error_type == "StoppedEarly"
