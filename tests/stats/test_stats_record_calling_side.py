"""The calling side of recording (issue 31): what a contract call does to record itself
runs on every call, so it is built positionally (``outcome_record``: a call with
keywords to a function with keyword-only defaults cost CPython 3.11 more than building
the whole record), and it is still the record ``call_record`` defines: generated
outcomes give the same record through either door, each field what the rules say."""

from __future__ import annotations

import dis
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.contracts import lifecycle
from hoare.engines import FunctionEngine
from hoare.kernel import Attempt, Outcome, Phase, Policy, PreflightResult, Verdict
from hoare.stats import records
from hoare.stats.store import StatsStore

SHADOW = "shadow: would refuse: "
RECORDED_AS = records.RecordedAs.of("m:C", "0" * 16, FunctionEngine(lambda r: "x"),
                                    (("f", "msg"),))

phases = st.sampled_from([Phase.PRE, Phase.POST, Phase.ACT, Phase.INPUT])
trials = st.lists(st.tuples(st.sampled_from(["pre[0]", "post[0]", "post[1]"]), st.booleans()),
                  max_size=4).map(tuple)
usages = st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "requests"]),
                         st.integers(0, 10**6))
preflights = st.one_of(
    st.none(),
    st.builds(PreflightResult, st.sampled_from(list(Verdict)),
              st.sampled_from(["", "x", SHADOW + "no output passes", "shadow"])))


@st.composite
def outcomes(draw: st.DrawFn) -> Outcome:
    made = tuple(Attempt(phase, number, None, (), ()) for number, phase in
                 enumerate(draw(st.lists(phases, min_size=0, max_size=5)), 1))
    return Outcome(draw(st.booleans()), None, None, None, Policy.OBSERVE, (), made,
                   draw(trials), (), draw(usages), [], draw(preflights))


@settings(max_examples=300, deadline=None)
@given(outcomes(), st.sampled_from(["contract", "query"]), st.integers(0, 10**12),
       st.one_of(st.none(), st.floats(0, 10)), st.integers(0, 3),
       st.sampled_from([None, SHADOW]))
def test_outcome_record_is_call_records_record(outcome: Outcome, kind: str, elapsed: int,
                                               cost: float | None, faults: int,
                                               prefix: str | None) -> None:
    """Either door, one record; each field by the rules (``attempt_counts``, the first
    attempt, the pre-flight's verdict, the tokens, a shadow refusal by its prefix)."""
    direct = records.outcome_record(kind, RECORDED_AS, "L", elapsed, outcome, cost, faults,
                                    prefix)
    through = records.call_record(kind, RECORDED_AS, "L", elapsed, outcome, cost=cost,
                                  provider_faults=faults, shadow_prefix=prefix)
    assert direct[1:] == through[1:] and abs(direct[0] - through[0]) < 60
    attempts, remedies = records.attempt_counts(outcome)
    preflight = outcome.preflight
    assert records.CallRecord(*direct)._asdict() == {
        "ts": direct[0], "contract": "m:C", "contract_hash": "0" * 16, "label": "L",
        "success": outcome.success, "first_attempt": outcome.success and attempts <= 1,
        "attempts": attempts, "remedies": remedies,
        "preflight": None if preflight is None else preflight.verdict.value,
        "input_tokens": outcome.usage.get("input_tokens"),
        "output_tokens": outcome.usage.get("output_tokens"), "cost": cost,
        "latency_ms": elapsed / 1e6, "engine": "FunctionEngine", "model": "function",
        "trials": outcome.trials, "kind": kind, "provider_faults": faults,
        "shadow_refusals": int(prefix is not None and preflight is not None
                               and preflight.reason.startswith(prefix)),
        "families": (("f", "msg"),)}


def _keyword_calls(function: Callable[..., Any]) -> list[str]:
    """The calls with keywords (3.11's KW_NAMES, 3.13's CALL_KW) ``function`` makes on
    its common way: up to its first ``return`` (the slow paths of these functions
    come after it: a forked child's first record, the queue full), and before its
    exception handlers (CPython places them after the code they guard)."""
    code = dis.Bytecode(function)
    # a 3.11 attribute typeshed does not declare
    entries = getattr(code, "exception_entries")  # noqa: B009
    handlers = [entry.target for entry in entries]
    cold = min(handlers, default=None)
    found = []
    for instruction in code:
        if instruction.opname in ("RETURN_VALUE", "RETURN_CONST") or (
                cold is not None and instruction.offset >= cold):
            break
        if instruction.opname in ("KW_NAMES", "CALL_KW", "CALL_FUNCTION_KW"):
            line = instruction.positions.lineno if instruction.positions else "?"
            found.append(f"line {line}: {instruction.opname}")
    return found


def test_the_calling_side_makes_no_call_with_keywords() -> None:
    """A contract call's record is built and queued without a call with keywords (the
    keyword-only defaults of ``call_record`` cost ~0.3 µs a call; measured)."""
    for function in (lifecycle._call_record, records.outcome_record, StatsStore.record):
        assert _keyword_calls(function) == [], function.__qualname__
