"""Delphyne parity, round 2 (issue 32, items 1-4): tool-calling queries as a protocol,
answer types as Delphyne writes them, the prompt's ``format``, parsers and prompts.

Engines are real: a ``Recorder`` that keeps every request, ``DummyModel``, and the
loopback OpenAI-compatible server with the real ``openai`` client.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, completion, tool_calls
from pydantic import BaseModel
from typing_extensions import TypeAliasType

from hoare.engines import OpenAIEngine
from hoare.engines.base import Request, Response, TokenLogprob, ToolCall, Usage
from hoare.engines.testing import DummyEngine
from hoare.queries import (
    Answer,
    AnswerPrefix,
    DemonstrationError,
    DummyModel,
    FeedbackMessage,
    FinalAnswer,
    OracleMessage,
    ParseError,
    Query,
    ToolRequests,
    ToolResult,
    WrappedParseError,
    classify,
    few_shot,
    final_tool_call_as,
    first_word,
    get_text,
    last_code_block,
    load_demonstrations,
    structured_as,
)
from hoare.queries.parsers import final_block


class Recorder:
    """Answers from a list (text, or (text, tool calls)); keeps every request."""

    def __init__(self, *answers: str | tuple[str, tuple[ToolCall, ...]]) -> None:
        self.answers = list(answers)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        item = self.answers.pop(0)
        text, calls = item if isinstance(item, tuple) else (item, ())
        return Response(texts=(text,), usage=Usage(1, 10, 1), tool_calls=calls)

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


# -- 1. tool-calling queries --------------------------------------------------------------

class Search(BaseModel):
    """Search the web."""

    query: str


class Calculator(BaseModel):
    """Evaluate an arithmetic expression."""

    expression: str


@dataclass
class Verdict:
    """The final answer."""

    label: str
    score: int


@dataclass
class Judge(Query[Verdict]):
    """Judge the claim."""

    claim: str
    __parser__ = final_tool_call_as(Verdict)


def _call(name: str, args: dict[str, object], index: int = 0) -> ToolCall:
    return ToolCall(f"call_{index}", name, json.dumps(args))


def test_final_tool_call_is_forced_and_offered() -> None:
    engine = Recorder(("", (_call("Verdict", {"label": "true", "score": 3}),)))
    assert Judge("water is wet").run(engine) == Verdict("true", 3)
    request = engine.requests[0]
    assert [t["function"]["name"] for t in request.tools] == ["Verdict"]
    assert request.tool_choice == "required"


@dataclass
class Agentic(Query[object]):
    """Answer, using the tools if needed."""

    question: str
    __parser__ = final_tool_call_as(Verdict).response_with([Search, Calculator])


def test_final_tool_offered_alongside_the_tools_and_read_as_the_answer() -> None:
    engine = Recorder(("", (_call("Verdict", {"label": "ok", "score": 1}),)),
                      ("thinking", (_call("Search", {"query": "x"}),
                                    _call("Calculator", {"expression": "1+1"}, 1))))
    first = Agentic("q").run(engine)
    assert isinstance(first.parsed, FinalAnswer) and first.parsed.final == Verdict("ok", 1)
    names = [t["function"]["name"] for t in engine.requests[0].tools]
    assert sorted(names) == ["Calculator", "Search", "Verdict"]
    assert engine.requests[0].tool_choice == "required"
    second = Agentic("q").run(engine)
    assert isinstance(second.parsed, ToolRequests)
    assert second.parsed.tool_calls == (Search(query="x"), Calculator(expression="1+1"))


def test_unknown_tool_is_a_parse_error_naming_every_tool() -> None:
    parser = final_tool_call_as(Verdict).response_with([Search])
    with pytest.raises(ParseError, match=r"unknown tool 'Nope'.*Search"):
        parser.parse(Answer("", (_call("Nope", {}),)))


def test_a_tool_that_is_also_the_final_answer_is_refused() -> None:
    with pytest.raises(TypeError, match="Verdict"):
        final_tool_call_as(Verdict).response_with([Verdict])


def test_structured_output_kept_with_tools() -> None:
    parser = structured_as(list[int]).response_with([Search])
    assert parser.structured is not None and parser.tools == (Search,)

    @dataclass
    class Numbers(Query[object]):
        """Numbers."""

        n: int
        __parser__ = parser

    engine = Recorder("[1, 2]")
    result = Numbers(2).run(engine)
    assert result.parsed == FinalAnswer([1, 2])
    assert engine.requests[0].schema is not None
    assert engine.requests[0].tool_choice is None  # tools offered, not forced


def test_tool_choice_and_tools_reach_the_wire_and_the_answer_comes_back() -> None:
    script = [tool_calls(("Verdict", json.dumps({"label": "yes", "score": 2})))]
    with OpenAIServer(script) as server:
        engine = OpenAIEngine(model="m", base_url=server.url, api_key="k")
        assert Judge("c").run(engine) == Verdict("yes", 2)
        body = server.bodies[0]
    assert body["tool_choice"] == "required"
    assert [t["function"]["name"] for t in body["tools"]] == ["Verdict"]


def test_response_with_keeps_response_format_on_the_wire() -> None:
    @dataclass
    class Listed(Query[object]):
        """List."""

        n: int
        __parser__ = structured_as(list[int]).response_with([Search])

    with OpenAIServer([completion("[3]")]) as server:
        engine = OpenAIEngine(model="m", base_url=server.url, api_key="k")
        assert Listed(1).run(engine).parsed == FinalAnswer([3])
        body = server.bodies[0]
    assert "response_format" in body and "tool_choice" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["Search"]


@dataclass
class Primed(Query[str]):
    """Continue."""

    topic: str
    __parser__ = get_text
    __instance_prompt__ = """
        Write about {{ topic }}.
        !<assistant>
        Here is my answer about {{ topic }}:
    """


def test_assistant_priming_is_a_real_assistant_message() -> None:
    engine = Recorder(" cats purr.")
    assert Primed("cats").run(engine) == " cats purr."
    messages = engine.requests[0].messages
    assert [m.role for m in messages] == ["system", "user", "assistant"]
    assert messages[1].content == "Write about cats."
    assert messages[2].content == "Here is my answer about cats:"
    assert "!<assistant>" not in "".join(m.content for m in messages)


_LINES = st.lists(st.one_of(st.sampled_from(["!<assistant>", "!<user>", "  !<assistant>  ",
                                             "", "!<assistant> x", "text", "\r", " "]),
                            st.text(st.characters(codec="utf-8"), max_size=12)), max_size=12)


def _delphyne_priming_split(prompt: str) -> tuple[str, str | None]:
    """Delphyne's ``_priming_split`` at e451493, as its behaviour is described: the
    first line that strips to the marker splits, unless nothing follows it."""
    if "!<assistant>" not in prompt:
        return prompt, None
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "!<assistant>":
            before, after = "\n".join(lines[:i]).rstrip(), "\n".join(lines[i + 1:]).lstrip()
            return (before, after) if after else (prompt, None)
    return prompt, None


@settings(max_examples=300, deadline=None)
@given(_LINES, st.sampled_from(["\n", "\r\n", "\r"]))
def test_priming_splits_as_delphyne_does(lines: list[str], newline: str) -> None:
    from hoare.queries.templates import split_roles

    text = newline.join(lines)
    before, after = _delphyne_priming_split(text)
    expected = [("user", before)] if after is None else [("user", before),
                                                         ("assistant", after)]
    assert split_roles(text) == expected


@dataclass
class Step(Query[object]):
    """Use the tools, then answer."""

    question: str
    prefix: AnswerPrefix
    __parser__ = final_tool_call_as(Verdict).response_with([Search])


def test_answer_prefix_continues_the_conversation() -> None:
    engine = Recorder(("", (_call("Search", {"query": "q"}),)),
                      ("", (_call("Verdict", {"label": "done", "score": 5}, 1),)))
    first = Step("what?", []).run(engine)
    assert isinstance(first.parsed, ToolRequests)
    (call,) = first.answer.tool_calls
    prefix = [OracleMessage("oracle", first.answer),
              ToolResult("tool", call, {"hits": 3}),
              FeedbackMessage("feedback", description="Now answer.")]
    second = Step("what?", prefix).run(engine)
    assert second.parsed == FinalAnswer(Verdict("done", 5))
    sent = engine.requests[1].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert "prefix" not in sent[1].content  # the prefix goes as messages, not YAML
    assert sent[2].tool_calls == (call,)
    assert sent[3].tool_call_id == call.id and json.loads(sent[3].content) == {"hits": 3}
    assert sent[4].content == 'Error. Please try again.\n\n"""\nNow answer.\n"""'



def test_answer_prefix_with_a_wrong_element_is_an_input_violation() -> None:
    engine = Recorder()
    outcome = pytest.importorskip("hoare.queries").outcome_of(Step("q", ["nonsense"]), engine)
    assert not outcome.success and engine.requests == []


def test_prefix_messages_on_the_wire_keep_the_protocol() -> None:
    call = _call("Search", {"query": "q"})
    prefix = [OracleMessage("oracle", Answer("", (call,))), ToolResult("tool", call, "ok")]
    script = [tool_calls(("Verdict", json.dumps({"label": "a", "score": 1})))]
    with OpenAIServer(script) as server:
        engine = OpenAIEngine(model="m", base_url=server.url, api_key="k")
        result = Step("q", prefix).run(engine)
        body = server.bodies[0]
    assert result.parsed == FinalAnswer(Verdict("a", 1))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"][0]["id"] == call.id
    assert body["messages"][3]["tool_call_id"] == call.id


@dataclass
class MaybeNumber(Query[int | WrappedParseError]):
    """A number."""

    n: int
    __parser__ = get_text.map(int).wrap_errors()


def test_parse_errors_are_values_by_default() -> None:
    solutions = list(few_shot(MaybeNumber(1), Recorder("x"), max_requests=1))
    assert len(solutions) == 1 and isinstance(solutions[0].value, WrappedParseError)


def test_no_wrap_parse_errors_makes_them_failed_attempts() -> None:
    engine = Recorder("x", "7")
    solutions = list(few_shot(MaybeNumber(1), engine, max_requests=2,
                              no_wrap_parse_errors=True))
    assert [s.value for s in solutions] == [7]
    assert "invalid literal" in engine.requests[1].messages[-1].content
    with pytest.raises(Exception, match="no_wrap_parse_errors"):
        list(few_shot(MaybeNumber(1), engine, no_wrap_parse_errors="yes"))


def test_repair_after_a_tool_call_answers_the_call() -> None:
    engine = Recorder(("", (_call("Verdict", {"label": "x"}),)),
                      ("", (_call("Verdict", {"label": "x", "score": 1}),)))
    assert Judge("c").run(engine) == Verdict("x", 1)
    sent = engine.requests[1].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3].tool_call_id == "call_0"


# -- 2. answer types as Delphyne writes them --------------------------------------------

@dataclass
class Summarize(Query["Article"]):
    """Summarize."""

    text: str


@dataclass
class Summaries(Query[list["Article"]]):
    """Summaries."""

    text: str


class Article(BaseModel):
    title: str
    body: str


def test_string_forward_references_resolve_in_the_module() -> None:
    answer = '{"title": "t", "body": "b"}'
    solutions = list(few_shot(Summarize("x"), Recorder(answer), max_requests=1))
    assert solutions[0].value == Article(title="t", body="b")
    assert Summaries("x").run(Recorder(f"[{answer}]")) == [Article(title="t", body="b")]


def test_an_unresolvable_forward_reference_names_it() -> None:
    from hoare.errors import ContractDefinitionError

    @dataclass
    class Broken(Query["NoSuchThing"]):
        """Broken."""

        x: int

    with pytest.raises(ContractDefinitionError, match="NoSuchThing"):
        Broken(1).run(Recorder("1"))


Label = TypeAliasType("Label", Literal["spam", "ham"])
Nested = TypeAliasType("Nested", Label)


@dataclass
class Filter(Query[Label]):
    """Classify."""

    mail: str


@dataclass
class FilterNested(Query[Nested]):
    """Classify."""

    mail: str


@pytest.mark.parametrize("cls", [Filter, FilterNested])
def test_a_type_alias_of_a_literal_is_a_finite_answer_set(cls: type) -> None:
    query = cls("buy now")
    assert query.finite_answer_set() == ["spam", "ham"]

    top = (("spam", -0.1), ("ham", -2.5))
    logprobs = DummyEngine(Response(texts=("spam",), usage=Usage(1, 1, 1),
                                    logprobs=((TokenLogprob("spam", -0.1, top),),)))
    result = classify(query, logprobs)
    assert result.value == "spam" and set(result.distribution) == {"spam", "ham"}


# -- 3. the prompt's format ---------------------------------------------------------------

@dataclass
class Numbers(Query[list[int]]):
    """Give numbers. {{ format }}"""

    n: int
    __parser__ = get_text.map(json.loads)
    __system_prompt__ = "Give {{ n }} numbers.\n{{ format }}"
    post_conditions = []


def test_format_shows_the_answer_schema_for_text_parsers() -> None:
    engine = Recorder("[1]")
    Numbers(1).run(engine)
    system = engine.requests[0].messages[0].content
    schema = json.loads(system.split("The JSON schema of the answer:\n", 1)[1])
    assert schema == {"items": {"type": "integer"}, "type": "array"}


def test_format_names_the_final_tool() -> None:
    @dataclass
    class Shown(Query[Verdict]):
        """Judge."""

        claim: str
        __parser__ = final_tool_call_as(Verdict)
        __system_prompt__ = "{{ format }}"

    engine = Recorder(("", (_call("Verdict", {"label": "a", "score": 1}),)))
    Shown("c").run(engine)
    system = engine.requests[0].messages[0].content
    assert "call to the tool Verdict" in system and '"score"' in system


# -- 4. parsers and prompts ---------------------------------------------------------------

_DELPHYNE_FENCE = re.compile(r"(?=(```[^\n]*\n(.*?)```))", re.DOTALL)


def _delphyne_final_block(text: str) -> str | None:
    """Delphyne's ``extract_final_block`` (the oracle; quadratic, small inputs only)."""
    found = _DELPHYNE_FENCE.findall(text)
    return found[-1][1] if found else None


