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
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hoare.verifier.project.discovery import DiscoveryError

__all__ = ["DEFAULT_EXCLUDE", "Unit", "plan", "read_source", "unreadable"]

DEFAULT_EXCLUDE = ("__pycache__", "node_modules", "site-packages", "venv", ".venv", "build",
                   "dist", ".*")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_QUALNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Unit:
    """One module to import and check. ``module``: import it by this dotted name (a
    module or package target); None: import the file itself (``discover`` rules).
    ``only``: the one class or pipeline name a ``target:Name`` asked for. ``problem``:
    why the file cannot be read (a FIFO, a broken link...): reported as the unit's
    import error, never opened (opening a FIFO would wait forever)."""

    target: str
    path: Path
    module: str | None = None
    only: str | None = None
    problem: str | None = None

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
    try:
        path.is_dir()  # raises on a name no file system takes
    except (OSError, ValueError, UnicodeError) as error:  # too long, NUL, a surrogate
        reason = getattr(error, "strerror", None) or str(error)[:100]
        raise DiscoveryError(f"{target[:200]!r}: not a usable path ({reason})") from None
    if path.is_dir():
        if only is not None:
            raise DiscoveryError(f"{target}: ':{only}' names a class or pipeline of a module; "
                                 f"{base} is a directory")
        return _file_units(target, _walk(path, patterns))
    if path.is_file():
        if path.suffix != ".py":
            raise DiscoveryError(f"{target}: not a Python file")
        problem = unreadable(path)
        if problem is not None:
            raise DiscoveryError(f"{target}: {problem}")
        return [Unit(target, path.resolve(), None, only)]
    if os.path.lexists(base):
        raise DiscoveryError(f"{target}: {unreadable(path) or 'not a file or directory'}")
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


def _file_units(target: str, files: list[Path]) -> list[Unit]:
    """A unit per walked file; one that is not a readable regular file carries why."""
    return [Unit(target, f, problem=unreadable(f)) for f in files]


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"))


def unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be imported as source, or None for a readable regular file.
    Only ``stat`` is used: a FIFO or device is never opened."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "no such file"
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    for test, kind in _KINDS:
        if test(mode):
            return f"not a regular file: it is {kind}"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "cannot be read: permission denied"
    return None


def read_source(path: Path) -> bytes:
    """The bytes of a regular file, opened without blocking (a FIFO put in place of
    the file after ``plan`` looked is refused, not waited on). Raises ``OSError``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
                units.append(Unit(target, file, ".".join([name, *parts]),
                                  problem=unreadable(file)))
    if not units:
        raise DiscoveryError(f"{target}: the module has no Python source to verify "
                             f"({spec.origin or 'a namespace package with no files'})")
    return units
