"""Names and attributes in predicate code, and the translator's state and hooks.

``NameResolver`` is the base of the predicate translator: it holds what one
translation collects (definitions, havoc notes, raised conditions and their
guards, the registry keys used) and implements the ``Semantics`` hooks. It
resolves names as Python does (locals, closure cells, module globals, builtins)
and attributes (model fields, enum ``value``/``name``, module and class
attributes); every value read from outside the predicate is recorded in
``reads`` with a getter, so that a cache sees it change.
"""

from __future__ import annotations

import builtins
import enum
import functools
import inspect
import math
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import z3

from hoare.declaration.description import PredicateSource
from hoare.declaration.source import FunctionNode
from hoare.verifier.solve.context import true
from hoare.verifier.translate.attributes import SelfModel
from hoare.verifier.translate.logic import z3_and
from hoare.verifier.translate.semantics import Semantics
from hoare.verifier.translate.values import (
    Opaque,
    SEnum,
    SModel,
    SNone,
    SObj,
    SOpaque,
    SOpt,
    SSelf,
    Sym,
    const_to_sym,
    is_plain_data,
)

__all__ = ["NameResolver"]


def _custom_truth(cls: type) -> bool:
    """Does a class (below pydantic's BaseModel, Enum and the builtins) define its own
    truth value?"""
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "enum") or klass.__module__.startswith("pydantic"):
            continue
        if "__bool__" in vars(klass) or "__len__" in vars(klass):
            return True
    return False




class NameResolver(Semantics):
    """The translator's state, the ``Semantics`` hooks, guards, labels, and the
    resolution of names and attributes."""

    def __init__(self, source: PredicateSource, node: FunctionNode,
                 self_model: SelfModel | None) -> None:
        self.source = source
        self.node = node
        self.fn = inspect.unwrap(source.fn)
        self.self_model = self_model
        self.defs: list[z3.BoolRef] = []
        self.havocs: list[str] = []
        self.errs: list[tuple[z3.BoolRef, str, str]] = []
        self.guards: list[z3.BoolRef] = []
        self.current = ""
        self.uses_float = False
        closure = getattr(self.fn, "__closure__", None) or ()
        freevars = self.fn.__code__.co_freevars
        self.cells: dict[str, Any] = dict(zip(freevars, closure, strict=False))
        # Python's compiler knows which names are local: reading one that this path has
        # not bound raises UnboundLocalError (it never falls back to a global).
        code = self.fn.__code__
        self.locals = frozenset((*code.co_varnames, *code.co_cellvars))
        self.reads: list[tuple[Callable[[], object], object]] = []
        self.constructs: set[str] = set()  # registry keys of the calls translated

    # -- hooks of Semantics -----------------------------------------------------------
    def truthy(self, value: Sym) -> z3.BoolRef:
        """Python's truth, but a model or enum whose class defines ``__bool__`` or
        ``__len__`` is opaque (the base semantics takes such values as always true)."""
        cls = value.cls if isinstance(value, (SModel, SEnum)) else None
        if cls is not None and _custom_truth(cls):
            raise Opaque(f"{cls.__name__} defines its own truth (__bool__ or __len__)")
        return super().truthy(value)

    def error(self, cond: z3.BoolRef, exc: str) -> None:
        self.errs.append((z3_and(*self.guards, cond), exc, self.current))

    def define(self, constraint: z3.BoolRef) -> None:
        self.defs.append(constraint)

    def havoc_note(self, reason: str) -> None:
        if reason not in self.havocs:
            self.havocs.append(reason)

    @contextmanager
    def guarded(self, cond: z3.BoolRef) -> Iterator[None]:
        self.guards.append(cond)
        try:
            yield
        finally:
            self.guards.pop()

    # -- labels -------------------------------------------------------------------------
    @property
    def message(self) -> str:
        return self.source.message

    @property
    def owner(self) -> str:
        """The predicate in labels: a method's name, a condition's quoted message."""
        if self.source.is_method:
            return getattr(self.source.fn, "__qualname__", self.source.id)
        return f'"{self.message}"'

    # -- names and attributes -----------------------------------------------------------
    def name(self, name: str, env: dict[str, Sym]) -> Sym:
        if name in env:
            return env[name]
        if name in self.locals:
            raise Opaque(f"local {name} may be read before it is assigned")
        if name in self.cells:
            cell = self.cells[name]
            try:
                value = cell.cell_contents
            except ValueError:
                raise Opaque(f"{name} is not bound yet") from None
            self.reads.append((functools.partial(_cell, cell), value))
            return self.global_value(value, name)
        module_globals = getattr(self.fn, "__globals__", {})
        if name in module_globals:
            value = module_globals[name]
            self.reads.append((functools.partial(module_globals.get, name, _MISSING), value))
            return self.global_value(value, name)
        if hasattr(builtins, name):
            return self.global_value(getattr(builtins, name), name)
        raise Opaque(f"unknown name {name}")

    @staticmethod
    def global_value(value: object, name: str) -> Sym:
        if is_plain_data(value):
            return const_to_sym(value)
        return SObj(value)

    def attribute(self, obj: Sym, attr: str) -> Sym:
        if isinstance(obj, SSelf):
            return obj.resolve(attr)
        if isinstance(obj, SOpt):
            self.error(obj.none, "AttributeError")
            return self.attribute(obj.inner, attr)
        if isinstance(obj, SNone):
            self.error(true(), "AttributeError")
            raise Opaque("attribute of None")
        if isinstance(obj, SModel):
            if attr in obj.fields:
                value = obj.fields[attr]
                if isinstance(value, SOpaque) and value.truthy is None:
                    raise Opaque(value.reason)
                return value
            raise Opaque(f"{obj.cls.__name__}.{attr} is not a field")
        if isinstance(obj, SEnum):
            if attr == "value":
                return self.enum_value(obj)
            if attr == "name":
                return self.enum_name(obj)
            raise Opaque(f"enum attribute {attr}")
        if isinstance(obj, SObj):
            target = obj.obj
            if isinstance(target, types.ModuleType):
                if target is math and attr in ("inf", "nan", "pi", "e", "tau"):
                    return const_to_sym(getattr(math, attr))
                found = getattr(target, attr, _MISSING)
                if found is _MISSING:
                    raise Opaque(f"{target.__name__}.{attr} not found")
                self.reads.append((functools.partial(_attribute, target, attr), found))
                return self.global_value(found, attr)
            if isinstance(target, type):
                try:
                    static = inspect.getattr_static(target, attr)
                except AttributeError:
                    raise Opaque(f"{target.__name__}.{attr} not found") from None
                if issubclass(target, enum.Enum) and attr in target.__members__:
                    return const_to_sym(target.__members__[attr])
                self.reads.append((functools.partial(_static_attribute, target, attr), static))
                if is_plain_data(static):
                    return const_to_sym(static)
                return SObj(static)
        raise Opaque(f"attribute .{attr} of a {obj.kind}")


_MISSING = object()


def _attribute(obj: object, attr: str) -> object:
    """``obj.attr`` now, or ``_MISSING`` (a ``reads`` getter: has it changed?)."""
    return getattr(obj, attr, _MISSING)


def _static_attribute(cls: type, attr: str) -> object:
    """``cls.attr`` as stored, without running descriptors, or ``_MISSING``."""
    return inspect.getattr_static(cls, attr, _MISSING)


def _cell(cell: Any) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING
