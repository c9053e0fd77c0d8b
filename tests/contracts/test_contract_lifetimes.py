"""Contract instances, their lifetimes and copies (issue 30), repeated warnings and
``"delay": 0`` (issue 33).

A thread or task that calls an instance keeps nothing of it once the call returned:
the instance, its input and its output are collectable (a weakref dies after
``gc.collect()``) after success, failure, fallback, exception, a cancelled async call
and calls in threads; a context does not grow by one entry per instance ever called;
the pre-flight keeps a bounded number of z3 translations however many instances come
and go. Memory is judged by object counts (weakrefs, ``gc``), never RSS or time, in a
child process so that a crash fails the test.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import itertools
import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare import Contract, ContractViolationError, LLMDataModel, Post, Pre, contract
from hoare.engines import FunctionEngine

ROOT = Path(__file__).resolve().parents[2]
# the module of the collapsed warnings
logs_module = importlib.import_module("hoare.contracts.logs")


def run_child(script: str, *args: str) -> str:
    """Run ``script`` in a child Python (faulthandler on); its stdout, or fail. From a
    file: the verifier reads the predicates' source."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "child.py"
        path.write_text(textwrap.dedent(script), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(path), *args], capture_output=True, text=True,
            timeout=600, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": LIBRARY, "PYTHONFAULTHANDLER": "1"})
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    return done.stdout


PRELUDE = '''
import asyncio, contextvars, gc, json, sys, threading, weakref
from pydantic import Field
from hoare import Contract, ContractViolationError, LLMDataModel, Post, Pre, contract
from hoare.engines import FunctionEngine

class In(LLMDataModel):
    lo: int = Field(ge=0, le=1000)
    blob: str = ""

class Out(LLMDataModel):
    v: int = Field(ge=0, le=1000)

def answer(request):
    return json.dumps({"v": request.input.lo})

ENGINE = FunctionEngine(answer)

def live(kind):
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)
'''


LIFETIME = PRELUDE + '''
class Boom(Exception):
    pass

def make(policy, post_ok, forward):
    @contract(remedy_retry_params={"tries": 2, "delay": 0}, policy=policy)
    class Pick(Contract):
        prompt = "pick"

        def __init__(self, k, **kw):
            super().__init__(**kw)
            self.k = k

        def post(self, o: Out, i: In) -> bool:
            if not post_ok:
                raise ValueError("no " + i.blob[:5])
            return i.lo <= o.v <= self.k

        def forward(self, i: In) -> Out:
            if forward == "raise":
                raise Boom(i.blob[:5])
            return self.contract_result if self.contract_successful else Out(v=0)
    return Pick

SCENARIOS = {
    "success": (make("observe", True, "plain"), None),
    "fallback": (make("observe", False, "plain"), None),
    "enforce": (make("enforce", False, "plain"), ContractViolationError),
    "quick_enforce": (make("quick_enforce", False, "plain"), ContractViolationError),
    "forward_raises": (make("observe", True, "raise"), Boom),
    "failure_then_raise": (make("observe", False, "raise"), Boom),
}
N = int(sys.argv[1])
report = {}

def sync_call(Pick, expected, n):
    p = Pick(n % 500 + 5, engine=ENGINE)
    ref = weakref.ref(p)
    try:
        p(In(lo=n % 5, blob="x" * 1000))
    except BaseException as error:
        assert expected is not None and isinstance(error, expected), repr(error)
        del error
    else:
        assert expected is None
    return ref

async def async_call(Pick, expected, n):
    p = Pick(n % 500 + 5, engine=ENGINE)
    ref = weakref.ref(p)
    try:
        await p.acall(In(lo=n % 5, blob="x" * 1000))
    except BaseException as error:
        assert expected is not None and isinstance(error, expected), repr(error)
    return ref

async def cancelled_call(Pick, expected, n):
    gate = asyncio.Event()

    class Slow(FunctionEngine):
        async def acomplete(self, request):
            await gate.wait()

    p = Pick(n % 500 + 5, engine=Slow(answer))
    ref = weakref.ref(p)
    task = asyncio.ensure_future(p.acall(In(lo=1, blob="x" * 1000)))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except BaseException as error:  # refused before any engine call (the pre-flight)
        assert expected is not None and isinstance(error, expected), repr(error)
    del task, p
    return ref

for name, (Pick, expected) in SCENARIOS.items():
    refs = [sync_call(Pick, expected, n) for n in range(N)]

    async def many():
        return [await async_call(Pick, expected, n) for n in range(N)]
    refs += asyncio.run(many())

    async def cancelled():
        return [await cancelled_call(Pick, expected, n) for n in range(5)]
    refs += asyncio.run(cancelled())

    thread_refs = []
    def worker(t):
        for n in range(N // 4 + 1):
            thread_refs.append(sync_call(Pick, expected, t * 1000 + n))
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refs += thread_refs
    gc.collect()
    report[name] = {"alive": sum(r() is not None for r in refs), "inputs": live(In),
                    "outputs": live(Out), "calls": len(refs)}
report["context_entries"] = len(contextvars.copy_context())
print(json.dumps(report))
'''


