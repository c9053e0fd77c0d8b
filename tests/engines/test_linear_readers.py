"""Every reader of model or server text is linear in the text (issue 30; issue 31 item 4).

A quadratic reader (a backtracking regex, a rescan per position, a join per chunk) takes
minutes on the texts below; a linear one well under a second each. So each reader
runs in a child process on 200,000-character adversarial texts (long runs of each
character JSON and markdown give meaning to, alone and after prose or a JSON value)
under a generous timeout: a bound, not a timing assertion. The child also keeps a
crash (a ``RecursionError`` escaping, a segfault) from passing unseen.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY, ROOT

from hoare.contracts.json_text import fences

SIZE = 200_000
TIMEOUT = 120  # seconds for all the texts of one reader; a quadratic one takes many minutes

UNITS = ["`", "```", "``` \n", "```json\n{", "{", "}", "[", "]", '"', "\\", '"\\', " ", "\n",
         "\t", '{"', '["', '{"a":', '{"a": [', "{[", "[{", '{"a":1} ', "[1] ", "{x} ", ",",
         ":", '{"a": "', "\\u", "é", "\U0010ffff"]
PREFIXES = ["", "Sure: ", '{"a": ']

CHILD = textwrap.dedent('''
    import sys
    from types import SimpleNamespace as NS
    from pydantic import BaseModel
    from hoare import LLMDataModel, Contract, Post, contract
    from hoare.errors import InvalidValue
    from hoare.contracts.json_text import extract_json, json_candidates
    from hoare.declaration.models import read_answer, type_spec
    from hoare.queries.answers import ParseError
    from hoare.queries.parsers import last_code_block, json_as, _last_block
    from hoare.contracts.early_stop import EarlyStop, plan_for
    from hoare.engines.base import Message, Request
    from hoare.engines.openai_stream import StreamReading

    class Q(LLMDataModel):
        text: str

    class A(LLMDataModel):
        a: int
        b: list[str]
        c: str

    @contract(stream=True)
    class Ask(Contract[Q, A]):
        prompt = "x"
        post_conditions = [Post(lambda v: v.a < 10, "small a")]

        def forward(self, q: Q) -> A:
            return self.contract_result

    plan = plan_for(Ask.__hoare__)
    model, native = type_spec(A), type_spec(list[int])

    def early_stop(text):
        watch = EarlyStop(plan, lambda source, value: bool(source.fn(value)))
        for at in range(0, len(text), 64):
            if watch.feed(text[at:at + 64]):
                return

    def stream_reading(text):
        reading = StreamReading(Request(messages=(Message("user", "x"),),
                                         watch=EarlyStop(plan, lambda s, v: bool(s.fn(v)))))
        for at in range(0, len(text), 64):
            piece = NS(index=0, delta=NS(content=text[at:at + 64]), logprobs=None,
                       finish_reason=None)
            if reading.add(NS(usage=None, model="m", choices=[piece])):
                break
        reading.response({"model": "m"})

    READERS = {
        "extract_json": extract_json,
        "json_candidates": lambda t: list(json_candidates(t)),
        "read_answer": lambda t: read_answer(model, t),
        "read_answer_native": lambda t: read_answer(native, t),
        "last_code_block": last_code_block.parse,
        "last_block_labelled": lambda t: _last_block(t, ("yaml", "yml")),
        "json_as": json_as(A).parse,
        "early_stop": early_stop,
        "stream_reading": stream_reading,
    }
    reader = READERS[sys.argv[1]]
    size = int(sys.argv[2])
    units, prefixes = eval(sys.argv[3]), eval(sys.argv[4])
    for unit in units:
        for prefix in prefixes:
            text = prefix + unit * (size // len(unit))
            try:
                reader(text)
            except (InvalidValue, ParseError):
                pass  # a failed attempt: what a reader may say about such text
    print("read")
''')

READERS = ["extract_json", "json_candidates", "read_answer", "read_answer_native",
           "last_code_block", "last_block_labelled", "json_as", "early_stop",
           "stream_reading"]


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_is_linear_on_adversarial_text(reader: str) -> None:
    """Runs of backticks, brackets, quotes, backslashes, spaces, newlines, keys and
    values, 200,000 characters each: every reader ends within the bound and raises
    nothing but a failed attempt."""
    child = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(SIZE), repr(UNITS), repr(PREFIXES)],
        capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": LIBRARY})
    assert child.returncode == 0 and child.stdout.strip() == "read", child.stderr[-3000:]


STREAM = textwrap.dedent('''
    import json
    from types import SimpleNamespace as NS
    from hoare import Contract, LLMDataModel, Post, contract
    from hoare.contracts.early_stop import EarlyStop, plan_for
    from hoare.engines.base import Message, Request
    from hoare.engines.openai_stream import StreamReading

    class Q(LLMDataModel):
        text: str

    class Doc(LLMDataModel):
        title: str
        paragraphs: list[str]
        note: str

    @contract(stream=True)
    class Write(Contract[Q, Doc]):
        prompt = "x"
        post_conditions = [Post(lambda d: len(d.title) < 100, "short title"),
                           Post(lambda d: d.note != "bad", "a note")]

        def forward(self, q: Q) -> Doc:
            return self.contract_result

    paragraph = "lorem ipsum, dolor {sit} [amet] \\"quoted\\" " * 3
    text = json.dumps({"title": "t", "paragraphs": [paragraph] * 40_000, "note": "fine"})
    assert len(text) > 4_000_000
    reading = StreamReading(Request(messages=(Message("user", "x"),), watch=EarlyStop(
        plan_for(Write.__hoare__), lambda source, value: bool(source.fn(value)))))
    for at in range(0, len(text), 64):
        piece = NS(index=0, delta=NS(content=text[at:at + 64]), logprobs=None,
                   finish_reason=None)
        assert not reading.add(NS(usage=None, model="m", choices=[piece]))
    assert reading.response({"model": "m"}).text == text
    print("read")
''')


def test_a_streamed_answer_is_read_in_linear_time() -> None:
    """A 4 MB answer in 64-character chunks, watched by early stop: read in one pass (it
    was joined and parsed again at every chunk, minutes for this size)."""
    child = subprocess.run([sys.executable, "-c", STREAM], capture_output=True, text=True,
                           cwd=ROOT, timeout=TIMEOUT,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert child.returncode == 0 and child.stdout.strip() == "read", child.stderr[-3000:]


DEEP = 100_000
DEEP_CHILD = textwrap.dedent('''
    import sys
    from pydantic import BaseModel
    from hoare import Contract, LLMDataModel, contract
    from hoare.engines import FunctionEngine, Response, Usage
    from hoare.engines.base import ToolCall
    from hoare.errors import InvalidValue
    from hoare.contracts.early_stop import EarlyStop, plan_for
    from hoare.contracts.json_text import extract_json, json_candidates
    from hoare.kernel import ViolationKind
    from hoare.declaration.models import read_answer, type_spec
    from hoare.queries.answers import Answer, ParseError
    from hoare.queries.parsers import final_tool_call_as, json_as, structured_as, yaml_as

    n = int(sys.argv[1])
    texts = ['{"a": ' + "[" * n + "]" * n + "}", "[" * n + "]" * n,
             '{"a":' * n + "1" + "}" * n, "Here: " + "[" * n + "]" * n, "{" * n,
             '```json\\n' + "[" * n + "]" * n + "\\n```"]

    class M(BaseModel):
        a: object = None

    class Q(LLMDataModel):
        text: str

    def failed(read, text, *errors):
        try:
            read(text)
        except errors as error:
            assert "Recursion" not in type(error).__name__, error
            return str(error)
        raise AssertionError("a value nested %d deep was read" % n)

    for spec in (type_spec(M), type_spec(list[object]), type_spec(object)):
        for text in texts:
            extract_json(text), list(json_candidates(text))
            if spec.name != "object":
                failed(lambda t: read_answer(spec, t), text, InvalidValue)
    for parser in (json_as(M), structured_as(M), json_as(list[object]), yaml_as(M)):
        for text in texts:
            message = failed(parser.parse, text, ParseError)
            assert "RecursionError" not in message and "recursion depth" not in message, message
    tool = final_tool_call_as(M)
    for text in texts:
        failed(lambda t: tool.parse(Answer("", (ToolCall("1", "M", t),))), text, ParseError)

    for output in (M, list[object]):
        def forward(self, q: Q):
            return self.contract_result
        forward.__annotations__ = {"q": Q, "return": output}
        made = contract(remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0})(
            type("Deep", (Contract,), {"prompt": "x", "forward": forward}))
        for text in texts:
            engine = FunctionEngine(lambda request, t=text: Response((t,), ("stop",),
                                                                     Usage(1, 1, 1), "m"))
            contracted = made(engine=engine)
            try:
                contracted(Q(text="t"))
            except Exception:
                pass
            violation = contracted.contract_outcome.attempts[0].violations[0]
            assert violation.kind is ViolationKind.TYPE, (output, violation)
            assert "recursion" in violation.message.lower() or "not a valid" in \\
                violation.message, violation.message

    class Out(LLMDataModel):
        a: list[object]
        b: int

    @contract(stream=True)
    class Streamed(Contract[Q, Out]):
        prompt = "x"

        def forward(self, q: Q) -> Out:
            return self.contract_result

    for text in texts:
        watch = EarlyStop(plan_for(Streamed.__hoare__), lambda source, value: True)
        for at in range(0, len(text), 64):
            assert watch.feed(text[at:at + 64]) is None  # not judged: the full check's
    print("read")
''')


def test_json_nested_100000_deep_is_a_failed_attempt_never_a_recursion_error() -> None:
    """Every reader of model JSON (json_text, read_answer for models and native types,
    the queries parsers, tool-call arguments, a contract's attempt, early stop) on
    values nested 100,000 deep: a type violation naming the problem. A native output
    raised RecursionError from ``json.loads``; YAML said only "RecursionError"."""
    child = subprocess.run([sys.executable, "-c", DEEP_CHILD, str(DEEP)],
                           capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert child.returncode == 0 and child.stdout.strip() == "read", child.stderr[-3000:]


_OPEN = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CLOSED = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "```", "\n", " ", "\t", "json", "YAML", "a-b",
                                 "{", "é", "\r", "\U0010ffff"]), max_size=40).map("".join))
def test_the_fence_scanner_finds_what_the_regex_found(text: str) -> None:
    """Differential: ``json_text.fences`` against the regexes it replaced (quadratic in
    a run of backticks), unclosed fences allowed (json_text) or not (last_code_block)."""
    for pattern, closed in ((_OPEN, False), (_CLOSED, True)):
        expected = [(m.group(1).lower(), m.group(2), m.start(2))
                    for m in pattern.finditer(text)]
        assert list(fences(text, closed=closed)) == expected, (text, closed)
