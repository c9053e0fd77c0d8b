"""One record feeds the stats store and the span (issue 28 item 2): a contracted call's
span is closed from the very record the store is given (``call_record``'s, by
identity), so the success rule and the counting of attempts and remedies exist once;
a call with neither a store nor a span builds no record; a query class's definition is
hashed once, not on every call; a foreign engine whose ``inner`` raises still has its
calls recorded."""

from __future__ import annotations

import inspect
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hoare
from hoare import Contract, LLMDataModel, Post, configure, contract, telemetry
from hoare.engines import FunctionEngine, Response, Usage
from hoare.kernel import Outcome, Phase
from hoare.queries import Query
from hoare.stats import records
from hoare.stats.schema import COLUMNS, SHAPE_COLUMNS
from hoare.stats.shapes import ShapeIds
from hoare.stats.store import StatsStore

otel = pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


class Q(LLMDataModel):
    n: int


class A(LLMDataModel):
    n: int


@contract(remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
class Positive(Contract[Q, A]):
    prompt = "Answer a positive number."
    post_conditions = (Post(lambda a: a.n > 0, "positive"),)

    def forward(self, q: Q) -> A:
        if q.n < 0:  # after the contract's verdict: the call raised
            raise ValueError("no best effort")
        return self.contract_result if self.contract_successful else A(n=1)


def _usage_engine(*answers: str) -> FunctionEngine:
    queue = iter(answers)
    return FunctionEngine(lambda request: Response((next(queue),), ("stop",),
                                                   Usage(1, 7, 3), "m1"), model="m1")


@dataclass
class Seen:
    """The records the store was given and the records the spans were closed with."""

    queued: list[tuple[Any, ...]]
    spanned: list[tuple[Any, ...] | None]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    found = Seen([], [])
    real_record = StatsStore.record
    real_finish = telemetry.finish_call

    def record(self: StatsStore, item: tuple[Any, ...]) -> None:
        found.queued.append(item)
        real_record(self, item)

    def finish_call(handle: Any, record: Any, *args: Any) -> None:
        found.spanned.append(record)
        real_finish(handle, record, *args)

    monkeypatch.setattr(StatsStore, "record", record)
    monkeypatch.setattr(telemetry, "finish_call", finish_call)
    return found


CALLS = {  # answers, input n, what the call returns or raises
    "first": (('{"n": 2}',), 1, 2),
    "remedied": (('{"n": 0}', '{"n": 5}'), 1, 5),
    "failed": (('{"n": 0}',) * 3, 1, 1),
    "raised-after-success": (('{"n": 3}',), -1, ValueError),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_the_span_is_closed_from_the_record_the_store_is_given(
        case: str, tmp_path: Path, spans: InMemorySpanExporter, seen: Seen) -> None:
    answers, n, expected = CALLS[case]
    configure(stats=tmp_path / "calls.db", label="shared")
    try:
        positive = Positive(engine=_usage_engine(*answers))
        if expected is ValueError:
            with pytest.raises(ValueError):
                positive(Q(n=n))
        else:
            assert positive(Q(n=n)).n == expected
        assert hoare.flush_stats()
    finally:
        configure(stats=None, label=None)
    assert len(seen.queued) == 1 and seen.spanned == seen.queued  # the same record
    assert seen.spanned[0] is seen.queued[0]
    (span,) = [s for s in spans.get_finished_spans() if s.name.startswith("hoare.contract")]
    with sqlite3.connect(tmp_path / "calls.db") as connection:
        connection.row_factory = sqlite3.Row
        (row,) = [dict(r) for r in connection.execute(f"SELECT {', '.join(COLUMNS)} "
                                                      f"FROM calls")]
    connection.close()
    attributes = dict(span.attributes or {})
    outcome = "error" if expected is ValueError else "success" if row["success"] else \
        "failure"
    assert (attributes["hoare.outcome"], attributes["hoare.attempts"],
            attributes["hoare.remedies"], attributes["hoare.label"],
            attributes["hoare.preflight"], attributes["gen_ai.usage.input_tokens"],
            attributes["gen_ai.usage.output_tokens"]) == (
        outcome, row["attempts"], row["remedies"], row["label"], row["preflight"],
        row["input_tokens"], row["output_tokens"])
    if expected is ValueError:  # the success rule, once: raised after the verdict
        assert row["success"] == 0 and row["attempts"] == 1


def test_a_call_with_neither_store_nor_span_builds_no_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    original = records.call_record

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return original(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("hoare") and getattr(module, "call_record", None) is original:
            monkeypatch.setattr(module, "call_record", spy)
    configure(stats=None)
    assert not telemetry.instrumented()
    positive = Positive(engine=_usage_engine('{"n": 0}', '{"n": 5}'))
    assert positive(Q(n=1)).n == 5
    assert positive.contract_perf_stats()["total_execution"]["count"] == 1
    assert built == []


def _outcome(phases: list[Phase]) -> Outcome:
    from hoare.kernel import Attempt, Policy

    attempts = tuple(Attempt(phase, 1, None, (), ()) for phase in phases)
    return Outcome(True, None, None, None, Policy.OBSERVE, (), attempts, (), (), {}, [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(Phase)), max_size=12))
def test_attempts_and_remedies_are_counted_one_way(phases: list[Phase]) -> None:
    """The one counting rule, against its definition: an attempt per generation, a
    remedy per repaired input and per generation after the first."""
    generations = phases.count(Phase.POST)
    assert records.attempt_counts(_outcome(phases)) == (
        generations, phases.count(Phase.PRE) + max(0, generations - 1))


@dataclass
class Ask(Query[int]):
    """Give a positive number."""

    n: int
    post_conditions = [Post(lambda answer: answer > 0, "positive")]


def test_a_query_class_is_hashed_once_not_on_every_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[object] = []
    real = inspect.getsource

    def getsource(target: Any) -> str:
        reads.append(target)
        return real(target)

    monkeypatch.setattr(inspect, "getsource", getsource)
    configure(stats=tmp_path / "calls.db")
    try:
        for _ in range(5):
            assert Ask(1).run(_usage_engine("3")) == 3
        assert hoare.flush_stats()
    finally:
        configure(stats=None)
    assert reads.count(Ask) == 1
    with sqlite3.connect(tmp_path / "calls.db") as connection:
        hashes = {h for (h,) in connection.execute("SELECT contract_hash FROM calls")}
        assert connection.execute("SELECT count(*) FROM calls").fetchone()[0] == 5
    connection.close()
    assert len(hashes) == 1


class Unnamed(FunctionEngine):
    """A foreign engine whose ``inner`` (what wrappers name their engine by) raises when
    read; its calls themselves work."""

    @property
    def inner(self) -> object:
        raise RuntimeError("no inner for you")


def test_an_engine_whose_inner_raises_still_has_its_calls_recorded(
        tmp_path: Path) -> None:
    configure(stats=tmp_path / "calls.db")
    try:
        engine = Unnamed(lambda request: '{"n": 2}')
        assert Positive(engine=engine)(Q(n=1)).n == 2
        assert hoare.flush_stats()
    finally:
        configure(stats=None)
    with sqlite3.connect(tmp_path / "calls.db") as connection:
        assert connection.execute("SELECT engine, model, success FROM calls").fetchall() \
            == [("Unnamed", "function", 1)]
    connection.close()


NULLABLE = {"preflight": st.one_of(st.none(), st.sampled_from(["0", "", "unknown"]),
                                   st.text(alphabet="01-ab ", max_size=5)),
            "input_tokens": st.one_of(st.none(), st.integers(0, 2**63 - 1)),
            "output_tokens": st.one_of(st.none(), st.integers(0, 3)),
            "cost": st.one_of(st.none(), st.floats(0, 1e9), st.just(0.0)),
            "engine": st.one_of(st.none(), st.sampled_from(["0", "", "E"])),
            "model": st.one_of(st.none(), st.sampled_from(["0", "", "-1", "m"]))}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries(NULLABLE), min_size=1, max_size=40))
