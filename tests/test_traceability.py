"""Every invariant of spec/invariants.toml is backed as its entry says.

* each `python` entry `path::function` is a top-level `def` of that file whose docstring
  names the invariant id, and every invariant has at least one;
* for scope `call` and `stats`, each `lean` entry names a theorem of lean/**/*.lean whose
  docstring (the `/-- … -/` right before it) names the invariant id; scope
  `concurrency` has no Lean entry (the model has no threads), nor has `library` (rules of
  src/hoare/ built on the kernel's transitions, which the Lean model mirrors);
* no Lean file contains `sorry`, `admit` or an `axiom` declaration.

The Lean files are parsed as text: this machine has no Lean toolchain (see lean/README.md).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "invariants.toml"
LEAN = ROOT / "lean"
SCOPES = {"call", "stats", "concurrency", "library"}
PROVED_SCOPES = {"call", "stats"}

# The same patterns as `make prove` refuses (a word, not a part of an identifier).
_FORBIDDEN = re.compile(r"(^|[^A-Za-z_])(sorry|admit)([^A-Za-z_]|$)|^[ \t]*axiom[ \t]", re.M)
_DECL = re.compile(
    r"(?P<doc>/--(?:(?!-/).)*?-/)?\s*(?:@\[[^\]]*\]\s*)?"
    r"(?:(?:private|protected|noncomputable)\s+)*theorem\s+(?P<name>[^\s({:\[]+)",
    re.S,
)
_SCOPE_LINE = re.compile(r"^(namespace|section|end)\b[ \t]*([^\s]*)", re.M)


def _invariants() -> list[dict[str, object]]:
    data = tomllib.loads(SPEC.read_text(encoding="utf-8"))
    invariants = data["invariant"]
    assert isinstance(invariants, list)
    return invariants


INVARIANTS = _invariants()
IDS = [str(inv["id"]) for inv in INVARIANTS]


def _lean_files() -> list[Path]:
    return sorted(p for p in LEAN.rglob("*.lean") if ".lake" not in p.parts)


def _namespace_at(text: str, position: int) -> str:
    """The namespace in force at `position`, from `namespace`/`section`/`end` lines."""
    stack: list[tuple[str, str]] = []
    for match in _SCOPE_LINE.finditer(text, 0, position):
        keyword, name = match.group(1), match.group(2)
        if keyword == "namespace":
            stack.append(("namespace", name))
        elif keyword == "section":
            stack.append(("section", name))
        elif stack:
            stack.pop()
    return ".".join(name for kind, name in stack if kind == "namespace")


def _lean_theorems() -> dict[str, str]:
    """Full theorem name -> its docstring ('' when it has none)."""
    theorems: dict[str, str] = {}
    for path in _lean_files():
        text = path.read_text(encoding="utf-8")
        for match in _DECL.finditer(text):
            prefix = _namespace_at(text, match.start("name"))
            name = match.group("name")
            full = f"{prefix}.{name}" if prefix else name
            theorems[full] = match.group("doc") or ""
    return theorems


def _python_function(path: Path, name: str) -> ast.FunctionDef | None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node  # type: ignore[return-value]
    return None


def test_invariants_are_well_formed() -> None:
    assert len(IDS) == len(set(IDS)), "invariant ids must be unique"
    for inv in INVARIANTS:
        assert {"id", "scope", "statement", "python", "lean"} <= set(inv), inv
        assert inv["scope"] in SCOPES, inv
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", str(inv["id"])), inv


@pytest.mark.parametrize("invariant", INVARIANTS, ids=IDS)
def test_python_entries_exist(invariant: dict[str, object]) -> None:
    entries = invariant["python"]
    assert isinstance(entries, list) and entries, f"{invariant['id']}: no python entry"
    for entry in entries:
        path_text, _, function = str(entry).partition("::")
        assert function, f"{entry}: expected path::function"
        path = ROOT / path_text
        assert path.is_file(), f"{entry}: {path_text} does not exist"
        node = _python_function(path, function)
        assert node is not None, f"{entry}: no top-level def {function} in {path_text}"
        doc = ast.get_docstring(node) or ""
        assert invariant["id"] in doc, f"{entry}: its docstring does not name {invariant['id']}"


@pytest.mark.parametrize("invariant", INVARIANTS, ids=IDS)
def test_lean_entries_exist(invariant: dict[str, object]) -> None:
    entries = invariant["lean"]
    assert isinstance(entries, list)
    if invariant["scope"] not in PROVED_SCOPES:
        assert entries == [], f"{invariant['id']}: scope {invariant['scope']} has no Lean proof"
        return
    assert entries, f"{invariant['id']}: scope {invariant['scope']} needs a Lean theorem"
    theorems = _lean_theorems()
    for entry in entries:
        assert entry in theorems, f"{invariant['id']}: no theorem {entry} in lean/"
        assert f"`{invariant['id']}`" in theorems[entry] or invariant["id"] in theorems[entry], (
            f"{entry}: its docstring does not name {invariant['id']}"
        )


def test_lean_docstrings_cite_known_invariants() -> None:
    """A Lean docstring that cites an invariant id cites an id of invariants.toml."""
    known = set(IDS)
    for name, doc in _lean_theorems().items():
        for cited in re.findall(r"Invariant `([a-z0-9-]+)`", doc):
            assert cited in known, f"{name} cites unknown invariant {cited}"


def test_lean_has_no_sorry_admit_or_axiom() -> None:
    files = _lean_files()
    assert files, "lean/ has no .lean file"
    for path in files:
        text = path.read_text(encoding="utf-8")
        match = _FORBIDDEN.search(text)
        assert match is None, f"{path.relative_to(ROOT)} contains {match.group(0).strip()!r}"
