"""The record of one call, and the one place it is built (issue 28): ``CallRecord``
names its fields, in the order the writer and the schema expect; ``RecordedAs`` is what
names a caller's records (the same call after call); and ``call_record`` builds the
record of a contracted call, a query, an agent run or a tool call from what the call
knows. Every front end queues what ``call_record`` returns (``StatsStore.record``), and a
contracted call's span is closed from the same record (``hoare.telemetry.finish_call``),
so what a column or a span attribute holds is decided here and nowhere else: the
success rule (``settled``) and the counting of attempts and remedies
(``attempt_counts``) exist once. ``contract_perf_stats`` reads the same clock: the
call's elapsed time, measured once, is the record's latency and the aggregate's total.

Apart from the store (``hoare.stats.store``) so that the calling side imports it without
the writer (sqlite3, its thread, its exit hook). ``call_record`` runs on every
contracted call when a store is configured: it builds a plain tuple (cheaper than a
``CallRecord``, and the writer's fast path takes it as it is) and does nothing a caller
could do once instead (``RecordedAs`` is computed once per contract and engine)."""

from __future__ import annotations

import time
from typing import NamedTuple

from hoare.engines.base import innermost
from hoare.kernel import Outcome, Phase

__all__ = ["CallRecord", "RecordFields", "RecordedAs", "attempt_counts", "call_record",
           "outcome_record", "settled"]


class CallRecord(NamedTuple):
    """One call, as stored (a tuple: cheap to make on the calling thread)."""

    ts: float
    contract: str
    contract_hash: str
    label: str
    success: bool
    first_attempt: bool
    attempts: int
    remedies: int
    preflight: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    latency_ms: float
    engine: str | None
    model: str | None
    trials: tuple[tuple[str, bool], ...] = ()
    kind: str = "contract"
    # failed post-conditions that the schema the provider decoded with enforces
    provider_faults: int = 0
    # 1 when a preflight="shadow" pre-flight would have refused the call
    shadow_refusals: int = 0
    # (family, message) of the contract's predicate families: the same tuple every call
    families: tuple[tuple[str, str], ...] = ()


# CallRecord's fields as a plain tuple: what ``call_record`` returns
RecordFields = tuple[float, str, str, str, bool, bool, int, int, str | None, int | None,
                     int | None, float | None, float, str | None, str | None,
                     tuple[tuple[str, bool], ...], str, int, int, tuple[tuple[str, str], ...]]


class RecordedAs(NamedTuple):
    """What names a caller's records: its name (a contract's ``module:Class``, a query
    class's, an agent's, ``tool:<name>``), the hash of its definition, the engine under
    its wrappers and that engine's model, and (contracts) the messages of its predicate
    families. The same call after call: a contract computes it once per engine."""

    name: str
    definition_hash: str
    engine: str | None
    model: str | None
    families: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, definition_hash: str, engine: object,
           families: tuple[tuple[str, str], ...] = ()) -> RecordedAs:
        """Named after the engine under its wrappers (a budget, a cache, a deadline):
        its class and its ``model`` (None without an engine: a tool call). A foreign
        engine whose attributes raise is named by its class alone: never raises."""
        try:
            inner = innermost(engine)
        except Exception:
            inner = engine
        try:
            model = getattr(inner, "model", None)
        except Exception:
            model = None
        return cls(name, definition_hash, None if inner is None else type(inner).__name__,
                   model, families)


_POST = Phase.POST


def settled(outcome: Outcome, raised: BaseException | None) -> Outcome:
    """The outcome a call is recorded with: a call that raised (``forward``, or a
    contract it called, or the result check) did not return a checked value, so it
    counts as failed whatever the contract's verdict was."""
    if raised is not None and outcome.success:
        return outcome._replace(success=False)
    return outcome


def attempt_counts(outcome: Outcome) -> tuple[int, int]:
    """``(attempts, remedies)`` of a call: one attempt per generation (``Phase.POST``);
    the remedies are the repaired inputs (``Phase.PRE``) and every generation after the
    first. What the stats store's columns and the span's attributes both hold."""
    attempts = outcome.attempts
    if len(attempts) == 1 and attempts[0].phase is Phase.POST:  # the happy path
        return 1, 0
    generations = remedies = 0
    for attempt in attempts:
        if attempt.phase is Phase.POST:
            generations += 1
        elif attempt.phase is Phase.PRE:
            remedies += 1
    return generations, remedies + max(0, generations - 1)


