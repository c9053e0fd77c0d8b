"""The agent path holds the guards the contract path holds (issue 28 item 3): foreign
objects whose dunders raise, ``async def`` tools and conditions, text nested past any
recursion limit, violation handlers that raise, interrupts, and per-tool statistics that
agree with the stats store, one call at a time or many threads sharing one agent."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY
from pydantic import AfterValidator

from hoare.agents import (
    ContractAgent,
    ContractContext,
    ContractPolicy,
    ContractTermination,
    ContractViolation,
    EventType,
    contract_assert,
    post,
    pre,
    tool,
)
from hoare.agents.actions import MAX_NESTING
from hoare.engines import FunctionEngine, Response, ToolCall
from hoare.engines.testing import DummyEngine, ScriptedEngine
from hoare.errors import ContractDefinitionError

DUNDERS = ("__str__", "__repr__", "__format__", "__bool__", "__eq__", "__hash__")


class Boom(Exception):
    """What a hostile dunder raises."""


def hostile(names: tuple[str, ...] | frozenset[str], base: type = object) -> type:
    """A class whose ``names`` dunders raise ``Boom``."""

    def raising(self: object, *args: object) -> object:
        raise Boom("hostile dunder")

    return type("Hostile", (base,), {name: raising for name in names})


def constrained(engine: Any, **options: Any) -> ContractAgent:
    return ContractAgent(engine, agent_type="constrained", **options)


def errors_of(result: Any) -> list[str]:
    return [e.content for e in result.events if e.type is EventType.ERROR]


# -- foreign objects whose dunders raise --------------------------------------------------
dunder_sets = st.frozensets(st.sampled_from(DUNDERS), min_size=1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dunder_sets)
def test_a_hostile_tool_result_is_an_observation_not_an_escape(names: frozenset[str]) -> None:
    cls = hostile(names)

    @tool
    def fetch() -> Any:
        """Fetch something."""
        return cls()

    agent = constrained(ScriptedEngine({"tool": "fetch", "args": {}}, {"answer": "done"}),
                        tools=[fetch])
    result = agent.run("fetch")
    assert result.success and result.answer == "done"
    (observation,) = [e for e in result.events if e.type is EventType.OBSERVATION]
    assert isinstance(observation.content, str)
    if "__str__" in names:
        assert "Hostile result" in observation.content and "str() raised Boom" in \
            observation.content
    assert agent.tool_stats()["fetch"]["calls"] == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dunder_sets)
def test_a_tool_exception_whose_dunders_raise_is_a_failed_call(names: frozenset[str]
                                                               ) -> None:
    error_type = hostile(names, Exception)

    @tool
    def fetch() -> str:
        """Fetch something."""
        raise error_type("no")

    agent = constrained(ScriptedEngine({"tool": "fetch", "args": {}}, {"answer": "done"}),
                        tools=[fetch])
    result = agent.run("fetch")
    assert result.success and result.answer == "done"
    (problem,) = errors_of(result)
    assert problem.startswith("fetch raised Hostile")
    stats = agent.tool_stats()["fetch"]
    assert (stats["calls"], stats["p_succ"]) == (1, 0.0)  # a raising tool failed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dunder_sets, st.sampled_from(["task_precondition", "answer_postcondition",
                                     "iteration_invariant"]))
def test_a_predicate_result_whose_dunders_raise_is_a_failed_check(
        names: frozenset[str], where: str) -> None:
    cls = hostile(names)
    agent = constrained(ScriptedEngine({"answer": "done"}), policy=ContractPolicy.ENFORCE,
                        **{where: lambda value: cls()})
    result = agent.run("task")
    if "__bool__" in names:  # bool() raised: the check does not hold
        assert not result.success and "contract termination" in (result.error or "")
    else:
        assert result.success


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dunder_sets)
def test_a_hostile_task_is_a_failed_run_naming_it(names: frozenset[str]) -> None:
    cls = hostile(names, str)
    engine = DummyEngine('{"answer": "a"}')
    agent = constrained(engine, task_precondition=lambda t: True)
    result = agent.run(cls("a task"))
    if "__str__" in names:
        assert not result.success and "the task is not text" in (result.error or "")
        assert engine.requests == []  # nothing was sent
    else:
        assert result.success
        assert "Task: a task" in engine.requests[0].messages[-1].content


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dunder_sets)
def test_a_validated_answer_whose_dunders_raise_never_escapes(names: frozenset[str]
                                                             ) -> None:
    cls = hostile(names)
    answer_type = Annotated[str, AfterValidator(lambda text: cls())]
    agent = ContractAgent(ScriptedEngine(Response(texts=('"x"',))), answer_type=answer_type,
                          answer_postcondition=lambda value: value is not None)
    result = agent.run("task")
    assert result.success and isinstance(result.answer, cls)
    assert isinstance(result.events[-1].content, str)


@pytest.mark.parametrize("field", ["name", "arguments"])
def test_a_tool_call_with_non_text_fields_is_a_failed_call(field: str) -> None:
    @tool
    def fetch(n: int = 0) -> int:
        """Fetch."""
        return n

    odd = hostile(DUNDERS)()
    call = ToolCall("c1", odd if field == "name" else "fetch",  # type: ignore[arg-type]
                    odd if field == "arguments" else "{}")  # type: ignore[arg-type]
    result = ContractAgent(ScriptedEngine(Response(texts=("",), tool_calls=(call,)),
                                          Response(texts=("done",))), tools=[fetch]).run("t")
    assert result.success and result.answer == "done"
    assert "must be" in errors_of(result)[0] and "Hostile" in errors_of(result)[0]


# -- async tools and async conditions ------------------------------------------------------
@contextlib.contextmanager
def never_left_unawaited() -> Iterator[None]:
    """Fail when a coroutine made inside is collected unclosed ("never awaited")."""
    gc.collect()  # what earlier tests left is not this block's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []


async def _async_fetch(n: int) -> int:
    """Fetch asynchronously."""
    return n


class _AsyncCallable:
    __name__ = "async_callable"

    async def __call__(self, n: int) -> int:
        return n


def _async_generator_tool(n: int) -> Any:
    async def gen() -> Any:
        yield n
    return gen


@pytest.mark.parametrize("make", [
    lambda: _async_fetch,
    lambda: tool(_async_fetch),
    lambda: tool(pre(lambda n: n > 0)(_async_fetch)),
    lambda: pre(lambda n: n > 0)(tool(_async_fetch)),
    lambda: tool(_AsyncCallable(), name="async_callable"),
], ids=["plain", "tool", "pre-then-tool", "tool-then-pre", "callable-object"])
@pytest.mark.parametrize("agent_type", ["react", "constrained"])
def test_an_async_tool_is_refused_when_the_agent_is_built(make: Callable[[], Any],
                                                          agent_type: str) -> None:
    candidate = make()
    with pytest.raises(ContractDefinitionError, match="async") as refused:
        ContractAgent(ScriptedEngine(), tools=[candidate], agent_type=agent_type)
    name = getattr(candidate, "name", None) or candidate.__name__
    assert repr(name) in str(refused.value)


class _Awaitable:
    """An awaitable that records whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    def __await__(self) -> Iterator[Any]:
        yield None
        return 1

    def close(self) -> None:
        self.closed = True


