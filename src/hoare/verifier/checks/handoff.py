"""The hand-off of a pipeline, in z3: the condition that stage B accepts what stage A
returns, modelled as ``Pipeline`` hands it over (``TypeSpec.validate``): an instance of
the same model class, at the top or nested, is checked again, which gives back A's
values unchanged (they are what validation produced: a before validator is not run
again on them, an after validator only when it narrows, declaration/revalidation.py);
another model is dumped (``model_dump()``: field names or serialisation aliases,
excluded fields left out, computed fields added) and validated
in Python mode (aliases or names per ``validate_by_alias``/``validate_by_name``,
``extra``, defaults of absent fields, strict mode, lax conversions); a native value is
validated as ``{"value": v}``. Whatever of that is not modelled (serialisers, B's
before-validators, string transforms, alias paths…) makes the ``Link`` inexact, and
values where a conversion is not modelled (ints beyond 2**53 becoming floats) are a
*region* a ``pass`` must prove unreachable."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import cast

import z3
from pydantic import BaseModel

from hoare.verifier.checks.model import (
    ContractModel,
)
from hoare.verifier.search.concrete import BindError, assign
from hoare.verifier.solve.context import true
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.values import (
    FIN,
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
)

__all__ = ["Link", "handoff"]


@dataclass
class Link:
    """How B's input is made from A's output: definitions (always true), the
    condition that pydantic accepts the conversion, whether it is exact, and the
    regions of A's outputs where the conversion is not modelled (a ``pass`` needs
    each of them unreachable)."""

    defs: list[z3.BoolRef] = field(default_factory=list)
    valid: list[z3.BoolRef] = field(default_factory=list)
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    regions: list[tuple[str, z3.BoolRef]] = field(default_factory=list)

    def inexact(self, note: str) -> z3.BoolRef:
        self.exact = False
        self.notes.append(note)
        return z3.Bool(fresh_name("link.valid"))

    def region(self, note: str, cond: z3.BoolRef) -> z3.BoolRef:
        """Not modelled where ``cond`` holds: B's value there is unconstrained."""
        self.regions.append((note, cond))
        return z3.Or(z3.Not(cond), z3.Bool(fresh_name("link.valid")))


@dataclass(frozen=True)
class _Ctx:
    """How B validates one value: strictly, with a string transformation, from a
    dump (model instances became dicts) or from the object itself."""

    strict: bool = False
    transforms: bool = False
    dumped: bool = False


_EXACT_FLOAT_INTS = 2**53  # integers of at most this magnitude convert to float exactly


def handoff(a: ContractModel, b: ContractModel, link: Link) -> z3.BoolRef:
    """The condition that B accepts A's result, as ``Pipeline`` hands it over:
    ``TypeSpec.validate`` — the same model class passes as it is, another model
    is dumped (``model_dump()``) and validated, a native value is validated in
    Python mode (wrapped as ``{"value": v}`` when B's input is native)."""
    a_spec, b_spec = a.desc.output, b.desc.input
    a_value, b_value = a.output.value, b.input.value
    if isinstance(a_value, SOpaque):
        return link.inexact(f"A's output: {a_value.reason}")
    if b_spec.wrapped:
        info = b_spec.model.model_fields["value"]
        ctx = _field_ctx(b_spec.model, info, _Ctx())
        if ctx is None:
            return link.inexact("B's input validation has its own validators")
        return _convert(a_value, b_value, link, b.desc.input.name, ctx)
    if isinstance(b_value, SOpaque):
        return link.inexact(f"B's input: {b_value.reason}")
    if not a_spec.wrapped:
        assert isinstance(a_value, SModel) and isinstance(b_value, SModel)
        if a_spec.model is b_spec.model:
            return _same(a_value, b_value, link, b.desc.input.name)
        if issubclass(a_spec.model, b_spec.model):
            return link.inexact("A's output is a subclass instance of B's input model")
        return _from_dump(a_value, b_value, link, b.desc.input.name)
    assert isinstance(b_value, SModel)  # B's input is not wrapped: a model (as above)
    return _validate_top(a_value, b_value, link, b.desc.input.name)


