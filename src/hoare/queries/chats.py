"""Chat histories a query continues (Delphyne's ``AnswerPrefix``).

A query with a field ``prefix: AnswerPrefix`` is asked after its instance prompt
*and* the messages of its prefix: the model's earlier answers (``OracleMessage``,
with their tool calls), the results of those calls (``ToolResult``) and feedback
(``FeedbackMessage``). So a tool-calling loop is one query asked again with a longer
prefix: each ``Response`` answer goes back as an ``OracleMessage``, each tool's result
as a ``ToolResult``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from hoare.engines.base import Message, ToolCall
from hoare.queries.answers import Answer

__all__ = ["AnswerPrefix", "AnswerPrefixElement", "FeedbackMessage", "OracleMessage",
           "ToolResult", "prefix_messages"]


@dataclass(frozen=True)
class OracleMessage:
    """An answer the model gave earlier (``Response.answer``): its text and tool calls."""

    kind: Literal["oracle"]
    answer: Answer


@dataclass(frozen=True)
class FeedbackMessage:
    """Feedback on the answer before it, sent as a user message rendered by the query's
    ``feedback`` prompt (by default Delphyne's, quoting ``description``)."""

    kind: Literal["feedback"]
    category: str | None = None
    description: str | None = None
    arg: Any | None = None


@dataclass(frozen=True)
class ToolResult:
    """The result of one of the model's tool calls (text, or a value sent as JSON)."""

    kind: Literal["tool"]
    call: ToolCall
    result: Any


AnswerPrefixElement = OracleMessage | FeedbackMessage | ToolResult
AnswerPrefix = Sequence[AnswerPrefixElement]


def _json(value: object) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    from pydantic import TypeAdapter

    return json.dumps(TypeAdapter(type(value)).dump_python(value, mode="json"),
                      ensure_ascii=False)


def prefix_messages(prefix: Sequence[object], feedback: Callable[[FeedbackMessage], str]
                    ) -> list[Message]:
    """The chat messages of a prefix, in order (``feedback`` renders a feedback message);
    anything else is a TypeError naming its place (a prefix is validated by pydantic
    first, so this is a programming error)."""
    messages: list[Message] = []
    for index, element in enumerate(prefix):
        if isinstance(element, OracleMessage):
            answer = element.answer
            messages.append(Message("assistant", answer.text, tuple(answer.tool_calls)))
        elif isinstance(element, ToolResult):
            result = element.result
            text = result if isinstance(result, str) else _json(result)
            messages.append(Message("tool", text, tool_call_id=element.call.id))
        elif isinstance(element, FeedbackMessage):
            messages.append(Message("user", feedback(element)))
        else:
            raise TypeError(f"prefix[{index}] is a {type(element).__name__}, not an "
                            f"OracleMessage, FeedbackMessage or ToolResult")
    return messages