def test_a_sync_tool_returning_an_awaitable_is_a_failed_call_and_is_closed() -> None:
    made: list[Any] = []

    @tool
    def sneaky(n: int) -> Any:
        """Returns a coroutine."""
        made.append(_async_fetch(n))
        return made[-1]

    @tool
    def custom(n: int) -> Any:
        """Returns an awaitable object."""
        made.append(_Awaitable())
        return made[-1]

    with never_left_unawaited():
        agent = constrained(ScriptedEngine({"tool": "sneaky", "args": {"n": 1}},
                                           {"tool": "custom", "args": {"n": 1}},
                                           {"answer": "done"}), tools=[sneaky, custom])
        result = agent.run("t")
    assert result.success
    problems = errors_of(result)
    assert len(problems) == 2 and all("awaitable" in p for p in problems)
    assert made[0].cr_frame is None and made[1].closed  # closed, never left pending
    assert [agent.tool_stats()[n]["p_succ"] for n in ("sneaky", "custom")] == [0.0, 0.0]


async def _async_true(*args: Any) -> bool:
    return True


PLACES = ["pre", "post", "task_precondition", "answer_postcondition",
          "iteration_invariant", "contract_assert"]


def _agent_with_async_check(place: str, ran: list[str]) -> ContractAgent:
    """A constrained agent whose one condition, at ``place``, is ``async`` (truthy)."""

    def body(n: int) -> int:
        ran.append("tool")
        if place == "contract_assert":
            contract_assert(_async_true(), "async assert")
        return n

    body.__name__ = "work"
    fn: Any = body
    if place == "pre":
        fn = pre(_async_true, "async pre")(fn)
    elif place == "post":
        fn = post(_async_true, "async post")(fn)
    options: dict[str, Any] = {}
    if place in ("task_precondition", "answer_postcondition", "iteration_invariant"):
        options[place] = _async_true
    return constrained(ScriptedEngine({"tool": "work", "args": {"n": 1}}, {"answer": "done"}),
                       tools=[tool(fn)], policy=ContractPolicy.ENFORCE, **options)


