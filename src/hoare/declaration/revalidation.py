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
  hold instances: pydantic's validation, with every instance inside validated again as
  under ``revalidate_instances='always'`` (its ``__dict__`` through its validators).
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

In both, a model's fields are matched by name as well as by alias (an instance's
``__dict__`` is keyed by field name).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Literal

from pydantic import Field, ValidationError, create_model
from pydantic_core import CoreSchema, SchemaValidator

__all__ = ["Boundary", "revalidating_validator", "revalidation_is_forced"]

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
    from hoare.verifier.runtime import only_narrows  # the verifier's face; loads no z3

    validator = function.get("function") if isinstance(function, dict) else None
    if validator is None:
        return False
    try:
        return only_narrows(validator, 0, immutable=True) is None
    except Exception:  # a foreign callable: whatever it is, not known to narrow
        return False


def _copy(node: Any, found: list[type], boundary: Boundary) -> Any:
    """A copy of the core schema ``node`` for ``boundary`` (the module's docstring), the
    classes of its model and dataclass schemas collected in ``found``."""
    if isinstance(node, list):
        return [_copy(item, found, boundary) for item in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if boundary == "instance":
        if kind == "function-before" or (kind == "json" and "schema" in node):
            return _copy(node["schema"], found, boundary)
        if kind in _UNCHECKED_FUNCTIONS or kind == "json":
            return dict(_ANY)
        if kind == "function-after":
            inner = node["schema"]
            if _holds_instances(inner):
                return _copy(inner, found, boundary)
            if not _only_narrows(node.get("function")):
                return dict(_ANY)
    copied = {key: value if key in _VALUE_KEYS else _copy(value, found, boundary)
              for key, value in node.items()}
    if kind in _INSTANCE_KINDS and isinstance(copied.get("cls"), type):
        found.append(copied["cls"])
        copied["revalidate_instances"] = "always"
        if boundary == "instance":
            copied.pop("custom_init", None)
        config = copied.get("config")
        if isinstance(config, dict):  # a model reads its own config, not its parent's
            copied["config"] = {**config, "revalidate_instances": "always",
                                "validate_by_name": True}
    return copied


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
