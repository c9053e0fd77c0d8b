"""The placeholders of a refused call's message: ``the score must be between
{input.min_score} and …`` filled with the concrete input the pre-flight refused."""

from __future__ import annotations

import inspect
import re
from typing import Any

from hoare.declaration.description import ContractDescription

__all__ = ["fill_placeholders", "input_names"]


_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)(?::([^{}]*))?\}")


def input_names(desc: ContractDescription) -> frozenset[str]:
    """The names the post-conditions give the input (``post(self, output, input)``,
    ``Post(lambda o, i: ...)``): an f-string message may quote its fields."""
    names = set()
    for source in desc.post:
        code = getattr(inspect.unwrap(source.fn), "__code__", None)
        if not source.takes_input or code is None:
            continue
        args = code.co_varnames[:code.co_argcount]
        index = 2 if source.is_method else 1
        if len(args) > index:
            names.add(args[index])
    return frozenset(names)


def fill_placeholders(message: str, names: frozenset[str], value: object) -> str:
    """``the score must be between {input.min_score} and …`` with the input's own
    values: the pre-flight refuses one concrete input, so its message can say which.
    A placeholder naming anything else (the output, which does not exist yet) or that
    cannot be evaluated is left as written."""

    def fill(match: re.Match[str]) -> str:
        root, chain, spec = match.group(1), match.group(2), match.group(3)
        if root not in names:
            return match.group(0)
        try:
            found: Any = value
            for attribute in chain.split(".")[1:]:
                found = getattr(found, attribute)
            return format(found, spec or "")
        except Exception:
            return match.group(0)

    return _PLACEHOLDER.sub(fill, message) if names else message
