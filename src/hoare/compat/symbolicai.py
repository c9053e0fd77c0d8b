"""SymbolicAI's ``LLMDataModel`` prompt helpers, for code that calls them after a port.

``hoare.LLMDataModel`` stays plain pydantic; this subclass adds what SymbolicAI's
documents and users rely on: an optional ``section_header`` (never serialised), the
indented ``str()`` rendering, ``format_field``, ``simplify_json_schema`` (a readable
field list), ``generate_example_json`` (a placeholder instance) and ``instruct_llm``
(the two, as instructions); also ``Const``, ``build_dynamic_llm_datamodel`` and the
``LengthConstraint``/``CustomConstraint`` records. Their text follows SymbolicAI's
formats so that prompts and tests written against them keep working; hoare's own
prompts do not use them.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, Field, create_model, model_validator
from pydantic.errors import PydanticSchemaGenerationError
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticUndefined

from hoare.contracts.base import Contract
from hoare.contracts.decorator import contract
from hoare.declaration.models import LLMDataModel as _Base
from hoare.declaration.models import readable_type
from hoare.errors import UsageError

__all__ = ["Const", "CustomConstraint", "Expression", "LLMDataModel", "LengthConstraint",
           "build_dynamic_llm_datamodel", "contract"]

# A port changes imports only: ``from hoare.compat.symbolicai import Expression,
# LLMDataModel, contract`` in place of symai's three. ``Expression`` is
# ``hoare.Contract`` under SymbolicAI's name; ``contract`` is ``hoare.contract``.
Expression = Contract

_HEADER = "section_header"
_MAX_DEPTH = 50  # str() cuts models, lists and dicts nested deeper (SymbolicAI's depth)
_CUT = "… <max depth reached>"
_CIRCULAR = "<circular reference>"
_PLACEHOLDERS: dict[Any, Any] = {str: "example_string", int: 123, float: 123.45, bool: True,
                                 type(None): None, None: None}


class LLMDataModel(_Base):
    """``hoare.LLMDataModel`` with SymbolicAI's prompt helpers (see the module doc)."""

    # never serialised, and left out of the JSON schema: a model is never asked for it
    section_header: SkipJsonSchema[str | None] = Field(default=None, exclude=True,
                                                       frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _const_fields(cls, values: Any) -> Any:
        """A ``Const(value)`` field only takes that value."""
        if isinstance(values, dict):
            for name, info in cls.model_fields.items():
                extra = info.json_schema_extra
                if isinstance(extra, dict) and "const_value" in extra and name in values \
                        and values[name] != extra["const_value"]:
                    raise ValueError(f"{name} must be {extra['const_value']!r}")
        return values

    # -- str() ----------------------------------------------------------------------
    def __str__(self, indent: int = 0, visited: set[int] | None = None,
                depth: int = 0) -> str:
        """The fields one per line, nested values indented, under ``[[section_header]]``
        when there is one (at the top level)."""
        visited = set() if visited is None else visited
        lines = [self.format_field(name, getattr(self, name), indent + 2, visited, depth)
                 for name, info in type(self).model_fields.items()
                 if name != _HEADER and not info.exclude]
        text = "\n".join(lines) + "\n" if lines else ""
        if self.section_header and indent == 0:
            return f"[[{self.section_header}]]\n{text}"
        return text

    def format_field(self, key: str, value: Any, indent: int = 0,
                     visited: set[int] | None = None, depth: int = 0) -> str:
        """One field as ``str()`` shows it: ``key: value``, or nested lines for models,
        lists and dicts. A model, list or dict met again inside itself is a
        ``<circular reference>``; one nested 50 levels deep is ``… <max depth reached>``."""
        visited = set() if visited is None else visited
        pad = " " * indent
        if value is None:
            return f"{pad}{key}: None"
        if isinstance(value, enum.Enum):
            return f"{pad}{key}: {value.value}"
        if not isinstance(value, (LLMDataModel, list, dict)):
            return f"{pad}{key}: {value}"
        if isinstance(value, (list, dict)) and not value:
            return f"{pad}{key}:\n"
        if id(value) in visited:
            return f"{pad}{key}: {_CIRCULAR}"
        if depth >= _MAX_DEPTH:
            return f"{pad}{key}: {_CUT}"
        visited.add(id(value))
        try:
            if isinstance(value, LLMDataModel):
                shown = value.__str__(indent, visited, depth + 1).strip()
                return f"{pad}{key}:\n{pad}  {shown}"
            if isinstance(value, list):
                return f"{pad}{key}:\n" + "\n".join(self._item(item, indent, visited, depth)
                                                     for item in value)
            rows = [self.format_field(str(k), v, indent + 2, visited, depth + 1)
                    if isinstance(v, (dict, list, LLMDataModel)) else f"{pad}  {k}: {v}"
                    for k, v in value.items()]
            return (f"{pad}{key}:\n" if key else "") + "\n".join(rows)
        finally:
            visited.discard(id(value))

    def _item(self, item: Any, indent: int, visited: set[int], depth: int) -> str:
        pad = " " * indent
        if isinstance(item, (dict, list)):
            inner = self.format_field("", item, indent + 2, visited, depth + 1).strip()
            return f"{pad}  - :\n{pad}    {inner}"
        if isinstance(item, LLMDataModel):
            if id(item) in visited:
                return f"{pad}  - : {_CIRCULAR}"
            visited.add(id(item))
            try:
                shown = item.__str__(indent + 2, visited, depth + 1).strip()
            finally:
                visited.discard(id(item))
            return f"{pad}  - : {shown}" if shown else f"{pad}  - :"
        return f"{pad}  - : {item}" if item != "" else f"{pad}  - :"

    # -- the schema as text ---------------------------------------------------------
    @classmethod
    @lru_cache(maxsize=128)
    def simplify_json_schema(cls) -> str:
        """``[[Schema]]`` then one line per field: ``- "name" (type, required):
        description``, nested models' fields below them, and ``[[Definitions]]`` for
        the models and enums the schema refers to."""
        schema = cls.model_json_schema()
        definitions = schema.get("$defs", {})
        text = "[[Schema]]\n" + _fields(schema, definitions, 0, set())
        if definitions:
            rows = []
            for name, definition in definitions.items():
                rows.append(f"- {name}:")
                if "enum" in definition:
                    rows.append("  Enum values: " + ", ".join(map(repr, definition["enum"])))
                else:
                    rows.append(_fields(definition, definitions, 1, {name}))
            text += "\n\n[[Definitions]]\n" + "\n".join(rows)
        return text

    @classmethod
    def generate_example_json(cls, model: type[BaseModel] | None = None,
                              visited_models: set[str] | None = None) -> dict[str, Any]:
        """A placeholder instance of ``model`` (default: this class) as a dict: defaults
        where there are, else ``"example_string"``, ``123``, ``123.45``, ``True``, the
        first ``Literal``/``Enum`` value, one element per list, nested models expanded
        once per path."""
        target = model or cls
        seen = set() if visited_models is None else visited_models
        return {name: _field_example(info, seen)
                for name, info in target.model_fields.items() if name != _HEADER}

    @classmethod
    @lru_cache(maxsize=128)
    def instruct_llm(cls) -> str:
        """``[[Result]]`` instructions: the simplified schema and an example, or one
        ``[[Example N]]`` per alternative when the model's one field is a union."""
        fields = {n: f for n, f in cls.model_fields.items() if n != _HEADER}
        examples = [cls.generate_example_json()]
        if len(fields) == 1:
            (name, info), = fields.items()
            options = [a for a in get_args(info.annotation) if a is not type(None)] \
                if get_origin(info.annotation) in (typing.Union, types.UnionType) else []
            if len(options) > 1:
                examples = [{name: _example(option, set())} for option in options]
        shown = [json.dumps(example, indent=2, default=str) for example in examples]
        if len(shown) == 1:
            blocks = f"[[Example]]\n```json\n{shown[0]}\n```"
        else:
            blocks = "\n\n".join(f"[[Example {index}]]\n```json\n{text}\n```"
                                   for index, text in enumerate(shown, 1))
        return (f"\n[[Result]]\nReturn a JSON object with the following schema:\n\n"
                f"{cls.simplify_json_schema()}\n\n{blocks}\n")

    def validate(self) -> Any:  # type: ignore[override]  # SymbolicAI's hook, not pydantic's
        """SymbolicAI's custom-validation hook: nothing by default."""
        return None

    def remedy(self) -> Any:
        """SymbolicAI's remedy hook: nothing by default."""
        return None


@dataclass
class LengthConstraint:
    """SymbolicAI's record of a length rule on a field (kept for ported code)."""

    field_name: str | None = None
    min_length: int | None = None
    max_length: int | None = None


@dataclass
class CustomConstraint:
    """SymbolicAI's record of a free-text rule (kept for ported code)."""

    rule: str


def Const(value: Any) -> Any:
    """A field that only takes ``value`` (its default), shown in the schema text."""
    return Field(default=value, json_schema_extra={"const_value": value},
                 description=f"always {value!r}")


class NotAModelType(PydanticSchemaGenerationError, UsageError):
    """``build_dynamic_llm_datamodel`` got something pydantic cannot build a schema for:
    pydantic's own error class, as SymbolicAI's users catch it, in hoare's error tree."""


def build_dynamic_llm_datamodel(py_type: Any) -> type[LLMDataModel]:
    """A model with one required ``value`` field of ``py_type`` (SymbolicAI's wrapper
    of native types). ``...`` is no type: a ``TypeError``."""
    if py_type is Ellipsis:
        raise TypeError("build_dynamic_llm_datamodel needs a type, not ...")
    name = f"DynamicValue_{abs(hash(repr(py_type))) & 0xFFFFFFFF:X}"
    description = f"The value of this dynamically generated data model: {readable_type(py_type)}"
    try:
        return create_model(name, __base__=LLMDataModel,
                            value=(py_type, Field(..., description=description)))
    except PydanticSchemaGenerationError as error:  # as SymbolicAI raises it, in our tree
        raise NotAModelType(f"build_dynamic_llm_datamodel needs a type pydantic can "
                            f"validate, got {type(py_type).__name__}: {error.message}"
                            ) from None
    except (TypeError, ValueError, RuntimeError, SyntaxError, LookupError, NameError,
            UnicodeError) as error:  # not a type pydantic can validate (a number, a text)
        raise TypeError(f"build_dynamic_llm_datamodel needs a type pydantic can validate, "
                        f"got {type(py_type).__name__}: {type(error).__name__}") from error


# -- helpers ------------------------------------------------------------------------------

def _fields(schema: dict[str, Any], definitions: dict[str, Any], level: int,
            visiting: set[str]) -> str:
    required = set(schema.get("required", ()))
    rows = []
    for name, field_schema in schema.get("properties", {}).items():
        if name == _HEADER:
            continue
        kind = _type_text(field_schema, definitions)
        description = field_schema.get("description", field_schema.get("title",
                                                                       "No description provided."))
        pad = "  " * level
        row = (f'{pad}- "{name}" ({kind}, {"required" if name in required else "optional"}): '
               f"{description}") + _examples_text(field_schema, pad + "  ")
        ref = (field_schema.get("$ref") or field_schema.get("items", {}).get("$ref") or "")
        target = ref.split("/")[-1]
        if kind.startswith(("nested object", "array of nested object")) \
                and target in definitions and target not in visiting:
            nested = _fields(definitions[target], definitions, level + 1, visiting | {target})
            row += f"\n{pad}  - Nested fields:\n{nested}"
        rows.append(row)
    return "\n".join(rows)


def _examples_text(schema: dict[str, Any], pad: str) -> str:
    """A field's ``Field(examples=[...])`` as bullets below it (one ``example``: a line)."""
    examples = schema.get("examples", schema.get("example"))
    if examples is None or examples == []:
        return ""
    if not isinstance(examples, (list, tuple)):
        return f"\n{pad}- Example: {_shown(examples)}"
    return f"\n{pad}- Examples:" + "".join(f"\n{pad}  - {_shown(e)}" for e in examples)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _type_text(schema: dict[str, Any], definitions: dict[str, Any]) -> str:
    """How SymbolicAI's schema text names a type: ``string``, ``array of integer``,
    ``enum ('a', 'b')``, ``nested object (Name)``, ``string or null``..."""
    if "allOf" in schema and len(schema["allOf"]) == 1 and "$ref" in schema["allOf"][0]:
        return _type_text(schema["allOf"][0], definitions)
    if "enum" in schema:
        return "enum (" + ", ".join(map(repr, schema["enum"])) + ")"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type_text(s, definitions) for s in schema[key])
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        target = definitions.get(name, {})
        if "enum" in target:
            return "enum (" + ", ".join(map(repr, target["enum"])) + ")"
        return f"nested object ({name})"
    kind = schema.get("type")
    if kind == "array" and "prefixItems" in schema:
        return "tuple of (" + ", ".join(_type_text(s, definitions)
                                        for s in schema["prefixItems"]) + ")"
    if kind == "array":
        items = _type_text(schema.get("items", {}), definitions)
        return f"set of {items}" if schema.get("uniqueItems") else f"array of {items}"
    if kind == "object" and "additionalProperties" in schema:
        values = schema["additionalProperties"]
        return "object" if values is True else "object of " + _type_text(values, definitions)
    return str(kind) if kind else "unknown"


