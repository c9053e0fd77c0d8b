"""Concurrent calls on one contract never see each other's state (spec §6).

A "kernel-backed contract" is one Hooks object and one ContractConfig shared by every
call. Here many threads (and many asyncio tasks) drive calls through that single
contract at once, each call with its own input (a distinct tag) and its own script;
the engine and the hooks yield or sleep briefly to force interleaving. Every call must
then do exactly what the oracle says it does *alone*: the same hook invocations with
the same arguments, the same effects, the same outcome; and every value in its outcome
(input, result, attempts, violations) must carry its own tag.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import threading
import time
from collections.abc import Callable

import pytest
from kernel_support.harness import (
    Recorder,
    build_hooks,
    perform_async,
    perform_sync,
    start,
    view_outcome,
)
from kernel_support.oracle import FORWARD_RAISED, oracle
from kernel_support.scripts import (
    ALL_POLICIES,
    Behaviour,
    Case,
    PredSpec,
    Shape,
    random_behaviour,
    raw_input,
    tag_of,
)

from hoare.kernel import (
    ContractConfig,
    ContractViolationError,
    Hooks,
    Outcome,
    Policy,
    RetryPolicy,
    run_async,
    run_sync,
)

THREADS = 16
CALLS_PER_THREAD = 24
TASKS = 384


def shared_shape() -> Shape:
    """A contract with every kind of hook and predicates under several policies."""
    return Shape(
        pre=(PredSpec("pre0", "fam_a", "input must be short", None),
             PredSpec("pre1", "fam_b", "", Policy.OBSERVE)),
        post=(PredSpec("post0", "fam_a", "answer must cite", None),
              PredSpec("post1", "fam_c", "no empty answer", Policy.ENFORCE),
              PredSpec("post2", "fam_b", "ignored", Policy.IGNORE)),
        act=True, preflight=True, check_result=True, handler=True,
    )


def shared_config(policy: Policy) -> ContractConfig:
    retry = RetryPolicy(tries=3, delay=0.25, max_delay=1.0, jitter=0.1, backoff=2.0)
    return ContractConfig(pre_remedy=True, post_remedy=True, accumulate_errors=True,
                          policy=policy, retry=retry)


def make_calls(policy: Policy, count: int, seed: int) -> list[tuple[str, Case]]:
    """``count`` calls of one contract, each with its own script and tag."""
    rng = random.Random(seed)
    shape, config = shared_shape(), shared_config(policy)
    calls = []
    for i in range(count):
        behaviour = random_behaviour(rng, shape, fail=0.35)
        randoms = tuple(rng.random() for _ in range(3))
        calls.append((f"call-{i}", Case(shape, behaviour, config, randoms, (rng.randint(1, 9),))))
    return calls


def assert_own(tag: str, outcome: Outcome) -> None:
    """Every value the outcome holds belongs to the call tagged ``tag``."""
    assert outcome.original_input == raw_input(tag)
    assert tag_of(outcome.input_used) == tag
    if outcome.result is not None:
        assert tag_of(outcome.result) == tag
    for attempt in outcome.attempts:
        if attempt.raw is not None:
            assert tag_of(attempt.raw) == tag
        for v in (*attempt.feedback, *attempt.violations):
            assert v in outcome.violations
    for violation in outcome.violations:
        # texts that quote a value (garbage answers) quote this call's values only
        assert "call-" not in violation.message or f"'{tag}'" in violation.message


def check_call(tag: str, case: Case, recorder: Recorder, outcome: Outcome | None,
               error: BaseException | None) -> None:
    """The call did exactly what it does alone, and its outcome is its own."""
    expected = oracle(case, tag)
    assert not recorder.anomalies, recorder.anomalies
    assert [e.view() for e in recorder.events] == expected.events
    if expected.ending == FORWARD_RAISED:
        assert error is not None and type(error) is expected.forward_error.cls  # type: ignore[union-attr]
        return
    assert outcome is not None
    if not expected.known_bugs:
        assert view_outcome(outcome) == expected.outcome
    assert_own(tag, outcome)


def run_one(tag: str, case: Case, hooks: Hooks, behaviours: dict[str, Behaviour],
            recorders: dict[str, Recorder], stray: Recorder,
            pause: Callable[[], None]) -> tuple[Outcome | None, BaseException | None]:
    def recorder_for(t: object) -> Recorder:
        return recorders[tag] if t is None else recorders.get(t, stray)  # type: ignore[call-overload]

    perform = perform_sync(behaviours, recorder_for, pause=pause)
    try:
        outcome, _ = run_sync(start(case, tag, hooks, recorders[tag]), perform)
    except ContractViolationError as error:
        return error.outcome, error
    except Exception as error:
        return None, error
    return outcome, None


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.value)
def test_isolation_concurrent_calls(policy: Policy) -> None:
    """isolation-concurrent-calls: 16 threads drive 384 calls through ONE Hooks object and
    ONE config at once (engines and hooks yield and sleep to interleave); every call does
    exactly what it does alone and its outcome, input, result, attempts and violations
    are its own."""
    calls = make_calls(policy, THREADS * CALLS_PER_THREAD, seed=hash(policy.value) % 1000)
    behaviours = {tag: case.behaviour for tag, case in calls}
    recorders = {tag: Recorder() for tag, _ in calls}
    stray = Recorder()
    local = threading.local()

    def pause() -> None:
        rng = getattr(local, "rng", None)
        if rng is None:
            rng = local.rng = random.Random(threading.get_ident())
        roll = rng.random()
        if roll < 0.05:
            time.sleep(0.0002)  # a slow engine or hook
        elif roll < 0.5:
            time.sleep(0)  # yield to another thread

    shape = calls[0][1].shape
    hooks = build_hooks(shape, behaviours, lambda t: recorders.get(t, stray),  # type: ignore[arg-type]
                        pause=pause)
    results: dict[str, tuple[Outcome | None, BaseException | None]] = {}
    barrier = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        barrier.wait()
        for tag, case in calls[index::THREADS]:
            results[tag] = run_one(tag, case, hooks, behaviours, recorders, stray, pause)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert not stray.anomalies and not stray.events
    assert len(results) == len(calls)
    outcomes = [results[tag][0] for tag, _ in calls]
    live = [o for o in outcomes if o is not None]
    assert len({id(o) for o in live}) == len(live)  # no outcome object is shared
    for tag, case in calls:
        outcome, error = results[tag]
        check_call(tag, case, recorders[tag], outcome, error)


def test_isolation_concurrent_async_calls() -> None:
    """The same with asyncio: 384 concurrent run_async calls through one contract, the
    engine awaiting asyncio.sleep(0) between steps so that the calls interleave."""
    calls = make_calls(Policy.OBSERVE, TASKS, seed=7)
    behaviours = {tag: case.behaviour for tag, case in calls}
    recorders = {tag: Recorder() for tag, _ in calls}
    stray = Recorder()
    shape = calls[0][1].shape
    hooks = build_hooks(shape, behaviours, lambda t: recorders.get(t, stray))  # type: ignore[arg-type]
    interleaved: list[str] = []

    async def one(tag: str, case: Case) -> tuple[Outcome | None, BaseException | None]:
        def recorder_for(t: object) -> Recorder:
            if t is None:
                interleaved.append(tag)
                return recorders[tag]
            return recorders.get(t, stray)  # type: ignore[call-overload]

        perform = perform_async(behaviours, recorder_for, yields=2)
        try:
            outcome, _ = await run_async(start(case, tag, hooks, recorders[tag]), perform)
        except ContractViolationError as error:
            return error.outcome, error
        except Exception as error:
            return None, error
        return outcome, None

    async def main() -> list[tuple[Outcome | None, BaseException | None]]:
        return await asyncio.gather(*(one(tag, case) for tag, case in calls))

    results = asyncio.run(main())
    assert not stray.anomalies and not stray.events
    for (tag, case), (outcome, error) in zip(calls, results, strict=True):
        check_call(tag, case, recorders[tag], outcome, error)
    # the calls really did run interleaved: their events are not grouped call by call
    assert any(a != b for a, b in itertools.pairwise(interleaved))


def test_concurrent_calls_share_no_mutable_outcome_state() -> None:
    """Two calls started together and stepped alternately (effect by effect) by hand: the
    generators keep separate records, so each outcome holds only its own attempts."""
    shape = Shape(post=(PredSpec("post0", "fam_a", "must hold", None),))
    config = ContractConfig(post_remedy=True, retry=RetryPolicy(tries=4, delay=0, jitter=0))
    rng = random.Random(3)
    calls = [(f"call-{i}", Case(shape, random_behaviour(rng, shape, fail=0.6), config))
             for i in range(2)]
    behaviours = {tag: case.behaviour for tag, case in calls}
    recorders = {tag: Recorder() for tag, _ in calls}
    hooks = build_hooks(shape, behaviours, lambda t: recorders[t])  # type: ignore[index]
    generators = {tag: start(case, tag, hooks, recorders[tag]) for tag, case in calls}
    performs = {tag: perform_sync(behaviours, lambda t, tag=tag: recorders[t or tag])
                for tag, _ in calls}
    pending = {tag: next(gen) for tag, gen in generators.items()}
    outcomes: dict[str, Outcome | None] = {}
    errors: dict[str, BaseException | None] = {tag: None for tag, _ in calls}
    while pending:
        for tag in list(pending):
            try:
                answer = performs[tag](pending[tag])
            except Exception as failure:
                step = lambda gen, f=failure: gen.throw(f)  # noqa: E731
            else:
                step = lambda gen, a=answer: gen.send(a)  # noqa: E731
            try:
                pending[tag] = step(generators[tag])
            except StopIteration as stop:
                outcomes[tag] = stop.value[0]
                del pending[tag]
            except ContractViolationError as error:
                outcomes[tag], errors[tag] = error.outcome, error
                del pending[tag]
            except Exception as error:  # forward's own exception
                outcomes[tag], errors[tag] = None, error
                del pending[tag]
    assert {e.hook for rec in recorders.values() for e in rec.events} >= {"generate"}
    for tag, case in calls:
        check_call(tag, case, recorders[tag], outcomes[tag], errors[tag])
