"""``tool(fn)``: a function an agent may call, with a name, a description (its
docstring) and the JSON schema of its parameters, built by pydantic from the type hints.
``@pre``/``@post`` work above or below ``@tool``.

The schema is the function's signature, not a pydantic model's namespace: each
parameter is a field under a neutral name with the parameter's name as its alias, so a
parameter pydantic would refuse or hide (``model_config``, ``model_dump``, ``_x``,
``__x``) is a property like any other. Hints come from the function that holds the
annotations (through partials, ``functools.wraps`` and callable objects), one by one,
so one unresolvable hint leaves only its own parameter untyped. The schema is strict
JSON: a default JSON cannot carry (``nan``, ``inf``, bytes that are not UTF-8) is left
out of it. A call binds the model's arguments as Python would, positional-only
parameters included (``parameters_error`` is that binding's verdict, checked before a
call).
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from hoare.declaration.strict_schema import StrictJsonSchema

__all__ = ["NAME_PATTERN", "Tool", "derived_name", "tool"]


class Tool:
    """A callable tool. Calling it runs the function with its contracts checked."""

    def __init__(self, func: Callable[..., Any], name: str | None = None,
                 description: str | None = None) -> None:
        from hoare.errors import ContractDefinitionError

        if not callable(func):
            raise ContractDefinitionError(
                f"a tool must be a callable, got {type(func).__qualname__}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ContractDefinitionError(
                f"a tool's name must be a non-empty str, got {type(name).__qualname__}")
        if description is not None and not isinstance(description, str):
            raise ContractDefinitionError(f"a tool's description must be a str, got "
                                          f"{type(description).__qualname__}")
        self.func = func
        self.name = name or derived_name(func)
        doc = inspect.getdoc(func) or ""
        self.description = description if description is not None else \
            doc.split("\n\n", 1)[0].strip()
        self._signature = _signature(func, self.name)
        self._parameters: dict[str, Any] | None = None

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the parameters, built on first use: only a tool offered to
        a model needs it (``ContractAgent`` reads it when it is built), so a plain
        ``@pre`` function whose parameters pydantic cannot describe is still a function
        ``hoare verify`` finds. Raises ``ContractDefinitionError`` for such a one."""
        if self._parameters is None:
            self._parameters = _parameters_schema(self.func, self._signature, self.name)
        return self._parameters

    @parameters.setter
    def parameters(self, schema: dict[str, Any]) -> None:
        self._parameters = schema

    @property
    def _contracts(self) -> Any:
        """The ``ContractSpec`` of the function (None when it has no condition)."""
        return getattr(self.func, "_contracts", None)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        """The function on these arguments; a positional-only parameter given by name
        (as a model's JSON arguments give every parameter) is passed by position."""
        if not args and kwargs and self._signature is not None:
            args, kwargs = _by_kind(self._signature, kwargs)
        return self.func(*args, **kwargs)

    def parameters_error(self, arguments: Mapping[str, Any]) -> str | None:
        """What is wrong with calling the tool on ``arguments`` (by name), as Python's
        binding of its signature sees it: the unknown and the missing arguments, or
        None when the call binds."""
        signature = self._signature
        if signature is None:
            return None  # a callable with no signature: the call itself decides
        named = {p.name: p for p in signature.parameters.values()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        unknown = [] if takes_any else sorted(set(arguments) - set(named))
        missing = sorted(n for n, p in named.items()
                         if p.default is p.empty and n not in arguments)
        if not unknown and not missing:
            args, kwargs = _by_kind(signature, dict(arguments))
            try:
                signature.bind(*args, **kwargs)
            except TypeError as error:  # e.g. a positional-only one after a gap
                return f"{self.name}: {error}"
            return None
        return f"{self.name}: " + "; ".join(
            [f"unknown argument(s) {unknown}"] * bool(unknown) +
            [f"missing argument(s) {missing}"] * bool(missing))

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The names OpenAI's tool calling takes (``^[a-zA-Z0-9_-]{1,64}$``): a native tool
call names its tool, and a provider answers 400 to any other name."""


def derived_name(func: Callable[..., Any]) -> str:
    """A tool's name from its function's ``__name__``, in ``NAME_PATTERN``'s letters
    (``<lambda>`` is ``lambda``); ``tool`` when there is none (a partial, an object)."""
    try:
        found = getattr(func, "__name__", None)
    except Exception:
        found = None
    if not isinstance(found, str):
        return "tool"
    found = str.__str__(found)
    if NAME_PATTERN.fullmatch(found):
        return found  # a valid name is kept as it is, underscores and all
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", found).strip("_")[:64]
    return cleaned or "tool"


def _signature(func: Callable[..., Any], name: str) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a text signature
        return None


def _by_kind(signature: inspect.Signature, kwargs: dict[str, Any]
             ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``kwargs`` split as Python binds them: the positional-only parameters, in order,
    up to the first one not given, by position; the rest by name."""
    positional: list[Any] = []
    rest = dict(kwargs)
    for parameter in signature.parameters.values():
        if parameter.kind is not parameter.POSITIONAL_ONLY or parameter.name not in rest:
            break
        positional.append(rest.pop(parameter.name))
    return tuple(positional), rest


def _annotated_function(func: Callable[..., Any]) -> Any:
    """The function whose ``__annotations__`` describe ``func``'s parameters: through
    ``functools.partial``, ``functools.wraps`` and bound methods, or a callable object's
    ``__call__``."""
    target: Any = func
    for _ in range(100):  # a partial of a partial ...: never followed forever
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, types.MethodType):
            target = target.__func__
        elif hasattr(target, "__wrapped__"):
            target = inspect.unwrap(target)
            if hasattr(target, "__wrapped__") or not callable(target):
                break
        else:
            break
    if not isinstance(target, (types.FunctionType, types.BuiltinFunctionType, type)):
        call = inspect.getattr_static(type(target), "__call__", None)
        if isinstance(call, types.FunctionType):
            return call
    return target


