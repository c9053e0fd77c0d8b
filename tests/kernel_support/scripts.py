"""Cases: generated scripts of what every hook of one contracted call does.

A *case* is a ``Shape`` (which hooks exist, which predicates with which ids,
families, messages and policy overrides), a ``Behaviour`` (what each hook does
on each value), a ``ContractConfig``, the scripted random draws and the fake
clock's steps.

Hook behaviour is a pure function of the script and of the value the hook is
given, never of how often it was called: the harness (real hooks) and the oracle
(the spec re-executed) share these functions, so the oracle predicts which hooks
the kernel must call, and with what, from the spec alone.

Values are tuples that carry the call's *tag* at index 1 (so a value leaking
from another call is visible) and a candidate *label* at index 2:

    caller's input      ("raw", tag)
    typed input         ("in", tag, "x0")         check_input(("raw", tag))
    engine answer       ("ans", tag, phase, n)    or ("garbage", tag, phase, n)
    repaired input      ("in", tag, "pre<n>")     check_input(("ans", tag, "pre", n))
    acted input         ("act", tag, label)       act(("in", tag, label)) when transforming
    output              ("out", tag, "post<n>")   check_output(("ans", tag, "post", n), used)
    forward's value     ("fwd", tag, input)
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

from hoare.kernel import (
    ContractConfig,
    FatalEngineError,
    Policy,
    PreflightResult,
    Reply,
    RetryPolicy,
    Verdict,
)

MAX_TRIES = 6
PRE_LABELS = ("x0", *(f"pre{n}" for n in range(1, MAX_TRIES + 1)))
POST_LABELS = tuple(f"post{n}" for n in range(1, MAX_TRIES + 1))
FAMILIES = ("fam_a", "fam_b", "fam_c")
ALL_POLICIES = tuple(Policy)


# --------------------------------------------------------------------------- behaviours


@dataclass(frozen=True)
class Raise:
    """The hook raises ``cls(*args)`` (a fresh instance each time)."""

    cls: type[Exception]
    args: tuple[object, ...] = ()

    def make(self) -> Exception:
        return self.cls(*self.args)

    @property
    def text(self) -> str:
        return str(self.make())

    @property
    def name(self) -> str:
        return self.cls.__name__


@dataclass(frozen=True)
class Returns:
    """A predicate returns ``value``; it passes iff ``value`` is None or truthy (§3.2)."""

    value: object

    @property
    def passes(self) -> bool:
        return self.value is None or bool(self.value)


PredBehaviour = Returns | Raise


@dataclass(frozen=True)
class PredSpec:
    """The static part of a predicate (part of the contract's shape)."""

    id: str
    family: str
    message: str
    policy: Policy | None


@dataclass(frozen=True)
class PredScript:
    """What one predicate does: ``default`` except on the labels listed in ``per_label``."""

    default: PredBehaviour
    per_label: tuple[tuple[str, PredBehaviour], ...] = ()

    def on(self, label: object) -> PredBehaviour:
        for candidate, behaviour in self.per_label:
            if candidate == label:
                return behaviour
        return self.default


@dataclass(frozen=True)
class Answer:
    """The engine answers, well-formed or garbage, reporting ``usage``."""

    garbage: bool = False
    usage: tuple[tuple[str, int], ...] = ()


EngineStep = Answer | Raise


@dataclass(frozen=True)
class Garbage:
    """The pre-flight hook returns something that is not a PreflightResult."""

    value: object


PreflightBehaviour = PreflightResult | Raise | Garbage
SATISFIABLE = PreflightResult(Verdict.SATISFIABLE)
ActBehaviour = Literal["identity", "transform"] | Raise


@dataclass(frozen=True)
class Shape:
    """Which hooks a contract has: shared by every call of one contract."""

    pre: tuple[PredSpec, ...] = ()
    post: tuple[PredSpec, ...] = ()
    act: bool = False
    preflight: bool = False
    check_result: bool = False
    handler: bool = False


@dataclass(frozen=True)
class Behaviour:
    """What the hooks and the engine do in one call (``None``: the hook succeeds)."""

    input_check: Raise | None = None
    pre: tuple[PredScript, ...] = ()
    post: tuple[PredScript, ...] = ()
    act: ActBehaviour = "transform"
    preflight: PreflightBehaviour = SATISFIABLE
    engine_pre: tuple[EngineStep, ...] = (Answer(),) * MAX_TRIES
    engine_post: tuple[EngineStep, ...] = (Answer(),) * MAX_TRIES
    check_result: Raise | None = None
    handler: Raise | None = None
    forward: Raise | None = None


@dataclass(frozen=True)
class Case:
    """Everything one call needs, generated."""

    shape: Shape
    behaviour: Behaviour
    config: ContractConfig
    randoms: tuple[float, ...] = (0.5,)
    clock_steps: tuple[int, ...] = (1,)


# --------------------------------------------------------------------------- hook semantics
# Shared by the harness (which wraps them in recording hooks) and the oracle.


class GarbageError(ValueError):
    """A check hook rejects an engine answer that is garbage."""


def raw_input(tag: object) -> tuple[object, ...]:
    return ("raw", tag)


def tag_of(value: object) -> object:
    return value[1] if isinstance(value, tuple) and len(value) >= 2 else None


def label_of(value: object) -> object:
    return value[2] if isinstance(value, tuple) and len(value) >= 3 else None


def check_input_semantics(behaviour: Behaviour, value: object) -> object | Raise:
    """What check_input returns for ``value`` (a ``Raise`` when it raises)."""
    if isinstance(value, tuple) and value[:1] == ("raw",):
        return behaviour.input_check or ("in", value[1], "x0")
    if isinstance(value, tuple) and value[:1] == ("ans",) and value[2] == "pre":
        return ("in", value[1], f"pre{value[3]}")
    return Raise(GarbageError, (f"not an input: {value!r}",))


def check_output_semantics(raw: object) -> object | Raise:
    if isinstance(raw, tuple) and raw[:1] == ("ans",) and raw[2] == "post":
        return ("out", raw[1], f"post{raw[3]}")
    return Raise(GarbageError, (f"not an output: {raw!r}",))


def act_semantics(behaviour: Behaviour, value: object) -> object | Raise:
    if isinstance(behaviour.act, Raise):
        return behaviour.act
    if behaviour.act == "identity":
        return value
    return ("act", tag_of(value), label_of(value))


def engine_semantics(behaviour: Behaviour, phase: str, attempt: int,
                     tag: object) -> Reply | Raise:
    steps = behaviour.engine_pre if phase == "pre" else behaviour.engine_post
    step = steps[attempt - 1]
    if isinstance(step, Raise):
        return step
    head = "garbage" if step.garbage else "ans"
    return Reply((head, tag, phase, attempt), dict(step.usage))


def forward_semantics(behaviour: Behaviour, value: object) -> object | Raise:
    return behaviour.forward or ("fwd", tag_of(value), value)


# --------------------------------------------------------------------------- strategies
# Built once and cached: hypothesis validates a strategy the first time it is drawn from,
# and rebuilding them for every example would cost more than running the call.


class Silent(Exception):
    """An exception whose text is always empty."""

    def __str__(self) -> str:
        return ""


class CustomError(Exception):
    pass


class DeepCustomError(CustomError, LookupError):
    pass


class BudgetSpent(FatalEngineError, RuntimeError):
    """A fatal engine failure of a subclass, as the library's engines raise them."""


# Exception classes a hook may raise. StopIteration is an Exception too: hooks the kernel
# calls inside its generator must still treat it as an ordinary failure.
BUILTIN_RAISABLE: tuple[type[Exception], ...] = (
    ValueError, KeyError, RuntimeError, ZeroDivisionError, AssertionError, TypeError,
    LookupError, OSError, ArithmeticError, NotImplementedError, Exception, Silent,
    CustomError, DeepCustomError, StopIteration,
)
# forward's exception reaches the caller unchanged, except a StopIteration through the
# async driver (Python makes it a RuntimeError; §3.6, tested on its own), and an async
# engine's StopIteration is turned into RuntimeError by Python itself (PEP 479): the
# forward and engine pools leave it out so that both drivers see the same exceptions.
NO_STOP_ITERATION = tuple(c for c in BUILTIN_RAISABLE if c is not StopIteration)
# What an engine may raise: ordinary failures, and fatal ones that end the stage (§4.4).
FATAL = (FatalEngineError, BudgetSpent)
ENGINE_RAISABLE = (*NO_STOP_ITERATION, *FATAL)

# Texts are sampled, not generated character by character: their content is opaque to
# the kernel, and drawing characters would cost more than the call under test.
MESSAGES = ("", "boom", "x must be < 3", "é€ ünïcode", "'quoted'", "two\nlines", " ", "0")
_messages = st.sampled_from(MESSAGES)
_CLASS_NAMES = ("Boom", "Oops", "NetworkFailure", "ValueError", "E", "QuotaExceeded", "Weird_1")
_BASES = (Exception, ValueError, RuntimeError, KeyError)


def _make_class(name: str, base: type[Exception]) -> type[Exception]:
    """A freshly made Exception subclass (a new class for every example)."""
    return type(name, (base,), {})


_dynamic_class = st.builds(_make_class, st.sampled_from(_CLASS_NAMES), st.sampled_from(_BASES))
_arguments = st.one_of(st.just(()), st.tuples(_messages), st.tuples(_messages,
                                                                    st.integers(-3, 3)))


def exceptions(pool: tuple[type[Exception], ...] = BUILTIN_RAISABLE) -> st.SearchStrategy[Raise]:
    """An Exception subclass with zero, one or two constructor arguments (empty texts too)."""
    return st.builds(Raise, st.one_of(st.sampled_from(pool), _dynamic_class), _arguments)


ANY_EXCEPTION = exceptions()
NO_STOP_EXCEPTION = exceptions(NO_STOP_ITERATION)
ENGINE_EXCEPTION = exceptions(ENGINE_RAISABLE)
FATAL_EXCEPTION = exceptions(FATAL)

PASSING_VALUES = (True, None, 1, "yes", [0], 0.5)
FAILING_VALUES = (False, 0, "", 0.0, [], ())
_passing = st.builds(Returns, st.sampled_from(PASSING_VALUES))
_failing = st.builds(Returns, st.sampled_from(FAILING_VALUES))
PRED_BEHAVIOUR = st.one_of(_passing, _passing, _failing, ANY_EXCEPTION)
FRIENDLY_PRED = st.one_of(*([_passing] * 8), _failing, ANY_EXCEPTION)
HOSTILE_PRED = st.one_of(_passing, _failing, _failing, ANY_EXCEPTION)


def _pred_scripts(labels: tuple[str, ...],
                  behaviour: st.SearchStrategy[PredBehaviour]) -> st.SearchStrategy[PredScript]:
    per_label = st.lists(st.tuples(st.sampled_from(labels), behaviour), max_size=4)
    return st.builds(PredScript, behaviour, per_label.map(tuple))


PRE_SCRIPT = _pred_scripts(PRE_LABELS, PRED_BEHAVIOUR)
POST_SCRIPT = _pred_scripts(POST_LABELS, PRED_BEHAVIOUR)
FRIENDLY_PRE = _pred_scripts(PRE_LABELS, FRIENDLY_PRED)
FRIENDLY_POST = _pred_scripts(POST_LABELS, FRIENDLY_PRED)
HOSTILE_PRE = _pred_scripts(PRE_LABELS, HOSTILE_PRED)
HOSTILE_POST = _pred_scripts(POST_LABELS, HOSTILE_PRED)

OVERRIDES_ANY = st.one_of(st.none(), st.none(), st.sampled_from(ALL_POLICIES))
_pred_message = st.sampled_from(("", "answer must cite a source", "len(x) > 0", "ß"))

_usage = st.lists(
    st.tuples(st.sampled_from(("prompt_tokens", "completion_tokens", "cached")),
              st.integers(0, 1000)),
    max_size=3,
).map(tuple)
_good_answer = st.builds(Answer, st.just(False), _usage)
_garbage_answer = st.builds(Answer, st.just(True), _usage)
ENGINE_STEP = st.one_of(_good_answer, _good_answer, _garbage_answer, ENGINE_EXCEPTION)
FRIENDLY_ENGINE = st.one_of(*([_good_answer] * 6), _garbage_answer, ENGINE_EXCEPTION)
HOSTILE_ENGINE = st.one_of(_good_answer, _garbage_answer, _garbage_answer, ENGINE_EXCEPTION)
FATAL_ENGINE = st.one_of(_good_answer, _garbage_answer, NO_STOP_EXCEPTION, FATAL_EXCEPTION)

_reasons = st.sampled_from(("x > 3 and x < 2", "unsat core: [c1, c2]", "r", "é"))
# Anything but a PreflightResult carrying a Verdict counts as `unknown` (§3.4), including a
# PreflightResult whose verdict is a string.
GARBAGE_VERDICTS = (None, "unsatisfiable", Verdict.UNSATISFIABLE, True, 0, ("unsat",),
                    PreflightResult("unsatisfiable", "bogus"),  # type: ignore[arg-type]
                    PreflightResult(None, ""))  # type: ignore[arg-type]
UNSAT = st.builds(PreflightResult, st.just(Verdict.UNSATISFIABLE), _reasons)
NOT_UNSAT: st.SearchStrategy[PreflightBehaviour] = st.one_of(
    st.builds(PreflightResult, st.sampled_from((Verdict.SATISFIABLE, Verdict.UNKNOWN)),
              _reasons | st.just("")),
    st.builds(Garbage, st.sampled_from(GARBAGE_VERDICTS)),
    ANY_EXCEPTION,
)
PREFLIGHT_ANY: st.SearchStrategy[PreflightBehaviour] = st.one_of(
    st.builds(PreflightResult, st.just(Verdict.SATISFIABLE), _reasons | st.just("")),
    st.builds(PreflightResult, st.just(Verdict.UNKNOWN), _reasons | st.just("")),
    UNSAT,
    st.builds(Garbage, st.sampled_from(GARBAGE_VERDICTS)),
    ANY_EXCEPTION,
)
MOSTLY_PASSING_INPUT = st.one_of(st.none(), st.none(), st.none(), ANY_EXCEPTION)
FORWARD_ANY = st.one_of(st.none(), st.none(), st.none(), NO_STOP_EXCEPTION)
ACT_ANY = st.one_of(st.just("identity"), st.just("transform"), st.just("transform"),
                    ANY_EXCEPTION)
ACT_PASSING = st.sampled_from(("identity", "transform"))


def _seconds(top: float) -> st.SearchStrategy[float]:
    return st.one_of(st.just(0.0), st.floats(0, top, allow_nan=False), st.integers(0, 3))


BOOLS = st.booleans()
TRIES = st.integers(1, MAX_TRIES)


def retry_policies(tries: st.SearchStrategy[int] = TRIES,
                   graceful: st.SearchStrategy[bool] = BOOLS,
                   ) -> st.SearchStrategy[RetryPolicy]:
    return st.builds(RetryPolicy, tries=tries, delay=_seconds(5), max_delay=_seconds(20),
                     jitter=_seconds(2), backoff=_seconds(4), graceful=graceful)


RANDOMS = st.lists(
    st.one_of(st.floats(0, 1), st.sampled_from((math.nan, math.inf, -math.inf, -0.5, 1.5, 0.0,
                                                1.0, -0.0, 1e300))),
    min_size=1, max_size=8,
).map(tuple)
CLOCK_STEPS = st.lists(st.integers(0, 10**6), min_size=1, max_size=4).map(tuple)
ANY_POLICY = st.sampled_from(ALL_POLICIES)
ANY_RETRY = retry_policies()
HANDLER_PRESENT = st.sampled_from((True, True, False))
NONE_OR_EXCEPTION = st.one_of(st.none(), ANY_EXCEPTION)


@functools.cache
def _pred_specs(phase: str, count: int, overrides: st.SearchStrategy[Policy | None],
                ) -> st.SearchStrategy[tuple[PredSpec, ...]]:
    return st.tuples(*(
        st.builds(PredSpec, st.just(f"{phase}{i}"), st.sampled_from(FAMILIES), _pred_message,
                  overrides)
        for i in range(count)))


@functools.cache
def _scripts(script: st.SearchStrategy[PredScript], count: int,
             ) -> st.SearchStrategy[tuple[PredScript, ...]]:
    return st.tuples(*([script] * count))


@functools.cache
def _engine_steps(step: st.SearchStrategy[EngineStep],
                  count: int) -> st.SearchStrategy[tuple[EngineStep, ...]]:
    """``count`` scripted engine answers; calls past them (never made) get a good answer."""
    padding = (Answer(),) * (MAX_TRIES - count)
    return st.tuples(*([step] * count)).map(lambda steps: (*steps, *padding))


@dataclass(frozen=True)
class Knobs:
    """How one call's behaviour is drawn (module-constant strategies, validated once)."""

    input_check: st.SearchStrategy[Raise | None] = MOSTLY_PASSING_INPUT
    preflight: st.SearchStrategy[PreflightBehaviour] | None = None
    forward: st.SearchStrategy[Raise | None] = FORWARD_ANY
    pre_script: st.SearchStrategy[PredScript] = PRE_SCRIPT
    post_script: st.SearchStrategy[PredScript] = POST_SCRIPT
    engine: st.SearchStrategy[EngineStep] = ENGINE_STEP
    act: st.SearchStrategy[ActBehaviour] = ACT_ANY
    result_check: st.SearchStrategy[Raise | None] = NONE_OR_EXCEPTION


def _draw_behaviour(draw: st.DrawFn, shape: Shape, config: ContractConfig,
                    knobs: Knobs) -> Behaviour:
    tries = config.retry.tries
    return Behaviour(
        input_check=draw(knobs.input_check),
        pre=draw(_scripts(knobs.pre_script, len(shape.pre))),
        post=draw(_scripts(knobs.post_script, len(shape.post))),
        act=draw(knobs.act) if shape.act else "transform",
        preflight=draw(PREFLIGHT_ANY if knobs.preflight is None else knobs.preflight)
        if shape.preflight else SATISFIABLE,
        engine_pre=draw(_engine_steps(knobs.engine, tries if config.pre_remedy else 0)),
        engine_post=draw(_engine_steps(knobs.engine, tries if config.post_remedy else 1)),
        check_result=draw(knobs.result_check) if shape.check_result else None,
        handler=draw(NONE_OR_EXCEPTION) if shape.handler else None,
        forward=draw(knobs.forward),
    )


PRED_COUNT = st.integers(0, 3)


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    policies: st.SearchStrategy[Policy] = ANY_POLICY,
    overrides: st.SearchStrategy[Policy | None] = OVERRIDES_ANY,
    preflight: st.SearchStrategy[PreflightBehaviour] | None = None,
    input_check: st.SearchStrategy[Raise | None] = MOSTLY_PASSING_INPUT,
    pre_remedy: st.SearchStrategy[bool] = BOOLS,
    post_remedy: st.SearchStrategy[bool] = BOOLS,
    retry: st.SearchStrategy[RetryPolicy] = ANY_RETRY,
    forward: st.SearchStrategy[Raise | None] = FORWARD_ANY,
    pre_count: st.SearchStrategy[int] = PRED_COUNT,
    post_count: st.SearchStrategy[int] = PRED_COUNT,
    pre_script: st.SearchStrategy[PredScript] = PRE_SCRIPT,
    post_script: st.SearchStrategy[PredScript] = POST_SCRIPT,
    engine: st.SearchStrategy[EngineStep] = ENGINE_STEP,
    act: st.SearchStrategy[ActBehaviour] = ACT_ANY,
    result_check: st.SearchStrategy[Raise | None] | None = None,
    has_act: st.SearchStrategy[bool] = BOOLS,
) -> Case:
    """A whole case. Keyword arguments narrow what is generated for one invariant; pass
    strategies that are built once (module constants), so that they are validated once.
    ``preflight`` / ``result_check``: when given, the contract has a pre-flight hook / a
    result check that does this."""
    n_pre = draw(pre_count)
    n_post = draw(post_count)
    shape = Shape(
        pre=draw(_pred_specs("pre", n_pre, overrides)),
        post=draw(_pred_specs("post", n_post, overrides)),
        act=draw(has_act),
        preflight=draw(BOOLS) if preflight is None else True,
        check_result=draw(BOOLS) if result_check is None else True,
        handler=draw(HANDLER_PRESENT),
    )
    config = ContractConfig(
        pre_remedy=draw(pre_remedy),
        post_remedy=draw(post_remedy),
        accumulate_errors=draw(BOOLS),
        policy=draw(policies),
        retry=draw(retry),
    )
    knobs = Knobs(input_check, preflight, forward, pre_script, post_script, engine, act,
                  NONE_OR_EXCEPTION if result_check is None else result_check)
    behaviour = _draw_behaviour(draw, shape, config, knobs)
    return Case(shape, behaviour, config, draw(RANDOMS), draw(CLOCK_STEPS))


