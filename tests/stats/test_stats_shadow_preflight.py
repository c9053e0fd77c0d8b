"""Pre-flight shadow mode (issue 29 item 4): ``@contract(preflight="shadow")``,
``configure(preflight=...)`` and ``[tool.hoare] preflight``, in that order; the
pre-flight runs but never refuses (the kernel sees UNKNOWN, "shadow: would refuse:
..."), each would-be refusal is logged once per contract and reason, counted in the
stats store's ``shadow_refusals`` (schema 4, migrated from 3) and by ``hoare stats``."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

import hoare
import hoare.contracts.configuration as configuration
from hoare import Contract, Post, configure, contract
from hoare.cli.parser import main
from hoare.engines.testing import DummyEngine
from hoare.kernel import Verdict, ViolationKind
from hoare.stats.query import query
from hoare.stats.schema import SCHEMA_VERSION
from hoare.stats.store import StatsStore


class Request(BaseModel):
    budget: int = Field(ge=0)


class Plan(BaseModel):
    cost: int = Field(ge=10)
    steps: list[str] = Field(min_length=1)


def _plan_class(**options: Any) -> type[Contract]:
    # the post-condition fails at every attempt: remedies retry without backoff sleeps
    # (the kernel's default would sleep 7.5 s per call; backoff is not what these test)
    @contract(policy="observe", remedy_retry_params={"delay": 0}, **options)
    class MakePlan(Contract):
        prompt = "Plan within the budget."
        post_conditions = (Post(lambda plan, request: plan.cost <= request.budget,
                                "the plan fits the budget"),)

        def forward(self, input: Request) -> Plan:
            return self.contract_result or Plan(cost=10, steps=["fallback"])

    return MakePlan


@pytest.fixture(autouse=True)
def _unconfigured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No configured mode, no pyproject.toml above the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configuration, "_preflight", configuration._KEEP)
    monkeypatch.setattr(configuration, "_shadow_logged", set())
    yield
    configure(stats=None, label=None)


def _call(cls: type[Contract], budget: int = 5) -> tuple[Any, list[object]]:
    engine = DummyEngine('{"cost": 12, "steps": ["do it"]}')
    instance = cls(engine=engine)
    instance(Request(budget=budget))
    return instance.contract_outcome, list(engine.requests)


def test_shadow_runs_the_preflight_but_never_refuses(
        caplog: pytest.LogCaptureFixture) -> None:
    shadowed = _plan_class(preflight="shadow")
    with caplog.at_level(logging.WARNING, "hoare"):
        outcome, calls = _call(shadowed)
        again, more = _call(shadowed)
    assert calls and more  # the model was asked
    for result in (outcome, again):
        assert result.preflight is not None
        assert result.preflight.verdict is Verdict.UNKNOWN
        assert result.preflight.reason.startswith("shadow: would refuse: ")
        assert "ge=10 (Plan.cost)" in result.preflight.reason
        assert ViolationKind.UNSATISFIABLE not in [v.kind for v in result.violations]
    logged = [r for r in caplog.records if "would refuse" in r.getMessage()]
    assert len(logged) == 1  # once per contract and reason
    possible, _ = _call(shadowed, budget=50)  # a satisfiable input: verdict unchanged
    assert possible.preflight.verdict is Verdict.SATISFIABLE


@pytest.mark.parametrize("decorator, configured, pyproject, expected", [
    (None, None, None, "refuse"),
    (None, "shadow", None, "shadow"),
    (None, False, None, "off"),
    (None, None, '"shadow"', "shadow"),
    (None, None, "false", "off"),
    (None, True, '"shadow"', "refuse"),  # configure wins over [tool.hoare]
    (True, "shadow", '"shadow"', "refuse"),  # the decorator wins over both
    ("shadow", False, "false", "shadow"),
    (False, "shadow", '"shadow"', "off"),
])
def test_the_decorator_wins_then_configure_then_pyproject(
        tmp_path: Path, decorator: Any, configured: Any, pyproject: str | None,
        expected: str) -> None:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(f"[tool.hoare]\npreflight = {pyproject}\n")
    if configured is not None:
        configure(preflight=configured)
    options = {} if decorator is None else {"preflight": decorator}
    outcome, calls = _call(_plan_class(**options))
    if expected == "refuse":
        assert outcome.preflight.verdict is Verdict.UNSATISFIABLE and calls == []
    elif expected == "shadow":
        assert outcome.preflight.reason.startswith("shadow: would refuse: ") and calls
    else:
        assert outcome.preflight is None and calls
    configure(preflight=None)  # back to [tool.hoare], else on
    assert configuration.preflight_mode() is not None


@pytest.mark.parametrize("bad", ["yes", "SHADOW", 1, 0, None.__class__, "", 2.0])
def test_a_bad_mode_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="preflight must be True"):
        _plan_class(preflight=bad)
    with pytest.raises(ValueError, match=r"configure\(preflight=...\) must be True"):
        configure(preflight=bad)


def test_a_bad_pyproject_mode_warns_and_keeps_the_preflight_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.hoare]\npreflight = "sometimes"\n')
    with caplog.at_level(logging.WARNING, "hoare"):
        outcome, calls = _call(_plan_class())
    assert outcome.preflight.verdict is Verdict.UNSATISFIABLE and calls == []
    assert any("[tool.hoare] preflight" in r.getMessage() for r in caplog.records)


def test_shadow_refusals_are_stored_and_shown_by_hoare_stats(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "shadow.db"
    configure(stats=path, label="shadow-run")
    shadowed = _plan_class(preflight="shadow")
    _call(shadowed)
    _call(shadowed)
    _call(shadowed, budget=50)
    assert hoare.flush_stats()
    rows = query(str(path))
    assert [r["shadow_refusals"] for r in rows] == [1, 1, 0]
    assert main(["stats", "--db", str(path), "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)["contracts"]
    assert item["shadow_refusals"] == 2 and item["preflight_refusals"] == 0
    assert main(["stats", "--db", str(path)]) == 0
    assert "shadow pre-flight would have refused 2" in capsys.readouterr().out


SQLITE_V3 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE calls (id INTEGER PRIMARY KEY, ts REAL NOT NULL, contract TEXT NOT NULL,
  contract_hash TEXT NOT NULL, label TEXT NOT NULL, success INTEGER NOT NULL,
  first_attempt INTEGER NOT NULL, attempts INTEGER NOT NULL, remedies INTEGER NOT NULL,
  preflight TEXT, input_tokens INTEGER, output_tokens INTEGER, cost REAL,
  latency_ms REAL NOT NULL, engine TEXT, model TEXT, trials TEXT NOT NULL,
  kind TEXT NOT NULL DEFAULT 'contract', provider_faults INTEGER NOT NULL DEFAULT 0);
INSERT INTO meta VALUES ('schema_version', '3');
INSERT INTO calls (ts, contract, contract_hash, label, success, first_attempt, attempts,
  remedies, latency_ms, trials, provider_faults) VALUES (1.0, 'old:C', 'h', 'v3', 1, 1,
  1, 0, 2.0, '[]', 1);
"""


