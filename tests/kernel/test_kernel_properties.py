"""Property tests of the kernel against spec/pipeline.md, one `call` invariant per test.

Each example is a generated *case* (tests/kernel_support/scripts.py): a configuration
and a script of what every hook and the engine do. The harness runs it through
``run_sync`` or ``run_async`` with recording hooks, a fake clock and scripted random
draws (nothing sleeps), and the oracle (tests/kernel_support/oracle.py) re-executes
the spec on the same case. The tests named in spec/invariants.toml check their
invariant on what the kernel did, using the oracle only where the invariant talks
about something the trace alone cannot show (e.g. "the contract reached the post
stage"); ``test_kernel_matches_oracle`` compares everything.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kernel_support.harness import (
    Event,
    Recorder,
    Trace,
    build_hooks,
    execute,
    perform_sync,
    start,
    view_outcome,
)
from kernel_support.oracle import (
    FORWARD_RAISED,
    RESULT_TYPE,
    RETURN,
    VIOLATION,
    Expected,
    base_delay,
    oracle,
)
from kernel_support.scripts import (
    ACT_PASSING,
    ALL_POLICIES,
    FATAL_ENGINE,
    FRIENDLY_ENGINE,
    FRIENDLY_POST,
    FRIENDLY_PRE,
    HOSTILE_ENGINE,
    HOSTILE_POST,
    HOSTILE_PRE,
    MAX_TRIES,
    NOT_UNSAT,
    UNSAT,
    Answer,
    Behaviour,
    Case,
    Garbage,
    PredScript,
    PredSpec,
    Raise,
    Returns,
    Shape,
    cases,
    contract_calls,
    raw_input,
    retry_policies,
)

from hoare.kernel import (
    ContractConfig,
    ContractViolationError,
    FatalEngineError,
    Hooks,
    Outcome,
    Phase,
    Policy,
    Predicate,
    PreflightResult,
    Reply,
    ResultTypeError,
    RetryPolicy,
    Verdict,
    Violation,
    ViolationKind,
    run_call,
    run_sync,
)

# Generating a case costs more than running it; 80 examples per invariant (200 for the
# whole-call comparison) keep the kernel suite well under a minute on two cores. Set
# HOARE_KERNEL_EXAMPLES for a deeper run. Examples are independent calls, so a slow one
# is noise, not a bug: no deadline.
EXAMPLES = int(os.environ.get("HOARE_KERNEL_EXAMPLES", "80"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(PROPERTY, max_examples=EXAMPLES * 5 // 2)

DRIVERS = st.sampled_from(("sync", "async"))
OBSERVING = st.sampled_from((Policy.IGNORE, Policy.OBSERVE))
OBSERVING_OVERRIDES = st.one_of(st.none(), st.none(), OBSERVING)
ENFORCING = st.sampled_from((Policy.OBSERVE, Policy.ENFORCE, Policy.QUICK_ENFORCE))
MANY_IGNORED = st.one_of(st.none(), st.just(Policy.IGNORE), st.sampled_from(ALL_POLICIES))
MANY_QUICK = st.one_of(st.none(), st.just(Policy.QUICK_ENFORCE), st.sampled_from(ALL_POLICIES))
ALWAYS = st.just(True)
NEVER = st.just(False)
TRANSFORMING = st.just("transform")
PASSING_INPUT = st.none()
RETRYING = retry_policies(tries=st.integers(2, MAX_TRIES))
WIDE_RETRY = st.builds(
    RetryPolicy,
    tries=st.integers(2, MAX_TRIES),
    delay=st.floats(0, 1e308),
    max_delay=st.floats(0, 1e308),
    jitter=st.floats(0, 1e308),
    backoff=st.floats(0, 1e308),
    graceful=st.booleans(),
)
STRICT_RETRY = retry_policies(graceful=NEVER)
SOME = st.integers(1, 3)
SEVERAL = st.integers(2, 3)
NO_PREDICATES = st.just(0)
MOSTLY = st.sampled_from((True, True, False))
# Directed generation: calls that mostly succeed, and calls that mostly need repairs.
FRIENDLY = {"pre_script": FRIENDLY_PRE, "post_script": FRIENDLY_POST, "engine": FRIENDLY_ENGINE,
            "act": ACT_PASSING, "input_check": PASSING_INPUT, "preflight": NOT_UNSAT}
HOSTILE = {"pre_script": HOSTILE_PRE, "post_script": HOSTILE_POST, "engine": HOSTILE_ENGINE,
           "input_check": PASSING_INPUT}
HOSTILE_FATAL = {**HOSTILE, "engine": FATAL_ENGINE}
NOT_QUICK = st.sampled_from((Policy.IGNORE, Policy.OBSERVE, Policy.ENFORCE))
CHECKING = st.sampled_from((Policy.OBSERVE, Policy.ENFORCE))
RESULT_CHECK = st.one_of(st.none(), st.builds(Raise, st.sampled_from((TypeError, ValueError))))
MIXED = st.one_of(cases(), cases(**FRIENDLY), cases(**HOSTILE, pre_remedy=MOSTLY))


def run(case: Case, driver: str = "sync") -> tuple[Trace, Expected]:
    """Run ``case`` on the kernel and in the oracle; the hooks saw only this call."""
    trace = execute(case, driver=driver)
    assert not trace.anomalies, trace.anomalies
    return trace, oracle(case)


def effective(case: Case, spec: PredSpec) -> Policy:
    return spec.policy if spec.policy is not None else case.config.policy


def spec_of(case: Case, predicate_id: object) -> PredSpec:
    return next(s for s in (*case.shape.pre, *case.shape.post) if s.id == predicate_id)


def located(outcome: Outcome, phase: Phase, attempt: int) -> list[Violation]:
    return [v for v in outcome.violations if v.phase is phase and v.attempt == attempt]


def budget(case: Case, phase: Phase) -> int:
    c = case.config
    if phase is Phase.PRE:
        return c.retry.tries if c.pre_remedy else 0
    return c.retry.tries if c.post_remedy else 1


def pred_failed(event: Event) -> bool:
    return event.raised or (event.result is not None and not event.result)


# ================================================================ named invariants (§3, §4)


@PROPERTY
@given(cases(engine=HOSTILE_ENGINE), DRIVERS)
def test_post_attempts_bounded(case: Case, driver: str) -> None:
    """post-attempts-bounded: the post stage makes at most `tries` engine calls with
    post_remedy and at most one without, numbered 1, 2, ...; it makes all of them when
    every candidate fails (so the bound is reached, not just respected)."""
    trace, exp = run(case, driver)
    post = trace.generates_of(Phase.POST)
    assert len(post) <= budget(case, Phase.POST)
    assert [g.attempt for g in post] == list(range(1, len(post) + 1))
    outcome = trace.final_outcome
    if outcome is not None:
        assert outcome.generation_attempts == len(post)
        assert outcome.post_remedies == max(0, len(post) - 1)
    if Phase.POST in exp.exhausted:
        assert len(post) == budget(case, Phase.POST)


@PROPERTY
@given(cases(input_check=PASSING_INPUT, pre_script=FRIENDLY_PRE), DRIVERS)
def test_post_stage_calls_engine(case: Case, driver: str) -> None:
    """post-stage-calls-engine: a call whose contract reaches the post stage makes at least
    one post-stage engine call, exactly one without post_remedy; a call that does not
    reach it (input, pre, act or pre-flight failed) makes none."""
    trace, exp = run(case, driver)
    post = trace.generates_of(Phase.POST)
    if not exp.reached_post:
        assert post == []
        return
    assert len(post) >= 1
    assert post[0].attempt == 1
    if not case.config.post_remedy:
        assert len(post) == 1


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=ALWAYS, pre_count=SOME, policies=CHECKING), DRIVERS)
def test_pre_attempts_bounded(case: Case, driver: str) -> None:
    """pre-attempts-bounded: the pre stage makes at most `tries` engine calls with
    pre_remedy, numbered 1, 2, ..., and only when the caller's input failed a
    pre-condition; when no repaired input is accepted it makes all `tries` of them."""
    trace, exp = run(case, driver)
    pre = trace.generates_of(Phase.PRE)
    assert len(pre) <= budget(case, Phase.PRE)
    assert [g.attempt for g in pre] == list(range(1, len(pre) + 1))
    outcome = trace.final_outcome
    if outcome is not None:
        assert outcome.pre_remedies == len(pre)
        if pre:  # the pre stage repairs only an input that failed (§4, candidate 0)
            assert located(outcome, Phase.PRE, 0)
    if Phase.PRE in exp.exhausted:
        assert len(pre) == budget(case, Phase.PRE)


@PROPERTY
@given(cases(**HOSTILE, pre_count=SOME), DRIVERS)
def test_remedy_only_when_enabled(case: Case, driver: str) -> None:
    """remedy-only-when-enabled: no pre-stage engine call without pre_remedy, no second
    post-stage engine call (and no post-stage sleep) without post_remedy."""
    trace, exp = run(case, driver)
    if not case.config.pre_remedy:
        assert trace.generates_of(Phase.PRE) == []
    if not case.config.post_remedy:
        assert len(trace.generates_of(Phase.POST)) <= 1
        effects = trace.of("generate", "sleep")
        post_started = False
        for event in effects:
            if event.hook == "generate":
                post_started = post_started or event.args[0].phase is Phase.POST
            else:
                assert not post_started, "slept in a post stage without post_remedy"
    # with a remedy enabled the engine is asked again: the counts are the oracle's
    assert len(trace.generates) == exp.count("generate")


@PROPERTY
@given(cases(**HOSTILE_FATAL, pre_remedy=MOSTLY, pre_count=SOME, retry=RETRYING), DRIVERS)
def test_fatal_engine_error_stops(case: Case, driver: str) -> None:
    """fatal-engine-error-stops: after a FatalEngineError (or a subclass) the stage makes
    no further engine call and sleeps no more; the contract fails with the contract's
    policy, the attempt recording an `error` violation that names the exception."""
    trace, exp = run(case, driver)
    events = trace.events
    fatal = [i for i, e in enumerate(events)
             if e.hook == "generate" and isinstance(e.result, FatalEngineError)]
    assert (exp.fatal is not None) == bool(fatal)
    if not fatal:
        return
    first = fatal[0]
    generate = events[first].args[0]
    assert exp.fatal is generate.phase
    # no effect at all afterwards: the stage ends, and with it the contract
    assert [e.hook for e in events[first + 1:] if e.hook in ("generate", "sleep")] == []
    outcome = trace.final_outcome
    assert outcome is not None
    assert outcome.success is False
    attempt = outcome.attempts[-1]
    assert (attempt.phase, attempt.number) == (generate.phase, generate.attempt)
    assert [v.kind for v in attempt.violations] == [ViolationKind.ERROR]
    assert attempt.violations[0].error_type == type(events[first].result).__name__
    assert attempt.violations[0].policy is case.config.policy
    assert outcome.policy is case.config.policy
    contract = [v for v in outcome.violations if v.phase is not Phase.RESULT]
    assert contract[-1] == attempt.violations[0]  # nothing was checked after it
    assert len(trace.generates_of(generate.phase)) == generate.attempt <= budget(
        case, generate.phase)


@PROPERTY
@given(cases(policies=OBSERVING, overrides=OBSERVING_OVERRIDES), DRIVERS)
def test_forward_once_observing(case: Case, driver: str) -> None:
    """forward-once-observing: when the contract's policy and every predicate's effective
    policy are ignore or observe, forward runs exactly once whatever the hooks and the
    engine do, raising included; the call then returns forward's value or raises forward's
    own exception, or ResultTypeError."""
    trace, _ = run(case, driver)
    forwards = trace.of("forward")
    assert len(forwards) == 1
    forward = forwards[0]
    if forward.raised:
        assert trace.error is forward.result
    elif trace.error is not None:
        assert isinstance(trace.error, ResultTypeError)
    else:
        assert trace.value is forward.result


@PROPERTY
@given(cases(policies=ENFORCING, overrides=MANY_QUICK), DRIVERS)
def test_enforce_raises_on_failure(case: Case, driver: str) -> None:
    """enforce-raises-on-failure: a contract that fails with deciding policy enforce or
    quick_enforce raises ContractViolationError carrying the outcome (success False, that
    policy), and forward does not run; no other call raises a bare ContractViolationError."""
    trace, exp = run(case, driver)
    error = trace.error
    bare = isinstance(error, ContractViolationError) and not isinstance(error, ResultTypeError)
    if exp.deciding in (Policy.ENFORCE, Policy.QUICK_ENFORCE):
        assert bare
        assert isinstance(error, ContractViolationError)
        assert error.outcome is not None
        assert error.outcome.success is False
        assert error.outcome.result is None
        assert error.outcome.policy is exp.deciding
        assert trace.of("forward") == []
        assert error.violations == error.outcome.violations != ()
        if case.config.retry.graceful:
            assert error.outcome.exception is None
        else:
            assert error.outcome.exception is error
    else:
        assert not bare
        assert len(trace.of("forward")) == 1


@PROPERTY
@given(cases(**FRIENDLY), DRIVERS)
def test_forward_once_on_success(case: Case, driver: str) -> None:
    """forward-once-on-success: when the contract succeeds, forward runs exactly once,
    under every policy, with an outcome that says so (success, result, the contract's
    policy); it never runs before the contract is decided."""
    trace, exp = run(case, driver)
    outcome = trace.final_outcome
    assert (outcome is not None and outcome.success) == exp.success
    if not exp.success:
        return
    forwards = trace.of("forward")
    assert len(forwards) == 1
    assert trace.events.index(forwards[0]) > trace.events.index(trace.of("generate")[-1])
    given_outcome = forwards[0].args[1]
    assert isinstance(given_outcome, Outcome)
    assert given_outcome.success is True
    assert given_outcome.policy is case.config.policy
    assert given_outcome.result is not None
    assert given_outcome.exception is None


@PROPERTY
@given(cases(**FRIENDLY, post_count=SOME), DRIVERS)
def test_success_sound(case: Case, driver: str) -> None:
    """success-sound: on success the result is what the output check returned for the last
    engine answer, and every non-ignored post-condition was evaluated on (result, input
    used) and passed; the script agrees that it passes."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None or not outcome.success:
        return
    used = outcome.input_used
    last = trace.of("generate")[-1]
    assert last.args[0].phase is Phase.POST
    assert not last.raised
    raw = last.result.output  # type: ignore[attr-defined]
    checks = [e for e in trace.of("check_output") if e.args[0] == raw]
    assert len(checks) == 1
    assert checks[0].args[1] is used
    assert not checks[0].raised
    assert checks[0].result is outcome.result
    evaluated = {e.args[1]: e for e in trace.of("pred") if e.args[2] is outcome.result}
    for index, spec in enumerate(case.shape.post):
        if effective(case, spec) is Policy.IGNORE:
            assert spec.id not in evaluated
            continue
        event = evaluated[spec.id]
        assert event.args[3] is used
        assert not pred_failed(event)
        scripted = case.behaviour.post[index].on(outcome.result[2])  # type: ignore[index]
        assert isinstance(scripted, Returns) and scripted.passes
    assert outcome.attempts[-1].violations == ()


