"""One stats record, built in one place (issue 28 item 2): a contracted call, a query,
an agent run and its tool calls each reach a real SQLite store as the record
``hoare.stats.records.call_record`` built, and every column holds what the call did:
success, first attempt, attempts, remedies, pre-flight verdict, tokens, cost, latency,
engine, model, trials, kind, provider faults, shadow refusals and the families."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

import hoare
from hoare import Contract, LLMDataModel, Post, Pre, configure, contract
from hoare.agents import ContractAgent, ContractPolicy, Tool, pre, tool
from hoare.contracts.runtime import runtime_of
from hoare.engines import Budget, FunctionEngine, Price, Response, Usage
from hoare.engines.testing import ScriptedEngine
from hoare.queries import Query
from hoare.stats import records
from hoare.stats.query import family_messages, query
from hoare.stats.schema import COLUMNS
from hoare.stats.store import StatsStore

# the front ends' modules, imported before the builder is watched (see ``built``)
for _site in ("hoare.contracts.lifecycle", "hoare.queries.session", "hoare.agents.recording"):
    importlib.import_module(_site)

PRICES = {"*": Price(input_per_million=2.0, output_per_million=4.0)}
# every request reports 1,000 input and 500 output tokens: 0.002 + 0.002 per request
REQUEST_COST = 0.004
HASH = re.compile(r"[0-9a-f]{16}")


class Q(LLMDataModel):
    n: int


class A(LLMDataModel):
    n: int


class Big(LLMDataModel):
    n: int = Field(ge=10)


@contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Double(Contract[Q, A]):
    prompt = "Double n."
    pre_conditions = (Pre(lambda q: q.n >= 0, "not negative"),)
    post_conditions = (Post(lambda a: a.n > 0, "positive"),)

    def forward(self, q: Q) -> A:
        return self.contract_result if self.contract_successful else A(n=0)


@contract(preflight="shadow", remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
class Small(Contract[Q, Big]):
    """No answer can pass: the shadowed pre-flight would refuse, the engine is asked."""

    prompt = "A small number."
    post_conditions = (Post(lambda b: b.n < 5, "small"),)

    def forward(self, q: Q) -> Big:
        return self.contract_result if self.contract_successful else Big(n=10)


@dataclass
class Ask(Query[int]):
    """Give a positive number."""

    n: int
    post_conditions = [Post(lambda answer: answer > 0, "positive")]

    def fallback(self, outcome: Any) -> int:
        return -1


@tool
@pre(lambda args: args["n"] % 2 == 0, "an even number")
def half(n: int) -> float:
    """Half of an even number."""
    return n / 2


def _priced(*texts: str) -> FunctionEngine:
    """Answers ``texts`` in turn, each reporting 1,000 input and 500 output tokens."""
    answers = iter(texts)
    return FunctionEngine(lambda request: Response((next(answers),), ("stop",),
                                                   Usage(1, 1000, 500), "m1"), model="m1")


def _contract_hash(instance: Contract[Any, Any]) -> str:
    return runtime_of(instance).definition_hash()


def _tool_hash(chosen: Tool) -> str:
    text = f"{chosen.description}\n{json.dumps(chosen.parameters, sort_keys=True)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


POST_FAILED, POST_PASSED = ["post_conditions[0]", False], ["post_conditions[0]", True]
PRE_PASSED = ["pre_conditions[0]", True]
Expected = list[dict[str, Any]]


def _contract_retried() -> Expected:
    double = Double(engine=_priced('{"n": 0}', '{"n": 2}'), budget=Budget(prices=PRICES))
    assert double(Q(n=1)).n == 2
    return [dict(contract=f"{__name__}:Double", contract_hash=_contract_hash(double),
                 success=1, first_attempt=0, attempts=2, remedies=1, preflight="satisfiable",
                 input_tokens=2000, output_tokens=1000, cost=2 * REQUEST_COST,
                 engine="FunctionEngine", model="m1", kind="contract",
                 trials=[PRE_PASSED, POST_FAILED, POST_PASSED], provider_faults=0,
                 shadow_refusals=0,
                 families={"pre_conditions[0]": "not negative",
                           "post_conditions[0]": "positive"})]


def _contract_failed() -> Expected:
    double = Double(engine=_priced('{"n": 0}', '{"n": -1}'))  # no budget: no cost
    assert double(Q(n=1)).n == 0
    return [dict(contract=f"{__name__}:Double", contract_hash=_contract_hash(double),
                 success=0, first_attempt=0, attempts=2, remedies=1, preflight="satisfiable",
                 input_tokens=2000, output_tokens=1000, cost=None, engine="FunctionEngine",
                 model="m1", kind="contract", trials=[PRE_PASSED, POST_FAILED, POST_FAILED],
                 provider_faults=0, shadow_refusals=0,
                 families={"pre_conditions[0]": "not negative",
                           "post_conditions[0]": "positive"})]


def _contract_shadowed() -> Expected:
    small = Small(engine=_priced('{"n": 12}', '{"n": 12}'))
    assert small(Q(n=1)).n == 10
    return [dict(contract=f"{__name__}:Small", contract_hash=_contract_hash(small),
                 success=0, first_attempt=0, attempts=2, remedies=1, preflight="unknown",
                 input_tokens=2000, output_tokens=1000, cost=None, engine="FunctionEngine",
                 model="m1", kind="contract", trials=[POST_FAILED, POST_FAILED],
                 provider_faults=0, shadow_refusals=1,
                 families={"post_conditions[0]": "small"})]


def _query(answers: tuple[str, ...], success: bool) -> Expected:
    """A query asked up to three times (its default), until an answer is positive."""
    got = Ask(1).run(_priced(*answers), budget=Budget(prices=PRICES))
    assert got == (int(answers[-1]) if success else -1)
    source = inspect.getsource(Ask).encode()
    asked = len(answers)
    return [dict(contract=f"{__name__}:Ask", contract_hash=hashlib.sha256(source).hexdigest()[:16],
                 success=int(success), first_attempt=int(success and asked == 1),
                 attempts=asked, remedies=asked - 1, preflight="satisfiable",
                 input_tokens=1000 * asked, output_tokens=500 * asked,
                 cost=asked * REQUEST_COST, engine="FunctionEngine", model="m1", kind="query",
                 trials=[POST_FAILED] * (asked - 1) + [POST_PASSED if success else POST_FAILED],
                 provider_faults=0, shadow_refusals=0, families={})]


def _agent(n: int, success: bool) -> Expected:
    """A tool call, then (when the tool's pre-condition held) an answer."""
    engine = ScriptedEngine({"tool": "half", "args": {"n": n}}, {"answer": "done"})
    agent = ContractAgent(engine, agent_type="constrained", tools=[half],
                          policy=ContractPolicy.ENFORCE)
    assert agent.run("halve it").success is success
    steps = 2 if success else 1  # an enforced pre-condition ends the run at once
    unpriced: dict[str, Any] = dict(preflight=None, input_tokens=None, output_tokens=None,
                                    cost=None, trials=[], provider_faults=0,
                                    shadow_refusals=0, families={})
    return [dict(contract="tool:half", contract_hash=_tool_hash(half), success=int(success),
                 first_attempt=int(success), attempts=1, remedies=0, engine=None, model=None,
                 kind="tool", **unpriced),
            dict(contract="agent:constrained[half]", contract_hash=HASH,
                 success=int(success), first_attempt=0, attempts=steps, remedies=0,
                 engine="ScriptedEngine", model="function", kind="agent", **unpriced)]


CASES: dict[str, Callable[[], Expected]] = {
    "contract-retried": _contract_retried,
    "contract-failed": _contract_failed,
    "contract-shadowed": _contract_shadowed,
    "query-first": lambda: _query(("3",), True),
    "query-retried": lambda: _query(("0", "3"), True),
    "query-failed": lambda: _query(("0", "-2", "-5"), False),
    "agent-and-tool-succeeded": lambda: _agent(4, True),
    "agent-and-tool-refused": lambda: _agent(3, False),
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "stats.db"
    configure(stats=path, label="one-record")
    yield path
    hoare.flush_stats()
    configure(stats=None, label=None)


@dataclass
class Watched:
    """What ``call_record`` built and what the store was given, in order."""

    built: list[tuple[Any, ...]]
    queued: list[tuple[Any, ...]]


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Watched:
    """Every record the builder makes, and every record the store is given. The builder
    is replaced wherever hoare holds it (each front end imports it by name), so a front
    end that built a record of its own would queue one the builder never made."""
    seen = Watched([], [])

    def spy_on(original: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
        def spy(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
            record = original(*args, **kwargs)
            seen.built.append(record)
            return record
        return spy

    # the builder's two doors: ``call_record``, and ``outcome_record`` (what
    # ``call_record`` builds a record with an outcome by, and a contract call calls
    # directly); ``call_record``'s own use of it inside records is not a second record
    for door in ("call_record", "outcome_record"):
        original = getattr(records, door)
        holders = [name for name, module in list(sys.modules.items())
                   if name.startswith("hoare") and getattr(module, door, None) is original
                   and (door == "call_record" or module is not records)]
        for name in holders:
            monkeypatch.setattr(sys.modules[name], door, spy_on(original))
    real = StatsStore.record

    def record(self: StatsStore, item: tuple[Any, ...]) -> None:
        seen.queued.append(item)
        real(self, item)

    monkeypatch.setattr(StatsStore, "record", record)
    return seen


def _stored(path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute(
            f"SELECT {', '.join(COLUMNS)} FROM calls ORDER BY id")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_column_holds_what_the_call_did(case: str, store: Path,
                                              watched: Watched) -> None:
    started = time.time()
    began = time.perf_counter()
    expected = CASES[case]()
    elapsed_ms = (time.perf_counter() - began) * 1000
    finished = time.time()
    assert hoare.flush_stats()
    rows = _stored(store)
    assert len(rows) == len(expected)
    families = family_messages(str(store))
    read = query(str(store))  # what ``hoare stats`` and ``hoare compare`` read
    assert len(read) == len(rows)
    for row, want, seen in zip(rows, expected, read, strict=True):
        assert started <= row["ts"] <= finished
        assert 0 < row["latency_ms"] <= elapsed_ms
        assert row["label"] == "one-record"
        assert HASH.fullmatch(row["contract_hash"])
        if want["contract_hash"] is HASH:  # an agent's: its definition, hashed
            want = {**want, "contract_hash": row["contract_hash"]}
        trials, cost = json.loads(row["trials"]), row["cost"]
        assert trials == want["trials"]
        assert cost == pytest.approx(want["cost"]) if want["cost"] is not None else cost is None
        assert {(c, f): m for (c, f), m in families.items() if c == row["contract"]} == {
            (row["contract"], f): m for f, m in want["families"].items()}
        plain = {k: v for k, v in row.items() if k not in ("ts", "latency_ms", "label",
                                                            "trials", "cost")}
        assert plain == {k: v for k, v in want.items() if k not in ("trials", "cost",
                                                                     "families")}
        assert seen["success"] is bool(want["success"])
        assert seen["first_attempt"] is bool(want["first_attempt"])
        assert seen["trials"] == [tuple(t) for t in want["trials"]]
        assert (seen["attempts"], seen["kind"], seen["shadow_refusals"]) == (
            want["attempts"], want["kind"], want["shadow_refusals"])
    # each stored row is one the builder made, queued as it was built
    assert len(watched.built) == len(rows)
    assert [id(item) for item in watched.queued] == [id(item) for item in watched.built]


@pytest.mark.parametrize("case", ["contract-retried", "query-retried",
                                  "agent-and-tool-succeeded"])
def test_every_front_end_queues_only_what_the_one_builder_built(
        case: str, store: Path, watched: Watched) -> None:
    CASES[case]()
    assert watched.queued  # the front end recorded its calls
    assert all(type(item) is tuple and len(item) == len(records.CallRecord._fields)
               for item in watched.queued)
    assert [id(item) for item in watched.queued] == [id(item) for item in watched.built]
    kinds = {"contract": {"contract"}, "query": {"query"}, "agent": {"agent", "tool"}}
    assert {item[16] for item in watched.queued} == kinds[case.split("-")[0]]


def test_the_record_has_callrecords_fields_in_order() -> None:
    recorded_as = records.RecordedAs.of("m:C", "0" * 16, FunctionEngine(lambda r: "x"),
                                        (("f", "msg"),))
    item = records.call_record("tool", recorded_as, "L", 2_500_000, None, success=True)
    fields = records.CallRecord(*item)._asdict()
    assert fields == {**fields, "contract": "m:C", "contract_hash": "0" * 16, "label": "L",
                      "success": True, "first_attempt": True, "attempts": 1, "remedies": 0,
                      "preflight": None, "input_tokens": None, "output_tokens": None,
                      "cost": None, "latency_ms": 2.5, "engine": "FunctionEngine",
                      "model": "function", "trials": (), "kind": "tool",
                      "provider_faults": 0, "shadow_refusals": 0,
                      "families": (("f", "msg"),)}
