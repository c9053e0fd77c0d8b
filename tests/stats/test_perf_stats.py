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