@PROPERTY
@given(st.one_of(cases(**{**FRIENDLY, "act": TRANSFORMING}, has_act=ALWAYS), cases()), DRIVERS)
def test_forward_input(case: Case, driver: str) -> None:
    """forward-input: forward receives the post-act input (act's very value) when the
    contract succeeds, and the original input when it fails: the input check's value when
    that check passed, the caller's value otherwise (never a repaired input)."""
    trace, exp = run(case, driver)
    forwards = trace.of("forward")
    if not forwards:
        return
    given_input, given_outcome = forwards[0].args
    assert isinstance(given_outcome, Outcome)
    assert given_input is given_outcome.input_used
    assert given_outcome.original_input == raw_input(trace.tag)
    first_check = trace.of("check_input")[0]
    if given_outcome.success:
        acts = trace.of("act")
        if acts:
            assert given_input is acts[0].result
        else:  # the accepted input: the caller's typed value or a repaired one
            accepted = [e.result for e in trace.of("check_input") if not e.raised]
            assert any(given_input is value for value in accepted)
        assert given_input == exp.forward_outcome.input_used  # type: ignore[union-attr]
    elif first_check.raised:
        assert given_input == raw_input(trace.tag)
    else:
        assert given_input is first_check.result


@PROPERTY
@given(cases(overrides=MANY_IGNORED), DRIVERS)
def test_ignored_never_evaluated(case: Case, driver: str) -> None:
    """ignored-never-evaluated: a predicate whose effective policy is ignore is never
    called; under ignore without overrides no predicate is; every other pre-condition is
    evaluated on the caller's typed input."""
    trace, _ = run(case, driver)
    for event in trace.of("pred"):
        assert effective(case, spec_of(case, event.args[1])) is not Policy.IGNORE
    specs = (*case.shape.pre, *case.shape.post)
    if case.config.policy is Policy.IGNORE and all(s.policy is None for s in specs):
        assert trace.of("pred") == []
    first_check = trace.of("check_input")[0]
    if not first_check.raised:
        on_x0 = [e.args[1] for e in trace.of("pred") if e.args[2] is first_check.result]
        expected = [s.id for s in case.shape.pre if effective(case, s) is not Policy.IGNORE]
        assert on_x0 == expected