_FENCED = st.lists(st.sampled_from(["```", "``", "`", "\n", "py", " ", "x", "````", "a\n"]),
                   max_size=25).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_FENCED)
def test_final_block_is_delphynes_last_complete_block(text: str) -> None:
    assert final_block(text) == _delphyne_final_block(text)


@pytest.mark.parametrize("text,expected", [
    ("```\nA\n```python\nB\n```", "B\n"),
    ("```a\nX\n```\n```b\nY", ""),  # as Delphyne: X's closing fence opens an empty block
    ("```a\nX\n```\nY", "X\n"),
    ("intro\n```yaml\nk: v\n```\n", "k: v\n"),
])
def test_last_code_block_with_unbalanced_fences(text: str, expected: str) -> None:
    assert last_code_block.parse(text) == expected


def test_last_code_block_without_a_block_says_so() -> None:
    with pytest.raises(ParseError, match="no code block"):
        last_code_block.parse("``` no newline")


Mood = Literal["happy", "sad"]


@dataclass
class Feel(Query[Mood]):
    """How do you feel?"""

    day: str
    __parser__ = first_word


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_first_word_is_the_first_word_or_a_parse_error(text: str) -> None:
    parser = first_word.for_type(Mood)
    words = text.split()
    if words and words[0] in ("happy", "sad"):
        assert parser.parse(text) == words[0]
    else:
        with pytest.raises(ParseError):
            parser.parse(text)