def test_dropped_instances_inputs_and_outputs_are_collected_after_every_kind_of_call(
) -> None:
    """dropped-instances-collected: before the fix a thread's context kept an entry per
    instance ever called, holding its latest outcome (input, output, exception)."""
    report = json.loads(run_child(LIFETIME, "60").strip().splitlines()[-1])
    context_entries = report.pop("context_entries")
    for name, counts in report.items():
        assert counts["calls"] > 100, (name, counts)
        assert counts["alive"] == 0, (name, counts)
        assert counts["inputs"] == 0, (name, counts)
        assert counts["outputs"] == 0, (name, counts)
    # one entry per variable ever in use at once (reused), not one per instance called
    assert context_entries < 50, context_entries


CONTEXT_GROWTH = PRELUDE + '''
@contract(remedy_retry_params={"tries": 1, "delay": 0})
class Pick(Contract):
    prompt = "pick"
    post_conditions = [Post(lambda o, i: o.v >= i.lo, "at least lo")]

    def forward(self, i: In) -> Out:
        return self.contract_result if self.contract_successful else Out(v=0)

sizes = []
for n in range(int(sys.argv[1])):
    p = Pick(engine=ENGINE)
    p(In(lo=n % 7))
    del p
    if n % 50 == 49:
        gc.collect()
        sizes.append(len(contextvars.copy_context()))

async def in_a_task():  # a long-lived task calling many short-lived instances
    for n in range(300):
        q = Pick(engine=ENGINE)
        await q.acall(In(lo=n % 7))
        del q
        if n % 50 == 49:
            gc.collect()
    return len(contextvars.copy_context())
print(json.dumps({"sizes": sizes, "task": asyncio.run(in_a_task()), "inputs": live(In)}))
'''


def test_a_context_does_not_grow_with_every_instance_it_ever_called() -> None:
    """dropped-instances-collected: a long-lived thread or task calling short-lived
    instances (before the fix: one context entry, with its input, per instance)."""
    report = json.loads(run_child(CONTEXT_GROWTH, "600").strip().splitlines()[-1])
    # as many entries as instances were ever alive at once (the garbage collector runs
    # now and then), not one per instance called: it stops growing
    sizes = report["sizes"]
    assert max(sizes) < 60 and max(sizes) == max(sizes[:3]), report
    assert report["task"] <= max(sizes) + 2, report
    assert report["inputs"] == 0, report


PREFLIGHT_BOUNDED = PRELUDE + '''
@contract(remedy_retry_params={"tries": 1, "delay": 0})
class Capped(Contract):
    prompt = "pick under a cap"

    def __init__(self, cap, **kw):
        super().__init__(**kw)
        self.cap = cap

    def post(self, o: Out, i: In) -> bool:
        return o.v <= self.cap

    def forward(self, i: In) -> Out:
        return self.contract_result if self.contract_successful else Out(v=0)

refs = []
for n in range(int(sys.argv[1])):
    c = Capped(n + 10, engine=ENGINE)
    assert c(In(lo=3)).v == 3
    assert c.contract_outcome.preflight.verdict.value == "satisfiable"
    refs.append(weakref.ref(c))
    del c
checker = Capped.__hoare_runtime__.preflight_checker()
gc.collect()
print(json.dumps({"prepared": len(checker._prepared), "alive": sum(r() is not None
                                                                   for r in refs)}))
'''