@pytest.mark.parametrize("place", PLACES)
def test_an_async_condition_fails_everywhere_and_is_closed(place: str) -> None:
    ran: list[str] = []
    with never_left_unawaited():
        result = _agent_with_async_check(place, ran).run("task")
    assert not result.success and "contract termination" in (result.error or "")
    violations = [e.metadata["violation"] for e in result.events
                  if e.type is EventType.CONTRACT_VIOLATION]
    assert len(violations) == 1
    assert ran == ([] if place in ("pre", "task_precondition", "iteration_invariant")
                   else ["tool"])


def test_an_async_condition_outside_an_agent_raises_termination() -> None:
    @pre(_async_true, "async pre")
    def plain(n: int) -> int:
        return n

    with pytest.raises(ContractTermination, match="async pre"):
        plain(1)
    with pytest.raises(ContractTermination, match="awaited"):
        contract_assert(_async_true(), "never awaited")


# -- text nested past the recursion limit -------------------------------------------------
def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 5_000, 100_000])
@pytest.mark.parametrize("where", ["action", "args", "answer", "react-args",
                                   "react-typed-answer"])
def test_text_nested_past_the_bound_is_a_failed_attempt(depth: int, where: str) -> None:
    @tool
    def take(x: Any = None) -> str:
        """Take x."""
        return "taken"

    deep = _nested(depth)
    if where.startswith("react"):
        first = Response(texts=("",), tool_calls=(ToolCall("c1", "take", f'{{"x": {deep}}}'),)) \
            if where == "react-args" else Response(texts=(deep,))
        agent = ContractAgent(ScriptedEngine(first, Response(texts=('["fine"]',))), tools=[take],
                              answer_type=list[str] if where == "react-typed-answer" else None)
    else:
        first = {"action": deep, "args": f'{{"tool": "take", "args": {{"x": {deep}}}}}',
                 "answer": f'{{"answer": {deep}}}'}[where]
        agent = constrained(ScriptedEngine(first, {"answer": "fine"}), tools=[take])
    result = agent.run("task")
    assert result.success
    assert any("nested deeper than" in e or "not a valid" in e for e in errors_of(result))
    assert agent.tool_stats()["take"]["calls"] == 0


@settings(max_examples=30, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30))
def test_arguments_within_the_bound_reach_the_tool_unchanged(value: Any) -> None:
    got: list[Any] = []

    @tool
    def take(x: Any = None) -> str:
        """Take x."""
        got.append(x)
        return "taken"

    call = ToolCall("c1", "take", json.dumps({"x": value}))
    result = ContractAgent(ScriptedEngine(Response(texts=("",), tool_calls=(call,)),
                                          Response(texts=("done",))), tools=[take]).run("t")
    assert result.success and got == [value]


# -- violation handlers that raise ---------------------------------------------------------
def _raising_handler(violation: ContractViolation) -> None:
    raise Boom(f"handler broke on {violation.kind}")


@pytest.mark.parametrize("place", ["pre", "post", "contract_assert", "task_precondition",
                                   "answer_postcondition", "iteration_invariant"])