def parameter_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """The resolved type hint of each annotated parameter of ``func``; a hint that
    cannot be resolved (a name not defined) is left out alone."""
    target = _annotated_function(func)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        pass
    try:
        annotations = dict(getattr(target, "__annotations__", None) or {})
        namespace = dict(getattr(target, "__globals__", None) or {})
    except Exception:
        return {}
    hints: dict[str, Any] = {}
    for name, annotation in annotations.items():
        try:
            hints[name] = typing.get_type_hints(
                types.SimpleNamespace(__annotations__={name: annotation}),
                globalns=namespace, include_extras=True)[name]
        except Exception:
            continue
    return hints


def _parameters_schema(func: Callable[..., Any], signature: inspect.Signature | None,
                       name: str) -> dict[str, Any]:
    """The JSON schema of the parameters (pydantic, from the annotations; an
    unannotated parameter is ``Any``), a property per parameter named as it is."""
    from hoare.errors import ContractDefinitionError

    if signature is None:
        return {"properties": {}, "type": "object"}
    hints = parameter_hints(func)
    fields: dict[str, Any] = {}  # neutral name: (annotation, Field with the alias)
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        if isinstance(annotation, str):  # signature() of a partial keeps a text hint
            annotation = Any
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[f"p{index}"] = (annotation, Field(default, alias=parameter.name))
    try:
        # ``**fields`` could name any of create_model's keywords, so mypy picks no overload
        model: type[BaseModel] = create_model(
            f"{name}_parameters", __config__=ConfigDict(arbitrary_types_allowed=False),
            **fields)
        schema = model.model_json_schema(schema_generator=StrictJsonSchema)
    except Exception as error:
        from hoare.declaration.models import safe_repr

        raise ContractDefinitionError(
            f"tool {name!r}: pydantic cannot describe its parameters as JSON "
            f"({type(error).__name__}: {safe_repr(str(error).splitlines()[0])}); annotate "
            f"them with types a model can write (str, int, a pydantic model, ...)"
        ) from error
    schema.pop("title", None)
    return schema


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None) -> Any:
    """``@tool`` or ``@tool(name=..., description=...)``."""
    if func is None:
        return lambda f: Tool(f, name, description)
    return Tool(func, name, description)