def _validate_top(a: Sym, b: SModel, link: Link, where: str) -> z3.BoolRef:
    """``B.model_validate`` of A's native value: another model's instance is dumped
    first (``TypeSpec.validate``); None, numbers, strings and lists are refused."""
    if isinstance(a, SOpt):
        return z3_and(z3_not(a.none), _validate_top(a.inner, b, link, where))
    if isinstance(a, SModel):
        if a.cls is b.cls:
            return _same(a, b, link, where)
        if issubclass(a.cls, b.cls):
            return link.inexact(f"{where}: a subclass instance of {b.cls.__name__}")
        return _from_dump(a, b, link, where)
    if isinstance(a, (SNone, SInt, SBool, SFloat, SStr, SEnum, SList)):
        return z3.BoolVal(False)
    return link.inexact(f"{where}: a {a.kind} validated as {b.cls.__name__}")


def _same(a: Sym, b: Sym, link: Link, where: str) -> z3.BoolRef:
    """B receives A's very object (no validation)."""
    if isinstance(a, SModel) and isinstance(b, SModel) and a.cls is b.cls:
        for name in a.fields:
            _same(a.fields[name], b.fields[name], link, f"{where}.{name}")
        return true()
    if isinstance(a, SOpaque) or isinstance(b, SOpaque):
        return link.inexact(f"{where}: a type is not modelled")
    return _convert(a, b, link, where, _Ctx())


def _field_ctx(cls: type, info: object, outer: _Ctx) -> _Ctx | None:
    """How ``cls`` validates a field; None when validators of its own run on it
    before or around the type's validation (the hand-off is then not modelled)."""
    config = getattr(cls, "model_config", {})
    decorators = getattr(cls, "__pydantic_decorators__", None)
    name = next((n for n, i in getattr(cls, "model_fields", {}).items() if i is info), None)
    for decorator in getattr(decorators, "field_validators", {}).values():
        fields = decorator.info.fields
        if (name in fields or "*" in fields) and decorator.info.mode != "after":
            return None
    annotation = getattr(info, "annotation", None)
    metadata = list(getattr(info, "metadata", []))
    if _has_validator([annotation, *metadata]):
        return None
    strict = bool(config.get("strict"))
    for item in metadata:
        if type(item).__name__ in ("Strict", "_PydanticGeneralMetadata") and \
                getattr(item, "strict", None) is not None:
            strict = bool(item.strict)
    transforms = any(config.get(k) for k in ("str_strip_whitespace", "str_to_lower",
                                             "str_to_upper", "coerce_numbers_to_str"))
    transforms = transforms or _has_transform([annotation, *metadata])
    return _Ctx(strict=strict, transforms=transforms, dumped=outer.dumped)


def _walk_annotation(items: list[object], depth: int = 0) -> list[object]:
    out: list[object] = []
    for item in items:
        out.append(item)
        if depth < 8:
            args = [a for a in typing.get_args(item)]
            metadata = list(getattr(item, "__metadata__", ()))
            out.extend(_walk_annotation([*args, *metadata], depth + 1))
            inner = getattr(item, "metadata", None)
            if type(item).__name__ == "FieldInfo" and inner:
                out.extend(_walk_annotation(list(inner), depth + 1))
    return out


def _has_validator(items: list[object]) -> bool:
    """A validator that sees the raw value, or a custom schema hook."""
    for item in _walk_annotation(items):
        name, module = type(item).__name__, type(item).__module__
        if name in ("BeforeValidator", "WrapValidator", "PlainValidator"):
            return True
        if hasattr(item, "__get_pydantic_core_schema__") and not isinstance(item, type) \
                and not module.startswith(("pydantic", "annotated_types")):
            return True
    return False


