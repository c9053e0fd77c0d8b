"""The hostile-world harness covers every public entry point (issue 30, item 1).

A name in the ``__all__`` of a public module, or a ``hoare`` subcommand, without a line
in ``tests/hostile/registry.py`` fails here, naming it: a new entry point cannot be
left out of the harness. A registry line naming nothing public fails too.
"""

from __future__ import annotations

import importlib
import inspect

from hostile import generators
from hostile.registry import MODULES, cli_subcommands, registry


def public_entry_points() -> set[str]:
    names = {f"{module}:{name}" for module in MODULES
             for name in importlib.import_module(module).__all__}
    return names | {f"cli:{command}" for command in cli_subcommands()}


def test_every_public_entry_point_has_a_driver() -> None:
    """harness-covers-public-api: every `__all__` name and CLI subcommand is in the
    registry, and every registry entry is public."""
    public = public_entry_points()
    registered = set(registry())
    # a CLI entry may be driven several ways ("cli:verify -o"): its subcommand counts
    registered_commands = {name.split(" ")[0] for name in registered}
    missing = sorted(public - registered_commands)
    assert not missing, f"public entry points without a driver in the registry: {missing}"
    unknown = sorted(registered_commands - public)
    assert not unknown, f"registry entries that are not public: {unknown}"


def test_every_callable_entry_point_is_driven_with_hostile_values() -> None:
    """harness-covers-public-api: a driver without hostile values would test nothing;
    only constants (data, not callables) have none."""
    for name, entry in registry().items():
        if entry.kind == "constant":
            value = getattr(importlib.import_module(name.split(":")[0]), name.split(":")[1])
            # data or a type alias (ViolationHandler, AnswerPrefix), never a function or
            # a class, which take arguments and so must be driven
            assert not (inspect.isroutine(value) or inspect.isclass(value)), name
            continue
        assert entry.drive is not None, name
        known = {"text", "number", "object", "callback", "path"}
        assert set(entry.families) <= known, (name, entry.families)


def test_the_generators_make_what_they_say() -> None:
    """The value families really are hostile: each dunder object raises from its dunder,
    the texts have their sizes and nesting, the callbacks raise their BaseException."""
    for dunder in generators.DUNDERS:
        value = generators.OBJECTS[f"raises{dunder}"]()
        calls = {"__str__": str, "__repr__": repr, "__format__": lambda v: format(v, ""),
                 "__bool__": bool, "__eq__": lambda v: v == 1, "__hash__": hash}
        try:
            calls[dunder](value)
        except generators.HostileDunder:
            pass
        else:
            raise AssertionError(f"{dunder} did not raise")
    assert len(generators.TEXTS["ten_megabytes"]()) == 10 * 1024 * 1024
    assert generators.TEXTS["json_nested_100000"]().count("[") == 100_000
    for name, exception in generators.INTERRUPTS.items():
        callback = generators.CALLBACKS[f"raises_{name}"]()
        generators.FIRED.clear()
        try:
            callback()  # type: ignore[operator]
        except exception as raised:
            assert generators.FIRED == [raised]
        else:
            raise AssertionError(name)


def test_the_judge_fails_what_it_must() -> None:
    """harness-covers-public-api: the verdicts themselves. An AttributeError, a bare
    UnicodeDecodeError or JSONDecodeError is bad; a swallowed or wrapped interrupt is
    bad; a HoareError, a plain ValueError and the callback's own interrupt are not."""
    import json

    from hostile.runner import judge

    from hoare.errors import HoareError

    assert judge("text:x", AttributeError("a"), [])[0] == "bad"
    assert judge("text:x", UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), [])[0] == "bad"
    assert judge("text:x", json.JSONDecodeError("bad", "x", 0), [])[0] == "bad"
    assert judge("text:x", RecursionError(), [])[0] == "bad"
    assert judge("text:x", HoareError("fine"), [])[0] == "documented"
    assert judge("text:x", ValueError("fine"), [])[0] == "documented"
    assert judge("text:x", None, [])[0] == "ok"
    assert judge("object:x", generators.HostileDunder("mine"), [])[0] == "user"
    assert judge("text:x", KeyboardInterrupt(), [])[0] == "bad"  # nobody raised it
    raised = KeyboardInterrupt("hostile callback")
    name = "callback:raises_KeyboardInterrupt"
    assert judge(name, raised, [raised])[0] == "propagated"
    assert judge(name, None, [raised])[0] == "bad"  # swallowed
    assert judge(name, HoareError("wrapped"), [raised])[0] == "bad"  # wrapped
    assert judge(name, KeyboardInterrupt("another"), [raised])[0] == "bad"  # replaced

    class Unreadable(ValueError):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    assert judge("text:x", Unreadable(), [])[0] == "bad"
