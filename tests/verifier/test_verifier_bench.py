"""``hoare verify`` on 200 generated contracts: it completes, every verdict is the
one the generator planned, and the report says how long it took (no timing
assertion: machines are shared)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("generate_contracts",
                                                  ROOT / "bench" / "generate_contracts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_contracts"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_verify_200_generated_contracts(tmp_path: Path) -> None:
    manifest = _generator().generate(tmp_path, 200, seed=7)  # type: ignore[attr-defined]
    assert sum(1 for entry in manifest.values() if entry["defect"]) >= 5
    env = {**os.environ, "PYTHONPATH": LIBRARY}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", str(tmp_path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 1, done.stderr  # the defects fail
    report = json.loads(done.stdout)
    assert report["seconds"] > 0
    print(f"\nhoare verify: 200 generated contracts in {report['seconds']:.1f} s "
          f"({report['summary']})")
    contracts = {c["name"]: c for c in report["contracts"]}
    assert len(contracts) == 200
    assert report["summary"]["unknown"] == 0
    # a missing or extra check is a mismatch, never a pass (the bench's own comparison)
    assert _generator().mismatches(manifest, report) == []  # type: ignore[attr-defined]
