"""Typed values: ``LLMDataModel`` and the wrapping of native Python types.

A contract's input and output may be ``LLMDataModel`` subclasses or native types
(``str``, ``int``, ``list[int]``, ``dict[str, int]``, ``Optional``, ``Union``,
``Literal`` …). A native type is validated through a generated model with a
single ``value`` field and unwrapped again, so user code (``pre``, ``act``,
``post``, ``forward``) always sees the type its annotation names.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

__all__ = ["Field", "LLMDataModel", "TypeSpec", "format_validation_error", "type_spec"]


class LLMDataModel(BaseModel):
    """Base class of contract inputs and outputs: a pydantic v2 ``BaseModel``.

    Field descriptions and constraints (``Field(description=..., ge=...)``) feed
    the prompt, the output JSON schema and the z3 verifier.
    """

    model_config = ConfigDict(use_attribute_docstrings=True)


@dataclass(frozen=True, eq=False)
class TypeSpec:
    """How values of one annotation are validated, shown to the LLM and unwrapped."""

    annotation: Any
    model: type[BaseModel]
    wrapped: bool  # True: ``model`` is a generated one-field wrapper around a native type

    @property
    def name(self) -> str:
        """A readable name of the annotation."""
        if not self.wrapped:
            return self.model.__name__
        return getattr(self.annotation, "__name__", None) or repr(self.annotation).replace(
            "typing.", "")

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The JSON schema of the model (computed once: it costs milliseconds)."""
        return self.model.model_json_schema()

    @cached_property
    def schema_json(self) -> str:
        return json.dumps(self.schema, indent=2, sort_keys=True)

    @cached_property
    def _strict_adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.annotation)

    def validate(self, value: object) -> Any:
        """Validate a Python value; return what user code sees (model or native)."""
        if not self.wrapped:
            if type(value) is self.model:
                return value
            if isinstance(value, BaseModel) and not isinstance(value, self.model):
                value = value.model_dump()
            return self.model.model_validate(value)
        return self.model.model_validate({"value": value}).value  # type: ignore[attr-defined]

    def validate_json(self, text: str) -> Any:
        """Validate an engine's JSON text; return what user code sees."""
        if not self.wrapped:
            return self.model.model_validate_json(text)
        try:
            return self.model.model_validate_json(text).value  # type: ignore[attr-defined]
        except ValidationError:
            # An LLM may answer a bare value (``42``) instead of ``{"value": 42}``.
            try:
                bare = json.loads(text)
            except ValueError:
                raise
            return self.model.model_validate({"value": bare}).value  # type: ignore[attr-defined]

    def is_instance(self, value: object) -> bool:
        """The final result check (spec §3.7): does ``value`` have the declared type?"""
        if not self.wrapped:
            return isinstance(value, self.model)
        try:
            self._strict_adapter.validate_python(value, strict=True)
        except ValidationError:
            return False
        return True

    def dump(self, value: object) -> Any:
        """A JSON-compatible rendering of a value of this type."""
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if self.wrapped:
            try:
                return self.model.model_validate({"value": value}).model_dump(mode="json")["value"]
            except ValidationError:
                pass
        return value if _is_jsonable(value) else repr(value)

    def dump_json(self, value: object) -> str:
        """``dump`` as JSON text."""
        if isinstance(value, BaseModel):
            return value.model_dump_json()
        return json.dumps(self.dump(value), ensure_ascii=False)


def _is_jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


_SPECS: dict[Any, TypeSpec] = {}
_SPECS_LOCK = threading.Lock()


def type_spec(annotation: Any) -> TypeSpec:
    """The ``TypeSpec`` of an annotation, built once per annotation."""
    try:
        return _SPECS[annotation]
    except KeyError:
        pass
    except TypeError:  # unhashable annotation: build without caching
        return _build(annotation)
    with _SPECS_LOCK:
        spec = _SPECS.get(annotation)
        if spec is None:
            spec = _SPECS[annotation] = _build(annotation)
        return spec


def _build(annotation: Any) -> TypeSpec:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return TypeSpec(annotation, annotation, wrapped=False)
    try:
        TypeAdapter(annotation)
    except Exception as error:
        raise TypeError(f"{annotation!r} is not a type hoare can validate: {error}") from error
    name = "".join(ch for ch in repr(annotation).replace("typing.", "").title() if ch.isalnum())
    model = create_model(
        f"{name or 'Native'}Value",
        __base__=LLMDataModel,
        value=(annotation, Field(description=f"the value, of type {annotation!r}")),
    )
    return TypeSpec(annotation, model, wrapped=True)


def format_validation_error(error: ValidationError) -> str:
    """A compact, LLM-readable list of what was wrong, with the offending values."""
    lines = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item.get("loc", ())) or "(root)"
        shown = repr(item.get("input"))
        if len(shown) > 120:
            shown = shown[:117] + "..."
        lines.append(f"{location}: {item.get('msg')} (got {shown})")
    return "; ".join(lines) or str(error)
