"""Which `hoare` the tests exercise, so a child process imports the same one.

`make test` runs the suite twice: against the editable install (``src/``), then
against the built wheel installed, not editable, in its own virtualenv
(``tests/against_wheel.py``, which sets ``HOARE_TEST_WHEEL`` to that virtualenv's
site-packages). A test that starts a Python child gives it ``LIBRARY`` as
``PYTHONPATH``: ``src/`` in the first run, the wheel's site-packages in the second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import hoare

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = str(Path(hoare.__file__).parent.parent)
WHEEL_SITE = os.environ.get("HOARE_TEST_WHEEL", "")
FROM_WHEEL = bool(WHEEL_SITE)


def check_origin() -> str:
    """Fail loudly when the run tests another `hoare` than the one it says it tests."""
    where = Path(hoare.__file__).resolve()
    if FROM_WHEEL:
        site = Path(WHEEL_SITE).resolve()
        if not where.is_relative_to(site):
            raise RuntimeError(f"HOARE_TEST_WHEEL={WHEEL_SITE} but hoare was imported "
                               f"from {where}")
        sources = (ROOT / "src").resolve()
        on_path = [p for p in sys.path if p and Path(p).resolve() == sources]
        if on_path:
            raise RuntimeError(f"testing the wheel, but src/ is on sys.path: {on_path}")
        # a child process, as the tests start them (with and without LIBRARY on its
        # path, from the checkout), imports the wheel too
        for env in ({**os.environ, "PYTHONPATH": LIBRARY}, os.environ):
            child = subprocess.run([sys.executable, "-c", "import hoare, hoare.kernel; "
                                    "print(hoare.__file__); print(hoare.kernel.__file__)"],
                                   capture_output=True, text=True, cwd=ROOT, env=env,
                                   timeout=120)
            files = [Path(line).resolve() for line in child.stdout.split()]
            if child.returncode != 0 or not all(f.is_relative_to(site) for f in files):
                raise RuntimeError("testing the wheel, but a child process imports hoare "
                                   f"from {files or child.stderr}")
        return f"hoare under test: the installed wheel in {site}"
    return f"hoare under test: {where.parent}"
