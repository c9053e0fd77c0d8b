"""An option no request can carry (a ``nan``, infinite, boolean or text temperature,
a ``max_tokens`` that is not a whole number >= 1, from the call or from the query's
``Mode``) is the caller's error when the policy starts, before any request; it is
never spent as a failed engine call.

Failing before: the request was built, and refused, on every attempt, and a stream
with no ``max_requests`` (``few_shot``'s default) retried forever, sleeping between
attempts, without sending a request. The checks run in a child process with a time
limit, so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

CHILD = textwrap.dedent('''
    import asyncio, json, math, sys
    from dataclasses import dataclass
    from hoare.engines.base import Response
    from hoare.engines.function import FunctionEngine
    from hoare.queries import Mode, Query, afew_shot, few_shot, get_text
    from hoare.errors import UsageError

    calls = []
    def answer(request):
        calls.append(1)
        return Response(texts=("ok",))

    @dataclass
    class Ask(Query[str]):
        """Ask."""
        n: int
        __parser__ = get_text

    verdicts = []
    for where, value in json.loads(sys.argv[1]):
        value = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(value, value) \\
            if isinstance(value, str) and where != "text" else value
        key = "max_tokens" if where == "max_tokens" else "temperature"
        calls.clear()
        def first(stream):
            return next(iter(stream)).value
        async def afirst():
            async for solution in afew_shot(Ask(1), FunctionEngine(answer), **{key: value}):
                return solution.value
        for run in (lambda: first(few_shot(Ask(1), FunctionEngine(answer), **{key: value})),
                    lambda: Ask(1).run(FunctionEngine(answer), **{key: value}),
                    lambda: asyncio.run(afirst())):
            try:
                verdicts.append(["answered", run(), len(calls)])
            except UsageError:
                verdicts.append(["refused", None, len(calls)])
    @dataclass
    class AskHot(Query[str]):
        """Ask, in a mode whose temperature no request can carry."""
        n: int
        __modes__ = {None: Mode(get_text, temperature=math.nan)}

    calls.clear()
    for run in (lambda: next(iter(few_shot(AskHot(1), FunctionEngine(answer)))).value,
                lambda: AskHot(1).run(FunctionEngine(answer))):
        try:
            verdicts.append(["answered", run(), len(calls)])
        except UsageError:
            verdicts.append(["refused", None, len(calls)])
    print(json.dumps(verdicts))
''')

bad = st.one_of(st.sampled_from([["temperature", "nan"], ["temperature", "inf"],
                                 ["temperature", "-inf"], ["temperature", True],
                                 ["text", "0.5"], ["max_tokens", 0], ["max_tokens", -3],
                                 ["max_tokens", 1.5], ["max_tokens", True]]))


@settings(max_examples=6, deadline=None)
@given(st.lists(bad, min_size=1, max_size=3))
def test_an_option_no_request_can_carry_is_refused_before_any_request(
        cases: list[list[object]]) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases)],
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a policy with {cases} never ended (retried without a request)")
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    assert verdicts and all(v == ["refused", None, 0] for v in verdicts), verdicts


def test_valid_options_still_answer() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(
        [["temperature", 0.7], ["max_tokens", 5]])], capture_output=True, text=True,
        timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    assert all(v[0] == "answered" and v[1] == "ok" for v in verdicts[:-2])
    assert verdicts[-2:] == [["refused", None, 0]] * 2  # the mode's own temperature