def _field_example(info: Any, seen: set[str]) -> Any:
    if info.default is not PydanticUndefined and info.default is not Ellipsis:
        return info.default
    if info.default_factory is not None:
        made = info.default_factory()
        if not (isinstance(made, (list, dict, set, tuple)) and not made):
            return made
    return _example(info.annotation, seen)


def _unwrapped(annotation: Any) -> Any:
    """The type pydantic validates ``annotation`` as, for the example's shape:
    ``Annotated[T, ...]``, ``NewType`` and ``TypeAliasType`` stand for ``T``."""
    for _ in range(100):  # an alias of an alias ...: never followed forever
        if get_origin(annotation) is typing.Annotated:
            annotation = get_args(annotation)[0]
        elif isinstance(annotation, typing.NewType):
            annotation = annotation.__supertype__
        elif type(annotation).__name__ == "TypeAliasType":
            annotation = annotation.__value__
        else:
            break
    return annotation


_CANDIDATES: tuple[Any, ...] = ("example_string", 123, 123.45, True, None,
                                "2024-01-01T00:00:00", "00000000-0000-0000-0000-000000000000",
                                {}, [])
"""What a type without a placeholder of its own gets: the first of these its pydantic
validator takes from JSON (a date, a ``Decimal``, a ``UUID`` ...)."""


