"""``hoare verify``'s worker processes: the same report as one process, with threads
running in the caller; a worker killed by the module it imports costs only that
file; what the verified modules print never reaches the report on stdout."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from library_under_test import LIBRARY

from hoare.cli.parser import main

CONTRACT = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract

print("{name}: imported, and printing on stdout")


class Q{name}(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class {name}(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n {op}, "the condition"),)

    def forward(self, input: Q{name}) -> Q{name}:
        return self.contract_result
'''


def _project(tmp_path: Path, tag: str) -> Path:
    for index, op in enumerate(["> 3", "> 10", ">= 0", "< 5"]):
        name = f"W{tag}{index}"
        (tmp_path / f"{name.lower()}.py").write_text(CONTRACT.format(name=name, op=op))
    return tmp_path


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    status = main(["verify", *argv, "--no-cache", "--format", "json"])
    out = capsys.readouterr().out
    return status, json.loads(out)  # stdout is the report alone: prints went to stderr


def _without_time(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k != "seconds"}


def test_workers_match_one_process_while_the_caller_runs_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_project(tmp_path, "a"))
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    try:
        status_workers, workers = _report(capsys, ".", "-j", "2")
    finally:
        stop.set()
        busy.join()
    status_one, one = _report(capsys, ".", "-j", "1")
    assert status_workers == status_one == 1  # W?1 (n > 10 with n <= 10) fails
    assert _without_time(workers) == _without_time(one)
    assert [c["name"] for c in workers["contracts"]] == [  # type: ignore[index,union-attr]
        "wa0:Wa0", "wa1:Wa1", "wa2:Wa2", "wa3:Wa3"]


def test_a_worker_killed_at_import_costs_only_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, "b")
    (project / "wb1_killer.py").write_text("import os\n\nos._exit(7)\n")
    monkeypatch.chdir(project)
    status, report = _report(capsys, ".", "-j", "2")
    assert status == 2
    (error,) = report["errors"]  # type: ignore[misc]
    assert error["file"].endswith("wb1_killer.py") and "died" in error["error"]
    assert len(report["contracts"]) == 4  # type: ignore[arg-type]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_module_that_leaves_a_thread_running_does_not_hold_the_run(tmp_path: Path,
                                                                     jobs: str) -> None:
    import os
    import subprocess
    import sys

    project = _project(tmp_path, "c")
    (project / "wc_lingering.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()\n")
    Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": LIBRARY, "HOARE_CACHE_DIR": str(tmp_path / "c")}
    # a process (the command with -j 1, a worker with -j 2) that waited for the thread would
    # hang for an hour: the timeout fails the test
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "-j", jobs,
                           "--format", "json"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # Wc1 fails, as in the other tests
    assert len(json.loads(done.stdout)["contracts"]) == 4
