"""Exact keys of concrete values, for the pre-flight's caches: a call's input, and the
``self`` attributes a translation read (``Snapshot``: has the value changed since?).
A value with no exact key (``NotPlain``) is neither cached nor reused."""

from __future__ import annotations

import enum
import struct
from typing import Any

from pydantic import BaseModel

from hoare.unmodelled import Unmodelled

__all__ = ["ABSENT", "NotPlain", "Snapshot", "freeze", "input_key"]


class NotPlain(Unmodelled):
    """A value that has no exact key: the pre-flight neither caches nor reuses for it."""


ABSENT = object()
_FLOAT = struct.Struct("<d")


def freeze(value: object, depth: int = 0) -> object:
    """An exact, hashable key of a value: equal keys mean values of the same types
    with the same contents, so ``True``, ``1`` and ``1.0`` differ, and so do ``0.0``
    and ``-0.0`` (floats by their bits, which also makes ``nan`` equal to itself).
    Models are keyed by every field and extra value, never by their dump (which
    may exclude or serialise fields). Raises ``NotPlain`` for anything else."""
    if depth > 32:
        raise NotPlain("value nested too deeply to key")
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return (kind, value)
    if kind is float:
        return (float, _FLOAT.pack(value))
    if isinstance(value, enum.Enum):
        return (kind, freeze(value.value, depth + 1))  # Flag combinations have no name
    if kind in (list, tuple) and isinstance(value, list | tuple):  # (exactly one of them)
        return (kind, tuple(freeze(v, depth + 1) for v in value))
    if kind in (set, frozenset) and isinstance(value, set | frozenset):
        # iteration order is part of the value a predicate sees
        return (kind, tuple(freeze(v, depth + 1) for v in value))
    if kind is dict and isinstance(value, dict):
        return (dict, tuple((freeze(k, depth + 1), freeze(v, depth + 1))
                            for k, v in value.items()))
    if isinstance(value, BaseModel):
        data = value.__dict__
        fields = tuple((name, freeze(data[name], depth + 1) if name in data else ABSENT)
                       for name in type(value).model_fields)
        extra = value.__pydantic_extra__
        return (kind, fields, freeze(dict(extra), depth + 1) if extra else None)
    raise NotPlain(f"a {kind.__name__} has no exact key")


def _immutable(value: object, depth: int = 0) -> bool:
    """Nothing reachable from ``value`` can be changed in place."""
    if value is None or type(value) in (bool, int, float, str, bytes) or \
            isinstance(value, enum.Enum):
        return True
    if type(value) in (tuple, frozenset) and isinstance(value, tuple | frozenset) and depth < 32:
        return all(_immutable(v, depth + 1) for v in value)
    return False


def input_key(key: tuple[Any, ...], value: object) -> tuple[Any, ...]:
    """A cache key for a concrete input: the instance key and the input's exact key."""
    return (key, freeze(value))


class Snapshot:
    """A value read by a translation, to tell whether it has changed since."""

    __slots__ = ("frozen", "key", "value")

    def __init__(self, value: object) -> None:
        self.value = value
        try:
            self.key: object = freeze(value)
        except NotPlain:
            self.key = None  # compared by identity
        # The same object, when nothing in it can change, needs no new key.
        self.frozen = self.key is None or _immutable(value)

    def changed(self, now: object) -> bool:
        if now is self.value and self.frozen:
            return False
        if self.key is None:
            return True
        try:
            return freeze(now) != self.key
        except NotPlain:
            return True
