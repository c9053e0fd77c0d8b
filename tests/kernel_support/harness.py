"""Hooks and engines built from a case, recording every invocation; the drivers.

``execute(case)`` runs one contracted call through ``run_sync`` or ``run_async``
with a fake clock and a scripted random source (nothing really sleeps) and
returns a ``Trace``: every hook invocation and every effect, in order, with its
arguments and what it did, and how the call ended.

Views (``OutcomeView``, ``ViolationView``, ...) project kernel objects on what the
spec pins down, so that they can be compared with the oracle's expectations.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field

from hoare.kernel import (
    Attempt,
    ContractViolationError,
    Effect,
    Generate,
    Hooks,
    Outcome,
    Phase,
    Policy,
    Predicate,
    PreflightResult,
    Reply,
    Sleep,
    Verdict,
    Violation,
    ViolationKind,
    run_async,
    run_call,
    run_sync,
)

from .scripts import (
    Behaviour,
    Case,
    Garbage,
    PredSpec,
    Raise,
    Shape,
    act_semantics,
    check_input_semantics,
    check_output_semantics,
    engine_semantics,
    forward_semantics,
    label_of,
    raw_input,
    tag_of,
)

# --------------------------------------------------------------------------- views


class _AnyText:
    """Equal to every non-empty string: where the spec asks for *a* message, not which."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other != ""

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<any non-empty text>"


ANY_TEXT = _AnyText()


@dataclass(frozen=True)
class ViolationView:
    """A violation as far as the spec determines it. ``message`` is compared for predicate
    and unsatisfiable violations, ``error_type`` for predicate violations (§3.2, §3.4)."""

    kind: ViolationKind
    phase: Phase
    attempt: int
    policy: Policy
    predicate: str | None = None
    family: str | None = None
    message: object = None
    error_type: str | None = None


def view_violation(v: Violation) -> ViolationView:
    pinned = v.kind in (ViolationKind.PREDICATE, ViolationKind.UNSATISFIABLE)
    return ViolationView(v.kind, v.phase, v.attempt, v.policy, v.predicate, v.family,
                         v.message if pinned else None,
                         v.error_type if v.kind is ViolationKind.PREDICATE else None)


@dataclass(frozen=True)
class AttemptView:
    phase: Phase
    index: int
    raw: object
    feedback: tuple[ViolationView, ...]
    violations: tuple[ViolationView, ...]


def view_attempt(a: Attempt) -> AttemptView:
    return AttemptView(a.phase, a.number, a.raw, tuple(map(view_violation, a.feedback)),
                       tuple(map(view_violation, a.violations)))


@dataclass(frozen=True)
class OutcomeView:
    """An outcome minus what the spec leaves open (timings, exception text)."""

    success: bool
    result: object
    original_input: object
    input_used: object
    policy: Policy
    violations: tuple[ViolationView, ...]
    attempts: tuple[AttemptView, ...]
    trials: tuple[tuple[str, bool], ...]
    delays: tuple[float, ...]
    usage: dict[str, int]
    preflight: tuple[Verdict, object] | None
    has_exception: bool
    has_handler_error: bool


def view_outcome(o: Outcome) -> OutcomeView:
    preflight = None if o.preflight is None else (o.preflight.verdict, o.preflight.reason)
    return OutcomeView(o.success, o.result, o.original_input, o.input_used, o.policy,
                       tuple(map(view_violation, o.violations)),
                       tuple(map(view_attempt, o.attempts)), tuple(o.trials), tuple(o.delays),
                       dict(o.usage), preflight, o.exception is not None,
                       o.handler_error is not None)


def view_result(result: object) -> tuple[object, ...]:
    """What a hook did: ("ok", value) or ("raise", class name, text)."""
    if isinstance(result, BaseException):
        return ("raise", type(result).__name__, str(result))
    if isinstance(result, Raise):
        return ("raise", result.name, result.text)
    return ("ok", result)


# --------------------------------------------------------------------------- recording


@dataclass
class Event:
    """One hook invocation or one performed effect.

    ``hook``: check_input, pred, act, preflight, check_output, forward, check_result,
    on_violation, generate, sleep. ``args``: its arguments (for ``pred``: phase, id,
    value, context). ``result``: what it returned, or the exception instance it raised.
    """

    hook: str
    args: tuple[object, ...]
    result: object = None
    raised: bool = False
    outcome_view: OutcomeView | None = None  # forward / on_violation: the outcome they got

    def view(self) -> tuple[object, ...]:
        args: tuple[object, ...] = self.args
        if self.hook == "generate":
            effect = self.args[0]
            assert isinstance(effect, Generate)
            args = (effect.phase, effect.attempt, effect.input,
                    tuple(map(view_violation, effect.feedback)), effect.previous)
            result = self.result
            if isinstance(result, Reply):
                return (self.hook, *args, ("ok", result.output, dict(result.usage)))
            return (self.hook, *args, view_result(result))
        if self.hook == "sleep":
            effect = self.args[0]
            assert isinstance(effect, Sleep)
            return (self.hook, effect.seconds)
        if self.hook in ("forward", "on_violation"):
            args = (*self.args[:-1], self.outcome_view)
        return (self.hook, *args, view_result(self.result))