@pytest.mark.parametrize("policy", [ContractPolicy.ENFORCE, ContractPolicy.OBSERVE])
def test_a_raising_handler_is_logged_and_the_policy_still_applies(
        place: str, policy: ContractPolicy, caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    def body(n: int) -> int:
        ran.append("tool")
        if place == "contract_assert":
            contract_assert(False, "assert fails")
        return n

    body.__name__ = "work"
    fn: Any = body
    if place == "pre":
        fn = pre(lambda n: False, "pre fails")(fn)
    elif place == "post":
        fn = post(lambda r: False, "post fails")(fn)
    options: dict[str, Any] = {}
    if place in ("task_precondition", "answer_postcondition", "iteration_invariant"):
        options[place] = lambda value: False
    agent = constrained(ScriptedEngine({"tool": "work", "args": {"n": 1}}, {"answer": "done"}),
                        tools=[tool(fn)], policy=policy,
                        violation_handler=_raising_handler, **options)
    with caplog.at_level(logging.WARNING, logger="hoare.agents"):
        result = agent.run("task")
    assert any("violation handler raised Boom" in r.getMessage() for r in caplog.records)
    if policy is ContractPolicy.ENFORCE:
        assert not result.success and "contract termination" in (result.error or "")
    else:  # OBSERVE continues: the tool ran (its pre-condition only observed)
        assert result.success and result.answer == "done" and ran == ["tool"]


def test_handle_violation_chains_enforce_from_the_handlers_error() -> None:
    context = ContractContext(ContractPolicy.ENFORCE, _raising_handler, "here")
    with pytest.raises(ContractTermination) as stopped:
        context.handle_violation(ContractViolation("pre", "here", "p", "m"))
    assert isinstance(stopped.value.__cause__, Boom)
    observed = ContractContext(ContractPolicy.OBSERVE, _raising_handler, "here")
    assert observed.handle_violation(ContractViolation("pre", "here", "p", "m")) is True

    def interrupting(violation: ContractViolation) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ContractContext(ContractPolicy.OBSERVE, interrupting).handle_violation(
            ContractViolation("pre", "here", "p", "m"))


# -- interrupts -----------------------------------------------------------------------------
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(3),
                                       asyncio.CancelledError()],
                         ids=["KeyboardInterrupt", "SystemExit", "CancelledError"])
def test_an_interrupted_tool_call_propagates_unchanged_and_is_not_counted(
        interrupt: BaseException, tmp_path: Any) -> None:
    import hoare
    from hoare import configure
    from hoare.stats.query import query

    @tool
    def halt(n: int) -> int:
        """Stop."""
        if n == 0:
            raise interrupt
        return n

    path = str(tmp_path / "s.db")
    configure(stats=path)
    try:
        agent = constrained(ScriptedEngine({"tool": "halt", "args": {"n": 1}},
                                           {"tool": "halt", "args": {"n": 0}}), tools=[halt])
        with pytest.raises(type(interrupt)) as caught:
            agent.run("t")
        assert caught.value is interrupt
        assert hoare.flush_stats()
    finally:
        configure(stats=None)
    stats = agent.tool_stats()["halt"]
    assert (stats["calls"], stats["p_succ"]) == (1, 1.0)  # the interrupted one: not counted
    assert [(r["contract"], r["success"]) for r in query(path)] == [("tool:halt", True)]


# -- per-tool statistics: one rule with the stats store -------------------------------------
def test_tool_stats_and_the_stats_store_agree_on_every_kind_of_call(tmp_path: Any) -> None:
    import hoare
    from hoare import configure
    from hoare.stats.query import query

    @tool
    @pre(lambda n: n != 1, "not one")
    def work(n: int) -> int:
        """Work on n."""
        if n == 2:
            raise ValueError("two")
        if n == 3:
            contract_assert(False, "three")
        return n

    path = str(tmp_path / "s.db")
    configure(stats=path)
    try:
        agent = constrained(ScriptedEngine(*({"tool": "work", "args": {"n": n}} for n in range(5)),
                                           {"answer": "done"}), tools=[work],
                            policy=ContractPolicy.OBSERVE, violation_handler=lambda v: None)
        assert agent.run("t").success
        assert hoare.flush_stats()
    finally:
        configure(stats=None)
    rows = [r["success"] for r in query(path) if r["contract"] == "tool:work"]
    stats = agent.tool_stats()["work"]
    assert rows == [True, False, False, False, True]  # 1 violated, 2 raised, 3 asserted
    assert (stats["calls"], stats["violations"]) == (5, 2)
    assert stats["p_succ"] == pytest.approx(sum(rows) / len(rows))


THREADS = textwrap.dedent(r'''
    import json, sys, threading
    import hoare
    from hoare import configure
    from hoare.agents import ContractAgent, ContractPolicy, contract_assert, pre, tool
    from hoare.engines import FunctionEngine
    from hoare.stats.query import query

    @tool
    @pre(lambda n: n % 3 != 0, "not a multiple of three")
    def work(n: int) -> int:
        """Work."""
        contract_assert(n % 5 != 0, "not a multiple of five")
        if n % 7 == 0:
            raise ValueError("seven")
        return n

    def engine_for(n):
        state = {"asked": 0}
        def answer(request):
            state["asked"] += 1
            if state["asked"] <= 4:
                return json.dumps({"tool": "work", "args": {"n": n * 4 + state["asked"]}})
            return json.dumps({"answer": "done"})
        return answer

    configure(stats=sys.argv[1])
    engines = {}
    lock = threading.Lock()
    def routed(request):
        name = threading.current_thread().name
        with lock:
            fn = engines[name]
        return fn(request)
    agent = ContractAgent(FunctionEngine(routed), tools=[work], agent_type="constrained",
                          policy=ContractPolicy.OBSERVE, violation_handler=lambda v: None)
    errors = []
    def run(t):
        try:
            for r in range(6):
                n = t * 6 + r
                with lock:
                    engines[threading.current_thread().name] = engine_for(n)
                assert agent.run("t").success
        except BaseException as error:
            errors.append(repr(error))
    threads = [threading.Thread(target=run, args=(t,), name=f"w{t}") for t in range(16)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert hoare.flush_stats()
    configure(stats=None)
    rows = [r["success"] for r in query(sys.argv[1]) if r["contract"] == "tool:work"]
    stats = agent.tool_stats()["work"]
    print(json.dumps({"errors": errors, "calls": stats["calls"],
                      "violations": stats["violations"], "p_succ": stats["p_succ"],
                      "rows": len(rows), "row_successes": sum(rows),
                      "agent_violations": agent.get_contract_stats()["violations"]}))
''')


