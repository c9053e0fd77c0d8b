"""The layer rules of docs/architecture.md, read from the source (issue 27).

- ``kernel/`` imports only the standard library (and itself).
- No module imports another module's private name.
- No import cycle at module level (imports under ``if TYPE_CHECKING:`` and inside
  functions do not run at import time, so they do not count).
- Other packages reach the verifier through its faces (its sub-packages' ``__init__``).
- No module over 600 lines; every ``# type: ignore`` names its code and says why.

Each rule has a test that it sees a violation, so none of them passes by reading nothing.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "src"
KERNEL = ROOT / "kernel"


def _modules() -> dict[str, Path]:
    """Every module of the library by dotted name (the kernel through its link)."""
    found: dict[str, Path] = {}
    for path in sorted((SOURCES / "hoare").rglob("*.py")):
        parts = list(path.relative_to(SOURCES).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: module level, and inside ``if``
    and ``try`` blocks there, except ``if TYPE_CHECKING:``."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if test not in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                pending.extend(handler.body)


def _all_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def test_the_kernel_imports_only_the_standard_library() -> None:
    stray = []
    for path in sorted(KERNEL.glob("*.py")):
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                if node.level > 1:
                    stray.append(f"{path.name}: from {'.' * node.level}{node.module or ''}")
                continue
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            stray += [f"{path.name}: {name}" for name in names
                      if name.partition(".")[0] not in sys.stdlib_module_names
                      and name != "__future__"]
    assert stray == []


def test_the_kernel_check_sees_a_third_party_import(tmp_path: Path) -> None:
    """The rule above reads what it claims to read: a kernel-like file importing
    pydantic is caught by the same walk."""
    tree = ast.parse("from __future__ import annotations\nimport json\n"
                     "def f():\n    import pydantic\n")
    names = [a.name for n in _all_imports(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [n for n in names if n not in sys.stdlib_module_names] == ["pydantic"]


PUBLIC_PATHS = ["hoare", "hoare.errors", "hoare.engines", "hoare.engines.base", "hoare.kernel",
                "hoare.queries", "hoare.agents", "hoare.compat.symbolicai", "hoare.telemetry",
                "hoare.pytest_plugin", "hoare.verifier", "hoare.cli"]


@pytest.mark.parametrize("name", PUBLIC_PATHS)
def test_every_public_path_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__name__ == name
    if name == "hoare.cli":
        assert callable(module.run)  # the console script's entry point


def _private_imports() -> set[str]:
    found = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _all_imports(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve(module, node)
            if not source.startswith("hoare") or source == module:
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not name.startswith("__"):
                    found.add(f"{module} <- {source}.{name}")
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    """A name another module uses is public in its own module (issue 27)."""
    assert sorted(_private_imports()) == []


def test_the_private_import_check_sees_one(tmp_path: Path) -> None:
    """The walk above reads what it claims: a private name imported from another hoare
    module is caught (relative or absolute), a dunder is not."""
    found = set()
    for text in ("from hoare.contracts.runtime import _secret\n",
                 "from .runtime import _secret, __version__\n"):
        tree = ast.parse(text)
        for node in _all_imports(tree):
            assert isinstance(node, ast.ImportFrom)
            source = _resolve("hoare.contracts.call", node)
            found |= {f"{source}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")}
    assert found == {"hoare.contracts.runtime._secret"}


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for module, path in MODULES.items():
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                source = _resolve(module, node)
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source
                           for a in node.names]
            graph[module] |= {t for t in targets if t in MODULES and t != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_at_module_level() -> None:
    assert _cycles(_graph()) == []


# -- the verifier's faces ---------------------------------------------------------------
# Other packages reach the verifier through its faces: ``hoare.verifier`` and its
# sub-packages' ``__init__`` (``runtime``, ``project``, ``report``, ``search`` re-export
# what the contract layer, the queries, the CLI and the pytest plugin use). Nothing
# outside ``hoare.verifier`` imports a module inside one of its sub-packages.

def _imported_modules(module: str, tree: ast.Module) -> Iterator[str]:
    for node in _all_imports(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        else:
            source = _resolve(module, node)
            yield source
            yield from (f"{source}.{a.name}" for a in node.names
                        if f"{source}.{a.name}" in MODULES)


def _behind_a_face(importer: str, target: str) -> bool:
    """``target`` is a module inside a verifier sub-package, imported from outside the
    verifier."""
    inside = target.split(".")
    return (inside[:2] == ["hoare", "verifier"] and len(inside) > 3 and target in MODULES
            and not importer.startswith("hoare.verifier"))


def test_other_packages_reach_the_verifier_through_its_faces() -> None:
    reached = sorted({f"{module} -> {target}" for module, path in MODULES.items()
                      for target in _imported_modules(module, ast.parse(
                          path.read_text(encoding="utf-8")))
                      if _behind_a_face(module, target)})
    assert reached == []


def test_the_face_rule_sees_a_module_behind_a_face() -> None:
    assert _behind_a_face("hoare.contracts.runtime", "hoare.verifier.runtime.preflight")
    assert not _behind_a_face("hoare.contracts.runtime", "hoare.verifier.runtime")
    assert not _behind_a_face("hoare.verifier.checks.contracts",
                              "hoare.verifier.translate.types")


# -- size and types -----------------------------------------------------------------------

MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """Split by concept when a module grows past this (issue 27)."""
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


# ``# type: ignore[code]  # why``: an error code, and a reason after it.
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")
MAX_TYPE_IGNORES = 17  # 111 before issue 27 (its bound: under 103); lower it, never raise it


def _type_ignores() -> list[tuple[str, int, str]]:
    """(file, line, text) of every ``type: ignore`` in kernel/ and src/hoare."""
    found = []
    paths = sorted({*MODULES.values(), *KERNEL.glob("*.py")})
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _IGNORE.search(line):
                found.append((str(path.relative_to(ROOT)), number, line.strip()))
    return found


def _without_reason(line: str) -> bool:
    match = _IGNORE.search(line)
    assert match is not None
    reason = match["rest"].strip()
    return not match["codes"] or not reason.startswith("#") or not reason.lstrip("# ")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    assert [f"{f}:{n}: {text}" for f, n, text in _type_ignores() if _without_reason(text)] == []
    assert len(_type_ignores()) <= MAX_TYPE_IGNORES


@pytest.mark.parametrize(("line", "bad"), [
    ("x = f()  # type: ignore", True),
    ("x = f()  # type: ignore[no-any-return]", True),
    ("x = f()  # type: ignore[no-any-return]  #", True),
    ("x = f()  # type: ignore[no-any-return]  # json.loads returns Any", False),
])
def test_the_type_ignore_rule_reads_codes_and_reasons(line: str, bad: bool) -> None:
    assert _without_reason(line) is bad