def _has_transform(items: list[object]) -> bool:
    return any(type(i).__name__ in ("StringConstraints", "_PydanticGeneralMetadata") and (
        getattr(i, "strip_whitespace", None) or getattr(i, "to_lower", None) or
        getattr(i, "to_upper", None) or getattr(i, "coerce_numbers_to_str", None))
        for i in _walk_annotation(items))


def _dump_keys(cls: type, link: Link, where: str) -> dict[str, str | None] | None:
    """A's ``model_dump()`` keys → the field whose value is dumped unchanged under
    that key (None: a value not modelled, such as a computed field or a serialised
    one). None when the dump as a whole is not modelled."""
    decorators = getattr(cls, "__pydantic_decorators__", None)
    config = getattr(cls, "model_config", {})
    if getattr(decorators, "model_serializers", None):
        link.inexact(f"{where}: {cls.__name__} has a model_serializer")
        return None
    if config.get("extra") == "allow":
        link.inexact(f"{where}: {cls.__name__} may carry extra fields")
        return None
    serialised = {n for d in getattr(decorators, "field_serializers", {}).values()
                  for n in d.info.fields}
    by_alias = bool(config.get("serialize_by_alias"))
    keys: dict[str, str | None] = {}
    for name, info in getattr(cls, "model_fields", {}).items():
        if info.exclude is True:
            continue
        if info.exclude not in (None, False) or getattr(info, "exclude_if", None) is not None:
            link.inexact(f"{where}.{name}: a partial or conditional exclude")
            return None
        key = (info.serialization_alias or info.alias or name) if by_alias else name
        plain = name not in serialised and "*" not in serialised and not any(
            type(i).__name__ in ("PlainSerializer", "WrapSerializer")
            for i in _walk_annotation([info.annotation, *info.metadata]))
        keys[key] = name if plain else None
    for name, computed in getattr(cls, "__pydantic_computed_fields__", {}).items():
        key = (getattr(computed, "alias", None) or name) if by_alias else name
        keys[key] = None
    return keys


def _from_dump(a: SModel, b: SModel, link: Link, where: str) -> z3.BoolRef:
    """B's model validated (Python mode) from ``a.model_dump()``."""
    keys = _dump_keys(a.cls, link, where)
    if keys is None:
        return z3.Bool(fresh_name("link.valid"))
    config = getattr(b.cls, "model_config", {})
    decorators = getattr(b.cls, "__pydantic_decorators__", None)
    if any(d.info.mode != "after" for d in getattr(decorators, "model_validators",
                                                    {}).values()):
        return link.inexact(f"{where}: {b.cls.__name__} has a model validator that sees "
                            f"the raw data")
    by_alias = config.get("validate_by_alias", True) is not False
    by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
    consumed: set[str] = set()
    conds: list[z3.BoolRef] = []
    model = cast("type[BaseModel]", b.cls)  # a model's value: its class is a pydantic model
    for name, info in model.model_fields.items():
        candidates: list[str] = []
        if by_alias:
            alias = info.validation_alias
            if alias is not None and not isinstance(alias, str):
                return link.inexact(f"{where}.{name}: AliasPath/AliasChoices")
            candidates.append(alias or info.alias or name)
        if by_name and name not in candidates:
            candidates.append(name)
        present = [k for k in candidates if k in keys]
        if len(present) > 1:
            return link.inexact(f"{where}.{name}: both its alias and its name are dumped")
        sym_b = b.fields[name]
        if not present:
            if info.is_required():
                return z3.BoolVal(False)  # B requires a field A's dump never has
            conds.append(_default(info, sym_b, config, link, f"{where}.{name}"))
            continue
        key = present[0]
        consumed.add(key)
        source = keys[key]
        if source is None:
            conds.append(link.inexact(f"{where}.{name}: A dumps a computed or serialised "
                                      f"value"))
            continue
        if isinstance(sym_b, SOpt) and not _admits_none(info.annotation):
            # its None case is the unvalidated default, never a validated value
            link.defs.append(z3.Not(sym_b.none))
            sym_b = sym_b.inner
        ctx = _field_ctx(b.cls, info, _Ctx(dumped=True))
        if ctx is None:
            conds.append(link.inexact(f"{where}.{name}: B's validators see the raw value"))
            continue
        conds.append(_convert(a.fields[source], sym_b, link, f"{where}.{name}", ctx))
    if config.get("extra") == "forbid" and set(keys) - consumed:
        return z3.BoolVal(False)  # A's dump has a key B forbids
    return z3_and(*conds)