def test_the_preflight_keeps_a_bounded_number_of_translations_per_class() -> None:
    """Before the fix every distinct ``self.cap`` left a prepared z3 translation behind."""
    report = json.loads(run_child(PREFLIGHT_BOUNDED, "150").strip().splitlines()[-1])
    assert report["alive"] == 0, report
    assert 1 <= report["prepared"] <= 64, report


QUERIES_AND_AGENTS = '''
import dataclasses, gc, json, weakref
from hoare.queries import Query
from hoare.engines import FunctionEngine
from hoare.agents import ContractAgent, tool

@dataclasses.dataclass
class Add(Query[int]):
    a: int
    b: int
    prompt = "add {{a}} and {{b}}"

def answer(request):
    return json.dumps(3)

refs = []
for n in range(40):
    q = Add(1, 2)
    refs.append(weakref.ref(q))
    try:
        q.run(FunctionEngine(answer))
    except Exception as error:
        print("query error", type(error).__name__, error)
    del q

@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()

for n in range(20):
    script = iter([{"tool": "shout", "args": {"text": "hi"}}, {"answer": "HI"}])
    agent = ContractAgent(FunctionEngine(lambda r: json.dumps(next(script))),
                          agent_type="constrained", tools=[shout])
    refs.append(weakref.ref(agent))
    result = agent.run("shout hi")
    assert result.success, result
    del agent, result
gc.collect()
print(json.dumps({"alive": sum(r() is not None for r in refs), "made": len(refs)}))
'''


def test_queries_and_agents_are_collected_after_their_runs() -> None:
    report = json.loads(run_child(QUERIES_AND_AGENTS).strip().splitlines()[-1])
    assert report == {"alive": 0, "made": 60}, report


# -- copies ------------------------------------------------------------------------------

class Item(LLMDataModel):
    n: int


class Value(LLMDataModel):
    v: int


def engine_answering(value: int) -> FunctionEngine:
    return FunctionEngine(lambda request: json.dumps({"v": value}))


@contract(remedy_retry_params={"tries": 1, "delay": 0})
class AtMost(Contract):
    """A predicate reading ``self.limit``: a copy's must read the copy's."""

    prompt = "a value at most the limit"

    def __init__(self, limit: int, fallback: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.limit = limit
        self.fallback = fallback
        self.notes: list[str] = []

    def post(self, out: Value) -> bool:
        return out.v <= self.limit

    def forward(self, item: Item) -> Value:
        if self.contract_successful:
            return self.contract_result
        if self.fallback < 0:
            raise LookupError("no fallback")
        return Value(v=self.fallback)


def call(instance: AtMost, how: str) -> tuple[object, bool, object]:
    """One call of ``instance``, sync or async: what it returned (or raised), and its
    ``contract_successful`` and ``contract_outcome`` as the calling thread or task sees
    them (an ``asyncio.run`` task's own latest call is not the caller's)."""
    if how == "sync":
        try:
            returned: object = instance(Item(n=1))
        except LookupError as error:
            returned = error
        return returned, instance.contract_successful, instance.contract_outcome

    async def in_a_task() -> tuple[object, bool, object]:
        try:
            returned: object = await instance.acall(Item(n=1))
        except LookupError as error:
            returned = error
        return returned, instance.contract_successful, instance.contract_outcome
    return asyncio.run(in_a_task())


def pickled(instance: AtMost) -> AtMost:
    """A pickle round trip (the engine, a local function here, is not pickled)."""
    engine = instance.__dict__["_hoare_engine_value"]
    instance.__dict__["_hoare_engine_value"] = None
    try:
        clone: AtMost = pickle.loads(pickle.dumps(instance))
    finally:
        instance.__dict__["_hoare_engine_value"] = engine
    clone.__dict__["_hoare_engine_value"] = engine
    return clone


COPIES = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickled}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(st.tuples(st.sampled_from(["sync", "async"]), st.integers(0, 20)),
                       max_size=3),
       how=st.sampled_from(sorted(COPIES)), limit=st.integers(0, 20),
       answer=st.integers(0, 20), mode=st.sampled_from(["sync", "async"]),
       fallback=st.sampled_from([-1, 7]))
