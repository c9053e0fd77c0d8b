"""One contracted call, phase by phase (spec/pipeline.md §3-§4).

    input -> pre (+ pre-remedy) -> act -> pre-flight -> generate + post (+ post-remedy)
          -> forward -> result type check

``run_call`` executes the phases through injected hooks and yields effects
(``Generate``, ``Sleep``) to its driver. Every exception a hook raises becomes a
``Violation``; the contract's policy then decides between the fallback
``forward`` and a ``ContractViolationError``. All per-call state lives in local
variables, so concurrent calls never see each other's outcome.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from .backoff import backoff_delay
from .config import ContractConfig, Policy, strictest
from .effects import Effect, FatalEngineError, ForwardRaised, Generate, Reply, Sleep
from .outcome import (
    Attempt,
    ContractViolationError,
    Outcome,
    Phase,
    PreflightResult,
    ResultTypeError,
    Verdict,
    Violation,
    ViolationKind,
    exception_text,
)
from .predicate import Predicate, evaluate

Call = Generator[Effect, object, tuple[Outcome, object]]


@dataclass(frozen=True, slots=True)
class Hooks:
    """The user's side of a call. A check hook returns the checked value or raises.

    ``check_input(raw)``: input type check (also applied to repaired inputs).
    ``check_output(raw, input)``: parse and type-check an engine answer.
    ``forward(input, outcome)``: the fallback that produces the call's value.
    ``act(input)``: optional transformation between pre and generation.
    ``preflight(input)``: optional satisfiability check of the post-conditions.
    ``check_result(value)``: optional final type check of ``forward``'s value.
    ``on_violation(outcome)``: the handler, called once per failed call.
    """

    check_input: Callable[[object], object]
    check_output: Callable[[object, object], object]
    forward: Callable[[object, Outcome], object]
    pre_conditions: Sequence[Predicate] = ()
    post_conditions: Sequence[Predicate] = ()
    act: Callable[[object], object] | None = None
    preflight: Callable[[object], PreflightResult] | None = None
    check_result: Callable[[object], object] | None = None
    on_violation: Callable[[Outcome], object] | None = None


class _Failed(Exception):
    """Internal: the contract failed; ``policy`` decides what happens next."""

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy.value)
        self.policy = policy


class _Record:
    """Mutable per-call bookkeeping; becomes the immutable ``Outcome``."""

    __slots__ = ("attempts", "clock", "delays", "marks", "preflight", "trials", "usage",
                 "violations")

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.violations: list[Violation] = []
        self.attempts: list[Attempt] = []
        self.trials: list[tuple[str, bool]] = []
        self.delays: list[float] = []
        self.usage: dict[str, int] = {}
        self.preflight: PreflightResult | None = None
        self.marks: list[tuple[Phase | None, int]] = [(Phase.INPUT, clock())]

    def enter(self, phase: Phase | None) -> None:
        """Start timing ``phase`` (``None``: the call is over)."""
        self.marks.append((phase, self.clock()))

    def fail(self, violations: tuple[Violation, ...]) -> None:
        """Record violations; a quick_enforce one ends the call at once (spec §2.2)."""
        self.violations.extend(violations)
        if any(v.policy is Policy.QUICK_ENFORCE for v in violations):
            raise _Failed(Policy.QUICK_ENFORCE)

    def outcome(self, success: bool, result: object, original: object, used: object,
                policy: Policy, exception: ContractViolationError | None = None) -> Outcome:
        return Outcome(success, result, original, used, policy, tuple(self.violations),
                       tuple(self.attempts), tuple(self.trials), tuple(self.delays),
                       self.usage, self.marks, self.preflight, exception)


def _hook_violation(kind: ViolationKind, phase: Phase, attempt: int, policy: Policy,
                    error: Exception) -> Violation:
    text = exception_text(error)
    return Violation(kind, phase, text, attempt, policy, error_type=type(error).__name__)


def run_call(
    raw_input: object,
    config: ContractConfig,
    hooks: Hooks,
    *,
    clock: Callable[[], int] = time.perf_counter_ns,
    random: Callable[[], float] = _random.random,
) -> Call:
    """Execute one contracted call (spec §3). Returns ``(outcome, value)`` where
    ``value`` is what ``forward`` returned; raises ``ContractViolationError`` when
    the policy says so. Drive it with ``run_sync`` or ``run_async``."""
    rec = _Record(clock)
    policy = config.policy
    original = raw_input  # what forward gets on failure: the typed input once it is known
    try:
        try:  # §3.1 input type check: no remedy, the value is the caller's
            original = hooks.check_input(raw_input)
        except Exception as error:
            rec.fail((_hook_violation(ViolationKind.TYPE, Phase.INPUT, 0, policy, error),))
            raise _Failed(policy) from None
        rec.enter(Phase.PRE)  # §3.2: candidate 0 is the caller's input
        accepted = original
        first = evaluate(hooks.pre_conditions, original, None, Phase.PRE, 0, policy, rec.trials)
        if first:
            rec.fail(first)
            accepted = yield from _repair(Phase.PRE, original, [first], config, hooks, rec,
                                          random)
        rec.enter(Phase.ACT)
        used = accepted
        if hooks.act is not None:  # §3.3
            try:
                used = hooks.act(accepted)
            except Exception as error:
                rec.fail((_hook_violation(ViolationKind.ERROR, Phase.ACT, 0, policy, error),))
                raise _Failed(policy) from None
        rec.enter(Phase.PREFLIGHT)
        if hooks.preflight is not None and policy is not Policy.IGNORE:  # §3.4
            rec.preflight = _preflight(hooks.preflight, used)
            if rec.preflight.verdict is Verdict.UNSATISFIABLE:
                message = rec.preflight.reason or "no output can satisfy the post-conditions"
                rec.fail((Violation(ViolationKind.UNSATISFIABLE, Phase.PREFLIGHT, message, 0,
                                    policy),))
                raise _Failed(policy)
        rec.enter(Phase.POST)  # §3.5: every candidate comes from the engine
        result = yield from _repair(Phase.POST, used, [], config, hooks, rec, random)
    except _Failed as failed:
        return _fall_back(raw_input, original, failed.policy, config, hooks, rec)
    rec.enter(Phase.FORWARD)
    outcome = rec.outcome(True, result, raw_input, used, policy)
    return outcome, _forward(used, outcome, config, hooks, rec)


def _preflight(check: Callable[[object], PreflightResult], used: object) -> PreflightResult:
    """Ask the pre-flight hook; a crash or a malformed answer means UNKNOWN (§3.4)."""
    try:
        answer = check(used)
    except Exception as error:
        return PreflightResult(Verdict.UNKNOWN, f"pre-flight check raised "
                                                f"{type(error).__name__}: "
                                                f"{exception_text(error)}")
    if not (isinstance(answer, PreflightResult) and isinstance(answer.verdict, Verdict)):
        return PreflightResult(Verdict.UNKNOWN, f"pre-flight check returned a "
                                                f"{type(answer).__name__}, not a verdict")
    return answer


def _repair(phase: Phase, subject: object, history: list[tuple[Violation, ...]],
            config: ContractConfig, hooks: Hooks, rec: _Record,
            random: Callable[[], float]) -> Generator[Effect, object, object]:
    """The bounded repair loop shared by PRE and POST (spec §4).

    ``history`` holds the violations of the candidates checked so far (PRE: the
    caller's input; POST: none). Each engine call proposes a candidate: PRE a
    repaired input (``tries`` calls, only with pre-remedy), POST an output
    (``tries`` calls with post-remedy, else exactly 1). The first candidate with no
    violation is the stage's result; when the budget is spent the contract fails.
    """
    contract_policy = config.policy
    if phase is Phase.PRE:
        budget, predicates = config.pre_remedy_budget, hooks.pre_conditions
    else:
        budget, predicates = config.generation_budget, hooks.post_conditions
    previous: object = None
    for call in range(1, budget + 1):
        if call > 1:  # §4.3: sleep before every engine call of a stage but its first
            seconds = backoff_delay(config.retry, call - 1, random())
            rec.delays.append(seconds)
            yield Sleep(seconds)
        if config.accumulate_errors:  # §4.2
            feedback = tuple(v for past in history for v in past)
        else:
            feedback = history[-1] if history else ()
        raw: object = None
        candidate: object = None
        typed = fatal = False
        try:
            reply = yield Generate(phase, call, subject, feedback, previous)
        except Exception as error:  # the engine failed: this attempt has no candidate
            failures: tuple[Violation, ...] = (
                _hook_violation(ViolationKind.ERROR, phase, call, contract_policy, error),)
            fatal = isinstance(error, FatalEngineError)
        else:
            if isinstance(reply, Reply):
                raw = reply.output
                for key, amount in reply.usage.items():
                    rec.usage[key] = rec.usage.get(key, 0) + amount
            else:
                raw = reply
            try:
                if phase is Phase.PRE:
                    candidate = hooks.check_input(raw)
                else:
                    candidate = hooks.check_output(raw, subject)
            except Exception as error:
                failures = (_hook_violation(ViolationKind.TYPE, phase, call, contract_policy,
                                            error),)
            else:
                typed = True
                context = None if phase is Phase.PRE else subject
                failures = evaluate(predicates, candidate, context, phase, call, contract_policy,
                                    rec.trials)
        rec.attempts.append(Attempt(phase, call, raw, feedback, failures))
        if not failures:
            return candidate
        rec.fail(failures)
        history.append(failures)
        previous = raw
        if phase is Phase.PRE and typed:
            subject = candidate  # keep repairing the latest well-typed input
        if fatal:  # §4.4: retrying cannot help
            break
    raise _Failed(strictest([v.policy for v in history[-1]]))


def _fall_back(raw_input: object, original: object, policy: Policy, config: ContractConfig,
               hooks: Hooks, rec: _Record) -> tuple[Outcome, object]:
    """A failed contract (spec §3.6): handler, then raise or run ``forward`` on the
    original input, as ``policy`` says."""
    rec.enter(Phase.FORWARD)
    error = ContractViolationError(_failure_message(rec.violations, policy))
    outcome = rec.outcome(False, None, raw_input, original, policy,
                          None if config.retry.graceful else error)
    error.outcome = outcome
    if policy in (Policy.OBSERVE, Policy.ENFORCE) and hooks.on_violation is not None:
        try:
            hooks.on_violation(outcome)
        except Exception as failure:  # a broken handler must not cancel the fallback
            outcome = outcome._replace(
                handler_error=f"{type(failure).__name__}: {exception_text(failure)}")
            error.outcome = outcome
    if policy in (Policy.ENFORCE, Policy.QUICK_ENFORCE):
        raise error
    return outcome, _forward(original, outcome, config, hooks, rec)


def _forward(used: object, outcome: Outcome, config: ContractConfig, hooks: Hooks,
             rec: _Record) -> object:
    """Run ``forward`` exactly once, then the final result type check (spec §3.7).
    An exception raised by ``forward`` itself reaches the caller unchanged."""
    try:
        value = hooks.forward(used, outcome)
    except StopIteration as stop:  # would become RuntimeError inside this generator
        raise ForwardRaised(stop) from None
    rec.enter(Phase.RESULT)
    try:
        if hooks.check_result is not None and not config.retry.graceful:
            try:
                hooks.check_result(value)
            except Exception as error:
                bad = _hook_violation(ViolationKind.TYPE, Phase.RESULT, 0, config.policy, error)
                checked = outcome._replace(violations=(*outcome.violations, bad))
                cause = ""
                if not outcome.success and outcome.violations:  # say what failed first
                    first = outcome.violations[0]
                    cause = (f". The contract had failed before forward ran, so forward "
                             f"got the fallback case (contract_successful is False); first "
                             f"violation: [{first.phase.value}] {first.kind.value}: "
                             f"{first.message}")
                raise ResultTypeError(
                    f"forward returned a value of the wrong type: {bad.message}{cause}", checked
                ) from error
    finally:
        rec.enter(None)
    return value


def _failure_message(violations: Sequence[Violation], policy: Policy) -> str:
    lines = [f"contract failed under policy {policy.value!r} with "
             f"{len(violations)} violation(s):"]
    lines.extend("  " + v.describe() for v in violations)
    return "\n".join(lines)