def _admits_none(annotation: object) -> bool:
    """Does validation accept None for ``annotation``?"""
    if annotation is None or annotation is type(None) or annotation is typing.Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return None in typing.get_args(annotation)
    return any(_admits_none(a) for a in typing.get_args(annotation)) if origin in (
        typing.Union, types.UnionType) else False


def _default(info: object, sym_b: Sym, config: dict[str, object], link: Link,
             where: str) -> z3.BoolRef:
    """B's field left out: it takes its default, unvalidated unless validate_default."""
    validate = getattr(info, "validate_default", None)
    if validate is None:
        validate = bool(config.get("validate_default"))
    factory = getattr(info, "default_factory", None)
    if validate or (factory is not None and factory not in (list, tuple, str, int, float,
                                                            bool)):
        return link.inexact(f"{where}: its default is computed or validated")
    default = factory() if factory is not None else getattr(info, "default", None)
    if isinstance(sym_b, SOpaque):
        return true()  # what B reads there is opaque anyway
    try:
        assignment = assign(sym_b, default, strict=True)
    except (BindError, Opaque):
        return link.inexact(f"{where}: its default is not modelled")
    if not assignment.exact:
        return link.inexact(f"{where}: its default is not modelled")
    link.defs.extend(assignment.equalities())
    return true()


