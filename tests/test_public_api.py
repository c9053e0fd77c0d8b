"""The public names: every name the README shows is exported (in ``__all__``) from a
public module, everything in an ``__all__`` exists, and ``hoare.__version__`` is the
package's version."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("hoare", "hoare.engines", "hoare.verifier", "hoare.kernel")


@pytest.mark.parametrize("name", PUBLIC)
def test_everything_in_all_exists(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []


def test_every_name_the_readme_shows_is_exported() -> None:
    text = "".join(page.read_text(encoding="utf-8")
                   for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    shown = set(re.findall(r"`([A-Z][A-Za-z0-9_]+)[(`\[.]", text))
    shown |= {n.strip() for imports in re.findall(r"from hoare[\w.]* import ([\w, ]+)", text)
              for n in imports.split(",") if n.strip()}
    modules = [importlib.import_module(name) for name in PUBLIC]
    def offered(module: object, name: str) -> bool:
        """A name the module offers: not one it merely imports for its annotations
        (``typing.Any`` shown in the docs is Python's, not hoare's)."""
        if not hasattr(module, name):
            return False
        return getattr(getattr(module, name), "__module__", None) not in (
            "typing", "typing_extensions", "collections.abc", "builtins")

    ours = [n for n in shown if any(offered(m, n) for m in modules)]
    assert len(ours) >= 15  # the README does show the API
    hidden = [n for n in ours if not any(n in m.__all__ for m in modules if hasattr(m, n))]
    assert hidden == []
    import hoare

    assert hoare.Report is importlib.import_module("hoare.verifier").Report


def test_version_is_the_packages() -> None:
    import hoare

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert hoare.__version__ == project["version"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert project["license"] == "MIT"