def _quick_location(outcome: Outcome) -> tuple[Phase, int] | None:
    for v in outcome.violations:
        # a result-check violation comes after the contract (success under quick_enforce)
        if v.policy is Policy.QUICK_ENFORCE and v.phase is not Phase.RESULT:
            return v.phase, v.attempt
    return None


@PROPERTY
@given(cases(overrides=MANY_QUICK), DRIVERS)
def test_quick_enforce_stops(case: Case, driver: str) -> None:
    """quick-enforce-stops: a quick_enforce violation ends the contract at once: the call
    raises ContractViolationError (policy quick_enforce), no handler, no forward, no
    further candidate, engine call or sleep after the candidate that had it."""
    trace, exp = run(case, driver)
    outcome = trace.final_outcome
    location = None if outcome is None else _quick_location(outcome)
    assert (location is not None) == exp.quick
    if location is None:
        return
    assert outcome is not None
    error = trace.error
    assert isinstance(error, ContractViolationError)
    assert not isinstance(error, ResultTypeError)
    assert error.outcome is outcome
    assert outcome.policy is Policy.QUICK_ENFORCE
    assert trace.of("on_violation", "forward", "check_result") == []
    phase, attempt = location
    last = outcome.violations[-1]
    assert (last.phase, last.attempt) == location  # nothing was checked after it
    generates = trace.generates
    if phase in (Phase.PRE, Phase.POST) and attempt >= 1:
        assert (generates[-1].phase, generates[-1].attempt) == location
    elif phase in (Phase.INPUT, Phase.PRE):
        assert generates == []
    else:  # act or pre-flight
        assert trace.generates_of(Phase.POST) == []
    effects = trace.of("generate", "sleep")
    assert not effects or effects[-1].hook == "generate"
    # after the quick violation's own checks, the trace ends: no hook of a later step
    tail = trace.events[trace.events.index(effects[-1]) + 1:] if effects else trace.events
    assert {e.hook for e in tail} <= {"check_input", "check_output", "pred", "act", "preflight"}