def test_first_word_in_a_query_and_on_non_literals() -> None:
    assert Feel("monday").run(Recorder("sad, very.", "sad today")) == "sad"  # as split()
    with pytest.raises(TypeError, match="Literal of strings"):
        first_word.for_type(int)
    with pytest.raises(TypeError, match="Literal of strings"):
        first_word.for_type(Literal[1, 2])
    assert first_word.for_type(Label).parse("ham ok") == "ham"


@dataclass
class Chat(Query[str]):
    """Chat."""

    topic: str
    __parser__ = get_text
    __system_prompt__ = """
        You talk about {{ topic }}.
          Indented on purpose.
        """
    __instance_prompt__ = """
        Topic: {{ topic }}
        """
    __more_prompt__ = """
        Another one about {{ topic }}, please.
        """


def test_prompts_from_attributes_are_dedented_and_more_is_used() -> None:
    engine = Recorder("one", "two")
    values = [s.value for s in few_shot(Chat("tea"), engine, max_requests=2,
                                        iterative_mode=True)]
    assert values == ["one", "two"]
    first, second = engine.requests
    assert first.messages[0].content == "You talk about tea.\n  Indented on purpose."
    assert first.messages[1].content == "Topic: tea"
    assert second.messages[-1].content == "Another one about tea, please."


