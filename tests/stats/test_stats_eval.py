"""``hoare eval module:Contract dataset.jsonl``: every valid line called and recorded
under the run label, bad lines reported and skipped (never sent, never recorded), the
figures printed, a progress bar on a terminal only, usage errors with exit 2."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from library_under_test import LIBRARY

from hoare.stats.query import query

ROOT = Path(__file__).resolve().parents[2]

MODULE = textwrap.dedent('''
    import itertools, json, threading
    from hoare import Contract, Field, LLMDataModel, Post, contract
    from hoare.engines import FunctionEngine

    class Question(LLMDataModel):
        number: int = Field(ge=0)

    class Answer(LLMDataModel):
        double: int

    @contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Double(Contract[Question, Answer]):
        prompt = "Double the number."
        post_conditions = (Post(lambda a: a.double % 2 == 0, "even"),)

        def forward(self, question: Question) -> Answer:
            if not self.contract_successful:
                raise RuntimeError("no valid answer")
            return self.contract_result

    def engine():
        """Right except for inputs divisible by 5, where every answer is odd."""
        def answer(request):
            n = request.input.number
            return json.dumps({"double": 2 * n + (1 if n % 5 == 0 else 0)})
        return FunctionEngine(answer)

    not_an_engine = 42
''')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "doubling.py").write_text(MODULE)
    lines = [json.dumps({"number": n}) for n in range(1, 21)]
    lines[3] = json.dumps({"input": {"number": 4}, "expected": 8})
    lines += ["{not json", json.dumps({"number": -1}), "", json.dumps({"nothing": 1})]
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def _eval(cwd: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoare", "eval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": LIBRARY,
                               "PATH": os.environ.get("PATH", ""), **(env or {})})


def test_eval_calls_records_and_reports(project: Path) -> None:
    done = _eval(project, "doubling:Double", "data.jsonl", "--engine", "doubling:engine",
                 "--db", "calls.db", "--label", "candidate", "--jobs", "4", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    (item,) = summary["contracts"]
    # 20 valid inputs; 4 of them (5, 10, 15, 20) fail every attempt and forward raises
    assert (item["name"], item["label"], item["calls"], item["successes"]) == \
        ("doubling:Double", "candidate", 20, 16)
    assert summary["run"]["raised"] == 4 and item["families"]["post_conditions[0]"] == {
        "calls": 24, "successes": 16, "p_succ": 16 / 24,
        "interval_95": item["families"]["post_conditions[0]"]["interval"],
        "interval": item["families"]["post_conditions[0]"]["interval_95"]}
    skipped = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert [s.split(":")[1].strip() for s in skipped] == ["skipped line 21", "skipped line 22",
                                                          "skipped line 24"]
    assert "not JSON" in skipped[0] and "greater than or equal to 0" in skipped[1]
    rows = query(str(project / "calls.db"))
    assert len(rows) == 20 and {r["label"] for r in rows} == {"candidate"}
    # a second run under another label is reported on its own
    again = _eval(project, "doubling:Double", "data.jsonl", "--engine", "doubling:engine",
                  "--db", "calls.db", "--json", env={"HOARE_LABEL": "baseline"})
    assert json.loads(again.stdout)["contracts"][0]["label"] == "baseline"
    assert len(query(str(project / "calls.db"))) == 40


def test_the_progress_bar_shows_on_a_terminal_only(project: Path) -> None:
    plain = _eval(project, "doubling:Double", "data.jsonl", "--engine", "doubling:engine",
                  "--db", "a.db")
    assert plain.returncode == 0 and "\r[" not in plain.stderr
    code, shown = _eval_on_a_terminal(project, "b.db")
    assert code == 0
    assert b"[##############################] 20/20  P_succ 0.800" in shown


def _eval_on_a_terminal(project: Path, db: str) -> tuple[int, bytes]:
    """``hoare eval`` with its stderr on a pseudo-terminal: its exit code and what the
    terminal received."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "hoare", "eval", "doubling:Double", "data.jsonl",
         "--engine", "doubling:engine", "--db", db], cwd=project,
        stdout=subprocess.PIPE, stderr=follower, text=True,
        env={"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")})
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    process.communicate(timeout=300)
    os.close(leader)
    return process.returncode, shown


@pytest.mark.parametrize("args, expected", [
    (["nomodule:Double", "data.jsonl", "--db", "c.db"], "cannot import nomodule"),
    (["doubling:Nothing", "data.jsonl", "--db", "c.db"], "has no Nothing"),
    (["doubling:engine", "data.jsonl", "--db", "c.db"], "is not a hoare contract"),
    (["Double", "data.jsonl", "--db", "c.db"], "give module:attribute"),
    (["doubling:Double", "missing.jsonl", "--db", "c.db", "--engine", "doubling:engine"],
     "cannot be read"),
    (["doubling:Double", "data.jsonl", "--db", "c.db", "--engine", "doubling:not_an_engine"],
     "is not an engine"),
    (["doubling:Double", "data.jsonl"], "no stats store"),
    (["doubling:Double", "data.jsonl", "--db", "c.db", "--jobs", "0"],
     "expected a positive integer"),
])
def test_eval_usage_errors_say_what_is_wrong(project: Path, args: list[str],
                                             expected: str) -> None:
    done = _eval(project, *args)
    assert done.returncode == 2 and expected in done.stderr, done.stderr
    assert not (project / "c.db").exists() or not query(str(project / "c.db"))


def _screen(shown: str) -> list[str]:
    """The lines a terminal shows for ``shown``: ``\\r`` returns to the line's start,
    ``ESC[K`` clears to its end, other characters overwrite."""
    lines, column = [""], 0
    index = 0
    while index < len(shown):
        if shown.startswith("\x1b[K", index):
            lines[-1] = lines[-1][:column]
            index += 3
            continue
        char = shown[index]
        if char == "\r":
            column = 0
        elif char == "\n":
            lines.append("")
            column = 0
        else:
            line = lines[-1]
            lines[-1] = line[:column] + char + line[column + 1:]
            column += 1
        index += 1
    return lines


def test_warnings_never_break_into_the_progress_bar(project: Path) -> None:
    """Issue 33: a failed call's warning is written on a line of its own above the bar,
    and the bar is drawn again below it (before, it was written into the bar's line)."""
    code, shown = _eval_on_a_terminal(project, "w.db")
    assert code == 0
    lines = _screen(shown.decode("utf-8", "replace"))
    warned = [line for line in lines if "contract failed" in line]
    assert warned, lines  # the failing inputs did warn
    assert [line for line in warned if "P_succ" in line or line.startswith("[")] == []
    assert any(line.startswith("[##############################] 20/20") for line in lines)