def test_tool_stats_are_exact_when_many_threads_share_an_agent(tmp_path: Any) -> None:
    done = subprocess.run([sys.executable, "-c", THREADS, str(tmp_path / "t.db")],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": LIBRARY})
    assert done.returncode == 0, done.stderr
    ns = [(t * 6 + r) * 4 + k for t in range(16) for r in range(6) for k in range(1, 5)]
    violations = sum((n % 3 == 0) + (n % 5 == 0) for n in ns)
    clean = sum(n % 3 != 0 and n % 5 != 0 and n % 7 != 0 for n in ns)
    assert json.loads(done.stdout) == {
        "errors": [], "calls": len(ns), "violations": violations,
        "p_succ": clean / len(ns), "rows": len(ns), "row_successes": clean,
        "agent_violations": violations}


# -- bad definitions are refused, naming what is wrong -------------------------------------
@pytest.mark.parametrize("bad", ["enforce", "ENFORCE", 2, None, object()])
def test_a_policy_that_is_not_a_contract_policy_is_refused(bad: Any) -> None:
    with pytest.raises(ContractDefinitionError, match="must be a ContractPolicy"):
        ContractAgent(ScriptedEngine(), policy=bad)
    with pytest.raises(ContractDefinitionError, match="must be a ContractPolicy"):
        ContractContext(bad)
    if bad is not None:  # None: the condition's default (the context's policy)
        with pytest.raises(ContractDefinitionError, match="@pre's policy"):
            pre(lambda args: True, "m", policy=bad)
        with pytest.raises(ContractDefinitionError, match="contract_assert's policy"):
            contract_assert(False, "m", policy=bad)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10", None])
def test_max_iterations_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_iterations must be an int >= 1"):
        ContractAgent(ScriptedEngine(), max_iterations=bad)


def test_conditions_and_handlers_that_cannot_work_are_refused() -> None:
    with pytest.raises(ContractDefinitionError, match="callable predicate"):
        pre("args['n'] > 0")  # type: ignore[arg-type]
    with pytest.raises(ContractDefinitionError, match="message must be a str"):
        post(lambda r: True, hostile(DUNDERS)())  # type: ignore[arg-type]
    with pytest.raises(ContractDefinitionError, match="violation_handler must be callable"):
        ContractAgent(ScriptedEngine(), violation_handler="print")  # type: ignore[arg-type]
    with pytest.raises(ContractTermination, match="Hostile message"):
        contract_assert(False, hostile(DUNDERS)())  # type: ignore[arg-type]


def test_a_stream_closed_early_unwinds_and_ends_cleanly() -> None:
    from hoare.agents import current_context

    agent = constrained(ScriptedEngine({"tool": "fetch", "args": {}}, {"answer": "x"}),
                        tools=[tool(lambda: "got", name="fetch")])
    unraisable: list[Any] = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        events = agent.stream("t")
        assert next(events).type is EventType.THOUGHT
        events.close()  # the caller stopped reading: the run's own context unwinds now
        del events
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert [u.exc_value for u in unraisable] == [] and current_context() is None


def test_tools_that_cannot_be_called_by_name_are_refused() -> None:
    def look(q: str) -> str:
        """Look."""
        return q

    with pytest.raises(ContractDefinitionError, match=r"distinct.*\['look'\]"):
        ContractAgent(ScriptedEngine(), tools=[look, tool(look)])
    with pytest.raises(ContractDefinitionError, match="a tool must be a callable, got str"):
        ContractAgent(ScriptedEngine(), tools=["look"])
    with pytest.raises(ContractDefinitionError, match="name must be a non-empty str"):
        tool(look, name=hostile(DUNDERS)())
    assert [t.name for t in ContractAgent(ScriptedEngine(), tools=[look, tool(look, name="see")]
                                          ).tools] == ["look", "see"]


REAL_SERVER_THREADS = textwrap.dedent(r'''
    import json, sys, threading
    sys.path.insert(0, sys.argv[1])  # tests/: the loopback OpenAI-compatible server
    from openai_server import OpenAIServer, completion, tool_calls
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from hoare import telemetry
    from hoare.agents import ContractAgent, ContractPolicy, pre, tool

    @tool
    @pre(lambda args: args["b"] != 0, "no division by zero")
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        if b == 2:
            raise ValueError("two is not allowed")
        return a / b

    def answer(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return completion("done")
        n = int(last["content"].split()[-1])
        return tool_calls(("divide", json.dumps({"a": n, "b": n % 4})))

    class Broken(SpanProcessor):  # a processor that raises on every span end
        def on_end(self, span):
            raise RuntimeError("broken exporter")

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(Broken())  # after the exporter: the SDK stops at it
    telemetry.instrument(tracer_provider=provider)
    errors = []
    with OpenAIServer(default=answer) as server:
        agent = ContractAgent(server.engine(), tools=[divide],
                              policy=ContractPolicy.OBSERVE, violation_handler=lambda v: None)
        def run(t):
            try:
                for r in range(5):
                    result = agent.run(f"Task number {t * 5 + r}")
                    assert result.success and result.answer == "done", result.error
            except BaseException as error:
                errors.append(repr(error))
        threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
    stats = agent.tool_stats()["divide"]
    spans = exporter.get_finished_spans()
    print(json.dumps({"errors": errors, "calls": stats["calls"],
                      "violations": stats["violations"], "p_succ": stats["p_succ"],
                      "tool_spans": sum(s.name == "execute_tool divide" for s in spans),
                      "agent_spans": sum(s.name.startswith("invoke_agent") for s in spans)}))
''')


def test_threads_sharing_an_agent_on_a_real_server_with_a_broken_span_processor() -> None:
    """8 threads x 5 runs on one agent, the real openai client against the loopback
    server, a span processor whose on_end raises: every run answers, the per-tool
    figures are exact, every span is exported."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", REAL_SERVER_THREADS, tests],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": LIBRARY})
    assert done.returncode == 0, done.stderr
    ns = range(40)
    clean = sum(n % 4 not in (0, 2) for n in ns)  # b == 0 violated (observed), b == 2 raised
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "errors": [], "calls": 40, "violations": sum(n % 4 == 0 for n in ns),
        "p_succ": clean / 40, "tool_spans": 40, "agent_spans": 40}


@pytest.mark.parametrize("own", [None, ContractPolicy.QUICK_ENFORCE])
@pytest.mark.parametrize("agent_policy", [ContractPolicy.QUICK_ENFORCE,
                                          ContractPolicy.ENFORCE, ContractPolicy.OBSERVE])
def test_every_handled_violation_is_counted_whatever_its_policy(
        agent_policy: ContractPolicy, own: ContractPolicy | None) -> None:
    """QUICK_ENFORCE calls no handler, yet its violation is one: counted per tool and
    for the agent, like the others (the handler was the only counter)."""

    @tool
    @pre(lambda n: n > 0, "positive", policy=own)
    def work(n: int) -> int:
        """Work."""
        return n

    agent = constrained(ScriptedEngine({"tool": "work", "args": {"n": 0}}, {"answer": "x"}),
                        tools=[work], policy=agent_policy, violation_handler=lambda v: None,
                        answer_postcondition=lambda answer: False)
    result = agent.run("t")
    stopped = (own or agent_policy) is not ContractPolicy.OBSERVE
    stats = agent.tool_stats()["work"]
    assert (stats["calls"], stats["violations"], stats["p_succ"]) == (1, 1, 0.0)
    # the answer's check runs only when the tool's violation did not stop the run
    assert agent.get_contract_stats()["violations"] == (1 if stopped else 2)
    assert result.success is not stopped  # OBSERVE: the answer's violation only observed


def test_a_sync_wrapper_that_runs_an_async_function_is_a_sync_tool() -> None:
    """Judged by what it is, not by what it wraps: ``functools.wraps`` around
    ``asyncio.run`` is a synchronous tool, and it runs."""
    import functools

    @functools.wraps(_async_fetch)
    def fetch(n: int) -> int:
        return asyncio.run(_async_fetch(n))

    result = constrained(ScriptedEngine({"tool": "_async_fetch", "args": {"n": 7}},
                                        {"answer": "done"}), tools=[fetch]).run("t")
    assert result.success
    (observation,) = [e for e in result.events if e.type is EventType.OBSERVATION]
    assert observation.metadata["raw_result"] == 7


@pytest.mark.parametrize("agent_type", ["react", "constrained"])
def test_a_typed_answer_of_none_is_a_success_as_the_stats_store_records_it(
        agent_type: str, tmp_path: Any) -> None:
    import hoare
    from hoare import configure
    from hoare.stats.query import query

    answer = '{"answer": null}' if agent_type == "constrained" else "null"
    path = str(tmp_path / "s.db")
    configure(stats=path)
    try:
        result = ContractAgent(ScriptedEngine(Response(texts=(answer,))), answer_type=int | None,
                               agent_type=agent_type).run("t")
        assert hoare.flush_stats()
    finally:
        configure(stats=None)
    assert result.success is True and result.answer is None and result.error is None
    assert [r["success"] for r in query(path)] == [True]


# -- any model output: run() returns, and its figures add up ------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=12)
arguments = st.one_of(
    st.text(max_size=30),  # anything, JSON or not, all of Unicode
    st.builds(lambda a, b: json.dumps({"a": a, "b": b}), json_values, json_values),
    st.builds(lambda d: json.dumps(d), st.dictionaries(st.text(max_size=4), json_values,
                                                       max_size=3)),
    st.integers(1, 3000).map(lambda depth: '{"a": ' + "[" * depth + "]" * depth + "}"))
names = st.sampled_from(["divide", "divide", "missing", ""]) | st.text(max_size=6)
replies = st.one_of(
    st.text(max_size=40).map(lambda text: Response(texts=(text,))),
    st.lists(st.tuples(names, arguments), min_size=1, max_size=3).map(
        lambda calls: Response(texts=("",), tool_calls=tuple(
            ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls)))),
    st.builds(lambda name, args: Response(texts=(json.dumps({"tool": name, "args": args}),)),
              names, json_values),
    json_values.map(lambda value: Response(texts=(json.dumps({"answer": value}),))))


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(replies, min_size=1, max_size=6), st.sampled_from(["react", "constrained"]),
       st.sampled_from(list(ContractPolicy)), st.sampled_from([None, int, list[str]]))
def test_any_model_output_ends_in_a_result_whose_figures_add_up(
        script: list[Response], agent_type: str, policy: ContractPolicy,
        answer_type: Any) -> None:
    @tool
    @pre(lambda args: args["b"] != 0, "no division by zero")
    @post(lambda result: result == result, "a number")
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        contract_assert(abs(a) < 1e6, "small enough")
        return a / b

    queue = iter(script)
    engine = FunctionEngine(lambda request: next(queue, Response(texts=('{"answer": 1}',))))
    agent = ContractAgent(engine, tools=[divide], agent_type=agent_type, policy=policy,
                          violation_handler=lambda v: None, answer_type=answer_type,
                          max_iterations=len(script) + 1)
    result = agent.run("task")
    assert result.success is (result.events[-1].type is EventType.ANSWER)
    assert (result.error is None) is result.success
    stats = agent.tool_stats()["divide"]
    actions = sum(e.type is EventType.ACTION for e in result.events)
    observed = sum(e.type is EventType.OBSERVATION for e in result.events)
    assert stats["calls"] == actions
    assert stats["successes"] <= observed <= actions
    assert stats["p_succ"] == (stats["successes"] / actions if actions else None)
    assert all(isinstance(e.content, str) for e in result.events)
