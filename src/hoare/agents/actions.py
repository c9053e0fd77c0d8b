"""Reading what the model asks for: a JSON action (``{"tool": name, "args": {...}}`` or
``{"answer": ...}``, the constrained agent) or a native tool call (the react agent),
checked against the agent's tools, or what is wrong with it, to be fed back.

Model text is untrusted: JSON nested deeper than ``MAX_NESTING`` is refused before it is
parsed, so no reply can drive the parser or any later use of the value into a
``RecursionError``.
"""

from __future__ import annotations

import json
from typing import Any

from hoare.agents.text import type_name
from hoare.agents.tool import Tool
from hoare.contracts.json_text import extract_json

__all__ = ["MAX_NESTING", "load_json", "parse_action", "tool_call_action"]

MAX_NESTING = 100
"""The deepest nesting of arrays and objects in a model's action, tool-call arguments or
JSON answer: deeper text is a failed attempt, fed back (never a ``RecursionError``)."""

Action = dict[str, Any]
"""A valid action: ``{"answer": ...}``, or ``{"tool": name, "args": {...}}``."""


def _nesting(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text (strings skipped), iteratively."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return 0  # cannot be deeper than the bound: no scan
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    break
        elif char in "]}":
            depth -= 1
    return deepest


def load_json(text: str) -> Any:
    """``json.loads`` of a model's text, refused with ``ValueError`` when nested deeper
    than ``MAX_NESTING`` (the parse, and every use of the value after, stays far from
    the recursion limit)."""
    if not isinstance(text, str):
        raise TypeError(f"JSON text must be a str, not {type_name(text)}")
    if _nesting(text) > MAX_NESTING:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels")
    return json.loads(text)


def tool_call_action(name: object, arguments: object, tools: dict[str, Tool]
                     ) -> tuple[Action | None, str | None]:
    """A native tool call as an action, or what is wrong with it."""
    if not isinstance(name, str):
        return None, f"a tool's name must be text, got {type_name(name)}"
    if not isinstance(arguments, str):
        return None, f"a tool call's arguments must be JSON text, got {type_name(arguments)}"
    if not arguments.strip():
        args: Any = {}
    else:
        try:
            args = load_json(arguments)
        except ValueError as error:
            if "nested deeper" in str(error):
                return None, f"the arguments are {error}"
            return None, "args must be a JSON object"
    return _checked_action({"tool": name, "args": args}, tools)


def parse_action(text: str, tools: dict[str, Tool]) -> tuple[Action | None, str | None]:
    """The action in a model's answer, or what is wrong with it."""
    try:
        found = load_json(extract_json(text))
    except (ValueError, TypeError) as error:
        if "nested deeper" in str(error):
            return None, f"the action is {error}"
        return None, "not a JSON object"
    return _checked_action(found, tools)


def _checked_action(found: object, tools: dict[str, Tool]
                    ) -> tuple[Action | None, str | None]:
    """``found`` if it is a valid action for ``tools``, else what is wrong with it."""
    if not isinstance(found, dict):
        return None, "not a JSON object"
    if "answer" in found:
        return found, None
    name = found.get("tool")
    if not isinstance(name, str) or name not in tools:
        return None, f"unknown tool {name!r} (tools: {', '.join(sorted(tools)) or 'none'})"
    args = found.get("args", {})
    if not isinstance(args, dict):
        return None, "args must be a JSON object"
    problem = tools[name].parameters_error(args)  # Python's binding of its signature
    if problem is not None:
        return None, problem
    return found, None
