"""Validating again what was built in Python: the contract boundary's validators.

pydantic keeps a model or dataclass instance as it is when it validates a value that
holds one (``revalidate_instances='never'``, the default). A contract's input, act's
result and a pipeline's hand-off are such values: built by ``model_construct()``, as a
subclass that declares a field more loosely, or mutated after validation, they would
reach user code and contradict verdicts that rest on the type's constraints. The
validators here are pydantic-core's own, compiled from a copy of the type's core schema
in which every model and dataclass schema validates its instances again
(``'always'``), so the boundary enforces what the constraints say, with pydantic's
semantics; a module of its own because ``models.py`` (values and their rendering) and
``queries`` both build on it.

Two copies of the schema, for the two kinds of value a boundary receives:

* ``data``: the value as the caller wrote it (a dict, a list, a native value), which may
  hold instances: pydantic's validation, with every instance inside checked as below.
* ``instance``: an instance of the declared model, all of whose values were (or claim to
  have been) validated already: its values are checked against the schema *after*
  validation, which is what an instance holds: a before validator, which maps raw
  input to the field's type, is skipped (its result is what the field holds); a
  ``Json[...]`` field holds the parsed value; an after validator of a field runs again
  when it only narrows (returns its value unchanged: ``only_narrows``, the verifier's
  own judgement, which then assumes what it checks), else, like a plain or wrap
  validator (any of which may have returned any value), it accepts what the field
  holds, behind which the verifier assumes nothing (the field is opaque); a model's
  own after validators are not run again (its fields are checked); a custom
  ``__init__`` is not called again.

For an instance, a model's fields are matched by name as well as by alias (its
``__dict__`` is keyed by field name). Data is validated exactly as pydantic validates
it; an instance nested in data is checked as ``instance`` checks one: each model
schema dispatches on the value (a tagged union whose discriminator is ``isinstance``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import Field, ValidationError, create_model
from pydantic_core import CoreSchema, InitErrorDetails, SchemaValidator

from hoare.declaration.narrowing import only_narrows

__all__ = ["Boundary", "clean_locations", "instance_of", "revalidating_validator",
           "revalidation_is_forced"]

logger = logging.getLogger("hoare")

Boundary = Literal["data", "instance"]

# the schema kinds whose Python instances pydantic passes through unless told to revalidate
_INSTANCE_KINDS = frozenset({"model", "dataclass"})
# keys of a core schema that hold values (defaults, literals, metadata), never a schema
_VALUE_KEYS = frozenset({"cls", "config", "context", "default", "expected", "metadata",
                         "serialization"})
_ANY: dict[str, Any] = {"type": "any"}
# what an instance's already validated values are checked against (``instance``)
_UNCHECKED_FUNCTIONS = frozenset({"function-plain", "function-wrap"})


def _holds_instances(node: Any) -> bool:
    """Is ``node`` a schema whose values are model or dataclass instances (a model-level
    validator wraps such a schema)?"""
    return isinstance(node, dict) and node.get("type") in (*_INSTANCE_KINDS, "definition-ref")


def _only_narrows(function: Any) -> bool:
    """Does the validator of a ``function-after`` schema return its value unchanged, as
    the verifier judges it (``only_narrows``; a value's type taken as immutable, the
    widest judgement, so whatever the verifier takes as narrowing is checked here)?"""
    validator = function.get("function") if isinstance(function, dict) else None
    if validator is None:
        return False
    try:
        return only_narrows(validator, 0, immutable=True) is None
    except Exception:  # a foreign callable: whatever it is, not known to narrow
        return False


INSTANCE_TAG, DATA_TAG = "<instance>", "<data>"
"""The branches of the dispatch a nested model schema becomes in ``data`` (an error's
``loc`` names them: ``clean_locations`` removes them)."""


def instance_of(value: object, cls: type | tuple[type, ...]) -> bool:
    """``isinstance(value, cls)`` that never raises: ``isinstance`` reads a foreign
    value's ``__class__`` (and an ABC's check more), which may raise anything. Then the
    value's real type decides, as pydantic-core, which takes such a value as no instance
    (its real type is no subclass, else ``isinstance`` would not have looked further)."""
    try:
        return isinstance(value, cls)
    except Exception:
        try:
            return issubclass(type(value), cls)
        except Exception:  # a foreign metaclass's subclass check
            return False


def _dispatcher(cls: type) -> Callable[[object], str]:
    """The discriminator of ``cls``'s dispatch: which branch a value takes."""
    def which(value: object) -> str:
        return INSTANCE_TAG if instance_of(value, cls) else DATA_TAG
    return which


