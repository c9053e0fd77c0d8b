"""Reading what a pydantic field declares and what pydantic-core enforces.

* ``Annotated`` metadata as pydantic applies it: flattened (``flatten``), split
  into one-key constraints (``atoms``), the last layer setting a key winning
  (``last_wins``);
* the compiled core schema as the gate (``core_schema_gaps``): what
  pydantic-core really enforces on a field, which makes the field opaque when
  the translation does not model it, and ``layers_disagree`` where the
  annotations and the core schema differ;
* what makes values other than the type says: ``@field_validator``s
  (``field_validator_names``), methods that change how an instance behaves
  (``custom_behaviour``), annotations of immutable scalars (``is_immutable``).

``types.TypeBuilder`` and ``scalars.ScalarTypes`` read fields through these; the
runtime's ``finite_folding`` reads the same gates.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel
from pydantic._internal._fields import pydantic_general_metadata
from pydantic.fields import FieldInfo

__all__ = [
    "COMPARED_KEYS",
    "ENUM_DOMAIN_HOOKS",
    "IGNORED_METADATA",
    "SINGLE_CONSTRAINTS",
    "atoms",
    "core_schema_gaps",
    "custom_behaviour",
    "field_schemas",
    "field_validator_names",
    "flatten",
    "is_immutable",
    "last_wins",
    "layers_disagree",
]


# annotated_types' one-key constraints: slotted frozen dataclasses (no instance
# attributes) that are not ``GroupedMetadata``. ``flatten`` tells them apart by their
# exact type: an ``isinstance`` against a runtime-checkable protocol collects the
# protocol's attributes on every call (~15 µs in Python 3.11), for every field's
# metadata of every contract.
SINGLE_CONSTRAINTS = frozenset({at.Gt, at.Ge, at.Lt, at.Le, at.MultipleOf, at.MinLen,
                                at.MaxLen})


def flatten(metadata: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in metadata:
        if item is None:
            continue
        if type(item) in SINGLE_CONSTRAINTS:
            out.append(item)
        elif isinstance(item, FieldInfo):
            out.extend(flatten(list(item.metadata)))
        elif isinstance(item, at.GroupedMetadata) and not _is_string_constraints(item):
            out.extend(flatten(list(item)))
        else:
            out.append(item)
    return out




# Constraint metadata by the core-schema key it sets.
_KEYED: tuple[tuple[type, str], ...] = (
    (at.Gt, "gt"), (at.Ge, "ge"), (at.Lt, "lt"), (at.Le, "le"),
    (at.MultipleOf, "multiple_of"), (at.MinLen, "min_length"), (at.MaxLen, "max_length"))


def atoms(item: object) -> list[tuple[str, Any]] | None:
    """``item`` split into one-key constraints (key, metadata), or None when it is not
    a constraint (a validator, ``Strict``…)."""
    for cls, key in _KEYED:
        if isinstance(item, cls):
            return [(key, item)]
    name = type(item).__name__
    if name == "AllowInfNan":
        return [("allow_inf_nan", item)]
    if name == "_PydanticGeneralMetadata":
        return [(key, pydantic_general_metadata(**{key: value}))
                for key, value in vars(item).items()]
    if name == "StringConstraints" and dataclasses.is_dataclass(item):
        out: list[tuple[str, Any]] = []
        for spec in dataclasses.fields(item):
            value = getattr(item, spec.name)
            if value is None:
                continue
            if spec.name == "min_length":
                out.append(("min_length", at.MinLen(value)))
            elif spec.name == "max_length":
                out.append(("max_length", at.MaxLen(value)))
            else:
                out.append((spec.name, pydantic_general_metadata(**{spec.name: value})))
        return out
    return None


def last_wins(items: list[Any]) -> list[Any]:
    """The constraints pydantic-core enforces: pydantic applies ``Annotated`` layers
    in order and each schema key holds the value of the *last* layer setting it
    (``Annotated[int, Field(ge=5), Field(ge=0)]`` accepts 3: its core schema is
    ``{'type': 'int', 'ge': 0}``), so only that one is translated; other metadata
    keeps its place."""
    tagged: list[tuple[str | None, Any]] = []
    for item in items:
        split = atoms(item)
        tagged.extend(split if split is not None else [(None, item)])
    last = {key: index for index, (key, _) in enumerate(tagged) if key is not None}
    return [item for index, (key, item) in enumerate(tagged)
            if key is None or last[key] == index]



# Constraint keys of a scalar's core schema that the translation reads from metadata.
COMPARED_KEYS = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern",
                  "strip_whitespace", "to_lower", "to_upper", "ascii_only", "allow_inf_nan")


def field_schemas(cls: type[BaseModel]) -> dict[str, Any]:
    """Each field's compiled core schema (empty when the shape is unexpected)."""
    try:
        schema = cls.__pydantic_core_schema__
        if schema.get("type") == "definitions":
            definitions = {d["ref"]: d for d in schema.get("definitions", ())}
            schema = schema["schema"]
            while schema.get("type") == "definition-ref":
                schema = definitions[schema["schema_ref"]]
        fields = schema["schema"]["fields"] if schema.get("type") == "model" else {}
        return {name: field["schema"] for name, field in fields.items()}
    except (AttributeError, KeyError, TypeError):
        return {}