def _stage_history(outcome: Outcome, phase: Phase, upto: int) -> list[tuple[Violation, ...]]:
    """V_0 (pre only), V_1, ..., V_{upto-1}: violations of the stage's checked candidates."""
    first = 0 if phase is Phase.PRE else 1
    return [tuple(located(outcome, phase, j)) for j in range(first, upto)]


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=MOSTLY, pre_count=SOME, retry=RETRYING, policies=CHECKING),
       DRIVERS)
def test_feedback_exact(case: Case, driver: str) -> None:
    """feedback-exact: engine call n of a stage receives exactly the violations of the
    latest checked candidate (post call 1: none), or with accumulate_errors those of every
    earlier candidate of the stage, in order; the attempt records the same feedback."""
    trace, exp = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None:
        return
    attempts = {(a.phase, a.number): a for a in outcome.attempts}
    for generate in trace.generates:
        history = _stage_history(outcome, generate.phase, generate.attempt)
        if case.config.accumulate_errors:
            expected = tuple(v for past in history for v in past)
        else:
            expected = history[-1] if history else ()
        assert generate.feedback == expected
        assert attempts[generate.phase, generate.attempt].feedback == generate.feedback
        if generate.attempt > 1 or generate.phase is Phase.PRE:
            assert generate.feedback != ()  # a failed candidate always says why
    expected_generates = [e for e in exp.events if e[0] == "generate"]
    assert [e.view() for e in trace.of("generate")] == expected_generates


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=ALWAYS, pre_count=SEVERAL, post_count=SEVERAL,
             policies=NOT_QUICK), DRIVERS)
def test_no_short_circuit(case: Case, driver: str) -> None:
    """no-short-circuit: every non-ignored predicate of a phase is evaluated, once, in
    order, on every checked candidate (with the input used as context for post-conditions),
    and every failing one is reported with its own message."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    events = trace.events
    for position, event in enumerate(events):
        if event.hook not in ("check_input", "check_output") or event.raised:
            continue
        candidate = event.result
        label = candidate[2]  # type: ignore[index]
        if event.hook == "check_input":
            phase, specs, context = Phase.PRE, case.shape.pre, None
            attempt = 0 if label == "x0" else int(label[3:])
        else:
            phase, specs, context = Phase.POST, case.shape.post, event.args[1]
            attempt = int(label[4:])
        expected = [s.id for s in specs if effective(case, s) is not Policy.IGNORE]
        following = []
        for later in events[position + 1:]:
            if later.hook != "pred":
                break
            following.append(later)
        assert [e.args[1] for e in following] == expected
        for e in following:
            assert e.args[2] is candidate
            assert e.args[3] is context
        failing = [e for e in following if pred_failed(e)]
        assert outcome is not None
        reported = located(outcome, phase, attempt)
        assert [v.predicate for v in reported] == [e.args[1] for e in failing]
        for violation, e in zip(reported, failing, strict=True):
            spec = spec_of(case, e.args[1])
            assert violation.kind is ViolationKind.PREDICATE
            assert violation.family == spec.family
            assert violation.policy is effective(case, spec)
            text = str(e.result) if e.raised else ""
            assert violation.message == (text or spec.message)


@PROPERTY
@given(cases(preflight=UNSAT, input_check=PASSING_INPUT, pre_count=NO_PREDICATES,
             act=ACT_PASSING), DRIVERS)
def test_preflight_unsat_no_generation(case: Case, driver: str) -> None:
    """preflight-unsat-no-generation: an unsatisfiable pre-flight verdict means no post-stage
    engine call and a failed outcome whose last violation is `unsatisfiable` at phase
    preflight with the reason as message; under the ignore policy the hook is skipped."""
    trace, exp = run(case, driver)
    preflights = trace.of("preflight")
    if case.config.policy is Policy.IGNORE:
        assert preflights == []
        return
    reached = any(e[0] == "preflight" for e in exp.events)
    assert len(preflights) == int(reached)
    if not preflights:
        return
    verdict = preflights[0].result
    assert isinstance(verdict, PreflightResult)
    assert trace.generates_of(Phase.POST) == []
    outcome = trace.final_outcome
    assert outcome is not None
    assert outcome.success is False
    assert outcome.preflight == verdict
    contract = [v for v in outcome.violations if v.phase is not Phase.RESULT]
    last = contract[-1]  # the contract's last violation (a result check may follow)
    assert last.kind is ViolationKind.UNSATISFIABLE
    assert (last.phase, last.attempt, last.policy) == (Phase.PREFLIGHT, 0, case.config.policy)
    assert last.message == verdict.reason
    assert trace.events.index(preflights[0]) > max(
        (trace.events.index(e) for e in trace.of("generate")), default=-1)


@PROPERTY
@given(cases(**HOSTILE, retry=WIDE_RETRY, pre_remedy=MOSTLY, policies=NOT_QUICK), DRIVERS)
def test_backoff_bounded(case: Case, driver: str) -> None:
    """backoff-bounded: every backoff delay is at most max_delay + jitter (and >= 0); each is
    base(n) + jitter * u for the n-th retry of its stage, u one draw of the injected random
    source (0 when outside [0, 1]), and the outcome lists exactly the delays slept."""
    trace, _ = run(case, driver)
    retry = case.config.retry
    sleeps = trace.sleeps
    for seconds in sleeps:
        assert 0 <= seconds <= retry.max_delay + retry.jitter
    assert len(trace.draws) == len(sleeps)
    effects = trace.of("generate", "sleep")
    slept = 0
    for i, event in enumerate(effects):
        if event.hook != "sleep":
            continue
        retry_number = effects[i + 1].args[0].attempt - 1
        u = trace.draws[slept]
        slept += 1
        u = u if 0.0 <= u <= 1.0 else 0.0
        expected = base_delay(retry.delay, retry.max_delay, retry.backoff, retry_number)
        assert event.args[0].seconds == expected + retry.jitter * u
    outcome = trace.final_outcome
    if outcome is not None:
        assert list(outcome.delays) == sleeps


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=MOSTLY, retry=RETRYING, policies=NOT_QUICK), DRIVERS)
def test_no_sleep_after_last(case: Case, driver: str) -> None:
    """no-sleep-after-last: a stage sleeps once right before each of its engine calls but the
    first, and never after its last one (nor at the end of the call)."""
    trace, _ = run(case, driver)
    events = trace.events
    for i, event in enumerate(events):
        if event.hook == "sleep":
            assert i + 1 < len(events), "the call ended with a sleep"
            following = events[i + 1]
            assert following.hook == "generate"
            assert following.args[0].attempt >= 2
        if event.hook == "generate":
            attempt = event.args[0].attempt
            slept = i > 0 and events[i - 1].hook == "sleep"
            assert slept == (attempt >= 2)
    for phase in (Phase.PRE, Phase.POST):
        calls = len(trace.generates_of(phase))
        slept = sum(1 for i, e in enumerate(events) if e.hook == "sleep"
                    and events[i + 1].args[0].phase is phase)
        assert slept == max(0, calls - 1)


@PROPERTY
@given(cases(policies=st.sampled_from(ALL_POLICIES), overrides=MANY_QUICK), DRIVERS)
def test_handler_once_per_failure(case: Case, driver: str) -> None:
    """handler-once-per-failure: the handler runs exactly once per failed contract whose
    deciding policy is observe or enforce, with that failed outcome, and never otherwise
    (never on success, ignore or quick_enforce); a raising handler is recorded in
    handler_error and the call goes on."""
    trace, exp = run(case, driver)
    handlers = trace.of("on_violation")
    expected = int(case.shape.handler and not exp.success
                   and exp.deciding in (Policy.OBSERVE, Policy.ENFORCE))
    assert len(handlers) == expected
    if not handlers:
        return
    got = handlers[0].args[0]
    assert isinstance(got, Outcome)
    assert got.success is False
    assert got.policy is exp.deciding
    assert got.handler_error is None
    after = trace.events[trace.events.index(handlers[0]) + 1:]
    assert [e.hook for e in after[:1]] == ([] if exp.deciding is Policy.ENFORCE else ["forward"])
    final = trace.final_outcome
    assert final is not None
    if handlers[0].raised:
        error = handlers[0].result
        assert final.handler_error is not None
        assert type(error).__name__ in final.handler_error
        assert str(error) in final.handler_error
        assert trace.error is not error
    else:
        assert final.handler_error is None
    if exp.deciding is Policy.ENFORCE:
        assert isinstance(trace.error, ContractViolationError)
        assert not isinstance(trace.error, ResultTypeError)
    else:
        assert len(trace.of("forward")) == 1


@PROPERTY
@given(cases(result_check=RESULT_CHECK, forward=st.none()), DRIVERS)
def test_graceful_skips_result_check(case: Case, driver: str) -> None:
    """graceful-skips-result-check: with graceful the result check is never applied and no
    outcome records an exception; without it, it checks forward's value exactly once."""
    trace, _ = run(case, driver)
    outcomes = [e.args[-1] for e in trace.of("forward", "on_violation")]
    if trace.final_outcome is not None:
        outcomes.append(trace.final_outcome)
    forwards = trace.of("forward")
    if case.config.retry.graceful:
        assert trace.of("check_result") == []
        assert not isinstance(trace.error, ResultTypeError)
        for outcome in outcomes:
            assert isinstance(outcome, Outcome)
            assert outcome.exception is None
    elif case.shape.check_result and forwards and not forwards[0].raised:
        checks = trace.of("check_result")
        assert len(checks) == 1
        assert checks[0].args[0] is forwards[0].result
        assert isinstance(trace.error, ResultTypeError) == checks[0].raised


