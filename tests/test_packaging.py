"""The wheel ships every package of both source roots, and each imports from it.

Builds offline (``pip wheel --no-build-isolation`` with the environment's own
setuptools) from a copy of the sources, so the working tree gets no ``build/`` or
``*.egg-info``; installs the wheel into a scratch directory and imports every
package there in a child process, checking each comes from the wheel. The whole
suite runs against the installed wheel too: ``make test-wheel`` (part of ``make
test``; tests/against_wheel.py).
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


def test_a_run_that_claims_the_wheel_but_imports_another_hoare_refuses_to_start(
        tmp_path: Path) -> None:
    """``HOARE_TEST_WHEEL`` names the site-packages the suite must test; a run that
    imports hoare from anywhere else stops before any test (tests/conftest.py)."""
    (tmp_path / "site").mkdir()
    env = {**os.environ, "HOARE_TEST_WHEEL": str(tmp_path / "site")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "test_public_api.py")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert f"HOARE_TEST_WHEEL={tmp_path / 'site'} but hoare was imported from" in done.stderr
    assert " passed" not in done.stdout
