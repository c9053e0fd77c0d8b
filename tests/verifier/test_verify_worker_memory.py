"""A ``hoare verify`` worker reuses the memory of the z3 contexts it frees (counted in
page faults: a count, not a time) and keeps its own objects out of the collector's
scans, in real worker processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from hoare.verifier.project.targets import Unit, plan
from hoare.verifier.project.worker import GC_THRESHOLD, encode_unit
from hoare.verifier.solve.solver import SolverOptions

GENERATOR = Path(__file__).resolve().parents[2] / "bench" / "generate_contracts.py"


def _worker_faults(directory: Path, units: list[Unit], checked: bool = True) -> int:
    """Minor page faults of one worker process that checked ``units`` (each holding a
    contract, unless not ``checked``), start to exit."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MALLOC_") and key != "GLIBC_TUNABLES"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    process = subprocess.Popen([sys.executable, "-m", "hoare.verifier.project.worker"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=directory, env=env)
    assert process.stdin is not None and process.stdout is not None
    assert json.loads(process.stdout.readline()) == "ready"
    for unit in units:
        request = {"unit": encode_unit(unit), "options": asdict(SolverOptions()),
                   "overrides": {}}
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline()) == "imported"
        result = json.loads(process.stdout.readline())
        assert not result["errors"] and (result["contracts"] or not checked), result
    process.stdin.close()
    _pid, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_minflt


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_worker_does_not_fault_in_each_contexts_memory_again(tmp_path: Path) -> None:
    """Failed before: from this start (which unit a worker checks first decides the
    heap's history), each further unit cost ~4,000 page faults (z3's ~16 MB context
    unmapped when freed and mapped again by the next), a quarter of the worker's CPU."""
    subprocess.run([sys.executable, str(GENERATOR), str(tmp_path), "-n", "116", "--seed",
                    "0"], check=True, capture_output=True, timeout=300)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        units = plan(["."], [])[100:116]
    finally:
        os.chdir(old)
    one = _worker_faults(tmp_path, units[:1])
    many = _worker_faults(tmp_path, units)
    per_unit = (many - one) / (len(units) - 1)
    assert per_unit < 1_000, per_unit


def test_a_worker_freezes_its_own_objects_and_collects_the_young_less_often(
        tmp_path: Path) -> None:
    """Failed before: gc's defaults (700, 10, 10) and nothing frozen, so every
    collection of the older generations rescanned pydantic's, z3's and hoare's objects,
    and the young one ran every 700 allocations (~6% of a worker's CPU)."""
    seen = tmp_path / "seen.json"
    module = tmp_path / "probe_collector.py"
    module.write_text("import gc, json\n"
                      f"open({str(seen)!r}, 'w').write(json.dumps("
                      "[gc.get_threshold(), gc.get_freeze_count()]))\n")
    _worker_faults(tmp_path, [Unit(str(module), module, None, None, None)], checked=False)
    threshold, frozen = json.loads(seen.read_text())
    assert tuple(threshold) == GC_THRESHOLD and frozen > 10_000