def test_a_version_3_store_is_read_then_migrated_to_4(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(SQLITE_V3)
    connection.close()
    assert [(r["label"], r["shadow_refusals"], r["provider_faults"])
            for r in query(str(path))] == [("v3", 0, 1)]
    configure(stats=path, label="v4")
    _call(_plan_class(preflight="shadow"))
    assert hoare.flush_stats()
    with sqlite3.connect(path) as connection:
        version = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    connection.close()
    assert version == str(SCHEMA_VERSION) == "5"
    assert [(r["label"], r["shadow_refusals"]) for r in query(str(path))] == [
        ("v3", 0), ("v4", 1)]
    store = StatsStore(path)  # opening a current store again changes nothing
    store.close()
    assert store.broken is None


THREADED = '''
import logging, sys, threading
from pydantic import BaseModel, Field
from hoare import Contract, Post, contract
from hoare.engines import FunctionEngine

class Request(BaseModel):
    budget: int = Field(ge=0)

class Plan(BaseModel):
    cost: int = Field(ge=10)
    steps: list[str] = Field(min_length=1)

@contract(policy="observe", preflight="shadow", remedy_retry_params={"delay": 0})
class MakePlan(Contract):
    prompt = "Plan within the budget."
    post_conditions = (Post(lambda plan, request: plan.cost <= request.budget,
                            "the plan fits the budget"),)

    def forward(self, input: Request) -> Plan:
        return self.contract_result or Plan(cost=10, steps=["fallback"])

records = []
class Keep(logging.Handler):
    def emit(self, record):
        if "would refuse" in record.getMessage():
            records.append(record)
logging.getLogger("hoare").addHandler(Keep())
calls = []
shared = MakePlan(engine=FunctionEngine(
    lambda request: calls.append(1) or '{"cost": 12, "steps": ["x"]}'))
reasons = []
def work():
    for _ in range(25):
        shared(Request(budget=5))
        reasons.append(shared.contract_outcome.preflight.reason)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert len(reasons) == 200, len(reasons)
assert all(r.startswith("shadow: would refuse: ") for r in reasons), set(reasons)
assert len(calls) >= 200, len(calls)
assert len(records) == 1, len(records)
print("ok")
'''


def test_shadow_mode_on_one_instance_in_many_threads(tmp_path: Path) -> None:
    """In a child process (a crash fails the test); from a file, so that the
    predicates' source can be read and the pre-flight built."""
    import os
    import subprocess
    import sys

    from library_under_test import LIBRARY

    script = tmp_path / "threaded_shadow.py"
    script.write_text(THREADED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": LIBRARY,
                                            "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