def call_record(kind: str, recorded_as: RecordedAs, label: str, elapsed_ns: int,
                outcome: Outcome | None, *, success: bool = False, steps: int = 1,
                trials: tuple[tuple[str, bool], ...] = (), cost: float | None = None,
                provider_faults: int = 0, shadow_prefix: str | None = None) -> RecordFields:
    """The record of one call (``CallRecord``'s fields as a plain tuple), stamped now.

    ``kind`` is ``"contract"``, ``"query"``, ``"agent"`` or ``"tool"``. With the
    kernel's ``outcome`` (contracts, queries; ``settled`` already) the record is
    ``outcome_record``'s. Without one (an agent run, a tool call) it is ``success`` in
    ``steps`` steps, no remedy, no tokens. The cost is what the call's meter spent.
    Values are taken as they are: the writer checks every one
    (``hoare.stats.values``), the span keeps only finite counts."""
    if outcome is not None:
        return outcome_record(kind, recorded_as, label, elapsed_ns, outcome, cost,
                              provider_faults, shadow_prefix)
    name, digest, engine, model, families = recorded_as
    return (_now(), name, digest, label, success, success and steps <= 1, steps, 0, None,
            None, None, cost, elapsed_ns / 1e6, engine, model, trials, kind,
            provider_faults, 0, families)


def outcome_record(kind: str, recorded_as: RecordedAs, label: str, elapsed_ns: int,
                   outcome: Outcome, cost: float | None, provider_faults: int,
                   shadow_prefix: str | None) -> RecordFields:
    """The record of a call with the kernel's ``outcome`` (``call_record``'s): its
    attempts and remedies (``attempt_counts``), the pre-flight's verdict, the tokens
    the engine reported, the trials of its predicates (the kept copy: ``_interned``),
    and a shadow refusal when the pre-flight's reason starts with ``shadow_prefix``.

    Every argument positional: a contract call builds its record here directly, and a
    call with keywords to a function with keyword-only defaults costs CPython about
    0.3 µs more than this whole body (measured, 3.11)."""
    made = outcome.attempts
    if len(made) == 1 and made[0].phase is _POST:  # the happy path: attempt_counts's
        attempts, remedies = 1, 0
    else:
        attempts, remedies = attempt_counts(outcome)
    trials = outcome.trials
    last = _latest[0]
    if trials == last:  # the same trials as the call before (mostly): no hashing
        trials = last
    else:
        trials = _latest[0] = _TRIALS.get(trials) or _interned(trials)
    succeeded = outcome.success
    usage = outcome.usage
    preflight = outcome.preflight
    name, digest, engine, model, families = recorded_as
    return (_now(), name, digest, label, succeeded, succeeded and attempts <= 1,
            attempts, remedies, None if preflight is None else preflight.verdict.value,
            usage.get("input_tokens"), usage.get("output_tokens"), cost,
            elapsed_ns / 1e6, engine, model, trials, kind, provider_faults,
            1 if shadow_prefix is not None and preflight is not None
            and preflight.reason.startswith(shadow_prefix) else 0, families)


_now = time.time  # the record's stamp: one global read per call, not two


# The trials of a call, interned: the same few tuples recur call after call, and a
# record holding the call's own (a tuple of pairs: eight objects the garbage collector
# tracks) until the writer runs made the collector run more often. Bounded.
_TRIALS: dict[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]] = {}
_TRIALS_LIMIT = 4096
# The kept copy of the latest trials (any thread's: a race only costs a lookup)
_latest: list[tuple[tuple[str, bool], ...]] = [()]


def _interned(trials: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, bool], ...]:
    """The one kept copy of ``trials`` (kept from now on while there is room), or
    ``trials`` itself."""
    if len(_TRIALS) < _TRIALS_LIMIT:
        return _TRIALS.setdefault(trials, trials)
    return trials
