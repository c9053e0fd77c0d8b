"""``ruff check`` is part of the suite, so CI (``make test``) fails on a lint error as
``make lint`` does; ruff's version is pinned in the ``dev`` extra."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_passes_on_the_repository() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed (the `dev` extra; make installs it)")
    done = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