def _convert(a: Sym, b: Sym, link: Link, where: str, ctx: _Ctx) -> z3.BoolRef:
    """Relate B's value ``b`` to A's value ``a`` (a Python object, or part of a
    dump) validated by pydantic in Python mode; return when it is accepted."""
    if isinstance(a, SOpaque) or isinstance(b, SOpaque):
        return link.inexact(f"{where}: a type is not modelled")
    if isinstance(b, SOpt):
        if isinstance(a, SNone):
            link.defs.append(b.none)
            return true()
        if isinstance(a, SOpt):
            link.defs.append(b.none == a.none)
            inner = _convert(a.inner, b.inner, link, where, ctx)
            return z3_or(a.none, inner)
        link.defs.append(z3.Not(b.none))
        return _convert(a, b.inner, link, where, ctx)
    if isinstance(a, SOpt):
        inner = _convert(a.inner, b, link, where, ctx)
        return z3_and(z3_not(a.none), inner)
    if isinstance(a, SNone):
        return z3.BoolVal(isinstance(b, SNone))
    if isinstance(b, SNone):
        return z3.BoolVal(False)
    if isinstance(a, SStr) and isinstance(b, SStr):
        if ctx.transforms:
            return link.inexact(f"{where}: B transforms strings")
        link.defs.append(a.e == b.e)
        return true()
    if type(a) is type(b) and isinstance(a, (SInt, SBool)) and isinstance(b, (SInt, SBool)):
        link.defs.append(a.e == b.e)
        return true()
    if isinstance(a, SFloat) and isinstance(b, SFloat):
        link.defs.append(z3.And(a.tag == b.tag, a.r == b.r))
        return true()
    if isinstance(a, SInt) and isinstance(b, SFloat):  # strict mode accepts it too
        small = z3.And(a.e <= _EXACT_FLOAT_INTS, a.e >= -_EXACT_FLOAT_INTS)
        link.defs.append(z3.Implies(small, z3.And(b.tag == FIN, b.r == z3.ToReal(a.e))))
        return link.region(f"{where}: an int beyond 2**53 is rounded to a float",
                           z3.Not(small))
    if isinstance(a, SBool) and isinstance(b, (SInt, SFloat)):
        if ctx.strict:
            return z3.BoolVal(False)
        one = z3.If(a.e, z3.IntVal(1), z3.IntVal(0))
        link.defs.append(b.e == one if isinstance(b, SInt) else
                         z3.And(b.tag == FIN, b.r == z3.ToReal(one)))
        return true()
    if isinstance(a, SFloat) and isinstance(b, SInt):
        if ctx.strict:
            return z3.BoolVal(False)
        whole = z3.And(a.tag == FIN, z3.IsInt(a.r))
        small = z3.And(a.r <= _EXACT_FLOAT_INTS, a.r >= -_EXACT_FLOAT_INTS)
        link.defs.append(z3.Implies(z3.And(whole, small), z3.ToReal(b.e) == a.r))
        big = link.region(f"{where}: a float beyond 2**53 to an int (pydantic's limit is "
                          f"the 64-bit range)", z3.And(whole, z3.Not(small)))
        return z3.And(whole, big)
    if isinstance(a, SInt) and isinstance(b, SBool):
        if ctx.strict:
            return z3.BoolVal(False)
        link.defs.append(b.e == (a.e == 1))
        return z3.Or(a.e == 0, a.e == 1)
    if isinstance(a, SEnum) and isinstance(b, SEnum) and a.cls is b.cls:
        link.defs.append(a.idx == b.idx)
        return true()
    if isinstance(a, SStr) and isinstance(b, SEnum) and all(
            isinstance(m.value, str) and type(m.value) is str for m in b.members):
        if ctx.strict:
            return z3.BoolVal(False)  # Python-mode strict wants a member
        conds = []
        for index, member in enumerate(b.members):
            same = a.e == cast(SStr, const_to_sym(member.value)).e  # (a str member: an SStr)
            link.defs.append(z3.Implies(same, b.idx == index))
            conds.append(same)
        return z3_or(*conds)
    if isinstance(a, SList) and isinstance(b, SList):
        if a.container != b.container and ctx.strict:
            return link.inexact(f"{where}: a {a.container} for a strict {b.container}")
        link.defs.append(a.n == b.n)
        valid = []
        for index, slot_b in enumerate(b.slots):
            if index < len(a.slots):
                ok = _convert(a.slots[index], slot_b, link, f"{where}[{index}]", ctx)
            else:
                ok = link.inexact(f"{where}: more elements than modelled")
            valid.append(z3.Implies(b.n > index, ok))
        if not b.exact:
            valid.append(z3.Implies(b.n > len(b.slots),
                                    link.inexact(f"{where}: elements past the bound")))
        return z3_and(*valid)
    if isinstance(a, SModel) and isinstance(b, SModel):
        if ctx.dumped:
            return _from_dump(a, b, link, where)
        if a.cls is b.cls:  # checked again at B's boundary: A's values, unchanged
            return _same(a, b, link, where)
        if getattr(b.cls, "model_config", {}).get("from_attributes") or \
                issubclass(a.cls, b.cls):
            return link.inexact(f"{where}: {a.cls.__name__} → {b.cls.__name__} not modelled")
        return z3.BoolVal(False)  # another model's instance is not B's model
    if isinstance(a, SModel) and isinstance(b, (SInt, SBool, SFloat, SStr, SEnum, SList)):
        return z3.BoolVal(False)
    if isinstance(b, SModel) and isinstance(a, (SInt, SBool, SFloat, SStr, SEnum, SList)):
        return z3.BoolVal(False)
    return link.inexact(f"{where}: conversion {a.kind} → {b.kind} not modelled")
