"""The wheel ships every package of both source roots, and each imports from it.

Builds offline (``pip wheel --no-build-isolation`` with the environment's own
setuptools) from a copy of the sources, so the working tree gets no ``build/`` or
``*.egg-info``; installs the wheel into a scratch directory and imports every
package there in a child process, checking each comes from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOTS = {"hoare": ROOT / "src" / "hoare", "hoare.kernel": ROOT / "kernel"}

pytestmark = pytest.mark.packaging


def expected_packages() -> dict[str, str]:
    """Dotted package name → its path inside the wheel, for every directory with an
    ``__init__.py`` under src/hoare and kernel/."""
    out = {}
    for prefix, root in ROOTS.items():
        for init in root.rglob("__init__.py"):
            relative = init.parent.relative_to(root).parts
            if "__pycache__" in relative:
                continue
            name = ".".join((prefix, *relative))
            out[name] = "/".join((*name.split("."), "__init__.py"))
    return out


def _pip(*args: str) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                             "--no-input", *args], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    shutil.copytree(ROOT / "kernel", source / "kernel", ignore=ignore)
    _pip("wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(work / "dist"))
    (built,) = (work / "dist").glob("hoare-*.whl")
    return built


def test_the_wheel_contains_every_package_and_the_type_markers(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = expected_packages()
    assert {"hoare", "hoare.kernel", "hoare.engines", "hoare.verifier"} <= set(packages)
    missing = sorted(name for name, path in packages.items() if path not in names)
    assert not missing, f"packages missing from the wheel: {missing}"
    assert {"hoare/py.typed", "hoare/kernel/py.typed"} <= names
    stray = sorted(n for n in names if n.split("/")[0] not in ("hoare",)
                   and ".dist-info/" not in n)
    assert not stray, f"files outside the hoare package: {stray}"


def test_every_package_imports_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    packages = sorted(expected_packages())
    code = (
        "import importlib, json, sys\n"
        f"sys.path.insert(0, {str(target)!r})\n"
        f"print(json.dumps({{n: importlib.import_module(n).__file__ for n in {packages!r}}}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    files = json.loads(result.stdout.strip().splitlines()[-1])
    elsewhere = {n: f for n, f in files.items() if not Path(f).is_relative_to(target)}
    assert not elsewhere, f"imported from outside the wheel: {elsewhere}"


# Test modules that exercise the library in-process (no child process pointed at src/):
# run against the installed wheel, they show the wheel works, not only that it imports.
WHEEL_SUITE = ["test_answer_fragments.py", "test_decoding_schema.py", "test_resend.py",
               "test_compat_symbolicai.py", "test_stats_store.py", "test_telemetry.py",
               "test_engines.py", "test_kernel_stats.py"]


def test_the_suite_passes_against_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("HOARE_STATS", None)
    where = subprocess.run([sys.executable, "-c", "import hoare, hoare.kernel; "
                            "print(hoare.__file__); print(hoare.kernel.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(target) for line in where.stdout.split())
    suite = [str(ROOT / "tests" / name) for name in WHEEL_SUITE]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:randomly", "--rootdir", str(ROOT), *suite,
                          "--junitxml", str(tmp_path / "report.xml"),
                          "-k", "not four_processes and not kill_9 and not forked"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    import xml.etree.ElementTree as ET

    report = ET.parse(tmp_path / "report.xml").getroot().find("testsuite")
    assert report is not None
    ran = int(report.get("tests", 0)) - int(report.get("skipped", 0))
    assert ran >= 80 and report.get("failures") == "0" and report.get("errors") == "0"


def test_mypy_sees_the_types_of_an_editable_install(tmp_path: Path) -> None:
    """``make`` installs hoare editable: a static .pth with src/ (no import hook, which
    mypy cannot follow), so ``py.typed`` works there too, hoare.kernel included."""
    pytest.importorskip("mypy", reason="mypy is a dev dependency (make test installs it)")
    import site

    pths = [p for d in site.getsitepackages() for p in Path(d).glob("__editable__*hoare*.pth")]
    if not pths:
        pytest.skip("hoare is not installed editable in this environment")
    (pth,) = pths
    assert pth.read_text().strip() == str(ROOT / "src"), pth.read_text()
    checked = tmp_path / "uses_hoare.py"
    checked.write_text("from hoare import contract\nfrom hoare.kernel import Policy\n"
                       "from hoare.queries import Query\n"
                       "wrong: int = Policy.OBSERVE\n")
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir",
                           str(tmp_path / "cache"), "--python-executable", sys.executable,
                           str(checked)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=600)
    assert "import-not-found" not in done.stdout, done.stdout
    # the types are seen: the one deliberate error is reported, and only it
    assert 'expression has type "Policy", variable has type "int"' in done.stdout
    assert "Found 1 error in 1 file" in done.stdout, done.stdout
