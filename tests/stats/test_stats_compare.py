"""``hoare compare``: the time-uniform confidence sequences keep false verdicts under
alpha however often one looks (simulated streams), reach a verdict when the rates
differ, and the CLI's exit codes, JSON and JUnit outputs."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from library_under_test import LIBRARY

from hoare.stats.compare import compare, confidence_sequence, verdict_status
from hoare.stats.records import CallRecord
from hoare.stats.store import StatsStore

ROOT = Path(__file__).resolve().parents[2]


def _rows(outcomes: list[bool]) -> list[dict[str, Any]]:
    return [{"success": ok, "cost": None, "latency_ms": 1.0} for ok in outcomes]


def test_the_sequence_is_wider_than_a_fixed_sample_interval_and_shrinks() -> None:
    from hoare.kernel.stats import wilson_interval

    lo, hi = confidence_sequence(80, 100, 0.05)
    w_lo, w_hi = wilson_interval(80, 100)
    assert lo < w_lo and hi > w_hi  # the price of looking at every step
    widths = [confidence_sequence(n * 8 // 10, n, 0.05) for n in (10, 100, 1000, 10_000)]
    assert [h - low for low, h in widths] == sorted((h - low for low, h in widths),
                                                    reverse=True)
    assert confidence_sequence(0, 0, 0.05) == (0.0, 1.0)


@pytest.mark.parametrize("rate", [0.5, 0.9])
def test_false_verdicts_stay_under_alpha_when_looking_after_every_batch(rate: float) -> None:
    """Equal rates; 300 simulated streams of up to 1200 calls per label, looked at
    after every batch of 20: a stream counts as a false verdict if any look said
    "worse" or either "better" verdict. Their fraction stays under alpha."""
    rng = random.Random(2026)
    alpha, streams, false = 0.05, 300, 0
    for _ in range(streams):
        a: list[bool] = []
        b: list[bool] = []
        for _look in range(60):
            a += [rng.random() < rate for _ in range(20)]
            b += [rng.random() < rate for _ in range(20)]
            result = compare(_rows(a), _rows(b), 0.0, 1 - alpha, estimate_more=False)
            if result["gate"] == "worse" or result["verdict"] != "cannot tell yet":
                false += 1
                break
    assert false / streams <= alpha, false


def test_a_real_difference_is_found_and_the_gate_says_so() -> None:
    rng = random.Random(7)
    a = [rng.random() < 0.9 for _ in range(600)]
    b = [rng.random() < 0.6 for _ in range(600)]
    worse = compare(_rows(a), _rows(b), 0.02, 0.95)
    assert worse["gate"] == "worse" and worse["verdict"] == "baseline better"
    better = compare(_rows(b), _rows(a), 0.02, 0.95)
    assert better["gate"] == "not worse" and better["verdict"] == "candidate better"
    few = compare(_rows(a[:20]), _rows(b[:20]), 0.02, 0.95)
    assert few["gate"] == "cannot tell yet" and few["more_calls"] > 0
    assert verdict_status([worse, better]) == 1 and verdict_status([better, few]) == 3
    assert verdict_status([better]) == 0


def _store(path: Path, label: str, contract: str, rate: float, calls: int,
           seed: int) -> None:
    rng = random.Random(seed)
    store = StatsStore(path)
    for _ in range(calls):
        ok = rng.random() < rate
        store.record(CallRecord(time.time(), contract, "h", label, ok, ok, 1, 0, None,
                                None, None, 0.01 if ok else 0.02, 5.0, "E", None, ()))
    store.close()


def _compare(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoare.cli", "compare", "--db", str(db),
                           *extra], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": LIBRARY,
                               "PATH": os.environ.get("PATH", "")})


def test_hoare_compare_exit_codes_json_and_junit(tmp_path: Path) -> None:
    db = tmp_path / "calls.db"
    _store(db, "old", "m:C", 0.9, 800, 1)
    _store(db, "new", "m:C", 0.55, 800, 2)
    _store(db, "same", "m:C", 0.9, 800, 3)
    _store(db, "few", "m:C", 0.9, 15, 4)
    worse = _compare(db, "--baseline", "old", "--candidate", "new", "--max-drop", "0.02",
                     "--json", "--junit", str(tmp_path / "gate.xml"))
    assert worse.returncode == 1, worse.stderr
    found = json.loads(worse.stdout)
    (item,) = found["contracts"]
    assert item["gate"] == "worse" and found["status"] == 1
    assert item["baseline"]["calls"] == item["candidate"]["calls"] == 800
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None
    same = _compare(db, "--baseline", "old", "--candidate", "same", "--max-drop", "0.1")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "not worse" in same.stdout
    undecided = _compare(db, "--baseline", "old", "--candidate", "few", "--max-drop", "0.02")
    assert undecided.returncode == 3 and "more call(s) would settle it" in undecided.stdout
    assert _compare(db, "--baseline", "old", "--candidate", "nobody").returncode == 2
    assert _compare(db, "--baseline", "old", "--candidate", "new",
                    "--confidence", "1.5").returncode == 2
    assert _compare(tmp_path / "missing.db", "--baseline", "a",
                    "--candidate", "b").returncode == 2


@pytest.mark.parametrize("draw", ["lognormal", "discrete"])
def test_the_median_sequence_holds_the_true_median_at_every_look(draw: str) -> None:
    """200 streams of up to 1000 values, looked at after every 25: the fraction of
    streams where any look's sequence missed the true median stays under alpha, for a
    continuous distribution and for one with ties (where P(X = median) > 0)."""
    from hoare.stats.compare import quantile_sequence

    rng = random.Random(11)
    alpha, streams, missed = 0.05, 200, 0
    sample = {"lognormal": lambda: rng.lognormvariate(3.0, 1.0),
              "discrete": lambda: float(rng.choice([1, 2, 2, 3, 5]))}[draw]
    true_median = {"lognormal": 20.085536923187668, "discrete": 2.0}[draw]
    widths = []
    for _ in range(streams):
        values: list[float] = []
        for _look in range(40):
            values += [sample() for _ in range(25)]
            low, high = quantile_sequence(values, 0.5, alpha)
            if (low is not None and low > true_median) or \
                    (high is not None and high < true_median):
                missed += 1
                break
        widths.append((low, high))
    assert missed / streams <= alpha, missed
    # and it is informative: after 1000 values both ends are finite and near the median
    low, high = widths[-1]
    assert low is not None and high is not None
    assert (low <= true_median <= high) and (high - low) < true_median


def test_the_median_gates_find_a_slower_or_dearer_candidate() -> None:
    rng = random.Random(5)

    def rows(latency: float, cost: float, count: int) -> list[dict[str, Any]]:
        return [{"success": True, "cost": cost * rng.uniform(0.8, 1.2),
                 "latency_ms": latency * rng.lognormvariate(0, 0.3)} for _ in range(count)]

    base = rows(100.0, 0.010, 600)
    slower = compare(base, rows(200.0, 0.010, 600), 0.05, 0.95,
                     max_latency_increase=0.2, max_cost_increase=0.2)
    assert slower["gates"] == {"p_succ": "not worse", "cost": "not worse",
                               "latency": "worse"} and slower["gate"] == "worse"
    dearer = compare(base, rows(100.0, 0.013, 600), 0.05, 0.95, max_cost_increase=0.1)
    assert dearer["gates"]["cost"] == "worse" and "latency" not in dearer["gates"]
    same = compare(base, rows(100.0, 0.010, 600), 0.05, 0.95, max_latency_increase=0.5)
    assert same["gates"]["latency"] == "not worse" and same["gate"] == "not worse"
    few = compare(base[:5], rows(100.0, 0.010, 5), 0.05, 0.95, max_latency_increase=0.1)
    assert few["gates"]["latency"] == "cannot tell yet"


def test_hoare_compare_gates_cost_and_latency_on_request(tmp_path: Path) -> None:
    db = tmp_path / "calls.db"
    store = StatsStore(db)
    rng = random.Random(3)
    for label, latency in (("old", 50.0), ("slow", 90.0)):
        for _ in range(500):
            store.record(CallRecord(time.time(), "m:C", "h", label, True, True, 1, 0, None,
                                    None, None, 0.01, latency * rng.uniform(0.9, 1.1), "E",
                                    None, ()))
    store.close()
    plain = _compare(db, "--baseline", "old", "--candidate", "slow", "--max-drop", "0.05")
    assert plain.returncode == 0, plain.stdout + plain.stderr  # latency is only reported
    gated = _compare(db, "--baseline", "old", "--candidate", "slow", "--max-drop", "0.05",
                     "--max-latency-increase", "0.25", "--max-cost-increase", "0.1",
                     "--junit", str(tmp_path / "gate.xml"))
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "latency gate (median at most 1.25x the baseline's): worse" in gated.stdout
    assert "cost gate (median at most 1.1x the baseline's): not worse" in gated.stdout
    failure = ET.parse(tmp_path / "gate.xml").getroot().find("testcase/failure")
    assert failure is not None and "(latency)" in (failure.get("message") or "")
    bad = _compare(db, "--baseline", "old", "--candidate", "slow",
                   "--max-latency-increase", "-1")
    assert bad.returncode == 2 and "expected a finite number >= 0" in bad.stderr
