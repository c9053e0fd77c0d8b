"""A decorator's or constructor's arguments, checked by their real type before use.

An argument may be a foreign object whose ``__class__``, ``__eq__``, ``__hash__``,
``__bool__``, ``__len__``, ``__iter__`` or ``__repr__`` raises, or a subclass of
``str``/``int``/``bool``'s own type with operators of its own. Each check here reads the
value's real type (``type()``, never ``__class__``), compares only exact built-in values,
quotes a bad value with ``errors.shown`` (which never raises), and returns the exact
built-in value the kernel is then given: a bad argument is a ``ValueError`` naming
the parameter, never the object's own exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

from hoare.errors import shown
from hoare.kernel import Policy

__all__ = ["checked_choice", "checked_flag", "checked_policy", "checked_retry_params",
           "checked_whole"]


def checked_flag(value: object, name: str) -> bool:
    """``True`` or ``False`` itself (not 1, not a truthy object)."""
    if value is True or value is False:
        return value
    raise ValueError(f"{name} must be True or False, got {shown(value)}")


def checked_choice(value: object, name: str, choices: tuple[str, ...], meaning: str) -> str:
    """One of ``choices``, as an exact ``str`` (a subclass's ``__eq__`` is not called)."""
    if issubclass(type(value), str):
        text = str.__str__(cast("str", value))  # a subclass's __str__ is not called
        if text in choices:
            return text
    raise ValueError(f"{name} must be {meaning}, got {shown(value)}")


def checked_whole(value: object, name: str, least: int) -> int:
    """An integer ``>= least`` (not a bool), as an exact ``int``."""
    kind = type(value)
    if issubclass(kind, int) and kind is not bool:
        exact = int.__index__(cast("int", value))  # nor its __index__
        if exact >= least:
            return exact
    raise ValueError(f"{name} must be an integer >= {least}, got {shown(value)}")


def checked_policy(value: object) -> Policy:
    """A ``Policy`` or its name."""
    if type(value) is Policy:
        return value
    names = ", ".join(repr(policy.value) for policy in Policy)
    if issubclass(type(value), str):
        text = str.__str__(cast("str", value))
        for policy in Policy:
            if policy.value == text:
                return policy
        raise ValueError(f"unknown policy {shown(value)}: use one of {names}")
    raise ValueError(f"policy must be a hoare.Policy or one of {names}, got {shown(value)}")


_SECONDS = ("delay", "max_delay", "jitter", "backoff")


def checked_retry_params(value: object) -> dict[str, Any]:
    """``remedy_retry_params`` as a plain dict of exact values: a mapping with str keys;
    ``tries`` a whole number, the delays finite numbers >= 0, ``graceful`` a flag (the
    kernel's ``RetryPolicy`` then names an unknown key). SymbolicAI's
    ``dynamic_engine`` is kept for the caller to refuse with its own message."""
    if value is None:
        return {}
    if not issubclass(type(value), Mapping):
        raise ValueError(f"remedy_retry_params must be a dict, got {shown(value)}")
    try:
        items = list(dict.items(cast("dict[object, object]", value))
                     if issubclass(type(value), dict)
                     else cast("Mapping[object, object]", value).items())
    except Exception as error:
        raise ValueError(f"remedy_retry_params cannot be read: {shown(error)}") from None
    params: dict[str, Any] = {}
    for key, item in items:
        if not issubclass(type(key), str):
            raise ValueError(f"remedy_retry_params keys are names, got {shown(key)}")
        name = str.__str__(key)
        if name == "tries":
            params[name] = checked_whole(item, "tries", 1)
        elif name in _SECONDS:
            params[name] = _seconds(item, name)
        elif name == "graceful":
            params[name] = checked_flag(item, "graceful")
        else:
            params[name] = item  # unknown (or dynamic_engine): refused by the caller
    return params


def _seconds(value: object, name: str) -> float | int:
    kind = type(value)
    number: float | int | None = None
    if issubclass(kind, float):
        number = float.__float__(cast("float", value))
    elif issubclass(kind, int) and kind is not bool:
        number = int.__index__(cast("int", value))
        if number > 2**1000:  # past a float: the kernel could not compare it
            number = None
    if number is not None and math.isfinite(number) and number >= 0:
        return number
    raise ValueError(f"{name} must be a number of seconds, finite and >= 0, got {shown(value)}")