def layers_disagree(annotation: Any, metadata: list[Any], schema: Any) -> str | None:
    """Where a scalar field's constraints as the translation reads them (annotations,
    last layer wins) differ from those its compiled core schema enforces: what
    differs, else None. The core schema is what pydantic-core checks."""
    items = list(metadata)
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            items.extend(extra)
        elif origin in (typing.Union, types.UnionType) and len(typing.get_args(annotation)) \
                == 2 and type(None) in typing.get_args(annotation):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            break
    while isinstance(schema, dict) and schema.get("type") in ("default", "nullable"):
        schema = schema.get("schema")
    if not isinstance(schema, dict):
        return None
    compared: tuple[str, ...] = COMPARED_KEYS
    if typing.get_origin(annotation) in (list, tuple) and schema.get("type") in ("list",
                                                                                "tuple"):
        compared = ("min_length", "max_length")  # a sequence's own lengths
    elif annotation not in (int, float, str) or schema.get("type") not in ("int", "float",
                                                                          "str"):
        return None
    read: dict[str, object] = {}
    for item in last_wins(flatten(items)):
        for key, atom in atoms(item) or ():
            if key in compared:
                read[key] = getattr(atom, key, None)
    enforced = {key: schema[key] for key in compared if key in schema}
    for key in sorted(set(read) | set(enforced)):
        if key not in read or key not in enforced or read[key] != enforced[key]:
            return (f"not modelled: the annotations give {key}={read.get(key)!r:.40}, "
                    f"pydantic-core enforces {key}={enforced.get(key)!r:.40}")
    return None


def _is_string_constraints(item: object) -> bool:
    return type(item).__name__ == "StringConstraints"


# Metadata the translation of a scalar or a list skips (validators are analysed apart).
IGNORED_METADATA = {"Strict", "BeforeValidator", "AfterValidator", "WrapValidator",
                    "PlainValidator", "_PydanticGeneralMetadata", "AllowInfNan", "FieldInfo",
                    "Discriminator", "WithJsonSchema", "Tag", "SkipJsonSchema", "Examples",
                    "Doc"}


# Methods that change how an instance behaves in a predicate (truth, comparison, size…).
# Not ``__str__``, ``__repr__`` or ``__format__``: ``str()``, ``repr()`` and f-strings of
# a model or an enum member are never modelled (``Semantics.to_str`` and the f-string
# make them opaque), so no verdict depends on them; a model that only renders itself
# (``hoare.compat.symbolicai.LLMDataModel``'s SymbolicAI text) stays data.
_BEHAVIOUR = frozenset({
    "__bool__", "__len__", "__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__",
    "__ge__", "__contains__", "__iter__", "__getattr__", "__getattribute__", "__int__",
    "__float__", "__index__", "__new__", "__add__", "__radd__", "__sub__", "__mul__",
    "__truediv__", "__floordiv__", "__mod__", "__neg__", "__abs__", "__getitem__",
    "__instancecheck__",
})


