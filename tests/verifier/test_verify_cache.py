"""The verdict cache of ``hoare verify``: a hit gives the same report without importing
anything; every edit a verdict depends on is a miss; ``--no-cache`` bypasses it.

Each run is a fresh ``python -m hoare`` process (as in CI), so nothing survives in
``sys.modules`` between runs. A contract module appends a line to ``imports.log``
when it is imported: that log shows which files a run imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[2]

MODELS = '''from hoare import Field, LLMDataModel


class Item(LLMDataModel):
    n: int = Field(ge=0, le={le})
'''

LIMITS = "LIMIT = {limit}\n"

CONTRACT = '''import pathlib

from hoare import Contract, Pre, contract

from limits import LIMIT
from models import Item

with open(pathlib.Path(__file__).with_name("imports.log"), "a") as log:
    log.write(__name__ + "\\n")


@contract()
class {name}(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda i: i.n {op} LIMIT, "n against the limit"),)

    def forward(self, input: Item) -> Item:
        return self.contract_result
'''


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "models.py").write_text(MODELS.format(le=10))
    (project / "limits.py").write_text(LIMITS.format(limit=5))
    (project / "alpha.py").write_text(CONTRACT.format(name="Alpha", op="<"))
    (project / "beta.py").write_text(CONTRACT.format(name="Beta", op=">"))
    return project


def _verify(project: Path, *args: str, cache: Path | None = None,
            extra_path: Path | None = None) -> tuple[int, dict[str, object], list[str], str]:
    """(exit status, JSON report, modules imported by this run, stderr)."""
    log = project / "imports.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (LIBRARY, str(extra_path or "")) if p)}
    env["HOARE_CACHE_DIR"] = str(cache or project.parent / "cache")
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--format", "json",
                           *args], cwd=project, capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    imported = sorted(log.read_text().split()) if log.exists() else []
    return done.returncode, report, imported, done.stderr


def _statuses(report: dict[str, object]) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["contracts"]}  # type: ignore[index,union-attr]


def _without_time(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k != "seconds"}


def test_a_hit_is_the_same_report_and_imports_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path)
    status, cold, imported, _ = _verify(project)
    assert imported == ["alpha", "beta"]
    assert _statuses(cold) == {"alpha:Alpha": "pass", "beta:Beta": "pass"}
    status_warm, warm, imported_warm, _ = _verify(project)
    assert imported_warm == []  # answered before importing
    assert (status_warm, _without_time(warm)) == (status, _without_time(cold))
    _, uncached, imported_again, _ = _verify(project, "--no-cache")
    assert imported_again == ["alpha", "beta"]
    assert _without_time(uncached) == _without_time(cold)


def test_editing_a_predicate_rechecks_only_that_file(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _verify(project)
    # n < 5 and n < 0: no input passes any more
    (project / "alpha.py").write_text(CONTRACT.format(name="Alpha", op="<").replace(
        "i.n < LIMIT", "i.n < LIMIT and i.n < 0"))
    status, report, imported, _ = _verify(project)
    assert imported == ["alpha"]
    assert status == 1 and _statuses(report)["alpha:Alpha"] == "fail"


def test_editing_a_model_or_a_constant_rechecks_the_files_that_import_it(
        tmp_path: Path) -> None:
    project = _project(tmp_path)
    _verify(project)
    (project / "limits.py").write_text(LIMITS.format(limit=20))  # n > 20 with n <= 10
    status, report, imported, _ = _verify(project)
    assert imported == ["alpha", "beta"]
    assert status == 1 and _statuses(report)["beta:Beta"] == "fail"
    (project / "models.py").write_text(MODELS.format(le=30))  # now n > 20 can hold
    status, report, imported, _ = _verify(project)
    assert imported == ["alpha", "beta"]
    assert status == 0 and _statuses(report)["beta:Beta"] == "pass"


def test_a_new_package_version_is_a_miss(tmp_path: Path) -> None:
    project = _project(tmp_path)
    site = tmp_path / "site"
    (site / "somelib-1.0.dist-info").mkdir(parents=True)
    _verify(project, extra_path=site)
    assert _verify(project, extra_path=site)[2] == []
    (site / "somelib-1.0.dist-info").rename(site / "somelib-1.1.dist-info")
    assert _verify(project, extra_path=site)[2] == ["alpha", "beta"]


def test_other_options_are_other_entries(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _verify(project)
    assert _verify(project, "--rlimit", "2000000")[2] == ["alpha", "beta"]
    assert _verify(project, "--rlimit", "2000000")[2] == []


def _packs(cache: Path) -> list[Path]:
    return sorted((cache / "v2" / "verdicts").glob("[!.]*.json"))


def test_a_torn_pack_or_foreign_entry_is_a_miss_not_an_error(tmp_path: Path) -> None:
    project = _project(tmp_path)
    cache = tmp_path / "cache"
    _, cold, _, _ = _verify(project)
    (pack,) = _packs(cache)
    entries = json.loads(pack.read_text())
    assert len(entries) == 4  # one per file: alpha, beta, limits, models
    foreign = [["contracts", "[1, 2]"], [1, 2], {"contracts": [{"name": 1}], "pipelines": [],
                                                 "errors": []},
               {"contracts": [], "pipelines": [], "errors": [], "x": 1}]
    pack.write_text(json.dumps(dict(zip(entries, foreign, strict=True))))
    _, report, imported, _ = _verify(project)
    assert imported == ["alpha", "beta"]
    assert _without_time(report) == _without_time(cold)
    for pack in _packs(cache):
        pack.write_text('{"torn": [')
    _, report, imported, _ = _verify(project)
    assert imported == ["alpha", "beta"]
    assert _without_time(report) == _without_time(cold)
    assert (cache / ".gitignore").read_text().strip().endswith("*")


def test_a_pipeline_is_rechecked_when_a_stage_changes(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "flow.py").write_text(
        "from hoare import Pipeline\n\nfrom alpha import Alpha\nfrom beta import Beta\n\n"
        "flow = Pipeline(Alpha(), Beta())\n")

    def composition(report: dict[str, object]) -> str:
        (pipeline,) = report["pipelines"]  # type: ignore[misc]
        assert pipeline["name"] == "flow:flow"
        return str(pipeline["checks"][0]["status"])

    _, report, _, _ = _verify(project)
    assert composition(report) == "fail"  # Alpha may return n = 0; Beta wants n > 5
    (project / "beta.py").write_text(CONTRACT.format(name="Beta", op=">").replace(
        "i.n > LIMIT", "i.n > LIMIT - 100"))
    _, report, imported, _ = _verify(project)
    assert "beta" in imported
    assert composition(report) == "pass"  # flow.py is unchanged, but it imports beta


def test_a_file_that_fails_to_import_is_never_cached(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "broken.py").write_text("import pathlib\nraise RuntimeError('boom at import')\n")
    env = {**os.environ, "PYTHONPATH": LIBRARY,
           "HOARE_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--format",
                               "json"], cwd=project, capture_output=True, text=True, env=env,
                              timeout=600)
        assert done.returncode == 2
        report = json.loads(done.stdout)
        (error,) = report["errors"]
        assert error["file"].endswith("broken.py") and error["line"] == 2
        assert "boom at import" in error["error"]
        assert len(report["contracts"]) == 2  # the other files were still verified


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_workers_give_the_same_report(tmp_path: Path, jobs: str) -> None:
    project = _project(tmp_path)
    _, serial, _, _ = _verify(project, "--no-cache", "-j", "1")
    _, parallel, _, _ = _verify(project, "--no-cache", "-j", jobs)
    assert _without_time(parallel) == _without_time(serial)


def test_prune_keeps_the_most_recently_used_entries(tmp_path: Path) -> None:
    from hoare.verifier.project.result_cache import VerdictCache

    result = {"contracts": [], "pipelines": [], "errors": []}
    keys = [f"{index:064x}" for index in range(6)]
    for index, key in enumerate(keys):  # six runs, each leaving one pack
        run = VerdictCache(tmp_path, {})
        assert run.get(key) is None
        run.put(key, result)
        run.flush()
        (newest,) = [p for p in _packs(tmp_path) if key in p.read_text()]
        os.utime(newest, (1_000_000 + index, 1_000_000 + index))
    run = VerdictCache(tmp_path, {})
    assert run.get(keys[0]) == result  # a hit: now the most recently used
    assert run.prune(keep=3) == 3
    assert len(_packs(tmp_path)) == 1
    later = VerdictCache(tmp_path, {})
    assert [k for k in keys if later.get(k) is not None] == [keys[0], keys[4], keys[5]]


def test_many_runs_leave_few_packs(tmp_path: Path) -> None:
    from hoare.verifier.project.result_cache import MAX_PACKS, VerdictCache

    result = {"contracts": [], "pipelines": [], "errors": []}
    for index in range(MAX_PACKS + 3):
        run = VerdictCache(tmp_path, {})
        run.put(f"{index:064x}", result)
        run.prune(keep=1000)
        assert len(_packs(tmp_path)) <= MAX_PACKS
    later = VerdictCache(tmp_path, {})
    assert all(later.get(f"{index:064x}") == result for index in range(MAX_PACKS + 3))


def test_a_src_layout_module_on_the_path_is_a_dependency(tmp_path: Path) -> None:
    """``src/`` on ``PYTHONPATH`` (or an editable install's path): a contract importing
    ``myapp_src.models`` from a namespace package depends on that file."""
    project = tmp_path / "project"
    package = project / "src" / "myapp_src"
    package.mkdir(parents=True)
    (package / "models.py").write_text(MODELS.format(le=10))
    (package / "limits.py").write_text(LIMITS.format(limit=5))
    (package / "gamma.py").write_text(CONTRACT.format(name="Gamma", op="<").replace(
        "from limits import LIMIT\nfrom models import Item",
        "from myapp_src.limits import LIMIT\nfrom myapp_src.models import Item"))
    log = package / "imports.log"  # the module logs next to itself

    def run() -> tuple[list[str], list[str]]:
        log.unlink(missing_ok=True)
        _, report, _, _ = _verify(project, extra_path=project / "src")
        checks = report["contracts"][0]["checks"]  # type: ignore[index]
        vacuity = [c["status"] for c in checks if c["kind"] == "predicate_vacuous"]
        return (log.read_text().split() if log.exists() else []), vacuity

    assert run() == (["src.myapp_src.gamma"], ["pass"])
    assert run() == ([], ["pass"])  # a hit
    (package / "models.py").write_text(MODELS.format(le=3))  # n < 5 always holds now
    assert run() == (["src.myapp_src.gamma"], ["warn"])


def test_only_deterministic_results_are_cached() -> None:
    from hoare.verifier.project.run import _cacheable

    def result(message: str) -> dict[str, object]:
        return {"contracts": [{"name": "m:C", "checks": [
            {"kind": "pre_satisfiable", "status": "unknown", "message": message}]}],
            "pipelines": [], "errors": []}

    assert _cacheable(result("z3 hit its deterministic resource limit (rlimit: x)"))
    assert not _cacheable(result("z3 timed out"))
    assert not _cacheable(result("z3 hit its resource limit (rlimit) or time limit "
                                 "(canceled)"))
    assert not _cacheable({"contracts": [], "pipelines": [], "errors": [{"target": "t",
                                                                        "error": "e"}]})


def test_two_runs_at_once_share_the_cache_safely(tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = {**os.environ, "PYTHONPATH": LIBRARY,
           "HOARE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "hoare", "verify", ".", "--format", "json"]
    runs = [subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
        reports.append(_without_time(json.loads(out)))
    assert reports[0] == reports[1] == reports[2]
    _, warm, imported, _ = _verify(project)
    assert imported == [] and _without_time(warm) == reports[0]
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # no torn temporary files left