_DEMO = textwrap.dedent("""\
    - demonstration: first
      query: Feel
      args: {day: monday}
      answers:
        - answer: "sad"
          tags: [gloomy]
        - label: alt
          example: false
          answer: "happy"
    - strategy: some_strategy
      args: {}
      tests: [run | success]
      queries:
        - query: Judge
          args: {claim: c}
          answers:
            - answer: ""
              call: [{tool: Verdict, args: {label: "ok", score: 2}}]
    """)


def test_delphyne_demo_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "feel.demo.yaml"
    path.write_text(_DEMO)
    examples = load_demonstrations(path)
    assert [(e.query, e.answer_text, e.example) for e in examples] == [
        ("Feel", "sad", True), ("Feel", "happy", False), ("Judge", "", True)]
    assert examples[0].tags == ("gloomy",)
    model = DummyModel(path)
    assert Feel("monday").run(model) == "sad"
    assert Judge("c").run(model) == Verdict("ok", 2)
    engine = Recorder("happy")
    few = list(few_shot(Feel("friday"), engine, examples=path, max_requests=1))
    assert few[0].value == "happy"
    sent = [m.content for m in engine.requests[0].messages]
    assert "sad" in sent and "happy" not in sent  # example: false is not shown


@pytest.mark.parametrize("entry,where,what", [
    ({"query": "Feel", "args": {}, "answers": "no"}, "entry 1", "'answers' must be a list"),
    ({"query": "Feel", "args": {}, "answers": [{"answer": "x", "bogus": 1}]},
     "entry 1 answers[0]", "bogus"),
    ({"query": "Feel", "args": {}, "answers": [{"tags": []}]}, "answers[0]",
     "'answer' is missing"),
    ({"query": "Feel", "args": {}, "answers": [{"answer": "x", "example": "no"}]},
     "answers[0]", "'example'"),
    ({"query": "Feel", "args": {}, "answers": [{"answer": "x", "call": [{"tool": 3}]}]},
     "call[0]", "tool call"),
    ({"query": "Feel", "args": {}, "answers": [{"answer": "x", "structured": "yes"}]},
     "answers[0]", "'structured'"),
    ({"query": 5, "args": {}, "answers": []}, "entry 1", "'query'"),
    ({"strategy": "s", "args": {}, "queries": {}}, "entry 1", "'queries'"),
    ({"strategy": "s", "queries": [{"query": "Q", "answers": [1]}]},
     "queries[0] answers[0]", "mapping"),
    ({"query": "Feel", "args": {}, "answers": [{"answer": float("nan")}]},
     "answers[0]", "not a string or a JSON value"),
])
def test_bad_demo_files_name_the_file_and_the_place(tmp_path: Path, entry: dict[str, object],
                                                    where: str, what: str) -> None:
    import yaml

    path = tmp_path / "bad.demo.yaml"
    path.write_text(yaml.safe_dump([entry]))
    with pytest.raises(DemonstrationError) as caught:
        load_demonstrations(path)
    assert str(path) in str(caught.value) and where in str(caught.value)
    assert what in str(caught.value)


