"""pydantic types → z3: one symbolic value per field and tracked constraints.

Each constraint carries a human label (``ge=0 (Score.score)``) so that an unsat
core names what conflicts. What is modelled:

* ``int``, ``bool``, ``str`` (z3 strings), ``float`` as a *real number* plus the
  ``nan``/``±inf`` cases pydantic accepts unless a bound or ``allow_inf_nan=False``
  excludes them;
* ``Literal[...]``, ``Enum`` (by member index; ``use_enum_values`` by value),
  ``Optional[X]`` (``None`` is a separate case), nested models;
* ``list[X]``/``tuple[X, ...]`` as a length plus a few element slots: lengths are
  exact, elements past the slots are unconstrained (a witness never uses them:
  a *verifier bound* assumption keeps witnesses inside the slots and is reported
  when a proof needs it);
* ``ge/gt/le/lt``, ``multiple_of`` (ints), ``min_length/max_length``, ``pattern``
  (search semantics), ``allow_inf_nan``, model-wide ``str_min_length`` & co.

The domain must contain every value pydantic really produces (refutations rest
on it). A constraint that cannot be translated is *dropped* (the modelled set
grows, so refutations stay sound) and listed with its reason; ``exact`` becomes
False, so no check may rely on the type set in a negative position
(composition, ``post_total``). The same holds for validators that provably only
reject (``narrowing``) and for before-validators (the value is still validated).
What may *change* values is opaque: plain/wrap validators, after-validators not
proven to return their argument untouched, model validators that may assign,
``model_post_init``, ``Flag`` enums, enums and models defining their own
behaviour (``__bool__``, ``__eq__``, ``__len__``…).

pydantic does not validate defaults (unless ``validate_default``, the field's
setting beating the model's): the field may also hold its default as it is — a
``None`` default becomes a ``None`` case, a default of the field's own type an
alternative to its constraints, and any other default (an ``int`` for a
``float``, an enum member under ``use_enum_values``, a non-builtin
``default_factory``) makes the field opaque. Model-wide string settings follow
pydantic: field lengths beat ``str_min_length``/``str_max_length``; lengths and
patterns are checked *before* ``str_to_lower``/``str_to_upper`` (so a case
change drops them) and *after* stripping.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import types
import typing
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import annotated_types as at
import z3
from pydantic import BaseModel
from pydantic._internal._fields import pydantic_general_metadata
from pydantic.fields import FieldInfo

from hoare.declaration.models import TypeSpec
from hoare.verifier.search.concrete import BindError, assign
from hoare.verifier.solve.z3util import is_true
from hoare.verifier.translate.narrowing import only_narrows
from hoare.verifier.translate.regex import field_pattern
from hoare.verifier.translate.values import (
    FIN,
    NINF,
    NONE,
    PINF,
    Opaque,
    SBool,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    const_to_sym,
    fresh_name,
    int_val,
    real_val,
)

__all__ = ["Constraint", "TypeBuilder", "TypedValue"]

MAX_SLOTS = 6  # list elements modelled when the type bounds the length this tightly
DEFAULT_SLOTS = 3  # list elements modelled otherwise
MAX_DEPTH = 6
MAX_LEAVES = 600  # symbolic scalars per value; larger values become opaque


@dataclass(frozen=True)
class Constraint:
    """``expr`` holds for every valid value. ``label`` None: structural (always
    asserted, never in a core). ``kind``: "type", "bound" (verifier bound)."""

    label: str | None
    expr: z3.BoolRef
    kind: Literal["type", "bound"] = "type"


@dataclass
class TypedValue:
    """A symbolic value of a ``TypeSpec`` and what its type says about it."""

    spec: TypeSpec
    root: SModel  # the validated model (the wrapper model for native types)
    value: Sym  # what user code sees: ``root`` or, wrapped, its ``value`` field
    constraints: list[Constraint]
    dropped: list[str]  # constraints not translated, with the reason
    assumptions: list[str]  # e.g. validators assumed only to reject
    uses_float: bool
    role: str

    @property
    def exact(self) -> bool:
        """The constraints are exactly the type's (no dropped ones, no assumption)."""
        return not self.dropped and not self.assumptions

    @property
    def type_constraints(self) -> list[Constraint]:
        return [c for c in self.constraints if c.kind == "type"]

    @property
    def bounds(self) -> list[Constraint]:
        return [c for c in self.constraints if c.kind == "bound"]


def _implies(guard: z3.BoolRef, expr: z3.BoolRef) -> z3.BoolRef:
    return expr if is_true(guard) else z3.Implies(guard, expr)


