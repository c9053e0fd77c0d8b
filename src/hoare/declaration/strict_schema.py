"""JSON schemas that go on the wire as strict JSON and say no more than is true.

pydantic writes a field's default into the schema in its JSON mode: ``nan`` and ``inf``
become ``NaN``/``Infinity`` at the top (which a provider's JSON parser, and httpx's
encoder, refuse: every request of the contract failed before it was sent) or ``null``
inside a list (a default the field does not have). ``StrictJsonSchema`` leaves such a
default out of the schema, as pydantic itself does for a default it cannot encode,
without a warning: validation is unchanged, the schema only says less.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

__all__ = ["StrictJsonSchema"]


def _holds_non_finite(value: Any, depth: int = 0) -> bool:
    """Is a ``nan`` or an infinity anywhere in ``value`` (containers and models)?"""
    if isinstance(value, float):
        return not math.isfinite(value)
    if depth > 100:
        return True  # deeper than any default: not shown
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, BaseModel):
        items = value.__dict__.values()
    else:
        return False
    return any(_holds_non_finite(item, depth + 1) for item in items)


class StrictJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema generator, with a default that strict JSON cannot carry
    as it is (see the module) left out of the schema."""

    ignored_warning_kinds = {"skipped-choice", "non-serializable-default"}

    def encode_default(self, dft: Any) -> Any:
        if _holds_non_finite(dft):
            raise pydantic_core.PydanticSerializationError("a non-finite float default")
        encoded = super().encode_default(dft)
        try:
            json.dumps(encoded, allow_nan=False)
        except (TypeError, ValueError):
            raise pydantic_core.PydanticSerializationError(
                "a default that is not strict JSON") from None
        return encoded
