"""The examples run offline by default, even with an API key in the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[1]


def test_multi_doc_qa_stays_offline_with_a_key_set() -> None:
    # a base URL nothing listens on: any attempt to go online would fail the run
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key",
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PYTHONPATH": LIBRARY}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "multi_doc_qa.py")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "contract satisfied: True" in done.stdout


def test_an_unknown_option_is_a_usage_error() -> None:
    env = {**os.environ, "PYTHONPATH": LIBRARY}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "multi_doc_qa.py"),
                           "--onlin"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "--live" in done.stderr


def test_the_agent_example_runs_offline() -> None:
    env = {**os.environ, "PYTHONPATH": LIBRARY}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_tools.py")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "The kettle costs 20.0 euros" in done.stdout and "success: True" in done.stdout


def test_the_stats_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    import re

    env = {**os.environ, "PYTHONPATH": LIBRARY}
    env.pop("HOARE_STATS", None)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "stats_demo.py"),
                           str(tmp_path / "calls.db")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    readme = (ROOT / "docs" / "stats.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```\n(__main__:TriageTicket.*?)```", readme, re.S)

    def stable(text: str) -> list[str]:  # latencies differ from run to run
        return [line for line in text.strip().splitlines() if "latency" not in line]

    assert stable(done.stdout) == stable(shown)


def test_the_compare_example_gates_and_plots_what_the_readme_shows(tmp_path: Path) -> None:
    import re

    env = {**os.environ, "PYTHONPATH": LIBRARY}
    env.pop("HOARE_STATS", None)
    png = tmp_path / "compare.png"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "compare_demo.py"),
                           str(tmp_path / "calls.db"), str(png)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # the candidate is worse
    readme = (ROOT / "docs" / "stats.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```\n(stats_demo:TriageTicket: .*?)```", readme, re.S)

    def stable(text: str) -> list[str]:  # latencies differ from run to run
        return [re.sub(r"latency p50 [\d.]+ ms", "latency p50 _ ms", line)
                for line in text.strip().splitlines()]

    assert stable(done.stdout) == stable(shown)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert (ROOT / "docs" / "compare_demo.png").is_file()  # the stats page's picture
