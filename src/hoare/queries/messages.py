"""The chat messages a query's prompt is made of, apart from the session that sends them:
an instance prompt split into roles with the query's chat prefix after it
(``instance_messages``), an answer repeated to the model with its tool calls answered
(``assistant_messages``), and the JSON schema of the answer values shown in the format
(``value_schema``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter

from hoare.declaration.models import TypeSpec
from hoare.engines.base import Message, ToolCall
from hoare.queries.chats import prefix_messages
from hoare.queries.templates import has_prefix, render, split_roles

__all__ = ["assistant_messages", "instance_messages", "value_schema"]


def value_schema(spec: TypeSpec) -> str:
    """The JSON schema of the values themselves (not of a one-field wrapper model)."""
    schema = TypeAdapter(spec.annotation).json_schema() if spec.wrapped else spec.schema
    return json.dumps(schema, indent=2, sort_keys=True)


def assistant_messages(text: str, calls: Sequence[ToolCall],
                       result: str = "(not run: see the message below)") -> list[Message]:
    """An answer repeated to the model: its text and tool calls, each call followed by a
    tool message (the chat protocol refuses calls left unanswered)."""
    return [Message("assistant", text, tuple(calls)),
            *(Message("tool", result, tool_call_id=call.id) for call in calls)]


def instance_messages(query: object, context: dict[str, Any]) -> list[Message]:
    """The instance prompt (split at its ``!<assistant>``/``!<user>`` lines), then the
    query's chat prefix (``prefix: AnswerPrefix``) as messages."""
    text = render(query, "instance", context)
    messages = [Message(role, body) for role, body in split_roles(text)]
    if has_prefix(type(query)):
        def feedback(element: object) -> str:
            return render(query, "feedback", {**context, "feedback": element})
        messages.extend(prefix_messages(getattr(query, "prefix", None) or (), feedback))
    return messages
