"""The public @contract API: binding, native types, predicates, fallback, per-call state."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Literal

import pytest

from hoare import (
    Contract,
    ContractDefinitionError,
    ContractViolationError,
    EngineNotConfigured,
    Field,
    LLMDataModel,
    Post,
    ResultTypeError,
    configure,
    contract,
)
from hoare.engines import FunctionEngine, Request, Response, Usage
from hoare.kernel import Phase, ViolationKind

FAST = {"delay": 0, "jitter": 0}


class Question(LLMDataModel):
    text: str = Field(description="the question")
    limit: int = Field(default=20, ge=1, le=100, description="max answer length")


class Answer(LLMDataModel):
    answer: str = Field(description="the answer")
    score: int = Field(ge=0, le=100, description="confidence in percent")


def scripted(*answers: str, log: list[Request] | None = None) -> FunctionEngine:
    """An engine answering with ``answers`` in order (and failing loudly past them)."""
    queue = list(answers)

    def answer(request: Request) -> str:
        if log is not None:
            log.append(request)
        if not queue:
            raise AssertionError(f"engine called more often than scripted ({request.attempt})")
        return queue.pop(0)

    return FunctionEngine(answer)


def answer_json(text: str = "yes", score: int = 50) -> str:
    return json.dumps({"answer": text, "score": score})


@contract(remedy_retry_params=FAST)
class QA(Contract):
    prompt = "Answer the question briefly."
    post_conditions = [
        Post(lambda a: a.score > 10, "score must exceed 10", family="confidence"),
        Post(lambda a, q: len(a.answer) <= q.limit, "answer longer than the limit",
             family="length"),
    ]

    def pre(self, question: Question) -> bool:
        if not question.text.strip():
            raise ValueError("the question must not be empty")
        return True

    def forward(self, question: Question, **kwargs: object) -> Answer:
        if self.contract_successful:
            return self.contract_result  # type: ignore[no-any-return]
        return Answer(answer="fallback", score=0)


# -- binding -------------------------------------------------------------------------


def test_input_binding_positional_by_name_and_input_keyword() -> None:
    q = Question(text="why?")
    for call in (lambda c: c(q), lambda c: c(question=q), lambda c: c(input=q)):
        qa = QA(engine=scripted(answer_json()))
        assert call(qa).answer == "yes"
        assert qa.contract_successful


def test_other_kwargs_reach_forward_and_act_untouched() -> None:
    seen: dict[str, object] = {}

    @contract(remedy_retry_params=FAST)
    class Tagged(Contract):
        prompt = "p"

        def act(self, q: Question, **kwargs: object) -> Question:
            seen["act"] = kwargs
            return q

        def forward(self, q: Question, **kwargs: object) -> Answer:
            seen["forward"] = kwargs
            return self.contract_result  # type: ignore[no-any-return]

    Tagged(engine=scripted(answer_json()))(Question(text="x"), tag=7, mode="fast")
    assert seen == {"act": {"tag": 7, "mode": "fast"}, "forward": {"tag": 7, "mode": "fast"}}


def test_missing_input_and_extra_positionals_are_clear_errors() -> None:
    qa = QA(engine=scripted())
    with pytest.raises(TypeError, match="question="):
        qa()
    with pytest.raises(TypeError, match="one positional argument"):
        qa(Question(text="a"), Question(text="b"))


# -- native types ----------------------------------------------------------------------


def test_native_types_are_wrapped_for_validation_and_unwrapped_for_user_code() -> None:
    seen: list[tuple[str, object]] = []

    @contract(remedy_retry_params=FAST)
    class Double(Contract):
        prompt = "Double the number."

        def pre(self, x: int) -> bool:
            seen.append(("pre", x))
            return x >= 0

        def act(self, x: int) -> int:
            seen.append(("act", x))
            return x + 1

        def post(self, out: int, used: int) -> bool:
            seen.append(("post", (out, used)))
            return out == 2 * used

        def forward(self, x: int) -> int:
            seen.append(("forward", x))
            return self.contract_result  # type: ignore[no-any-return]

    engine = FunctionEngine(lambda r: json.dumps({"value": r.input * 2}))
    assert Double(engine=engine)(20) == 42
    assert seen == [("pre", 20), ("act", 20), ("post", (42, 21)), ("forward", 21)]
    assert all(type(v) is int for _, v in seen if not isinstance(v, tuple))


@pytest.mark.parametrize(
    ("annotation", "given", "answer", "expected"),
    [
        (str, "hi", '{"value": "HI"}', "HI"),
        (list[int], [1, 2], '{"value": [2, 4]}', [2, 4]),
        (dict[str, int], {"a": 1}, '{"value": {"a": 2}}', {"a": 2}),
        (int | None, None, '{"value": null}', None),
        (int | str, 3, '{"value": "three"}', "three"),
        (Literal["yes", "no"], "yes", '{"value": "no"}', "no"),
        (int, 5, "10", 10),  # a bare value instead of {"value": ...} is accepted
    ],
)
def test_native_type_round_trip(annotation: object, given: object, answer: str,
                                expected: object) -> None:
    class Native(Contract):
        prompt = "transform"

        def forward(self, x, **kwargs):  # type: ignore[no-untyped-def]
            return self.contract_result

    Native.forward.__annotations__ = {"x": annotation, "return": annotation}
    decorated = contract(remedy_retry_params=FAST)(Native)
    instance = decorated(engine=scripted(answer))
    assert instance(given) == expected
    assert instance.contract_successful


def test_postponed_annotations_module_works() -> None:
    # This very module uses `from __future__ import annotations`: QA resolved its hints.
    assert QA.__hoare__.input.model is Question
    assert QA.__hoare__.output.model is Answer


# -- predicates ------------------------------------------------------------------------


def test_all_predicate_messages_reach_the_corrective_prompt() -> None:
    log: list[Request] = []
    qa = QA(engine=scripted(answer_json("x" * 30, 5), answer_json("ok", 50), log=log))
    result = qa(Question(text="why?", limit=10))
    assert result.answer == "ok"
    assert log[1].feedback == ("score must exceed 10", "answer longer than the limit")
    user = log[1].messages[1].content
    assert "score must exceed 10" in user and "answer longer than the limit" in user
    assert '"x' in user  # the latest invalid answer is shown
    assert '"text":"why?"' in user  # and the input


def test_predicate_returning_false_gets_its_source_as_message() -> None:
    @contract(remedy_retry_params=FAST, post_remedy=False)
    class Strict(Contract):
        prompt = "p"

        def post(self, a: Answer) -> bool:
            return a.score >= 90

        def forward(self, q: Question) -> Answer:
            return Answer(answer="fb", score=0)

    s = Strict(engine=scripted(answer_json(score=50)))
    s(Question(text="q"))
    (violation,) = s.contract_outcome.violations
    assert violation.message == "a.score >= 90"
    assert violation.family == "post" and violation.error_type is None


def test_declarative_conditions_each_count_in_their_family() -> None:
    qa = QA(engine=scripted(answer_json(score=50)))
    qa(Question(text="why?"))
    families = dict(qa.contract_outcome.trials)
    assert families == {"pre": True, "confidence": True, "length": True}
    stats = QA.contract_stats()
    assert {"pre", "confidence", "length"} <= set(stats["families"])


def test_per_predicate_policy_override_enforce_raises_in_observe_contract() -> None:
    @contract(remedy_retry_params=dict(FAST, tries=2))
    class Mixed(Contract):
        prompt = "p"
        post_conditions = [Post(lambda a: a.score > 10, "critical", policy="enforce")]

        def forward(self, q: Question) -> Answer:
            return Answer(answer="fb", score=0)

    with pytest.raises(ContractViolationError, match="critical"):
        Mixed(engine=scripted(answer_json(score=1), answer_json(score=2)))(Question(text="q"))


def test_crashing_predicate_is_a_violation_with_its_error_type() -> None:
    @contract(post_remedy=False)
    class Crashy(Contract):
        prompt = "p"
        post_conditions = [Post(lambda a: a.missing_attribute > 0, "never")]

        def forward(self, q: Question) -> Answer:
            return Answer(answer="fb", score=0)

    c = Crashy(engine=scripted(answer_json()))
    assert c(Question(text="q")).answer == "fb"
    (violation,) = c.contract_outcome.violations
    assert violation.error_type == "AttributeError" and "missing_attribute" in violation.message


# -- remedies, attempts, outcome -------------------------------------------------------


def test_tries_n_means_n_generation_attempts_and_nothing_invalid_is_returned() -> None:
    @contract(remedy_retry_params=dict(FAST, tries=3))
    class Three(QA):
        pass

    engine = scripted(answer_json(score=1), "not json", answer_json(score=2))
    t = Three(engine=engine)
    assert t(Question(text="q")).answer == "fallback"  # the contract failed
    outcome = t.contract_outcome
    assert outcome.generation_attempts == 3 and not outcome.success
    assert [a.raw.text for a in outcome.attempts] == [answer_json(score=1), "not json",
                                                      answer_json(score=2)]
    assert outcome.attempts[1].violations[0].kind is ViolationKind.TYPE
    assert t.contract_result is None and t.contract_exception is not None


def test_a_failed_call_never_reports_an_earlier_result() -> None:
    qa = QA(engine=scripted(answer_json(score=77), answer_json(score=1)))
    qa(Question(text="first"))
    assert qa.contract_result.score == 77
    qa.__dict__["_hoare_engine_value"] = scripted(*[answer_json(score=1)] * 5)  # new engine
    qa(Question(text="second"))
    assert not qa.contract_successful and qa.contract_result is None


def test_usage_is_summed_over_every_attempt_on_success_and_failure() -> None:
    def costly(score: int) -> Response:
        return Response((answer_json(score=score),), ("stop",), Usage(1, 100, 7), "m")

    answers = [costly(1), costly(2), costly(50)]
    qa = QA(engine=FunctionEngine(lambda r: answers.pop(0)))
    qa(Question(text="q"))
    assert qa.contract_successful
    assert qa.contract_outcome.usage == {"requests": 3, "input_tokens": 300, "output_tokens": 21}
    assert qa.contract_perf_stats()["contract_outcome"]["usage"]["input_tokens"] == 300


def test_markdown_fenced_json_costs_no_retry() -> None:
    qa = QA(engine=scripted("Sure!\n```json\n" + answer_json() + "\n```\nHope it helps."))
    qa(Question(text="q"))
    assert qa.contract_successful and qa.contract_outcome.generation_attempts == 1


@pytest.mark.parametrize("bad", ["", "   ", '{"answer": "x", "sc', "[1, 2]",
                                 '{"answer": 3, "score": "high"}', "null"])
def test_malformed_output_is_a_type_violation_with_a_clear_message(bad: str) -> None:
    log: list[Request] = []
    qa = QA(engine=scripted(bad, answer_json(), log=log))
    assert qa(Question(text="q")).answer == "yes"
    first = qa.contract_outcome.attempts[0].violations[0]
    assert first.kind is ViolationKind.TYPE and first.message
    assert log[1].feedback == (first.message,)


def test_corrective_prompt_size_stays_flat_over_ten_retries() -> None:
    log: list[Request] = []

    @contract(remedy_retry_params=dict(FAST, tries=10))
    class Ten(QA):
        pass

    Ten(engine=scripted(*[answer_json(score=1)] * 10, log=log))(Question(text="q"))
    sizes = [sum(len(m.content) for m in r.messages) for r in log]
    assert len(sizes) == 10
    assert max(sizes[1:]) == min(sizes[1:])  # every corrective prompt has the same size
    assert sizes[-1] < 2 * sizes[0]


def test_accumulated_errors_list_every_attempt_in_order() -> None:
    log: list[Request] = []

    @contract(accumulate_errors=True, remedy_retry_params=dict(FAST, tries=3))
    class Acc(QA):
        pass

    Acc(engine=scripted(answer_json(score=1), "oops", answer_json(), log=log))(
        Question(text="q"))
    third = log[2]
    assert third.feedback[0] == "score must exceed 10"
    assert "not a valid Answer" in third.feedback[1]
    text = third.messages[1].content
    assert text.index("attempt 1") < text.index("attempt 2")


def test_pre_remedy_shows_the_input_being_repaired() -> None:
    log: list[Request] = []

    @contract(pre_remedy=True, remedy_retry_params=FAST)
    class Repair(QA):
        pass

    engine = scripted(json.dumps({"text": "what is up?", "limit": 20}), answer_json(), log=log)
    r = Repair(engine=engine)
    r(Question(text="   "))
    assert log[0].task == "repair_input"
    assert '"text":"   "' in log[0].messages[1].content
    assert "the question must not be empty" in log[0].messages[1].content
    assert r.contract_successful and r.contract_outcome.input_used.text == "what is up?"


# -- fallback, policies, result check --------------------------------------------------


def test_fallback_forward_gets_the_original_input_on_failure() -> None:
    got: list[object] = []

    @contract(post_remedy=False)
    class Fallback(Contract):
        prompt = "p"

        def act(self, q: Question) -> Question:
            return Question(text=q.text.upper())

        def post(self, a: Answer) -> bool:
            raise ValueError("always wrong")

        def forward(self, q: Question) -> Answer:
            got.append(q.text)
            return Answer(answer="fb", score=0)

    Fallback(engine=scripted(answer_json()))(Question(text="abc"))
    assert got == ["abc"]


def test_enforce_calls_the_handler_once_and_raises_without_forward() -> None:
    handled: list[object] = []
    forwarded: list[object] = []

    @contract(policy="enforce", post_remedy=False, on_violation=handled.append)
    class Enforced(Contract):
        prompt = "p"

        def post(self, a: Answer) -> bool:
            return a.score >= 90

        def forward(self, q: Question) -> Answer:
            forwarded.append(q)
            return Answer(answer="fb", score=0)

    e = Enforced(engine=scripted(answer_json()))
    with pytest.raises(ContractViolationError) as raised:
        e(Question(text="q"))
    assert len(handled) == 1 and not forwarded
    assert raised.value.outcome is e.contract_outcome
    assert raised.value.outcome.violations[0].phase is Phase.POST


def test_wrong_return_type_raises_result_type_error_unless_graceful() -> None:
    class Sloppy(Contract):
        prompt = "p"

        def forward(self, q: Question) -> Answer:
            return {"status": "error"}  # type: ignore[return-value]

    strict = contract(post_remedy=False)(type("Strict", (Sloppy,), {
        "forward": Sloppy.forward, "__module__": __name__}))
    with pytest.raises(ResultTypeError, match=r"must return Answer"):
        strict(engine=scripted("nope"))(Question(text="q"))
    graceful = contract(post_remedy=False, remedy_retry_params={"graceful": True})(
        type("Graceful", (Sloppy,), {"forward": Sloppy.forward, "__module__": __name__}))
    g = graceful(engine=scripted("nope"))
    assert g(Question(text="q")) == {"status": "error"}
    assert g.contract_exception is None and not g.contract_successful


# -- definition errors ------------------------------------------------------------------


def test_definition_errors_name_what_to_fix() -> None:
    with pytest.raises(ContractDefinitionError, match="return type"):
        @contract
        class NoReturn(Contract):
            prompt = "p"

            def forward(self, q: Question):  # type: ignore[no-untyped-def]
                return None

    with pytest.raises(ContractDefinitionError, match=r"subclass of hoare\.Contract"):
        contract(object)

    with pytest.raises(ContractDefinitionError, match=r"act must annotate"):
        @contract
        class BadAct(Contract):
            prompt = "p"

            def act(self, q: Question):  # type: ignore[no-untyped-def]
                return q

            def forward(self, q: Question) -> Answer:
                return Answer(answer="", score=0)

    with pytest.raises(ValueError, match=r"unknown remedy_retry_params"):
        contract(remedy_retry_params={"retries": 3})
    with pytest.raises(ValueError, match="unknown policy"):
        contract(policy="strict")


def test_act_returning_the_wrong_type_is_a_violation() -> None:
    @contract(remedy_retry_params=FAST)
    class BadAct(Contract):
        prompt = "p"

        def act(self, q: Question) -> Question:
            return "not a question"  # type: ignore[return-value]

        def forward(self, q: Question) -> Answer:
            return Answer(answer="fb", score=0)

    b = BadAct(engine=scripted())
    assert b(Question(text="q")).answer == "fb"
    (violation,) = b.contract_outcome.violations
    assert violation.phase is Phase.ACT and "must return Question" in violation.message


def test_engine_resolution_errors_say_how_to_configure() -> None:
    configure(engine=None)
    with pytest.raises(EngineNotConfigured, match=r"hoare\.configure"):
        QA()(Question(text="q"))
    configure(engine=scripted(answer_json()))
    try:
        assert QA()(Question(text="q")).answer == "yes"
    finally:
        configure(engine=None)


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(TypeError, match="valid options are"):
        QA(temprature=0.2)


# -- concurrency and async --------------------------------------------------------------


def test_sixteen_threads_on_one_instance_never_mix_results() -> None:
    @contract(remedy_retry_params=FAST)
    class Echo(Contract):
        prompt = "echo"

        def post(self, out: int, used: int) -> bool:
            return out == used

        def forward(self, x: int) -> int:
            assert self.contract_result == x
            return self.contract_result  # type: ignore[no-any-return]

    barrier = threading.Barrier(16)

    def answer(request: Request) -> str:
        # A third of the inputs get a wrong first answer, so the remedy path runs too.
        # Decided by the request alone: a shared counter would be racy, and under load
        # one call could draw wrong answers until its budget is spent.
        if request.attempt == 1 and request.input % 3 == 0:
            return json.dumps({"value": -1})
        return json.dumps({"value": request.input})

    echo = Echo(engine=FunctionEngine(answer))
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        barrier.wait()
        try:
            for k in range(40):
                x = i * 1000 + k
                assert echo(x) == x
                assert echo.contract_result == x and echo.contract_outcome.input_used == x
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_async_calls_run_concurrently_with_their_own_results() -> None:
    @contract(remedy_retry_params=FAST)
    class Slow(Contract):
        prompt = "p"

        def forward(self, x: int) -> int:
            return self.contract_result  # type: ignore[no-any-return]

    async def answer(request: Request) -> str:
        await asyncio.sleep(0.001 * (request.input % 5))
        return json.dumps({"value": request.input * 10})

    slow = Slow(engine=FunctionEngine(answer))

    async def one(x: int) -> tuple[int, int]:
        value = await slow.acall(x)
        return value, slow.contract_result

    async def main() -> list[tuple[int, int]]:
        return await asyncio.gather(*(one(x) for x in range(64)))

    results = asyncio.run(main())
    assert results == [(x * 10, x * 10) for x in range(64)]


def test_verbose_logs_each_phase_without_secrets(caplog: pytest.LogCaptureFixture) -> None:
    @contract(verbose=True, remedy_retry_params=FAST)
    class Loud(QA):
        pass

    with caplog.at_level(logging.DEBUG, logger="hoare"):
        Loud(engine=scripted(answer_json(score=1), answer_json()))(Question(text="q"))
    text = caplog.text
    for phase in ("input", "pre", "act", "preflight", "post", "forward", "result"):
        assert f"phase {phase}" in text
    assert "generate attempt 2" in text and "sk-" not in text


@contract(remedy_retry_params=FAST)
class Careless(Contract):
    """A fallback that returns ``contract_result`` unchecked: ``None`` after a failure."""

    prompt = "Answer."

    def forward(self, question: Question) -> Answer:
        return self.contract_result  # type: ignore[no-any-return]


def test_a_wrong_result_after_a_failed_contract_names_what_failed_first() -> None:
    """A newcomer passing the wrong input type to a careless fallback gets a
    ResultTypeError; its message names the input problem, not only the None."""
    careless = Careless(engine=scripted())  # the input check fails: no request
    with pytest.raises(ResultTypeError) as caught:
        careless(42)
    text = str(caught.value)
    assert "must return Answer, got NoneType" in text
    assert "had failed before forward ran" in text
    assert "[input] type: the input is not a valid Question" in text
    assert "Pass the contract input as type Question" in text


def test_a_wrong_result_after_a_successful_contract_says_nothing_of_a_failure() -> None:
    @contract(remedy_retry_params=FAST)
    class Wrong(Contract):
        prompt = "Answer."

        def forward(self, question: Question) -> Answer:
            return "not an answer"  # type: ignore[return-value]

    with pytest.raises(ResultTypeError) as caught:
        Wrong(engine=scripted(answer_json()))(Question(text="q"))
    assert "must return Answer, got str" in str(caught.value)
    assert "had failed" not in str(caught.value)
