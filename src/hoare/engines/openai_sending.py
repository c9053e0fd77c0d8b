"""One send to an OpenAI-compatible server: the watchdog around it and what the
``openai`` client's exceptions mean to ``TransportRetry``.

Shared by the chat-completions path (``openai_engine``) and the Responses API path
(``openai_responses``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import openai

from hoare.engines.deadline import BodyTooLarge, call_within
from hoare.engines.transport import Failure, parse_retry_after


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return str(dict(body))
    if isinstance(body, str) and body:
        return body
    return error.message


def classify_openai_error(error: BaseException) -> Failure | None:
    """The ``TransportRetry`` classification of the ``openai`` client's exceptions."""
    if isinstance(error, openai.APITimeoutError):
        cause = error.__cause__ or error.__context__
        detail = f": {cause}" if cause is not None and str(cause) else ""
        return Failure("timeout", f"request timed out (client-side timeout){detail}")
    if isinstance(error, TimeoutError):
        return Failure("timeout", "request cancelled at its whole-request deadline")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error.__context__
        detail = f": {cause}" if cause is not None else ""
        return Failure("connection", f"{error.message.rstrip('.')}{detail}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        message = _server_message(error)
        if status == 429:
            return Failure("rate_limit", message, status, parse_retry_after(error.response.headers))
        if status >= 500:
            return Failure("server", message, status, parse_retry_after(error.response.headers))
        if status == 408:
            return Failure("timeout", message, status)
        return Failure("rejected", message, status)
    return None


def watched_send(create: Callable[..., Any], seconds: float, params: Mapping[str, Any]) -> Any:
    """One synchronous send, given up ``seconds`` after it started (``TimeoutError``)."""
    try:
        return call_within(lambda: create(**params), seconds, "the send")
    except openai.APIConnectionError as error:
        _raise_too_large(error)
        raise


async def bounded_send(create: Callable[..., Any], seconds: float,
                       params: Mapping[str, Any]) -> Any:
    """One async send, cancelled outright ``seconds`` after it started (a watchdog behind
    the transport's own deadline)."""
    try:
        async with asyncio.timeout(seconds):
            return await create(**params)
    except openai.APIConnectionError as error:
        _raise_too_large(error)
        raise


def _raise_too_large(error: openai.APIConnectionError) -> None:
    """Raise the transport's ``BodyTooLarge`` that the client wrapped as a connection error
    (it is final: the same request would be answered the same way)."""
    cause = error.__cause__ or error.__context__
    if isinstance(cause, BodyTooLarge):
        raise cause from None


def error_text(error: BaseException) -> str:
    """``error`` and its cause as text for a message (\"\" if either cannot be shown)."""
    try:
        return f"{error} {error.__cause__ or ''}"
    except Exception:
        return ""