def test_a_copy_is_a_fresh_instance_with_its_own_state_and_predicates(
        before: list[tuple[str, int]], how: str, limit: int, answer: int, mode: str,
        fallback: int) -> None:
    """copies-own-call-state: before the fix deepcopy failed after a call, and copy.copy
    shared the original's bound predicates (reading the original's ``self.limit``)
    and its latest outcome."""
    original = AtMost(limit=10, fallback=fallback, engine=engine_answering(answer))
    for kind, value in before:  # successes, fallbacks and failures
        original.__dict__["_hoare_engine_value"] = engine_answering(value)
        call(original, kind)
    original_outcome = original.contract_outcome
    original_stats = original.contract_perf_stats()["contract_execution"]["count"]

    clone = COPIES[how](original)
    assert type(clone) is AtMost and clone is not original
    assert clone.contract_outcome is None  # its own latest call: none yet
    assert clone.contract_perf_stats()["contract_execution"]["count"] == 0
    if how != "copy":
        assert clone.notes is not original.notes
    clone.limit = limit
    clone.__dict__["_hoare_engine_value"] = engine_answering(answer)
    returned, successful, outcome = call(clone, mode)
    passes = answer <= limit  # the copy's own limit decides, not the original's 10
    assert successful is passes and outcome is not None
    if passes:
        assert returned == Value(v=answer)
    elif fallback >= 0:
        assert returned == Value(v=fallback)
    else:
        assert isinstance(returned, LookupError)
    # the original is untouched: its latest call, its statistics, its limit
    assert original.contract_outcome is original_outcome
    assert original.contract_perf_stats()["contract_execution"]["count"] == original_stats
    assert original.limit == 10
    if before:  # the original's predicates still read its own limit
        original.__dict__["_hoare_engine_value"] = engine_answering(answer)
        assert call(original, "sync")[1] is (answer <= 10)


def test_a_deep_copy_shares_the_engine_and_copies_user_state() -> None:
    engine = engine_answering(3)
    original = AtMost(limit=5, engine=engine)
    original(Item(n=1))
    clone = copy.deepcopy(original)
    assert clone._hoare_engine() is engine
    clone.notes.append("mine")
    assert original.notes == []
    assert clone(Item(n=1)) == Value(v=3) and clone.contract_successful
    assert original.contract_outcome is not clone.contract_outcome


# -- repeated warnings -------------------------------------------------------------------

@contract(post_remedy=False)
class AlwaysFails(Contract):
    prompt = "p"
    post_conditions = [Post(lambda o: o.v > 100, "v must exceed 100")]

    def forward(self, item: Item) -> Value:
        return Value(v=0)


def failure_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and r.name == "hoare"]


def test_repeated_failure_warnings_are_collapsed_and_every_failure_is_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    """Before the fix, 300 failed calls logged 300 warnings."""
    before = AlwaysFails.contract_stats()["calls"]
    instance = AlwaysFails(engine=engine_answering(0))
    with caplog.at_level(logging.WARNING, logger="hoare"):
        for _ in range(300):
            assert instance(Item(n=1)) == Value(v=0)
    shown = failure_warnings(caplog)
    assert len(shown) == 1, shown
    assert "v must exceed 100" in shown[0] and "AlwaysFails" in shown[0]
    assert AlwaysFails.contract_stats()["calls"] - before == 300