def test_generic_response_reads_the_tools_from_the_answer_type() -> None:
    from hoare.queries import Response as QueryResponse
    from hoare.queries import final_tool_call, get_text

    @dataclass
    class Typed(Query[QueryResponse[Verdict, Search | Calculator]]):
        """Answer with the tools."""

        question: str
        __parser__ = final_tool_call.response

    engine = Recorder(("", (_call("Calculator", {"expression": "2*3"}),)),
                      ("", (_call("Verdict", {"label": "six", "score": 6}, 1),)))
    first = Typed("q").run(engine)
    assert first.parsed == ToolRequests((Calculator(expression="2*3"),))
    assert sorted(t["function"]["name"] for t in engine.requests[0].tools) == \
        ["Calculator", "Search", "Verdict"]
    assert Typed("q").run(engine).parsed == FinalAnswer(Verdict("six", 6))

    @dataclass
    class Texty(Query[QueryResponse[str, Search]]):
        """Answer or search."""

        question: str
        __parser__ = get_text.response

    engine = Recorder("plain answer")
    assert Texty("q").run(engine).parsed == FinalAnswer("plain answer")
    assert engine.requests[0].tool_choice is None
    with pytest.raises(TypeError, match="Response"):
        get_text.response.for_type(int)


@pytest.mark.parametrize("choice", ["always", "", 1, True])
def test_a_tool_choice_no_server_knows_is_refused(choice: object) -> None:
    from hoare.engines.base import Message

    with pytest.raises(ValueError, match="tool_choice"):
        Request(messages=(Message("user", "x"),), tool_choice=choice)  # type: ignore[arg-type]


def test_the_demonstration_schema_describes_delphyne_files() -> None:
    import jsonschema
    import yaml

    from hoare.queries import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(yaml.safe_load(_DEMO), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"query": "Q", "answers": [{"answer": "x", "bogus": 1}]}], schema)


def test_feedback_prompt_from_an_attribute_and_a_missing_description() -> None:
    @dataclass
    class Fed(Query[str]):
        """Answer."""

        question: str
        prefix: AnswerPrefix
        __parser__ = get_text
        __feedback_prompt__ = "[{{ feedback.category }}] {{ feedback.description }}"

    engine = Recorder("ok")
    prefix = [OracleMessage("oracle", Answer("first try")),
              FeedbackMessage("feedback", category="style", description="shorter")]
    assert Fed("q", prefix).run(engine) == "ok"
    assert engine.requests[0].messages[-1].content == "[style] shorter"
    with pytest.raises(ValueError, match="feedback template"):
        Step("q", [FeedbackMessage("feedback", category="x")]).run(Recorder("x"))
