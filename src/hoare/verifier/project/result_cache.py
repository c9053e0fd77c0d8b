"""The verdict cache of ``hoare verify``: one entry per unit (file), consulted before
anything is imported.

A unit's key hashes everything its verdicts depend on: the file's bytes and the bytes
of every local module it imports, transitively (found by reading ``import``
statements, not by importing: an over-approximation, so an edit anywhere a contract
could see re-checks it); the source of hoare itself; the versions of Python,
pydantic, pydantic-core and z3 and the names of every installed distribution; the
verifier's options; the ``HOARE_*`` environment. Edit a contract, a model, a
referenced constant, or upgrade a package, and the affected units are checked again;
nothing else is. What the key cannot see (a predicate reading a data file at import
time) is what ``--no-cache`` is for.

Entries are kept in packs, JSON files of many entries written atomically (temporary
file, then ``os.replace``), so concurrent runs and a killed run never leave a torn
pack; an unreadable pack or entry is a miss. A killed run loses at most the entries
not yet flushed (fewer than ``PACK_SIZE``). The cache holds results, never
decisions: a hit returns exactly the report the unit's check produced.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hoare.verifier.project.targets import Unit, read_source
from hoare.verifier.report.model import json_text

__all__ = ["VerdictCache", "default_directory", "local_imports"]

_FORMAT = "v2"  # v1: a file per entry
PACK_SIZE = 256  # results per pack file
MAX_PACKS = 16  # more, and ``prune`` rewrites them as one


def default_directory(root: Path) -> Path:
    """``$HOARE_CACHE_DIR``, else ``.hoare_cache`` in the project root."""
    given = os.environ.get("HOARE_CACHE_DIR")
    return Path(given) if given else root / ".hoare_cache"


class VerdictCache:
    """Unit results on disk under ``directory``, keyed by ``key``."""

    def __init__(self, directory: Path, settings: dict[str, Any]) -> None:
        self.directory = directory / _FORMAT
        self.settings = json.dumps(settings, sort_keys=True, default=str)
        self._environment: str | None = None
        # per file (its path as a string: hashing and comparing ``Path`` objects cost
        # more than the rest of a warm run): digest, local imports, import closure
        self._digests: dict[str, str | None] = {}
        self._imports: dict[str, list[str]] = {}
        self._closures: dict[str, frozenset[str]] = {}
        self._seals: dict[str, str | None] = {}  # per file, its component's (``_closure``)
        # each file's import statements by its digest, in one file (``imports.json``):
        # a warm run reads it once instead of parsing every file
        self._statements: dict[str, list[list[Any]]] | None = None
        self._used: set[str] = set()
        self._added = False
        # verdict packs (see "entries" below)
        self._entries: dict[str, Any] | None = None
        self._read: list[Path] = []
        self._written: list[Path] = []
        self._pending: dict[str, Any] = {}
        self._used_entries: dict[str, Any] = {}

    # -- keys -----------------------------------------------------------------------
    def key(self, unit: Unit) -> str | None:
        """The unit's key, or None when a file it depends on cannot be read."""
        path = str(unit.path)
        self._closure(path)
        seal = self._seals[path]
        if seal is None:
            return None
        material = "\0".join((self.environment(), self.settings, unit.module or "",
                               unit.only or "", path, seal))
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    def closure(self, path: Path) -> list[Path]:
        """``path`` and every local file it imports, transitively, sorted by name."""
        return [Path(file) for file in sorted(self._closure(str(path)))]

    def imports_any(self, path: Path, files: set[str]) -> bool:
        """Whether ``path`` is, or imports (transitively), one of ``files`` (paths as
        strings, as ``os.path.realpath`` gives them)."""
        return not files.isdisjoint(self._closure(str(path)))

    def _closure(self, start: str) -> frozenset[str]:
        """The files ``start`` imports, transitively, and itself; memoized per file.

        Every unit of a project usually imports the same modules (a package's
        ``__init__`` and what it imports): walking them again for each unit made the
        keys of n units cost n times the size of that shared closure. So the import
        graph's strongly connected components are found once (Tarjan's algorithm,
        iterative: an import chain can be deeper than the recursion limit), and a
        component's closure is its members and the closures of the components it
        imports, computed before it and shared by every member.

        Each component is also sealed: a digest of its members' paths and contents
        and of the seals of the components it imports (None when a file cannot be
        read). A seal changes when any file of the closure changes (its bytes, or
        the imports that make the closure), so a key hashes one seal instead of
        every file of its closure."""
        done = self._closures
        if start in done:
            return done[start]
        order: dict[str, int] = {start: 0}  # visiting order; lowest order reachable:
        low: dict[str, int] = {start: 0}
        stack = [start]  # visited, component not yet complete
        on_stack = {start}
        work = [(start, iter(self._local_imports(start)))]
        while work:
            node, edges = work[-1]
            for dep in edges:
                if dep in done:
                    continue  # a complete component (of this walk or an earlier one)
                if dep not in order:
                    order[dep] = low[dep] = len(order)
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, iter(self._local_imports(dep))))
                    break
                if dep in on_stack:
                    low[node] = min(low[node], order[dep])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    members = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.add(member)
                        if member == node:
                            break
                    files = set(members)
                    below: set[str | None] = set()
                    for member in members:
                        for dep in self._local_imports(member):
                            if dep not in members:
                                files |= done[dep]
                                below.add(self._seals[dep])
                    closure = frozenset(files)
                    seal = self._seal(sorted(members), below)
                    for member in members:
                        done[member] = closure
                        self._seals[member] = seal
        return done[start]

    def _seal(self, members: list[str], below: set[str | None]) -> str | None:
        """A component's seal (see ``_closure``): None when one of its files, or of
        the components below it, cannot be read."""
        parts = []
        for member in members:
            digest = self._digest(member)
            if digest is None:
                return None
            parts.append(f"{member}={digest}")
        if None in below:
            return None
        parts.append("imports")
        parts.extend(sorted(seal for seal in below if seal is not None))
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _digest(self, path: str) -> str | None:
        if path not in self._digests:
            self._source(path)
        return self._digests[path]

    def _source(self, path: str) -> bytes | None:
        """The file's bytes (None: unreadable), its digest recorded: the bytes whose
        import statements are read are the bytes the digest names (read once, not
        once per use: a file edited in between could have filed one version's
        imports under the other's digest)."""
        try:
            source = read_source(Path(path))
        except OSError:
            self._digests[path] = None
            return None
        self._digests[path] = hashlib.sha256(source).hexdigest()
        return source

    def _local_imports(self, path: str) -> list[str]:
        if path in self._imports:
            return self._imports[path]
        source = self._source(path) if path not in self._digests else None
        digest = self._digests[path]
        statements = self._index()
        names = statements.get(digest) if digest else None
        if not isinstance(names, list):
            if digest is not None and source is None:  # digested before: read it again
                source = self._source(path)
                digest = self._digests[path]
            names = _import_statements(source) if source is not None else []
            if digest:
                statements[digest] = names
                self._added = True
        if digest:
            self._used.add(digest)
        found = [str(file) for file in local_imports(
            Path(path), [(int(level), str(name), list(items)) for level, name, items in names])]
        self._imports[path] = found
        return found

    def _index(self) -> dict[str, list[list[Any]]]:
        if self._statements is None:
            found = _read_json(self.directory / "imports.json")
            self._statements = found if isinstance(found, dict) else {}
        return self._statements

    def save_imports(self, keep: int) -> None:
        """Write the import statements found (the files seen this run first, then
        older ones up to ``keep`` in all): a later run need not parse these files."""
        if not self._added or self._statements is None:
            return
        kept = {d: self._statements[d] for d in self._statements if d in self._used}
        for digest, names in self._statements.items():
            if len(kept) >= keep:
                break
            kept.setdefault(digest, names)
        _write_json(self.directory / "imports.json", kept)
        self._added = False

    def environment(self) -> str:
        """Python, hoare's own source, the solver and validator versions, installed
        distributions and the HOARE_* environment, as one digest."""
        if self._environment is None:
            h = hashlib.sha256()
            h.update(sys.version.encode())
            for file in _hoare_sources():
                h.update(str(file.name).encode())
                try:
                    h.update(file.read_bytes())
                except OSError:
                    h.update(b"?")
            for name in _distributions():
                h.update(name.encode("utf-8", "surrogatepass"))
            for name, value in sorted(os.environ.items()):
                if name.startswith("HOARE_") and name != "HOARE_CACHE_DIR":
                    h.update(f"{name}={value}".encode("utf-8", "surrogatepass"))
            self._environment = h.hexdigest()
        return self._environment

    # -- entries --------------------------------------------------------------------
    # Results live in packs: JSON files of ``{key: result}`` under ``verdicts/``, one
    # per batch of checked units. Creating a file costs ~0.6 ms of kernel time (ext4
    # on a VM), so a file per unit made a cold run of 1000 files pay a second for it,
    # and a warm run read 1000 files instead of a few.
    def _load(self) -> dict[str, Any]:
        """Every stored entry, the newest pack's first (read once)."""
        if self._entries is None:
            self._entries = {}
            packs = []
            for file in (self.directory / "verdicts").glob("*.json"):
                if file.name.startswith("."):
                    continue  # another run's temporary file, not yet a pack
                try:
                    packs.append((file.stat().st_mtime_ns, file.name, file))
                except OSError:
                    continue
            for _mtime, _name, file in sorted(packs, reverse=True):
                self._read.append(file)
                found = _read_json(file)
                if isinstance(found, dict):
                    for key, result in found.items():
                        self._entries.setdefault(key, result)
        return self._entries

    def is_empty(self) -> bool:
        """No stored entry at all: every unit will be a miss."""
        return not self._load()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored result, or None (a miss) when absent or not of the right shape.
        A hit counts as used, which ``prune`` keeps first."""
        found = self._load().get(key)
        if not _well_formed(found):
            return None
        self._used_entries[key] = found
        return found

    def put(self, key: str, result: dict[str, Any]) -> None:
        """Store ``result``: written with the next ``flush`` (every PACK_SIZE)."""
        self._load()[key] = result
        self._used_entries[key] = result
        self._pending[key] = result
        if len(self._pending) >= PACK_SIZE:
            self.flush()

    def flush(self) -> None:
        """Write the results ``put`` since the last flush as one new pack."""
        if not self._pending:
            return
        name = f"{time.time_ns():020d}-{os.getpid()}-{len(self._written)}.json"
        path = self.directory / "verdicts" / name
        _write_json(path, self._pending)
        self._written.append(path)
        self._pending = {}

    def prune(self, keep: int) -> int:
        """When the packs have grown past ``keep`` entries or MAX_PACKS files, rewrite
        them as one pack of the ``keep`` most recently used entries (used by this run
        first, then the newest); the number of entries dropped."""
        self.flush()
        entries = self._load()
        packs = [*self._read, *self._written]
        if len(entries) <= keep and len(packs) <= MAX_PACKS:
            return 0
        kept = dict(self._used_entries)
        for key, result in entries.items():
            if len(kept) >= keep:
                break
            kept.setdefault(key, result)
        if len(kept) > keep:
            kept = dict(list(kept.items())[:keep])
        name = f"{time.time_ns():020d}-{os.getpid()}-compact.json"
        if not _write_json(self.directory / "verdicts" / name, kept):
            return 0
        for path in packs:  # only the packs read or written here: never another run's
            try:
                path.unlink()
            except OSError:
                continue
        self._read, self._written = [self.directory / "verdicts" / name], []
        self._entries = dict(kept)
        return len(entries) - len(kept)


def _well_formed(result: Any) -> bool:
    """A unit result as ``units.run_unit`` makes it (an entry written by another
    version, or edited by hand, is a miss rather than a crash)."""
    if not isinstance(result, dict) or set(result) != {"contracts", "pipelines", "errors"}:
        return False
    if result["errors"] or not all(isinstance(result[k], list) for k in result):
        return False
    for report in (*result["contracts"], *result["pipelines"]):
        if not isinstance(report, dict) or not isinstance(report.get("name"), str) or \
                not isinstance(report.get("checks"), list):
            return False
        for check in report["checks"]:
            if not isinstance(check, dict) or check.get("status") not in _STATUSES or \
                    not isinstance(check.get("kind"), str) or \
                    not isinstance(check.get("message"), str):
                return False
    return True


_STATUSES = ("pass", "fail", "warn", "unknown")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


_MADE: set[Path] = set()  # directories this process made or found (set.add is atomic)


def _write_json(path: Path, value: Any) -> bool:
    """Atomically; a cache that cannot be written is only slower, never an error
    (False)."""
    try:
        text = json_text(value)  # C encoder: fast; surrogates escaped (non-UTF-8 names)
        if path.parent not in _MADE:
            _make(path)
        try:
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        except FileNotFoundError:  # removed since: make it again
            _make(path)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, TypeError):
        return False
    return True


def _make(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _ignore_marker(path)
    _MADE.add(path.parent)


def _ignore_marker(path: Path) -> None:
    """A ``.gitignore`` of ``*`` at the cache's root, so it is never committed."""
    for parent in path.parents:
        if parent.name == _FORMAT:
            marker = parent.parent / ".gitignore"
            if not marker.exists():
                marker.write_text("# created by hoare verify\n*\n")
            return


