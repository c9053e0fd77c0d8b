"""``self.<attr>`` in method predicates: where its value comes from.

* an instance being checked (``verify(instance)``, a pipeline stage, the run-time
  pre-flight): its attribute, when it is plain data (numbers, strings, tuples…);
* a class verified without an instance: the literal assigned in ``__init__`` or
  the literal default of the ``__init__`` parameter assigned to it (reported as
  an assumption), else a class attribute; otherwise a free symbol of the
  annotated type: any value is assumed, and the report says so.

The class attribute is the value only when nothing else can set the attribute:
every method of the user's classes (helpers, a parent's ``__init__``,
``__post_init__``, ``model_post_init``…) is read, and an attribute stored anywhere
(``self.a, self.b = …`` included) is free; ``setattr``, ``__dict__``, ``vars``,
``__setattr__``/``__getattr__`` overrides or a method whose source is missing make
every attribute opaque. Properties, methods and data descriptors are opaque:
reading them could run code.
"""

from __future__ import annotations

import ast
import inspect
import types
import typing
from collections.abc import Callable

import z3

from hoare.declaration.source import SourceNotFound, function_node
from hoare.unmodelled import Unmodelled
from hoare.verifier.translate.values import Opaque, SOpaque, Sym, const_to_sym, is_plain_data

__all__ = ["InstanceSelf", "SelfModel", "StaticSelf", "plain"]


class SelfModel:
    """Resolves ``self.<attr>`` of a method predicate."""

    def __init__(self) -> None:
        self.read: list[str] = []  # attributes read by the predicate being translated
        self.free: dict[str, Sym] = {}  # free symbols, shared by all predicates
        self.assumptions: dict[str, str] = {}  # attribute -> assumption text

    def begin(self) -> None:
        """Start translating one predicate."""
        self.read = []

    def resolve(self, name: str) -> Sym:
        if name not in self.read:
            self.read.append(name)
        return self.lookup(name)

    def lookup(self, name: str) -> Sym:  # pragma: no cover - abstract
        raise NotImplementedError


def plain(value: object, what: str) -> Sym:
    if is_plain_data(value):
        return const_to_sym(value)
    raise Opaque(f"{what} is a {type(value).__name__}, not plain data")


def _class_attribute(cls: type, name: str) -> Sym:
    try:
        static = inspect.getattr_static(cls, name)
    except AttributeError:
        raise Opaque(f"self.{name} is not defined on {cls.__qualname__}") from None
    if isinstance(static, (property, types.FunctionType, staticmethod, classmethod)) or \
            callable(static):
        raise Opaque(f"self.{name} is a {type(static).__name__}")
    return plain(static, f"self.{name}")


_HOOKS = ("__getattr__", "__getattribute__", "__setattr__", "__delattr__")


def _user_classes(cls: type) -> list[type]:
    """The classes of ``cls``'s MRO whose code is the user's (not hoare's, not builtins)."""
    return [k for k in cls.__mro__ if k is not object and
            not str(getattr(k, "__module__", "")).startswith(("hoare.", "builtins", "abc",
                                                              "typing"))]


def _attribute_hook(cls: type) -> str | None:
    """The attribute-access hook a user class defines (``__getattr__``…), if any."""
    for klass in _user_classes(cls):
        for name in _HOOKS:
            if name in klass.__dict__:
                return f"{klass.__qualname__}.{name}"
    return None


class InstanceSelf(SelfModel):
    """``self`` is a concrete instance: attributes are read from it (plain data only)."""

    def __init__(self, instance: object) -> None:
        super().__init__()
        self.instance = instance

    def lookup(self, name: str) -> Sym:
        cls = type(self.instance)
        hook = _attribute_hook(cls)
        if hook is not None:
            raise Opaque(f"self.{name}: {hook} decides attribute access")
        static = inspect.getattr_static(cls, name, None)
        if hasattr(type(static), "__set__") or hasattr(type(static), "__delete__"):
            raise Opaque(f"self.{name} is a data descriptor ({type(static).__name__})")
        data = getattr(self.instance, "__dict__", {})
        if name in data:
            return plain(data[name], f"self.{name}")
        return _class_attribute(cls, name)


class StaticSelf(SelfModel):
    """``self`` of a class being verified without an instance: attributes come from
    literal assignments and literal parameter defaults of ``__init__``, else class
    attributes; otherwise a free symbol of the annotated type (an assumption)."""

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls
        self._init = _init_assignments(cls)
        self._dynamic = _attribute_hook(cls)
        self._written: dict[str, int] = {}
        if self._dynamic is None:
            try:
                self._written = _stored_attributes(cls)
            except _Dynamic as error:
                self._dynamic = str(error)

    def lookup(self, name: str) -> Sym:
        if name in self.free:
            return self.free[name]
        if self._dynamic is not None:
            raise Opaque(f"self.{name} is not known statically: {self._dynamic}")
        found = self._init.get(name)
        if found is not None and found[0] in ("const", "default") and \
                self._written.get(name, 0) > 1:
            found = ("free", None, found[2])  # also set elsewhere (a helper, a parent)
        if found is None and self._written.get(name):
            found = ("free", None, _class_hint(self.cls, name))
        if found is None:
            return _class_attribute(self.cls, name)
        kind, payload, annotation = found
        if kind == "const":
            return plain(payload, f"self.{name}")
        if kind == "default":
            if is_plain_data(payload):
                self.assumptions[name] = (f"self.{name} = {payload!r} (the default of "
                                          f"__init__; verify an instance for other values)")
                return const_to_sym(payload)
        sym = _free_symbol(name, annotation)
        self.free[name] = sym
        self.assumptions[name] = (
            f"self.{name} is not known statically: any {_type_name(annotation)} is assumed")
        return sym


