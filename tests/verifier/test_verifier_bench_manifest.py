"""Scenario 5's comparison of a ``hoare verify`` report with the generator's manifest
(``bench/generate_contracts.py``, ``mismatches``): a check or contract missing from
the report, or one the manifest does not list, is a mismatch, never a pass.

Before, a missing ``post_total`` counted as a pass, and an extra check kind or an
extra contract was not looked at; the mutations below each went unnoticed then.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_contracts",
                                                  ROOT / "bench" / "generate_contracts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_contracts"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


def _report_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """The report a verifier exactly matching the manifest would write."""
    contracts = []
    for name, entry in manifest.items():
        checks = [{"kind": kind, "status": status}
                  for kind, statuses in GENERATOR.expected_checks(entry).items()
                  for status in statuses]
        contracts.append({"name": name, "checks": checks})
    return {"contracts": contracts}


def _mutations(report: dict[str, Any], pick: int) -> list[tuple[str, dict[str, Any]]]:
    """Reports that differ from ``report`` in one way each (``pick`` chooses where)."""
    contracts = report["contracts"]
    index = pick % len(contracts)
    checks = contracts[index]["checks"]
    out = []
    dropped = copy.deepcopy(report)
    del dropped["contracts"][index]["checks"][pick % len(checks)]
    out.append(("a check dropped", dropped))
    extra = copy.deepcopy(report)
    extra["contracts"][index]["checks"].append({"kind": "post_total", "status": "pass"}
                                               if all(c["kind"] != "post_total"
                                                      for c in checks)
                                               else {"kind": "translation",
                                                     "status": "unknown"})
    out.append(("a check added", extra))
    kind = copy.deepcopy(report)
    kind["contracts"][index]["checks"].append({"kind": "no_such_field", "status": "pass"})
    out.append(("an unknown kind added", kind))
    status = copy.deepcopy(report)
    check = status["contracts"][index]["checks"][pick % len(checks)]
    check["status"] = "unknown" if check["status"] != "unknown" else "pass"
    out.append(("a status changed", status))
    missing = copy.deepcopy(report)
    del missing["contracts"][index]
    out.append(("a contract missing", missing))
    twice = copy.deepcopy(report)
    twice["contracts"].append(copy.deepcopy(contracts[index]))
    out.append(("a contract reported twice", twice))
    foreign = copy.deepcopy(report)
    foreign["contracts"].append({"name": "elsewhere:Task9999",
                                 "checks": copy.deepcopy(checks)})
    out.append(("a contract not in the manifest", foreign))
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 12), pick=st.integers(0, 10**6))
def test_every_difference_from_the_manifest_is_a_mismatch(tmp_path_factory: Any, seed: int,
                                                         count: int, pick: int) -> None:
    manifest = GENERATOR.generate(tmp_path_factory.mktemp("c"), count, seed=seed,
                                  broken=0.3)
    report = _report_of(manifest)
    assert GENERATOR.mismatches(manifest, report) == []
    for what, mutated in _mutations(report, pick):
        assert GENERATOR.mismatches(manifest, mutated), what


def test_a_missing_post_total_is_a_mismatch() -> None:
    """The named bug: the manifest expects ``post_total`` pass; the report has none."""
    entry = {"pre_satisfiable": "pass", "post_satisfiable": "pass",
             "predicate_vacuous": ["pass"], "post_total": "pass", "defect": None}
    report = {"contracts": [{"name": "m:T", "checks": [
        {"kind": "pre_satisfiable", "status": "pass"},
        {"kind": "post_satisfiable", "status": "pass"},
        {"kind": "predicate_vacuous", "status": "pass"}]}]}
    assert GENERATOR.mismatches({"m:T": entry}, report) == [
        "m:T: post_total missing, expected ['pass']"]
    assert GENERATOR.mismatches({"m:T": entry}, {"unparsed_output": "Traceback"}) == [
        "m:T: not reported"]


def test_the_verifier_gets_the_manifest_exactly(tmp_path: Path) -> None:
    """30 generated contracts (both kinds of ``post_total`` expectation, defects) and
    the real ``hoare verify``: no difference at all."""
    manifest = GENERATOR.generate(tmp_path, 30, seed=0)
    assert {entry["post_total"] for entry in manifest.values()} == {None, "pass"}
    env = {**os.environ, "PYTHONPATH": LIBRARY, "HOARE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stderr  # the defects fail
    assert GENERATOR.mismatches(manifest, json.loads(done.stdout)) == []
