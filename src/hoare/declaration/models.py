"""Typed values: ``LLMDataModel`` and the wrapping of native Python types.

A contract's input and output may be ``LLMDataModel`` subclasses or native types
(``str``, ``int``, ``list[int]``, ``dict[str, int]``, ``Optional``, ``Union``,
``Literal`` …). A native type is validated through a generated model with a
single ``value`` field and unwrapped again, so user code (``pre``, ``act``,
``post``, ``forward``) always sees the type its annotation names.

A value built in Python (a contract's input, a pipeline hand-off, an agent's answer) is
validated again down to every model and dataclass instance inside it
(``declaration/revalidation.py``): pydantic keeps such an instance as it is by default
(``revalidate_instances='never'``), so ``model_construct()``, a subclass that declares a
field more loosely, or an instance mutated after validation would reach user code and
the verifier's verdicts with values its type's constraints forbid.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import typing
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.types import _SecretBase  # SecretStr, SecretBytes and Secret[T] alike
from pydantic_core import SchemaValidator

from hoare.contracts.json_text import extract_json, json_candidates
from hoare.declaration.rendering import plain_json
from hoare.declaration.revalidation import (
    Boundary,
    clean_locations,
    instance_of,
    revalidating_validator,
    revalidation_is_forced,
)
from hoare.errors import InvalidValue
from hoare.forking import free_in_child
from hoare.kernel import exception_text

__all__ = ["Field", "LLMDataModel", "TypeSpec", "format_validation_error", "read_answer",
           "redact", "safe_repr", "secret_values", "type_spec"]


class LLMDataModel(BaseModel):
    """Base class of contract inputs and outputs: a pydantic v2 ``BaseModel``.

    Field descriptions and constraints (``Field(description=..., ge=...)``) feed
    the prompt, the output JSON schema and the z3 verifier.

    Unlike a plain pydantic model, ``allow_inf_nan`` is ``False``: a float field
    rejects ``nan``, ``inf`` and ``-inf`` (JSON has no such numbers, and a ``nan``
    passes no comparison a post-condition could make). Set
    ``model_config = ConfigDict(allow_inf_nan=True)`` in a subclass to accept them.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, allow_inf_nan=False)


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
        return readable_type(self.annotation)  # list[int], not list

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The JSON schema of the model (computed once: it costs milliseconds), strict
        JSON (``strict_schema``: a ``nan`` default is left out, never sent as ``NaN``)."""
        from hoare.declaration.strict_schema import StrictJsonSchema

        return self.model.model_json_schema(schema_generator=StrictJsonSchema)

    @cached_property
    def schema_json(self) -> str:
        return json.dumps(self.schema, indent=2, sort_keys=True)

    @cached_property
    def _strict_adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.annotation)

    @cached_property
    def _data_boundary(self) -> SchemaValidator | None:
        """The validator of ``validate`` for data (revalidation.py); None for a native
        type with no model or dataclass inside, which plain validation checks whole."""
        return self._boundary("data")

    @cached_property
    def _instance_boundary(self) -> SchemaValidator | None:
        """The validator of ``validate`` for an instance of the model (revalidation.py)."""
        return self._boundary("instance")

    def _boundary(self, boundary: Boundary) -> SchemaValidator | None:
        validator, classes = revalidating_validator(self.model.__pydantic_core_schema__,
                                                    boundary)
        inside = [cls for cls in classes if cls is not self.model] if self.wrapped else classes
        return validator if inside else None

    @cached_property
    def _dumping_adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.annotation if self.wrapped else self.model)

    def validate(self, value: object, *, shown: bool = True) -> Any:
        """Validate a Python value (a contract's input, a hand-off, an answer); return
        what user code sees (model or native). Every model and dataclass instance inside
        is validated again (``declaration/revalidation.py``), however it was built: what
        comes back satisfies the type's constraints, and is a new instance of exactly
        the declared class (not the caller's object, nor its subclass). ``shown=False``:
        a refusal's error is raised as pydantic-core made it, its locations not cleaned
        for a reader (the verifier's search only asks whether a value is valid)."""
        if self.wrapped:
            boundary = self._data_boundary
        elif instance_of(value, self.model):
            boundary = self._instance_boundary
        else:
            if instance_of(value, BaseModel):
                value = cast("BaseModel", value).model_dump()  # another model's instance: as data
            boundary = self._data_boundary
        if boundary is not None and not revalidation_is_forced():
            # a pydantic-core that keeps nested instances as they are: validate the
            # value's dump instead (every model instance in it becomes plain data)
            value = self._dumping_adapter.dump_python(value, round_trip=True, warnings=False)
            boundary = None
        given = {"value": value} if self.wrapped else value
        if boundary is None:
            validated: Any = self.model.model_validate(given)
        else:
            try:
                validated = boundary.validate_python(given)
            except ValidationError as error:
                if not shown:
                    raise
                raise clean_locations(error) from None
        return validated.value if self.wrapped else validated

    def instance_validator(self) -> SchemaValidator | None:
        """What ``validate`` hands an instance of exactly ``model`` to, when it hands it
        straight on (not wrapped, revalidation in force); None otherwise. The validator
        raises ``ValidationError`` as pydantic-core does: ``validate`` cleans its
        locations."""
        if self.wrapped or not revalidation_is_forced():
            return None
        return self._instance_boundary

    def validate_json(self, text: str) -> Any:
        """Validate an engine's JSON text; return what user code sees."""
        if not self.wrapped:
            return self.model.model_validate_json(text)
        try:
            return self.model.model_validate_json(text).value  # type: ignore[attr-defined]  # type_spec's one field
        except ValidationError as error:
            # An LLM may answer a bare value (``42``) instead of ``{"value": 42}``.
            try:
                bare = json.loads(text)
            except (ValueError, RecursionError):  # not JSON, or nested too deep for it:
                raise error from None  # pydantic's error says so, by the type
            return self.model.model_validate({"value": bare}).value  # type: ignore[attr-defined]  # type_spec's one field

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
        """A JSON-compatible rendering of a value of this type (``json.dumps`` writes
        it). Never raises: a value pydantic cannot serialise (``Any`` holding a foreign
        object, bytes that are not UTF-8, a cycle, an int beyond ``json``'s digits…) is
        rendered by ``plain_json``."""
        try:
            dumped = self._pydantic_dump(value)
            if _is_jsonable(dumped):
                return dumped
        except Exception:  # the fallback below renders any value
            pass
        return json.loads(plain_json(value))

    def dump_json(self, value: object) -> str:
        """``dump`` as JSON text (a contract's input in its prompt). Never raises, as
        ``dump``."""
        try:
            if instance_of(value, BaseModel):
                return cast("BaseModel", value).model_dump_json()
            return json.dumps(self._pydantic_dump(value), ensure_ascii=False)
        except Exception:  # a value pydantic or json cannot write: plainly
            return plain_json(value)

    def _pydantic_dump(self, value: object) -> Any:
        """pydantic's JSON-mode dump of the value (the value itself when it is not one
        of this type); may raise, or hold what ``json`` cannot write."""
        if instance_of(value, BaseModel):
            return cast("BaseModel", value).model_dump(mode="json")
        if self.wrapped:
            try:
                return self.model.model_validate({"value": value}).model_dump(
                    mode="json")["value"]
            except ValidationError:
                pass
        return value if _is_jsonable(value) else safe_repr(value)


def _is_jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


_SPECS: dict[tuple[Any, ...], TypeSpec] = {}
_SPECS_LOCK = threading.Lock()
free_in_child(sys.modules[__name__], _SPECS_LOCK)  # held while a spec is built


def _spec_key(annotation: Any) -> tuple[Any, ...]:
    """What tells annotations apart for ``type_spec``'s cache: the annotation, and the
    order and exact types of its arguments at every depth. ``typing`` compares a union's
    or a ``Literal``'s arguments as a set (``int | float == float | int``), but pydantic
    tries a union's members in order (``"1"`` is ``1`` for one, ``1.0`` for the other)."""
    def shape(node: Any, depth: int) -> tuple[Any, ...]:
        if depth > 100:
            raise RecursionError("an annotation nested over 100 deep")
        return tuple((arg, type(arg), repr(arg) if type(arg) is float else None,
                      shape(arg, depth + 1)) for arg in typing.get_args(node))
    return (annotation, shape(annotation, 0))


def type_spec(annotation: Any) -> TypeSpec:
    """The ``TypeSpec`` of an annotation, built once per annotation."""
    try:
        key = _spec_key(annotation)
        return _SPECS[key]
    except KeyError:
        pass
    except Exception:  # unhashable (or foreign) annotation: build without caching
        return _build(annotation)
    with _SPECS_LOCK:
        spec = _SPECS.get(key)
        if spec is None:
            spec = _SPECS[key] = _build(annotation)
        return spec


def _build(annotation: Any) -> TypeSpec:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return TypeSpec(annotation, annotation, wrapped=False)
    try:
        TypeAdapter(annotation)
    except Exception as error:
        if isinstance(annotation, type) and annotation.__module__ != "builtins":
            # pydantic's advice (arbitrary_types_allowed) would accept any object and
            # validate nothing: say what does work for a model's JSON answer instead
            raise TypeError(
                f"{annotation.__qualname__} is a plain class: hoare cannot build it from "
                f"the model's JSON answer. Make it a pydantic model (class "
                f"{annotation.__qualname__}(LLMDataModel): with annotated fields), a "
                f"dataclass or TypedDict with annotated fields, or use a native type "
                f"(str, int, list[str], Literal[...])") from error
        raise TypeError(f"{safe_repr(annotation)} is not a type hoare can validate: "
                        f"{exception_text(error)}") from error
    # Shown to the model in the schema: a readable name ("int", "list[str]"), never a
    # repr such as "<class 'int'>" (a small model copies what it is shown)
    readable = readable_type(annotation)
    name = "".join(ch for ch in readable.title() if ch.isalnum())
    model = create_model(
        f"{name or 'Native'}Answer",
        __base__=LLMDataModel,
        value=(annotation, Field(description=f"the answer, of type {readable}")),
    )
    return TypeSpec(annotation, model, wrapped=True)


def readable_type(annotation: Any) -> str:
    """``int``, ``list[str]``, ``Literal['a', 'b']``: how a type is written in code."""
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return repr(annotation).replace("typing.", "")


def safe_repr(value: object) -> str:
    """``repr(value)``, or a text naming its type when that raises (foreign values).
    Always an exact ``str``: a ``str`` subclass a ``__repr__`` returns has dunders of
    its own (``__len__``, ``__format__``…) that the caller would run."""
    try:
        shown = repr(value)
    except Exception:
        return f"<{type(value).__name__} object (its repr() raised)>"
    return str.__str__(shown) if isinstance(shown, str) else f"<{type(value).__name__} object>"


# exact types that never hold a secret: skipped without a look (a subclass is looked at)
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})


_QUOTED = frozenset("'\"\\")  # what repr and JSON escape in printable ASCII


def _secret_texts(value: _SecretBase[object]) -> tuple[str, ...]:
    """The texts a secret shows as once revealed (``SecretStr``, ``SecretBytes``,
    ``Secret[T]``): itself, and as a message usually quotes it, escaped: its ``repr``,
    ``ascii`` and JSON forms (``"pa\\nss"`` holds no ``pa<newline>ss``), a byte
    string's ``repr`` too. Exact ``str``s (a ``str`` subclass's ``__hash__`` is
    foreign code)."""
    inner = value.get_secret_value()
    if isinstance(inner, bytes | bytearray):
        raw = bytes(inner)
        text = raw.decode("utf-8", "replace")
        return (text, *_escaped(text), repr(raw)[2:-1])
    text = str.__str__(inner) if isinstance(inner, str) else str.__str__(str(inner))
    return (text, *_escaped(text))


def _escaped(text: str) -> tuple[str, ...]:
    """``text`` as ``repr``, ``ascii`` and ``json.dumps`` (both ways) write it, and its
    UTF-8 bytes' ``repr``, quotes removed (none for printable ASCII without a quote or
    a backslash, which every form writes as it is)."""
    if text.isascii() and text.isprintable() and not _QUOTED.intersection(text):
        return ()
    return (repr(text)[1:-1], ascii(text)[1:-1], json.dumps(text)[1:-1],
            json.dumps(text, ensure_ascii=False)[1:-1],
            repr(text.encode("utf-8", "surrogatepass"))[2:-1])


_COLLECTIONS = (list, tuple, set, frozenset, deque)


def _children(value: object) -> Iterable[object]:
    """The values inside ``value`` where a secret can hide and be shown: a model's fields,
    its extra fields (``extra="allow"``) and private attributes, a dataclass's fields, a
    mapping's keys and values, the items of a list, tuple, set or deque. ``isinstance``
    (which sees a proxy's ``__class__``), else, when a foreign ``__class__`` raises, the
    real type."""
    try:
        return _children_by(value, isinstance)
    except Exception:
        return _children_by(value, instance_of)


def _children_by(value: object, is_a: Callable[[object, Any], bool]) -> Iterable[object]:
    if is_a(value, BaseModel):
        model = cast("BaseModel", value)
        extra, private = model.__pydantic_extra__, model.__pydantic_private__
        return (*model.__dict__.values(), *(extra.values() if extra else ()),
                *(private.values() if private else ()))
    if is_a(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        return (*mapping.keys(), *mapping.values())
    if is_a(value, _COLLECTIONS):
        return cast("Iterable[object]", value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(getattr(value, f.name, None) for f in dataclasses.fields(value))
    return ()


def secret_values(*values: object) -> frozenset[str]:
    """The texts of every secret (``SecretStr``, ``SecretBytes``, ``Secret[T]``) inside
    ``values``, raw and escaped (``_secret_texts``): models (their extra fields too),
    dataclasses, mappings (keys and values), lists, tuples, sets and deques, to be
    redacted from prompts, logs and errors. Every
    depth is searched (a secret nested deeper than any bound is still found); each
    container is read once, so a cycle ends the walk."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [value for value in values if type(value) not in _ATOMIC]
    while stack:
        value = stack.pop()
        try:
            secret = isinstance(value, _SecretBase)
        except Exception:  # a foreign __class__ raised: its real type
            secret = instance_of(value, _SecretBase)
        if secret:
            try:
                found.update(_secret_texts(cast("_SecretBase[object]", value)))
            except Exception:  # a foreign secret type whose value cannot be shown
                continue
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        try:
            children = tuple(_children(value))
        except Exception:  # a foreign container that raises when read
            continue
        stack.extend(item for item in children if type(item) not in _ATOMIC)
    found.discard("")
    return frozenset(found)


REDACTED = "**********"


# what a shortened text ends its cut with (``format_validation_error``, ``safe_text``,
# ``shown``); a cut with no mark is at the text's end
CUT_MARKS = ("...", "…")
_CUT_AT_END = 4  # the shortest secret prefix redacted at a text's end, where no mark says
# it was cut (a shorter one is as likely the text's own last characters)


def redact(text: str, secrets: frozenset[str]) -> str:
    """``text`` with every secret replaced by ``**********`` (longest first), and the
    start of a secret where the text was cut short (``_redact_cuts``): a text is often
    shortened before it is redacted, mid-secret."""
    if not secrets:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _redact_cuts(text, secrets)


def _redact_cuts(text: str, secrets: frozenset[str]) -> str:
    """``text`` with the longest start of a secret that ends where a cut mark begins
    (any length) or where the text ends (at least ``_CUT_AT_END`` characters) replaced
    by ``**********``."""
    cuts = [(len(text), _CUT_AT_END)]
    for mark in CUT_MARKS:
        if mark in text:
            cuts.extend((index, 1) for index in _find_all(text, mark))
    if len(cuts) > 1:
        cuts.sort(reverse=True)  # right to left: the indices left of a cut stay valid
    for end, shortest in cuts:
        longest = 0
        for secret in secrets:
            found = _cut_start(text, end, secret)
            if found > longest:
                longest = found
        if longest >= shortest:
            text = text[:end - longest] + REDACTED + text[end:]
    return text


def _cut_start(text: str, end: int, secret: str) -> int:
    """The length of the longest proper start of ``secret`` that ``text[:end]`` ends
    with (0: none): the first place in the last ``len(secret) - 1`` characters where
    the rest of the text is a start of the secret."""
    first = secret[:1]
    position = text.find(first, max(0, end - len(secret) + 1), end) if first else -1
    while position >= 0:
        if secret.startswith(text[position:end]):
            return end - position
        position = text.find(first, position + 1, end)
    return 0


def _find_all(text: str, part: str) -> list[int]:
    found, start = [], text.find(part)
    while start >= 0:
        found.append(start)
        start = text.find(part, start + 1)
    return found


def format_validation_error(error: ValidationError) -> str:
    """A compact, LLM-readable list of what was wrong, with the offending values."""
    lines = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item.get("loc", ())) or "(root)"
        shown = safe_repr(item.get("input"))
        if len(shown) > 120:
            shown = shown[:117] + "..."
        lines.append(f"{location}: {item.get('msg')} (got {shown})")
    return "; ".join(lines) or str(error)


def read_answer(spec: TypeSpec, text: str, finish_reason: str | None = None,
                refused: Mapping[str, ValidationError] | None = None) -> Any:
    """A model's answer text as a value of ``spec``: the first JSON value in it (whole,
    fenced or in prose, ``json_text``) that validates; if none does, ``InvalidValue``
    about the one ``extract_json`` picks (with the ``finish_reason=length`` hint).
    Each candidate is validated once: ``refused`` holds candidates the caller already
    saw ``spec.validate_json`` refuse, with its error."""
    if not text.strip():
        raise InvalidValue(f"the answer was empty: reply with a JSON value of type "
                           f"{spec.name}")
    errors: dict[str, ValidationError] = dict(refused) if refused else {}
    for candidate in json_candidates(text):
        if candidate in errors:
            continue
        try:
            return spec.validate_json(candidate)
        except ValidationError as refusal:
            errors[candidate] = refusal
    picked = extract_json(text)
    found = errors.get(picked)
    if found is None:
        try:
            return spec.validate_json(picked)
        except ValidationError as refusal:
            found = refusal
    problem = format_validation_error(found)
    if finish_reason == "length":
        problem = f"the answer was cut off (finish_reason=length): {problem}"
    raise InvalidValue(f"the answer is not a valid {spec.name}: {problem}") from None
