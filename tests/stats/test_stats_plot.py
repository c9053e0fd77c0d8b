"""``hoare stats --plot`` and ``hoare compare --plot`` (the ``[plots]`` extra): real PNG
files with the curves drawn (their colours are found in the pixels), the number of
rows drawn, and a clear error when matplotlib is missing or the file cannot be
written."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from library_under_test import LIBRARY

from hoare.stats.query import query
from hoare.stats.records import CallRecord
from hoare.stats.store import StatsStore

mpimg = pytest.importorskip("matplotlib.image", reason="the [plots] extra is not installed")

ROOT = Path(__file__).resolve().parents[2]


def _fill(path: Path) -> None:
    rng = random.Random(4)
    store = StatsStore(path)
    start = time.time() - 3600
    for label, rate in (("old", 0.95), ("new", 0.7)):
        for index in range(300):
            ok = rng.random() < rate
            store.record(CallRecord(start + index * 5, "m:Triage", "h", label, ok, ok, 1, 0,
                                    None, 10, 5, 0.001, 12.0, "E", None,
                                    (("rule a", ok), ("rule b", rng.random() < 0.9))))
    store.close()


def _hoare(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nfrom hoare.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=300,
                          env={"PYTHONPATH": LIBRARY,
                               "PATH": os.environ.get("PATH", ""), "MPLBACKEND": "Agg"})


def _has_colour(pixels: object, rgb: tuple[float, float, float]) -> bool:
    import numpy as np

    image = np.asarray(pixels)[..., :3]
    return bool((np.abs(image - np.array(rgb)).max(axis=-1) < 0.02).any())


def test_stats_plot_draws_each_label_over_time_and_per_family(tmp_path: Path) -> None:
    db, png = tmp_path / "calls.db", tmp_path / "stats.png"
    _fill(db)
    done = _hoare("stats", "--db", str(db), "--plot", str(png))
    assert done.returncode == 0, done.stderr
    assert f"plot written to {png}" in done.stderr and "m:Triage" in done.stdout
    pixels = mpimg.imread(str(png))
    height, width = pixels.shape[:2]
    assert width > 1000 and height > 600  # two rows: one per label
    assert _has_colour(pixels, (0.1216, 0.4667, 0.7059))  # tab:blue, the P_succ curve
    # tab:green family bars at alpha 0.7 on white: 0.7 * green + 0.3
    assert _has_colour(pixels, (0.4208, 0.7392, 0.4208))
    one = _hoare("stats", "--db", str(db), "--label", "new", "--plot", str(png))
    assert one.returncode == 0 and mpimg.imread(str(png)).shape[0] < height  # one row


def test_compare_plot_draws_both_sequences_and_the_margin(tmp_path: Path) -> None:
    db, png = tmp_path / "calls.db", tmp_path / "compare.png"
    _fill(db)
    done = _hoare("compare", "--db", str(db), "--baseline", "old", "--candidate", "new",
                  "--max-drop", "0.02", "--plot", str(png))
    assert done.returncode == 1, done.stdout + done.stderr  # the gate still decides
    pixels = mpimg.imread(str(png))
    assert _has_colour(pixels, (0.1216, 0.4667, 0.7059))  # baseline, tab:blue
    assert _has_colour(pixels, (1.0, 0.4980, 0.0549))  # candidate, tab:orange
    assert _has_colour(pixels, (0.8392, 0.1529, 0.1569))  # the margin, tab:red


def test_plot_errors_are_usage_errors(tmp_path: Path) -> None:
    db = tmp_path / "calls.db"
    _fill(db)
    missing = _hoare("stats", "--db", str(db), "--plot", str(tmp_path / "x.png"),
                     prelude="import sys; sys.modules['matplotlib'] = None")
    assert missing.returncode == 2 and "pip install 'hoare[plots]'" in missing.stderr
    unwritable = _hoare("stats", "--db", str(db), "--plot",
                        str(tmp_path / "no-such-dir" / "x.png"))
    assert unwritable.returncode == 2 and "--plot" in unwritable.stderr
    empty = _hoare("stats", "--db", str(db), "--label", "nobody", "--plot",
                   str(tmp_path / "y.png"))
    assert empty.returncode == 2 and "nothing to plot" in empty.stderr
    assert len(query(str(db))) == 600


def test_family_bars_are_labelled_with_the_rules_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded by a real contract: the bars say what each rule checks, not
    ``post_conditions[0]``; the title says the count is of calls that met the
    contract after any remedy."""
    import hoare
    from hoare import Contract, LLMDataModel, Post, configure, contract
    from hoare.engines import FunctionEngine
    from hoare.stats.query import family_messages

    class Ask(LLMDataModel):
        text: str

    class Reply(LLMDataModel):
        n: int

    @contract(remedy_retry_params={"tries": 2, "delay": 0, "jitter": 0})
    class Rate(Contract):
        prompt = "Rate."
        post_conditions = (Post(lambda r: r.n > 0, "the rating is positive"),
                           Post(lambda r: r.n < 9, "the rating is below nine"),
                           Post(lambda r: r.n != 5, "not five", family="middle"),
                           Post(lambda r: r.n != 6, "not six", family="middle"))

        def forward(self, ask: Ask) -> Reply:
            return self.contract_result if self.contract_successful else Reply(n=1)

    db = tmp_path / "rules.db"
    configure(stats=db, label="rules")
    try:
        answers = iter(['{"n": 3}', '{"n": -1}', '{"n": 2}', '{"n": 12}', '{"n": 12}'])
        rate = Rate(engine=FunctionEngine(lambda request: next(answers)))
        for _ in range(3):
            rate(Ask(text="x"))
        assert hoare.flush_stats()
    finally:
        configure(stats=None, label=None)
    name = Rate.__hoare__.name  # type: ignore[attr-defined]
    assert family_messages(str(db)) == {
        (name, "post_conditions[0]"): "the rating is positive",
        (name, "post_conditions[1]"): "the rating is below nine",
        (name, "middle"): "middle"}
    from hoare.stats import plot as stats_plot

    drawn: list[object] = []
    original = stats_plot._save

    def keep(figure: object, *args: object) -> int:
        drawn.append(figure)
        labels = [t.get_text() for t in figure.axes[1].get_yticklabels()]  # type: ignore[attr-defined]
        title = figure.axes[0].get_title()  # type: ignore[attr-defined]
        drawn.append((labels, title))
        return original(figure, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(stats_plot, "_save", keep)
    stats_plot.plot_stats(query(str(db)), str(tmp_path / "r.png"), family_messages(str(db)))
    labels, title = drawn[1]  # type: ignore[misc]
    assert labels == ["the rating is positive", "the rating is below nine", "middle"]
    assert "2/3 calls met the contract, after any remedy (1 at the first attempt)" in title
