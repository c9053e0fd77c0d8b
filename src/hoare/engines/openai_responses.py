"""OpenAI's Responses API for ``OpenAIEngine(api_type="responses")``.

A ``Request`` (chat messages, tools, schema, options) becomes a ``responses.create``
call: messages are input items, an assistant message's tool calls are
``function_call`` items and a ``tool`` message a ``function_call_output``; tools are
sent flat, the schema as ``text.format``. The answer's ``output`` items are read and
every field checked (as the chat path does: a missing or mistyped field is an
``EngineAnswerError`` quoting it, a bad token count is replaced by its bound).

Reasoning items are kept across a multi-turn conversation: requests ask for them
(``include: ["reasoning.encrypted_content"]``, ``store: false``), and the engine
remembers the reasoning items that came with each answer (by its tool call ids, else
its text); when a later request repeats that answer, its reasoning items are sent
again before it, as the API wants. The memory is bounded and shared by threads.
``n > 1`` is sent as n requests (the API has no ``n``); log-probabilities are not
offered by this path and asking for them is an error.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hoare.engines.base import (
    EngineAnswerError,
    Message,
    ModelRefusal,
    Options,
    Request,
    Response,
    ToolCall,
    Usage,
)
from hoare.engines.openai_answer import (
    answer_bound,
    body_of,
    checked_usage,
    excerpt,
    paid,
    redacted,
    request_bytes,
)
from hoare.engines.openai_config import (
    DEFAULT_TIMEOUT,
    WATCHDOG_GRACE,
    EngineConfigError,
    merge_options,
)
from hoare.engines.openai_request import Format, response_format
from hoare.engines.openai_sending import bounded_send, watched_send
from hoare.errors import EngineError
from hoare.forking import hold_across_fork

if TYPE_CHECKING:
    from hoare.engines.openai_engine import OpenAIEngine

__all__ = ["ReasoningMemory", "parse_response", "responses_params"]

_MEMORY_SIZE = 4096


class ReasoningMemory:
    """The reasoning items of recent answers, by the answer's tool call ids or text."""

    def __init__(self, size: int = _MEMORY_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[dict[str, Any], ...]] = OrderedDict()
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)

    @staticmethod
    def key(text: str, calls: Sequence[ToolCall]) -> str:
        ids = [c.id for c in calls if c.id]
        if ids:
            return "calls:" + json.dumps(ids)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return "text:" + digest  # a fixed size, however long the answer

    def remember(self, text: str, calls: Sequence[ToolCall],
                 items: tuple[dict[str, Any], ...]) -> None:
        if not items:
            return
        with self._lock:
            self._items[self.key(text, calls)] = items
            self._items.move_to_end(self.key(text, calls))
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def recall(self, message: Message) -> tuple[dict[str, Any], ...]:
        with self._lock:
            return self._items.get(self.key(message.content, message.tool_calls), ())


