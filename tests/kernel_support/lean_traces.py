"""Concrete traces of the Python kernel, written as Lean examples (lean/HoareKernel/Traces.lean).

Each ``Scenario`` is one contracted call with scripted hooks over natural numbers. The
generator runs it through the real kernel (``hoare.kernel.run_call`` driven by hand, with
a scripted random source) and writes a Lean ``example`` stating that the model's
``run_call`` on the same hooks gives the same ``Summary``: the projection of a call on
what the spec pins down (delays in whole milliseconds; messages, usage and clock marks
dropped). When Lean runs, every example is a refinement check of the model against the
code; here, a test keeps the file in step with the kernel.

    python -m tests.kernel_support.lean_traces          # rewrite Traces.lean
    python -m tests.kernel_support.lean_traces --check  # exit 1 when it is stale
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hoare.kernel import (
    ContractConfig,
    ContractViolationError,
    EngineError,
    FatalEngineError,
    Generate,
    Hooks,
    Outcome,
    Policy,
    Predicate,
    PreflightResult,
    ResultTypeError,
    RetryPolicy,
    Sleep,
    SuccessTracker,
    Verdict,
    Violation,
    run_call,
    wilson_interval,
)

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "lean" / "HoareKernel" / "Traces.lean"

# --------------------------------------------------------------------------- scenarios

# ("lt", n) | ("ge", n) | ("even",) | ("raise",) | ("lt_ctx",) | ("none",)
Rule = tuple[object, ...]


@dataclass(frozen=True)
class Pred:
    id: str
    family: str
    rule: Rule
    policy: str | None = None


@dataclass(frozen=True)
class Scenario:
    """One call. Values are natural numbers; every hook is a small rule so that the same
    behaviour can be written in Python and in Lean."""

    name: str
    covers: tuple[str, ...]
    input: int
    policy: str = "observe"
    pre_remedy: bool = False
    post_remedy: bool = True
    accumulate: bool = False
    tries: int = 3
    delay_ms: int = 10
    max_delay_ms: int = 1000
    jitter_ms: int = 0
    backoff: int = 2
    graceful: bool = False
    draw_ms: int = 0  # the jitter drawn before each retry, in ms (<= jitter_ms)
    input_limit: int | None = None  # check_input raises TypeError from this value up
    output_limit: int | None = None  # check_output raises TypeError from this value up
    engine: dict[tuple[str, int], object] = field(default_factory=dict)  # int | "error" | "fatal"
    pre: tuple[Pred, ...] = ()
    post: tuple[Pred, ...] = ()
    act: Rule | None = None  # ("add", k) | ("raise",)
    preflight: str | None = None  # a Verdict value, "raise", or "malformed" (returns a str)
    result_limit: int | None = None  # check_result raises TypeError from this value up
    handler: str | None = None  # "ok" | "raise"
    forward: Rule = ("add", 100)  # ("add", k) | ("raise",)
    sleep_raises: int | None = None  # the Sleep (counted from 0) whose performance raises


def P(id: str, family: str, *rule: object, policy: str | None = None) -> Pred:
    return Pred(id, family, tuple(rule), policy)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("first_answer_accepted",
             ("post-stage-calls-engine", "forward-once-on-success", "success-sound",
              "handler-once-per-failure"),
             input=5, engine={("post", 1): 4}, post=(P("q0", "small", "lt", 10),),
             handler="ok"),
    Scenario("repaired_on_third_call",
             ("post-attempts-bounded", "feedback-exact", "no-sleep-after-last",
              "backoff-bounded"),
             input=5, tries=4, delay_ms=10, max_delay_ms=15, engine={
                 ("post", 1): 12, ("post", 2): 11, ("post", 3): 4},
             post=(P("q0", "small", "lt", 10), P("q1", "even", "even"))),
    Scenario("budget_spent_observe",
             ("post-attempts-bounded", "forward-once-observing", "forward-input",
              "handler-once-per-failure", "no-sleep-after-last"),
             input=7, tries=3, engine={("post", 1): 20, ("post", 2): 21, ("post", 3): 22},
             post=(P("q0", "small", "lt", 10),), act=("add", 1), handler="ok"),
    Scenario("accumulated_feedback",
             ("feedback-exact", "no-short-circuit"),
             input=2, tries=3, accumulate=True, jitter_ms=20, draw_ms=10,
             engine={("post", 1): 13, ("post", 2): 15, ("post", 3): 6},
             post=(P("q0", "small", "lt", 10), P("q1", "even", "even"),
                   P("q2", "small", "ge", 4))),
    Scenario("without_post_remedy",
             ("post-stage-calls-engine", "remedy-only-when-enabled", "forward-input"),
             input=3, post_remedy=False, engine={("post", 1): 30, ("post", 2): 4},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("pre_repaired",
             ("pre-attempts-bounded", "forward-input", "feedback-exact"),
             input=9, pre_remedy=True, tries=3, engine={
                 ("pre", 1): 7, ("pre", 2): 60, ("pre", 3): 4, ("post", 1): 5},
             input_limit=50, pre=(P("p0", "pre", "lt", 5),), post=(P("q0", "post", "lt_ctx"),)),
    Scenario("pre_fails_without_remedy",
             ("remedy-only-when-enabled", "forward-once-observing", "forward-input"),
             input=9, pre=(P("p0", "pre", "lt", 5),), handler="raise"),
    Scenario("pre_budget_spent",
             ("pre-attempts-bounded", "handler-once-per-failure"),
             input=9, pre_remedy=True, tries=2, engine={("pre", 1): 8, ("pre", 2): "error"},
             pre=(P("p0", "pre", "lt", 5),), handler="ok"),
    Scenario("fatal_engine_error",
             ("fatal-engine-error-stops", "no-sleep-after-last", "resend-never-identical"),
             input=1, tries=5, engine={("post", 1): 30, ("post", 2): "fatal", ("post", 3): 2},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("engine_error_then_success",
             ("post-attempts-bounded", "feedback-exact"),
             input=1, tries=3, engine={("post", 1): "error", ("post", 2): 2},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("enforce_raises",
             ("enforce-raises-on-failure", "handler-once-per-failure"),
             input=4, policy="enforce", tries=2, engine={("post", 1): 11, ("post", 2): 12},
             post=(P("q0", "small", "lt", 10),), handler="ok"),
    Scenario("quick_enforce_stops",
             ("quick-enforce-stops", "enforce-raises-on-failure", "no-short-circuit"),
             input=4, tries=3, engine={("post", 1): 11, ("post", 2): 2},
             post=(P("q0", "small", "lt", 10, policy="quick_enforce"),
                   P("q1", "even", "even")), handler="ok"),
    Scenario("ignored_predicate",
             ("ignored-never-evaluated", "success-sound"),
             input=4, engine={("post", 1): 11},
             post=(P("q0", "small", "lt", 10, policy="ignore"), P("q1", "odd", "ge", 5))),
    Scenario("ignore_policy",
             ("ignored-never-evaluated", "forward-once-observing"),
             input=4, policy="ignore", engine={("post", 1): 11}, output_limit=12,
             pre=(P("p0", "pre", "raise"),), post=(P("q0", "small", "lt", 10),),
             preflight="unsatisfiable"),
    Scenario("type_violation_repaired",
             ("post-attempts-bounded", "feedback-exact", "early-stop-type-violation"),
             input=4, engine={("post", 1): 99, ("post", 2): 3}, output_limit=50,
             post=(P("q0", "small", "lt", 10),)),
    Scenario("raising_predicate",
             ("no-short-circuit", "forward-once-observing"),
             input=4, tries=1, engine={("post", 1): 3},
             post=(P("q0", "broken", "raise"), P("q1", "small", "lt", 2))),
    Scenario("preflight_unsatisfiable",
             ("preflight-unsat-no-generation", "forward-input", "handler-once-per-failure"),
             input=4, act=("add", 2), preflight="unsatisfiable", engine={("post", 1): 3},
             post=(P("q0", "small", "lt", 10),), handler="ok"),
    Scenario("preflight_raises",
             ("preflight-unsat-no-generation", "post-stage-calls-engine"),
             input=4, preflight="raise", engine={("post", 1): 3},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("preflight_malformed",
             ("preflight-unsat-no-generation", "post-stage-calls-engine"),
             input=4, preflight="malformed", engine={("post", 1): 3},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("act_raises",
             ("forward-input", "forward-once-observing"),
             input=4, act=("raise",), engine={("post", 1): 3}),
    Scenario("input_type_error",
             ("forward-once-observing", "forward-input"),
             input=80, input_limit=50, engine={("post", 1): 3}),
    Scenario("backoff_capped",
             ("backoff-bounded", "no-sleep-after-last", "post-attempts-bounded"),
             input=4, tries=5, delay_ms=40, max_delay_ms=100, jitter_ms=30, draw_ms=30,
             backoff=3, engine={("post", n): 11 for n in range(1, 6)},
             post=(P("q0", "small", "lt", 10),)),
    Scenario("result_type_error",
             ("forward-once-on-success",),
             input=4, engine={("post", 1): 3}, result_limit=50,
             post=(P("q0", "small", "lt", 10, policy="enforce"),)),
    Scenario("graceful_skips_result_check",
             ("graceful-skips-result-check", "forward-once-observing"),
             input=4, graceful=True, engine={("post", 1): 30}, result_limit=50,
             post=(P("q0", "small", "lt", 10),)),
    Scenario("sleep_raises", ("no-sleep-after-last",),
             input=5, tries=3, engine={("post", 1): 7, ("post", 2): 8},
             post=(P("q0", "small", "lt", 3),), handler="ok", sleep_raises=0),
    Scenario("forward_raises",
             ("forward-once-on-success",),
             input=4, engine={("post", 1): 3}, forward=("raise",)),
)

# Two calls of one contract with different inputs give each its own outcome: the model
# is a function of its arguments, and so is the kernel's per-call state.
ISOLATED = Scenario("isolation", ("isolation-concurrent-calls",), input=2,
                    engine={("post", 1): 3}, post=(P("q0", "ctx", "lt_ctx"),))
ISOLATED_INPUTS = (2, 6)

# A call nested in another: a post-condition of the outer contract runs the `isolation`
# contract on the candidate and passes when that call succeeds. The outer call's outcome
# records only its own violations and trials.
NESTED = Scenario("nested", ("isolation-nested-calls",), input=4, tries=3,
                  engine={("post", 1): 0, ("post", 2): 5},
                  post=(P("q0", "inner", "nested"),), handler="ok")

# The statistics after recording these scenarios' outcomes, in order.
STATS_RUN = ("first_answer_accepted", "repaired_on_third_call", "budget_spent_observe",
             "accumulated_feedback", "pre_repaired", "raising_predicate")
STATS_COVERS = ("stats-counts-bounded", "stats-rate-unit", "stats-product-le-min",
                "stats-interval-contains")

# --------------------------------------------------------------------------- Python side


class _Raised(Exception):
    """What a raising hook raises."""


class _SleepBroke(Exception):
    """What a raising ``Sleep`` raises: not a contract matter, it ends the call (§6)."""


def _check(rule: Rule) -> Callable[[object, object], object]:
    kind = rule[0]
    if kind == "lt":
        return lambda v, _c: v < rule[1]  # type: ignore[operator]
    if kind == "ge":
        return lambda v, _c: v >= rule[1]  # type: ignore[operator]
    if kind == "even":
        return lambda v, _c: v % 2 == 0  # type: ignore[operator]
    if kind == "none":
        return lambda v, _c: None
    if kind == "lt_ctx":
        return lambda v, c: c is None or v < c  # type: ignore[operator]
    if kind == "raise":
        def broken(v: object, c: object) -> object:
            raise ValueError("broken")
        return broken
    if kind == "nested":  # run the `isolation` contract on the value
        def nested(v: object, c: object) -> object:
            inner = run_python(ISOLATED, v)  # type: ignore[arg-type]
            return inner.outcome is not None and inner.outcome.success
        return nested
    raise ValueError(f"unknown rule {rule!r}")


def _limited(limit: int | None) -> Callable[[object], object]:
    def check(v: object) -> object:
        if limit is not None and v >= limit:  # type: ignore[operator]
            raise TypeError("too big")
        return v
    return check


def _config(s: Scenario) -> ContractConfig:
    retry = RetryPolicy(tries=s.tries, delay=s.delay_ms / 1000, max_delay=s.max_delay_ms / 1000,
                        jitter=s.jitter_ms / 1000, backoff=float(s.backoff), graceful=s.graceful)
    return ContractConfig(pre_remedy=s.pre_remedy, post_remedy=s.post_remedy,
                          accumulate_errors=s.accumulate, policy=Policy(s.policy), retry=retry)


@dataclass
class PyRun:
    ending: int  # 0 returned, 1 raised, 2 result type error, 3 forward raised, 4 Sleep raised
    outcome: Outcome | None
    value: object
    generates: list[Generate]
    forwards: list[object]
    handlers: int


def run_python(s: Scenario, given: int | None = None) -> PyRun:
    """Run scenario ``s`` through the real kernel."""
    forwards: list[object] = []
    handlers = [0]
    input_check = _limited(s.input_limit)
    output_check = _limited(s.output_limit)

    def forward(v: object, outcome: Outcome) -> object:
        forwards.append(v)
        if s.forward[0] == "raise":
            raise _Raised("forward broke")
        return v + s.forward[1]  # type: ignore[operator]

    def on_violation(outcome: Outcome) -> None:
        handlers[0] += 1
        if s.handler == "raise":
            raise _Raised("handler broke")

    def act(v: object) -> object:
        assert s.act is not None
        if s.act[0] == "raise":
            raise _Raised("act broke")
        return v + s.act[1]  # type: ignore[operator]

    def preflight(v: object) -> PreflightResult:
        if s.preflight == "raise":
            raise _Raised("pre-flight broke")
        if s.preflight == "malformed":
            return "satisfiable"  # type: ignore[return-value]  # not a PreflightResult
        return PreflightResult(Verdict(s.preflight), "scripted")

    hooks = Hooks(
        check_input=input_check,
        check_output=lambda raw, _subject: output_check(raw),
        forward=forward,
        pre_conditions=tuple(Predicate(p.id, _check(p.rule), "m", p.family,
                                       Policy(p.policy) if p.policy else None) for p in s.pre),
        post_conditions=tuple(Predicate(p.id, _check(p.rule), "m", p.family,
                                        Policy(p.policy) if p.policy else None) for p in s.post),
        act=act if s.act is not None else None,
        preflight=preflight if s.preflight is not None else None,
        check_result=_limited(s.result_limit) if s.result_limit is not None else None,
        on_violation=on_violation if s.handler is not None else None,
    )
    draw = s.draw_ms / s.jitter_ms if s.jitter_ms else 0.0
    call = run_call(s.input if given is None else given, _config(s), hooks,
                    clock=lambda: 0, random=lambda: draw)
    generates: list[Generate] = []
    sleeps = 0
    try:
        effect = next(call)
        while True:
            if isinstance(effect, Sleep):
                sleeps += 1
                if sleeps - 1 == s.sleep_raises:
                    effect = call.throw(_SleepBroke("sleep broke"))
                else:
                    effect = call.send(None)
                continue
            generates.append(effect)
            answer = s.engine.get((effect.phase.value, effect.attempt), 0)
            if answer == "error":
                effect = call.throw(EngineError("down"))
            elif answer == "fatal":
                effect = call.throw(FatalEngineError("spent"))
            else:
                effect = call.send(answer)
    except StopIteration as stop:
        outcome, value = stop.value
        return PyRun(0, outcome, value, generates, forwards, handlers[0])
    except ResultTypeError as error:
        return PyRun(2, error.outcome, None, generates, forwards, handlers[0])
    except ContractViolationError as error:
        return PyRun(1, error.outcome, None, generates, forwards, handlers[0])
    except _Raised:
        return PyRun(3, None, None, generates, forwards, handlers[0])
    except _SleepBroke:
        return PyRun(4, None, None, generates, forwards, handlers[0])


# --------------------------------------------------------------------------- Lean text


def _lean_bool(b: bool) -> str:
    return "true" if b else "false"


def _lean_str(text: str) -> str:
    assert all(c.isalnum() or c in "_-" for c in text), text
    return f'"{text}"'


def _policy(p: Policy | str) -> str:
    return "Policy." + (p.value if isinstance(p, Policy) else p)


def _violation(v: Violation) -> str:
    return (f"(ViolationKind.{v.kind.value}, Phase.{v.phase.value}, {v.attempt}, "
            f"{_policy(v.policy)})")


def _list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _option(value: object) -> str:
    return "none" if value is None else f"(some {value})"


def _ms(seconds: float) -> int:
    ms = round(seconds * 1000)
    assert abs(ms - seconds * 1000) < 1e-6, seconds
    return ms


def _error(kind: str, fatal: bool = False) -> str:
    extra = ", fatal := true" if fatal else ""
    return f'Except.error {{ error_type := "{kind}", message := "scripted"{extra} }}'


def _lean_check(rule: Rule) -> str:
    kind = rule[0]
    if kind == "lt":
        return f"fun v _ => if v < {rule[1]} then PredResult.pass else PredResult.fail"
    if kind == "ge":
        return f"fun v _ => if {rule[1]} ≤ v then PredResult.pass else PredResult.fail"
    if kind == "even":
        return "fun v _ => if v % 2 = 0 then PredResult.pass else PredResult.fail"
    if kind == "none":
        return "fun _ _ => PredResult.pass"
    if kind == "lt_ctx":
        return ("fun v c => match c with "
                "| some i => (if v < i then PredResult.pass else PredResult.fail) "
                "| none => PredResult.pass")
    if kind == "raise":
        return ('fun _ _ => PredResult.raised '
                '{ error_type := "ValueError", message := "broken" }')
    if kind == "nested":
        return ("fun v _ => match (isolation_run v).result.outcome? with "
                "| some o => (if o.success then PredResult.pass else PredResult.fail) "
                "| none => PredResult.fail")
    raise ValueError(rule)


def _lean_limited(limit: int | None, two: bool = False) -> str:
    args = "v _" if two else "v"
    if limit is None:
        return f"fun {args} => Except.ok v"
    return f"fun {args} => if v < {limit} then Except.ok v else {_error('TypeError')}"


def _lean_preds(preds: Sequence[Pred]) -> str:
    if not preds:
        return "[]"
    parts = []
    for p in preds:
        policy = f"some {_policy(p.policy)}" if p.policy else "none"
        parts.append(f"{{ id := {_lean_str(p.id)}, message := \"m\", family := "
                     f"{_lean_str(p.family)}, policy := {policy},\n"
                     f"        check := ({_lean_check(p.rule)}) }}")
    return "[" + ",\n      ".join(parts) + "]"


def _lean_definitions(s: Scenario) -> str:
    n = s.name
    engine_cases = []
    for (phase, attempt), answer in sorted(s.engine.items()):
        if answer == "error":
            out = _error("EngineError")
        elif answer == "fatal":
            out = _error("FatalEngineError", fatal=True)
        else:
            out = f"Except.ok {answer}"
        engine_cases.append(f"  | Phase.{phase}, {attempt} => {out}")
    engine_cases.append("  | _, _ => Except.ok 0")
    act = "none"
    if s.act is not None:
        act = (f"some (fun _ => {_error('_Raised')})" if s.act[0] == "raise"
               else f"some (fun v => Except.ok (v + {s.act[1]}))")
    preflight = "none"
    if s.preflight == "raise":
        preflight = f"some (fun _ => {_error('_Raised')})"
    elif s.preflight == "malformed":
        preflight = "some (fun _ => Except.ok (PreflightAnswer.malformed \"str\"))"
    elif s.preflight is not None:
        preflight = (f"some (fun _ => Except.ok (PreflightAnswer.answer {{ verdict := "
                     f"Verdict.{s.preflight}, reason := \"scripted\" }}))")
    result = "none" if s.result_limit is None else f"some ({_lean_limited(s.result_limit)})"
    handler = "none"
    if s.handler == "ok":
        handler = "some (fun _ => Except.ok ())"
    elif s.handler == "raise":
        handler = f"some (fun _ => {_error('_Raised')})"
    forward = (f"fun _ _ => {_error('_Raised')}" if s.forward[0] == "raise"
               else f"fun v _ => Except.ok (v + {s.forward[1]})")
    return f"""def {n}_cfg : ContractConfig :=
  {{ pre_remedy := {_lean_bool(s.pre_remedy)}, post_remedy := {_lean_bool(s.post_remedy)},
    accumulate_errors := {_lean_bool(s.accumulate)}, policy := {_policy(s.policy)},
    retry := {{ tries := {s.tries}, delay := {s.delay_ms}, max_delay := {s.max_delay_ms},
               jitter := {s.jitter_ms}, backoff := {s.backoff},
               graceful := {_lean_bool(s.graceful)} }} }}

