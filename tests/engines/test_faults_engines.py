"""A chaos engine: every way an engine can misbehave ends in a clear, typed outcome.

Each case is either a violation fed to the remedy loop (the next attempt can succeed)
or a typed engine error that ends the stage; never an unhandled crash, never a lost
answer. Also: an answer holding several JSON values yields the first that validates,
and ``NaN``/``Infinity`` never pass a float field.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable

import pytest

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.engines import (
    EngineAnswerError,
    EngineError,
    EngineTimeout,
    FunctionEngine,
    Request,
    Response,
    Usage,
)
from hoare.errors import FatalEngineError, RetryableEngineError
from hoare.kernel import ViolationKind

GOOD = json.dumps({"answer": "fine"})


class Q(LLMDataModel):
    text: str = Field(description="a question")


class A(LLMDataModel):
    answer: str = Field(description="the answer")


class Measure(LLMDataModel):
    value: float = Field(description="a measurement")


FALLBACK = A(answer="fallback")


@contract(remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
class Ask(Contract):
    prompt = "Answer the question."
    post_conditions = [Post(lambda a: a.answer != "forbidden", "the answer is not 'forbidden'")]

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else FALLBACK  # type: ignore


@contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Measure1(Contract):
    prompt = "Measure."

    def forward(self, q: Q) -> Measure:
        return self.contract_result if self.contract_successful else Measure(value=0.0)  # type: ignore


def scripted(*answers: object) -> Callable[[Request], object]:
    """``fn(request)`` giving ``answers`` in turn: an exception instance is raised, a
    callable is called, anything else returned as is."""
    queue = list(answers)
    lock = threading.Lock()

    def fn(request: Request) -> object:
        with lock:
            item = queue.pop(0) if queue else GOOD
        if isinstance(item, BaseException):
            raise item
        return item() if callable(item) else item
    return fn


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this exception raises")


class NotAStr(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


RECOVERABLE = [ValueError("bad"), RuntimeError("boom"), OSError(5, "io"), KeyError("k"),
               ZeroDivisionError("zero"), RecursionError("deep"), BrokenStr(), NotAStr(),
               RetryableEngineError("the engine hiccuped"), UnicodeDecodeError(
                   "utf-8", b"\xff", 0, 1, "invalid start byte")]


@pytest.mark.parametrize("error", RECOVERABLE, ids=lambda e: type(e).__name__)
def test_an_engine_exception_is_an_error_violation_and_the_next_attempt_runs(
        error: Exception) -> None:
    ask = Ask(engine=FunctionEngine(scripted(error, GOOD)))
    assert ask(Q(text="?")) == A(answer="fine")
    outcome = ask.contract_outcome
    assert outcome.success and outcome.generation_attempts == 2
    first = outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.ERROR and first.error_type == type(error).__name__
    assert isinstance(first.message, str) and first.message


def test_a_fatal_engine_error_ends_the_stage_with_a_typed_violation() -> None:
    ask = Ask(engine=FunctionEngine(scripted(FatalEngineError("quota gone"), GOOD)))
    assert ask(Q(text="?")) == FALLBACK
    outcome = ask.contract_outcome
    assert not outcome.success and outcome.generation_attempts == 1
    assert outcome.attempts[0].violations[0].error_type == "FatalEngineError"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupts_are_not_swallowed(interrupt: type[BaseException]) -> None:
    ask = Ask(engine=FunctionEngine(scripted(interrupt())))
    with pytest.raises(interrupt):
        ask(Q(text="?"))


def _hang(request: Request) -> str:
    time.sleep(30)
    return GOOD


async def _ahang(request: Request) -> str:
    await asyncio.sleep(30)
    return GOOD


@pytest.mark.parametrize("fn", [_hang, _ahang], ids=["sync", "async"])
def test_a_hanging_engine_is_bounded_by_the_timeout(fn: Callable[[Request], object]) -> None:
    ask = Ask(engine=FunctionEngine(fn), timeout=0.3)
    started = time.monotonic()
    assert ask(Q(text="?")) == FALLBACK
    violation = ask.contract_outcome.attempts[0].violations[0]
    assert violation.error_type == "EngineTimeout" and "0.3 s" in violation.message

    async def in_a_task() -> tuple[object, object]:
        return await ask.acall(Q(text="?")), ask.contract_outcome

    result, outcome = asyncio.run(in_a_task())
    assert result == FALLBACK
    assert time.monotonic() - started < 20  # 60 s of sleeping without the bound
    assert outcome.attempts[0].violations[0].error_type == "EngineTimeout"  # type: ignore[attr-defined]
    assert issubclass(EngineTimeout, FatalEngineError)


@pytest.mark.parametrize("answer", [None, b'{"answer": "x"}', {"answer": "x"}, 42, 1.5,
                                    ["a"], object()], ids=lambda a: type(a).__name__)
def test_non_string_answers_are_typed_errors_then_remedied(answer: object) -> None:
    ask = Ask(engine=FunctionEngine(scripted(lambda: answer, GOOD)))
    assert ask(Q(text="?")) == A(answer="fine")
    first = ask.contract_outcome.attempts[0].violations[0]
    assert first.error_type == "EngineAnswerError"
    assert issubclass(EngineAnswerError, RetryableEngineError)


class RawChaos:
    """Not a FunctionEngine: returns whatever it is given from ``complete``."""

    model = "chaos"

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)

    def complete(self, request: Request) -> object:
        return self.answers.pop(0) if self.answers else Response((GOOD,), ("stop",), Usage(1))

    async def acomplete(self, request: Request) -> object:
        return self.complete(request)


@pytest.mark.parametrize("answer", [None, "just text", b"bytes", {"texts": [GOOD]},
                                    Response((None,)),  # type: ignore[arg-type]
                                    Response(()), Response((b"{}",))],  # type: ignore[arg-type]
                         ids=["None", "str", "bytes", "dict", "None-text", "no-texts",
                              "bytes-text"])
def test_a_raw_engine_returning_junk_is_a_type_violation(answer: object) -> None:
    async def in_a_task(ask: Ask) -> tuple[object, object]:
        return await ask.acall(Q(text="?")), ask.contract_outcome

    for call in ("sync", "async"):
        ask = Ask(engine=RawChaos(answer))  # type: ignore[arg-type]
        if call == "sync":
            result, outcome = ask(Q(text="?")), ask.contract_outcome
        else:
            result, outcome = asyncio.run(in_a_task(ask))
        assert result == A(answer="fine")
        first = outcome.attempts[0].violations[0]  # type: ignore[attr-defined]
        assert first.kind is ViolationKind.TYPE, first


def test_a_huge_answer_is_a_violation_with_a_bounded_message() -> None:
    huge = "{" + "x" * 10_000_000  # 10 MB, never closes
    ask = Ask(engine=FunctionEngine(scripted(huge, GOOD)))
    assert ask(Q(text="?")) == A(answer="fine")
    first = ask.contract_outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.TYPE
    assert len(first.message) < 100_000


@pytest.mark.parametrize("broken", ['{"answer": "\ud800"}', '\udcff{"answer": "ok"}\ud800',
                                    "\ud800"])
def test_broken_unicode_is_a_violation_or_a_clean_answer(broken: str) -> None:
    ask = Ask(engine=FunctionEngine(scripted(broken, GOOD)))
    result = ask(Q(text="?"))
    outcome = ask.contract_outcome
    assert outcome.success
    if outcome.generation_attempts == 2:
        assert outcome.attempts[0].violations[0].kind is ViolationKind.TYPE
        assert result == A(answer="fine")
    else:  # the surrogates sat outside the JSON value
        assert result == A(answer="ok")


def test_the_first_value_that_validates_wins_not_the_longest() -> None:
    text = ('Example: {"question": "?"}. Answer: {"answer": "short"} '
            'or maybe {"answer": "a much longer answer that the old extractor preferred"}')
    ask = Ask(engine=FunctionEngine(scripted(text)))
    assert ask(Q(text="?")) == A(answer="short")


def test_post_conditions_run_on_the_value_that_validated() -> None:
    text = '{"answer": "forbidden"} {"answer": "allowed"}'
    ask = Ask(engine=FunctionEngine(scripted(text, GOOD)))
    assert ask(Q(text="?")) == A(answer="fine")  # the first valid value failed post: remedy
    first = ask.contract_outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.PREDICATE


def test_many_json_objects() -> None:
    objects = " ".join(json.dumps({"n": i}) for i in range(1000))
    ask = Ask(engine=FunctionEngine(scripted(objects + " " + GOOD, GOOD)))
    assert ask(Q(text="?")) == A(answer="fine")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_never_pass_a_float_field(token: str) -> None:
    for text in (f'{{"value": {token}}}', f'Here: {{"value": {token}}} done.',
                 f'```json\n{{"value": {token}}}\n```'):
        measure = Measure1(engine=FunctionEngine(scripted(text, text)))
        assert measure(Q(text="?")) == Measure(value=0.0)
        assert measure.contract_outcome.attempts[0].violations[0].kind is ViolationKind.TYPE


def test_engine_errors_are_in_the_hoare_error_tree() -> None:
    from hoare.engines import (
        BudgetExceeded,
        CacheConflict,
        CacheMiss,
        ConnectionFailed,
        EngineConfigError,
        MissingPrice,
        RateLimited,
        RequestRejected,
        ServerError,
        TransportError,
    )
    from hoare.errors import BudgetError, HoareError

    assert EngineError is __import__("hoare").EngineError
    for cls in (TransportError, RateLimited, EngineTimeout, ConnectionFailed, ServerError,
                RequestRejected, CacheMiss, CacheConflict, EngineConfigError):
        assert issubclass(cls, FatalEngineError) and issubclass(cls, HoareError), cls
    for cls in (BudgetExceeded, MissingPrice):
        assert issubclass(cls, BudgetError), cls
    assert issubclass(MissingPrice, ValueError) and issubclass(EngineConfigError, ValueError)
