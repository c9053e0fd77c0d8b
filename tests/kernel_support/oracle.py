"""spec/pipeline.md, re-executed on a case: the expected behaviour of one call.

Written from the spec's text, not from ``kernel/``: it imports from the kernel only
the data types it names (``Policy``, ``Phase``, ``Verdict``...). Given a case it
predicts every hook invocation and effect, in order, with its arguments; the final
outcome; and how the call ends. Where the spec leaves a choice open, the comment
says which reading is taken (the report of issue 2 lists them).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from hoare.kernel import (
    FatalEngineError,
    Phase,
    Policy,
    PreflightResult,
    Reply,
    Verdict,
    ViolationKind,
)

from .harness import ANY_TEXT, AttemptView, OutcomeView, ViolationView, view_result
from .scripts import (
    Case,
    Garbage,
    PredSpec,
    Raise,
    act_semantics,
    check_input_semantics,
    check_output_semantics,
    engine_semantics,
    forward_semantics,
    label_of,
    raw_input,
)

_RANK = {Policy.IGNORE: 0, Policy.OBSERVE: 1, Policy.ENFORCE: 2, Policy.QUICK_ENFORCE: 3}

# Endings of a call.
RETURN = "return"  # forward's value is returned
VIOLATION = "violation"  # ContractViolationError (enforce / quick_enforce)
RESULT_TYPE = "result_type"  # ResultTypeError from check_result
FORWARD_RAISED = "forward_raised"  # forward's own exception


@dataclass
class Expected:
    """What the spec says one call does."""

    events: list[tuple[object, ...]] = field(default_factory=list)
    outcome: OutcomeView | None = None  # returned or raised; None when forward raised
    forward_outcome: OutcomeView | None = None  # what forward receives, if it runs
    ending: str = RETURN
    value: object = None
    forward_error: Raise | None = None
    reached_post: bool = False
    success: bool = False
    deciding: Policy | None = None  # of a failed contract
    quick: bool = False  # a quick_enforce violation ended the contract
    exhausted: set[Phase] = field(default_factory=set)  # stages whose budget was spent
    fatal: Phase | None = None  # the stage a FatalEngineError ended
    known_bugs: set[str] = field(default_factory=set)

    def count(self, hook: str) -> int:
        return sum(1 for e in self.events if e[0] == hook)


class _Failed(Exception):
    def __init__(self, policy: Policy) -> None:
        super().__init__(policy.value)
        self.policy = policy


def strictest(policies: list[Policy]) -> Policy:
    return max(policies, key=_RANK.__getitem__)


def base_delay(delay: float, max_delay: float, backoff: float, n: int) -> float:
    """§4.3: base(1) = min(delay, max_delay), base(n+1) = min(max_delay, base(n) * backoff)."""
    value = min(delay, max_delay)
    for _ in range(n - 1):
        value = min(max_delay, value * backoff)
    return value


class _Run:
    def __init__(self, case: Case, tag: object) -> None:
        self.case, self.tag = case, tag
        self.shape, self.beh, self.config = case.shape, case.behaviour, case.config
        self.P = case.config.policy
        self.retry = case.config.retry
        self.draws = itertools.cycle(case.randoms)
        self.exp = Expected()
        self.violations: list[ViolationView] = []
        self.attempts: list[AttemptView] = []
        self.trials: list[tuple[str, bool]] = []
        self.delays: list[float] = []
        self.usage: dict[str, int] = {}
        self.preflight: tuple[Verdict, object] | None = None

    # ------------------------------------------------------------------ helpers

    def log(self, *event: object) -> None:
        self.exp.events.append(event)

    def record(self, violations: list[ViolationView]) -> None:
        """Violations occur; one whose policy is quick_enforce ends the contract (§2.2)."""
        self.violations.extend(violations)
        if any(v.policy is Policy.QUICK_ENFORCE for v in violations):
            self.exp.quick = True
            raise _Failed(Policy.QUICK_ENFORCE)

    def effective(self, spec: PredSpec) -> Policy:
        return spec.policy if spec.policy is not None else self.P

    def evaluate(self, phase: Phase, value: object, context: object,
                 attempt: int) -> list[ViolationView]:
        """§3.2: every non-ignored predicate, no short-circuit; one trial per family."""
        specs = self.shape.pre if phase is Phase.PRE else self.shape.post
        scripts = self.beh.pre if phase is Phase.PRE else self.beh.post
        failures: list[ViolationView] = []
        families: dict[str, bool] = {}
        for spec, script in zip(specs, scripts, strict=True):
            policy = self.effective(spec)
            if policy is Policy.IGNORE:
                continue
            behaviour = script.on(label_of(value))
            if isinstance(behaviour, Raise):
                self.log("pred", phase.value, spec.id, value, context, view_result(behaviour))
                passed = False
                # The exception's text; the spec does not say what an empty text gives:
                # the kernel (and this oracle) fall back on the predicate's message.
                message: str = behaviour.text or spec.message
                error_type: str | None = behaviour.name
            else:
                self.log("pred", phase.value, spec.id, value, context, ("ok", behaviour.value))
                passed = behaviour.passes
                message, error_type = spec.message, None
            families[spec.family] = families.get(spec.family, True) and passed
            if not passed:
                failures.append(ViolationView(ViolationKind.PREDICATE, phase, attempt, policy,
                                              spec.id, spec.family, message, error_type))
        self.trials.extend(families.items())
        return failures

    def hook_violation(self, kind: ViolationKind, phase: Phase, attempt: int) -> ViolationView:
        """A type/error violation: it records the contract's policy (§2.2)."""
        return ViolationView(kind, phase, attempt, self.P)

    def delay(self, retry_number: int) -> float:
        u = next(self.draws)
        if not 0.0 <= u <= 1.0:
            u = 0.0
        r = self.retry
        return base_delay(r.delay, r.max_delay, r.backoff, retry_number) + r.jitter * u

    def outcome(self, success: bool, result: object, used: object, policy: Policy,
                has_exception: bool) -> OutcomeView:
        return OutcomeView(success, result, raw_input(self.tag), used, policy,
                           tuple(self.violations), tuple(self.attempts), tuple(self.trials),
                           tuple(self.delays), dict(self.usage), self.preflight, has_exception,
                           False)

    # ------------------------------------------------------------------ phases

    def run(self) -> Expected:
        x_raw = raw_input(self.tag)
        original: object = x_raw  # §3.1: x0 once the input check passed, else x_raw
        try:
            checked = check_input_semantics(self.beh, x_raw)
            self.log("check_input", x_raw, view_result(checked))
            if isinstance(checked, Raise):
                self.record([self.hook_violation(ViolationKind.TYPE, Phase.INPUT, 0)])
                raise _Failed(self.P)
            original = checked
            accepted = self.stage(Phase.PRE, checked)
            used = accepted
            if self.shape.act:  # §3.3
                acted = act_semantics(self.beh, accepted)
                self.log("act", accepted, view_result(acted))
                if isinstance(acted, Raise):
                    self.record([self.hook_violation(ViolationKind.ERROR, Phase.ACT, 0)])
                    raise _Failed(self.P)
                used = acted
            if self.shape.preflight and self.P is not Policy.IGNORE:  # §3.4
                self.run_preflight(used)
            self.exp.reached_post = True
            result = self.stage(Phase.POST, used)
        except _Failed as failed:
            self.fail(original, failed.policy)
        else:
            self.succeed(used, result)
        return self.exp

    def run_preflight(self, used: object) -> None:
        answer = self.beh.preflight
        returned = answer.value if isinstance(answer, Garbage) else answer
        self.log("preflight", used, view_result(returned))
        if isinstance(returned, PreflightResult) and isinstance(returned.verdict, Verdict):
            self.preflight = (returned.verdict, returned.reason)
        else:  # raised or returned anything else: unknown, and the reason says why
            self.preflight = (Verdict.UNKNOWN, ANY_TEXT)
        verdict, reason = self.preflight
        if verdict is Verdict.UNSATISFIABLE:
            # "whose message is the reason"; an empty reason is not generated (the spec
            # does not say what it gives; the kernel substitutes a default text).
            message = reason or ANY_TEXT
            self.record([ViolationView(ViolationKind.UNSATISFIABLE, Phase.PREFLIGHT, 0, self.P,
                                       message=message)])
            raise _Failed(self.P)

    def stage(self, phase: Phase, given: object) -> object:
        """§4: the bounded repair loop of the pre or post stage."""
        config = self.config
        history: list[list[ViolationView]] = []  # V_0, V_1, ... of this stage
        if phase is Phase.PRE:
            budget = self.retry.tries if config.pre_remedy else 0
            first = self.evaluate(Phase.PRE, given, None, 0)
            if not first:
                return given
            self.record(first)
            history.append(first)
        else:
            budget = self.retry.tries if config.post_remedy else 1
        subject = given  # pre: the latest well-typed candidate; post: the input used
        previous: object = None
        # Reading taken: an engine call that raised is a "checked candidate" whose
        # violations are its error (it feeds back and decides like any other), and its
        # "raw answer" (``previous`` of the next call) is None.
        for n in range(1, budget + 1):
            if n > 1:
                seconds = self.delay(n - 1)
                self.delays.append(seconds)
                self.log("sleep", seconds)
            if config.accumulate_errors:
                feedback = tuple(v for past in history for v in past)
            else:
                feedback = tuple(history[-1]) if history else ()
            answer = engine_semantics(self.beh, phase.value, n, self.tag)
            if isinstance(answer, Reply):
                event_result: tuple[object, ...] = ("ok", answer.output, dict(answer.usage))
            else:
                event_result = view_result(answer)
            self.log("generate", phase, n, subject, feedback, previous, event_result)
            typed = False
            candidate: object = None
            raw: object = None
            if isinstance(answer, Raise):
                failures = [self.hook_violation(ViolationKind.ERROR, phase, n)]
            else:
                raw = answer.output
                for key, amount in answer.usage.items():
                    self.usage[key] = self.usage.get(key, 0) + amount
                if phase is Phase.PRE:
                    checked = check_input_semantics(self.beh, raw)
                    self.log("check_input", raw, view_result(checked))
                else:
                    checked = check_output_semantics(raw)
                    self.log("check_output", raw, subject, view_result(checked))
                if isinstance(checked, Raise):
                    failures = [self.hook_violation(ViolationKind.TYPE, phase, n)]
                else:
                    typed, candidate = True, checked
                    context = None if phase is Phase.PRE else subject
                    failures = self.evaluate(phase, candidate, context, n)
            self.attempts.append(AttemptView(phase, n, raw, feedback, tuple(failures)))
            if not failures:
                return candidate
            fatal = isinstance(answer, Raise) and issubclass(answer.cls, FatalEngineError)
            if fatal:
                self.exp.fatal = phase
            self.record(failures)  # (under quick_enforce, the fatal error stops it here)
            history.append(failures)
            previous = raw
            if phase is Phase.PRE and typed:
                subject = candidate
            if fatal:  # §4.4: the stage ends at once; the contract fails with its policy
                raise _Failed(self.P)
        self.exp.exhausted.add(phase)
        raise _Failed(strictest([v.policy for v in history[-1]]))

    def succeed(self, used: object, result: object) -> None:
        """§3.6: forward(x_act, outcome) once, whatever the policy."""
        self.exp.success = True
        self.run_forward(used, self.outcome(True, result, used, self.P, False))

    def fail(self, original: object, deciding: Policy) -> None:
        """§3.6: handler once (observe/enforce); raise (enforce) or forward (observe)."""
        self.exp.deciding = deciding
        outcome = self.outcome(False, None, original, deciding, not self.retry.graceful)
        if deciding in (Policy.OBSERVE, Policy.ENFORCE) and self.shape.handler:
            self.log("on_violation", outcome, view_result(self.beh.handler))
            if self.beh.handler is not None:
                outcome = replace(outcome, has_handler_error=True)
        if deciding in (Policy.ENFORCE, Policy.QUICK_ENFORCE):
            self.exp.ending, self.exp.outcome = VIOLATION, outcome
            return
        self.run_forward(original, outcome)

    def run_forward(self, used: object, outcome: OutcomeView) -> None:
        self.exp.forward_outcome = outcome
        value = forward_semantics(self.beh, used)
        self.log("forward", used, outcome, view_result(value))
        if isinstance(value, Raise):  # reaches the caller unchanged
            self.exp.ending, self.exp.forward_error = FORWARD_RAISED, value
            return
        if self.shape.check_result and not self.retry.graceful:  # §3.7
            checked = self.beh.check_result or value
            self.log("check_result", value, view_result(checked))
            if isinstance(checked, Raise):
                # a type violation records the contract's policy (§2.2)
                bad = ViolationView(ViolationKind.TYPE, Phase.RESULT, 0, self.P)
                self.exp.ending = RESULT_TYPE
                self.exp.outcome = replace(outcome, violations=(*outcome.violations, bad))
                return
        self.exp.ending, self.exp.outcome, self.exp.value = RETURN, outcome, value


def oracle(case: Case, tag: object = "t") -> Expected:
    """What spec/pipeline.md says the call of ``case`` (tagged ``tag``) does."""
    return _Run(case, tag).run()
