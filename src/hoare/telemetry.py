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
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["instrument", "instrumented", "uninstrument"]

tracer: Any = None  # the OpenTelemetry tracer while instrumented, else None


def instrument(tracer_provider: Any = None) -> None:
    """Emit spans from now on, to ``tracer_provider`` (default: the global one)."""
    global tracer
    try:
        from opentelemetry import trace
    except ImportError as missing:
        raise ImportError("hoare.telemetry needs OpenTelemetry: pip install "
                          "'hoare[otel]'") from missing
    from . import __version__

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
    from opentelemetry import context, trace

    span = active.start_span(f"hoare.contract {name}", kind=trace.SpanKind.INTERNAL,
                             attributes={"hoare.contract": name})
    return span, context.attach(trace.set_span_in_context(span))


def finish_call(handle: tuple[Any, Any], outcome: Any, raised: BaseException | None,
                attempts: int, remedies: int, label: str, engine: Any) -> None:
    """Close a contracted call's span with what the call came to."""
    from opentelemetry import trace

    span = _released(handle)
    if outcome is not None:
        usage = outcome.usage
        span.set_attributes({
            "hoare.outcome": "error" if raised is not None else
            "success" if outcome.success else "failure",
            "hoare.attempts": attempts, "hoare.remedies": remedies, "hoare.label": label,
            "gen_ai.usage.input_tokens": int(usage.get("input_tokens", 0)),
            "gen_ai.usage.output_tokens": int(usage.get("output_tokens", 0)),
        })
        if outcome.preflight is not None:
            span.set_attribute("hoare.preflight", outcome.preflight.verdict.value)
        failed = sorted({family for family, passed in outcome.trials if not passed})
        if failed:
            span.set_attribute("hoare.failed_families", failed)
    else:
        span.set_attribute("hoare.outcome", "error")
    span.set_attributes(_engine_attributes(engine))
    if raised is not None:
        span.set_attribute("error.type", type(raised).__qualname__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, _short(raised)))
    span.end()


# -- engine calls -------------------------------------------------------------------------
def start_engine(engine: Any, attempt: int) -> tuple[Any, Any] | None:
    """A CLIENT span for one engine call, made current; None when not instrumented."""
    active = tracer
    if active is None:
        return None
    from opentelemetry import context, trace

    attributes = _engine_attributes(engine)
    attributes["gen_ai.operation.name"] = "chat"
    attributes["hoare.attempt"] = attempt
    model = attributes.get("gen_ai.request.model")
    span = active.start_span(f"chat {model}" if model else "chat",
                             kind=trace.SpanKind.CLIENT, attributes=attributes)
    return span, context.attach(trace.set_span_in_context(span))


def finish_engine(handle: tuple[Any, Any], response: Any, error: BaseException | None
                  ) -> None:
    from opentelemetry import trace

    span = _released(handle)
    if response is not None:
        usage = getattr(response, "usage", None)
        if usage is not None:
            span.set_attributes({"gen_ai.usage.input_tokens": int(usage.input_tokens),
                                 "gen_ai.usage.output_tokens": int(usage.output_tokens)})
        if getattr(response, "model", ""):
            span.set_attribute("gen_ai.response.model", str(response.model))
        reasons = [r for r in getattr(response, "finish_reasons", ()) if r]
        if reasons:
            span.set_attribute("gen_ai.response.finish_reasons", reasons)
        if getattr(response, "cached", False):
            span.set_attribute("hoare.cached", True)
    if error is not None:
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, _short(error)))
    span.end()


def _engine_attributes(engine: Any) -> dict[str, Any]:
    """The GenAI attributes an engine tells: its provider, model and server."""
    from .engines.base import innermost

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
    """An ``invoke_agent`` or ``execute_tool`` span, made current."""
    active = tracer
    if active is None:
        return None
    from opentelemetry import context, trace

    span = active.start_span(f"{operation} {name}", kind=trace.SpanKind.INTERNAL,
                             attributes={"gen_ai.operation.name": operation, **attributes})
    return span, context.attach(trace.set_span_in_context(span))


def finish_agent(handle: tuple[Any, Any], success: bool, error: BaseException | None = None
                 ) -> None:
    from opentelemetry import trace

    span = _released(handle)
    span.set_attribute("hoare.outcome", "error" if error is not None else
                       "success" if success else "failure")
    if error is not None:
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(trace.Status(trace.StatusCode.ERROR, _short(error)))
    span.end()


def _released(handle: tuple[Any, Any]) -> Any:
    """The span of ``handle``, no longer current."""
    from opentelemetry import context

    span, token = handle
    try:
        context.detach(token)
    except Exception:  # detached elsewhere (a generator closed in another context)
        pass
    return span


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:300]
