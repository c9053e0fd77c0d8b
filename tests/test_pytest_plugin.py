"""hoare's pytest plugin, run as a project would run it: ``python -m pytest`` in a
fresh project directory (the plugin comes from the ``pytest11`` entry point)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CONTRACTS = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class Q(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class Fine(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 3, "above three"),)

    def forward(self, input: Q) -> Q:
        return self.contract_result if self.contract_successful else input


@contract()
class Broken(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 10, "above ten"),)

    def forward(self, input: Q) -> Q:
        return self.contract_result if self.contract_successful else input
'''


def _project(tmp_path: Path, tests: str, pyproject: str = "") -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "plugin_contracts.py").write_text(CONTRACTS)
    (project / "test_mine.py").write_text(textwrap.dedent(tests))
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n" +
                                            textwrap.dedent(pyproject))
    return project


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project), "HOARE_CACHE_DIR":
           str(project / ".cache")}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-q", "-rs", *args], cwd=project, capture_output=True, text=True,
                          env=env, timeout=600)


def test_hoare_verify_items_pass_and_fail_per_contract(tmp_path: Path) -> None:
    project = _project(tmp_path, "def test_nothing():\n    pass\n",
                       "[tool.hoare]\ntargets = [\"plugin_contracts.py\"]\n")
    done = _pytest(project, "--hoare-verify")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 2 passed" in out  # test_nothing, Fine; Broken fails
    assert "hoare-verify[plugin_contracts:Broken]" in out
    assert 'FAIL pre_satisfiable' in out and '"above ten"' in out
    assert "plugin_contracts.py:" in out  # where to look
    assert _pytest(project).returncode == 0  # without the option: no verify items


def test_hoare_engine_scripts_answers_and_fails_when_it_runs_out(tmp_path: Path) -> None:
    project = _project(tmp_path, '''
        from plugin_contracts import Fine, Q


        def test_scripted(hoare_engine):
            hoare_engine.push(Q(n=5), {"n": 6})
            fine = Fine(engine=hoare_engine)
            assert fine(input=Q(n=4)).n == 5
            assert fine(input=Q(n=4)).n == 6
            assert len(hoare_engine.requests) == 2 and hoare_engine.remaining == 0


        def test_runs_out(hoare_engine):
            Fine(engine=hoare_engine)(input=Q(n=4))
    ''')
    done = _pytest(project)
    assert "2 passed, 1 error" in done.stdout, done.stdout  # test_runs_out: error at teardown
    assert "no scripted answer" in done.stdout


def test_live_tests_are_skipped_unless_asked(tmp_path: Path) -> None:
    project = _project(tmp_path, '''
        import pytest


        @pytest.mark.hoare_live
        def test_live():
            assert False, "would talk to a real engine"


        def test_offline():
            pass
    ''')
    done = _pytest(project)
    assert done.returncode == 0 and "1 passed, 1 skipped" in done.stdout, done.stdout
    assert "run with --hoare-live" in done.stdout
    live = _pytest(project, "--hoare-live")
    assert live.returncode == 1 and "would talk to a real engine" in live.stdout


@pytest.mark.parametrize("strict, expected", [(False, 0), (True, 1)])
def test_strict_fails_unknown_checks(tmp_path: Path, strict: bool, expected: int) -> None:
    project = _project(tmp_path, "", "")
    (project / "opaque_contract.py").write_text(textwrap.dedent('''
        from hoare import Contract, LLMDataModel, Pre, contract


        def mystery(q):
            return len(str(q)) > 1


        class Q(LLMDataModel):
            n: int


        @contract()
        class Opaque(Contract):
            prompt = "p"
            pre_conditions = (Pre(lambda q: mystery(q), "a mystery"),)

            def forward(self, input: Q) -> Q:
                return input
    '''))
    args = ["--hoare-verify", "--hoare-verify-target", "opaque_contract.py", "test_mine.py"]
    done = _pytest(project, *args, *(["--hoare-strict"] if strict else []))
    assert done.returncode == expected, done.stdout
