"""The kernel never waits: it asks its driver to (spec §6).

``run_call`` is a generator that yields ``Generate`` and ``Sleep`` effects and
receives their answers. ``run_sync`` and ``run_async`` are the two drivers; an
exception raised while performing an effect is thrown back into the call at the
point that asked for it, where the spec says what it means.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from .outcome import HoareError, Phase, Violation

_EMPTY: Mapping[str, int] = MappingProxyType({})


class Generate(NamedTuple):
    """Ask the engine for a candidate. ``phase`` is ``PRE`` (repair ``input``) or ``POST``
    (produce an output for ``input``); ``attempt`` counts the engine calls of that stage
    from 1; ``feedback`` holds the errors this attempt must fix; ``previous`` is the
    previous engine answer of the stage, if any."""

    phase: Phase
    attempt: int
    input: object
    feedback: tuple[Violation, ...]
    previous: object = None


class Sleep(NamedTuple):
    """Wait ``seconds`` before the next engine call (a backoff delay)."""

    seconds: float


class Reply(NamedTuple):
    """The engine's answer to ``Generate``: the raw output and what it cost."""

    output: object
    usage: Mapping[str, int] = _EMPTY


class EngineError(HoareError):
    """One engine call failed (after the engine's own transport retries). Raised while
    performing ``Generate``, it is that attempt's ``error`` violation (spec §4.1); unless
    it is a ``FatalEngineError``, the stage may try again."""


class FatalEngineError(EngineError):
    """An engine failure that retrying cannot fix (a spent budget, a rejected
    request, a missing replay): raised while performing ``Generate``, it ends the
    stage without further engine calls (spec §4.4)."""


class ForwardRaised(Exception):
    """Carries a ``StopIteration`` raised by ``forward`` out of the call generator,
    where PEP 479 would turn it into ``RuntimeError``; the drivers re-raise it as is."""

    def __init__(self, error: StopIteration) -> None:
        super().__init__(error)
        self.error = error


Effect = Generate | Sleep
T = TypeVar("T")


def run_sync(call: Generator[Effect, object, T], perform: Callable[[Effect], object]) -> T:
    """Drive ``call`` to completion, performing each effect with ``perform``."""
    try:
        effect = next(call)
        while True:
            try:
                answer = perform(effect)
            except Exception as error:
                effect = call.throw(error)
            else:
                effect = call.send(answer)
    except StopIteration as stop:
        result: T = stop.value
        return result
    except ForwardRaised as escaped:
        raise escaped.error from None


async def run_async(
    call: Generator[Effect, object, T], perform: Callable[[Effect], Awaitable[object]]
) -> T:
    """Drive ``call`` to completion, awaiting each effect with ``perform``."""
    try:
        effect = next(call)
        while True:
            try:
                answer = await perform(effect)
            except Exception as error:
                effect = call.throw(error)
            else:
                effect = call.send(answer)
    except StopIteration as stop:
        result: T = stop.value
        return result
    except ForwardRaised as escaped:
        raise escaped.error from None