@st.composite
def contract_calls(draw: st.DrawFn, min_calls: int, max_calls: int,
                   forward: st.SearchStrategy[Raise | None] = FORWARD_ANY,
                   **narrow: object) -> list[Case]:
    """Several calls of one contract: the same shape (hence one Hooks object can serve
    them all) and configuration, each call with its own behaviour, draws and clock."""
    first = draw(cases(forward=forward, **narrow))  # type: ignore[arg-type]
    count = draw(st.integers(min_calls, max_calls))
    calls = [first]
    for _ in range(count - 1):
        behaviour = _draw_behaviour(draw, first.shape, first.config, Knobs(forward=forward))
        calls.append(Case(first.shape, behaviour, first.config, draw(RANDOMS),
                          draw(CLOCK_STEPS)))
    return calls


# --------------------------------------------------------------------------- plain random
# For tests that need hundreds of calls at once (threads, the statistics' outcome pool):
# the same kinds of behaviour, drawn from a seeded ``random.Random`` in microseconds.


def random_raise(rng: random.Random,
                 pool: tuple[type[Exception], ...] = BUILTIN_RAISABLE) -> Raise:
    args = rng.choice(((), (rng.choice(MESSAGES),), (rng.choice(MESSAGES), rng.randint(-3, 3))))
    return Raise(rng.choice(pool), args)


