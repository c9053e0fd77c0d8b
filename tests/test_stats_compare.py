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

from hoare.stats_compare import compare, confidence_sequence, verdict_status
from hoare.stats_store import CallRecord, StatsStore

ROOT = Path(__file__).resolve().parents[1]


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
                          env={"PYTHONPATH": str(ROOT / "src"),
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