def test_a_failure_of_another_kind_is_shown() -> None:
    log = logging.getLogger("hoare.test.kinds")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())
    log.addHandler(Keep())
    log.propagate = False
    quiet = logs_module.RepeatedWarnings(window=60.0, clock=lambda: 0.0)
    for _ in range(5):
        quiet.warn(log, "C", "post:a", "first %s", "kind")
        quiet.warn(log, "C", "post:b", "second %s", "kind")
        quiet.warn(log, "D", "post:a", "other %s", "contract")
    assert records == ["first kind", "second kind", "other contract"]


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.floats(0, 200, allow_nan=False), min_size=1, max_size=60),
       window=st.floats(1, 120, allow_nan=False))
def test_collapsed_warnings_lose_no_count_over_any_timing(gaps: list[float],
                                                          window: float) -> None:
    """Whatever the timing: the first one is shown, none is shown less than a window
    after the previous shown one, and shown + summed-up held back == every warning."""
    now = [0.0]
    log = logging.getLogger(f"hoare.test.timing.{id(gaps)}")
    shown: list[tuple[float, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            shown.append((now[0], record.getMessage()))
    handler = Keep()
    log.addHandler(handler)
    log.propagate = False
    try:
        quiet = logs_module.RepeatedWarnings(window=window, clock=lambda: now[0])
        for gap in gaps:
            now[0] += gap
            quiet.warn(log, "C", "kind", "failed")
        quiet.flush(log)
    finally:
        log.removeHandler(handler)
    failures = [t for t, text in shown if text == "failed"]
    summaries = [text for _, text in shown if text != "failed"]
    assert failures and failures[0] == gaps[0]
    assert all(b - a >= window for a, b in itertools.pairwise(failures))
    held = sum(int(text.split("and ")[1].split(" more")[0]) for text in summaries)
    assert len(failures) + held == len(gaps), shown


def test_collapsing_is_thread_safe_and_counts_every_warning() -> None:
    log = logging.getLogger("hoare.test.threads")
    shown: list[str] = []
    lock = threading.Lock()

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            with lock:
                shown.append(record.getMessage())
    log.addHandler(Keep())
    log.propagate = False
    quiet = logs_module.RepeatedWarnings(window=3600.0)
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(500):
            quiet.warn(log, "C", "kind", "failed")
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    quiet.flush(log)
    assert shown[0] == "failed" and shown.count("failed") == 1
    assert "and 3999 more like it" in shown[1], shown


def test_held_back_warnings_are_summed_up_at_exit() -> None:
    out = run_child('''
        import json, logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
        from pydantic import BaseModel
        from hoare import Contract, Post, contract
        from hoare.engines import FunctionEngine

        class I(BaseModel):
            n: int

        class O(BaseModel):
            v: int

        @contract(post_remedy=False)
        class Fails(Contract):
            prompt = "p"
            post_conditions = [Post(lambda o: o.v > 100, "v must exceed 100")]

            def forward(self, i: I) -> O:
                return O(v=0)

        f = Fails(engine=FunctionEngine(lambda r: json.dumps({"v": 1})))
        for n in range(40):
            f(I(n=n))
        print("calls", Fails.contract_stats()["calls"])
    ''')
    assert out.count("contract failed (observe) in") == 1, out
    assert "calls 40" in out
    assert "and 39 more like it in the last minute" in out, out


# -- "delay": 0 means no wait ----------------------------------------------------------

def test_no_delay_params_give_no_jitter_and_explicit_ones_are_kept() -> None:
    from hoare.contracts.decorator import _no_wait_means_no_jitter as no_wait

    for delay in (0, 0.0, -0.0):
        assert no_wait({"delay": delay, "tries": 2}) == {"delay": delay, "tries": 2,
                                                          "jitter": 0.0}
    class Seconds(float):  # a float subclass (numpy's float64 is one)
        pass
    assert no_wait({"delay": Seconds(0)})["jitter"] == 0.0
    assert no_wait({"delay": 0, "jitter": 0.3}) == {"delay": 0, "jitter": 0.3}
    assert no_wait({"delay": 0.5}) == {"delay": 0.5}
    assert no_wait({}) == {}
    with pytest.raises(ValueError, match="delay must be a number"):
        contract(remedy_retry_params={"delay": False})  # a bool is not a zero delay


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tries=st.integers(2, 4), delay=st.sampled_from([0, 0.0, -0.0]),
       mode=st.sampled_from(["sync", "async"]), pre=st.booleans())
def test_a_remedy_with_delay_zero_never_sleeps(monkeypatch: pytest.MonkeyPatch, tries: int,
                                               delay: float, mode: str, pre: bool) -> None:
    """Before the fix the default jitter slept up to 0.1 s per remedy with delay 0."""
    slept: list[float] = []
    real_async_sleep = asyncio.sleep

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def fake_async_sleep(seconds: float, result: object = None) -> object:
        slept.append(seconds)
        return await real_async_sleep(0, result)
    monkeypatch.setattr(time, "sleep", fake_sleep)
    monkeypatch.setattr(asyncio, "sleep", fake_async_sleep)

    @contract(remedy_retry_params={"tries": tries, "delay": delay}, pre_remedy=pre)
    class Retries(Contract):
        prompt = "p"
        pre_conditions = [Pre(lambda i: i.n > 0, "n must be positive")] if pre else []
        post_conditions = [Post(lambda o: o.v > 100, "v must exceed 100")]

        def forward(self, item: Item) -> Value:
            return Value(v=0)

    answers = iter(['{"n": 5}'] * 10 if pre else [])
    engine = FunctionEngine(lambda r: next(answers) if r.task == "repair_input"
                            else json.dumps({"v": 1}))
    instance = Retries(engine=engine)
    item = Item(n=0 if pre else 1)
    if mode == "sync":
        instance(item)
        outcome = instance.contract_outcome
    else:
        async def in_a_task() -> object:
            await instance.acall(item)
            return instance.contract_outcome
        outcome = asyncio.run(in_a_task())
    assert outcome is not None and outcome.generation_attempts == tries
    assert all(seconds <= 0 for seconds in slept), slept
    assert sum(outcome.delays) == 0


def test_a_query_with_remedies_never_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from hoare.queries import Query

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda seconds: slept.append(seconds))
    real_async_sleep = asyncio.sleep

    async def fake_async_sleep(seconds: float, result: object = None) -> object:
        slept.append(seconds)
        return await real_async_sleep(0, result)
    monkeypatch.setattr(asyncio, "sleep", fake_async_sleep)

    @dataclasses.dataclass
    class Big(Query[int]):
        n: int
        prompt = "a number above {{n}}"
        post_conditions = [Post(lambda answer, q: answer > q.n, "above n")]

    engine = FunctionEngine(lambda request: "1")
    for run in (lambda: Big(5).run(engine), lambda: asyncio.run(Big(5).arun(engine))):
        with pytest.raises(ContractViolationError):
            run()
    assert all(seconds <= 0 for seconds in slept), slept


