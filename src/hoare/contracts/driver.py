"""The one driver of every engine call (issue 28; spec/pipeline.md §8.12).

The kernel's ``run_sync``/``run_async`` drive a call's generator and hand each effect
to a ``perform``/``aperform``. Contracts (``contracts.call.Call``), queries
(``queries.session.Session``) and agents (``agents.agent``) all perform their effects
here, in ``Front.perform`` and ``Front.aperform``, written once, so that a guard added
to the path holds for all three:

* ``Sleep``: the backoff delay, ``time.sleep`` or ``asyncio.sleep``;
* ``Invoke``: an agent's tool call, run as given;
* ``Generate`` (the kernel's) or ``Send`` (a request an agent built): the front end
  says what to send (``step``), or answers without sending (a query's pending
  sample); the request goes through the engine inside a telemetry span that ends
  whatever stops the call (an interrupt, a cancellation: the span ends, the error
  propagates unchanged); an engine error is shown to the front end (``failed``)
  before the kernel sees it; the answer becomes what the generator receives
  (``received``).

A front end supplies only those three steps and its ``engine`` (wrapped, when it has a
budget, in its meter). Engine wrappers (a cache, a budget, a deadline) still call the
engine they wrap: they are engines, not front ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from hoare import telemetry
from hoare.engines.base import Request, Usage
from hoare.kernel import ContractViolationError, Generate, Outcome, Sleep

__all__ = ["Front", "Invoke", "Send", "Sender", "spent_by", "with_spent"]


class Send(NamedTuple):
    """Send ``request`` as it is: an agent's step (its messages and tools), which the
    agent's loop builds itself."""

    request: Request


class Invoke(NamedTuple):
    """Call ``function(**arguments)``: an agent's tool call."""

    function: Callable[..., Any]
    arguments: Mapping[str, Any]


class Front:
    """What a front end supplies to the one driver; ``perform``/``aperform`` are the
    driver. Subclasses set ``engine`` and override ``step``, ``received`` and
    ``failed``."""

    __slots__ = ()
    engine: Any

    def step(self, effect: Generate | Send) -> object:
        """The ``Request`` to send for ``effect``, or the answer itself when there is
        nothing to send (returned to the generator as it is)."""
        if isinstance(effect, Send):
            return effect.request
        raise TypeError(f"{type(self).__name__} cannot perform {type(effect).__name__}")

    def received(self, response: object, request: Request) -> object:
        """What the generator receives for the engine's answer to ``request``."""
        return response

    def failed(self, error: Exception) -> None:
        """The engine raised ``error`` for the current request (it propagates next)."""

    def perform(self, effect: object) -> object:
        """Perform one effect (``run_sync``'s driver)."""
        if not isinstance(effect, (Generate, Send)):
            if isinstance(effect, Sleep):
                time.sleep(effect.seconds)
                return None
            return _invoked(effect)
        request = self.step(effect)
        if not isinstance(request, Request):
            return request  # answered without a request
        engine = self.engine
        span = None if telemetry.tracer is None else \
            telemetry.start_engine(engine, request.attempt)
        try:
            response = engine.complete(request)
        except Exception as error:
            self.failed(error)
            if span is not None:
                telemetry.finish_engine(span, None, error)
            raise
        except BaseException as error:  # an interrupt or a cancellation: the span ends too
            if span is not None:
                telemetry.finish_engine(span, None, error)
            raise
        if span is not None:
            telemetry.finish_engine(span, response, None)
        return self.received(response, request)

    async def aperform(self, effect: object) -> object:
        """Perform one effect (``run_async``'s driver): ``perform``, awaiting the engine's
        ``acomplete`` (its ``complete`` in a worker thread when it has none)."""
        if not isinstance(effect, (Generate, Send)):
            if isinstance(effect, Sleep):
                await asyncio.sleep(effect.seconds)
                return None
            return _invoked(effect)
        request = self.step(effect)
        if not isinstance(request, Request):
            return request  # answered without a request
        engine = self.engine
        span = None if telemetry.tracer is None else \
            telemetry.start_engine(engine, request.attempt)
        try:
            complete = getattr(engine, "acomplete", None)
            if complete is None:
                response = await asyncio.to_thread(engine.complete, request)
            else:
                response = await complete(request)
        except Exception as error:
            self.failed(error)
            if span is not None:
                telemetry.finish_engine(span, None, error)
            raise
        except BaseException as error:  # an interrupt or a cancellation: the span ends too
            if span is not None:
                telemetry.finish_engine(span, None, error)
            raise
        if span is not None:
            telemetry.finish_engine(span, response, None)
        return self.received(response, request)


def spent_by(error: BaseException) -> Usage | None:
    """What an engine's error says its request cost (``ModelRefusal``, ``ContentFiltered``,
    a broken stream's error: a ``usage`` that is a real ``Usage``), as a plain ``Usage``;
    None when it says nothing. The kernel sums only answers, so every front end adds this
    to its call's usage (spec/pipeline.md §8.12). Never raises: a foreign exception's
    ``usage`` (a property or ``__getattr__`` that raises, a look-alike) counts as none."""
    try:
        usage = getattr(error, "usage", None)
        if not isinstance(usage, Usage):
            return None
        # a plain copy: a subclass's fields or ``__add__`` are not trusted further
        return Usage(usage.requests, usage.input_tokens, usage.output_tokens,
                     usage.cached_input_tokens)
    except Exception:
        return None


def with_spent(outcome: Outcome, spent: Usage, *errors: BaseException | None) -> Outcome:
    """``outcome`` with ``spent`` (what its engine's errors cost) added to its usage: a
    new outcome (the kernel's untouched). Each ``ContractViolationError`` of ``errors``
    (the raised one, ``contract_exception``: passed by the call's last view, ``finish``)
    that carried the old outcome carries the new one, so every view of the call agrees;
    a view lent before (``forward``, a handler) repoints nothing, or ``finish`` would
    find no kernel outcome to add to."""
    usage = dict(outcome.usage)
    for key, amount in spent.as_dict().items():
        usage[key] = usage.get(key, 0) + amount
    merged = outcome._replace(usage=usage)
    for error in errors:
        if isinstance(error, ContractViolationError) and error.outcome is outcome:
            error.outcome = merged
    return merged


def _invoked(effect: object) -> object:
    """A tool call's result (``Invoke``)."""
    if not isinstance(effect, Invoke):
        raise TypeError(f"not an effect the driver performs: {type(effect).__name__}")
    return effect.function(**effect.arguments)


class Sender(Front):
    """A front end whose requests are built by its caller (``Send``): an agent's loop."""

    __slots__ = ("engine",)

    def __init__(self, engine: Any) -> None:
        self.engine = engine
