"""One driver for every engine call (issue 28), read from the source.

Contracts, queries and agents send their requests through ``hoare.contracts.driver``
(``Front.perform``/``aperform``): no other module calls an engine's
``complete``/``acomplete``, except an engine wrapper delegating to the engine it wraps
(inside its own ``complete``/``acomplete``), and no other module defines a
``perform``/``aperform`` of its own. The kernel's ``run_sync``/``run_async`` are given
a front end's ``perform``/``aperform``. Each rule is shown to see a violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[1] / "src" / "hoare"
DRIVER = SOURCES / "contracts" / "driver.py"
ENGINES = SOURCES / "engines"
SENDS = {"complete", "acomplete"}
DRIVERS = {"perform", "aperform"}


def _library_files() -> list[Path]:
    return [path for path in sorted(SOURCES.rglob("*.py"))
            if path != DRIVER and ENGINES not in path.parents
            and "kernel" not in path.relative_to(SOURCES).parts]


def _violations(tree: ast.Module, where: str) -> list[str]:
    """Engine calls outside an engine wrapper's own complete/acomplete, drivers defined,
    and run_sync/run_async given anything but a perform/aperform."""
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in DRIVERS:
                found.append(f"{where}:{node.lineno}: defines {node.name}")
            function = node.name
        if isinstance(node, ast.Call):
            callee = node.func
            if isinstance(callee, ast.Attribute) and callee.attr in SENDS \
                    and function not in SENDS:
                found.append(f"{where}:{node.lineno}: calls .{callee.attr}() in "
                             f"{function or 'module level'}")
            name = callee.id if isinstance(callee, ast.Name) else \
                callee.attr if isinstance(callee, ast.Attribute) else None
            if name in ("run_sync", "run_async"):
                given = node.args[1] if len(node.args) > 1 else None
                if not (isinstance(given, ast.Attribute) and given.attr in DRIVERS):
                    found.append(f"{where}:{node.lineno}: {name} without a front end's "
                                 f"perform")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def test_every_engine_call_goes_through_the_one_driver() -> None:
    """one-driver: no module but the driver sends a request or defines a driver."""
    found = [v for path in _library_files()
             for v in _violations(ast.parse(path.read_text(encoding="utf-8")),
                                  str(path.relative_to(SOURCES)))]
    assert found == []


@pytest.mark.parametrize(("source", "seen"), [
    ("def run(engine, r):\n    return engine.complete(r)\n", True),
    ("async def run(engine, r):\n    return await engine.acomplete(r)\n", True),
    ("class C:\n    def perform(self, effect):\n        return effect\n", True),
    ("run_sync(run, lambda effect: effect)\n", True),
    ("run_sync(run, call.perform)\n", False),
    ("class Wrapper:\n    def complete(self, r):\n        return self.inner.complete(r)\n",
     False),
])
def test_the_rule_sees_an_engine_call_of_its_own(source: str, seen: bool) -> None:
    assert bool(_violations(ast.parse(source), "probe")) is seen