def test_what_may_be_null_is_stored_as_given(tmp_path_factory: pytest.TempPathFactory,
                                             values: list[dict[str, Any]]) -> None:
    """The SQLite writer binds a stand-in for None and the INSERT turns it back into
    NULL: every value of a nullable column, None or not (0, "", "0", -1 as text), is
    stored and read back exactly as the record held it."""
    from hoare.stats.sqlite import SqliteBackend
    from hoare.stats.values import clean_record

    path = tmp_path_factory.mktemp("nullable") / "calls.db"
    base = records.CallRecord(1.0, "m:C", "h", "L", True, True, 1, 0, None, None, None,
                              None, 1.0, None, None, ())
    rows = []
    for given_values in values:
        problems: list[str] = []
        row = clean_record(tuple(base._replace(**given_values)), problems)
        assert row is not None and not problems
        rows.append(row)
    backend = SqliteBackend(str(path))
    try:
        backend.write(rows)
        names = list(NULLABLE)
        stored = backend.connection.execute(
            f"SELECT {', '.join(names)} FROM calls ORDER BY id").fetchall()
    finally:
        backend.close()
    assert stored == [tuple(v[n] for n in names) for v in values]


HOSTILE_VALUES: st.SearchStrategy[object] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**62, max_value=2**80),
    st.integers(max_value=-1), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6), st.sampled_from(["\udcff", "a\x00", "é", "x" * 5000]),
    st.binary(max_size=4), st.just(object()),
    st.lists(st.tuples(st.text(max_size=3), st.booleans()), max_size=2).map(tuple))


