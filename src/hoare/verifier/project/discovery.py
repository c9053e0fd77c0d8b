"""Find the contracts and pipelines to verify: files, directories, module names.

A file is imported under a module name derived from its path (``examples/qa.py``
→ ``examples.qa``, made unique if that name is taken by another file), with its
directory on ``sys.path`` so that it can import its neighbours, exactly as
``python examples/qa.py`` would. A directory is walked for ``*.py`` files
(hidden directories, ``__pycache__`` and virtualenvs skipped). Every class
the module owns with a ``__hoare__`` description is a contract (the rule of
``hoare verify``: see ``units``); every ``Pipeline`` object at module level is a
pipeline.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from hoare.errors import UsageError

__all__ = ["DiscoveryError", "Found", "Staged", "discover", "find_in_module", "import_file",
           "is_pipeline", "load"]

_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "build", "dist"}
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class DiscoveryError(UsageError):
    """A target could not be found or imported (the CLI exits with status 2)."""


class Staged(Protocol):
    """What the verifier reads of a pipeline: its contract instances, in order (a
    ``Pipeline``, or any object ``is_pipeline`` accepts)."""

    @property
    def stages(self) -> Sequence[Any]: ...


@dataclass
class Found:
    """Contract classes and pipelines (name, object), in discovery order."""

    contracts: list[tuple[str, type]] = field(default_factory=list)
    pipelines: list[tuple[str, Staged]] = field(default_factory=list)
    modules: list[types.ModuleType] = field(default_factory=list)

    def add_module(self, module: types.ModuleType) -> None:
        if any(m is module for m in self.modules):
            return
        self.modules.append(module)
        contracts, pipelines = find_in_module(module)
        seen_classes = {id(c) for _, c in self.contracts}
        seen_pipelines = {id(p) for _, p in self.pipelines}
        self.contracts.extend((n, c) for n, c in contracts if id(c) not in seen_classes)
        self.pipelines.extend((n, p) for n, p in pipelines if id(p) not in seen_pipelines)


def is_pipeline(value: object) -> TypeGuard[Staged]:
    from hoare.contracts.pipeline import (
        Pipeline,  # here: the library's pipeline imports the contract
    )

    if isinstance(value, Pipeline):
        return True
    stages = getattr(value, "stages", None)
    return (not isinstance(value, type) and isinstance(stages, tuple) and bool(stages)
            and all(hasattr(type(s), "__hoare__") for s in stages))


def find_in_module(module: types.ModuleType) -> tuple[list[tuple[str, type]],
                                                        list[tuple[str, Staged]]]:
    """The contract classes ``module`` owns (``units.contract_entries``: defined in it,
    or made elsewhere and held here; each object once, named apart) and its
    module-level pipelines."""
    from hoare.verifier.project.units import (
        contract_entries,  # the rule `hoare verify` applies, one place
    )

    contracts = [(name, cls) for name, cls, _attributes in contract_entries(module)]
    pipelines: list[tuple[str, Staged]] = []
    for attribute, value in list(vars(module).items()):
        if isinstance(value, (type, list, tuple, dict)):
            continue
        if is_pipeline(value):
            name = getattr(value, "name", None) or attribute
            pipelines.append((f"{module.__name__}:{name}", value))
    return contracts, pipelines


def _module_name_for(path: Path) -> str:
    try:
        relative = path.resolve().relative_to(Path.cwd().resolve())
        parts = list(relative.with_suffix("").parts)
    except ValueError:
        parts = [path.stem]
    parts = [re.sub(r"\W", "_", p) or "_" for p in parts]
    parts = [p if not p[0].isdigit() else f"_{p}" for p in parts]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _package_name(path: Path) -> tuple[Path, str] | None:
    """(directory to put on sys.path, dotted name) of a file inside a package (its
    directory has an ``__init__.py``), so that its relative imports work."""
    if not (path.parent / "__init__.py").is_file():
        return None
    parts = [] if path.name == "__init__.py" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    if not all(part.isidentifier() for part in parts):
        return None
    return directory, ".".join(parts)


def _is_file_of(module: types.ModuleType, path: Path) -> bool:
    """``module`` was loaded from ``path`` (resolved): its ``__file__`` says so, or its
    import spec's origin does when the module rebound its own ``__file__`` (only a
    ``str`` is taken for a path: loading the file again would run it twice)."""
    from hoare.declaration.source import module_file

    try:
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
    except Exception:
        origin = None
    for filename in (module_file(module), origin):
        if not isinstance(filename, str) or not filename:
            continue
        try:
            if Path(filename).resolve() == path:
                return True
        except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop
            continue
    return False


def import_file(path: Path) -> types.ModuleType:
    from hoare.verifier.project.targets import unreadable

    problem = unreadable(path)  # a FIFO or device is never opened: it would block
    if problem is not None:
        raise DiscoveryError(f"{path}: {problem}")
    path = path.resolve()
    package = _package_name(path)
    if package is not None:
        root, dotted = package
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        try:
            module = importlib.import_module(dotted)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            raise DiscoveryError(f"{path}: import failed: {type(error).__name__}: {error}") \
                from error
        if _is_file_of(module, path):
            return module
        # Another module of that name came first on sys.path: load this file itself.
    name = _module_name_for(path)
    existing = sys.modules.get(name)
    if existing is not None and _is_file_of(existing, path):
        return existing
    base, suffix = name, 1
    while name in sys.modules:
        suffix += 1
        name = f"{base}_{suffix}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DiscoveryError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    sys.modules[name] = module
    _known_to_inspect(module, path)
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    except BaseException as error:  # SystemExit at import time included
        sys.modules.pop(name, None)
        raise DiscoveryError(f"{path}: import failed: {type(error).__name__}: {error}") \
            from error
    return module


def _known_to_inspect(module: types.ModuleType, path: Path) -> None:
    """Tell ``inspect.getmodule`` which module ``path`` is before the module runs, as
    its own scan of ``sys.modules`` would find: pydantic asks it of every frame while
    it reads a model's attribute docstrings, and on a file it has not seen it walks
    every loaded module, so a run importing many files paid a growing scan per file.
    Only fills the cache that scan fills (nothing, if this Python's ``inspect`` has
    none); a path it would spell otherwise is scanned as before."""
    by_file = getattr(inspect, "modulesbyfile", None)
    by_name = getattr(inspect, "_filesbymodname", None)
    file = getattr(module, "__file__", None)
    if not (isinstance(by_file, dict) and isinstance(by_name, dict) and
            isinstance(file, str)):
        return
    absolute = inspect.getabsfile(module)
    by_name[module.__name__] = file
    by_file[absolute] = by_file[os.path.realpath(absolute)] = module.__name__


def _walk(directory: Path) -> list[Path]:
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        files.extend(Path(root) / n for n in sorted(names) if n.endswith(".py"))
    return files


def load(target: str) -> list[types.ModuleType]:
    """Import a file, every ``*.py`` of a directory, or a module by name."""
    path = Path(target)
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except (OSError, ValueError, UnicodeError) as error:  # a name too long, NUL, surrogate
        reason = getattr(error, "strerror", None) or str(error)[:100]
        raise DiscoveryError(f"{target[:200]!r}: not a usable path ({reason})") from None
    if is_dir:
        return [import_file(f) for f in _walk(path)]
    if is_file:
        if path.suffix != ".py":
            raise DiscoveryError(f"{target}: not a Python file")
        return [import_file(path)]
    if os.path.lexists(target):  # a FIFO, socket, device or broken link: say which
        from hoare.verifier.project.targets import unreadable

        raise DiscoveryError(f"{target}: {unreadable(path) or 'not a file or directory'}")
    if target.endswith(".py") or os.sep in target or not _MODULE_NAME.match(target):
        raise DiscoveryError(f"{target}: no such file or directory")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # `hoare verify pkg.module` from the project root
    try:
        return [importlib.import_module(target)]
    except ModuleNotFoundError as error:
        if error.name and target.startswith(error.name):
            raise DiscoveryError(f"{target}: no such file, directory or module") from error
        raise DiscoveryError(f"{target}: import failed: {type(error).__name__}: {error}") \
            from error
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise DiscoveryError(f"{target}: import failed: {type(error).__name__}: {error}") \
            from error


def discover(targets: list[str]) -> Found:
    """Import every target and collect its contracts and pipelines."""
    found = Found()
    for target in targets:
        for module in load(target):
            found.add_module(module)
    return found