# Hooks that widen an enum's domain: pydantic-core calls ``cls(value)`` on a value no
# member has, so a ``_missing_`` may answer with a member built on the spot.
ENUM_DOMAIN_HOOKS = frozenset({"_missing_"})


def custom_behaviour(cls: type, base: type,
                     names: frozenset[str] = _BEHAVIOUR) -> str | None:
    """The first of ``names`` (behaviour methods by default) a subclass of ``base``
    defines itself, if any."""
    for klass in cls.__mro__:
        module = klass.__module__
        if klass is base or not issubclass(klass, base) or module in (
                "enum", "pydantic", "hoare.declaration.models") or module.startswith("pydantic."):
            continue
        for name in sorted(names):
            key = "_new_member_" if name == "__new__" else name
            if key in klass.__dict__ and _written_by_user(klass.__dict__[key]):
                return name
    return None


def _written_by_user(found: object) -> bool:
    """Not the machinery's own (enum and pydantic add methods to a user's class, and
    builtins are their base's behaviour): a function defined in the class, or assigned
    from anywhere else (``_missing_ = classmethod(helper)``), or ``None``
    (``__hash__ = None``)."""
    if found is None:
        return True
    function = getattr(found, "__func__", found)
    function = getattr(function, "fget", function)
    module = getattr(function, "__module__", None)
    return not (module is None or module in ("builtins", "enum")
                or module == "pydantic" or module.startswith("pydantic."))