def _copy(node: Any, found: list[type], boundary: Boundary, keep_refs: bool = True) -> Any:
    """A copy of the core schema ``node`` for ``boundary`` (the module's docstring), the
    classes of its model and dataclass schemas collected in ``found``. In ``data``, a
    model or dataclass schema dispatches on the value: an instance of its class is
    checked as ``instance`` does, anything else validated as data (``_dispatcher``); the
    ``instance`` copies there keep no ``ref`` (the data copy's are the references)."""
    if isinstance(node, list):
        return [_copy(item, found, boundary, keep_refs) for item in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if boundary == "instance":
        if kind == "function-before" or (kind == "json" and "schema" in node):
            return _copy(node["schema"], found, boundary, keep_refs)
        if kind in _UNCHECKED_FUNCTIONS or kind == "json":
            return dict(_ANY)
        if kind == "function-after":
            inner = node["schema"]
            if _holds_instances(inner):
                return _copy(inner, found, boundary, keep_refs)
            if not _only_narrows(node.get("function")):
                return dict(_ANY)
    copied = {key: value if key in _VALUE_KEYS else _copy(value, found, boundary, keep_refs)
              for key, value in node.items() if keep_refs or key != "ref"}
    cls = copied.get("cls")
    if kind not in _INSTANCE_KINDS or not isinstance(cls, type):
        return copied
    found.append(cls)
    if boundary == "data":  # dispatch: an instance is checked, data validated
        checked = _copy(node, found, "instance", keep_refs=False)
        ref = copied.pop("ref", None)
        dispatch = {"type": "tagged-union", "choices": {INSTANCE_TAG: checked,
                                                        DATA_TAG: copied},
                    "discriminator": _dispatcher(cls)}
        return dispatch if ref is None else {**dispatch, "ref": ref}
    copied["revalidate_instances"] = "always"
    copied.pop("custom_init", None)
    config = copied.get("config")
    if isinstance(config, dict):  # a model reads its own config, not its parent's
        # an instance's ``__dict__`` is keyed by field name
        copied["config"] = {**config, "revalidate_instances": "always",
                            "validate_by_name": True}
    return copied


def clean_locations(error: ValidationError) -> ValidationError:
    """``error`` without the dispatch's branch names in its locations (``_copy``)."""
    details = error.errors(include_url=False)
    tags = (INSTANCE_TAG, DATA_TAG)
    if not any(part in tags for item in details for part in item["loc"]):
        return error
    line_errors: list[InitErrorDetails] = []
    for item in details:
        detail: dict[str, Any] = {"type": item["type"], "input": item["input"],
                                  "loc": tuple(p for p in item["loc"] if p not in tags)}
        if "ctx" in item:
            detail["ctx"] = item["ctx"]
        line_errors.append(cast("InitErrorDetails", detail))
    try:
        return ValidationError.from_exception_data(error.title, line_errors)
    except Exception:  # an error type pydantic-core cannot rebuild: the original
        return error


def revalidating_validator(schema: CoreSchema, boundary: Boundary = "data"
                           ) -> tuple[SchemaValidator, tuple[type, ...]]:
    """pydantic-core's validator of ``schema`` for ``boundary`` (the module's
    docstring): every model and dataclass instance inside a value is validated again
    into a new instance of exactly the schema's class (``__pydantic_fields_set__`` and
    extras kept, private attributes reset, ``model_post_init`` run again). Also the
    classes of those schemas.

    pydantic-core reuses a complete class's own validator for a nested model schema (a
    "prebuilt" validator, which keeps the class's own ``revalidate_instances``): it is
    turned off here, where pydantic-core allows it (``_use_prebuilt``)."""
    found: list[type] = []
    copied = _copy(schema, found, boundary)
    try:
        validator = SchemaValidator(copied, None, _use_prebuilt=False)
    except TypeError:  # a pydantic-core without the argument (see revalidation_is_forced)
        validator = SchemaValidator(copied, None)
    return validator, tuple(found)


@functools.cache
def revalidation_is_forced() -> bool:
    """Does ``revalidating_validator`` validate a nested instance again with this
    pydantic-core? (A version with prebuilt validators and no way to turn them off keeps
    the nested class's own setting.) Asked once, of a probe."""
    probe = create_model("Probe", value=(int, Field(ge=0)))
    holder = create_model("ProbeHolder", inner=(probe, ...))
    validator, _ = revalidating_validator(holder.__pydantic_core_schema__)
    try:
        validator.validate_python(holder.model_construct(
            inner=probe.model_construct(value=-1)))
    except ValidationError:
        return True
    logger.warning("hoare: this pydantic-core reuses a model's own validator for nested "
                   "models and cannot be told not to: contract inputs built in Python are "
                   "dumped and validated instead of validated again")
    return False