# The shapes the batch path met, across the examples (its cache is what is under test)
_SHAPES_STORED: list[tuple[Any, ...]] = []


def _add_shape(shape: tuple[Any, ...]) -> int:
    _SHAPES_STORED.append(shape)
    return len(_SHAPES_STORED) - 1


_SHAPE_IDS = ShapeIds(_add_shape)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 18), HOSTILE_VALUES), max_size=3),
       st.integers(1, 6))
def test_the_batch_fast_path_agrees_with_the_record_by_record_check(
        changes: list[tuple[int, object]], count: int) -> None:
    """``plain_batch`` (column by column) and the shapes' ids it is looked up by
    (``ShapeIds``, one cache across the examples) take a batch only when every record
    passes the record-by-record fast path, and then store exactly its rows, in order."""
    from hoare.stats.values import clean_record, plain_batch, plain_row

    base: list[object] = list(records.CallRecord(1.5, "m:C", "h", "L", True, False, 2, 1,
                                                 "unknown", 3, None, 0.25, 4.0, "E", None,
                                                 (("f", True),)))
    batch = [list(base) for _ in range(count)]
    for index, (field, value) in enumerate(changes):
        batch[index % count][field] = value
    items = [tuple(item) for item in batch]
    for item in items:  # the trials' texts cached, as after a first record
        clean_record(item, [])
    flat = [value for item in items for value in item]
    fast = plain_batch(flat, len(base))
    ids = None if fast is None else _SHAPE_IDS.of_records(fast)
    one_by_one = [plain_row(item) for item in items]
    if fast is None or ids is None:
        assert any(row is None for row in one_by_one)
        return
    assert all(row is not None for row in one_by_one)
    numbers = fast.numbers(ids)
    stored = []
    for index in range(count):
        ts, shape, latency, tokens_in, tokens_out, cost = numbers[index * 6:index * 6 + 6]
        named = dict(zip(SHAPE_COLUMNS, _SHAPES_STORED[shape], strict=True))
        named.update(ts=ts, latency_ms=latency, input_tokens=tokens_in,
                     output_tokens=tokens_out, cost=cost)
        stored.append(tuple(named[name] for name in COLUMNS))
    assert stored == one_by_one


@pytest.mark.parametrize("shape", ["tuple", "CallRecord"])
def test_a_record_with_unhashable_trials_is_stored_and_the_writer_goes_on(
        tmp_path: Path, shape: str) -> None:
    """Trials holding a list (unhashable): the record is stored with the well-formed
    pairs, and the writer thread lives on to write the next one (it used to die on the
    trials' lookup, losing every later record)."""
    from hoare.stats.query import query

    store = StatsStore(tmp_path / "calls.db")
    bad = records.CallRecord(1.0, "m:C", "h", "bad", True, True, 1, 0, None, None, None,
                             None, 1.0, "E", None, ((["f"], True), ("g", True)))  # type: ignore[arg-type]  # the bad value under test
    store.record(tuple(bad) if shape == "tuple" else bad)
    store.record(bad._replace(label="after", trials=()))
    assert store.flush(10)
    store.close()
    assert store._thread.is_alive() is False and (store.written, store.dropped) == (2, 0)
    assert [(r["label"], r["trials"]) for r in query(str(tmp_path / "calls.db"))] == [
        ("bad", [("g", True)]), ("after", [])]


def test_an_unexpected_error_costs_its_batch_only(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import hoare.stats.store as module

    store = StatsStore(tmp_path / "calls.db")
    assert store.flush(10)

    def broken(values: list[Any], width: int) -> None:
        raise RuntimeError("a bug in the writer")

    monkeypatch.setattr(module, "plain_batch", broken)
    store.record(records.CallRecord(1.0, "m:C", "h", "lost", True, True, 1, 0, None, None,
                                    None, None, 1.0, "E", None, ()))
    assert store.flush(10)
    monkeypatch.undo()
    store.record(records.CallRecord(2.0, "m:C", "h", "kept", True, True, 1, 0, None, None,
                                    None, None, 1.0, "E", None, ()))
    assert store.flush(10)
    store.close()
    assert (store.written, store.dropped) == (1, 1)