def {n}_engine : Engine Nat := fun phase call _ _ _ =>
  match phase, call with
{chr(10).join(engine_cases)}

def {n}_hooks : Hooks Nat :=
  {{ check_input := {_lean_limited(s.input_limit)},
    check_output := {_lean_limited(s.output_limit, two=True)},
    forward := {forward},
    pre_conditions := {_lean_preds(s.pre)},
    post_conditions := {_lean_preds(s.post)},
    act := {act},
    preflight := {preflight},
    check_result := {result},
    on_violation := {handler} }}

def {n}_run (input : Nat) : Run Nat :=
  run_call {n}_engine (fun _ _ => {s.draw_ms}) {n}_hooks {n}_cfg input
""" + ("" if s.sleep_raises is None else f"""
def {n}_driven (input : Nat) : Driven Nat :=
  run_driven {n}_engine (fun _ _ => {s.draw_ms}) {n}_hooks {n}_cfg
    (fun k => if k = {s.sleep_raises} then {_error('_SleepBroke')} else Except.ok ()) input
""")


def _summary(r: PyRun) -> str:
    o = r.outcome
    generates = [
        f"(Phase.{g.phase.value}, {g.attempt}, {g.input}, "
        f"{_list([_violation(v) for v in g.feedback])}, {_option(g.previous)})"
        for g in r.generates]
    fields = [f"ending := {r.ending}"]
    if o is None:
        fields += ["success := none", "policy := none", "value := none", "violations := []",
                   "attempts := []", "trials := []", "delays := []"]
    else:
        fields += [
            f"success := some {_lean_bool(o.success)}",
            f"policy := some {_policy(o.policy)}",
            f"value := {_option(r.value if r.ending == 0 else None)}",
            f"violations := {_list([_violation(v) for v in o.violations])}",
            "attempts := " + _list([f"(Phase.{a.phase.value}, {a.number}, {_option(a.raw)})"
                                    for a in o.attempts]),
            "trials := " + _list([f"({_lean_str(f)}, {_lean_bool(p)})" for f, p in o.trials]),
            "delays := " + _list([str(_ms(d)) for d in o.delays]),
        ]
    fields += [f"generates := {_list(generates)}",
               f"forwards := {_list([str(v) for v in r.forwards])}",
               f"handlers := {r.handlers}"]
    return "{ " + ",\n    ".join(fields) + " }"


def _example(covers: Sequence[str], call: str, summary: str,
             summarize: str = "summarize") -> str:
    return (f"-- invariants: {', '.join(covers)}\n"
            f"set_option maxRecDepth 10000 in\n"
            f"example : {summarize} ({call}) =\n  {summary} := by decide +kernel\n")


def _stats_block(runs: Sequence[tuple[Scenario, PyRun]]) -> str:
    tracker = SuccessTracker()
    for _s, r in runs:
        assert r.outcome is not None
        tracker.record(r.outcome)
    stats = tracker.snapshot()
    families = _list([f"({_lean_str(name)}, {rate.successes}, {rate.trials})"
                      for name, rate in stats.families.items()])
    measured = [r for r in stats.families.values() if r.trials]
    num = math.prod(r.successes for r in measured)
    den = math.prod(r.trials for r in measured)
    assert stats.product_estimate is not None
    assert math.isclose(stats.product_estimate, num / den, rel_tol=1e-12)
    calls = " ++ ".join(f"outcome_list ({s.name}_run {s.input})" for s, _r in runs)
    low, high = wilson_interval(stats.calls.successes, stats.calls.trials)
    n = stats.calls.trials
    raw_low, raw_high = math.floor(low * n), math.ceil(high * n)
    clamp_low = max(0, min(stats.calls.successes, raw_low))
    clamp_high = min(n, max(stats.calls.successes, raw_high))
    assert 0 <= clamp_low <= stats.calls.successes <= clamp_high <= n
    summary = (f"{{ calls := ({stats.calls.successes}, {stats.calls.trials}),\n"
               f"    first := {stats.first_attempt_successes},\n"
               f"    remedied := {stats.remedied_successes},\n"
               f"    generations := {stats.generation_calls},\n"
               f"    families := {families},\n"
               f"    product := some ({num}, {den}) }}")
    return (f"-- invariants: {', '.join(STATS_COVERS)}\n"
            f"set_option maxRecDepth 10000 in\n"
            f"example : stats_summary (tracked ({calls})) =\n  {summary} := by decide +kernel\n\n"
            f"-- invariants: stats-interval-contains\n"
            f"example : interval_summary (wilson_interval {stats.calls.successes} {n} "
            f"{raw_low} {raw_high}) = ({clamp_low}, {clamp_high}, {n}) := by decide +kernel\n")


HEADER = '''/-
Concrete traces of the Python kernel, one `example` per scenario: GENERATED by
`python -m tests.kernel_support.lean_traces` from kernel/ — do not edit by hand;
`tests/kernel/test_lean_traces.py` fails when this file is out of date.

Each example runs the model's `run_call` on hooks that behave exactly as the scripted
Python hooks of the scenario, and states that its `Summary` is what the Python kernel
produced. When Lean checks this file, each example is a refinement check of the model
against the code on that trace: `decide +kernel` has the kernel evaluate both sides
(never `native_decide`, which would trust the compiler and add an axiom). The
projection, in one place: delays in whole milliseconds; messages, usage and clock marks
dropped.
-/
import HoareKernel.Pipeline
import HoareKernel.Stats

namespace HoareKernel
namespace Traces

/-- What a trace example compares: the projection of one call. `ending`: 0 returned,
1 raised `ContractViolationError`, 2 raised `ResultTypeError`, 3 `forward` raised,
4 a `Sleep` raised (the call ended there, §6). -/
structure Summary where
  ending : Nat
  success : Option Bool
  policy : Option Policy
  value : Option Nat
  violations : List (ViolationKind × Phase × Nat × Policy)
  attempts : List (Phase × Nat × Option Nat)
  trials : List (String × Bool)
  delays : List Nat
  generates : List (Phase × Nat × Nat × List (ViolationKind × Phase × Nat × Policy) × Option Nat)
  forwards : List Nat
  handlers : Nat
  deriving DecidableEq

def violation_key (v : Violation) : ViolationKind × Phase × Nat × Policy :=
  (v.kind, v.phase, v.attempt, v.policy)

def attempt_key (a : Attempt Nat) : Phase × Nat × Option Nat :=
  (a.phase, a.number, a.raw)

/-- The `Generate` effects of a trace, in order. -/
def generate_keys : List (Event Nat) →
    List (Phase × Nat × Nat × List (ViolationKind × Phase × Nat × Policy) × Option Nat)
  | [] => []
  | Event.generate phase attempt input fb previous :: rest =>
    (phase, attempt, input, fb.map violation_key, previous) :: generate_keys rest
  | _ :: rest => generate_keys rest

/-- How many times the handler ran. -/
def handler_calls : List (Event Nat) → Nat
  | [] => 0
  | Event.handler :: rest => handler_calls rest + 1
  | _ :: rest => handler_calls rest

def ending_code : CallResult Nat → Nat
  | CallResult.returned _ _ => 0
  | CallResult.raised _ => 1
  | CallResult.result_type_error _ => 2
  | CallResult.forward_raised _ => 3

def returned_value : CallResult Nat → Option Nat
  | CallResult.returned _ value => some value
  | CallResult.raised _ => none
  | CallResult.result_type_error _ => none
  | CallResult.forward_raised _ => none

def summarize (run : Run Nat) : Summary :=
  match run.result.outcome? with
  | none =>
    { ending := ending_code run.result, success := none, policy := none, value := none,
      violations := [], attempts := [], trials := [], delays := [],
      generates := generate_keys run.trace, forwards := forward_inputs run.trace,
      handlers := handler_calls run.trace }
  | some o =>
    { ending := ending_code run.result, success := some o.success, policy := some o.policy,
      value := returned_value run.result, violations := o.violations.map violation_key,
      attempts := o.attempts.map attempt_key, trials := o.trials, delays := o.delays,
      generates := generate_keys run.trace, forwards := forward_inputs run.trace,
      handlers := handler_calls run.trace }

/-- A driven call (§6): the summary of the call, or, when a `Sleep` raised, the
effects up to it and no outcome (ending 4). -/
def summarize_driven : Driven Nat → Summary
  | Driven.finished run => summarize run
  | Driven.sleep_raised _ trace =>
    { ending := 4, success := none, policy := none, value := none, violations := [],
      attempts := [], trials := [], delays := [], generates := generate_keys trace,
      forwards := forward_inputs trace, handlers := handler_calls trace }

/-- The outcome of a call, as a list (empty when `forward` raised). -/
def outcome_list (run : Run Nat) : List (Outcome Nat) :=
  match run.result.outcome? with
  | none => []
  | some o => [o]

/-- What a statistics example compares. -/
structure StatsSummary where
  calls : Nat × Nat
  first : Nat
  remedied : Nat
  generations : Nat
  families : List (String × Nat × Nat)
  product : Option (Nat × Nat)
  deriving DecidableEq

def stats_summary (s : Stats) : StatsSummary :=
  { calls := (s.calls.successes, s.calls.trials),
    first := s.first_attempt_successes,
    remedied := s.remedied_successes,
    generations := s.generation_calls,
    families := s.families.map (fun f => (f.1, f.2.successes, f.2.trials)),
    product := s.product_estimate.map (fun r => (r.successes, r.trials)) }

def interval_summary (i : Interval) : Int × Int × Nat :=
  (i.low, i.high, i.scale)

'''


def render() -> str:
    """The text of Traces.lean for the kernel as it is now."""
    parts = [HEADER]
    runs: dict[str, tuple[Scenario, PyRun]] = {}
    for s in (*SCENARIOS, ISOLATED, NESTED):
        parts.append(f"/-! ## {s.name} -/\n\n" + _lean_definitions(s))
        inputs = ISOLATED_INPUTS if s is ISOLATED else (s.input,)
        for given in inputs:
            r = run_python(s, given)
            runs.setdefault(s.name, (s, r))
            call = f"{s.name}_run {given}" if s.sleep_raises is None else \
                f"{s.name}_driven {given}"
            summarize = "summarize" if s.sleep_raises is None else "summarize_driven"
            parts.append(_example(s.covers, call, _summary(r), summarize))
    parts.append("/-! ## Statistics over several calls -/\n\n" +
                 _stats_block([runs[name] for name in STATS_RUN]))
    parts.append("end Traces\nend HoareKernel\n")
    return "\n".join(parts)


def covered() -> set[str]:
    """Invariant ids that some example names."""
    ids = {i for s in (*SCENARIOS, ISOLATED, NESTED) for i in s.covers}
    return ids | set(STATS_COVERS)


def main(argv: Sequence[str]) -> int:
    text = render()
    if "--check" in argv:
        if TRACES.read_text(encoding="utf-8") != text:
            print(f"{TRACES} is out of date: run python -m tests.kernel_support.lean_traces")
            return 1
        return 0
    TRACES.write_text(text, encoding="utf-8")
    print(f"wrote {TRACES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
