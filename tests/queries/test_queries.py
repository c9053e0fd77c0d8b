"""hoare.queries: typed queries on the kernel (issue 15).

Every policy is driven through real engines: ``DummyModel`` (demonstrations), a
``FunctionEngine`` that records the requests, or the loopback OpenAI-compatible
server with the real ``openai`` client.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import jsonschema
import pytest
import yaml
from library_under_test import LIBRARY
from openai_server import OpenAIServer, completion
from pydantic import BaseModel

from hoare import ContractViolationError, Post, Pre
from hoare.engines import FunctionEngine
from hoare.engines.base import Request, Response, ToolCall, Usage
from hoare.engines.testing import DummyEngine
from hoare.errors import FatalEngineError
from hoare.kernel import Phase, ViolationKind
from hoare.queries import (
    SCHEMA_PATH,
    Answer,
    DemonstrationError,
    DummyModel,
    FailingModel,
    FinalAnswer,
    Mode,
    NoDemonstration,
    ParseError,
    Query,
    ToolRequests,
    WrappedParseError,
    add_template_folder,
    afew_shot,
    few_shot,
    final_tool_call_as,
    get_text,
    json_as,
    last_code_block,
    load_demonstrations,
    most_similar,
    response_with,
    structured_as,
    take,
    trim,
    with_tags,
    yaml_as,
)
from hoare.queries.query import runtime_of

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class MakeSum(Query[list[int]]):
    """Given a list of allowed numbers and a target number, you must find a sub-list
    whose elements sum up to the target."""

    allowed: list[int]
    target: int

    post_conditions = [
        Post(lambda xs, q: sum(xs) == q.target, "the elements sum to the target"),
        Post(lambda xs, q: all(x in q.allowed for x in xs), "only allowed numbers are used"),
    ]


def _demo(answer: object, target: int = 5, **extra: object) -> dict[str, object]:
    return {"query": "MakeSum", "args": {"allowed": [1, 2, 3, 4], "target": target},
            "answer": answer, **extra}


class Recorder:
    """An engine answering from a list (one text per request, or a tuple for n), that
    keeps every request."""

    def __init__(self, *answers: str | tuple[str, ...]) -> None:
        self.answers = list(answers)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        item = self.answers.pop(0)
        texts = item if isinstance(item, tuple) else (item,)
        return Response(texts=texts, usage=Usage(1, 10, len(texts)))

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


# -- Query[T] ------------------------------------------------------------------------------

def test_run_returns_the_first_answer_that_satisfies_the_contract() -> None:
    engine = Recorder("[1, 2]", "[2, 3]")
    assert MakeSum([1, 2, 3, 4], 5).run(engine) == [2, 3]
    first, second = engine.requests
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].content.startswith("Given a list of allowed numbers")
    assert yaml.safe_load(first.messages[1].content) == {"allowed": [1, 2, 3, 4], "target": 5}
    # the failure goes back to the model: its answer, then the repair message naming it
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[2].content == "[1, 2]"
    assert "the elements sum to the target" in second.messages[3].content
    assert "only allowed" not in second.messages[3].content  # that one passed
    assert first.schema is not None  # structured output: the answer type's schema is sent


def test_without_a_fallback_a_query_raises_with_every_violation() -> None:
    engine = Recorder("[9]", "not json", "[1]")
    with pytest.raises(ContractViolationError) as raised:
        MakeSum([1, 2, 3, 4], 5).run(engine)
    outcome = raised.value.outcome
    assert outcome is not None and not outcome.success
    kinds = [(v.attempt, v.kind) for v in outcome.violations]
    assert (2, ViolationKind.TYPE) in kinds  # the parse error is a type violation
    assert len(engine.requests) == 3
    assert "not a valid list[int]" in engine.requests[2].messages[-1].content


def test_a_fallback_method_degrades_instead_of_raising() -> None:
    @dataclass
    class Safe(MakeSum):
        def fallback(self, outcome: object) -> list[int]:
            return []

    assert Safe([1, 2], 5).run(Recorder("[7]", "[7]"), tries=2) == []


def test_pre_conditions_run_on_the_validated_query_before_any_request() -> None:
    @dataclass
    class Positive(Query[int]):
        """Double it."""
        n: int
        pre_conditions = [Pre(lambda q: q.n > 0, "n must be positive")]

    engine = Recorder()
    with pytest.raises(ContractViolationError, match="n must be positive"):
        Positive(-1).run(engine)
    assert engine.requests == []
    # fields are validated by pydantic, as a contract's input is (a dataclass is not)
    assert Positive("3").run(Recorder("6")) == 6  # type: ignore[arg-type]
    with pytest.raises(ContractViolationError, match="valid integer"):
        Positive("x").run(engine)  # type: ignore[arg-type]
    assert engine.requests == []


def test_preflight_refuses_a_query_no_answer_can_satisfy_at_zero_tokens() -> None:
    @dataclass
    class Between(Query[int]):
        """Pick a number in [lo, hi]."""
        lo: int
        hi: int
        post_conditions = [Post(lambda n, q: q.lo <= n <= q.hi, "lo <= n <= hi")]

    engine = Recorder("5")
    assert Between(1, 9).run(engine) == 5
    with pytest.raises(ContractViolationError) as raised:
        Between(9, 1).run(engine)
    assert len(engine.requests) == 1
    assert raised.value.outcome.violations[0].kind is ViolationKind.UNSATISFIABLE


def test_answer_type_and_finite_answer_sets() -> None:
    class Color(enum.Enum):
        RED = "red"
        BLUE = "blue"

    @dataclass
    class Yes(Query[Literal["yes", "no"]]):
        x: int

    @dataclass
    class Paint(Query[Color]):
        x: int

    @dataclass
    class Flag(Query[bool]):
        x: int

    assert Yes(1).finite_answer_set() == ["yes", "no"]
    assert Paint(1).finite_answer_set() == [Color.RED, Color.BLUE]
    assert Flag(1).finite_answer_set() == [True, False]
    assert MakeSum([], 0).finite_answer_set() is None
    assert MakeSum.answer_type() == list[int]


def test_a_query_must_be_a_dataclass_with_a_concrete_answer_type() -> None:
    class NotData(Query[int]):
        x: int = 0

    with pytest.raises(Exception, match="must be a dataclass"):
        NotData().run(Recorder("1"))
    with pytest.raises(Exception, match="concrete answer type"):
        Query.answer_type()


def test_modes_choose_parser_and_settings() -> None:
    @dataclass
    class Haiku(Query[str]):
        """Write a haiku."""
        topic: str
        __modes__ = {None: Mode(get_text.trim), "block": Mode(last_code_block.trim,
                                                              temperature=0.3)}

    engine = Recorder("  a poem  ", "Sure:\n```\nin a block\n```\n")
    assert Haiku("sea").run(engine) == "a poem"
    assert Haiku("sea").run(engine, mode="block") == "in a block"
    assert engine.requests[1].options.temperature == 0.3
    assert engine.requests[0].schema is None  # a text parser asks for no schema
    with pytest.raises(ValueError, match="no answer mode 'poem'"):
        Haiku("sea").run(engine, mode="poem")


# -- parsers -------------------------------------------------------------------------------

def test_parsers_read_text_and_fail_with_a_parse_error_naming_the_problem() -> None:
    assert get_text.parse("  x ") == "  x "
    assert trim.parse("  x ") == "x"
    assert last_code_block.parse("a\n```py\none\n```\nb\n```\ntwo\n```\n") == "two\n"
    with pytest.raises(ParseError, match="no code block"):
        last_code_block.parse("none here")
    assert json_as(list[int]).parse('Here: ```json\n[1, 2]\n```') == [1, 2]
    assert yaml_as(dict[str, int]).parse("a: 1\nb: 2") == {"a": 1, "b": 2}
    with pytest.raises(ParseError, match="not a valid dict"):
        yaml_as(dict[str, int]).parse("a: x")
    with pytest.raises(ParseError, match="not valid YAML"):
        yaml_as(dict[str, int]).parse("a: [1")
    assert get_text.trim.map(int).parse(" 42 ") == 42
    with pytest.raises(ParseError, match="ValueError"):
        get_text.map(int).parse("x")
    even = json_as(int).validate(lambda n: None if n % 2 == 0 else "must be even")
    assert even.parse("4") == 4
    with pytest.raises(ParseError, match="must be even"):
        even.parse("3")
    wrapped = json_as(int).wrap_errors().parse("x")
    assert isinstance(wrapped, WrappedParseError) and isinstance(wrapped.error, ParseError)
    assert structured_as(int).structured is not None and json_as(int).structured is None


class Search(BaseModel):
    """Search the web."""
    query: str


class Final(BaseModel):
    answer: str


def test_tool_call_parsers() -> None:
    call = Answer("", (ToolCall("c1", "Search", '{"query": "hoare"}'),))
    parsed = response_with([Search]).parse(call)
    assert isinstance(parsed.parsed, ToolRequests)
    assert parsed.parsed.tool_calls == (Search(query="hoare"),)
    final = response_with([Search]).parse(Answer("done"))
    assert isinstance(final.parsed, FinalAnswer) and final.parsed.final == "done"
    with pytest.raises(ParseError, match="unknown tool 'Nope'"):
        response_with([Search]).parse(Answer("", (ToolCall("c", "Nope", "{}"),)))
    with pytest.raises(ParseError, match="not valid"):
        response_with([Search]).parse(Answer("", (ToolCall("c", "Search", "{}"),)))
    parser = final_tool_call_as(Final)
    assert parser.parse(Answer("", (ToolCall("a", "Final", '{"answer": "1"}'),
                                    ToolCall("b", "Final", '{"answer": "2"}')))) == \
        Final(answer="2")
    with pytest.raises(ParseError, match="answer by calling the tool 'Final'"):
        parser.parse(Answer("text only"))


def test_tools_are_offered_with_the_request() -> None:
    @dataclass
    class Ask(Query[Final]):
        """Answer through the Final tool."""
        question: str
        __parser__ = final_tool_call_as(Final)

    engine = DummyEngine(Response(texts=("",), tool_calls=(
        ToolCall("x", "Final", '{"answer": "42"}'),)))
    assert Ask("?").run(engine) == Final(answer="42")
    assert engine.requests[0].tools[0]["function"]["name"] == "Final"


def test_wrapped_parse_errors_are_answers_not_failures() -> None:
    @dataclass
    class Num(Query[int | WrappedParseError]):
        """A number."""
        x: int
        __parser__ = json_as(int).wrap_errors()
        post_conditions = [Post(lambda n: n > 0, "positive")]

    value = Num(1).run(Recorder("oops"))
    assert isinstance(value, WrappedParseError)
    assert Num(1).run(Recorder("-1", "3")) == 3  # a real answer is still checked


# -- few_shot ------------------------------------------------------------------------------

def test_few_shot_streams_solutions_with_their_budget_until_max_requests() -> None:
    model = DummyModel([_demo([1, 2]), _demo([2, 3]), _demo([1, 4]), _demo([4])])
    stream = few_shot(MakeSum([1, 2, 3, 4], 5), model, max_requests=4)
    solutions = list(stream)
    assert [s.value for s in solutions] == [[2, 3], [1, 4]]
    assert solutions[0].attempts == 2 and solutions[1].attempts == 1
    assert solutions[0].budget["num_requests"] == 2
    assert solutions[1].budget["num_requests"] == 3
    assert all(s.outcome.success for s in solutions)


def test_examples_come_from_a_demonstration_file_with_selectors(tmp_path: Path) -> None:
    demos = [
        _demo([2, 3], tags=["easy"]),
        {"query": "MakeSum", "args": {"allowed": [5, 6, 7], "target": 13}, "answer": [6, 7],
         "tags": ["hard"]},
        {"query": "MakeSum", "args": {"allowed": [10, 20], "target": 30}, "answer_text":
         "[10, 20]", "tags": ["easy"]},
        {"query": "Other", "args": {}, "answer": 1},
    ]
    path = tmp_path / "demos.yaml"
    path.write_text(yaml.safe_dump(demos))
    jsonschema.validate(yaml.safe_load(path.read_text()),
                        json.loads(SCHEMA_PATH.read_text()))
    engine = Recorder("[3, 4]")
    query = MakeSum([1, 3, 4], 7)
    next(few_shot(query, engine, examples=path, select_examples=[with_tags("easy"), take(1)]))
    roles = [m.role for m in engine.requests[0].messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert json.loads(engine.requests[0].messages[2].content) == [2, 3]
    engine = Recorder("[3, 4]")
    next(few_shot(query, engine, examples=path, select_examples=[most_similar(1)]))
    shown = yaml.safe_load(engine.requests[0].messages[1].content)
    assert shown == {"allowed": [1, 2, 3, 4], "target": 5}  # shares the most words
    engine = Recorder("[3, 4]")
    next(few_shot(query, engine, examples=path))
    assert len(engine.requests[0].messages) == 2 + 2 * 3  # the three MakeSum examples


def test_jsonl_demonstrations_and_malformed_entries(tmp_path: Path) -> None:
    good = tmp_path / "d.jsonl"
    good.write_text("\n".join(json.dumps(d) for d in [_demo([2, 3]), _demo([1, 4])]) + "\n")
    assert [e.answer for e in load_demonstrations(good)] == [[2, 3], [1, 4]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_demo([1])) + "\n{not json\n")
    with pytest.raises(DemonstrationError, match=r"bad\.jsonl:2: not JSON"):
        load_demonstrations(bad)
    with pytest.raises(DemonstrationError, match="exactly one of 'answer'"):
        load_demonstrations([{"query": "MakeSum", "args": {}}])
    with pytest.raises(DemonstrationError, match="unknown key"):
        load_demonstrations([{"query": "MakeSum", "answer": 1, "anwser": 2}])
    with pytest.raises(DemonstrationError, match="cannot read"):
        load_demonstrations(tmp_path / "missing.yaml")
    schema = json.loads(SCHEMA_PATH.read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"query": "MakeSum", "answer": 1, "answer_text": "1"}], schema)


def test_n_completions_are_tried_one_by_one_before_a_new_request() -> None:
    """query-samples-before-requests: the samples of a request are examined one
    per attempt before another request is sent."""
    engine = Recorder(("[9]", "[1, 1]", "[2, 3]"), ("[1, 4]", "[5]", "[3, 2]"))
    stream = few_shot(MakeSum([1, 2, 3, 4], 5), engine, num_completions=3, tries=5)
    first = next(stream)
    assert first.value == [2, 3] and first.attempts == 3
    assert len(engine.requests) == 1 and engine.requests[0].options.n == 3
    assert first.outcome.usage["samples"] == 3
    second = next(stream)  # the rest of the batch is used up first: no repair needed
    assert second.value == [1, 4]
    assert len(engine.requests) == 2
    assert second.budget == {"num_requests": 2, "num_completions": 6, "input_tokens": 20,
                             "output_tokens": 6}


def test_n_completions_against_the_loopback_server() -> None:
    script = [completion("[9]", "[2, 3]", "[1, 4]")]
    with OpenAIServer(script) as server:
        solution = next(few_shot(MakeSum([1, 2, 3, 4], 5), server.engine(),
                                 num_completions=3))
        assert solution.value == [2, 3]
        assert server.bodies[0]["n"] == 3
        assert len(server.bodies) == 1
        assert solution.budget["num_completions"] == 3


def test_iterative_mode_keeps_one_conversation() -> None:
    engine = Recorder("[9]", "[2, 3]", "[1, 4]")
    stream = few_shot(MakeSum([1, 2, 3, 4], 5), engine, iterative_mode=True)
    assert next(stream).value == [2, 3]
    assert next(stream).value == [1, 4]
    last = engine.requests[2].messages
    assert [m.role for m in last] == ["system", "user", "assistant", "user", "assistant",
                                      "user"]
    assert last[2].content == "[9]" and "sum to the target" in last[3].content
    assert last[4].content == "[2, 3]" and "different answer" in last[5].content
    with pytest.raises(Exception, match="num_completions=1"):
        few_shot(MakeSum([1], 1), engine, iterative_mode=True, num_completions=2)


def test_templates_next_to_the_module_and_in_folders(tmp_path: Path) -> None:
    @dataclass
    class Greet(Query[str]):
        """unused docstring"""
        name: str
        __parser__ = get_text.trim
        __templates__ = [str(tmp_path)]

    (tmp_path / "Greet.system.jinja").write_text("Greet people. {{ params.tone }} {{ format }}")
    (tmp_path / "Greet.instance.jinja").write_text("Name: {{ name }}")
    (tmp_path / "Greet.repair.jinja").write_text("Fix: {{ error }}")
    (tmp_path / "Greet.more.jinja").write_text("Another one, please.")

    @dataclass
    class Short(Greet):
        post_conditions = [Post(lambda s: len(s) < 10, "short")]

    (tmp_path / "Short.system.jinja").write_text("Short {{ params.tone }}")
    (tmp_path / "Short.instance.jinja").write_text("N={{ query.name }}")
    (tmp_path / "Short.repair.jinja").write_text("Fix: {{ error }}")
    (tmp_path / "Short.more.jinja").write_text("More!")
    engine = Recorder("a very long greeting", "hi", "yo")
    stream = few_shot(Short("Ada"), engine, params={"tone": "warm"}, iterative_mode=True)
    assert [next(stream).value, next(stream).value] == ["hi", "yo"]
    messages = engine.requests[2].messages
    assert messages[0].content.startswith("Short warm")
    assert messages[1].content == "N=Ada"
    assert messages[3].content == "Fix: - short"
    assert messages[5].content == "More!"
    engine = Recorder("hello")
    Greet("Bob").run(engine, params={"tone": "cold"})
    assert engine.requests[0].messages[0].content == "Greet people. cold"
    assert engine.requests[0].messages[1].content == "Name: Bob"


def test_template_folders_added_globally_and_prompt_attributes(tmp_path: Path) -> None:
    @dataclass
    class Shout(Query[str]):
        word: str
        __parser__ = get_text
        __system_prompt__ = "Shout. {{ params.n }} times."
        __instance_prompt__ = "Word: {{ word }}"

    engine = Recorder("A")
    Shout("a").run(engine, params={"n": 3})
    assert [m.content for m in engine.requests[0].messages] == ["Shout. 3 times.", "Word: a"]
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "Whisper.instance.jinja").write_text("psst {{ word }}")

    @dataclass
    class Whisper(Query[str]):
        """Whisper."""
        word: str
        __parser__ = get_text

    add_template_folder(folder)
    engine = Recorder("a")
    Whisper("b").run(engine)
    assert engine.requests[0].messages[1].content == "psst b"
    with pytest.raises(ValueError, match="not a directory"):
        add_template_folder(tmp_path / "nope")


def test_dummy_and_failing_models() -> None:
    model = DummyModel([_demo([2, 3])])
    with pytest.raises(ContractViolationError) as raised:
        MakeSum([7], 7).run(model)
    assert raised.value.outcome.violations[0].error_type == "NoDemonstration"
    assert len(raised.value.outcome.attempts) == 1  # fatal: no second try
    assert list(few_shot(MakeSum([7], 7), FailingModel())) == []
    assert issubclass(NoDemonstration, FatalEngineError)  # why the stage stops at once


def test_an_unbounded_stream_is_lazy_and_stops_at_the_budget() -> None:
    model = DummyModel([_demo([2, 3]), _demo([1, 4])])
    stream = few_shot(MakeSum([1, 2, 3, 4], 5), model)
    values = [next(stream).value for _ in range(5)]
    assert values == [[2, 3], [1, 4], [2, 3], [1, 4], [2, 3]]
    from hoare.engines.budget import Budget
    stream = few_shot(MakeSum([1, 2, 3, 4], 5), model, budget=Budget(max_requests=3))
    assert len(list(stream)) == 3


def test_async_run_and_stream() -> None:
    model = DummyModel([_demo([2, 3]), _demo([1, 4])])

    async def main() -> tuple[list[int], list[list[int]]]:
        one = await MakeSum([1, 2, 3, 4], 5).arun(model)
        seen = []
        async for solution in afew_shot(MakeSum([1, 2, 3, 4], 5), model, max_requests=2):
            seen.append(solution.value)
        return one, seen

    one, seen = asyncio.run(main())
    assert one in ([2, 3], [1, 4]) and len(seen) == 2


def test_statistics_count_each_query_call() -> None:
    @dataclass
    class Counted(MakeSum):
        pass

    def demo(answer: list[int]) -> dict[str, object]:
        return {**_demo(answer), "query": "Counted"}  # demonstrations name their class

    Counted([1, 2, 3, 4], 5).run(DummyModel([demo([2, 3])]))
    with pytest.raises(ContractViolationError):
        Counted([1, 2, 3, 4], 5).run(DummyModel([demo([9]), demo([8])]), tries=2)
    stats = runtime_of(Counted).tracker.snapshot().as_dict()
    assert stats["calls"] == 2 and stats["successes"] == 1


# -- verification --------------------------------------------------------------------------

def test_hoare_verify_checks_a_query_like_a_contract() -> None:
    import hoare

    report = hoare.verify(MakeSum)
    statuses = {c.kind: c.status for c in report.contracts[0].checks}  # type: ignore[attr-defined]
    assert statuses["post_satisfiable"] == "pass"
    assert statuses["post_total"] == "warn"  # allowed=[] with target != 0 has no answer

    @dataclass
    class Impossible(Query[int]):
        x: int
        post_conditions = [Post(lambda n: n > 5, "big"), Post(lambda n: n < 3, "small")]

    report = hoare.verify(Impossible)
    statuses = {c.kind: c.status for c in report.contracts[0].checks}  # type: ignore[attr-defined]
    assert statuses["post_satisfiable"] == "fail"


def test_the_cli_finds_queries_in_a_module(tmp_path: Path) -> None:
    module = tmp_path / "my_queries.py"
    module.write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from hoare import Post
        from hoare.queries import Query

        @dataclass
        class Bad(Query[int]):
            x: int
            post_conditions = [Post(lambda n: n > 5 and n < 3, "never")]
    '''))
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", str(module)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "my_queries:Bad" in done.stdout and "FAIL" in done.stdout


# -- without the extra ---------------------------------------------------------------------

def test_missing_extra_is_a_clear_error() -> None:
    code = textwrap.dedent('''
        import sys
        sys.modules["yaml"] = None
        sys.modules["jinja2"] = None
        from dataclasses import dataclass
        from hoare.queries import Query, get_text
        from hoare.engines import FunctionEngine

        @dataclass
        class Q(Query[str]):
            """Say hi."""
            x: int
            __parser__ = get_text

        try:
            Q(1).run(FunctionEngine(lambda r: "hi"))
        except ImportError as error:
            print(error)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'hoare[queries]'" in done.stdout and "PyYAML" in done.stdout


# -- many threads ----------------------------------------------------------------------------

def test_one_query_class_and_model_shared_by_many_threads() -> None:
    code = textwrap.dedent('''
        import threading
        from dataclasses import dataclass
        from hoare import Post
        from hoare.queries import Query, DummyModel, few_shot
        from hoare.queries.query import runtime_of

        @dataclass
        class Sum(Query[list[int]]):
            """Sum."""
            allowed: list[int]
            target: int
            post_conditions = [Post(lambda xs, q: sum(xs) == q.target, "sum")]

        demos = [{"query": "Sum", "args": {"allowed": [1, 2, 3], "target": t},
                  "answer": [t]} for t in range(16)]
        model = DummyModel(demos + [{"query": "Sum", "args": {"allowed": [1, 2, 3],
                                     "target": t}, "answer": [t, 1]} for t in range(16)])
        barrier = threading.Barrier(16)
        errors = []

        def work(t):
            barrier.wait()
            try:
                for _ in range(20):
                    assert Sum([1, 2, 3], t).run(model) == [t]
                got = [s.value for s in few_shot(Sum([1, 2, 3], t), model, max_requests=4)]
                assert got and all(v == [t] for v in got), got
            except BaseException as error:
                errors.append(repr(error))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert not errors, errors[:3]
        stats = runtime_of(Sum).tracker.snapshot().as_dict()
        print(stats["calls"])
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.strip()) >= 16 * 21


def test_function_engine_still_works_as_a_query_engine() -> None:
    @dataclass
    class Echo(Query[str]):
        """Echo."""
        text: str = field(default="x")
        __parser__ = get_text

    assert Echo().run(FunctionEngine(lambda request: "echo")) == "echo"


def test_the_stream_stops_when_the_query_itself_fails() -> None:
    @dataclass
    class Never(Query[int]):
        """Never."""
        x: int
        pre_conditions = [Pre(lambda q: q.x > 0, "x > 0")]

    engine = Recorder()
    assert list(few_shot(Never(0), engine)) == []
    assert engine.requests == []


def test_prompts_reject_bad_policy_options() -> None:
    query = MakeSum([1], 1)
    for bad in ({"num_completions": 0}, {"max_requests": 0}, {"tries": 0},
                {"params": [1]}, {"examples": 3}, {"near_miss": "x"}):
        with pytest.raises(Exception) as raised:
            next(few_shot(query, Recorder("[1]"), **bad))  # type: ignore[arg-type]
        assert type(raised.value).__name__ == "UsageError", bad
    with pytest.raises(Exception, match="needs an engine"):
        query.run(None)


def test_parse_errors_count_as_type_violations_in_the_outcome() -> None:
    engine = Recorder("no", "[1]")
    solution = next(few_shot(MakeSum([1], 1), engine))
    first = solution.outcome.attempts[0]
    assert first.phase is Phase.POST and first.violations[0].kind is ViolationKind.TYPE
    assert solution.outcome.trials == (("post_conditions[0]", True),
                                       ("post_conditions[1]", True))


# -- classify ------------------------------------------------------------------------------

@dataclass
class Mood(Query[Literal["positive", "negative", "neutral"]]):
    """Classify the sentiment. Answer with one word."""
    review: str


def _top(*pairs: tuple[str, float]) -> list[tuple[str, float, list[tuple[str, float]]]]:
    import math

    logs = [(token, math.log(p)) for token, p in pairs]
    return [(logs[0][0], logs[0][1], logs)]


def test_classify_reads_the_first_token_logprobs_from_the_server() -> None:
    from hoare.queries import classify

    reply = completion("positive", logprobs=[_top(("pos", 0.6), (" positive", 0.2),
                                                  ("neg", 0.1), ("The", 0.1))])
    with OpenAIServer([reply]) as server:
        result = classify(Mood("Great kettle"), server.engine(), top_logprobs=5)
        body = server.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert body["temperature"] == 0.0 and "response_format" not in body
    assert "positive, negative, neutral" in body["messages"][0]["content"]
    assert result.value == "positive"
    assert set(result.distribution) == {"positive", "negative", "neutral"}
    assert abs(sum(result.distribution.values()) - 1.0) < 1e-12
    # "pos" and " positive" are the same answer; "The" names none: 0.8 vs 0.1, renormalised
    assert result.distribution["positive"] == pytest.approx(0.8 / 0.9)
    assert result.distribution["negative"] == pytest.approx(0.1 / 0.9)
    assert result.distribution["neutral"] == 0.0


def test_classify_temperature_and_bias() -> None:
    from hoare.queries import distribution_of

    values = ["a", "b", "c"]
    tokens = [("a", -0.5), ("b", -1.5), ("c", -3.0)]
    plain = distribution_of(values, tokens)
    hot = distribution_of(values, tokens, temperature=2.0)
    cold = distribution_of(values, tokens, temperature=0.0)
    assert plain["a"] > hot["a"] > 1 / 3 and cold == {"a": 1.0, "b": 0.0, "c": 0.0}
    biased = distribution_of(values, tokens, bias=("c", 0.5))
    assert biased["c"] == pytest.approx(0.5 + 0.5 * plain["c"])
    assert sum(biased.values()) == pytest.approx(1.0)
    shared = distribution_of(["yes", "yellow"], [("ye", -0.1)])
    assert shared == {"yes": 0.5, "yellow": 0.5}  # an ambiguous token is split
    assert distribution_of(values, [("zzz", -0.1)]) == {}


def test_classify_errors_clearly_without_logprobs_or_a_finite_set() -> None:
    from hoare.queries import NoLogprobs, classify

    with OpenAIServer(["negative"]) as server, pytest.raises(NoLogprobs, match="no logprobs"):
        classify(Mood("meh"), server.engine())
    with pytest.raises(Exception, match="finite answer set"):
        classify(MakeSum([1], 1), Recorder())


def test_classify_repairs_an_answer_outside_the_set_and_bools_and_enums() -> None:
    from hoare.queries import classify

    replies = [completion("maybe", logprobs=[_top(("maybe", 0.9), ("pos", 0.1))]),
               completion("Negative", logprobs=[_top(("Neg", 0.7), ("pos", 0.3))])]
    with OpenAIServer(replies) as server:
        result = classify(Mood("hm"), server.engine())
        assert "answer with exactly one of" in server.bodies[1]["messages"][-1]["content"]
    assert result.value == "negative"
    assert result.distribution["negative"] == pytest.approx(0.7)

    @dataclass
    class Spam(Query[bool]):
        """Is it spam?"""
        text: str

    with OpenAIServer([completion("true", logprobs=[_top(("true", 0.75), ("false", 0.25))])]
                      ) as server:
        verdict = classify(Spam("WIN $$$"), server.engine())
    assert verdict.value is True
    assert verdict.distribution == pytest.approx({True: 0.75, False: 0.25})


# -- budgets and models through the query layer ------------------------------------------------

def test_a_delphyne_budget_bounds_a_stream_and_is_reported_in_its_keys() -> None:
    from hoare.queries import ModelPricing, standard_model

    with OpenAIServer(default=completion("[2, 3]", prompt_tokens=1000,
                                         completion_tokens=10)) as server:
        model = standard_model("tiny", base_url=server.url, api_key="k",
                               pricing=ModelPricing(1.0, 0.5, 2.0), model_class="small")
        stream = few_shot(MakeSum([1, 2, 3, 4], 5), model,
                          budget={"num_requests": 5, "num_requests__small": 3})
        solutions = list(stream)
        assert len(solutions) == 3 and len(server.bodies) == 3
        last = solutions[-1].budget
        assert last["num_requests"] == 3 and last["num_requests__small"] == 3
        assert last["input_tokens"] == 3000 and last["output_tokens"] == 30
        assert last["price"] == pytest.approx(3 * (1000 * 1.0 + 10 * 2.0) / 1e6)


def test_a_price_cap_needs_a_known_price() -> None:
    from hoare.engines.budget import MissingPrice
    from hoare.queries import standard_model

    model = standard_model("my-local-model", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert model.pricing is None
    with pytest.raises(MissingPrice, match="my-local-model"):
        few_shot(MakeSum([1], 1), model, budget={"price": 1.0})


# -- examples from the verifier ----------------------------------------------------------------

def test_auto_examples_are_valid_answers_and_near_misses() -> None:
    @dataclass
    class Code(Query[str]):
        """Invent a product code."""
        prefix: str
        post_conditions = [
            Post(lambda s, q: s.startswith(q.prefix), "starts with the prefix", id="prefix"),
            Post(lambda s: len(s) == 6, "six characters long", id="length"),
        ]

    engine = Recorder('"AB1234"')  # structured output: a JSON string
    assert Code("AB").run(engine, examples="auto", near_miss="length") == "AB1234"
    system = engine.requests[0].messages[0].content
    valid = json.loads(system.split("satisfies every condition:\n", 1)[1].split("\n")[0])
    miss = json.loads(system.split("six characters long\":\n", 1)[1].split("\n")[0])
    value = valid["value"] if isinstance(valid, dict) else valid
    bad = miss["value"] if isinstance(miss, dict) else miss
    assert value.startswith("AB") and len(value) == 6  # replayed: really valid
    assert bad.startswith("AB") and len(bad) != 6       # breaks only the named one
    with pytest.raises(ValueError, match="not a post-condition"):
        Code("AB").run(Recorder('"AB1234"'), examples="auto", near_miss="nope")


# -- the examples ------------------------------------------------------------------------------

def test_the_query_examples_run_offline() -> None:
    env = {"PYTHONPATH": LIBRARY, "PATH": "/usr/bin:/bin",
           "OPENAI_API_KEY": "sk-not-a-key", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "make_sum.py")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "run: [2, 3]"
    assert "solution: [1, 4]" in done.stdout
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "classify_sentiment.py")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "positive  (positive 0.92" in done.stdout
    bad = subprocess.run([sys.executable, str(ROOT / "examples" / "make_sum.py"), "--x"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "--live" in bad.stderr


def test_budget_aware_best_of_n_follows_the_measured_rates() -> None:
    @dataclass
    class Fresh(MakeSum):
        pass

    def demo(answer: list[int]) -> dict[str, object]:
        return {**_demo(answer), "query": "Fresh"}

    # nothing measured yet (p1 = p_repair = 1/2): 4 samples in one request beat 3 requests
    engine = Recorder(("[9]", "[2, 3]", "[1, 4]", "[8]"))
    first = next(few_shot(Fresh([1, 2, 3, 4], 5), engine, num_completions="auto",
                          max_tokens=10, budget={"output_tokens": 40}))
    assert first.strategy == "best_of_n" and engine.requests[0].options.n == 4
    # measured: first answers fail, repaired ones pass -> sequential repair wins
    for _ in range(10):
        Fresh([1, 2, 3, 4], 5).run(Recorder("[9]", "[2, 3]"))
    engine = Recorder("[9]", "[2, 3]")
    second = next(few_shot(Fresh([1, 2, 3, 4], 5), engine, num_completions="auto",
                           budget={"output_tokens": 40}))
    assert second.strategy == "sequential" and engine.requests[0].options.n == 1
    assert second.value == [2, 3]
    with pytest.raises(Exception, match="token budget"):
        few_shot(Fresh([1], 1), Recorder(), num_completions="auto")
    assert next(few_shot(Fresh([1, 2, 3, 4], 5), DummyModel([demo([2, 3])]))).strategy == \
        "fixed"


def test_best_of_n_reads_the_rates_a_previous_process_stored(tmp_path: Path) -> None:
    script = tmp_path / "sums.py"
    script.write_text(textwrap.dedent('''
        import sys
        from dataclasses import dataclass
        import hoare
        from hoare import Post
        from hoare.engines.base import Response, Usage
        from hoare.queries import Query, few_shot

        @dataclass
        class Sum(Query[list[int]]):
            """Sum."""
            allowed: list[int]
            target: int
            post_conditions = [Post(lambda xs, q: sum(xs) == q.target, "sum")]

        class Engine:  # first answers fail, repaired ones pass
            def __init__(self):
                self.answers = ["[9]", "[5]"] * 20
            def complete(self, request):
                n = request.options.n
                texts = tuple(self.answers.pop(0) for _ in range(n))
                return Response(texts=texts, usage=Usage(1, 10, n))
            async def acomplete(self, request):
                return self.complete(request)

        hoare.configure(stats=sys.argv[1])
        if sys.argv[2] == "record":
            for _ in range(10):
                Sum([5], 5).run(Engine())
        else:
            solution = next(few_shot(Sum([5], 5), Engine(), num_completions="auto", max_tokens=10,
                                     budget={"output_tokens": 40}))
            print(solution.strategy)
        hoare.flush_stats()
    '''))
    store = str(tmp_path / "calls.db")
    env = {**os.environ, "PYTHONPATH": LIBRARY}

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, env=env, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert run(str(tmp_path / "empty.db"), "choose") == "best_of_n"  # nothing measured
    run(store, "record")
    assert run(store, "choose") == "sequential"  # the stored calls say repair works