# ================================================================ the whole call vs the oracle


def _assert_matches(trace: Trace, exp: Expected) -> None:
    assert trace.views() == exp.events
    if exp.ending == RETURN:
        assert trace.error is None
        assert trace.value == exp.value
    elif exp.ending == VIOLATION:
        assert type(trace.error) is ContractViolationError
    elif exp.ending == RESULT_TYPE:
        assert isinstance(trace.error, ResultTypeError)
        assert isinstance(trace.error, TypeError)
    else:
        assert exp.ending == FORWARD_RAISED
        assert trace.error is trace.of("forward")[0].result
        assert trace.outcome is None
    if exp.outcome is not None:
        assert trace.outcome is not None
        assert view_outcome(trace.outcome) == exp.outcome


@THOROUGH
@given(MIXED, DRIVERS)
def test_kernel_matches_oracle(case: Case, driver: str) -> None:
    """The kernel does exactly what spec/pipeline.md says: the same hook invocations with the
    same arguments, the same effects, the same outcome, the same ending. Cases that hit a
    known kernel bug (see the xfail tests below) are left to those tests."""
    trace, exp = run(case, driver)
    assume(not exp.known_bugs)
    _assert_matches(trace, exp)


@PROPERTY
@given(MIXED)
def test_async_driver_matches_sync(case: Case) -> None:
    """run_async behaves exactly like run_sync: same hook invocations and effects in the
    same order, same random draws and clock readings, same outcome and ending."""
    sync, asynchronous = execute(case, driver="sync"), execute(case, driver="async")
    assert not sync.anomalies and not asynchronous.anomalies
    assert sync.views() == asynchronous.views()
    assert sync.draws == asynchronous.draws
    assert sync.readings == asynchronous.readings
    assert type(sync.error) is type(asynchronous.error)
    assert sync.value == asynchronous.value
    if sync.outcome is None:
        assert asynchronous.outcome is None
    else:
        assert asynchronous.outcome is not None
        assert view_outcome(sync.outcome) == view_outcome(asynchronous.outcome)
        assert sync.outcome.timings_ns == asynchronous.outcome.timings_ns


@PROPERTY
@given(contract_calls(2, 5))
def test_sequential_calls_do_not_leak(calls: list[Case]) -> None:
    """One Hooks object serving several calls in a row (a contract used repeatedly): each
    call does exactly what its own script gives alone; in particular a failed call never
    shows an earlier call's result (SymbolicAI's contract_result bug)."""
    tags = [f"call{i}" for i in range(len(calls))]
    recorders = {tag: Recorder() for tag in tags}
    behaviours = {tag: case.behaviour for tag, case in zip(tags, calls, strict=True)}
    stray = Recorder()
    hooks = build_hooks(calls[0].shape, behaviours, lambda tag: recorders.get(tag, stray))
    for tag, case in zip(tags, calls, strict=True):
        exp = oracle(case, tag)
        assume(not exp.known_bugs)
        # the engine is per call (it records this call's sleeps); the hooks are shared
        perform = perform_sync(behaviours, lambda t, tag=tag: recorders[tag if t is None else t])
        outcome: Outcome | None = None
        try:
            outcome, _ = run_sync(start(case, tag, hooks, recorders[tag]), perform)
        except ContractViolationError as error:
            outcome = error.outcome
        except Exception as error:  # forward's own exception
            assert exp.ending == FORWARD_RAISED
            assert type(error) is exp.forward_error.cls  # type: ignore[union-attr]
        assert not recorders[tag].anomalies
        assert [e.view() for e in recorders[tag].events] == exp.events
        if exp.outcome is not None:
            assert outcome is not None
            assert view_outcome(outcome) == exp.outcome
    assert not stray.anomalies and not stray.events


