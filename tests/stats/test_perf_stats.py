"""``contract_perf_stats()``: SymbolicAI's aggregate over an instance's calls (per
operation count, total, mean, std, min, max, percentage; overhead), the latest call's
figures under ``contract_outcome``, and exact counts under many threads (child
process, so a crash fails the test)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine
from hoare.stats.perf import PerfStats

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"count", "total", "mean", "std", "min", "max", "percentage"}
OPERATIONS = ["input_validation", "act_execution", "output_validation",
              "forward_execution", "contract_execution", "overhead", "total_execution"]


class Ask(LLMDataModel):
    text: str


class Said(LLMDataModel):
    text: str


@contract(remedy_retry_params={"delay": 0, "jitter": 0})
class Echo(Contract):
    prompt = "Echo the text."

    def act(self, input: Ask) -> Ask:
        time.sleep(0.002)
        return input

    def post(self, output: Said) -> bool:
        return bool(output.text)

    def forward(self, input: Ask) -> Said:
        time.sleep(0.001)
        return self.contract_result if self.contract_successful else Said(text="fallback")


def test_the_aggregate_over_an_instance_s_calls() -> None:
    echo = Echo(engine=FunctionEngine(lambda request: '{"text": "hi"}'))
    for _ in range(3):
        echo(Ask(text="hi"))
    stats = echo.contract_perf_stats()
    assert set(stats) == {*OPERATIONS, "contract_outcome"}
    for name in OPERATIONS:
        assert set(stats[name]) == KEYS, name
        item = stats[name]
        assert item["count"] == 3, name
        assert 0 <= item["min"] <= item["mean"] <= item["max"], name
        assert item["total"] == pytest.approx(3 * item["mean"]), name
        assert item["std"] >= 0 and 0 <= item["percentage"] <= 100.0 + 1e-9, name
    assert stats["act_execution"]["min"] >= 0.002  # the act sleeps 2 ms
    assert stats["forward_execution"]["min"] >= 0.001
    parts = sum(stats[n]["total"] for n in ("input_validation", "act_execution",
                                            "output_validation", "forward_execution",
                                            "overhead"))
    assert parts == pytest.approx(stats["total_execution"]["total"], rel=1e-6)
    assert stats["total_execution"]["percentage"] == pytest.approx(100.0)
    # as SymbolicAI: contract_execution is the whole call, forward included
    assert stats["contract_execution"] == stats["total_execution"]
    latest = stats["contract_outcome"]
    assert latest["success"] and latest["generation_attempts"] == 1
    assert set(latest["phases_ms"]) >= {"input", "act", "post", "forward"}


def test_a_fresh_instance_has_zero_counts_and_no_latest_call() -> None:
    stats = Echo(engine=FunctionEngine(lambda request: "{}")).contract_perf_stats()
    assert stats["contract_outcome"] == {}
    assert all(stats[n]["count"] == 0 and stats[n]["total"] == 0 for n in OPERATIONS)


def test_the_sums_match_a_direct_computation() -> None:
    stats = PerfStats()
    calls = [({"input": 1_000, "pre": 2_000, "post": 5_000, "forward": 4_000}, 15_000),
             ({"input": 3_000, "post": 1_000, "forward": 2_000}, 6_000)]
    for timings, total in calls:
        stats.add(timings, total)
    found = stats.as_dict()
    validation = [3e-6, 3e-6]
    assert found["input_validation"]["count"] == 2
    assert found["input_validation"]["std"] == pytest.approx(0.0, abs=1e-12)
    assert found["input_validation"]["mean"] == pytest.approx(sum(validation) / 2)
    assert found["act_execution"]["count"] == 0  # never ran: not counted, as SymbolicAI
    assert found["output_validation"]["std"] == pytest.approx(2e-6)
    assert found["overhead"]["total"] == pytest.approx(3e-6)
    assert found["total_execution"]["total"] == pytest.approx(21e-6)
    assert found["contract_execution"]["total"] == pytest.approx(21e-6)
    assert found["contract_execution"]["percentage"] == pytest.approx(100.0)
    assert found["forward_execution"]["percentage"] == pytest.approx(100 * 6 / 21)
    assert not math.isnan(found["overhead"]["std"])


THREADS = r'''
import json, threading
from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine

class Ask(LLMDataModel):
    text: str

@contract()
class Echo(Contract):
    prompt = "Echo."
    def forward(self, input: Ask) -> Ask:
        return self.contract_result

echo = Echo(engine=FunctionEngine(lambda request: '{"text": "x"}'))
def work():
    for _ in range(50):
        echo(Ask(text="x"))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
stats = echo.contract_perf_stats()
print(json.dumps({k: v["count"] for k, v in stats.items() if k != "contract_outcome"}))
'''


def test_counts_are_exact_under_many_threads() -> None:
    done = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": LIBRARY, "PATH": ""})
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["total_execution"] == counts["output_validation"] == 400
    assert counts["forward_execution"] == 400 and counts["act_execution"] == 0


def _reference_sums(calls: list[tuple[list[tuple[object, int]], int, bool]]
                    ) -> dict[str, list[float]]:
    """The per-call fold as it was written first (one Python loop over each call's
    marks): what the grouped, column-wise fold must reproduce."""
    from hoare.stats.perf import OPERATIONS as OPS

    index = {phase: i for i, parts in enumerate(OPS.values()) for phase in parts}
    columns: list[list[float]] = [[] for _ in range(6)]
    for marks, total_ns, act in calls:
        ops = [0, 0, 0, 0]
        phases = 0
        previous, start = marks[0] if marks else (None, 0)
        for phase, now in marks[1:]:
            if previous is not None:
                position = index.get(previous.value)
                if position is not None and (act or position != index["act"]):
                    ops[position] += now - start
                    phases += now - start
            previous, start = phase, now
        for position in range(4):
            if ops[position] > 0:
                columns[position].append(ops[position] / 1e9)
        total = max(total_ns, phases)
        columns[4].append((total - phases) / 1e9)
        columns[5].append(total / 1e9)
    return dict(zip([*OPS, "overhead", "total_execution"], columns, strict=True))


def _kernel_shaped_marks() -> st.SearchStrategy[list[tuple[object, int]]]:
    """Clock marks as the kernel makes them: a prefix of the phases in their order, or a
    fallback after any of them (FORWARD, RESULT, None), or a forward that raised (the
    marks end at FORWARD); plus arbitrary sequences, as ``PerfStats.add`` may give."""
    from hoare.kernel import Phase

    order = [Phase.INPUT, Phase.PRE, Phase.ACT, Phase.PREFLIGHT, Phase.POST]
    shaped = st.tuples(st.integers(1, 5), st.booleans(), st.booleans()).map(
        lambda t: [*order[:t[0]], Phase.FORWARD,
                   *(() if t[1] else (Phase.RESULT, None))][: None if t[2] else 99])
    anything = st.lists(st.sampled_from([*Phase, None]), max_size=9)
    return st.one_of(shaped, anything).flatmap(lambda phases: st.lists(
        st.integers(0, 10**7), min_size=len(phases), max_size=len(phases)).map(
        lambda steps: [(p, sum(steps[: i + 1])) for i, p in enumerate(phases)]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_kernel_shaped_marks(), st.integers(0, 10**8), st.booleans()),
                max_size=150))
def test_the_grouped_fold_equals_the_per_call_loop(
        calls: list[tuple[list[tuple[object, int]], int, bool]]) -> None:
    stats = PerfStats()
    for marks, total, act in calls:
        stats.record(marks, total, act)
    found = stats.as_dict()
    for name, seconds in _reference_sums(calls).items():
        item = found[name]
        assert item["count"] == len(seconds), name
        assert item["total"] == pytest.approx(math.fsum(seconds), rel=1e-9, abs=1e-15), name
        if seconds:
            assert item["min"] == pytest.approx(min(seconds), rel=1e-12), name
            assert item["max"] == pytest.approx(max(seconds), rel=1e-12), name


@settings(max_examples=200, deadline=None)
@given(_kernel_shaped_marks(), st.booleans(), st.integers(1, 200), st.randoms())
def test_a_batch_of_one_shape_folds_as_the_per_call_loop(
        marks: list[tuple[object, int]], act: bool, count: int, rng: object) -> None:
    """The steady state: every queued call went through the same phases (the batch is
    folded in one pass over its columns)."""
    import random

    assert isinstance(rng, random.Random)
    calls = []
    for _ in range(count):
        now = 0
        shifted = []
        for phase, _ in marks:
            now += rng.randrange(0, 10**6)
            shifted.append((phase, now))
        calls.append((shifted, rng.randrange(0, 10**7), act))
    stats = PerfStats()
    for each, total, has_act in calls:
        stats.record(each, total, has_act)
    found = stats.as_dict()
    for name, seconds in _reference_sums(calls).items():
        assert found[name]["count"] == len(seconds), name
        assert found[name]["total"] == pytest.approx(math.fsum(seconds), rel=1e-9,
                                                     abs=1e-15), name
        if len(seconds) > 1:
            mean = math.fsum(seconds) / len(seconds)
            std = math.sqrt(max(math.fsum((s - mean) ** 2 for s in seconds) / len(seconds),
                                0.0))
            assert found[name]["std"] == pytest.approx(std, rel=1e-6, abs=1e-12), name
