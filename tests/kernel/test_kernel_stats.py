"""Property tests of the success statistics (spec §7): SuccessTracker, Stats, Rate,
wilson_interval.

The tracker is fed *real* outcomes: a pool of calls run through ``run_call`` with
scripted hooks (tests/kernel_support), chosen by hypothesis, plus fresh calls in the
state machine; a simple model (plain sums over the outcomes) says what the figures
must be.
"""

from __future__ import annotations

import functools
import math
import random
import sys
import threading
import time
from collections.abc import Iterable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kernel_support.harness import execute
from kernel_support.scripts import cases, random_case

from hoare.kernel import Outcome, Phase, Rate, Stats, SuccessTracker, wilson_interval
from hoare.kernel.stats import Z_95

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def outcome_pool() -> tuple[Outcome, ...]:
    """Outcomes of 400 real calls of varied contracts (seeded, so the pool is stable)."""
    pool = []
    for seed in range(400):
        outcome = execute(random_case(random.Random(seed))).final_outcome
        assert outcome is not None
        pool.append(outcome)
    return tuple(pool)


def pooled_outcomes() -> st.SearchStrategy[Outcome]:
    return st.integers(0, len(outcome_pool()) - 1).map(lambda i: outcome_pool()[i])


OUTCOME_LISTS = st.lists(st.deferred(pooled_outcomes), max_size=40)


class Model:
    """What the tracker must report: plain sums over the recorded outcomes."""

    def __init__(self) -> None:
        self.calls = self.successes = self.first = self.generations = 0
        self.families: dict[str, list[int]] = {}

    def record(self, outcome: Outcome) -> None:
        self.calls += 1
        self.successes += outcome.success
        post = sum(1 for a in outcome.attempts if a.phase is Phase.POST)
        pre = sum(1 for a in outcome.attempts if a.phase is Phase.PRE)
        # §7: a first-attempt success used no pre-remedy and one generation attempt
        self.first += outcome.success and pre == 0 and post == 1
        self.generations += post
        for family, passed in outcome.trials:
            counts = self.families.setdefault(family, [0, 0])
            counts[0] += passed
            counts[1] += 1

    def check(self, stats: Stats) -> None:
        assert stats.calls == Rate(self.successes, self.calls)
        assert stats.first_attempt_successes == self.first
        assert stats.remedied_successes == self.successes - self.first
        assert stats.generation_calls == self.generations
        assert {k: (r.successes, r.trials) for k, r in stats.families.items()} == \
            {k: (c[0], c[1]) for k, c in self.families.items()}


def fed(outcomes: Iterable[Outcome]) -> tuple[SuccessTracker, Model]:
    tracker, model = SuccessTracker(), Model()
    for outcome in outcomes:
        tracker.record(outcome)
        model.record(outcome)
    return tracker, model


def assert_counts_bounded(stats: Stats) -> None:
    assert 0 <= stats.calls.successes <= stats.calls.trials
    assert stats.first_attempt_successes >= 0
    assert stats.remedied_successes >= 0
    assert stats.first_attempt_successes + stats.remedied_successes == stats.calls.successes
    for rate in stats.families.values():
        assert 0 <= rate.successes <= rate.trials


def assert_rates_unit(stats: Stats) -> None:
    if stats.calls.trials == 0:
        assert stats.p_succ is None
    else:
        assert stats.p_succ is not None
        assert 0.0 <= stats.p_succ <= 1.0
    for rate in stats.families.values():
        assert rate.trials >= 1  # a family exists once it has a trial
        assert rate.estimate is not None
        assert 0.0 <= rate.estimate <= 1.0


def assert_product_le_min(stats: Stats) -> None:
    rates = [r.estimate for r in stats.families.values() if r.estimate is not None]
    product = stats.product_estimate
    if not rates:
        assert product is None
        return
    assert product is not None
    assert 0.0 <= product
    for rate in rates:
        assert product <= rate
    assert math.isclose(product, math.prod(rates), rel_tol=1e-12, abs_tol=1e-300)


def assert_interval_contains(rate: Rate) -> None:
    low, high = rate.interval
    assert 0.0 <= low <= high <= 1.0
    if rate.estimate is None:
        assert (low, high) == (0.0, 1.0)
    else:
        assert low <= rate.estimate <= high


# ================================================================ named invariants


