"""Run the whole test suite against the built wheel, installed as a user installs it.

``make test`` runs the suite on the editable install (``src/`` on the path), then this
script (``make test-wheel``): it builds the wheel from a copy of the sources (offline,
with the main virtualenv's setuptools), installs it, not editable, with its extras
into a fresh virtualenv ``.venv-wheel`` (pinned to the main virtualenv's versions, so
pip takes them from its cache), and runs pytest there with ``HOARE_TEST_WHEEL`` set to
that virtualenv's site-packages: tests/conftest.py then refuses to run unless hoare is
imported from there and ``src/`` is not on the path, and every child process a test
starts imports the same wheel (tests/library_under_test.py).

Usage: python tests/against_wheel.py [pytest arguments...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-wheel"
EXTRAS = "test,dev,plots,otel,sql,queries"


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        sys.exit(f"against_wheel: {' '.join(command)} failed (exit {done.returncode}):\n"
                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done  # type: ignore[no-any-return]


def build_wheel(work: Path) -> Path:
    """The wheel, built from a copy so the checkout gets no build/ or *.egg-info."""
    source = work / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    shutil.copytree(ROOT / "kernel", source / "kernel", ignore=ignore)
    _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", str(source),
          "--no-deps", "--no-build-isolation", "--no-index", "-w", str(work / "dist")])
    (built,) = (work / "dist").glob("hoare-*.whl")
    return built


def install(wheel: Path, work: Path) -> Path:
    """A fresh virtualenv with the wheel and its extras; returns its site-packages."""
    shutil.rmtree(VENV, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(VENV)])
    frozen = _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "freeze",
                   "--exclude-editable"]).stdout
    pins = work / "constraints.txt"
    pins.write_text("".join(line + "\n" for line in frozen.splitlines()
                            if line and not line.startswith(("-e ", "hoare"))))
    python = str(VENV / "bin" / "python")
    _run([python, "-m", "pip", "--disable-pip-version-check", "install", "--quiet",
          "-c", str(pins), f"{wheel}[{EXTRAS}]"])
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    return Path(site.stdout.strip())


def main(arguments: list[str]) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hoare-wheel-") as scratch:
        work = Path(scratch)
        wheel = build_wheel(work)
        site = install(wheel, work)
    ready = time.monotonic()
    print(f"against_wheel: {wheel.name} installed in {VENV.name} "
          f"({ready - started:.0f} s); running the suite against it", flush=True)
    env = {**os.environ, "HOARE_TEST_WHEEL": str(site)}
    env.pop("PYTHONPATH", None)
    code = subprocess.call([str(VENV / "bin" / "python"), "-m", "pytest", *arguments],
                           cwd=ROOT, env=env)
    print(f"against_wheel: the suite against the wheel exited {code} "
          f"({time.monotonic() - ready:.0f} s)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