def _import_statements(source: bytes) -> list[list[Any]]:
    """``[level, module, [names]]`` of every import statement, anywhere in the file."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    out: list[list[Any]] = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            out.extend([0, alias.name, []] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append([node.level, node.module or "", [a.name for a in node.names]])
    return out


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement, at any depth (an import is a statement, so only statement
    lists need searching, not the expressions that make up most of a file)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, list):
                todo.extend(block)


def _package_of(path: Path) -> tuple[Path, list[str]]:
    """(root directory, package parts) of a file: its package chain up to the first
    directory without ``__init__.py``."""
    parts: list[str] = []
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return directory, parts


def local_imports(path: Path, statements: Iterable[tuple[int, str, list[str]]]) -> list[Path]:
    """The project files ``statements`` of ``path`` may import: modules found under
    the file's own root (its directory, or its top package's parent) or the current
    directory, with every package ``__init__.py`` on the way (it runs on import).
    Installed packages are left out: their versions are part of the key."""
    root, package = _package_of(path)
    roots = tuple(dict.fromkeys([str(root), os.getcwd(), *_project_paths()]))
    found: set[str] = set()
    for level, module, names in statements:
        if level:
            base = package[:len(package) - level + 1] if level <= len(package) else None
            if base is None:
                continue
            dotted = [*base, *module.split(".")] if module else base
            search: tuple[str, ...] = (str(root),)
        else:
            dotted = module.split(".")
            search = roots
        candidates = [tuple(dotted)] + [(*dotted, n) for n in names if n != "*"]
        for parts in candidates:
            for directory in search:
                found.update(_files_of(directory, parts))
    found.discard(str(path))
    return sorted(Path(f) for f in found if not _installed(f) and not _own_source(f))


@functools.lru_cache(maxsize=65536)
def _files_of(root: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    """The files importing ``parts`` from ``root`` runs: each package's ``__init__.py``
    and the module itself (memoized: every file of a project imports the same names)."""
    out = []
    directory = root
    for index, part in enumerate(parts):
        if not part.isidentifier():
            break
        module = os.path.join(directory, part + ".py")
        package = os.path.join(directory, part)
        if index == len(parts) - 1 and os.path.isfile(module):
            out.append(os.path.realpath(module))
            break
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init):
            out.append(os.path.realpath(init))
        elif not os.path.isdir(package):
            break
        directory = package
    return tuple(out)


def _project_paths() -> list[str]:
    """The ``sys.path`` entries that hold project code, not installed packages: a
    ``src/`` layout's ``src`` (put there by ``PYTHONPATH`` or an editable install)."""
    return list(_project_paths_of(tuple(sys.path), os.getcwd()))


