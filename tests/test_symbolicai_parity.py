"""SymbolicAI behaviours a port relies on: the input's field descriptions reach the
prompt, and SymbolicAI-only options are refused with the alternative named."""

from __future__ import annotations

import pytest

from hoare import Contract, ContractDefinitionError, Field, LLMDataModel, contract
from hoare.engines import FunctionEngine, Request


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
    seen: list[Request] = []
    writer = Write(engine=FunctionEngine(lambda r: seen.append(r) or '{"text": "t"}'))
    writer(input=Topic(topic="owls"))
    system = seen[0].messages[0].content
    assert "The input's fields (Topic):" in system
    assert "- topic: The subject the text is about." in system
    assert "- audience: Who will read it." in system
    assert "- plain" not in system  # no description, nothing to say
    assert "The text itself." in system  # the output's, as before


def test_dynamic_engine_is_refused_naming_the_alternative() -> None:
    with pytest.raises(ContractDefinitionError, match="FunctionEngine") as caught:
        contract(remedy_retry_params={"tries": 2, "dynamic_engine": True})
    assert "engine=" in str(caught.value)
