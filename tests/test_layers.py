"""The layer rules of docs/architecture.md, read from the source (issue 27).

- ``kernel/`` imports only the standard library (and itself).
- No module imports another module's private name.
- No import cycle at module level (imports under ``if TYPE_CHECKING:`` and inside
  functions do not run at import time, so they do not count).

The last two are ratchets: the violations that exist today are listed, by name, in
``KNOWN_PRIVATE_IMPORTS`` and ``KNOWN_CYCLES``; a new one fails, and a listed one that is
gone fails too until it is struck from the list, so the lists only shrink.
"""

from __future__ import annotations

import ast
import importlib
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


# Today's private names imported across modules (issue 27 makes each public in its own
# module, or keeps it where it is used); strike a line when it is gone.
KNOWN_PRIVATE_IMPORTS: set[str] = {
    "hoare.agents.agent <- hoare.agents.conditions._source",
    "hoare.cli.parser <- hoare.contracts.core._runtime_of",
    "hoare.compat.symbolicai <- hoare.declaration.models._readable",
    "hoare.stats.evaluation <- hoare.contracts.core._runtime_of",
    "hoare.queries.auto_examples <- hoare.verifier.checks.contracts._value",
    "hoare.queries.classify <- hoare.queries.policies._Session",
    "hoare.queries.classify <- hoare.queries.policies._one_call",
    "hoare.queries.classify <- hoare.queries.policies._settings",
    "hoare.queries.query <- hoare.contracts.core._predicate",
    "hoare.queries.query <- hoare.declaration.description._declared",
    "hoare.stats.sql <- hoare.stats.store._FILL",
    "hoare.stats.sql <- hoare.stats.store._MIGRATIONS",
    "hoare.stats.sql <- hoare.stats.store._SINCE",
    "hoare.stats.sql <- hoare.stats.store._refuse_newer",
    "hoare.stats.sql <- hoare.stats.store._version_number",
    "hoare.verifier.translate.calls.containers <- hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.containers <- hoare.verifier.translate.semantics._and",
    "hoare.verifier.translate.calls.containers <- hoare.verifier.translate.semantics._not",
    "hoare.verifier.translate.calls.containers <- hoare.verifier.translate.semantics._or",
    "hoare.verifier.translate.calls.introspection <- "
    "hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.numeric <- hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.regexes <- hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.registry <- hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.strings <- hoare.verifier.translate.predicates._Translator",
    "hoare.verifier.translate.calls.strings <- hoare.verifier.translate.semantics._or",
    "hoare.verifier.checks.contracts <- hoare.verifier.search.falsify._Clock",
    "hoare.verifier.checks.contracts <- hoare.verifier.search.falsify._probe",
    "hoare.verifier.checks.contracts <- hoare.verifier.search.falsify._replaced",
    "hoare.verifier.checks.contracts <- hoare.verifier.search.falsify._valid",
    "hoare.verifier.checks.contracts <- hoare.verifier.search.falsify._validate",
    "hoare.verifier.checks.contracts <- hoare.verifier.translate.semantics._not",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._Replay",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._assumptions",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._guarded",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._nice_strings",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._notes",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._opaque",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._opaque_text",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._unknown",
    "hoare.verifier.checks.pipelines <- hoare.verifier.checks.contracts._value",
    "hoare.verifier.checks.pipelines <- hoare.verifier.translate.semantics._and",
    "hoare.verifier.checks.pipelines <- hoare.verifier.translate.semantics._not",
    "hoare.verifier.checks.pipelines <- hoare.verifier.translate.semantics._or",
    "hoare.verifier.runtime.decoding <- hoare.verifier.checks.contracts._samples",
    "hoare.verifier.search.falsify <- hoare.verifier.search.witness._NONE_FOUND",
    "hoare.verifier.translate.predicates <- hoare.verifier.translate.semantics._and",
    "hoare.verifier.translate.predicates <- hoare.verifier.translate.semantics._not",
    "hoare.verifier.translate.predicates <- hoare.verifier.translate.semantics._or",
    "hoare.verifier.runtime.preflight <- hoare.verifier.solve.solver._ordered",
    "hoare.verifier.checks.tools <- hoare.verifier.checks.contracts._samples",
    "hoare.verifier.checks.tools <- hoare.verifier.checks.contracts._unknown",
    "hoare.verifier.checks.tools <- hoare.verifier.checks.contracts._value",
    "hoare.verifier.project.units <- hoare.verifier.project.discovery._import_file",
    "hoare.verifier.project.worker <- hoare.verifier.project.units._problem",
    "hoare.verifier.project.worker <- hoare.verifier.project.units._safe_run",
}


def test_no_module_imports_a_private_name_of_another() -> None:
    found = _private_imports()
    assert sorted(found - KNOWN_PRIVATE_IMPORTS) == [], "new private imports"
    assert sorted(KNOWN_PRIVATE_IMPORTS - found) == [], "gone: strike them from the list"


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


# Today's module-level cycles, each as its sorted list of modules; strike when gone.
KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycle_at_module_level() -> None:
    found = _cycles(_graph())
    assert [c for c in found if c not in KNOWN_CYCLES] == [], "new cycles"
    assert [c for c in KNOWN_CYCLES if c not in found] == [], "gone: strike them"