@dataclass
class Recorder:
    """Everything one call did (thread-confined, or shared under ``lock``)."""

    events: list[Event] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    draws: list[float] = field(default_factory=list)
    readings: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, event: Event) -> Event:
        with self.lock:
            self.events.append(event)
        return event

    def anomaly(self, text: str) -> None:
        with self.lock:
            self.anomalies.append(text)


def _do(event: Event, outcome: object | Raise) -> object:
    """Finish ``event`` with the scripted ``outcome``: return it, or raise it."""
    if isinstance(outcome, Raise):
        error = outcome.make()
        event.result, event.raised = error, True
        raise error
    event.result = outcome
    return outcome


def build_hooks(shape: Shape, behaviours: Mapping[object, Behaviour],
                recorder_for: Callable[[object], Recorder],
                pause: Callable[[], None] | None = None) -> Hooks:
    """Hooks of ``shape`` whose behaviour is looked up by the tag of the value they get.

    One Hooks object can serve many calls at once (the tags tell the calls apart). A
    value with an unknown tag is recorded as an anomaly and rejected. ``pause`` runs at
    the start of every hook (to let other threads interleave).
    """

    def lookup(value: object, hook: str) -> tuple[Behaviour, Recorder]:
        if pause is not None:
            pause()
        tag = tag_of(value)
        if tag not in behaviours:
            recorder_for(None).anomaly(f"{hook} got a value of no known call: {value!r}")
            raise LookupError(f"unknown call tag in {value!r}")
        return behaviours[tag], recorder_for(tag)

    def check_input(value: object) -> object:
        behaviour, rec = lookup(value, "check_input")
        event = rec.log(Event("check_input", (value,)))
        return _do(event, check_input_semantics(behaviour, value))

    def check_output(raw: object, used: object) -> object:
        _, rec = lookup(used, "check_output")
        event = rec.log(Event("check_output", (raw, used)))
        if tag_of(raw) != tag_of(used):
            rec.anomaly(f"check_output got answer {raw!r} for input {used!r}")
        return _do(event, check_output_semantics(raw))

    def predicate(phase: str, index: int, spec: PredSpec) -> Predicate:
        def check(value: object, context: object) -> object:
            behaviour, rec = lookup(value, "predicate")
            event = rec.log(Event("pred", (phase, spec.id, value, context)))
            scripts = behaviour.pre if phase == "pre" else behaviour.post
            outcome = scripts[index].on(label_of(value))
            return _do(event, outcome if isinstance(outcome, Raise) else outcome.value)

        return Predicate(spec.id, check, spec.message, spec.family, spec.policy)

    def act(value: object) -> object:
        behaviour, rec = lookup(value, "act")
        return _do(rec.log(Event("act", (value,))), act_semantics(behaviour, value))

    def preflight(value: object) -> PreflightResult:
        behaviour, rec = lookup(value, "preflight")
        event = rec.log(Event("preflight", (value,)))
        outcome = behaviour.preflight
        if isinstance(outcome, Garbage):
            outcome = outcome.value
        return _do(event, outcome)  # type: ignore[return-value]

    def forward(value: object, outcome: Outcome) -> object:
        behaviour, rec = lookup(outcome.original_input, "forward")
        if tag_of(value) != tag_of(outcome.original_input):
            rec.anomaly(f"forward got input {value!r} with outcome of {outcome.original_input!r}")
        event = rec.log(Event("forward", (value, outcome), outcome_view=view_outcome(outcome)))
        return _do(event, forward_semantics(behaviour, value))

    def check_result(value: object) -> object:
        behaviour, rec = lookup(value, "check_result")
        event = rec.log(Event("check_result", (value,)))
        return _do(event, behaviour.check_result or value)

    def on_violation(outcome: Outcome) -> object:
        behaviour, rec = lookup(outcome.original_input, "on_violation")
        event = rec.log(Event("on_violation", (outcome,), outcome_view=view_outcome(outcome)))
        return _do(event, behaviour.handler)

    return Hooks(
        check_input=check_input,
        check_output=check_output,
        forward=forward,
        pre_conditions=tuple(predicate("pre", i, s) for i, s in enumerate(shape.pre)),
        post_conditions=tuple(predicate("post", i, s) for i, s in enumerate(shape.post)),
        act=act if shape.act else None,
        preflight=preflight if shape.preflight else None,
        check_result=check_result if shape.check_result else None,
        on_violation=on_violation if shape.handler else None,
    )


