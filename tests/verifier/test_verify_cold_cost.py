"""What a cold ``hoare verify`` does per unit, counted (never timed): each saving
is checked to give the same answers as the longer way, on generated values.

* Walks over z3 terms on the checks' paths go through z3's C API, not the Python
  wrappers (a wrapper per node cost several times the walk): ``rounds_to_int`` and
  the quantifier check of ``qe.eliminate`` ran on every ``post_total``.
* The parent's keys: each file read once, and hoare's own files (hashed into every
  key) left out of the import closures.
* A predicate answering a plain bool is taken as it is (the searches call ~270 per
  unit); witnesses' plain leaves pass ``json_safe`` as they are.
"""

from __future__ import annotations

import enum
import inspect
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.verifier.project.result_cache import VerdictCache
from hoare.verifier.project.targets import Unit
from hoare.verifier.solve import qe


@contextmanager
def _wrappers_built() -> Iterator[list[int]]:
    """Counts the z3py wrappers (``AstRef``) built inside the block."""
    count = [0]
    original = z3.AstRef.__init__

    def counting(self: z3.AstRef, *args: object, **kwargs: object) -> None:
        count[0] += 1
        original(self, *args, **kwargs)

    z3.AstRef.__init__ = counting  # restored below
    try:
        yield count
    finally:
        z3.AstRef.__init__ = original


# -- the walks of qe, against the Python wrappers' walk --------------------------------

_X, _Y, _N = z3.Real("x"), z3.Real("y"), z3.Int("n")


def _reals() -> st.SearchStrategy[z3.ArithRef]:
    leaves = st.sampled_from([_X, _Y, z3.ToReal(_N), z3.RealVal(1), z3.RealVal("1/2")])
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
        st.tuples(inner, inner).map(lambda p: p[0] * 2 - p[1]),
        inner.map(lambda e: z3.ToReal(z3.ToInt(e))),  # rounds
        inner.map(lambda e: z3.If(e > 0, e, -e))), max_leaves=6)


def _formulas() -> st.SearchStrategy[z3.BoolRef]:
    atoms = st.one_of(
        st.tuples(_reals(), _reals()).map(lambda p: p[0] <= p[1]),
        _reals().map(z3.IsInt),  # rounds
        st.just(_N > 3),
        _reals().map(lambda e: z3.Exists([_Y], e > _Y)),  # a quantifier
        _reals().map(lambda e: z3.ForAll([_X], z3.ToInt(e) > 0)))  # rounding inside one
    return st.recursive(atoms, lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: z3.And(*xs)),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: z3.Or(*xs)),
        inner.map(z3.Not)), max_leaves=5)


def _reference_rounds(formula: z3.ExprRef) -> bool:
    """The walk through z3py's wrappers (the previous implementation)."""
    stack, seen = [formula], set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_app(node):
            if node.decl().kind() in (z3.Z3_OP_TO_INT, z3.Z3_OP_IS_INT):
                return True
            stack.extend(node.children())
    return False


def _reference_quantifier(expr: z3.ExprRef) -> bool:
    stack, seen = [expr], set()
    while stack:
        node = stack.pop()
        if node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if z3.is_quantifier(node):
            return True
        stack.extend(node.children())
    return False


@settings(max_examples=150, deadline=None)
@given(_formulas())
def test_qe_walks_agree_with_the_wrappers_walk(formula: z3.BoolRef) -> None:
    assert qe.rounds_to_int(formula) == _reference_rounds(formula)
    assert qe._has_quantifier(formula) == _reference_quantifier(formula)


def test_qe_walks_build_no_wrapper_per_node() -> None:
    terms = [_X + i for i in range(200)]
    formula = z3.And(*[t <= _Y for t in terms])
    with _wrappers_built() as built:
        assert not qe.rounds_to_int(formula)
        assert not qe._has_quantifier(formula)
    assert built[0] == 0  # before: one wrapper per node visited (~800 here)


# -- the parent's keys -------------------------------------------------------------------


def _project(directory: Path) -> Path:
    (directory / "helper.py").write_text("LIMIT = 3\n")
    unit = directory / "rules.py"
    unit.write_text("import json\nfrom hoare import Contract, Post\nfrom helper import LIMIT\n")
    return unit.resolve()


def test_a_closure_holds_the_project_files_not_hoares_own(tmp_path: Path) -> None:
    """hoare's own files are hashed into every key (``environment``), as an installed
    package's version is: a closure leaves them out, installed or not (from a source
    tree it parsed every one of them for its imports)."""
    import hoare

    unit = _project(tmp_path)
    cache = VerdictCache(tmp_path / "cache", {})
    own = [os.path.realpath(p) for p in hoare.__path__]
    closure = [str(p) for p in cache.closure(unit)]
    assert closure == sorted([str(unit), str((tmp_path / "helper.py").resolve())])
    assert not any(f.startswith(root + os.sep) for f in closure for root in own)
    before = cache.key(Unit(str(unit), unit))
    (tmp_path / "helper.py").write_text("LIMIT = 4\n")  # a project file still counts
    assert VerdictCache(tmp_path / "cache", {}).key(Unit(str(unit), unit)) != before