# ================================================================ the outcome record (§5)


@PROPERTY
@given(MIXED, DRIVERS)
def test_usage_sums_every_reply(case: Case, driver: str) -> None:
    """Outcome.usage is the sum, key by key, of the usage of every engine answer."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None:
        return
    total: Counter[str] = Counter()
    keys: set[str] = set()
    for event in trace.of("generate"):
        if not event.raised:
            total.update(event.result.usage)  # type: ignore[attr-defined]
            keys.update(event.result.usage)  # type: ignore[attr-defined]
    assert dict(outcome.usage) == {k: total[k] for k in keys}


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=MOSTLY, pre_count=SOME, policies=NOT_QUICK), DRIVERS)
def test_attempts_record_every_engine_call(case: Case, driver: str) -> None:
    """Outcome.attempts has one entry per engine call, in order (pre stage first): its phase
    and number, the raw answer (None when the engine raised), the feedback it was given,
    its violations; `previous` of the next call of the stage is that raw answer."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None:
        return
    events = trace.of("generate")
    assert len(outcome.attempts) == len(events)
    phases = [a.phase for a in outcome.attempts]
    assert phases == sorted(phases, key=lambda p: p is Phase.POST)
    for attempt, event in zip(outcome.attempts, events, strict=True):
        generate = event.args[0]
        assert (attempt.phase, attempt.number) == (generate.phase, generate.attempt)
        assert attempt.feedback == generate.feedback
        if event.raised:
            assert attempt.raw is None
            assert [v.kind for v in attempt.violations] == [ViolationKind.ERROR]
            assert attempt.violations[0].error_type == type(event.result).__name__
        else:
            assert attempt.raw is event.result.output  # type: ignore[attr-defined]
        assert list(attempt.violations) == located(outcome, attempt.phase, attempt.number)
    for i, event in enumerate(events):
        generate = event.args[0]
        if i > 0 and outcome.attempts[i - 1].phase is generate.phase:
            assert generate.previous is outcome.attempts[i - 1].raw
        else:
            assert generate.previous is None


@PROPERTY
@given(cases(), DRIVERS)
def test_outcome_exception(case: Case, driver: str) -> None:
    """Outcome.exception: None on success and under graceful; otherwise a
    ContractViolationError that carries the outcome and describes every violation."""
    trace, _ = run(case, driver)
    outcome = trace.outcome
    if outcome is None:
        return
    if isinstance(trace.error, ResultTypeError):
        assert trace.error.outcome is outcome
        assert outcome.violations[-1].phase is Phase.RESULT
        assert outcome.violations[-1].kind is ViolationKind.TYPE
        return
    if outcome.success or case.config.retry.graceful:
        assert outcome.exception is None
        return
    exception = outcome.exception
    assert isinstance(exception, ContractViolationError)
    assert exception.outcome is outcome
    text = str(exception)
    assert outcome.policy.value in text
    for violation in outcome.violations:
        assert violation.message in text
        if violation.predicate is not None:
            assert violation.predicate in text
    if trace.error is not None:
        assert trace.error is exception


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=MOSTLY), DRIVERS)
def test_violation_messages(case: Case, driver: str) -> None:
    """A predicate that raised gives the exception's text (the predicate's message when
    that text is empty) and the class name in error_type; one that returned a falsy value
    gives the predicate's message and no error_type; a type or error violation names the
    class that was raised and always has a message."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None:
        return
    preds = [e for e in trace.of("pred") if pred_failed(e)]
    reported = [v for v in outcome.violations if v.kind is ViolationKind.PREDICATE]
    assert len(preds) == len(reported)
    for event, violation in zip(preds, reported, strict=True):
        spec = spec_of(case, event.args[1])
        assert violation.predicate == spec.id
        if event.raised:
            assert violation.error_type == type(event.result).__name__
            assert violation.message == (str(event.result) or spec.message)
        else:
            assert violation.error_type is None
            assert violation.message == spec.message
    raised = [e for e in trace.of("check_input", "check_output", "act", "generate") if e.raised]
    others = [v for v in outcome.violations if v.kind in (ViolationKind.TYPE, ViolationKind.ERROR)
              and v.phase is not Phase.RESULT]
    assert len(raised) == len(others)
    for event, violation in zip(raised, others, strict=True):
        assert violation.error_type == type(event.result).__name__
        assert violation.message
        assert str(event.result) in violation.message
        expected_kind = ViolationKind.TYPE if event.hook.startswith("check") else \
            ViolationKind.ERROR
        assert violation.kind is expected_kind


@PROPERTY
@given(cases(**HOSTILE, pre_remedy=MOSTLY), DRIVERS)
def test_trials_count_family_evaluations(case: Case, driver: str) -> None:
    """Outcome.trials: one (family, passed) per family evaluated on each checked candidate,
    passed when all that family's evaluated predicates passed (§3.2)."""
    trace, _ = run(case, driver)
    outcome = trace.final_outcome
    if outcome is None:
        return
    expected: list[tuple[str, bool]] = []
    current: object = object()
    families: dict[str, bool] = {}
    for event in trace.of("pred"):
        if event.args[2] is not current:
            expected.extend(families.items())
            current, families = event.args[2], {}
        family = spec_of(case, event.args[1]).family
        families[family] = families.get(family, True) and not pred_failed(event)
    expected.extend(families.items())
    assert list(outcome.trials) == expected


@PROPERTY
@given(cases(), DRIVERS)
def test_timings_use_the_injected_clock(case: Case, driver: str) -> None:
    """Outcome.clock_marks are readings of the injected clock, one per phase entered, in the
    order of §1 (None marks the end of a call that returned); timings_ns, derived from them,
    has phase names only, is non-negative and sums to the time between first and last."""
    trace, _ = run(case, driver)
    assert trace.readings, "the injected clock was never read"
    outcome = trace.outcome
    if outcome is None:
        return
    marks = list(outcome.clock_marks)
    assert [t for _, t in marks] == trace.readings[:len(marks)]
    phases = [p for p, _ in marks if p is not None]
    order = list(Phase)
    assert phases[0] is Phase.INPUT
    assert phases == sorted(phases, key=order.index)
    assert len(set(phases)) == len(phases)
    ended = trace.returned or isinstance(trace.error, ResultTypeError)  # §3.7 ends the call
    assert (marks[-1][0] is None) == ended
    timings = outcome.timings_ns
    assert set(timings) <= {p.value for p in Phase}
    assert all(v >= 0 for v in timings.values())
    elapsed = trace.readings[-1] - trace.readings[0]
    if ended:
        assert sum(timings.values()) == elapsed
    else:
        assert sum(timings.values()) <= elapsed