def test_a_reused_context_variable_never_shows_a_dead_instances_call() -> None:
    """The variables of collected instances are reused: a new instance must not see the
    latest call of the dead one whose variable it got, in any context that called it,
    and a live instance keeps its own latest call through the churn."""
    import gc

    kept = AtMost(limit=10, engine=engine_answering(4))
    assert kept(Item(n=1)) == Value(v=4)
    kept_outcome = kept.contract_outcome
    for round_ in range(30):
        dead = AtMost(limit=10, fallback=0, engine=engine_answering(round_ % 20))
        dead(Item(n=1))
        assert dead.contract_outcome is not None
        del dead
        gc.collect()
        fresh = AtMost(limit=10, engine=engine_answering(3))
        assert fresh.contract_outcome is None and not fresh.contract_successful
        assert fresh.contract_result is None
        assert fresh.contract_perf_stats()["contract_outcome"] == {}
        del fresh
    assert kept.contract_outcome is kept_outcome and kept.contract_result == Value(v=4)


def test_an_agent_tool_violating_again_and_again_logs_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """The agents' default handler had the same flood: a warning per violation."""
    from hoare.agents import ContractPolicy, pre

    @pre(lambda args: args["n"] > 0, "n must be positive", policy=ContractPolicy.OBSERVE)
    def looped_tool(n: int) -> int:
        return n

    @pre(lambda args: args["n"] < 100, "n must be small", policy=ContractPolicy.OBSERVE)
    def other_tool(n: int) -> int:
        return n

    with caplog.at_level(logging.WARNING, logger="hoare.agents"):
        for n in range(50):
            assert looped_tool(-n) == -n
            assert other_tool(100 + n) == 100 + n
    shown = [r.getMessage() for r in caplog.records if r.name == "hoare.agents"]
    assert shown == ["Contract violation [pre] at looped_tool: n must be positive",
                     "Contract violation [pre] at other_tool: n must be small"], shown


