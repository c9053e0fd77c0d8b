"""Run the whole test suite against the built wheel, installed as a user installs it.

``make test`` is this script: it builds the wheel from a copy of the sources (offline,
with the main virtualenv's setuptools), installs it, not editable, with its extras into
the virtualenv ``.venv-wheel`` (rebuilt unless warm; pinned to the main virtualenv's
versions, so pip takes them from its cache), and runs pytest there with
``HOARE_TEST_WHEEL`` set to that virtualenv's site-packages: tests/conftest.py then
refuses to run unless hoare is imported from there and ``src/`` is not on the path, and
every child process a test starts imports the same wheel (tests/library_under_test.py).
The suite runs once, in parallel over the machine's cores (pytest-xdist), then the
``serial`` tests alone.

Usage: python tests/against_wheel.py [pytest arguments...]   (the wheel: ``make test``)
       python tests/against_wheel.py --editable [pytest arguments...]   (``make test-dev``)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-wheel"
EXTRAS = "test,dev,plots,otel,sql,queries,docs"
STAMP = "hoare-test-environment.txt"  # what .venv-wheel was built from (see install)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, text=True, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"against_wheel: {' '.join(command)} failed (exit {done.returncode}):\n"
                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


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
    """The wheel and its extras in ``.venv-wheel``; returns its site-packages.

    The virtualenv is built afresh unless it is warm: made by this script (it holds the
    ``STAMP`` file) for the same interpreter, the same extras, the same requirements in
    the wheel's metadata and the same pinned versions of every dependency. A warm one
    keeps its dependencies and gets only the new wheel, reinstalled without its
    dependencies: what ships is still what is tested, and a run from a warm virtualenv
    does not rebuild it."""
    frozen = _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "freeze",
                   "--exclude-editable"]).stdout
    pinned = "".join(line + "\n" for line in frozen.splitlines()
                     if line and not line.startswith(("-e ", "hoare")))
    # the wheel's own requirements too: a dependency added to pyproject.toml that .venv
    # already held would not change the pins, and --no-deps would not install it
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = sorted(line for line in archive.read(metadata).decode().splitlines()
                          if line.startswith("Requires-Dist:"))
    identity = "\n".join([sys.version, EXTRAS, *requires, pinned])
    python = str(VENV / "bin" / "python")
    stamp = VENV / STAMP
    if Path(python).exists() and stamp.exists() and stamp.read_text() == identity:
        _run([python, "-m", "pip", "--disable-pip-version-check", "install", "--quiet",
              "--no-deps", "--force-reinstall", str(wheel)])
    else:
        shutil.rmtree(VENV, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(VENV)])
        pins = work / "constraints.txt"
        pins.write_text(pinned)
        _run([python, "-m", "pip", "--disable-pip-version-check", "install", "--quiet",
              "-c", str(pins), f"{wheel}[{EXTRAS}]"])
        stamp.write_text(identity)  # written last: a failed install leaves no stamp
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    return Path(site.stdout.strip())


# The suite runs in two phases: everything not marked ``serial`` spread over the
# machine's cores by pytest-xdist, then the ``serial`` tests (servers, process pools,
# many threads: tests/conftest.py marks them) one at a time. ``worksteal``: a worker that
# runs out of tests takes half of another's queue, so one long test near the end of a
# queue does not leave the other cores idle (``--dist load`` fixes the queues up front).
PARALLEL = ["-n", "auto", "--dist", "worksteal", "-m", "not serial"]
SERIAL = ["-m", "serial", "-p", "no:xdist"]


def _count(report: Path) -> dict[str, int]:
    """Tests, failures, errors and skips from one phase's JUnit XML report."""
    import xml.etree.ElementTree as ET

    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if not report.exists():
        return totals
    for suite in ET.parse(report).getroot().iter("testsuite"):
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    return totals


def run_suite(python: str, env: dict[str, str], arguments: list[str]) -> int:
    """pytest in both phases (or once with the caller's arguments); prints one closing
    line over both phases, as CI reads it."""
    phases = [arguments] if arguments else [PARALLEL, SERIAL]
    # every xdist worker collects the tests itself: one hash seed gives every process the
    # same set and dict order, so parametrized ids come out the same everywhere
    env = {**env, "PYTHONHASHSEED": env.get("PYTHONHASHSEED", "0")}
    code = 0
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    with tempfile.TemporaryDirectory(prefix="hoare-suite-") as scratch:
        for index, phase in enumerate(phases):
            report = Path(scratch) / f"phase{index}.xml"
            started = time.monotonic()
            done = subprocess.call([python, "-m", "pytest", f"--junitxml={report}", *phase],
                                   cwd=ROOT, env=env)
            print(f"suite: phase {' '.join(phase) or '(all)'} exited {done} "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
            if done == 5 and phase is SERIAL:  # no serial test selected: nothing failed
                done = 0
            code = code or done
            for key, value in _count(report).items():
                totals[key] += value
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    print(f"suite: {passed} passed, {failed} failed, {totals['skipped']} skipped", flush=True)
    return code


def main(arguments: list[str]) -> int:
    if arguments[:1] == ["--editable"]:
        # the fast loop for development: the editable install in .venv, no wheel
        return run_suite(sys.executable, dict(os.environ), arguments[1:])
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
    code = run_suite(str(VENV / "bin" / "python"), env, arguments)
    print(f"against_wheel: the suite against the wheel exited {code} "
          f"({time.monotonic() - ready:.0f} s)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
