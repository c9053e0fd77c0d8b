"""SymbolicAI behaviours a port relies on: the input's field descriptions reach the
prompt, and SymbolicAI-only options are refused with the alternative named."""

from __future__ import annotations

import pytest
from library_under_test import LIBRARY
from pydantic import SecretStr

from hoare import Contract, ContractDefinitionError, Field, LLMDataModel, contract
from hoare.engines import FunctionEngine
from hoare.engines.testing import DummyEngine


class Topic(LLMDataModel):
    topic: str = Field(description="The subject the text is about.")
    audience: str = Field(default="everyone", description="Who will read it.")
    plain: int = 0


class Text(LLMDataModel):
    text: str = Field(description="The text itself.")


@contract()
class Write(Contract):
    prompt = "Write a short text."

    def forward(self, input: Topic) -> Text:
        return self.contract_result  # type: ignore[no-any-return]


def test_input_field_descriptions_reach_the_prompt() -> None:
    engine = DummyEngine('{"text": "t"}')
    writer = Write(engine=engine)
    writer(input=Topic(topic="owls"))
    system = engine.requests[0].messages[0].content
    assert "The input's fields (Topic):" in system
    assert "- topic: The subject the text is about." in system
    assert "- audience: Who will read it." in system
    assert "- plain" not in system  # no description, nothing to say
    assert "The text itself." in system  # the output's, as before


def test_dynamic_engine_is_refused_naming_the_alternative() -> None:
    with pytest.raises(ContractDefinitionError, match="FunctionEngine") as caught:
        contract(remedy_retry_params={"tries": 2, "dynamic_engine": True})
    assert "engine=" in str(caught.value)


class Number(LLMDataModel):
    x: int


# Picky, Leaky and MaybeNumber fail every attempt: their remedies retry without the
# backoff sleeps (7.5 s a call by default), which are not what these tests check
@contract(policy="observe", remedy_retry_params={"delay": 0})
class Picky(Contract):
    prompt = "p"

    def post(self, output: Number) -> bool:
        if output.x > 0:
            raise KeyError("the underlying problem")
        return True

    def forward(self, input: Number) -> Number:
        return input


def test_contract_exception_carries_the_underlying_exception() -> None:
    picky = Picky(engine=FunctionEngine(lambda r: '{"x": 1}'))
    picky(input=Number(x=1))
    error = picky.contract_exception
    from hoare import ContractViolationError

    assert isinstance(error, ContractViolationError)  # spec §3.7: still the contract's error
    assert isinstance(error.original, KeyError)  # type: ignore[attr-defined]
    assert error.__cause__ is error.original  # type: ignore[attr-defined]
    assert "the underlying problem" in str(error.original)  # type: ignore[attr-defined]


class Secretive(LLMDataModel):
    key: SecretStr


@contract(policy="observe", remedy_retry_params={"delay": 0})
class Leaky(Contract):
    prompt = "p"

    def post(self, output: Number, input: Secretive) -> bool:
        if output.x > 0:
            raise ValueError(f"bad key {input.key.get_secret_value()}")
        return True

    def forward(self, input: Secretive) -> Number:
        return self.contract_result if self.contract_successful else Number(x=0)  # type: ignore[no-any-return]


def test_the_original_never_holds_a_secret() -> None:
    leaky = Leaky(engine=FunctionEngine(lambda r: '{"x": 1}'))
    leaky(input=Secretive(key=SecretStr("hunter2-secret")))
    original = leaky.contract_exception.original  # type: ignore[union-attr]
    assert original is not None and "hunter2-secret" not in str(original)
    assert "ValueError" in str(original)  # the type it replaced is named


def test_verbose_prints_prompts_and_answers_to_stderr_without_any_logging_setup() -> None:
    import subprocess
    import sys
    from pathlib import Path

    Path(__file__).resolve().parents[2]
    script = (
        "from hoare import Contract, LLMDataModel, contract\n"
        "from hoare.engines import FunctionEngine\n"
        "class N(LLMDataModel):\n    x: int\n"
        "@contract(verbose=True)\nclass C(Contract):\n    prompt = 'Say a number.'\n"
        "    def forward(self, input: N) -> N:\n        return self.contract_result\n"
        "C(engine=FunctionEngine(lambda r: '{\"x\": 42}'))(input=N(x=1))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": LIBRARY, "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert "Say a number." in done.stderr  # the prompt
    assert '{"x": 42}' in done.stderr  # the answer
    assert "success after 1 generation attempt" in done.stderr
    assert done.stdout == ""


@contract(remedy_retry_params={"delay": 0})
class MaybeNumber(Contract):
    prompt = "p"

    def forward(self, input: Number) -> Number | None:
        return self.contract_result  # type: ignore[no-any-return]


def test_per_call_results_are_read_only_and_a_failed_optional_is_none() -> None:
    maybe = MaybeNumber(engine=FunctionEngine(lambda r: "not json"))
    assert maybe(input=Number(x=1)) is None  # the README's migration notes say so
    for name in ("contract_successful", "contract_result", "contract_exception"):
        with pytest.raises(AttributeError):
            setattr(maybe, name, 1)


def test_a_contract_defined_in_a_function_may_name_the_function_s_local_classes() -> None:
    """SymbolicAI's tests define models inside test functions; under ``from __future__
    import annotations`` (this module) every annotation is a string, which the
    function's locals resolve, for ``@contract`` and ``@contract(...)`` alike."""

    class Question(LLMDataModel):
        text: str

    class Answer(LLMDataModel):
        text: str

    @contract
    class Bare(Contract):
        prompt = "Answer."

        def act(self, input: Question) -> Question:
            return input

        def forward(self, input: Question) -> Answer:
            return self.contract_result  # type: ignore[no-any-return]

    @contract(remedy_retry_params={"tries": 1})
    class Called(Contract):
        prompt = "Answer."

        def forward(self, input: Question) -> Answer:
            return self.contract_result  # type: ignore[no-any-return]

    engine = FunctionEngine(lambda request: '{"text": "yes"}')
    for cls in (Bare, Called):
        assert cls.__hoare__.input.annotation is Question
        assert cls(engine=engine)(input=Question(text="?")) == Answer(text="yes")


def test_an_annotation_no_scope_defines_is_a_definition_error_naming_it() -> None:
    with pytest.raises(ContractDefinitionError,
                       match=r"Nowhere\.forward: name 'Missing' is not defined"):
        @contract
        class Nowhere(Contract):
            prompt = "p"

            def forward(self, input: Missing) -> Text:  # type: ignore[name-defined]  # noqa: F821
                return self.contract_result  # type: ignore[no-any-return]


class Undecorated(Contract):  # decorated inside a test below
    prompt = "p"

    def forward(self, input: Topic) -> Text:
        return self.contract_result  # type: ignore[no-any-return]


def test_a_decorator_applied_elsewhere_does_not_read_that_scope_s_locals() -> None:
    """Only the scope that defined the class resolves its annotations: a function that
    decorates a module-level class does not shadow the module's names with its own."""
    Text = Topic  # noqa: F841 - a local that must not be taken for the module's
    decorated = contract(remedy_retry_params={"tries": 1})(Undecorated)
    assert decorated.__hoare__.output.annotation is globals()["Text"]