def _flatten(metadata: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in metadata:
        if item is None:
            continue
        if isinstance(item, FieldInfo):
            out.extend(_flatten(list(item.metadata)))
        elif isinstance(item, at.GroupedMetadata) and not _is_string_constraints(item):
            out.extend(_flatten(list(item)))
        else:
            out.append(item)
    return out


# Constraint metadata by the core-schema key it sets.
_KEYED: tuple[tuple[type, str], ...] = (
    (at.Gt, "gt"), (at.Ge, "ge"), (at.Lt, "lt"), (at.Le, "le"),
    (at.MultipleOf, "multiple_of"), (at.MinLen, "min_length"), (at.MaxLen, "max_length"))


def _atoms(item: object) -> list[tuple[str, Any]] | None:
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


def _last_wins(items: list[Any]) -> list[Any]:
    """The constraints pydantic-core enforces: pydantic applies ``Annotated`` layers
    in order and each schema key holds the value of the *last* layer setting it
    (``Annotated[int, Field(ge=5), Field(ge=0)]`` accepts 3: its core schema is
    ``{'type': 'int', 'ge': 0}``), so only that one is translated; other metadata
    keeps its place."""
    tagged: list[tuple[str | None, Any]] = []
    for item in items:
        atoms = _atoms(item)
        tagged.extend(atoms if atoms is not None else [(None, item)])
    last = {key: index for index, (key, _) in enumerate(tagged) if key is not None}
    return [item for index, (key, item) in enumerate(tagged)
            if key is None or last[key] == index]


# Constraint keys of a scalar's core schema that the translation reads from metadata.
_COMPARED_KEYS = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern",
                  "strip_whitespace", "to_lower", "to_upper", "ascii_only", "allow_inf_nan")


def _field_schemas(cls: type[BaseModel]) -> dict[str, Any]:
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


def _layers_disagree(annotation: Any, metadata: list[Any], schema: Any) -> str | None:
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
    compared: tuple[str, ...] = _COMPARED_KEYS
    if typing.get_origin(annotation) in (list, tuple) and schema.get("type") in ("list",
                                                                                "tuple"):
        compared = ("min_length", "max_length")  # a sequence's own lengths
    elif annotation not in (int, float, str) or schema.get("type") not in ("int", "float",
                                                                          "str"):
        return None
    read: dict[str, object] = {}
    for item in _last_wins(_flatten(items)):
        for key, atom in _atoms(item) or ():
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