def random_pred(rng: random.Random, fail: float) -> PredBehaviour:
    roll = rng.random()
    if roll < fail / 2:
        return Returns(rng.choice(FAILING_VALUES))
    if roll < fail:
        return random_raise(rng)
    return Returns(rng.choice(PASSING_VALUES))


def random_script(rng: random.Random, labels: tuple[str, ...], fail: float) -> PredScript:
    per_label = tuple((rng.choice(labels), random_pred(rng, fail))
                      for _ in range(rng.randint(0, 3)))
    return PredScript(random_pred(rng, fail), per_label)


def random_step(rng: random.Random, fail: float) -> EngineStep:
    usage = tuple((rng.choice(("prompt_tokens", "completion_tokens")), rng.randint(0, 99))
                  for _ in range(rng.randint(0, 2)))
    roll = rng.random()
    if roll < fail / 2:
        return Answer(True, usage)
    if roll < fail:
        return random_raise(rng, ENGINE_RAISABLE)
    return Answer(False, usage)


def random_behaviour(rng: random.Random, shape: Shape, fail: float = 0.3) -> Behaviour:
    """What one call of ``shape`` does; ``fail`` is the chance of each check failing."""
    rare = fail / 3
    return Behaviour(
        input_check=random_raise(rng) if rng.random() < rare else None,
        pre=tuple(random_script(rng, PRE_LABELS, fail) for _ in shape.pre),
        post=tuple(random_script(rng, POST_LABELS, fail) for _ in shape.post),
        act=random_raise(rng) if rng.random() < rare else rng.choice(("identity", "transform")),
        preflight=rng.choice((
            SATISFIABLE, PreflightResult(Verdict.UNKNOWN, "?"), Garbage(None), random_raise(rng),
            *([PreflightResult(Verdict.UNSATISFIABLE, "x > 1 and x < 0")]
              if rng.random() < rare else []))),
        engine_pre=tuple(random_step(rng, fail) for _ in range(MAX_TRIES)),
        engine_post=tuple(random_step(rng, fail) for _ in range(MAX_TRIES)),
        check_result=random_raise(rng) if rng.random() < rare else None,
        handler=random_raise(rng) if rng.random() < rare else None,
        forward=random_raise(rng, NO_STOP_ITERATION) if rng.random() < rare else None,
    )


def random_shape(rng: random.Random) -> Shape:
    def specs(phase: str) -> tuple[PredSpec, ...]:
        return tuple(
            PredSpec(f"{phase}{i}", rng.choice(FAMILIES), rng.choice(("", "must hold", "ß")),
                     rng.choice((None, None, None, *ALL_POLICIES)))
            for i in range(rng.randint(0, 3)))

    return Shape(specs("pre"), specs("post"), rng.random() < 0.5, rng.random() < 0.5,
                 rng.random() < 0.5, rng.random() < 0.7)


def random_config(rng: random.Random) -> ContractConfig:
    retry = RetryPolicy(tries=rng.randint(1, MAX_TRIES), delay=rng.choice((0.0, 0.5, 2.0)),
                        max_delay=rng.choice((0.0, 1.0, 15.0)), jitter=rng.choice((0.0, 0.1)),
                        backoff=rng.choice((0.0, 1.0, 2.0)), graceful=rng.random() < 0.3)
    return ContractConfig(pre_remedy=rng.random() < 0.5, post_remedy=rng.random() < 0.7,
                          accumulate_errors=rng.random() < 0.5,
                          policy=rng.choice(ALL_POLICIES), retry=retry)


def random_case(rng: random.Random, fail: float = 0.3) -> Case:
    shape = random_shape(rng)
    randoms = tuple(rng.choice((rng.random(), math.nan, 1.5)) for _ in range(rng.randint(1, 4)))
    return Case(shape, random_behaviour(rng, shape, fail), random_config(rng), randoms,
                (rng.randint(0, 1000),))
