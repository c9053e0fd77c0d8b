"""OpenTelemetry spans for contracted calls, agent runs and tool calls
(``pip install 'hoare[otel]'``), off until ``hoare.telemetry.instrument()``.

One span per contracted call, ``hoare.contract <module:Class>``, current while the
call runs (so spans made inside, an HTTP client's say, nest under it), with
``hoare.contract``, ``hoare.outcome`` (``success``, ``failure``: the contract failed
and ``forward`` returned its best effort, ``error``: the call raised),
``hoare.attempts``, ``hoare.remedies``, ``hoare.preflight``, ``hoare.label`` and the
GenAI totals (``gen_ai.request.model``, ``gen_ai.provider.name``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``). Under it, one CLIENT
span per engine call, named and attributed by the GenAI semantic conventions:
``chat <model>``, ``gen_ai.operation.name`` = ``chat``, the request and response
models, the usage, the finish reasons, ``server.address``/``server.port`` of an
OpenAI-compatible server, ``error.type`` when it failed. An agent run is an
``invoke_agent`` span and each tool call an ``execute_tool`` span.

Off, the cost is one global read per call. The tracer is the global tracer
provider's unless ``instrument(tracer_provider=...)`` gives one.

Tracing never changes a result: a span processor or exporter that raises (in
``on_start``, ``on_end`` or anywhere else) is logged at DEBUG on ``hoare.telemetry`` and
the call goes on as if untraced; usage that is not a finite non-negative number is left
out of the span. Every span that was started is ended, with its status set, including
when a ``KeyboardInterrupt``, ``SystemExit`` or cancellation stops the call.
"""

from __future__ import annotations

import logging
import math
from typing import Any
from urllib.parse import urlsplit

__all__ = ["instrument", "instrumented", "uninstrument"]

tracer: Any = None  # the OpenTelemetry tracer while instrumented, else None

log = logging.getLogger("hoare.telemetry")


def instrument(tracer_provider: Any = None) -> None:
    """Emit spans from now on, to ``tracer_provider`` (default: the global one)."""
    global tracer
    try:
        from opentelemetry import trace
    except ImportError as missing:
        raise ImportError("hoare.telemetry needs OpenTelemetry: pip install "
                          "'hoare[otel]'") from missing
    from hoare import __version__

    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer",
                                                            None)):
        raise TypeError(f"instrument needs an OpenTelemetry TracerProvider (with "
                        f"get_tracer), got {type(tracer_provider).__name__}")
    tracer = trace.get_tracer("hoare", __version__, tracer_provider=tracer_provider)


def uninstrument() -> None:
    """Stop emitting spans."""
    global tracer
    tracer = None


def instrumented() -> bool:
    return tracer is not None


# -- contracted calls ---------------------------------------------------------------------
def start_call(name: str) -> tuple[Any, Any] | None:
    """The span of a contracted call, made current; None when not instrumented."""
    active = tracer
    if active is None:
        return None
    try:
        from opentelemetry import trace

        span = active.start_span(f"hoare.contract {name}", kind=trace.SpanKind.INTERNAL,
                                 attributes={"hoare.contract": name})
    except Exception:  # a processor's on_start raised: the call runs untraced
        log.debug("span not started", exc_info=True)
        return None
    return _current(span)


def finish_call(handle: tuple[Any, Any], record: tuple[Any, ...] | None,
                raised: BaseException | None, engine: Any) -> None:
    """Close a contracted call's span with what the call came to: its record
    (``hoare.stats.records.call_record``, the one the stats store is given: success,
    attempts, remedies, label, tokens, pre-flight verdict, trials), None when the call
    has no outcome; never raises."""
    span = _released(handle)
    try:
        if record is not None:
            (_, _, _, label, success, _, attempts, remedies, preflight, input_tokens,
             output_tokens, *_rest) = record
            trials = record[15]
            span.set_attributes({
                "hoare.outcome": "error" if raised is not None else
                "success" if success else "failure",
                "hoare.attempts": attempts, "hoare.remedies": remedies,
                "hoare.label": label,
                **_usage_attributes(0 if input_tokens is None else input_tokens,
                                    0 if output_tokens is None else output_tokens),
            })
            if preflight is not None:
                span.set_attribute("hoare.preflight", preflight)
            failed = sorted({family for family, passed in trials if not passed})
            if failed:
                span.set_attribute("hoare.failed_families", failed)
        else:
            span.set_attribute("hoare.outcome", "error")
        span.set_attributes(_engine_attributes(engine))
    except Exception:
        log.debug("span attributes not set", exc_info=True)
    _end(span, raised)


# -- engine calls -------------------------------------------------------------------------
def start_engine(engine: Any, attempt: int) -> tuple[Any, Any] | None:
    """A CLIENT span for one engine call, made current; None when not instrumented."""
    active = tracer
    if active is None:
        return None
    try:
        from opentelemetry import trace

        attributes = _engine_attributes(engine)
        attributes["gen_ai.operation.name"] = "chat"
        attributes["hoare.attempt"] = attempt
        model = attributes.get("gen_ai.request.model")
        span = active.start_span(f"chat {model}" if model else "chat",
                                 kind=trace.SpanKind.CLIENT, attributes=attributes)
    except Exception:  # a processor's on_start raised: the engine call runs untraced
        log.debug("span not started", exc_info=True)
        return None
    return _current(span)


