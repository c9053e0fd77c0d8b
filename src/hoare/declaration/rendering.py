"""A valid value as JSON text, whatever it holds: the fallback of ``TypeSpec.dump_json``.

pydantic accepts values its JSON serialiser cannot write: an ``Any`` field holding an
object of a class of its own, bytes that are not UTF-8, a lone surrogate, a list that
holds itself, nesting deeper than the serialiser goes, ``nan``. A contract's input is
rendered into its prompt; had the rendering raised, every attempt would fail on an
input the contract accepted. ``plain_json`` writes such a value anyway: what JSON
holds as it is, anything else as a text saying what it is (its ``repr``), a cycle or
a depth beyond ``MAX_DEPTH`` as a marker, secrets masked as pydantic masks them.
A module of its own: ``models.py`` holds the values' validation, this their last-resort
text.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import deque
from collections.abc import Mapping
from typing import cast

from pydantic import BaseModel
from pydantic.types import _SecretBase

from hoare.declaration.revalidation import instance_of
from hoare.errors import shown

__all__ = ["MAX_DEPTH", "plain_json"]

MAX_DEPTH = 64  # deeper values are written as a marker (the prompt would not use them)
_SHOWN_CHARS = 1000  # of a value JSON cannot hold, its repr is cut there
_MAX_INT_BITS = 10_000  # about 3,000 digits: below Python's int/str conversion limit


def plain_json(value: object) -> str:
    """``value`` as JSON text (ASCII: a lone surrogate is escaped, never encoded)."""
    return json.dumps(_plain(value, 0, set()), ensure_ascii=True, allow_nan=False)


def _plain(value: object, depth: int, open_ids: set[int]) -> object:
    kind = type(value)  # never the value's __class__: a foreign one may raise
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if cast("int", value).bit_length() <= _MAX_INT_BITS else \
            f"<an int of {cast('int', value).bit_length()} bits>"
    if kind is float:
        number = cast("float", value)
        return number if math.isfinite(number) else repr(number)
    if instance_of(value, _SecretBase):
        return "**********"
    if instance_of(value, bytes) or instance_of(value, bytearray):
        return bytes(cast("bytes", value)).decode("utf-8", "backslashreplace")
    if depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH}>"
    if id(value) in open_ids:
        return "<the value holds itself here>"
    open_ids.add(id(value))
    try:
        return _container(value, depth + 1, open_ids)
    except Exception:  # a foreign container that raises when read
        return shown(value, _SHOWN_CHARS)
    finally:
        open_ids.discard(id(value))


def _container(value: object, depth: int, open_ids: set[int]) -> object:
    """A model, dataclass, mapping or collection with its items made plain; anything
    else as its ``repr``."""
    if instance_of(value, BaseModel):
        model = cast("BaseModel", value)
        items: dict[str, object] = dict(model.__dict__)
        items.update(model.__pydantic_extra__ or {})
        return {name: _plain(item, depth, open_ids) for name, item in items.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name, None), depth, open_ids)
                for field in dataclasses.fields(value)}
    if instance_of(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        return {_key(key): _plain(item, depth, open_ids) for key, item in mapping.items()}
    if any(instance_of(value, kind) for kind in (list, tuple, set, frozenset, deque)):
        return [_plain(item, depth, open_ids) for item in cast("list[object]", value)]
    return shown(value, _SHOWN_CHARS)


def _key(key: object) -> str:
    plain = _plain(key, MAX_DEPTH, set())  # a key is written flat
    return plain if type(plain) is str else json.dumps(plain, ensure_ascii=True)