class _Dynamic(Unmodelled):
    """The user's methods may set any attribute (``setattr``, ``__dict__``…): what
    ``self.<name>`` holds is not modelled, so it is an ``Unmodelled`` reason."""


_DYNAMIC_CALLS = {"setattr", "delattr", "vars", "__setattr__", "__delattr__"}


def _functions(klass: type) -> list[Callable[..., object]]:
    """The functions defined in ``klass``'s body (methods, static/class methods,
    property accessors)."""
    out: list[Callable[..., object]] = []
    for value in klass.__dict__.values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            out += [f for f in (value.fget, value.fset, value.fdel) if f is not None]
        elif isinstance(value, types.FunctionType):
            out.append(value)
    return out


def _stored_attributes(cls: type) -> dict[str, int]:
    """How many times each attribute name is stored (``x.name = …``, augmented,
    in a tuple target, deleted) in the user's methods; raises ``_Dynamic`` when a
    method may set attributes by name or its source cannot be read."""
    counts: dict[str, int] = {}
    for klass in _user_classes(cls):
        for function in _functions(klass):
            name = getattr(function, "__qualname__", "?")
            try:
                node = function_node(function)
            except SourceNotFound:
                raise _Dynamic(f"the source of {name} is not available") from None
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute):
                    if sub.attr == "__dict__" or (sub.attr in _DYNAMIC_CALLS):
                        raise _Dynamic(f"{name} uses .{sub.attr}")
                    if isinstance(sub.ctx, (ast.Store, ast.Del)):
                        counts[sub.attr] = counts.get(sub.attr, 0) + 1
                elif isinstance(sub, ast.Name) and sub.id in _DYNAMIC_CALLS:
                    raise _Dynamic(f"{name} calls {sub.id}()")
    return counts


def _class_hint(cls: type, name: str) -> object:
    try:
        return typing.get_type_hints(cls).get(name)
    except Exception:  # a hint that does not resolve: no annotation
        return None


def _type_name(annotation: object) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _free_symbol(name: str, annotation: object) -> Sym:
    from hoare.verifier.translate.types import TypeBuilder

    if annotation is None or annotation is inspect.Parameter.empty:
        raise Opaque(f"self.{name} is not known statically and has no type annotation")
    value = TypeBuilder("self").value(annotation, [], f"self.{name}", f"self.{name}",
                                      z3.BoolVal(True), [], 0)
    if isinstance(value, SOpaque):
        raise Opaque(value.reason)
    return value


def _init_assignments(cls: type) -> dict[str, tuple[str, object, object]]:
    """``self.x = ...`` at the top level of the user's ``__init__``: (kind, payload,
    annotation) with kind ``const`` (a literal), ``default`` (a parameter's default)
    or ``free``. Attributes assigned in nested blocks or twice are ``free``."""
    init = None
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__:
            candidate = klass.__dict__["__init__"]
            if getattr(candidate, "__module__", "").startswith("hoare.") or klass is object:
                break
            init = candidate
            break
    if init is None:
        return {}
    try:
        node = function_node(init)
    except SourceNotFound:
        return {}
    if isinstance(node, ast.Lambda):
        return {}
    signature = inspect.signature(init)
    try:
        hints = typing.get_type_hints(init)
    except Exception:
        hints = {}
    class_hints: dict[str, object] = {}
    try:
        class_hints = typing.get_type_hints(cls)
    except Exception:
        class_hints = {}
    self_name = node.args.args[0].arg if node.args.args else "self"
    out: dict[str, tuple[str, object, object]] = {}
    counts: dict[str, int] = {}
    for stmt in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets = [stmt.target]
        for target in targets:
            for part in ast.walk(target):  # self.a, self.b = ... stores both
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) \
                        and part.value.id == self_name:
                    counts[part.attr] = counts.get(part.attr, 0) + 1
    for stmt in node.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            if len(targets) != 1 or value is None:
                continue
            target = targets[0]
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == self_name):
                continue
            name = target.attr
            annotation = class_hints.get(name)
            if counts.get(name, 0) != 1:
                out[name] = ("free", None, annotation)
                continue
            try:
                out[name] = ("const", ast.literal_eval(value), annotation)
                continue
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
            if isinstance(value, ast.Name) and value.id in signature.parameters:
                parameter = signature.parameters[value.id]
                annotation = hints.get(value.id, annotation)
                if parameter.default is not inspect.Parameter.empty:
                    out[name] = ("default", parameter.default, annotation)
                else:
                    out[name] = ("free", None, annotation)
                continue
            out[name] = ("free", None, annotation)
    for name in counts:
        if name not in out:
            out[name] = ("free", None, class_hints.get(name))
    return out