@lru_cache(maxsize=256)
def _accepted(annotation: Any) -> Any:
    """The first candidate pydantic validates as ``annotation`` (from JSON text, as the
    model's answer is read), else ``"example_value"`` (SymbolicAI's placeholder)."""
    from pydantic import TypeAdapter

    try:
        adapter = TypeAdapter(annotation)
    except Exception:
        return "example_value"
    for candidate in _CANDIDATES:
        try:
            adapter.validate_json(json.dumps(candidate))
        except Exception:
            continue
        return candidate
    return "example_value"


def _example(annotation: Any, seen: set[str]) -> Any:
    annotation = _unwrapped(annotation)
    origin = get_origin(annotation) or annotation
    args = get_args(annotation)
    if origin is Literal:
        return args[0]
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return _example(options[0], seen) if options else None
    if isinstance(origin, type):
        if issubclass(origin, enum.Enum):
            members = list(origin)
            return members[0].value if members else "enum_value"
        if issubclass(origin, BaseModel):
            if origin.__name__ in seen:
                return {}
            return LLMDataModel.generate_example_json(origin, seen | {origin.__name__})
        if origin in (list, set, frozenset):
            return [_example(args[0] if args else Any, seen)]
        if origin is tuple:
            return tuple(_example(a, seen) for a in args if a is not Ellipsis) or \
                ("item1", "item2")
        if origin is dict:
            key, value = args if args else (str, Any)
            return {_key_example(key, seen): _example(value, seen)}
    if annotation is Any or annotation is object:
        return "example_value"
    try:
        return _PLACEHOLDERS[annotation]
    except (KeyError, TypeError):  # TypeError: an annotation that cannot be hashed
        return _accepted(annotation) if _hashable(annotation) else "example_value"


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _key_example(annotation: Any, seen: set[str]) -> Any:
    """A dict key of the annotated type: ``123`` for ``int``, a tuple or frozenset of
    placeholders, else ``"example_string"`` (what JSON objects have)."""
    annotation = _unwrapped(annotation)
    origin = get_origin(annotation) or annotation
    if origin is tuple:
        return _example(annotation, seen)
    if origin is frozenset:
        return frozenset(_example(annotation, seen))
    return _PLACEHOLDERS[annotation] if annotation in (int, float, bool) else "example_string"
