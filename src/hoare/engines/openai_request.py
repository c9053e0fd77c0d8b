"""Building a chat-completions request: the ``response_format`` payload of a schema in
each dialect, the keyword arguments of ``chat.completions.create``, and the step-down
from one format to the next when a server rejects it.

What ``structured="auto"`` learned per server (base URL) is kept here, for every engine
on that server: an engine made later starts from the format that worked.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping
from typing import Any, Literal

from hoare.engines import capabilities
from hoare.engines.base import Options, Request
from hoare.engines.openai_config import DEFAULT_TIMEOUT
from hoare.engines.transport import RequestRejected
from hoare.forking import hold_across_fork

Structured = Literal["auto", "json_schema", "json_object_schema", "json_object", "text"]
Format = Literal["json_schema", "json_object_schema", "json_object", "text"]

STEP_DOWN: dict[Format, Format] = {"json_schema": "json_object_schema",
                                    "json_object_schema": "json_object",
                                    "json_object": "text"}
_FORMAT_WORDS = ("response_format", "response format", "json_schema", "json schema",
                 "json_object", "structured output", "guided_json", "grammar", "schema")
# What ``structured="auto"`` learned per server (base URL): an engine made later for the
# same server starts from the format that worked, not from the one that was rejected.
_LEARNED: dict[str, Format] = {}
_LEARNED_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _LEARNED_LOCK)  # free in a forked child
_STRICT_UNSUPPORTED = frozenset({
    "default", "minLength", "maxLength", "minProperties", "maxProperties", "patternProperties",
    "unevaluatedProperties", "propertyNames", "if", "then", "else", "not", "allOf", "oneOf",
    "dependentRequired", "dependentSchemas", "contains", "minContains", "maxContains",
    "uniqueItems", "const",
})


def learned_format(base_url: str, default: Format) -> Format:
    """The format ``structured="auto"`` learned for the server at ``base_url``, else
    ``default``."""
    with _LEARNED_LOCK:
        return _LEARNED.get(base_url, default)


def learn_format(base_url: str, fmt: Format) -> None:
    """Remember that the server at ``base_url`` is to be sent ``fmt`` from now on."""
    with _LEARNED_LOCK:
        _LEARNED[base_url] = fmt


def forget_learned_format(base_url: str) -> None:
    """Forget what was learned for the server at ``base_url`` (a test's fresh server may
    reuse the address of an earlier one)."""
    with _LEARNED_LOCK:
        _LEARNED.pop(base_url, None)


def schema_name(name: str) -> str:
    """``name`` made acceptable to ``json_schema.name``: ``[a-zA-Z0-9_-]{1,64}``."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:64]
    return cleaned or "output"


def is_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI's ``strict`` structured outputs accept ``schema`` unchanged: the root
    is an object, every object lists all its properties as required and forbids
    additional ones, and no keyword outside the strict subset appears. Conservative:
    ``False`` only costs enforcement strength, a wrong ``True`` costs a 400."""
    if schema.get("type") != "object":
        return False

    def ok(node: object) -> bool:
        if isinstance(node, list):
            return all(ok(item) for item in node)
        if not isinstance(node, Mapping):
            return True
        if _STRICT_UNSUPPORTED.intersection(node):
            return False
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                return False
            if set(node.get("required", ())) != set(properties):
                return False
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
                if not all(ok(sub) for sub in value.values()):
                    return False
            elif key not in ("enum", "required") and not ok(value):
                return False
        return True

    return ok(schema)


def response_format(request: Request, fmt: Format,
                    table: capabilities.CapabilityTable = capabilities.BUILT_IN
                    ) -> dict[str, Any] | None:
    """The ``response_format`` payload for ``request`` under ``fmt`` (``None``: send none).
    ``json_object_schema`` is llama.cpp's dialect, ``{"type": "json_object", "schema":
    S}``, which its server turns into a grammar; patterns are left out of ``S`` (a
    pattern its converter cannot read makes it drop the whole schema silently). Each
    dialect gets the schema in its strongest form per ``table`` (``capabilities.shaped``:
    for llama.cpp, small integer ranges also as ``enum``s)."""
    if request.schema is None or fmt == "text":
        return None
    if fmt == "json_object":
        return {"type": "json_object"}
    if fmt == "json_object_schema":
        return {"type": "json_object",
                "schema": capabilities.shaped(request.schema, "llama_cpp", table)}
    strict = is_strict_compatible(request.schema)
    schema = capabilities.shaped(request.schema, "openai_strict" if strict else "json_schema",
                                 table)
    return {"type": "json_schema", "json_schema": {
        "name": schema_name(request.schema_name), "schema": schema, "strict": strict}}


def without_patterns(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with every ``pattern`` keyword left out."""
    def strip(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: strip(v) for k, v in node.items()
                    if not (k == "pattern" and isinstance(v, str))}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    return {k: strip(v) for k, v in schema.items() if not (k == "pattern" and isinstance(v, str))}


def names_format(message: str) -> bool:
    text = message.lower()
    return any(word in text for word in _FORMAT_WORDS)


def is_format_rejection(error: RequestRejected) -> bool:
    status = error.status or 0
    return (status in (400, 404, 415, 422) or status >= 500) and names_format(
        error.server_message)


def is_max_tokens_rejection(error: RequestRejected) -> bool:
    text = error.server_message
    return error.status == 400 and "max_tokens" in text and "max_completion_tokens" in text


def chat_params(request: Request, options: Options, model: str, token_param: str,
                response_format_payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``request`` under the
    merged ``options``: ``model`` when the options name none, the token limit under
    ``token_param`` (``max_tokens`` or ``max_completion_tokens``)."""
    params: dict[str, Any] = {
        "model": options.model or model,
        "messages": [m.as_dict() for m in request.messages],
    }
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if options.max_tokens is not None:
        params[token_param] = options.max_tokens
    if options.n != 1:
        params["n"] = options.n
    if options.seed is not None:
        params["seed"] = options.seed
    if options.logprobs:
        params["logprobs"] = True
        if options.top_logprobs is not None:
            params["top_logprobs"] = options.top_logprobs
    params["timeout"] = options.timeout if options.timeout is not None else DEFAULT_TIMEOUT
    if options.extra_body:
        params["extra_body"] = dict(options.extra_body)
    if request.tools:
        params["tools"] = [dict(t) for t in request.tools]
        tool_choice = getattr(request, "tool_choice", None)
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
    if response_format_payload is not None:
        params["response_format"] = response_format_payload
    return params