def is_immutable(ann: Any) -> bool:
    """Values of ``ann`` are built-in immutable scalars (no user method can change
    them)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return is_immutable(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return all(is_immutable(a) for a in typing.get_args(ann))
    if origin is Literal:
        return all(type(v) in (int, str, bool) or v is None for v in typing.get_args(ann))
    return ann in (int, float, str, bool, type(None))


def field_validator_names(cls: type[BaseModel]) -> dict[str, list[Any]]:
    """``@field_validator`` decorators of ``cls`` by field name (``*``: every field)."""
    out: dict[str, list[Any]] = {}
    decorators = getattr(cls, "__pydantic_decorators__", None)
    for decorator in getattr(decorators, "field_validators", {}).values():
        for name in decorator.info.fields:
            out.setdefault(name, []).append(decorator)
    return out


# -- the compiled core schema as the gate: what pydantic-core really enforces ---------------
# Per core-schema type, the keys whose meaning the translation models (or that only
# validate what the annotation path already reads: a before/after validator's own
# analysis is ``_validators_change``/``_metadata_changes``). Any other type or key —
# a plain or wrap function validator, a custom type's schema, a key of a newer
# pydantic-core — is not modelled: the field is opaque.
_COMMON_KEYS = frozenset({"type", "ref", "metadata", "serialization"})
_CORE_KEYS: dict[str, frozenset[str]] = {
    "int": frozenset({"ge", "gt", "le", "lt", "multiple_of", "strict"}),
    "float": frozenset({"ge", "gt", "le", "lt", "multiple_of", "allow_inf_nan", "strict"}),
    "bool": frozenset({"strict"}),
    "none": frozenset(),
    # no "regex_engine": the translation reads the engine from the model's config
    "str": frozenset({"min_length", "max_length", "pattern", "strip_whitespace", "to_lower",
                      "to_upper", "strict", "ascii_only"}),
    "literal": frozenset({"expected"}),
    "enum": frozenset({"cls", "members", "sub_type", "missing", "strict"}),
    "nullable": frozenset({"schema", "strict"}),
    "default": frozenset({"schema", "default", "default_factory", "default_factory_takes_data",
                          "validate_default", "copy_default"}),
    "list": frozenset({"items_schema", "min_length", "max_length", "strict", "fail_fast"}),
    "tuple": frozenset({"items_schema", "variadic_item_index", "min_length", "max_length",
                        "strict", "fail_fast"}),
    "model": frozenset({"cls", "schema", "config", "custom_init", "root_model", "post_init",
                        "generic_origin", "revalidate_instances", "strict", "extra_behavior"}),
    "definition-ref": frozenset({"schema_ref"}),
    "function-before": frozenset({"function", "schema"}),
    "function-after": frozenset({"function", "schema"}),
}
_FIELD_KEYS = frozenset({"type", "schema", "metadata", "validation_alias", "serialization_alias",
                         "serialization_exclude", "serialization_exclude_if", "frozen"})


def core_schema_gaps(cls: type[BaseModel]) -> dict[str, str]:
    """What pydantic-core enforces on ``cls``'s fields that the translation does not
    model exactly, by field name ("not modelled: <what>"); the fields not listed are
    exact. Read from the compiled ``__pydantic_core_schema__`` (not the annotations):
    a field is opaque when its schema holds anything outside ``_CORE_KEYS``."""
    try:
        schema = cls.__pydantic_core_schema__
        definitions = {d["ref"]: d for d in schema.get("definitions", ())
                       } if schema.get("type") == "definitions" else {}
        if schema.get("type") == "definitions":
            schema = schema["schema"]
        while schema.get("type") == "definition-ref" and schema["schema_ref"] in definitions:
            schema = definitions[schema["schema_ref"]]
        if schema.get("type") != "model":
            return {"*": f"not modelled: a {schema.get('type')!r} core schema"}
        found: dict[str, str] = {}
        if schema.get("custom_init"):
            found["*"] = f"not modelled: {cls.__name__} defines __init__"
        inner = schema["schema"]
        if inner.get("type") != "model-fields":  # a root model: its root is the schema
            why = _schema_gap(inner, definitions, set(), "root")
            if why is not None:
                found["root"] = why
            return found
        for name, field_schema in inner["fields"].items():
            extra = set(field_schema) - _FIELD_KEYS
            why = f"not modelled: model-field key {sorted(extra)[0]!r}" if extra else \
                _schema_gap(field_schema["schema"], definitions, set(), name)
            if why is not None:
                found[name] = why
        return found
    except (AttributeError, KeyError, TypeError) as error:  # an unexpected shape
        return {"*": f"not modelled: core schema of {cls.__name__} ({error!r:.60})"}


def _schema_gap(schema: Any, definitions: dict[str, Any], seen: set[str],
                where: str) -> str | None:
    """The first thing in ``schema`` the translation does not model, or None."""
    kind = schema.get("type")
    if kind == "definition-ref":
        ref = schema["schema_ref"]
        if ref in seen or ref not in definitions:
            return None if ref in seen else f"not modelled: {where}: unresolved {ref!r}"
        return _schema_gap(definitions[ref], definitions, seen | {ref}, where)
    if kind not in _CORE_KEYS:
        return f"not modelled: {where}: a {kind!r} core schema"
    extra = set(schema) - _CORE_KEYS[kind] - _COMMON_KEYS
    if extra:
        return f"not modelled: {where}: {kind} schema key {sorted(extra)[0]!r}"
    if kind == "model":
        return None  # a nested model is gated when it is built (``TypeBuilder.model``)
    if kind in ("int", "float") and any(
            isinstance(schema.get(k), float) and schema[k] != schema[k]
            for k in ("ge", "gt", "le", "lt")):
        return f"not modelled: {where}: a nan bound"
    for key in ("schema", "items_schema"):
        inner = schema.get(key)
        if isinstance(inner, dict):
            why = _schema_gap(inner, definitions, seen, f"{where}[]" if key != "schema"
                              else where)
            if why is not None:
                return why
        elif isinstance(inner, list):  # a tuple's positional items
            for item in inner:
                why = _schema_gap(item, definitions, seen, f"{where}[]")
                if why is not None:
                    return why
    return None