def _tool(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions tool spec in the Responses API's flat form."""
    function = spec.get("function")
    if spec.get("type") == "function" and isinstance(function, Mapping):
        flat = {"type": "function", "name": function.get("name"),
                "parameters": function.get("parameters", {})}
        if function.get("description"):
            flat["description"] = function["description"]
        return flat
    return dict(spec)


def _input(messages: Sequence[Message], memory: ReasoningMemory) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append({"type": "function_call_output",
                          "call_id": message.tool_call_id or "", "output": message.content})
            continue
        if message.role == "assistant":
            items.extend(memory.recall(message))
            if message.content or not message.tool_calls:
                items.append({"role": "assistant", "content": message.content})
            items.extend({"type": "function_call", "call_id": call.id, "name": call.name,
                          "arguments": call.arguments} for call in message.tool_calls)
            continue
        items.append({"role": message.role, "content": message.content})
    return items


def responses_params(request: Request, options: Options, model: str, timeout: float,
                     text_format: Mapping[str, Any] | None, memory: ReasoningMemory
                     ) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` for one completion of ``request``."""
    if options.logprobs:
        raise EngineConfigError("OpenAIEngine(api_type='responses') does not return "
                                "log-probabilities: use api_type='chat_completions'")
    params: dict[str, Any] = {"model": model, "input": _input(request.messages, memory),
                              "store": False, "include": ["reasoning.encrypted_content"],
                              "timeout": timeout}
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if options.max_tokens is not None:
        params["max_output_tokens"] = options.max_tokens
    if options.extra_body:
        params["extra_body"] = dict(options.extra_body)
    if request.tools:
        params["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None:
            params["tool_choice"] = request.tool_choice
    if text_format is not None:
        params["text"] = {"format": dict(text_format)}
    return params


def text_format(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A chat ``response_format`` payload as the Responses API's ``text.format``."""
    if response_format is None:
        return None
    if response_format.get("type") == "json_schema":
        inner = dict(response_format.get("json_schema") or {})
        return {"type": "json_schema", **inner}
    return {"type": str(response_format.get("type"))}


def _text_of(item: Mapping[str, Any], where: str) -> tuple[str, str | None]:
    """(text, refusal) of an output ``message`` item."""
    content = item.get("content")
    if not isinstance(content, list):
        raise EngineAnswerError(f"{where} answered a message item whose content is not a "
                                f"list: {excerpt(item)}")
    texts: list[str] = []
    refusal: str | None = None
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "output_text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            refusal = part["refusal"]
        else:
            raise EngineAnswerError(f"{where} answered a message part that is not text: "
                                    f"{excerpt(part)}")
    return "".join(texts), refusal


def parse_response(data: Mapping[str, Any], params: Mapping[str, Any], request: Request,
                   where: str, memory: ReasoningMemory) -> Response:
    """One Responses API answer, every field checked (see the module)."""
    status = data.get("status")
    if status is not None and not isinstance(status, str):
        raise EngineAnswerError(f"{where} answered a status that is not text: "
                                f"{excerpt(status)}")
    if status == "failed" or (data.get("error") is not None and not data.get("output")):
        raise EngineAnswerError(f"{where} answered a failed response: "
                                f"{excerpt(data.get('error'))}")
    output = data.get("output")
    if not isinstance(output, list):
        raise EngineAnswerError(f"{where} answered without an 'output' list: "
                                f"{excerpt(data)}")
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            text, refusal = _text_of(item, where)
            texts.append(text)
            if refusal:
                refusals.append(refusal)
        elif kind == "function_call":
            name, arguments, ident = item.get("name"), item.get("arguments"), \
                item.get("call_id")
            if not (isinstance(name, str) and name and isinstance(arguments, str)
                    and isinstance(ident, str) and ident):
                raise EngineAnswerError(f"{where} answered a malformed function call: "
                                        f"{excerpt(item)}")
            calls.append(ToolCall(ident, name, arguments))
        elif kind == "reasoning":
            try:
                json.dumps(item, allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                raise EngineAnswerError(f"{where} answered a reasoning item that cannot be "
                                        f"sent back: {excerpt(item)}") from None
            reasoning.append(item)
        elif not isinstance(kind, str):
            raise EngineAnswerError(f"{where} answered an output item without a type: "
                                    f"{excerpt(item)}")
        # other item types (web search calls, ...) carry nothing a Response holds
    text = "".join(texts)
    raw_usage = data.get("usage")
    chat_usage: Any = raw_usage  # not an object: ``checked_usage`` counts the bounds
    if isinstance(raw_usage, Mapping):
        chat_usage = {"prompt_tokens": raw_usage.get("input_tokens"),
                      "completion_tokens": raw_usage.get("output_tokens"),
                      "prompt_tokens_details": raw_usage.get("input_tokens_details")}
    limit = params.get("max_output_tokens")
    output_bound = limit if isinstance(limit, int) and limit > 0 else \
        len(json.dumps(output).encode("utf-8", "surrogatepass"))
    usage = checked_usage(chat_usage, request_bytes(request), output_bound, where)
    if not text and not calls and refusals:
        raise ModelRefusal(f"{where}: the model refused to answer: {excerpt(refusals[0])}",
                           refusal=refusals[0], usage=usage)
    finish = "tool_calls" if calls else "length" if status == "incomplete" else "stop"
    memory.remember(text, calls, tuple(reasoning))
    model = data.get("model")
    return Response(texts=(text,), finish_reasons=(finish,), usage=usage,
                    model=model if isinstance(model, str) and model else str(params["model"]),
                    tool_calls=tuple(calls))


def merged(responses: Sequence[Response]) -> Response:
    """n answers of n requests as one ``Response`` of n completions."""
    if len(responses) == 1:
        return responses[0]
    usage = Usage()
    for response in responses:
        usage = usage + response.usage
    first = responses[0]
    return Response(texts=tuple(r.texts[0] for r in responses),
                    finish_reasons=tuple(r.finish_reasons[0] for r in responses),
                    usage=usage, model=first.model, tool_calls=first.tool_calls)


def _prepared(engine: OpenAIEngine, request: Request) -> tuple[dict[str, Any], int]:
    options = merge_options(engine.default_options, request.options)
    timeout = options.timeout if options.timeout is not None else DEFAULT_TIMEOUT
    chosen = getattr(engine, "structured", "auto")  # "text": no schema is sent
    kind: Format = "json_schema"
    if chosen == "json_object":
        kind = "json_object"
    elif chosen == "text":
        kind = "text"
    fmt = text_format(response_format(request, kind))
    params = responses_params(request, options, options.model or engine.model, timeout, fmt,
                              engine.reasoning_memory)
    return params, options.n


def _read(engine: OpenAIEngine, raw: Any, params: Mapping[str, Any], request: Request) -> Response:
    where = engine.where(params)
    http = getattr(raw, "http_response", raw)
    data: Any = None
    try:
        data = body_of(http, where)
        return parse_response(data, params, request, where, engine.reasoning_memory)
    except EngineError as error:  # masked, and charged what the answer cost
        raise paid(redacted(error, engine.redact), _answer_cost(http, data, params, request,
                                                                where)) from None


def _answer_cost(http: Any, data: Any, params: Mapping[str, Any], request: Request,
                 where: str) -> Usage:
    """What an answer that cannot be read cost: its usage when readable, else the bounds
    (``openai_answer.answer_bound``, the Responses API's field names)."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if isinstance(usage, Mapping):
        data = {"usage": {"prompt_tokens": usage.get("input_tokens"),
                          "completion_tokens": usage.get("output_tokens"),
                          "prompt_tokens_details": usage.get("input_tokens_details")}}
    elif usage is not None:
        data = {"usage": usage}
    return answer_bound(http, data, {"max_tokens": params.get("max_output_tokens")},
                        request, where)


def complete(engine: OpenAIEngine, request: Request) -> Response:
    """``OpenAIEngine.complete`` on the Responses API."""
    params, n = _prepared(engine, request)
    create = engine.client.responses.with_raw_response.create
    answers: list[Response] = []
    for _ in range(n):
        raw = engine.transport.call(
            functools.partial(watched_send, create, float(params["timeout"]) + WATCHDOG_GRACE,
                              params), engine.classifier(params), where=engine.where(params))
        answers.append(_read_after(engine, raw, params, request, answers))
    return merged(answers)


async def acomplete(engine: OpenAIEngine, request: Request) -> Response:
    """``OpenAIEngine.acomplete`` on the Responses API."""
    params, n = _prepared(engine, request)
    client = await engine.async_client()
    create = client.responses.with_raw_response.create
    answers: list[Response] = []
    for _ in range(n):
        raw = await engine.transport.acall(
            functools.partial(bounded_send, create, float(params["timeout"]) + WATCHDOG_GRACE,
                              params), engine.classifier(params), where=engine.where(params))
        answers.append(_read_after(engine, raw, params, request, answers))
    return merged(answers)


def _read_after(engine: OpenAIEngine, raw: Any, params: Mapping[str, Any], request: Request,
                answers: Sequence[Response]) -> Response:
    """``_read``, whose error (of the k-th of n requests) carries the usage of the answers
    already read too: they were paid for, and the failure discards them."""
    try:
        return _read(engine, raw, params, request)
    except EngineError as error:
        usage = getattr(error, "usage", None)
        if isinstance(usage, Usage):
            for answer in answers:
                usage = usage + answer.usage
            setattr(error, "usage", usage)  # noqa: B010  # not a field of every EngineError
        raise