def test_a_key_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytes a file's digest names are the bytes its imports are read from: one
    read per file (it was two: one to hash, one to parse)."""
    from hoare.verifier.project import result_cache
    from hoare.verifier.project.targets import read_source as real

    unit = _project(tmp_path)
    reads: list[str] = []

    def counted(path: Path) -> bytes:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(result_cache, "read_source", counted)
    cache = VerdictCache(tmp_path / "cache", {})
    assert cache.key(Unit(str(unit), unit)) is not None
    assert sorted(reads) == sorted(set(reads)), reads
    assert str(unit) in reads


# -- predicates called by the searches, and witnesses made JSON ----------------------------


def _reference_call(fn: Callable[[object], object], value: object) -> tuple[bool, str]:
    """``call_predicate``'s verdict the long way (the kernel's semantics, spec §3.2)."""
    try:
        result = fn(value)
    except Exception as error:
        return False, f"raised {type(error).__name__}: {error}"
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        return False, "returned an awaitable, not a verdict"
    if result is None or bool(result):
        return True, ""
    return False, f"returned {result!r:.60}"


class _Truthy(int):
    pass


async def _verdict() -> bool:
    return True


_RESULTS: list[Callable[[], object]] = [
    lambda: True, lambda: False, lambda: None, lambda: 0, lambda: 1, lambda: "", lambda: "x",
    lambda: [], lambda: [0], lambda: _Truthy(0), lambda: _Truthy(2), lambda: 0.0,
    lambda: float("nan"), lambda: _verdict(), lambda: 1 // 0]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(_RESULTS))), st.booleans())
def test_call_predicate_agrees_with_the_long_way(index: int, takes_input: bool) -> None:
    from hoare.verifier.search.witness import call_predicate

    make = _RESULTS[index]
    fn = (lambda o, u: make()) if takes_input else (lambda o: make())
    source = _source(fn, takes_input)
    run = call_predicate(source, None, 1, 2)
    assert (run.passed, run.detail) == _reference_call(lambda v: make(), 1)


def _source(fn: Callable[..., object], takes_input: bool) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(fn=fn, takes_input=takes_input, is_method=False)


def test_a_true_verdict_costs_no_awaitable_check_nor_a_new_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The searches call predicates ~270 times per unit, nearly all answering a plain
    bool: it is taken as it is (it was checked for being awaitable, and a result
    object made, every time)."""
    from hoare.verifier.search import witness

    asked: list[object] = []
    real = inspect.isawaitable

    def counted(value: object) -> bool:
        asked.append(value)
        return real(value)

    monkeypatch.setattr(inspect, "isawaitable", counted)  # witness calls inspect.isawaitable
    runs = [witness.call_predicate(_source(lambda o: o > 0, False), None, v)
            for v in (1, 2, -1, -2)]
    assert [r.passed for r in runs] == [True, True, False, False]
    assert asked == []
    assert runs[0] is runs[1] and runs[2] is runs[3]  # one result each, made once