@PROPERTY
@given(OUTCOME_LISTS)
def test_stats_counts_bounded(outcomes: list[Outcome]) -> None:
    """stats-counts-bounded: 0 <= successes <= calls, first-attempt plus remedied successes
    equal successes, each family's passes <= its trials; and every figure is exactly the
    model's sum over the recorded outcomes."""
    tracker, model = fed(outcomes)
    stats = tracker.snapshot()
    assert_counts_bounded(stats)
    assert stats.calls.trials == len(outcomes)
    model.check(stats)


@PROPERTY
@given(OUTCOME_LISTS)
def test_stats_rate_unit(outcomes: list[Outcome]) -> None:
    """stats-rate-unit: P_succ (undefined before the first call) and every family rate lie
    in [0, 1], and are successes / trials."""
    tracker, model = fed(outcomes)
    stats = tracker.snapshot()
    assert_rates_unit(stats)
    if model.calls:
        assert stats.p_succ == model.successes / model.calls
    for name, rate in stats.families.items():
        assert rate.estimate == model.families[name][0] / model.families[name][1]


_RATES = st.integers(1, 10**9).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))
_FAMILIES = st.dictionaries(st.text(max_size=4), st.one_of(_RATES, st.just((0, 0))), max_size=8)


@PROPERTY
@given(OUTCOME_LISTS, _FAMILIES)
def test_stats_product_le_min(outcomes: list[Outcome], families: dict[str, tuple[int, int]],
                              ) -> None:
    """stats-product-le-min: the product-of-families estimate (families with a trial) never
    exceeds any family's rate, hence the smallest; it is their product, and undefined
    without families. Checked on tracker snapshots and on arbitrary Stats."""
    tracker, _ = fed(outcomes)
    assert_product_le_min(tracker.snapshot())
    arbitrary = Stats(Rate(0, 0), 0, 0, 0, {k: Rate(s, n) for k, (s, n) in families.items()})
    assert_product_le_min(arbitrary)


@PROPERTY
@given(st.integers(0, 10**12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       OUTCOME_LISTS)
def test_stats_interval_contains(counts: tuple[int, int], outcomes: list[Outcome]) -> None:
    """stats-interval-contains: the Wilson 95% interval lies in [0, 1] and contains the point
    estimate (for any counts, and for a tracker's P_succ and family rates); (0, 1) before
    the first trial; and it is the Wilson score interval."""
    successes, trials = counts
    assert_interval_contains(Rate(successes, trials))
    if trials:
        p = successes / trials
        z2 = Z_95 * Z_95
        centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
        half = Z_95 / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials
                                                   + z2 / (4 * trials * trials))
        low, high = wilson_interval(successes, trials)
        assert Rate(successes, trials).interval == (low, high)
        assert math.isclose(low, max(0.0, centre - half), abs_tol=1e-9)
        assert math.isclose(high, min(1.0, centre + half), abs_tol=1e-9)
        mirrored = wilson_interval(trials - successes, trials)  # symmetric in p <-> 1 - p
        assert math.isclose(mirrored[0], 1 - high, abs_tol=1e-9)
        assert math.isclose(mirrored[1], 1 - low, abs_tol=1e-9)
    stats = fed(outcomes)[0].snapshot()
    assert_interval_contains(stats.calls)
    for rate in stats.families.values():
        assert_interval_contains(rate)


# ================================================================ more of §7


def test_wilson_interval_known_values() -> None:
    """Reference values (Wilson 1927; e.g. 8/10 -> [0.490, 0.943])."""
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and round(high, 3) == 0.278
    low, high = wilson_interval(10, 10)
    assert round(low, 3) == 0.722 and high == 1.0


@PROPERTY
@given(OUTCOME_LISTS)
def test_stats_as_dict_agrees(outcomes: list[Outcome]) -> None:
    """Stats.as_dict reports the same figures as the snapshot's fields."""
    stats = fed(outcomes)[0].snapshot()
    figures = stats.as_dict()
    assert figures["calls"] == stats.calls.trials
    assert figures["successes"] == stats.calls.successes
    assert figures["p_succ"] == stats.p_succ
    assert figures["interval_95"] == list(stats.calls.interval)
    assert figures["product_estimate"] == stats.product_estimate
    assert figures["first_attempt_successes"] == stats.first_attempt_successes
    assert figures["remedied_successes"] == stats.remedied_successes
    families = figures["families"]
    assert isinstance(families, dict)
    assert set(families) == set(stats.families)
    for name, rate in stats.families.items():
        assert families[name]["passes"] == rate.successes
        assert families[name]["trials"] == rate.trials