def _number(value: object) -> Fraction | None:
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, float) and (value != value or value in (float("inf"),
                                                                     float("-inf"))):
            return None
        return Fraction(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _fmt(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class TypeBuilder:
    """Builds symbolic values of pydantic types for one role (``input``, ``output``…)."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.dropped: list[str] = []
        self.assumptions: list[str] = []
        self.uses_float = False
        self.leaves = 0
        self.opaque_models: dict[type, str] = {}  # models whose values are not modelled

    # -- entry point --------------------------------------------------------------------
    def build(self, spec: TypeSpec, *, owner: str | None = None) -> TypedValue:
        constraints: list[Constraint] = []
        name = owner or (self.role if spec.wrapped else spec.model.__name__)
        root = self.model(spec.model, self.role, name, z3.BoolVal(True), constraints, 0,
                          wrapped=spec.wrapped)
        value = root.fields.get("value", root) if spec.wrapped else root
        if isinstance(root, SOpaque):  # pragma: no cover - models are always built
            raise TypeError(root.reason)
        opaque = self.opaque_models.get(spec.model)
        if opaque is not None and not spec.wrapped:
            value = SOpaque(opaque)  # witnesses still come from ``root``
        return TypedValue(spec, root, value, constraints, self.dropped, self.assumptions,
                          self.uses_float, self.role)

    def fresh(self, ann: Any, path: str, constraints: list[Constraint]) -> Sym:
        """An unconstrained value of ``ann`` (the tail of a list): constraints dropped."""
        return self.value(ann, [], path, path, z3.BoolVal(True), [], 0)

    # -- models -------------------------------------------------------------------------
    def model(self, cls: type[BaseModel], path: str, owner: str, guard: z3.BoolRef,
              constraints: list[Constraint], depth: int, *, wrapped: bool = False) -> Any:
        if depth > MAX_DEPTH:
            return SOpaque(f"{cls.__name__} nested too deeply to model")
        config = dict(cls.model_config)
        opaque = self._model_opacity(cls)
        if opaque is not None:
            self.opaque_models[cls] = opaque
        validators = field_validator_names(cls)
        gaps = core_schema_gaps(cls)
        schemas = _field_schemas(cls)
        fields: dict[str, Sym] = {}
        omit: dict[str, object] = {}
        for name, info in cls.model_fields.items():
            field_owner = owner if wrapped else f"{owner}.{name}"
            metadata = list(info.metadata)
            local: list[Constraint] = []
            gap = gaps.get(name) or gaps.get("*") or _layers_disagree(
                info.annotation, metadata, schemas.get(name))
            if gap is not None:  # pydantic-core enforces something not modelled
                fields[name] = SOpaque(f"{field_owner}: {gap}")
                continue
            changed = self._validators_change(validators.get(name, []) +
                                              validators.get("*", []), field_owner,
                                              _immutable(info.annotation))
            if changed is not None:
                fields[name] = SOpaque(changed)
                continue
            sym = self.value(info.annotation, metadata, f"{path}.{name}", field_owner, guard,
                             local, depth + 1, config=config)
            validate_default = info.validate_default if info.validate_default is not None \
                else bool(config.get("validate_default"))
            if not info.is_required() and not validate_default:
                sym, local, omitted = self._with_default(info, sym, local, field_owner,
                                                         guard)
                if omitted is not _NO_DEFAULT:
                    omit[name] = omitted
            fields[name] = sym
            constraints.extend(local)
        self._config_notes(cls, config)
        return SModel(cls, fields, path, omit, open=self._open(cls))

    def _open(self, cls: type[BaseModel]) -> bool:
        """Whether a value of ``cls`` in this role may be an instance of a subclass:
        a value built in Python (an input, act's result, an attribute) that pydantic
        keeps as it is (``revalidate_instances='never'``, the default; other settings
        revalidate it into exactly ``cls``). ``self`` attributes are never validated."""
        if self.role == "self":
            return True
        return self.role in _PYTHON_BUILT_ROLES and \
            dict(cls.model_config).get("revalidate_instances", "never") == "never"

    def _config_notes(self, cls: type[BaseModel], config: dict[str, Any]) -> None:
        for key, value in config.items():
            if key in _DOMAIN_NEUTRAL_CONFIG or key in _MODELLED_CONFIG:
                continue
            if value is None or value is False:
                continue
            note = f"model_config {key}={value!r:.30} of {cls.__name__}: not modelled"
            if note not in self.dropped:
                self.dropped.append(note)

    def _validators_change(self, validators: list[Any], owner: str, immutable: bool
                           ) -> str | None:
        """Why ``@field_validator``s may change the values of a field (None: they only
        reject, or run before validation, which still checks the type)."""
        for decorator in validators:
            mode = getattr(decorator.info, "mode", "after")
            name = getattr(decorator.func, "__name__", "validator")
            if mode == "before":
                self._before(f"validator {name} on {owner}")
                continue
            if mode != "after":
                return f"{owner}: {mode} validator {name} may produce any value"
            why = only_narrows(decorator.func, 0, immutable=immutable)
            if why is not None:
                return f"{owner}: validator {name} may change the value: {why}"
            self._narrowed(f"validator {name} on {owner}")
        return None

    def _before(self, what: str) -> None:
        """A validator running before the type's validation: the value still has the
        type and its constraints, but maybe not every such value is reachable."""
        note = (f"{what} runs before validation: values it never produces are "
                f"included")
        if note not in self.dropped:
            self.dropped.append(note)

    def _narrowed(self, what: str) -> None:
        note = f"{what} only rejects values: the constraint it adds is not translated"
        if note not in self.dropped:
            self.dropped.append(note)

    def _model_opacity(self, cls: type[BaseModel]) -> str | None:
        """Why the values of ``cls`` are not what its fields say (None: they are)."""
        custom = custom_behaviour(cls, BaseModel)
        if custom is not None:
            return f"{cls.__name__} defines {custom}: its instances behave unlike data"
        decorators = getattr(cls, "__pydantic_decorators__", None)
        for name, decorator in getattr(decorators, "model_validators", {}).items():
            mode = getattr(decorator.info, "mode", "after")
            if mode == "before":
                self._before(f"model validator {cls.__name__}.{name}")
                continue
            if mode != "after":
                return f"{cls.__name__}.{name} ({mode} model validator) may produce any value"
            scalars = frozenset(n for n, i in cls.model_fields.items()
                                if _immutable(i.annotation))
            why = only_narrows(decorator.func, 0, immutable_attrs=scalars)
            if why is not None:
                return f"{cls.__name__}.{name} may change the model: {why}"
            self._narrowed(f"model validator {cls.__name__}.{name}")
        if getattr(decorators, "root_validators", None):
            return f"{cls.__name__} has a root validator"
        for klass in cls.__mro__:
            if klass is BaseModel or not issubclass(klass, BaseModel):
                continue
            hook = klass.__dict__.get("model_post_init")
            if hook is not None and getattr(hook, "__name__", "") != \
                    "init_private_attributes":
                return f"{klass.__name__}.model_post_init may change the fields"
        return None

    def _with_default(self, info: FieldInfo, sym: Sym, local: list[Constraint], owner: str,
                      guard: z3.BoolRef) -> tuple[Sym, list[Constraint], object]:
        """pydantic does not validate defaults (unless ``validate_default``): the field
        may also hold its default, as it is. Returns the field's symbolic value (a
        ``None`` default adds a ``None`` case; a default the symbolic value cannot
        hold makes the field opaque), its constraints, and the default a witness
        must leave the field out to get (``_NO_DEFAULT``: none)."""
        if isinstance(sym, SOpaque):
            return sym, local, _NO_DEFAULT
        if info.default_factory is not None:
            factory = info.default_factory
            if factory not in (list, tuple, str, int, float, bool):
                return SOpaque(f"{owner}: its default_factory is not evaluated"), [], \
                    _NO_DEFAULT
            default: object = factory()  # type: ignore[call-arg]
        else:
            default = info.default
        if default is None and not isinstance(sym, (SOpt, SNone)):
            none = z3.Bool(fresh_name(owner + ".default_none"))
            guarded = [Constraint(c.label, z3.Implies(z3.Not(none), c.expr), c.kind)
                       for c in local]
            return SOpt(none, sym), guarded, None
        try:
            assignment = assign(sym, default, strict=True)
        except (BindError, Opaque):
            return SOpaque(f"{owner}: its default {default!r:.40} is not a value of the "
                           f"field's type (pydantic does not validate it)"), [], _NO_DEFAULT
        if not assignment.exact:
            return SOpaque(f"{owner}: its default {default!r:.40} is not modelled"), [], \
                _NO_DEFAULT
        typed = [c for c in local if c.kind == "type"]
        if not typed:
            return sym, local, _NO_DEFAULT
        equalities = assignment.equalities()
        pairs = assignment.pairs()
        together = z3.And(*[c.expr for c in typed])
        holds = z3.simplify(z3.substitute(together, *pairs)) if pairs else together
        if is_true(holds):
            return sym, local, _NO_DEFAULT
        combined = z3.Or(together, _implies(guard, z3.And(*equalities)))
        rest = [c for c in local if c.kind != "type"]
        labels = " ∧ ".join(dict.fromkeys(str(c.label) for c in typed if c.label is not None))
        rest.append(Constraint(f"({labels}) or the default {default!r:.40}" if labels
                               else None, combined))
        return sym, rest, default

    # -- values -------------------------------------------------------------------------
    def value(self, ann: Any, metadata: list[Any], path: str, owner: str, guard: z3.BoolRef,
              constraints: list[Constraint], depth: int, *,
              config: dict[str, Any] | None = None) -> Sym:
        config = config or {}
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            base, *extra = typing.get_args(ann)
            return self.value(base, [*metadata, *extra], path, owner, guard, constraints,
                              depth, config=config)
        if self.leaves > MAX_LEAVES:
            return SOpaque(f"{owner}: value too large to model")
        items = _last_wins(_flatten(metadata))
        changed = self._metadata_changes(items, owner, _immutable(ann))
        if changed is not None:
            return SOpaque(changed)
        if ann is int:
            self.leaves += 1
            sym = SInt(z3.Int(fresh_name(path)))
            self._numeric(sym, items, owner, guard, constraints)
            return sym
        if ann is float:
            self.leaves += 1
            self.uses_float = True
            tag = z3.Int(fresh_name(path + ".tag"))
            fsym = SFloat(tag, z3.Real(fresh_name(path)))
            constraints.append(Constraint(None, z3.And(tag >= FIN, tag <= NINF)))
            self._numeric(fsym, items, owner, guard, constraints, config=config)
            return fsym
        if ann is bool or ann is type(None) or origin is Literal or (
                isinstance(ann, type) and issubclass(ann, (enum.Enum, BaseModel))):
            self._unapplied(items, owner)
        if ann is bool:
            self.leaves += 1
            return SBool(z3.Bool(fresh_name(path)))
        if ann is str:
            self.leaves += 1
            ssym = SStr(z3.String(fresh_name(path)))
            self._string(ssym, items, owner, guard, constraints, config)
            return ssym
        if ann is type(None):
            return NONE
        try:
            if origin is Literal:
                return self._literal(ann, path, owner, guard, constraints, config)
            if isinstance(ann, type) and issubclass(ann, enum.Enum):
                return self._enum(ann, path, owner, guard, constraints, config)
        except Opaque as error:
            return SOpaque(f"{owner}: {error}")
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            nested = self.model(ann, path, ann.__name__, guard, constraints, depth + 1)
            if ann in self.opaque_models:
                return SOpaque(f"{owner}: {self.opaque_models[ann]}")
            return nested
        if origin in (typing.Union, types.UnionType):
            args = typing.get_args(ann)
            others = [a for a in args if a is not type(None)]
            if len(others) == len(args) - 1 and len(others) == 1:
                none = z3.Bool(fresh_name(path + ".none"))
                inner = self.value(others[0], metadata, path, owner,
                                   z3.And(guard, z3.Not(none)) if not is_true(guard)
                                   else z3.Not(none), constraints, depth, config=config)
                if isinstance(inner, SOpaque):
                    return SOpaque(inner.reason, example=None)
                return SOpt(none, inner)
            return SOpaque(f"{owner}: union {ann!r} not modelled")
        if origin in (list, tuple, typing.List, typing.Tuple):  # noqa: UP006
            args = typing.get_args(ann)
            if origin in (tuple, typing.Tuple) and not (  # noqa: UP006
                    len(args) == 2 and args[1] is Ellipsis):
                return SOpaque(f"{owner}: fixed-length tuple not modelled")
            element = args[0] if args else Any
            return self._list(element, items, path, owner, guard, constraints, depth,
                              "tuple" if origin in (tuple, typing.Tuple) else "list",  # noqa: UP006
                              config)
        return SOpaque(f"{owner}: type {getattr(ann, '__name__', ann)!s} not modelled")

    def _metadata_changes(self, items: list[Any], owner: str, immutable: bool) -> str | None:
        """Why ``Annotated`` metadata may change the values (None: it does not).

        A ``BeforeValidator`` runs before the type's own validation, which still
        checks the result; an ``AfterValidator`` that returns its argument unchanged
        only rejects; plain and wrap validators and custom schema hooks may produce
        anything."""
        for item in items:
            name = type(item).__name__
            if name in ("WrapValidator", "PlainValidator"):
                return f"{owner}: a {name} may produce any value"
            if name == "BeforeValidator":
                self._before(f"a BeforeValidator on {owner}")
            if name == "AfterValidator":
                why = only_narrows(item.func, 0, immutable=immutable)
                if why is not None:
                    return f"{owner}: an AfterValidator may change the value: {why}"
                self._narrowed(f"an AfterValidator on {owner}")
            elif name not in _KNOWN_METADATA and not type(item).__module__.startswith(
                    ("annotated_types", "pydantic")) and (
                    hasattr(item, "__get_pydantic_core_schema__")):
                return f"{owner}: {name} customises validation"
        return None

    # -- scalars ------------------------------------------------------------------------
    def _numeric(self, sym: SInt | SFloat, items: list[Any], owner: str, guard: z3.BoolRef,
                 constraints: list[Constraint], *, config: dict[str, Any] | None = None
                 ) -> None:
        allow_special = True if config is None else config.get("allow_inf_nan", True)
        for item in items:
            for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
                if isinstance(item, getattr(at, attr.capitalize())):
                    bound = _number(getattr(item, attr))
                    label = f"{attr}={_fmt(getattr(item, attr))} ({owner})"
                    if bound is None:
                        self.dropped.append(f"{label}: bound not modelled")
                        continue
                    if isinstance(sym, SFloat):  # pydantic compares with the bound as a float
                        try:
                            bound = Fraction(float(bound))
                        except OverflowError:
                            self.dropped.append(f"{label}: bound beyond the float range")
                            continue
                    constraints.append(Constraint(label, _implies(guard, _bound(sym, op,
                                                                                bound))))
            if isinstance(item, at.MultipleOf):
                label = f"multiple_of={_fmt(item.multiple_of)} ({owner})"
                m = item.multiple_of
                if isinstance(sym, SInt) and isinstance(m, int) and not isinstance(m, bool) \
                        and m != 0:
                    constraints.append(Constraint(label, _implies(guard, sym.e % abs(m) == 0)))
                else:
                    self.dropped.append(f"{label}: float multiple_of uses a tolerance")
            name = type(item).__name__
            if name == "AllowInfNan" or (name == "_PydanticGeneralMetadata"
                                         and hasattr(item, "allow_inf_nan")):
                allow_special = bool(item.allow_inf_nan)
            elif name not in _IGNORED and not isinstance(item, (at.Gt, at.Ge, at.Lt, at.Le,
                                                                at.MultipleOf)):
                self._unknown(item, owner)
        if isinstance(sym, SFloat) and not allow_special:
            constraints.append(Constraint(f"allow_inf_nan=False ({owner})",
                                          _implies(guard, sym.tag == FIN)))

    def _string(self, sym: SStr, items: list[Any], owner: str, guard: z3.BoolRef,
                constraints: list[Constraint], config: dict[str, Any]) -> None:
        engine = config.get("regex_engine", "rust-regex")
        lengths: list[tuple[str, int]] = []
        patterns: list[str] = []
        transforms = [k for k in ("str_strip_whitespace", "str_to_lower", "str_to_upper")
                      if config.get(k)]
        for item in items:
            name = type(item).__name__
            if isinstance(item, at.MinLen):
                lengths.append(("min_length", item.min_length))
            elif isinstance(item, at.MaxLen):
                lengths.append(("max_length", item.max_length))
            elif name in ("_PydanticGeneralMetadata", "StringConstraints"):
                data = getattr(item, "__dict__", {})
                for key in ("strip_whitespace", "to_lower", "to_upper"):
                    if data.get(key) or getattr(item, key, None):
                        transforms.append(key)
                if getattr(item, "min_length", None) is not None and name == "StringConstraints":
                    lengths.append(("min_length", item.min_length))
                if getattr(item, "max_length", None) is not None and name == "StringConstraints":
                    lengths.append(("max_length", item.max_length))
                pattern = getattr(item, "pattern", None) or data.get("pattern")
                if pattern is not None:
                    patterns.append(pattern)  # a compiled re.Pattern runs on Python's re
                if getattr(item, "ascii_only", None):
                    constraints.append(Constraint(f"ascii_only ({owner})",
                                                  _implies(guard, _ascii(sym.e))))
            elif name not in _IGNORED:
                self._unknown(item, owner)
        # The model-wide lengths apply only where the field sets none of its own.
        for key in ("min_length", "max_length"):
            if config.get(f"str_{key}") is not None and all(k != key for k, _ in lengths):
                lengths.append((key, int(config[f"str_{key}"])))
        if any(t.endswith(("to_lower", "to_upper")) for t in transforms):
            # pydantic checks lengths and patterns *before* changing the case, and a
            # case change may change the length ('ß'.upper() == 'SS'): the final value
            # satisfies none of them for sure.
            self.dropped.append(f"{', '.join(sorted(set(transforms)))} on {owner}: the "
                                f"value's case is changed after its constraints are "
                                f"checked; the constraints are not applied")
            return
        for key, bound in lengths:
            length = z3.Length(sym.e)
            expr = length >= bound if key == "min_length" else length <= bound
            constraints.append(Constraint(f"{key}={bound} ({owner})", _implies(guard, expr)))
        for pattern in patterns:
            compiled = not isinstance(pattern, str)
            label = f"pattern={(pattern.pattern if compiled else pattern)!r} ({owner})"
            translation = field_pattern(pattern.pattern, "python-re", pattern.flags) \
                if compiled else field_pattern(pattern, engine)
            if translation.regex is None:
                self.dropped.append(f"{label}: {translation.reason}")
                continue
            if not translation.exact:
                self.dropped.append(f"{label}: Unicode classes over-approximated")
            constraints.append(Constraint(label, _implies(guard, z3.InRe(sym.e,
                                                                         translation.regex))))
        if transforms:
            self.dropped.append(f"{', '.join(sorted(set(transforms)))} on {owner}: the value "
                                f"is stripped before its constraints are checked; that it "
                                f"has no surrounding whitespace is not modelled")

    def _unapplied(self, items: list[Any], owner: str) -> None:
        """Constraints on a bool, a Literal, an enum, None or a model: pydantic checks
        them with a function after the type's validation (``Annotated[Literal[1, 5],
        Field(ge=3)]`` rejects 1); the translation does not apply them: not exact."""
        for item in items:
            for key, _ in _atoms(item) or ():
                if key in _COMPARED_KEYS:
                    note = (f"{key} on {owner}: checked by pydantic after the type's "
                            f"validation; not translated")
                    if note not in self.dropped:
                        self.dropped.append(note)

    def _unknown(self, item: object, owner: str) -> None:
        note = f"{type(item).__name__} on {owner}: not translated"
        if type(item).__name__ in ("BeforeValidator", "AfterValidator", "WrapValidator",
                                   "PlainValidator"):
            return
        if note not in self.dropped:
            self.dropped.append(note)

    def _literal(self, ann: Any, path: str, owner: str, guard: z3.BoolRef,
                 constraints: list[Constraint], config: dict[str, Any] | None = None) -> Sym:
        values = list(typing.get_args(ann))
        if config and config.get("use_enum_values"):  # members are stored as their values
            values = [v.value if isinstance(v, enum.Enum) else v for v in values]
        label = f"Literal[{', '.join(repr(v) for v in values)}] ({owner})"
        has_none = None in values
        values = [v for v in values if v is not None]
        if not values:
            return NONE
        kinds = {type(v) for v in values}
        sym: Sym
        if kinds == {bool}:
            sym = SBool(z3.Bool(fresh_name(path)))
            expr = z3.Or(*[sym.e == v for v in values])
        elif kinds == {int}:
            sym = SInt(z3.Int(fresh_name(path)))
            expr = z3.Or(*[sym.e == v for v in values])
        elif kinds == {str}:
            sym = SStr(z3.String(fresh_name(path)))
            expr = z3.Or(*[sym.e == const_to_sym(v).e for v in values])  # type: ignore[attr-defined]
        elif len(kinds) == 1 and issubclass(next(iter(kinds)), enum.Enum):
            cls = next(iter(kinds))
            members = list(cls)
            sym = SEnum(cls, z3.Int(fresh_name(path)))
            expr = z3.Or(*[sym.idx == members.index(v) for v in values])
        else:
            return SOpaque(f"{owner}: Literal of mixed types not modelled",
                           example=values[0])
        self.leaves += 1
        if has_none:
            none = z3.Bool(fresh_name(path + ".none"))
            constraints.append(Constraint(label, _implies(guard, z3.Or(none, expr))))
            return SOpt(none, sym)
        constraints.append(Constraint(label, _implies(guard, expr)))
        return sym

    def _enum(self, cls: type[enum.Enum], path: str, owner: str, guard: z3.BoolRef,
              constraints: list[Constraint], config: dict[str, Any]) -> Sym:
        members = list(cls)
        if not members:
            return SOpaque(f"{owner}: empty enum {cls.__name__}")
        if issubclass(cls, enum.Flag):
            return SOpaque(f"{owner}: {cls.__name__} is a Flag: pydantic accepts every "
                           f"combination of its members, not only the members")
        custom = custom_behaviour(cls, enum.Enum)
        if custom is not None:
            return SOpaque(f"{owner}: {cls.__name__} defines {custom}")
        self.leaves += 1
        if config.get("use_enum_values"):
            values = [m.value for m in members]
            literal = Literal[tuple(values)]  # type: ignore[valid-type]
            return self._literal(literal, path, owner, guard, constraints)
        idx = z3.Int(fresh_name(path))
        constraints.append(Constraint(f"{cls.__name__} ({owner})",
                                      _implies(guard, z3.And(idx >= 0, idx < len(members)))))
        return SEnum(cls, idx)

    def _list(self, element: Any, items: list[Any], path: str, owner: str, guard: z3.BoolRef,
              constraints: list[Constraint], depth: int, container: str,
              config: dict[str, Any]) -> Sym:
        min_len = max([i.min_length for i in items if isinstance(i, at.MinLen)], default=0)
        maxes = [i.max_length for i in items if isinstance(i, at.MaxLen)]
        max_len = min(maxes) if maxes else None
        for item in items:
            if not isinstance(item, (at.MinLen, at.MaxLen)) and type(item).__name__ not in \
                    _IGNORED:
                self._unknown(item, owner)
        if max_len is not None and max_len <= MAX_SLOTS:
            slots = max_len
        else:
            slots = max(DEFAULT_SLOTS, min(min_len, MAX_SLOTS))
        if depth > 2:
            slots = min(slots, 2)
        n = z3.Int(fresh_name(path + ".len"))
        constraints.append(Constraint(None, n >= 0))
        if min_len:
            constraints.append(Constraint(f"min_length={min_len} ({owner})",
                                          _implies(guard, n >= min_len)))
        if max_len is not None:
            constraints.append(Constraint(f"max_length={max_len} ({owner})",
                                          _implies(guard, n <= max_len)))
        exact = max_len is not None and max_len <= slots
        if not exact:
            constraints.append(Constraint(f"len({owner}) ≤ {slots} (verifier bound)",
                                          _implies(guard, n <= slots), kind="bound"))
        element_syms = []
        for index in range(slots):
            active = n > index
            slot_guard = active if is_true(guard) else z3.And(guard, active)
            element_syms.append(self.value(element, [], f"{path}[{index}]", f"{owner}[i]",
                                           slot_guard, constraints, depth + 1, config=config))
        if any(isinstance(s, SOpaque) for s in element_syms):
            first = next(s for s in element_syms if isinstance(s, SOpaque))
            assert isinstance(first, SOpaque)
            return SOpaque(first.reason, example=[])

        def tail() -> Sym:
            return TypeBuilder(self.role).value(element, [], f"{path}[tail]", f"{owner}[i]",
                                                z3.BoolVal(True), [], depth + 1, config=config)

        return SList(n, tuple(element_syms), owner, tail, exact, container)


def _ascii(expr: z3.SeqRef) -> z3.BoolRef:
    return z3.InRe(expr, z3.Star(z3.Range(z3.StringVal("\\u{0}"), z3.StringVal("\\u{7f}"))))


class _NoDefault:
    pass


_NO_DEFAULT = _NoDefault()
# Roles whose values the caller (or user code) builds in Python rather than pydantic
# from JSON: a model instance there may be an instance of a subclass of its class.
_PYTHON_BUILT_ROLES = frozenset({"input", "act_output", "self"})
# Metadata pydantic applies as constraints or ignores for validation.
_KNOWN_METADATA = {"Strict", "BeforeValidator", "AfterValidator", "StringConstraints",
                   "_PydanticGeneralMetadata", "AllowInfNan", "FieldInfo", "PlainSerializer",
                   "WrapSerializer"}
# model_config keys that do not change which values a model's fields hold.
_DOMAIN_NEUTRAL_CONFIG = {
    "title", "model_title_generator", "field_title_generator", "frozen", "populate_by_name",
    "validate_assignment", "arbitrary_types_allowed", "from_attributes", "loc_by_alias",
    "alias_generator", "ignored_types", "json_schema_extra", "json_encoders", "strict",
    "revalidate_instances", "ser_json_timedelta", "ser_json_temporal", "val_temporal_unit",
    "ser_json_bytes", "val_json_bytes", "ser_json_inf_nan", "validate_return",
    "protected_namespaces", "hide_input_in_errors", "defer_build", "plugin_settings",
    "schema_generator", "json_schema_serialization_defaults_required",
    "json_schema_mode_override", "coerce_numbers_to_str", "validation_error_cause",
    "use_attribute_docstrings", "cache_strings", "validate_by_alias", "validate_by_name",
    "serialize_by_alias", "url_preserve_empty_path", "polymorphic_serialization", "extra",
}
# model_config keys the translation reads.
_MODELLED_CONFIG = {"str_to_lower", "str_to_upper", "str_strip_whitespace", "str_min_length",
                    "str_max_length", "use_enum_values", "allow_inf_nan", "validate_default",
                    "regex_engine"}
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


def custom_behaviour(cls: type, base: type) -> str | None:
    """The first behaviour method a subclass of ``base`` defines itself, if any."""
    for klass in cls.__mro__:
        module = klass.__module__
        if klass is base or not issubclass(klass, base) or module in (
                "enum", "pydantic", "hoare.declaration.models") or module.startswith("pydantic."):
            continue
        for name in sorted(_BEHAVIOUR):
            found = klass.__dict__.get("_new_member_" if name == "__new__" else name)
            function = getattr(found, "__func__", found)
            function = getattr(function, "fget", function)
            if getattr(function, "__qualname__", "").startswith(klass.__qualname__ + "."):
                return name  # written by the user (enum machinery adds its own methods)
    return None


def _immutable(ann: Any) -> bool:
    """Values of ``ann`` are built-in immutable scalars (no user method can change
    them)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _immutable(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return all(_immutable(a) for a in typing.get_args(ann))
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


_IGNORED = {"Strict", "BeforeValidator", "AfterValidator", "WrapValidator", "PlainValidator",
            "_PydanticGeneralMetadata", "AllowInfNan", "FieldInfo", "Discriminator",
            "WithJsonSchema", "Tag", "SkipJsonSchema", "Examples", "Doc"}


_COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def _bound(sym: SInt | SFloat, op: str, bound: Fraction) -> z3.BoolRef:
    if isinstance(sym, SInt):
        x: z3.ArithRef = sym.e if bound.denominator == 1 else z3.ToReal(sym.e)
        b = int_val(int(bound)) if bound.denominator == 1 else real_val(bound)
        return _COMPARE[op](x, b)  # type: ignore[no-any-return]
    finite = sym.tag == FIN
    b = real_val(bound)
    compare = _COMPARE[op](sym.r, b)
    infinite = sym.tag == (PINF if op in (">", ">=") else NINF)
    return z3.Or(z3.And(finite, compare), infinite)