class _Colour(enum.Enum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 3


class _Tone(enum.StrEnum):
    DARK = "dark"


def _reference_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _reference_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_reference_safe(v) for v in value]
    if isinstance(value, enum.Enum):
        return _reference_safe(value.value)
    return value


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
    st.sampled_from([_Colour.RED, _Size.BIG, _Tone.DARK, float("inf"), -float("inf")]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_json_safe_agrees_with_the_long_way(value: Any) -> None:
    from hoare.verifier.search.witness import json_safe

    found, expected = json_safe(value), _reference_safe(value)
    assert json.dumps(found, allow_nan=True) == json.dumps(expected, allow_nan=True)
    assert list(map(type, _leaves(found))) == list(map(type, _leaves(expected)))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


# -- the next unit goes to a worker while it checks this one -------------------------------


class _FakeStdin:
    def __init__(self, owner: _FakeWorker) -> None:
        self.owner = owner

    def write(self, text: str) -> None:
        self.owner.requested(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _FakeProcess:
    def __init__(self, owner: _FakeWorker) -> None:
        self.stdin = _FakeStdin(owner)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.returncode = 0 if self.returncode is None else self.returncode
        return self.returncode


class _FakeWorker:
    """A worker process as the parent sees it: it runs the units it was sent in
    order, answering ``imported`` then a result line for each (or ending its stream
    while checking a unit named in ``dies_on``). ``events`` records every request
    sent and every result read, in order."""

    events: list[tuple[str, str]] = []
    dies_on: set[str] = set()

    def __init__(self) -> None:
        self.process = _FakeProcess(self)
        self.ready = False
        self.lines: list[str] = ['"ready"\n']
        self.dead = False

    def requested(self, text: str) -> None:
        name = Path(json.loads(text)["unit"]["path"]).name
        _FakeWorker.events.append(("sent", name))
        if self.dead:
            return
        self.lines.append('"imported"\n')
        if name in _FakeWorker.dies_on:
            self.dead = True
            self.lines.append("")
        else:
            self.lines.append(json.dumps({"contracts": [], "pipelines": [], "errors": [],
                                          "unit": name}) + "\n")

    def next(self, timeout: float | None) -> str | None:
        if not self.lines:
            return "" if self.dead else None
        line = self.lines.pop(0)
        if line.startswith("{"):
            _FakeWorker.events.append(("result", json.loads(line)["unit"]))
        return line

    def kill(self) -> None:
        self.process.returncode = -9


def _dispatched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int,
                dies_on: set[str]) -> list[dict[str, Any]]:
    from hoare.verifier.project import dispatch
    from hoare.verifier.solve.solver import SolverOptions

    monkeypatch.setattr(dispatch, "_Worker", _FakeWorker)
    monkeypatch.setattr(dispatch, "_well_formed", lambda found: isinstance(found, dict))
    _FakeWorker.events, _FakeWorker.dies_on = [], dies_on
    units = [Unit(f"u{i}.py", tmp_path / f"u{i}.py") for i in range(count)]
    run = dispatch.Dispatch(units, SolverOptions(), 0, None, 5.0)
    for index in range(count):  # queued before the worker starts: the order is fixed
        run.send(index)
    run.grow(1)
    run.close()
    results = [run.result(index) for index in range(count)]
    run.join()
    return results


def test_the_next_unit_is_sent_while_this_one_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker starts its next unit as soon as it sends a result, instead of idling
    until this process has read it and answered (it was: send, read, send, read)."""
    results = _dispatched(tmp_path, monkeypatch, 4, set())
    assert [r.get("unit") for r in results] == ["u0.py", "u1.py", "u2.py", "u3.py"]
    events = _FakeWorker.events
    assert [e for e in events if e[0] == "sent"] == [("sent", f"u{i}.py") for i in range(4)]
    for index in range(3):
        assert events.index(("sent", f"u{index + 1}.py")) < \
            events.index(("result", f"u{index}.py")), events


def test_a_unit_sent_to_a_worker_that_died_goes_to_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker dies checking u1 with u2 already sent: u1 is its error, and u2,
    never started, is checked by the next worker (not lost, not blamed)."""
    results = _dispatched(tmp_path, monkeypatch, 4, {"u1.py"})
    assert results[1]["errors"] and "died while checking" in results[1]["errors"][0]["error"]
    assert [r.get("unit") for r in results] == ["u0.py", None, "u2.py", "u3.py"]
    assert [r["errors"] for r in (results[0], results[2], results[3])] == [[], [], []]


def test_a_worker_holding_a_sent_unit_is_killed_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parent-side error on u1 (u2 already sent): the worker is killed, since closing
    its input would wait for it to run u2 (an import that hangs would hang the run),
    and u2 goes to the next worker."""
    from hoare.verifier.project import dispatch

    def well_formed(found: object) -> bool:
        if isinstance(found, dict) and found.get("unit") == "u1.py":
            raise RuntimeError("a parent-side bug")
        return isinstance(found, dict)

    real_init = _FakeWorker.__init__
    made: list[_FakeWorker] = []

    def recorded(self: _FakeWorker) -> None:
        real_init(self)
        made.append(self)

    monkeypatch.setattr(_FakeWorker, "__init__", recorded)
    monkeypatch.setattr(dispatch, "_well_formed", well_formed)
    results = _dispatched_as_is(tmp_path, monkeypatch, 4)
    assert "internal error" in results[1]["errors"][0]["error"]
    assert [r.get("unit") for r in results] == ["u0.py", None, "u2.py", "u3.py"]
    assert made[0].process.returncode == -9 and len(made) == 2


def _dispatched_as_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
                      ) -> list[dict[str, Any]]:
    """``_dispatched`` keeping the ``_well_formed`` the test set."""
    from hoare.verifier.project import dispatch
    from hoare.verifier.solve.solver import SolverOptions

    check = dispatch._well_formed
    monkeypatch.setattr(dispatch, "_Worker", _FakeWorker)
    _FakeWorker.events, _FakeWorker.dies_on = [], set()
    units = [Unit(f"u{i}.py", tmp_path / f"u{i}.py") for i in range(count)]
    run = dispatch.Dispatch(units, SolverOptions(), 0, None, 5.0)
    for index in range(count):
        run.send(index)
    run.grow(1)
    run.close()
    results = [run.result(index) for index in range(count)]
    run.join()
    assert dispatch._well_formed is check
    return results
