"""``tool(fn)``: a function an agent may call, with a name, a description (its
docstring) and the JSON schema of its parameters, built by pydantic from the type hints.
``@pre``/``@post`` work above or below ``@tool``."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, create_model

__all__ = ["Tool", "tool"]


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
        found = getattr(func, "__name__", None)
        self.name = name or (found if isinstance(found, str) and found else "tool")
        doc = inspect.getdoc(func) or ""
        self.description = description if description is not None else \
            doc.split("\n\n", 1)[0].strip()
        self.parameters = _parameters_schema(func, self.name)

    @property
    def _contracts(self) -> Any:
        """The ``ContractSpec`` of the function (None when it has no condition)."""
        return getattr(self.func, "_contracts", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def _parameters_schema(func: Callable[..., Any], name: str) -> dict[str, Any]:
    """The JSON schema of the parameters (pydantic, from the annotations; an
    unannotated parameter is ``Any``)."""
    target = inspect.unwrap(func)
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}  # name: (annotation, default or ...)
    for parameter in inspect.signature(target).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    # ``**fields`` could name any of create_model's keywords, so mypy picks no overload
    model: type[BaseModel] = create_model(f"{name}_parameters", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None) -> Any:
    """``@tool`` or ``@tool(name=..., description=...)``."""
    if func is None:
        return lambda f: Tool(f, name, description)
    return Tool(func, name, description)
