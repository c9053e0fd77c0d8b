"""The text of foreign objects, never raising: a task, a tool's result or error, a failed
validation. Tools and models hand the agent objects whose ``__str__`` or
``__qualname__`` may raise or return no text; the loop (``agent.py``), the tool-call
path (``invocation.py``) and the action reader (``actions.py``) all show them through
these functions, so one such object costs a failed attempt, never a crash.
"""

from __future__ import annotations

__all__ = ["text_of", "type_name", "validation_text"]


def text_of(value: object) -> tuple[str, str | None]:
    """``(str(value), None)`` as an exact ``str``, or ``("", what went wrong)`` when
    ``str()`` (or ``__format__``) of a foreign object raises or returns no text."""
    if type(value) is str:
        return value, None
    try:
        text = str(value)
        if isinstance(text, str):
            return str.__str__(text), None
        problem = f"its str() returned {type_name(text)}"
    except Exception as error:
        problem = f"its str() raised {type_name(error)}"
    return "", f"{type_name(value)} object ({problem})"


def type_name(value: object) -> str:
    """The qualified name of ``value``'s type, ``"object"`` when reading it fails."""
    try:
        name = type(value).__qualname__
        return name if isinstance(name, str) else "object"
    except Exception:
        return "object"


def validation_text(error: Exception) -> str:
    """What a failed validation of an answer says: pydantic's errors formatted as
    hoare shows them, else the exception's type and text."""
    from pydantic import ValidationError

    from hoare.declaration.models import format_validation_error

    try:
        if isinstance(error, ValidationError):
            return format_validation_error(error)
    except Exception:
        pass
    return f"{type_name(error)}: {text_of(error)[0] or '(its str() raised)'}"