_BASE_EXCEPTIONS = st.sampled_from((KeyboardInterrupt, SystemExit, asyncio.CancelledError,
                                    GeneratorExit))
_HOOKS = ("input", "pre", "act", "preflight", "engine", "post", "handler", "check_result",
          "forward")


_EVENT_OF_HOOK = {"input": "check_input", "pre": "pred", "act": "act", "preflight": "preflight",
                  "engine": "generate", "post": "pred", "handler": "on_violation",
                  "check_result": "check_result", "forward": "forward"}


@PROPERTY
@given(cases(), st.sampled_from(_HOOKS), _BASE_EXCEPTIONS, DRIVERS)
def test_base_exceptions_end_the_call(case: Case, hook: str, kind: type[BaseException],
                                      driver: str) -> None:
    """A BaseException that is not an Exception (KeyboardInterrupt, SystemExit,
    cancellation) raised by any hook or the engine is never caught: it ends the call at
    once and reaches the caller unchanged; nothing runs after it (§3)."""
    boom = Raise(kind, ("stop",))  # type: ignore[arg-type]
    b = case.behaviour
    if hook == "input":
        b = replace(b, input_check=boom)
    elif hook in ("pre", "post"):
        b = replace(b, **{hook: tuple(PredScript(boom) for _ in getattr(b, hook))})
    elif hook == "engine":
        b = replace(b, engine_pre=(boom,) * MAX_TRIES, engine_post=(boom,) * MAX_TRIES)
    else:
        b = replace(b, **{hook: boom})
    case = replace(case, behaviour=b)
    # The oracle treats the raise as an ordinary failure; up to the first invocation of the
    # hook it predicts what happens, and that invocation must be the last thing that does.
    expected = oracle(case).events
    name = _EVENT_OF_HOOK[hook]
    phase = {"pre": "pre", "post": "post"}.get(hook)
    reached = [i for i, e in enumerate(expected)
               if e[0] == name and (phase is None or e[1] == phase)]
    rec = Recorder()
    if not reached:
        trace = execute(case, driver=driver, rec=rec)
        assert trace.views() == expected
        return
    with pytest.raises(kind) as info:
        execute(case, driver=driver, rec=rec)
    assert info.value.args == ("stop",)
    assert [e.view() for e in rec.events] == expected[:reached[0] + 1]


# ================================================================ configuration (§2)


@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.just("3"),
                 st.just(None)))
def test_retry_policy_rejects_bad_tries(tries: object) -> None:
    """tries is an integer >= 1: 0, negatives, bools, floats, strings are ValueErrors that
    name the field."""
    assume(not (isinstance(tries, int) and not isinstance(tries, bool) and tries >= 1))
    with pytest.raises(ValueError, match="tries"):
        RetryPolicy(tries=tries)  # type: ignore[arg-type]


@given(st.sampled_from(("delay", "max_delay", "jitter", "backoff")),
       st.one_of(st.floats(max_value=-1e-300), st.just(math.nan), st.just(math.inf),
                 st.just(-math.inf), st.just(True), st.just("1"), st.just(None),
                 st.integers(max_value=-1)))
def test_retry_policy_rejects_bad_numbers(name: str, value: object) -> None:
    """delay, max_delay, jitter, backoff are finite numbers >= 0: negatives, nan, inf,
    bools and non-numbers are ValueErrors that name the field."""
    with pytest.raises(ValueError, match=name):
        RetryPolicy(**{name: value})  # type: ignore[arg-type]


def test_retry_policy_rejects_non_bool_graceful() -> None:
    """graceful is True or False."""
    with pytest.raises(ValueError, match="graceful"):
        RetryPolicy(graceful="yes")  # type: ignore[arg-type]


@given(retry_policies(), st.sets(st.sampled_from(("tries", "delay", "max_delay", "jitter",
                                                  "backoff", "graceful"))))
def test_retry_policy_from_partial_mapping(full: RetryPolicy, keys: set[str]) -> None:
    """A partial remedy_retry_params mapping takes the defaults for the missing keys (in
    particular without `graceful`, SymbolicAI's KeyError)."""
    params = {k: getattr(full, k) for k in keys}
    built = RetryPolicy.from_mapping(params)
    default = RetryPolicy()
    for name in ("tries", "delay", "max_delay", "jitter", "backoff", "graceful"):
        assert getattr(built, name) == getattr(full if name in keys else default, name)


def test_retry_policy_defaults_are_the_spec() -> None:
    """§2.1 defaults: tries 5, delay 0.5, max_delay 15, jitter 0.1, backoff 2, not graceful."""
    assert RetryPolicy() == RetryPolicy(5, 0.5, 15, 0.1, 2, False)
    assert RetryPolicy.from_mapping({}) == RetryPolicy()
    config = ContractConfig()
    assert (config.pre_remedy, config.post_remedy, config.accumulate_errors, config.policy) == \
        (False, True, False, Policy.OBSERVE)


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.integers(1, 3), min_size=1))
def test_retry_policy_from_mapping_rejects_unknown_keys(extra: dict[str, int]) -> None:
    """An unknown remedy_retry_params key is a ValueError naming it and the valid keys."""
    known = {"tries", "delay", "max_delay", "jitter", "backoff", "graceful"}
    assume(set(extra) - known)
    unknown = sorted(set(extra) - known)[0]
    with pytest.raises(ValueError) as info:
        RetryPolicy.from_mapping(extra)
    assert repr(unknown) in str(info.value)
    assert "max_delay" in str(info.value)


@given(st.text(max_size=15))
def test_policy_parse(name: str) -> None:
    """Policy.parse accepts a Policy or its exact name; anything else is a ValueError
    listing every valid name."""
    valid = {p.value: p for p in Policy}
    for policy in Policy:
        assert Policy.parse(policy) is policy
        assert Policy.parse(policy.value) is policy
    if name in valid:
        assert Policy.parse(name) is valid[name]
        return
    with pytest.raises(ValueError) as info:
        Policy.parse(name)
    for value in valid:
        assert repr(value) in str(info.value)


def test_policy_strictness_order() -> None:
    """ignore < observe < enforce < quick_enforce (§2.2)."""
    order = [Policy.IGNORE, Policy.OBSERVE, Policy.ENFORCE, Policy.QUICK_ENFORCE]
    assert sorted(Policy, key=lambda p: p.rank) == order


