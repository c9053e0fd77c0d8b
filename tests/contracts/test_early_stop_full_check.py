"""Early stop agrees with the full check on any streamed text (issue 30).

The full check reads an answer as ``hoare.declaration.models.read_answer`` does (the first
JSON value
that validates; an answer that opens with an object is that object alone), then calls
the post-conditions. A stop must never reject an answer it accepts, whatever the text:
several values, a value after junk or a fence, cut-off objects, and any chunking. And
under ``policy="ignore"`` no post-condition is evaluated early.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY
from openai_server import OpenAIServer, stream

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.contracts.early_stop import EarlyStop, plan_for
from hoare.contracts.json_text import json_candidates
from hoare.contracts.runtime import runtime_of  # the contract's own output check
from hoare.declaration.models import type_spec
from hoare.engines import Response
from hoare.errors import InvalidValue


class Q(LLMDataModel):
    text: str


class A(LLMDataModel):
    label: str
    score: int = Field(ge=0, le=10)
    notes: str


@contract(stream=True, remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Label(Contract[Q, A]):
    prompt = "Label it."
    post_conditions = [
        Post(lambda a: a.label in ("good", "bad"), "label is good or bad"),
        Post(lambda a, q: a.score <= len(q.text) + 5, "score at most len(text) + 5"),
        Post(lambda a: len(a.notes) < 8, "short notes"),
    ]

    def forward(self, q: Q) -> A:
        return self.contract_result


PLAN = plan_for(Label.__hoare__)
SPEC = type_spec(A)
RUNTIME = runtime_of(Label)


def _passes(source: Any, value: object, used: Q) -> bool:
    try:
        verdict = source.fn(value, used) if source.takes_input else source.fn(value)
    except Exception:
        return False
    return verdict is None or bool(verdict)


def _full_check(text: str, used: Q) -> bool:
    """What the contract decides on the whole answer: its runtime's own output check
    (for a streaming contract, an object repeating a top-level key is malformed), then
    the post-conditions."""
    try:
        value = RUNTIME.check_output(Response(texts=(text,)), used)
    except InvalidValue:
        return False
    return all(_passes(source, value, used) for source in Label.__hoare__.post)


objects = st.fixed_dictionaries(
    {"label": st.sampled_from(["good", "bad", "meh", ""]),
     "score": st.one_of(st.integers(-3, 14), st.sampled_from([1.0, 2.5, "3", None])),
     "notes": st.text(max_size=10)},
    optional={"extra": st.integers()}).flatmap(
    lambda d: st.permutations(list(d)).map(lambda order: {k: d[k] for k in order}))
dumped = st.builds(lambda d, compact: json.dumps(d, separators=(",", ":") if compact
                                                  else (", ", ": ")), objects, st.booleans())
values = st.one_of(st.sampled_from(["good", "bad", "meh", "", 3, 12, None]), st.text(max_size=9))
repeating = st.lists(st.tuples(st.sampled_from(["label", "score", "notes", "extra"]), values),
                     min_size=1, max_size=6).map(  # an object that may give a key twice
    lambda items: "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in items) + "}")
shadowed = st.builds(  # an object whose first member is repeated later with another value
    lambda d, key, first: "{" + ", ".join(
        [f"{json.dumps(key)}: {json.dumps(first)}",
         *(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in d.items())]) + "}",
    objects, st.sampled_from(["label", "score", "notes"]), values)
pieces = st.one_of(
    dumped,
    repeating,
    shadowed,
    dumped.flatmap(lambda t: st.integers(1, len(t) - 1).map(lambda cut: t[:cut])),  # cut off
    dumped.map(lambda t: t[:-1] + ", }"),  # malformed: a trailing comma
    st.text(alphabet=' \n\t`{}[]":,xyz0', max_size=6),  # junk
    st.sampled_from(["```json\n", "```\n", "\n```", "Sure: ", "{x} ", "[1] ", '{"a": 1} ']),
)


@settings(max_examples=600, deadline=None)
@given(parts=st.lists(pieces, min_size=1, max_size=4), text=st.text(max_size=6),
       cuts=st.lists(st.integers(1, 12), min_size=1, max_size=8), prefixes=st.booleans())
def test_a_stop_never_rejects_what_the_full_check_accepts(
        parts: list[str], text: str, cuts: list[int], prefixes: bool) -> None:
    """early-stop-sound, over concatenations of values, cut-off and malformed objects,
    junk and fences, streamed in any chunking (pieces fed one by one, or the text so far
    as the ``Request.watch`` protocol gives it)."""
    answer = "".join(parts)
    used = Q(text=text)
    assert PLAN is not None
    watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, used))
    at, reason, turn = 0, None, 0
    while at < len(answer) and reason is None:
        end = min(len(answer), at + cuts[turn % len(cuts)])
        reason = watch(answer[:end]) if prefixes else watch.feed(answer[at:end])
        at, turn = end, turn + 1
    if reason is not None:
        assert not _full_check(answer, used), (answer, reason)


def test_a_second_value_after_an_invalid_first_one_is_not_the_answer() -> None:
    """The regression: the stream was stopped on the first object's label, yet the full
    check took the valid second object. An answer that opens with an object is that
    object alone, so both now reject it."""
    first = '{"label": "good", "score": 99, "notes": ""}'
    answer = first + ' {"label": "good", "score": 3, "notes": ""}'
    assert [c for c in json_candidates(answer) if c != answer] == [first]
    assert not _full_check(answer, Q(text="t"))
    # an answer that opens with prose still has every value as a candidate
    assert _full_check("Example: " + answer, Q(text="t"))
    watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, Q(text="t")))  # type: ignore[arg-type]
    assert "score" in (watch.feed(answer) or "")  # stopped, and rightly
    watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, Q(text="t")))  # type: ignore[arg-type]
    assert watch.feed("Example: " + answer) is None  # not judged: it opens with prose


@contract(stream=True, policy="ignore", remedy_retry_params={"tries": 1, "delay": 0,
                                                               "jitter": 0})
class Ignored(Contract[Q, A]):
    prompt = "Label it."
    post_conditions = [Post(lambda a: a.label in ("good", "bad"), "label is good or bad")]

    def forward(self, q: Q) -> A:
        return self.contract_result


def test_under_policy_ignore_no_post_condition_is_evaluated_early() -> None:
    """early-stop-sound: under ``policy="ignore"`` the full check evaluates no
    post-condition, so early stop evaluates none either (it did, and stopped)."""
    called: list[str] = []
    plan = plan_for(Ignored.__hoare__)
    assert plan is not None and plan.checks == ()
    watch = EarlyStop(plan, lambda source, value: called.append(source.message) or False)
    assert watch.feed('{"label": "meh", "score": 3, "notes": "x"}') is None
    assert called == []
    pieces = ['{"label": "meh"', ', "score": 3', ', "notes": "', *["n"] * 5, '"}']
    with OpenAIServer([stream(*pieces)]) as server:
        contracted = Ignored(engine=server.engine())
        result = contracted(Q(text="t"))
        assert server.streams_written()[0] == len(pieces)  # read to its end
    assert result.label == "meh" and contracted.contract_outcome.usage.get(
        "stopped_early", 0) == 0


def test_a_field_that_fails_alone_is_still_stopped_when_the_object_comes_first() -> None:
    """The stop still happens where it is sound (a leading object)."""
    watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, Q(text="t")))  # type: ignore[arg-type]
    reasons = [watch.feed(piece) for piece in ['  {"score"', ": 99", ', "label": "good"']]
    assert reasons[0] is None and reasons[2] is not None and "score" in reasons[2]


THREADS_CHILD = textwrap.dedent('''
    import json, random, sys
    from concurrent.futures import ThreadPoolExecutor
    sys.path[:0] = sys.argv[1:]  # the test's folder, then tests/ (its support modules)
    from test_early_stop_full_check import PLAN, Q, _passes
    from hoare.contracts.early_stop import EarlyStop

    rng = random.Random(7)
    texts = [json.dumps({"label": rng.choice(["good", "bad", "meh"]),
                         "score": rng.randint(-2, 14), "notes": "n" * rng.randint(0, 12)})
             for _ in range(400)]
    used = Q(text="t")

    def decide(text):
        watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, used))
        for at in range(0, len(text), 3):
            reason = watch.feed(text[at:at + 3])
            if reason:
                return reason
        return None

    alone = [decide(t) for t in texts]
    with ThreadPoolExecutor(16) as pool:
        for _ in range(5):
            assert list(pool.map(decide, texts)) == alone
    print("same")
''')


def test_one_plan_shared_by_many_threads_decides_as_alone() -> None:
    """A contract's plan (its one-field models) is shared by every stream of the class:
    16 threads streaming at once decide exactly as one stream at a time (in a child, so
    a crash fails the test)."""
    here = Path(__file__)
    child = subprocess.run([sys.executable, "-c", THREADS_CHILD, str(here.parent),
                            str(here.parents[1])],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert child.returncode == 0 and child.stdout.strip() == "same", child.stderr[-3000:]


def test_a_repeated_key_cannot_turn_a_stopped_answer_into_an_accepted_one() -> None:
    """The first ``label`` fails and the stream is stopped on it; the full check, which
    would keep the last ``label``, rejects an object that gives a key twice."""
    answer = '{"label": "meh", "score": 1, "notes": "n", "label": "good"}'
    watch = EarlyStop(PLAN, lambda source, value: _passes(source, value, Q(text="t")))
    assert watch.feed(answer) is not None
    assert not _full_check(answer, Q(text="t"))
    assert _full_check('{"label": "good", "score": 1, "notes": "n"}', Q(text="t"))