@functools.lru_cache(maxsize=8)
def _project_paths_of(path: tuple[str, ...], cwd: str) -> tuple[str, ...]:
    """(``cwd``: part of the memo's key, as an empty entry means it)"""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    out = []
    for entry in path:
        real = os.path.realpath(entry or ".")
        if not os.path.isdir(real) or _installed(real) or real.endswith(".zip"):
            continue
        if any(real == p or real.startswith(p + os.sep) for p in prefixes):
            continue  # the standard library and the virtualenv
        out.append(real)
    return tuple(out)


def _installed(path: str) -> bool:
    return "site-packages" in path or "dist-packages" in path


def _own_source(path: str) -> bool:
    """A file of hoare itself (``path`` resolved): every one is hashed into the key
    (``environment``), as an installed package's version is, so it needs no place in
    a closure. From an editable install or a source tree, hoare is not under
    ``site-packages``, and each run parsed its ~190 files for their imports."""
    return path.startswith(_own_roots())


@functools.lru_cache(maxsize=1)
def _own_roots() -> tuple[str, ...]:
    """The directories ``_hoare_sources`` hashes, resolved, each ending in a separator."""
    return tuple(os.path.join(os.path.realpath(root), "") for root in _source_roots())


def _source_roots() -> list[Path]:
    """The directories of hoare's own source: the package's and its kernel's."""
    import hoare

    roots = {Path(p) for p in hoare.__path__}
    import hoare.kernel

    roots |= {Path(p) for p in hoare.kernel.__path__}
    return sorted(roots)


def _hoare_sources() -> list[Path]:
    files: list[Path] = []
    for root in _source_roots():
        files.extend(sorted(root.rglob("*.py")))
    return files


def _distributions() -> list[str]:
    """The ``*.dist-info`` names on ``sys.path`` (name and version of everything
    installed): an upgrade of any library a predicate calls changes the key."""
    names: list[str] = []
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                names.extend(e.name for e in listing
                             if e.name.endswith((".dist-info", ".egg-info", ".egg-link")))
        except OSError:
            continue
    return sorted(names)