def perform_sync(behaviours: Mapping[object, Behaviour],
                 recorder_for: Callable[[object], Recorder],
                 pause: Callable[[], None] | None = None) -> Callable[[object], object]:
    """The engine: answers ``Generate`` from the script of the subject's call; records
    ``Sleep`` without sleeping. ``pause`` runs inside every engine call (interleaving)."""

    def perform(effect: object) -> object:
        if isinstance(effect, Sleep):
            recorder_for(None).log(Event("sleep", (effect,)))
            return None
        if not isinstance(effect, Generate):
            recorder_for(None).anomaly(f"unknown effect {effect!r}")
            raise TypeError(f"unknown effect {effect!r}")
        tag = tag_of(effect.input)
        if tag not in behaviours:
            recorder_for(None).anomaly(f"engine got a subject of no known call: {effect!r}")
            raise LookupError(f"unknown call tag in {effect.input!r}")
        rec = recorder_for(tag)
        event = rec.log(Event("generate", (effect,)))
        if pause is not None:
            pause()
        return _do(event, engine_semantics(behaviours[tag], effect.phase.value, effect.attempt,
                                           tag))

    return perform


def perform_async(behaviours: Mapping[object, Behaviour],
                  recorder_for: Callable[[object], Recorder],
                  yields: int = 0) -> Callable[[object], object]:
    """The same engine as a coroutine; it yields to the event loop ``yields`` times."""
    sync = perform_sync(behaviours, recorder_for)

    async def perform(effect: object) -> object:
        for _ in range(yields):
            await asyncio.sleep(0)
        return sync(effect)

    return perform


class FakeClock:
    """An injected clock: advances by the scripted steps, in a loop, on every reading."""

    def __init__(self, steps: tuple[int, ...], rec: Recorder) -> None:
        self._steps: Iterator[int] = itertools.cycle(steps)
        self._now = 1_000
        self._rec = rec

    def __call__(self) -> int:
        self._now += next(self._steps)
        self._rec.readings.append(self._now)
        return self._now


class ScriptedRandom:
    """An injected random source: the scripted draws, in a loop."""

    def __init__(self, draws: tuple[float, ...], rec: Recorder) -> None:
        self._draws: Iterator[float] = itertools.cycle(draws)
        self._rec = rec

    def __call__(self) -> float:
        value = next(self._draws)
        self._rec.draws.append(value)
        return value


# --------------------------------------------------------------------------- running


@dataclass
class Trace:
    """How one call went, as seen from the outside."""

    case: Case
    tag: object
    events: list[Event]
    anomalies: list[str]
    draws: list[float]
    readings: list[int]
    outcome: Outcome | None = None  # returned, or carried by the ContractViolationError
    value: object = None  # forward's value, when the call returned
    error: Exception | None = None  # what the call raised

    @property
    def returned(self) -> bool:
        return self.error is None

    def of(self, *hooks: str) -> list[Event]:
        return [e for e in self.events if e.hook in hooks]

    @property
    def generates(self) -> list[Generate]:
        return [e.args[0] for e in self.of("generate")]  # type: ignore[misc]

    def generates_of(self, phase: Phase) -> list[Generate]:
        return [g for g in self.generates if g.phase is phase]

    @property
    def sleeps(self) -> list[float]:
        return [e.args[0].seconds for e in self.of("sleep")]  # type: ignore[attr-defined]

    @property
    def final_outcome(self) -> Outcome | None:
        """The call's outcome; when forward raised, the one forward received."""
        if self.outcome is not None:
            return self.outcome
        forwards = self.of("forward")
        if forwards:
            outcome = forwards[-1].args[1]
            assert isinstance(outcome, Outcome)
            return outcome
        return None

    def views(self) -> list[tuple[object, ...]]:
        return [e.view() for e in self.events]


def start(case: Case, tag: object, hooks: Hooks,
          rec: Recorder) -> Generator[Effect, object, tuple[Outcome, object]]:
    """The call generator of ``case``, with a fake clock and scripted random draws."""
    return run_call(raw_input(tag), case.config, hooks, clock=FakeClock(case.clock_steps, rec),
                    random=ScriptedRandom(case.randoms, rec))


def execute(case: Case, *, driver: str = "sync", tag: object = "t",
            rec: Recorder | None = None) -> Trace:
    """Run ``case`` once with fresh recording hooks; catch the Exception the call raises
    (a BaseException goes through; ``rec`` then still holds what happened)."""
    rec = Recorder() if rec is None else rec
    behaviours = {tag: case.behaviour}
    hooks = build_hooks(case.shape, behaviours, lambda _tag: rec)
    call = start(case, tag, hooks, rec)
    trace = Trace(case, tag, rec.events, rec.anomalies, rec.draws, rec.readings)
    try:
        if driver == "sync":
            outcome, value = run_sync(call, perform_sync(behaviours, lambda _tag: rec))
        else:
            perform = perform_async(behaviours, lambda _tag: rec, yields=1)
            outcome, value = asyncio.run(run_async(call, perform))  # type: ignore[arg-type]
    except Exception as error:
        trace.error = error
        if isinstance(error, ContractViolationError):
            trace.outcome = error.outcome
    else:
        trace.outcome, trace.value = outcome, value
    return trace
