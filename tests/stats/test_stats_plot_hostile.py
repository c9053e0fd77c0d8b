"""``--plot`` where the file cannot be written as asked, and names a font cannot draw.

Failing before: ``--plot .`` wrote ``..png`` and ``--plot /dev/full`` lost the disk's
error (both "plot written", status 0), an unknown suffix was matplotlib's error, and a
label or contract name holding a control character or ``$`` was drawn raw (a missing
glyph warning; mathtext). Now the image is drawn in memory in the suffix's format and
written as ``hoare verify -o`` writes.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from library_under_test import LIBRARY

from hoare.stats.records import CallRecord
from hoare.stats.store import StatsStore

pytest.importorskip("matplotlib", reason="the [plots] extra is not installed")


def _store(path: Path, labels: tuple[str, ...] = ("old",), contract: str = "m:T") -> None:
    store = StatsStore(path)
    for label in labels:
        for index in range(20):
            store.record(CallRecord(time.time() - 100 + index, contract, "h", label,
                                    index % 3 != 0, True, 1, 0, None, 1, 1, 0.001, 5.0,
                                    "E", None, (("rule \x01 $x$", index % 2 == 0),)))
    store.close()


def _stats(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoare", "stats", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": LIBRARY, "MPLBACKEND": "Agg"})


@pytest.mark.parametrize("where", [".", "/dev/full", "x.weird", "no-such-dir/x.png"])
def test_a_plot_that_cannot_be_written_as_asked_is_status_2(tmp_path: Path,
                                                           where: str) -> None:
    if where == "/dev/full" and not Path(where).exists():
        pytest.skip("no /dev/full")
    db = tmp_path / "calls.db"
    _store(db)
    done = subprocess.run([sys.executable, "-m", "hoare", "stats", "--db", str(db),
                           "--plot", where], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": LIBRARY,
                                             "MPLBACKEND": "Agg"})
    assert done.returncode == 2, done.stderr
    assert f"--plot {where}" in done.stderr and "plot written" not in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "..png").exists() and not (tmp_path / ".png").exists()
    if where == "/dev/full":
        assert stat.S_ISCHR(os.stat(where).st_mode)


def test_a_plot_follows_a_link_and_draws_its_suffix_format(tmp_path: Path) -> None:
    db = tmp_path / "calls.db"
    _store(db)
    target = tmp_path / "out" / "plot.svg"
    target.parent.mkdir()
    link = tmp_path / "plot.svg"
    link.symlink_to(target)
    done = _stats("--db", str(db), "--plot", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and target.read_bytes().startswith(b"<?xml")


def test_names_a_font_cannot_draw_are_escaped(tmp_path: Path) -> None:
    from hoare.stats import plot
    from hoare.stats.query import query

    db = tmp_path / "calls.db"
    _store(db, labels=("a\x01b $x", "c\u202ed"), contract="m:T\x1b$")
    rows = query(str(db))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a warning: now an error
        plot.plot_stats(rows, str(tmp_path / "s.png"), {})
    assert (tmp_path / "s.png").read_bytes().startswith(b"\x89PNG")
