"""``no_such_field``: a predicate reading an attribute its value's type does not have
(``o.lable`` for a field ``label``) raises AttributeError on every call. Read from the
predicate's source, with no z3: each attribute chain on a parameter is looked up on the
parameter's type."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.verifier.checks.model import (
    effective,
)
from hoare.verifier.report.model import CheckResult

__all__ = ["check_fields"]


# -- predicates reading an attribute the type does not have ------------------------------
#
# ``lambda o: o.lable == "x"`` on a model with a field ``label`` raises AttributeError on
# every call: the predicate can never pass. Read from the predicate's source, the
# attribute chains rooted at a parameter are looked up on the parameter's type. The
# verdict is ``fail`` only where the lookup is exact for every value the predicate can
# receive: an output (validated from JSON into exactly the annotated class) of a model
# with ``extra`` not "allow" and no ``__getattr__``/``__getattribute__`` of its own. An
# input (built in Python, maybe an instance of a subclass carrying the attribute), or a
# model with ``extra="allow"``, is a ``warn``. Anything else is not reported.

_OWN_LOOKUP = ("__getattr__", "__getattribute__")


def _library_class(klass: type) -> bool:
    """pydantic's own classes and ``object``: their ``__getattr__`` only serves private
    attributes and extras, which are looked up below."""
    return klass is object or (klass.__module__ or "").startswith("pydantic")


_SCALARS = (str, int, float, bool, bytes, type(None))
# a class that sets instance attributes in code of its own may have any of them
_OWN_INSTANCE_CODE = ("__getattr__", "__getattribute__", "__init__", "model_post_init",
                      "__setattr__", "__new__", "__setstate__", "__post_init__")


def _attribute_names(cls: type) -> set[str] | None:
    """Every attribute an instance of exactly ``cls`` can have, or None when that is
    not knowable: only pydantic models, dataclasses, enums and scalar types are looked
    into, and not one with code of its own that could add attributes (a ``__getattr__``,
    an ``__init__``, a ``model_post_init``...)."""
    import dataclasses
    import enum

    try:
        if not isinstance(cls, type) or cls.__module__ == "typing":
            return None
        model = issubclass(cls, BaseModel)
        if not (model or dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum) or
                cls in _SCALARS):
            return None
        names: set[str] = set()
        for klass in cls.__mro__:
            own = vars(klass)
            if not _library_class(klass) and klass not in _SCALARS and \
                    any(_user_code(own[n]) for n in _OWN_INSTANCE_CODE if n in own):
                return None
            names.update(own)
            slots = own.get("__slots__", ())
            names.update((slots,) if isinstance(slots, str) else
                         slots if isinstance(slots, tuple | list) else ())
        if issubclass(cls, BaseModel):  # ``model``, narrowed for the type checker
            names.update(cls.model_fields)
            names.update(cls.model_computed_fields)
            names.update(getattr(cls, "__private_attributes__", {}) or {})
        if dataclasses.is_dataclass(cls):
            names.update(f.name for f in dataclasses.fields(cls))
        return {n for n in names if isinstance(n, str)}
    except Exception:  # a foreign class may raise from any dunder
        return None


def _user_code(member: object) -> bool:
    """A method written by the user, not made by ``enum``, ``dataclasses`` or pydantic
    (generated code has no file: ``<string>``)."""
    function = getattr(member, "__func__", member)
    module = getattr(function, "__module__", None) or ""
    if module.startswith(("enum", "dataclasses", "pydantic", "builtins")):
        return False
    code = getattr(function, "__code__", None)
    if code is None:  # a builtin slot wrapper (object.__init__ and the like)
        return not isinstance(function, type(object.__init__) | type(object.__new__))
    return getattr(code, "co_filename", "<string>") != "<string>"


def _extra_allowed(cls: type) -> bool:
    try:
        return issubclass(cls, BaseModel) and cls.model_config.get("extra") == "allow"
    except Exception:
        return True


def _field_class(cls: type, attribute: str) -> type | None:
    """The class of ``cls``'s field ``attribute`` when it is one plain class (a nested
    model, a ``str``): the next link of a chain is looked up on it."""
    try:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return None
        info = cls.model_fields.get(attribute)
        annotation = getattr(info, "annotation", None)
        return annotation if isinstance(annotation, type) and \
            not hasattr(annotation, "__origin__") else None
    except Exception:
        return None


def _closest(attribute: str, cls: type, names: set[str]) -> str | None:
    """The field closest to ``attribute`` (difflib), else the closest public name."""
    import difflib

    try:
        fields = [*cls.model_fields, *cls.model_computed_fields] \
            if issubclass(cls, BaseModel) else []
    except Exception:
        fields = []
    for pool in (sorted(fields), sorted(n for n in names if not n.startswith("_"))):
        found = difflib.get_close_matches(attribute, pool, n=1, cutoff=0.6)
        if found:
            return found[0]
    return None


def _chains(node: Any, roots: set[str]) -> Iterator[tuple[str, list[str], Any]]:
    """``(root, [attribute, ...], node)`` of every attribute chain on a root name (the
    longest chain of each, ``o.a.b`` → ``["a", "b"]``); calls on it are not entered."""
    import ast

    parents: dict[int, Any] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load)):
            continue
        above = parents.get(id(sub))
        if isinstance(above, ast.Attribute) and above.value is sub:
            continue  # not the longest chain
        attributes: list[str] = []
        current: Any = sub
        while isinstance(current, ast.Attribute):
            attributes.insert(0, current.attr)
            current = current.value
        if isinstance(current, ast.Name) and current.id in roots:
            yield current.id, attributes, sub


def _rebound(node: Any) -> set[str]:
    """Names bound anywhere inside a predicate (an inner lambda's or comprehension's
    parameter, an assignment, a walrus, a ``for``): a chain on them is not the
    parameter's. Also names narrowed or probed (``isinstance``, ``hasattr``,
    ``getattr``) or read under ``try``: their attributes are guarded."""
    import ast

    names: set[str] = set()
    body = node.body if isinstance(node.body, list) else [node.body]
    for statement in body:
        for sub in ast.walk(statement):
            if isinstance(sub, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = sub.args
                names |= {a.arg for a in (*arguments.posonlyargs, *arguments.args,
                                          *arguments.kwonlyargs)}
                names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
                names.add(sub.id)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                    sub.func.id in ("isinstance", "hasattr", "getattr", "type", "vars",
                                    "setattr", "delattr") and sub.args and \
                    isinstance(sub.args[0], ast.Name):
                names.add(sub.args[0].id)
            elif isinstance(sub, ast.Try | ast.ExceptHandler):
                names |= {n.id for n in ast.walk(sub) if isinstance(n, ast.Name)}
            elif isinstance(sub, ast.Global | ast.Nonlocal):
                names |= set(sub.names)
    return names


def _typed_parameters(desc: ContractDescription, source: PredicateSource, node: Any
                      ) -> list[tuple[str, type, bool]]:
    """(parameter name, class of its values, exact) of each value parameter: ``exact``
    when every value is an instance of exactly that class (an output from JSON)."""
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if source.is_method or inspect.ismethod(source.fn):
        names = names[1:]  # self (or a bound method's own first parameter)
    roles: list[tuple[Any, bool]] = []
    if source.phase == "pre":
        roles.append((desc.input, False))
    else:
        roles.append((desc.output, True))
        if source.takes_input:
            roles.append((desc.used_input, False))
    out = []
    for name, (spec, from_json) in zip(names, roles, strict=False):
        annotation = spec.annotation if spec.wrapped else spec.model
        if isinstance(annotation, type) and not hasattr(annotation, "__origin__"):
            out.append((name, annotation, from_json))
    return out


def check_fields(desc: ContractDescription) -> list[CheckResult]:
    """A ``no_such_field`` check per attribute a predicate reads that its value's type
    does not have (see above for when it is a ``fail`` and when a ``warn``)."""
    from hoare.declaration.source import SourceNotFound, function_node

    results: list[CheckResult] = []
    for source in (*desc.pre, *desc.post):
        if not effective(desc, source):  # policy ignore: never evaluated
            continue
        try:
            node = function_node(source.fn)
        except (SourceNotFound, OSError, TypeError, ValueError, SyntaxError):
            continue
        except Exception:  # a foreign callable
            continue
        parameters = _typed_parameters(desc, source, node)
        guarded = _rebound(node)
        roots = {name for name, _cls, _exact in parameters if name not in guarded}
        by_name = {name: (cls, exact) for name, cls, exact in parameters}
        reported: set[tuple[str, tuple[str, ...]]] = set()
        for root, attributes, _where in _chains(node, roots):
            cls, from_json = by_name[root]
            why = None if from_json else \
                "an input built in Python may be an instance of a subclass that has it"
            for depth, attribute in enumerate(attributes):
                names = _attribute_names(cls)
                if names is None:
                    break
                why = why or _not_exact(cls)
                if attribute in names:
                    nested = _field_class(cls, attribute)
                    if nested is None:
                        break
                    why = why or _replaced_field(cls, attribute)
                    cls = nested
                    continue
                key = (root, tuple(attributes[:depth + 1]))
                if key not in reported:
                    reported.add(key)
                    results.append(_no_such_field(source, root, attributes[:depth + 1], cls,
                                                  names, why))
                break
    return results


def _not_exact(cls: type) -> str | None:
    """Why a value validated as ``cls`` may not be exactly a ``cls`` with only its
    declared attributes, or None."""
    if _extra_allowed(cls):
        return "extra fields are allowed, so an output may carry it"
    try:
        decorators = getattr(cls, "__pydantic_decorators__", None)
        validators = getattr(decorators, "model_validators", {}) or {}
        if any(getattr(v.info, "mode", "after") != "before" for v in validators.values()):
            return "a model validator of its own may return or change the value"
    except Exception:
        return "its validators cannot be read"
    return None


def _replaced_field(cls: type, attribute: str) -> str | None:
    """Why field ``attribute`` of ``cls`` may hold something else than exactly its
    annotated class (a validator or annotation metadata of its own), or None."""
    try:
        if not issubclass(cls, BaseModel):
            raise TypeError(f"{cls!r} is not a pydantic model")  # (as the lookup would)
        info = cls.model_fields[attribute]
        if info.metadata:
            return f"field {attribute!r} has validators or constraints that may replace it"
        decorators = getattr(cls, "__pydantic_decorators__", None)
        for validator in (getattr(decorators, "field_validators", {}) or {}).values():
            if attribute in validator.info.fields or "*" in validator.info.fields:
                return f"a field validator of {attribute!r} may replace it"
    except Exception:
        return "its validators cannot be read"
    return None


def _no_such_field(source: PredicateSource, root: str, chain: list[str], cls: type,
                   names: set[str], why: str | None) -> CheckResult:
    """``fail`` when ``why`` is None (the lookup is exact), else ``warn`` saying why."""
    attribute = chain[-1]
    closest = _closest(attribute, cls, names)
    hint = f" (did you mean {closest!r}?)" if closest else ""
    read = ".".join([root, *chain])
    type_name = getattr(cls, "__qualname__", None) or repr(cls)
    notes = [f"attribute {attribute!r}" + (f", closest field {closest!r}" if closest else "")]
    if why is None:
        message = (f"{source.id} reads {read}, but {type_name} has no field or attribute "
                   f"{attribute!r}{hint}: the predicate raises AttributeError on every "
                   f"output, so it can never pass")
        return CheckResult("no_such_field", "fail", message, predicate=source.id,
                           notes=notes)
    message = (f"{source.id} reads {read}, but {type_name} has no field or attribute "
               f"{attribute!r}{hint}; not a definite failure: {why}")
    return CheckResult("no_such_field", "warn", message, predicate=source.id, notes=notes)
