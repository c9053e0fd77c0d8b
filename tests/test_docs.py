"""The docs cannot rot (issue 33): every Python block in the README and in docs/ runs
offline as it is printed, the site builds with MkDocs ``--strict``, and the README
stays a front page.

A block whose fence says ``python live`` needs a live model: it is skipped, with the
reason shown. A block whose fence says ``python verify`` is a module to be checked:
``hoare verify`` on it must exit 0 (and so must not run its main guard). A block
defining ``test_*`` functions runs under pytest (with hoare's plugin, as a user's test
file would); any other block runs as a script. Each runs in a
child process from the repository's root, with the ``hoare`` under test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)


def _blocks() -> list[object]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            name = f"{page.relative_to(ROOT)}:{line}"
            marks = ([pytest.mark.skip(reason=f"{name} needs a live model (```python live)")]
                     if "live" in match.group(1).split() else [])
            mode = "verify" if "verify" in match.group(1).split() else "run"
            found.append(pytest.param(match.group(2), name, mode, id=name, marks=marks))
    return found


def test_the_docs_have_python_blocks_to_run() -> None:
    assert len(_blocks()) >= 5  # the README's example, agents, engines, queries, verify


@pytest.mark.parametrize(("code", "where", "mode"), _blocks())
def test_every_python_block_runs_offline(code: str, where: str, mode: str,
                                         tmp_path: Path) -> None:
    _, _, line = where.rpartition(":")
    script = tmp_path / ("test_block.py" if re.search(r"^def test_", code, re.M)
                         else "block.py")
    # blank lines up to the block's first line, so a traceback names the page's line
    script.write_text("\n" * int(line) + code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": LIBRARY}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HOARE_MODEL", "HOARE_STATS"):
        env.pop(name, None)
    if mode == "verify":
        command = [sys.executable, "-m", "hoare", "verify", "--no-cache", str(script)]
    elif script.name.startswith("test_"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--rootdir", str(tmp_path), str(script)]
    else:
        command = [sys.executable, str(script)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{where}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"


def test_the_readme_is_a_front_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Install"
    for page in re.findall(r"\]\((docs/[\w.-]+\.md)\)", text):
        assert (ROOT / page).is_file(), page
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)\)", text))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, f"pages the README does not link: {sorted(pages - linked)}"


def test_the_local_pre_commit_hook_is_the_published_one() -> None:
    import yaml

    published = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())[0]
    text = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(# \.pre-commit-config\.yaml.*?)```", text, re.S)
    (local,) = yaml.safe_load(block)["repos"]
    assert local["repo"] == "local"
    (hook,) = local["hooks"]
    assert hook["language"] == "system"
    assert hook["entry"] == published["entry"] and hook["id"] == published["id"]


def _mkdocs() -> str:
    found = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("mkdocs is not installed (the `docs` extra; make installs it)")
    return found


def _build(source: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([_mkdocs(), "build", "--strict", "-f",
                           str(source / "mkdocs.yml"), "-d", str(site)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "verify" / "index.html").is_file()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The build above can fail: the same build of a copy with a dead link does."""
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "semantics.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no_such_page.md)\n")
    done = _build(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    assert "no_such_page.md" in done.stdout + done.stderr