def test_contract_config_rejects_bad_values() -> None:
    """Switches are booleans and the policy a Policy (a name must go through Policy.parse)."""
    for name in ("pre_remedy", "post_remedy", "accumulate_errors"):
        with pytest.raises(ValueError, match=name):
            ContractConfig(**{name: 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Policy"):
        ContractConfig(policy="enforce")  # type: ignore[arg-type]


# ============================================ kernel bugs these tests found (now fixed)


def _minimal(**behaviour: object) -> Behaviour:
    return replace(Behaviour(), **behaviour)  # type: ignore[arg-type]


@PROPERTY
@given(cases(policies=st.sampled_from((Policy.IGNORE, Policy.ENFORCE, Policy.QUICK_ENFORCE)),
             overrides=st.just(Policy.OBSERVE), retry=STRICT_RETRY, forward=st.none()))
def test_result_violation_records_contract_policy(case: Case) -> None:
    """§2.2/§3.7: the `type` violation at phase result records the contract's policy, also
    when a failed contract's deciding policy (a predicate override) differs from it."""
    case = replace(case, shape=replace(case.shape, check_result=True),
                   behaviour=replace(case.behaviour, check_result=Raise(TypeError, ("bad",))))
    trace, _ = run(case)
    assume(isinstance(trace.error, ResultTypeError))
    assert trace.error.outcome is not None
    assert trace.error.outcome.violations[-1].policy is case.config.policy


def test_result_violation_policy_minimal() -> None:
    """The minimal script of the bug above: the deciding policy (observe, from the
    override) differs from the contract's (enforce); the result violation records the
    contract's."""
    shape = Shape(post=(PredSpec("post0", "fam_a", "must hold", Policy.OBSERVE),),
                  check_result=True)
    behaviour = _minimal(post=(PredScript(Returns(False)),), check_result=Raise(TypeError))
    case = Case(shape, behaviour, ContractConfig(post_remedy=False, policy=Policy.ENFORCE))
    trace, exp = run(case)
    assert exp.known_bugs == set()
    assert isinstance(trace.error, ResultTypeError)
    assert trace.error.outcome is not None
    assert trace.error.outcome.policy is Policy.OBSERVE
    assert trace.error.outcome.violations[-1].policy is Policy.ENFORCE


_MALFORMED = st.builds(Garbage, st.builds(
    PreflightResult, st.sampled_from(("unsatisfiable", "satisfiable", None, 3)),
    st.sampled_from(("bogus", ""))))


@PROPERTY
@given(cases(preflight=_MALFORMED, input_check=PASSING_INPUT, pre_count=NO_PREDICATES,
             policies=ENFORCING))
def test_malformed_preflight_counts_as_unknown(case: Case) -> None:
    """§3.4: a pre-flight hook that returns anything but a verdict counts as `unknown`, and
    the reason says why: a PreflightResult carrying a string is not a verdict."""
    trace, _ = run(case)
    assume(any(e.hook == "preflight" for e in trace.events))
    outcome = trace.final_outcome
    assert outcome is not None
    assert outcome.preflight is not None
    assert outcome.preflight.verdict is Verdict.UNKNOWN
    assert outcome.preflight.reason


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_forward_stop_iteration_reaches_caller_unchanged(driver: str) -> None:
    """§3.6: an exception raised by forward itself reaches the caller unchanged, including
    StopIteration (an ordinary Exception subclass); through the async driver Python
    itself turns it into RuntimeError (a StopIteration cannot leave a coroutine)."""
    case = Case(Shape(), _minimal(forward=Raise(StopIteration, ("done",))), ContractConfig())
    trace = execute(case, driver=driver)
    raised = trace.of("forward")[0].result
    if driver == "sync":
        assert trace.error is raised
    else:
        assert isinstance(trace.error, RuntimeError) and trace.error.__cause__ is raised


@pytest.mark.parametrize("policy", [Policy.OBSERVE, Policy.ENFORCE])
def test_handler_sees_exception_with_outcome(policy: Policy) -> None:
    """§5: every ContractViolationError carries one Outcome; the one the handler receives in
    outcome.exception (e.g. to log or re-raise it) should already carry it."""
    seen: list[object] = []

    def handler(outcome: Outcome) -> None:
        assert outcome.exception is not None
        seen.append(outcome.exception.outcome)  # read now, while the handler runs

    hooks = Hooks(check_input=lambda x: x, check_output=lambda raw, used: raw,
                  forward=lambda x, outcome: x, on_violation=handler,
                  post_conditions=(Predicate("p", lambda v, c: False, "no", "fam"),))
    config = ContractConfig(post_remedy=False, policy=policy)
    try:
        run_sync(run_call("x", config, hooks), lambda effect: Reply("answer"))
    except ContractViolationError:
        pass
    assert len(seen) == 1
    assert seen[0] is not None


def test_result_type_error_minimal() -> None:
    """§3.7: forward's value fails check_result on a failed observe contract: ResultTypeError
    whose outcome adds a `type` violation at phase result (policy observe, the contract's),
    after the handler ran once."""
    shape = Shape(post=(PredSpec("post0", "fam_a", "m", None),), check_result=True,
                  handler=True)
    case = Case(shape, _minimal(post=(PredScript(Returns(False)),),
                                check_result=Raise(TypeError)),
                ContractConfig(post_remedy=False, policy=Policy.OBSERVE))
    exp = oracle(case)
    assert exp.known_bugs == set()
    trace, _ = run(case)
    _assert_matches(trace, exp)
    assert [e.hook for e in trace.events] == [
        "check_input", "generate", "check_output", "pred", "on_violation", "forward",
        "check_result"]
    assert isinstance(trace.error, ResultTypeError)
    assert trace.error.outcome is not None
    bad = trace.error.outcome.violations[-1]
    assert (bad.kind, bad.phase, bad.policy) == (ViolationKind.TYPE, Phase.RESULT,
                                                 Policy.OBSERVE)


def test_minimal_happy_path() -> None:
    """The simplest call: one engine answer, accepted; forward gets the typed input and an
    outcome with the result and the answer's usage."""
    case = Case(Shape(), _minimal(engine_post=(Answer(usage=(("prompt_tokens", 3),)),) * 6),
                ContractConfig())
    trace, _ = run(case)
    assert trace.outcome is not None
    assert trace.outcome.usage == {"prompt_tokens": 3}
    assert trace.outcome.result == ("out", "t", "post1")
    assert trace.value == ("fwd", "t", ("in", "t", "x0"))
    assert [e.hook for e in trace.events] == ["check_input", "generate", "check_output",
                                              "forward"]