RECYCLING_UNDER_THREADS = PRELUDE + '''
import random

@contract(remedy_retry_params={"tries": 1, "delay": 0}, preflight=False)
class Echo(Contract):
    prompt = "echo lo"

    def forward(self, i: In) -> Out:
        return self.contract_result if self.contract_successful else Out(v=999)

shared = Echo(engine=ENGINE)
THREADS, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
errors = []
barrier = threading.Barrier(THREADS)

def worker(t):
    rng = random.Random(t)
    barrier.wait()
    try:
        kept = []
        for k in range(ROUNDS):
            x = In(lo=rng.randrange(0, 900))
            mine = Echo(engine=ENGINE)
            assert mine.contract_outcome is None, "a fresh instance saw a call"
            assert mine(x).v == x.lo and mine.contract_outcome.input_used == x
            assert shared(x).v == x.lo and shared.contract_outcome.input_used == x
            if k % 7 == 0:
                kept.append((mine, x))  # some live on while others are recycled
            del mine
            if k % 25 == 0:
                gc.collect()
            for old, seen in kept[-3:]:
                assert old.contract_outcome.input_used == seen, "a recycled variable"
    except BaseException as error:
        errors.append(repr(error))

threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"errors": errors[:3], "count": len(errors)}))
'''


def test_recycled_context_variables_under_threads_keep_every_call_apart() -> None:
    """Many threads making, calling and dropping instances while the collector recycles
    their variables, with a shared instance and some long-lived ones: each sees its own
    latest call, a fresh instance none."""
    report = json.loads(run_child(RECYCLING_UNDER_THREADS, "8", "150").strip()
                        .splitlines()[-1])
    assert report == {"errors": [], "count": 0}, report


CLASSES = PRELUDE + '''
import dataclasses
from hoare.queries import Query

def contract_class(n):
    @contract(remedy_retry_params={"tries": 1, "delay": 0})
    class Pick(Contract):
        prompt = "pick"

        def post(self, o: Out, i: In) -> bool:
            return o.v >= i.lo

        def forward(self, i: In) -> Out:
            return self.contract_result if self.contract_successful else Out(v=0)
    assert Pick(engine=ENGINE)(In(lo=n % 5)).v == n % 5
    return weakref.ref(Pick)

def query_class(n):
    @dataclasses.dataclass
    class Above(Query[int]):
        n: int
        prompt = "a number above {{n}}"
        post_conditions = [Post(lambda answer, q: answer > q.n, "above n")]

    assert Above(n).run(FunctionEngine(lambda request: str(n + 1))) == n + 1
    return weakref.ref(Above)

refs = [contract_class(n) for n in range(15)] + [query_class(n) for n in range(15)]
gc.collect()
print(json.dumps({"alive": sum(r() is not None for r in refs), "made": len(refs)}))
'''


def test_contract_and_query_classes_made_in_a_function_are_collected() -> None:
    """Before the fix the pre-flight's registry (weakly keyed by the description) held
    each checker strongly, and the checker its description: every contract or query
    class ever checked stayed alive, with its z3 translations."""
    report = json.loads(run_child(CLASSES).strip().splitlines()[-1])
    assert report == {"alive": 0, "made": 30}, report
