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

import enum
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types as at
import z3
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from hoare.declaration.models import TypeSpec
from hoare.verifier.search.concrete import BindError, assign
from hoare.verifier.solve.z3util import is_true
from hoare.verifier.translate.metadata import (
    IGNORED_METADATA,
    core_schema_gaps,
    custom_behaviour,
    field_schemas,
    field_validator_names,
    flatten,
    is_immutable,
    last_wins,
    layers_disagree,
)
from hoare.verifier.translate.narrowing import only_narrows
from hoare.verifier.translate.scalars import Constraint, ScalarTypes, implies
from hoare.verifier.translate.values import (
    FIN,
    NINF,
    NONE,
    Opaque,
    SBool,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    fresh_name,
)

__all__ = ["Constraint", "TypeBuilder", "TypedValue"]

MAX_SLOTS = 6  # list elements modelled when the type bounds the length this tightly
DEFAULT_SLOTS = 3  # list elements modelled otherwise
MAX_DEPTH = 6
MAX_LEAVES = 600  # symbolic scalars per value; larger values become opaque


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


class TypeBuilder(ScalarTypes):
    """Builds symbolic values of pydantic types for one role (``input``, ``output``…):
    models, their fields' defaults and validators, optionals, lists; the scalars are
    ``ScalarTypes``'."""

    # -- entry point --------------------------------------------------------------------
    def build(self, spec: TypeSpec, *, owner: str | None = None) -> TypedValue:
        constraints: list[Constraint] = []
        name = owner or (self.role if spec.wrapped else spec.model.__name__)
        root = self.model(spec.model, self.role, name, z3.BoolVal(True), constraints, 0,
                          wrapped=spec.wrapped)
        if isinstance(root, SOpaque):  # pragma: no cover - models are always built
            raise TypeError(root.reason)
        value: Sym = root.fields.get("value", root) if spec.wrapped else root
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
              constraints: list[Constraint], depth: int, *, wrapped: bool = False
              ) -> SModel | SOpaque:
        if depth > MAX_DEPTH:
            return SOpaque(f"{cls.__name__} nested too deeply to model")
        config = dict(cls.model_config)
        opaque = self._model_opacity(cls)
        if opaque is not None:
            self.opaque_models[cls] = opaque
        validators = field_validator_names(cls)
        gaps = core_schema_gaps(cls)
        schemas = field_schemas(cls)
        fields: dict[str, Sym] = {}
        omit: dict[str, object] = {}
        for name, info in cls.model_fields.items():
            field_owner = owner if wrapped else f"{owner}.{name}"
            metadata = list(info.metadata)
            local: list[Constraint] = []
            gap = gaps.get(name) or gaps.get("*") or layers_disagree(
                info.annotation, metadata, schemas.get(name))
            if gap is not None:  # pydantic-core enforces something not modelled
                fields[name] = SOpaque(f"{field_owner}: {gap}")
                continue
            changed = self._validators_change(validators.get(name, []) +
                                              validators.get("*", []), field_owner,
                                              is_immutable(info.annotation))
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
        revalidate it into exactly ``cls``). ``self`` attributes are never validated.

        An input and act's result cross the contract boundary (``TypeSpec.validate``,
        declaration/revalidation.py), which validates every model instance in them
        again, however the caller built it (``model_construct``, a loose subclass, a
        mutation): what pydantic enforces on ``cls``'s fields, and what a validator
        this builder takes as only narrowing checks, holds for them. That is why
        verdicts about inputs may rest on the constraints. The boundary returns exactly
        ``cls``; ``open`` stays True for them all the same (precision, not soundness)."""
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
                self.note_before(f"validator {name} on {owner}")
                continue
            if mode != "after":
                return f"{owner}: {mode} validator {name} may produce any value"
            why = only_narrows(decorator.func, 0, immutable=immutable)
            if why is not None:
                return f"{owner}: validator {name} may change the value: {why}"
            self.note_narrowed(f"validator {name} on {owner}")
        return None


    def _model_opacity(self, cls: type[BaseModel]) -> str | None:
        """Why the values of ``cls`` are not what its fields say (None: they are)."""
        custom = custom_behaviour(cls, BaseModel)
        if custom is not None:
            return f"{cls.__name__} defines {custom}: its instances behave unlike data"
        decorators = getattr(cls, "__pydantic_decorators__", None)
        for name, decorator in getattr(decorators, "model_validators", {}).items():
            mode = getattr(decorator.info, "mode", "after")
            if mode == "before":
                self.note_before(f"model validator {cls.__name__}.{name}")
                continue
            if mode != "after":
                return f"{cls.__name__}.{name} ({mode} model validator) may produce any value"
            scalars = frozenset(n for n, i in cls.model_fields.items()
                                if is_immutable(i.annotation))
            why = only_narrows(decorator.func, 0, immutable_attrs=scalars)
            if why is not None:
                return f"{cls.__name__}.{name} may change the model: {why}"
            self.note_narrowed(f"model validator {cls.__name__}.{name}")
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
            default: object = factory()
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
        combined = z3.Or(together, implies(guard, z3.And(*equalities)))
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
        items = last_wins(flatten(metadata))
        changed = self._metadata_changes(items, owner, is_immutable(ann))
        if changed is not None:
            return SOpaque(changed)
        if ann is int:
            self.leaves += 1
            sym = SInt(z3.Int(fresh_name(path)))
            self.numeric_constraints(sym, items, owner, guard, constraints)
            return sym
        if ann is float:
            self.leaves += 1
            self.uses_float = True
            tag = z3.Int(fresh_name(path + ".tag"))
            fsym = SFloat(tag, z3.Real(fresh_name(path)))
            constraints.append(Constraint(None, z3.And(tag >= FIN, tag <= NINF)))
            self.numeric_constraints(fsym, items, owner, guard, constraints, config=config)
            return fsym
        if ann is bool or ann is type(None) or origin is Literal or (
                isinstance(ann, type) and issubclass(ann, (enum.Enum, BaseModel))):
            self.note_unapplied(items, owner)
        if ann is bool:
            self.leaves += 1
            return SBool(z3.Bool(fresh_name(path)))
        if ann is str:
            self.leaves += 1
            ssym = SStr(z3.String(fresh_name(path)))
            self.string_constraints(ssym, items, owner, guard, constraints, config)
            return ssym
        if ann is type(None):
            return NONE
        try:
            if origin is Literal:
                return self.literal(ann, path, owner, guard, constraints, config)
            if isinstance(ann, type) and issubclass(ann, enum.Enum):
                return self.enumeration(ann, path, owner, guard, constraints, config)
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
                self.note_before(f"a BeforeValidator on {owner}")
            if name == "AfterValidator":
                why = only_narrows(item.func, 0, immutable=immutable)
                if why is not None:
                    return f"{owner}: an AfterValidator may change the value: {why}"
                self.note_narrowed(f"an AfterValidator on {owner}")
            elif name not in _KNOWN_METADATA and not type(item).__module__.startswith(
                    ("annotated_types", "pydantic")) and (
                    hasattr(item, "__get_pydantic_core_schema__")):
                return f"{owner}: {name} customises validation"
        return None

    def _list(self, element: Any, items: list[Any], path: str, owner: str, guard: z3.BoolRef,
              constraints: list[Constraint], depth: int, container: str,
              config: dict[str, Any]) -> Sym:
        min_len = max([i.min_length for i in items if isinstance(i, at.MinLen)], default=0)
        maxes = [i.max_length for i in items if isinstance(i, at.MaxLen)]
        max_len = min(maxes) if maxes else None
        for item in items:
            if not isinstance(item, (at.MinLen, at.MaxLen)) and type(item).__name__ not in \
                    IGNORED_METADATA:
                self.note_unknown(item, owner)
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
                                          implies(guard, n >= min_len)))
        if max_len is not None:
            constraints.append(Constraint(f"max_length={max_len} ({owner})",
                                          implies(guard, n <= max_len)))
        exact = max_len is not None and max_len <= slots
        if not exact:
            constraints.append(Constraint(f"len({owner}) ≤ {slots} (verifier bound)",
                                          implies(guard, n <= slots), kind="bound"))
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
