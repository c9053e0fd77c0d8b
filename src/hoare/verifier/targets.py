"""What ``hoare verify`` was asked to check, resolved to files *without importing them*.

A target is a ``.py`` file, a directory (walked for ``*.py``), a dotted module name,
an installed package's name (recursing into its submodules), or any of these
followed by ``:Name`` to verify one contract class or pipeline of that module
(``pkg.rules:Refund``, ``rules.py:Refund``). Each resolved file is a ``Unit``: the
verdict cache is keyed per unit, and worker processes import and check units apart.
Nothing is imported here, so a warm cache answers without importing the project.
"""

from __future__ import annotations

import fnmatch
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .discover import DiscoveryError

__all__ = ["DEFAULT_EXCLUDE", "Unit", "plan"]

DEFAULT_EXCLUDE = ("__pycache__", "node_modules", "site-packages", "venv", ".venv", "build",
                   "dist", ".*")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_QUALNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Unit:
    """One module to import and check. ``module``: import it by this dotted name (a
    module or package target); None: import the file itself (``discover`` rules).
    ``only``: the one class or pipeline name a ``target:Name`` asked for."""

    target: str
    path: Path
    module: str | None = None
    only: str | None = None

    @property
    def label(self) -> str:
        return self.module or str(self.path)


def plan(targets: Sequence[str], exclude: Sequence[str] = ()) -> list[Unit]:
    """Every unit of ``targets``, in order, each file once. Raises ``DiscoveryError``
    for a target that names nothing (a usage error: exit 2 before any work)."""
    patterns = (*DEFAULT_EXCLUDE, *exclude)
    units: list[Unit] = []
    seen: set[tuple[Path, str | None]] = set()
    for target in targets:
        for unit in _resolve(target, patterns):
            key = (unit.path, unit.only)
            if key not in seen:
                seen.add(key)
                units.append(unit)
    return units


def _resolve(target: str, patterns: Sequence[str]) -> list[Unit]:
    base, only = _split_name(target)
    path = Path(base)
    if path.is_dir():
        if only is not None:
            raise DiscoveryError(f"{target}: ':{only}' names a class or pipeline of a module; "
                                 f"{base} is a directory")
        return [Unit(target, f) for f in _walk(path, patterns)]
    if path.is_file():
        if path.suffix != ".py":
            raise DiscoveryError(f"{target}: not a Python file")
        return [Unit(target, path.resolve(), None, only)]
    if base.endswith(".py") or os.sep in base or "/" in base or not _DOTTED.match(base):
        raise DiscoveryError(f"{target}: no such file or directory")
    return _module_units(target, base, only, patterns)


def _split_name(target: str) -> tuple[str, str | None]:
    """``pkg.mod:Class`` → (``pkg.mod``, ``Class``); a Windows drive is not a name."""
    head, sep, tail = target.rpartition(":")
    if not sep or not head or not _QUALNAME.match(tail) or (len(head) == 1 and head.isalpha()):
        return target, None
    return head, tail


def _excluded(path: Path, relative: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(path.name, p) or fnmatch.fnmatchcase(relative, p)
               for p in patterns)


def _walk(directory: Path, patterns: Sequence[str]) -> list[Path]:
    """The ``*.py`` files under ``directory``, sorted, excluded names and paths (relative
    to the current directory) skipped."""
    top = directory.resolve()
    try:
        base = top.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        base = top.as_posix()
    files: list[Path] = []
    for root, dirs, names in os.walk(top):
        here = Path(root)
        inner = here.relative_to(top).as_posix()
        prefix = "/".join(p for p in (base, inner) if p and p != ".")

        def relative(name: str, prefix: str = prefix) -> str:
            return f"{prefix}/{name}" if prefix else name

        dirs[:] = sorted(d for d in dirs if not _excluded(here / d, relative(d), patterns))
        files.extend(here / n for n in sorted(names)
                     if n.endswith(".py") and not _excluded(here / n, relative(n), patterns))
    return files


def _find_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The module's spec from the file system alone (no parent package is imported);
    falls back to ``importlib.util.find_spec`` (which may import the parents) for
    modules only a custom finder knows, such as editable installs."""
    search: list[str] | None = [os.getcwd(), *sys.path]
    spec = None
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), search)
        if spec is None:
            break
        search = list(spec.submodule_search_locations or [])
    if spec is not None:
        return spec
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    except Exception as error:  # a parent package that fails to import
        raise DiscoveryError(f"{name}: import failed: {type(error).__name__}: {error}") \
            from error


def _module_units(target: str, name: str, only: str | None,
                  patterns: Sequence[str]) -> list[Unit]:
    spec = _find_spec(name)
    if spec is None:
        raise DiscoveryError(f"{target}: no such file, directory or module")
    units: list[Unit] = []
    if spec.origin and spec.origin.endswith(".py"):
        units.append(Unit(target, Path(spec.origin).resolve(), name, only))
    if only is None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            root = Path(location).resolve()
            for file in _walk(root, patterns):
                relative = file.relative_to(root).with_suffix("")
                parts = list(relative.parts)
                if parts[-1] == "__init__":
                    parts.pop()
                if not parts or not all(p.isidentifier() for p in parts):
                    continue
                units.append(Unit(target, file, ".".join([name, *parts])))
    if not units:
        raise DiscoveryError(f"{target}: the module has no Python source to verify "
                             f"({spec.origin or 'a namespace package with no files'})")
    return units
