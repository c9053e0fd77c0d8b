"""What a parser reads and returns: an engine's completion as an ``Answer``, the
``ParseError`` a failed reading raises (fed back to the model), and the values a parser
may return besides the answer type: ``WrappedParseError`` (a failure kept as a value) and
``Response`` (a final answer or a request for tools). Also ``dump_answer``, the JSON text
a structured answer would be, for demonstrations.

Kept apart from the parsers (``parsers.py``) because the session, the chat prefixes and
the demonstrations use these types without building any parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

from hoare.engines.base import ToolCall
from hoare.errors import HoareError

__all__ = ["Answer", "FinalAnswer", "ParseError", "Response", "ToolRequests",
           "WrappedParseError", "dump_answer"]

A = TypeVar("A")
B = TypeVar("B")


class ParseError(HoareError, ValueError):
    """The answer could not be read as the query's answer type. The message says why,
    in words the model can act on (it is the corrective prompt's content)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One completion as a parser sees it: the text, the tool calls, the answer mode."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    mode: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WrappedParseError:
    """A parse error returned as a value (``Parser.wrap_errors``), for answer types that
    declare it (``T | WrappedParseError``): the caller decides what to do with it.
    Post-conditions are not evaluated on it (there is no answer to check)."""

    error: ParseError


@dataclass(frozen=True, slots=True)
class FinalAnswer(Generic[A]):
    """See ``Response``: the model gave its final answer."""

    final: A


@dataclass(frozen=True, slots=True)
class ToolRequests(Generic[A]):
    """See ``Response``: the model asked for tool calls (parsed, in order)."""

    tool_calls: tuple[A, ...]


@dataclass(frozen=True, slots=True)
class Response(Generic[A, B]):
    """An answer that may be final or a request for tools: ``answer`` is the raw
    completion (to extend a conversation), ``parsed`` its reading."""

    answer: Answer
    parsed: FinalAnswer[A] | ToolRequests[B]


def dump_answer(value: object) -> str:
    """A value as the JSON text a structured answer would be (for demonstrations)."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(TypeAdapter(type(value)).dump_python(value, mode="json"),
                      ensure_ascii=False)
