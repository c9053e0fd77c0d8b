"""Fault injection into the @contract runtime: statistics that must not lie, hostile
exception texts, definition errors that must raise (never retry), bounded prompts and
caches, and what the model is (not) told."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import SecretStr

from hoare import (
    Contract,
    ContractCallError,
    ContractDefinitionError,
    ContractViolationError,
    Field,
    LLMDataModel,
    Post,
    Pre,
    contract,
)
from hoare.engines import FunctionEngine, Request
from hoare.engines.testing import DummyEngine, ScriptedEngine

FAST = {"delay": 0, "jitter": 0}


class Item(LLMDataModel):
    name: str = Field(description="a name")
    n: int = Field(default=1, description="a number")


class Out(LLMDataModel):
    value: int = Field(description="the value")


OK = json.dumps({"value": 5})


# -- statistics count every call exactly once, on the contract that made it ----------------

def test_forward_that_raises_counts_as_a_failure() -> None:
    @contract(remedy_retry_params=FAST)
    class Flaky(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            if item.n % 2:
                raise RuntimeError("forward broke")
            return self.contract_result  # type: ignore[no-any-return]

    component = Flaky(engine=DummyEngine(OK))
    for n in range(4):
        if n % 2:
            with pytest.raises(RuntimeError, match="forward broke"):
                component(Item(name="x", n=n))
        else:
            component(Item(name="x", n=n))
    stats = Flaky.contract_stats()
    assert stats["calls"] == 4
    assert stats["successes"] == 2
    assert stats["p_succ"] == 0.5
    assert stats["first_attempt_successes"] == 2


def test_async_calls_count_like_sync_calls() -> None:
    import asyncio

    @contract(remedy_retry_params=FAST)
    class FlakyAsync(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            if item.n:
                raise RuntimeError("forward broke")
            return self.contract_result  # type: ignore[no-any-return]

    component = FlakyAsync(engine=DummyEngine(OK))
    assert asyncio.run(component.acall(Item(name="x", n=0))) == Out(value=5)
    with pytest.raises(RuntimeError):
        asyncio.run(component.acall(Item(name="x", n=1)))
    stats = FlakyAsync.contract_stats()
    assert (stats["calls"], stats["successes"]) == (2, 1)


def test_async_act_is_a_definition_error() -> None:
    with pytest.raises(ContractDefinitionError, match="async"):
        @contract
        class AsyncAct(Contract):
            prompt = "p"

            async def act(self, item: Item) -> Item:
                return item

            def forward(self, item: Item) -> Out:
                return Out(value=0)


def test_result_type_error_counts_as_a_failure() -> None:
    @contract(remedy_retry_params=FAST)
    class WrongType(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return "not an Out"  # type: ignore[return-value]

    with pytest.raises(ContractViolationError):
        WrongType(engine=DummyEngine(OK))(Item(name="x"))
    stats = WrongType.contract_stats()
    assert (stats["calls"], stats["successes"]) == (1, 0)


def test_nested_enforce_failure_is_recorded_on_the_inner_contract_only() -> None:
    """Invariant isolation-nested-calls: a failure of a contract called from another
    contract's forward is recorded on the inner contract only."""
    @contract(policy="enforce", post_remedy=False)
    class Inner(Contract):
        prompt = "p"
        post_conditions = [Post(lambda o: o.value > 100, "value must exceed 100")]

        def forward(self, item: Item) -> Out:
            return self.contract_result  # type: ignore[no-any-return]

    inner = Inner(engine=DummyEngine(OK))

    @contract(remedy_retry_params=FAST)
    class Outer(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return inner(item)  # type: ignore[no-any-return]

    outer = Outer(engine=DummyEngine(OK))
    with pytest.raises(ContractViolationError) as caught:
        outer(Item(name="x"))
    assert caught.value.outcome is not None and caught.value.outcome.success is False
    inner_stats, outer_stats = Inner.contract_stats(), Outer.contract_stats()
    assert (inner_stats["calls"], inner_stats["successes"]) == (1, 0)
    assert inner_stats["families"] == {"post_conditions[0]": {
        "passes": 0, "trials": 1, "rate": 0.0, "interval_95": pytest.approx([0.0, 0.7935],
                                                                            abs=1e-3)}}
    # the outer contract succeeded, then its forward raised: one failed call, its own trials
    assert (outer_stats["calls"], outer_stats["successes"]) == (1, 0)
    assert outer_stats["families"] == {}
    # the outer instance's latest outcome is its own, not the inner contract's
    assert outer.contract_outcome is not None
    assert outer.contract_outcome.success is True
    assert outer.contract_result == Out(value=5)


def test_reentrant_predicate_call_does_not_corrupt_per_call_state() -> None:
    """Invariant isolation-nested-calls: a predicate calling its own instance leaves the
    enclosing call's outcome and result intact, and each call is counted once."""
    answers = [json.dumps({"value": 7}), json.dumps({"value": 1})]

    @contract(remedy_retry_params=FAST)
    class Reentrant(Contract):
        prompt = "p"

        def post(self, out: Out) -> bool:
            if out.value == 7:  # the outer call: ask the same instance again
                inner = self(Item(name="inner"))
                assert inner.value == 1
            return True

        def forward(self, item: Item) -> Out:
            return self.contract_result  # type: ignore[no-any-return]

    component = Reentrant(engine=ScriptedEngine(*answers))
    result = component(Item(name="outer"))
    assert result == Out(value=7)
    assert component.contract_result == Out(value=7)
    stats = Reentrant.contract_stats()
    assert (stats["calls"], stats["successes"]) == (2, 2)


def test_async_predicate_is_a_definition_error() -> None:
    with pytest.raises(ContractDefinitionError, match="async"):
        @contract
        class AsyncPost(Contract):
            prompt = "p"

            async def post(self, out: Out) -> bool:
                return False

            def forward(self, item: Item) -> Out:
                return Out(value=0)

    async def positive(out: Out) -> bool:
        return out.value > 0

    with pytest.raises(ContractDefinitionError, match="async"):
        @contract
        class AsyncDeclared(Contract):
            prompt = "p"
            post_conditions = [Post(positive, "positive")]

            def forward(self, item: Item) -> Out:
                return Out(value=0)


def test_predicate_returning_a_coroutine_fails_instead_of_passing() -> None:
    async def never(out: Out) -> bool:
        return False

    @contract(post_remedy=False)
    class Sneaky(Contract):
        prompt = "p"
        post_conditions = [Post(lambda o: never(o), "must be false")]

        def forward(self, item: Item) -> Out:
            return Out(value=-1) if not self.contract_successful else self.contract_result

    component = Sneaky(engine=DummyEngine(OK))
    assert component(Item(name="x")) == Out(value=-1)
    outcome = component.contract_outcome
    assert outcome is not None and not outcome.success
    assert "coroutine" in outcome.violations[0].message
    assert Sneaky.contract_stats()["successes"] == 0


# -- hostile exception texts never crash a call ---------------------------------------------

class Hostile(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() is booby-trapped")

    def __repr__(self) -> str:
        raise RuntimeError("repr() is booby-trapped")


def test_hostile_exceptions_from_every_hook_become_violations() -> None:
    def explode(value: object, *rest: object) -> bool:
        raise Hostile()

    def engine(request: Request) -> str:
        if request.attempt == 1:
            raise Hostile()
        return OK

    @contract(remedy_retry_params={**FAST, "tries": 3}, preflight=False)
    class Robust(Contract):
        prompt = "p"
        post_conditions = [Post(explode, "post message")]

        def on_violation(self, outcome: Any) -> None:
            raise Hostile()

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    component = Robust(engine=FunctionEngine(engine))
    assert component(Item(name="x")) == Out(value=0)
    outcome = component.contract_outcome
    assert outcome is not None and not outcome.success
    messages = [v.message for v in outcome.violations]
    assert messages[0] == "Hostile (its str() raised)"  # the engine failure names the type
    assert messages[1:] == ["post message", "post message"]
    assert outcome.handler_error is not None and "Hostile" in outcome.handler_error
    assert "Hostile" in outcome.summary()

    @contract(policy="enforce")
    class HostilePre(Contract):
        prompt = "p"
        pre_conditions = [Pre(explode, "pre message")]

        def act(self, item: Item) -> Item:
            raise Hostile()

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    with pytest.raises(ContractViolationError, match="pre message") as caught:
        HostilePre(engine=DummyEngine(OK))(Item(name="x"))
    assert caught.value.violations[0].error_type == "Hostile"


def test_hostile_act_and_preflight_texts_become_violations() -> None:
    @contract(policy="enforce")
    class HostileAct(Contract):
        prompt = "p"

        def act(self, item: Item) -> Item:
            raise Hostile()

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    with pytest.raises(ContractViolationError, match=r"Hostile \(its str\(\) raised\)"):
        HostileAct(engine=DummyEngine(OK))(Item(name="x"))


# -- definition and usage errors raise; they are never retries ------------------------------

def test_missing_prompt_is_a_definition_error_at_decoration() -> None:
    with pytest.raises(ContractDefinitionError, match="prompt"):
        @contract
        class NoPrompt(Contract):
            def forward(self, item: Item) -> Out:
                return Out(value=0)


def test_prompt_set_by_init_is_accepted_and_checked_at_the_first_call() -> None:
    engine = DummyEngine(OK)

    @contract
    class LatePrompt(Contract):
        def __init__(self, prompt: object, **kw: Any) -> None:
            super().__init__(**kw)
            self.prompt = prompt

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    assert LatePrompt("task", engine=engine)(Item(name="x")) == Out(value=0)
    assert engine.calls == 1
    with pytest.raises(ContractDefinitionError, match="prompt"):
        LatePrompt(None, engine=engine)(Item(name="x"))
    assert engine.calls == 1  # no engine call was spent on it
    assert LatePrompt.contract_stats()["calls"] == 1


@pytest.mark.parametrize("signature", ["pre3", "post4", "declared2", "kwonly"])
def test_wrong_predicate_arity_is_a_definition_error(signature: str) -> None:
    def build() -> None:
        if signature == "pre3":
            @contract
            class A(Contract):
                prompt = "p"

                def pre(self, item: Item, extra: int) -> bool:
                    return True

                def forward(self, item: Item) -> Out:
                    return Out(value=0)
        elif signature == "post4":
            @contract
            class B(Contract):
                prompt = "p"

                def post(self, out: Out, item: Item, extra: int) -> bool:
                    return True

                def forward(self, item: Item) -> Out:
                    return Out(value=0)
        elif signature == "declared2":
            @contract
            class C(Contract):
                prompt = "p"
                pre_conditions = [Pre(lambda item, extra: True, "m")]

                def forward(self, item: Item) -> Out:
                    return Out(value=0)
        else:
            def needs_keyword(out: Out, *, strict: bool) -> bool:
                return strict

            @contract
            class D(Contract):
                prompt = "p"
                post_conditions = [Post(needs_keyword, "m")]

                def forward(self, item: Item) -> Out:
                    return Out(value=0)

    with pytest.raises(ContractDefinitionError, match="parameter"):
        build()


def test_wrong_call_arguments_raise_a_usage_error_naming_the_fix() -> None:
    @contract
    class Plain(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    component = Plain(engine=DummyEngine(OK))
    with pytest.raises(ContractCallError, match="first argument"):
        component()
    with pytest.raises(TypeError, match="one positional argument"):
        component(Item(name="a"), Item(name="b"))


def test_wrong_input_type_reaches_forward_with_a_message_naming_the_fix() -> None:
    @contract
    class Typed(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return Out(value=-1)

    component = Typed(engine=DummyEngine(OK))
    assert component(42) == Out(value=-1)  # type: ignore[arg-type]
    outcome = component.contract_outcome
    assert outcome is not None
    assert "Pass the contract input as type Item" in outcome.violations[0].message


# -- bounded corrective prompts ------------------------------------------------------------

def _user_text(request: Request) -> str:
    return request.messages[-1].content


def test_huge_rejected_answer_is_truncated_in_the_corrective_prompt() -> None:
    huge = "x" * 10_000_000

    @contract(remedy_retry_params={**FAST, "tries": 2})
    class Big(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    engine = DummyEngine(huge)
    Big(engine=engine)(Item(name="x"))
    second = _user_text(engine.requests[1])
    assert len(second) < 20_000
    assert "[truncated: " in second and " of 10000000 characters shown]" in second


def test_accumulated_errors_are_bounded() -> None:
    long_message = "m" * 3000

    @contract(accumulate_errors=True, remedy_retry_params={**FAST, "tries": 8},
              preflight=False)
    class Acc(Contract):
        prompt = "p"
        post_conditions = [Post(lambda o: False, long_message)]

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    engine = DummyEngine(OK)
    Acc(engine=engine)(Item(name="x"))
    sizes = [len(_user_text(r)) for r in engine.requests]
    assert len(engine.requests) == 8
    assert max(sizes) < 12_000
    assert "[truncated: " in _user_text(engine.requests[-1])


def test_system_prompt_cache_is_bounded() -> None:
    @contract
    class Dynamic(Contract):
        def __init__(self, prompt: str, **kw: Any) -> None:
            super().__init__(**kw)
            self.prompt = prompt

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    engine = FunctionEngine(lambda request: (request.messages, OK)[1])  # renders the prompt
    for index in range(600):
        Dynamic(f"task number {index}", engine=engine)(Item(name="x"))
    runtime = Dynamic.__hoare_runtime__
    assert 0 < len(runtime.systems) <= runtime.systems.maxsize


def test_finished_calls_do_not_keep_their_instances_alive() -> None:
    import gc
    import weakref

    @contract
    class Short(Contract):
        prompt = "p"

        def forward(self, item: Item) -> Out:
            return self.contract_result  # type: ignore[no-any-return]

    engine = FunctionEngine(lambda request: OK)  # records no request: each holds its instance
    refs = []
    for index in range(50):
        component = Short(engine=engine)
        assert component(Item(name="x", n=index)) == Out(value=5)
        assert component.contract_result == Out(value=5)  # still readable after the call
        refs.append(weakref.ref(component))
    del component
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0


def test_cache_size_and_feedback_chars_are_configurable() -> None:
    from hoare import configure
    from hoare.contracts.configuration import DEFAULT_CACHE_SIZE

    with pytest.raises(ValueError, match="cache_size"):
        configure(cache_size=0)
    configure(cache_size=3)
    try:
        @contract(feedback_chars=50, remedy_retry_params={**FAST, "tries": 2})
        class Small(Contract):
            prompt = "p"

            def forward(self, item: Item) -> Out:
                return Out(value=0)
    finally:
        configure(cache_size=DEFAULT_CACHE_SIZE)
    assert Small.__hoare_runtime__.systems.maxsize == 3
    engine = DummyEngine("y" * 500)
    Small(engine=engine)(Item(name="x"))
    assert "[truncated: 50 of 500 characters shown]" in _user_text(engine.requests[1])
    with pytest.raises(ValueError, match="feedback_chars"):
        contract(feedback_chars=0)


# -- what the model is told: author messages only, secrets never ---------------------------

class Secretive(Exception):
    pass


def test_feedback_messages_sends_only_author_texts() -> None:
    def check(out: Out) -> bool:
        if out.value < 10:
            raise ValueError("value must be at least 10")
        lookup = {"key": "sk-LEAKED-123"}
        raise Secretive(f"internal state {lookup}")

    @contract(feedback="messages", remedy_retry_params={**FAST, "tries": 3}, preflight=False)
    class Quiet(Contract):
        prompt = "p"
        post_conditions = [Post(check, "the value is wrong")]

        def post(self, out: Out) -> bool:
            raise KeyError(f"db row {out.value} missing")

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    engine = ScriptedEngine(json.dumps({"value": 5}), json.dumps({"value": 50}), OK)
    Quiet(engine=engine)(Item(name="x"))
    second, third = _user_text(engine.requests[1]), _user_text(engine.requests[2])
    assert "value must be at least 10" in second  # a literal raise text: the author's
    assert "db row" not in second and "db row" not in third
    assert "sk-LEAKED" not in third and "internal state" not in third
    assert "the value is wrong" in third  # the condition's own message replaces it


def test_feedback_default_sends_exception_texts() -> None:
    @contract(remedy_retry_params={**FAST, "tries": 2}, preflight=False)
    class Loud(Contract):
        prompt = "p"

        def post(self, out: Out) -> bool:
            raise KeyError(f"db row {out.value} missing")

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    engine = DummyEngine(OK)
    Loud(engine=engine)(Item(name="x"))
    assert "db row 5 missing" in _user_text(engine.requests[1])


def test_feedback_must_be_a_known_mode() -> None:
    with pytest.raises(ValueError, match="feedback"):
        contract(feedback="nothing")  # type: ignore[call-overload]


class Login(LLMDataModel):
    user: str
    password: SecretStr


def test_secret_values_never_reach_prompts_logs_or_errors(
        caplog: pytest.LogCaptureFixture) -> None:
    secret = "hunter2-very-secret"
    pre_engine, post_engine = DummyEngine(f"the password is {secret}"), DummyEngine(OK)

    @contract(verbose=True, pre_remedy=True, remedy_retry_params={**FAST, "tries": 2},
              policy="enforce", preflight=False)
    class AuthPre(Contract):
        prompt = "p"

        def pre(self, login: Login) -> bool:
            raise ValueError(f"bad password {login.password.get_secret_value()}")

        def forward(self, login: Login) -> Out:
            return Out(value=0)

    @contract(verbose=True, remedy_retry_params={**FAST, "tries": 2}, preflight=False)
    class AuthPost(Contract):
        prompt = "p"

        def post(self, out: Out, login: Login) -> bool:
            raise ValueError(f"still bad {login.password.get_secret_value()}")

        def forward(self, login: Login) -> Out:
            return Out(value=0)

    login = Login(user="u", password=SecretStr(secret))
    with caplog.at_level(logging.DEBUG, logger="hoare"):
        with pytest.raises(ContractViolationError) as caught:
            AuthPre(engine=pre_engine)(login)
        post = AuthPost(engine=post_engine)
        post(login)
    log = [*pre_engine.requests, *post_engine.requests]
    assert len(log) == 4, "both stages called the engine twice"
    for request in log:
        for message in request.messages:
            assert secret not in message.content
        assert all(secret not in text for text in request.feedback)
    assert secret not in caplog.text
    assert secret not in str(caught.value)
    assert post.contract_outcome is not None
    assert secret not in post.contract_outcome.summary()
    assert secret not in str(post.contract_exception)
    assert "still bad **********" in str(post.contract_exception)
    assert "bad password **********" in str(caught.value)


def test_warning_log_does_not_quote_input_values(caplog: pytest.LogCaptureFixture) -> None:
    @contract(post_remedy=False)
    class Warn(Contract):
        prompt = "p"
        post_conditions = [Post(lambda o: o.value > 100, "value must exceed 100")]

        def forward(self, item: Item) -> Out:
            return Out(value=0)

    with caplog.at_level(logging.WARNING, logger="hoare"):
        Warn(engine=DummyEngine(OK))(Item(name="PERSONAL-DATA-xyz"))
        Warn(engine=DummyEngine(OK))({"name": "a", "n": "PERSONAL-DATA-abc"})  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2
    assert all("PERSONAL-DATA" not in w for w in warnings), warnings
    assert "value must exceed 100" in warnings[0]
    # the second is an input of the wrong type: the warning names the type, not the value
    assert "[input attempt 0] type: the input is not a valid Item; pass the contract " \
           "input as that type" in warnings[1]