def test_pool_covers_the_cases_that_matter() -> None:
    """The outcome pool holds first-attempt and remedied successes, failures, and trials of
    every family both passing and failing (otherwise the tests above would prove little)."""
    model = Model()
    for outcome in outcome_pool():
        model.record(outcome)
    assert model.first > 10
    assert model.successes - model.first > 10
    assert model.calls - model.successes > 10
    for passes, trials in model.families.values():
        assert 0 < passes < trials


class SuccessTrackerMachine(RuleBasedStateMachine):
    """Random sequences of record / snapshot / reset, checked against the model after
    every step; snapshots taken earlier must not change afterwards."""

    def __init__(self) -> None:
        super().__init__()
        self.tracker = SuccessTracker()
        self.model = Model()
        self.snapshots: list[tuple[Stats, dict[str, object]]] = []

    @rule(outcome=st.deferred(pooled_outcomes))
    def record_pooled(self, outcome: Outcome) -> None:
        self.tracker.record(outcome)
        self.model.record(outcome)

    @rule(case=cases())
    def record_fresh_call(self, case: object) -> None:
        outcome = execute(case).final_outcome  # type: ignore[arg-type]
        assert outcome is not None
        self.tracker.record(outcome)
        self.model.record(outcome)

    @rule()
    def snapshot(self) -> None:
        stats = self.tracker.snapshot()
        self.snapshots.append((stats, stats.as_dict()))

    @precondition(lambda self: self.model.calls > 0)
    @rule()
    def reset(self) -> None:
        self.tracker.reset()
        self.model = Model()

    @invariant()
    def matches_model(self) -> None:
        stats = self.tracker.snapshot()
        self.model.check(stats)
        assert_counts_bounded(stats)
        assert_rates_unit(stats)
        assert_product_le_min(stats)
        assert_interval_contains(stats.calls)

    @invariant()
    def snapshots_are_frozen(self) -> None:
        for stats, figures in self.snapshots:
            assert stats.as_dict() == figures


TestSuccessTrackerMachine = SuccessTrackerMachine.TestCase
TestSuccessTrackerMachine.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])


def _outcome_for(thread: int, i: int) -> Outcome:
    """A real outcome with its trials rewritten: families are shared across threads and
    new ones keep appearing, so that recording races on creating a family's counters."""
    real = outcome_pool()[(thread * 131 + i) % len(outcome_pool())]
    trials = ((f"shared{i % 7}", i % 2 == 0), (f"new{i % 97}", True), ("common", real.success))
    return real._replace(trials=trials)


def test_tracker_is_thread_safe() -> None:
    """Many threads recording at once lose no count, and snapshots read meanwhile are
    always consistent (§7: the tracker is safe to share between threads)."""
    threads_count, per_thread = 8, 1000
    outcome_pool()  # built once, before the threads start
    tracker = SuccessTracker()
    barrier = threading.Barrier(threads_count + 1)
    done = threading.Event()
    problems: list[str] = []

    def writer(thread: int) -> None:
        barrier.wait()
        try:
            for i in range(per_thread):
                tracker.record(_outcome_for(thread, i))
        except Exception as error:  # reported below: a thread's exception fails no test
            problems.append(f"writer {thread}: {error!r}")

    def reader() -> None:
        barrier.wait()
        previous = 0
        try:
            while not done.is_set():
                stats = tracker.snapshot()
                assert_counts_bounded(stats)
                assert stats.calls.trials >= previous
                previous = stats.calls.trials
                time.sleep(0.0002)
        except Exception as error:  # AssertionError included
            problems.append(f"reader: {error!r}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads_count)]
        watcher = threading.Thread(target=reader)
        for thread in (*workers, watcher):
            thread.start()
        for thread in workers:
            thread.join()
        done.set()
        watcher.join()
    finally:
        sys.setswitchinterval(interval)
    model = Model()
    for thread in range(threads_count):
        for i in range(per_thread):
            model.record(_outcome_for(thread, i))
    model.check(tracker.snapshot())
    assert problems == []