def finish_engine(handle: tuple[Any, Any] | None, response: Any,
                  error: BaseException | None) -> None:
    """Close an engine call's span with its usage, model and finish reasons; never
    raises (the response is the caller's whatever the span makes of it)."""
    if handle is None:
        return
    span = _released(handle)
    try:
        if response is not None:
            usage = getattr(response, "usage", None)
            if usage is not None:
                span.set_attributes(_usage_attributes(
                    getattr(usage, "input_tokens", None),
                    getattr(usage, "output_tokens", None)))
            model = getattr(response, "model", "")
            if isinstance(model, str) and model:
                span.set_attribute("gen_ai.response.model", model)
            reasons = [r for r in getattr(response, "finish_reasons", ())
                       if isinstance(r, str) and r]
            if reasons:
                span.set_attribute("gen_ai.response.finish_reasons", reasons)
            if getattr(response, "cached", False) is True:
                span.set_attribute("hoare.cached", True)
    except Exception:
        log.debug("span attributes not set", exc_info=True)
    _end(span, error)


def _usage_attributes(input_tokens: Any, output_tokens: Any) -> dict[str, int]:
    """The usage attributes whose values are finite non-negative numbers (a server's
    NaN, infinity, negative count or non-number is left out, never raised on)."""
    out: dict[str, int] = {}
    for key, value in (("gen_ai.usage.input_tokens", input_tokens),
                       ("gen_ai.usage.output_tokens", output_tokens)):
        count = _count(value)
        if count is not None:
            out[key] = count
    return out


def _count(value: Any) -> int | None:
    """``value`` as a token count, or None when it is not a finite number >= 0 that an
    int64 attribute holds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        count = int(value)
    except Exception:  # an int subclass whose __int__/__index__ raises
        return None
    return count if 0 <= count <= _INT64_MAX else None  # what OTLP's int64 can hold


_INT64_MAX = 2 ** 63 - 1


def _engine_attributes(engine: Any) -> dict[str, Any]:
    """The GenAI attributes an engine tells: its provider, model and server."""
    from hoare.engines.base import innermost

    inner = innermost(engine)
    kind = type(inner).__name__
    out: dict[str, Any] = {"gen_ai.provider.name": "openai" if kind == "OpenAIEngine"
                           else f"hoare.{kind}"}
    model = getattr(inner, "model", None)
    if isinstance(model, str) and model:
        out["gen_ai.request.model"] = model
    base_url = getattr(inner, "base_url", None)
    if isinstance(base_url, str) and base_url:
        parts = urlsplit(base_url)
        if parts.hostname:
            out["server.address"] = parts.hostname
            if parts.port:
                out["server.port"] = parts.port
    return out


# -- agents and tools ---------------------------------------------------------------------
def start_agent(operation: str, name: str, attributes: dict[str, Any]
                ) -> tuple[Any, Any] | None:
    """An ``invoke_agent`` or ``execute_tool`` span, made current; None when not
    instrumented or when the span could not be started."""
    active = tracer
    if active is None:
        return None
    try:
        from opentelemetry import trace

        span = active.start_span(f"{operation} {name}", kind=trace.SpanKind.INTERNAL,
                                 attributes={"gen_ai.operation.name": operation,
                                             **attributes})
    except Exception:  # a processor's on_start raised: the run goes on untraced
        log.debug("span not started", exc_info=True)
        return None
    return _current(span)


def finish_agent(handle: tuple[Any, Any] | None, success: bool,
                 error: BaseException | None = None) -> None:
    """Close an agent run's or tool call's span with its outcome; never raises."""
    if handle is None:
        return
    span = _released(handle)
    try:
        span.set_attribute("hoare.outcome", "error" if error is not None else
                           "success" if success else "failure")
    except Exception:
        log.debug("span attributes not set", exc_info=True)
    _end(span, error)


def _current(span: Any) -> tuple[Any, Any] | None:
    """``span`` made current: its handle; None (the span ended) when that fails."""
    try:
        from opentelemetry import context, trace

        return span, context.attach(trace.set_span_in_context(span))
    except Exception:
        log.debug("span not made current", exc_info=True)
        _end(span, None)
        return None


def _end(span: Any, error: BaseException | None) -> None:
    """End ``span``, its status ERROR when ``error`` (an interrupt or a cancellation
    too) stopped the call; a processor's ``on_end`` that raises is logged."""
    try:
        from opentelemetry import trace

        if error is not None:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(trace.Status(trace.StatusCode.ERROR, _short(error)))
    except Exception:
        log.debug("span status not set", exc_info=True)
    try:
        span.end()
    except Exception:  # a processor's on_end or an exporter raised
        log.debug("span end raised", exc_info=True)


def _released(handle: tuple[Any, Any]) -> Any:
    """The span of ``handle``, no longer current."""
    span, token = handle
    try:
        from opentelemetry import context

        context.detach(token)
    except Exception:  # detached elsewhere (a generator closed in another context)
        pass
    return span


def _short(error: BaseException) -> str:
    """The status text: the error's type and message (its ``str()`` may raise)."""
    try:
        text = str(error)
    except Exception:
        text = "<its str() raised>"
    return f"{type(error).__name__}: {text}"[:300]
