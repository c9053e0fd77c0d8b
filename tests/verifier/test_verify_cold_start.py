"""When ``hoare verify`` starts its worker processes.

With an empty verdict cache every readable unit will be checked, so the workers start
before the first key is made (the first key reads and parses every file it depends
on; a worker takes ~0.3 s to load pydantic and z3: the two overlap). With entries in
the cache, a worker starts at the first miss only (a warm run starts none). The
workers are replaced by a recording stand-in: this tests the order of events, not
their speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hoare.verifier.project import run as run_module
from hoare.verifier.project.result_cache import VerdictCache
from hoare.verifier.project.targets import Unit
from hoare.verifier.solve.solver import SolverOptions


class _Recorder:
    """Stands in for ``Dispatch``: records when it is made and how many workers it
    runs; every unit's result is an empty one."""

    events: list[str] = []

    def __init__(self, units: Any, options: Any, workers: int, overrides: Any,
                 import_timeout: float) -> None:
        self.workers = workers
        _Recorder.events.append(f"workers {workers}")

    def grow(self, workers: int) -> None:
        if workers > self.workers:
            self.workers = workers
            _Recorder.events.append(f"workers {workers}")

    def send(self, index: int) -> None:
        _Recorder.events.append(f"send {index}")

    def close(self) -> None:
        pass

    def result(self, index: int) -> dict[str, Any]:
        return {"contracts": [], "pipelines": [], "errors": []}

    def join(self) -> None:
        pass


_KEY = VerdictCache.key  # the real one (each run wraps it anew)


def _units(directory: Path, count: int) -> list[Unit]:
    units = []
    for index in range(count):
        path = directory / f"m{index}.py"
        path.write_text(f"VALUE = {index}\n")
        units.append(Unit(str(path), path))
    return units


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int,
         cache: VerdictCache | None, jobs: int = 0) -> list[str]:
    _Recorder.events = []

    def key(self: VerdictCache, unit: Unit) -> str | None:
        _Recorder.events.append(f"key {unit.path.name}")
        return _KEY(self, unit)

    monkeypatch.setattr(run_module, "Dispatch", _Recorder)
    monkeypatch.setattr(VerdictCache, "key", key)
    monkeypatch.setattr(run_module, "_cores", lambda: 2)
    units = _units(tmp_path, count)
    run_module._results(units, SolverOptions(), jobs, cache, {})
    return _Recorder.events


@pytest.mark.parametrize("count", [1, 15, 16, 40])
def test_an_empty_cache_starts_the_workers_before_the_first_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    cache = VerdictCache(tmp_path / "cache", {})
    events = _run(tmp_path, monkeypatch, count, cache)
    workers = 2 if count >= 16 else 1
    assert events[0] == f"workers {workers}"  # before "key m0.py"
    assert [e for e in events if e.startswith("workers")] == [f"workers {workers}"]
    assert [e for e in events if e.startswith("send")] == [f"send {i}" for i in range(count)]


def test_a_cache_with_entries_starts_a_worker_at_the_first_miss_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = VerdictCache(tmp_path / "cache", {})
    cache.put("0" * 64, {"contracts": [], "pipelines": [], "errors": []})
    cache.flush()
    events = _run(tmp_path, monkeypatch, 20, VerdictCache(tmp_path / "cache", {}))
    assert events[:2] == ["key m0.py", "workers 1"]
    assert events.index("workers 2") == events.index("send 15") + 1  # the 16th miss


def test_a_warm_cache_starts_no_worker(tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tmp_path, monkeypatch, 20, VerdictCache(tmp_path / "cache", {}))
    # the recorder's results were stored: the same units are all hits now
    events = _run(tmp_path, monkeypatch, 20, VerdictCache(tmp_path / "cache", {}))
    assert events == [f"key m{i}.py" for i in range(20)]


def test_no_cache_and_explicit_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _run(tmp_path, monkeypatch, 3, None, jobs=4)
    assert events[0] == "workers 4"
    assert not any(e.startswith("key") for e in events)
