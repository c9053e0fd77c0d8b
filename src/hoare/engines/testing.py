"""Test engines: offline stand-ins for a model, in one place.

Tests of contracts, queries, agents and engine wrappers need an engine that answers
without a network. Three cover what tests write again and again:

* ``ScriptedEngine``: answers from a script, in order (the ``hoare_engine`` fixture
  of ``hoare.pytest_plugin`` is one). A script item is a text, a ``Response``, an
  exception to raise, or a value sent as JSON (a dict, a list, a pydantic model).
* ``DummyEngine``: the same answer to every request.
* ``FailingEngine``: raises the same error for every request.

Each records the requests it was given (``requests``, ``calls``) and has a ``model``
name, as a real engine has. They are not exported by ``hoare.engines``: import them
from ``hoare.engines.testing``.
"""

from __future__ import annotations

import json
import threading
from collections import deque

from hoare.engines.base import ONE_REQUEST, Request, Response
from hoare.engines.function import FunctionEngine
from hoare.errors import EngineError, FatalEngineError
from hoare.forking import hold_across_fork

__all__ = ["DummyEngine", "FailingEngine", "ScriptedEngine"]


def as_json(value: object) -> str:
    """``value`` as the JSON text a model would answer: a pydantic model through its
    ``model_dump_json``, anything else through ``json.dumps``."""
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return json.dumps(value)


class _Recording:
    """The requests an engine was given, recorded from any thread."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)

    @property
    def calls(self) -> int:
        """How many requests came in (answered or not)."""
        with self._lock:
            return len(self.requests)

    def _record(self, request: Request) -> int:
        """Record ``request``; returns its number (1 for the first)."""
        with self._lock:
            self.requests.append(request)
            return len(self.requests)


class ScriptedEngine(_Recording):
    """An offline engine answering from a script, in order, recording every request.

    ``ScriptedEngine(*answers)`` or ``ScriptedEngine().push(*answers)``: a ``str`` is
    the answer's text, a ``Response`` is returned as it is, an exception instance is
    raised (a failing call), anything else (a dict, a list, a pydantic model) is sent
    as JSON. A request that finds the script empty raises ``FatalEngineError`` (its
    stage ends) and is counted in ``exhausted``. Answers go through a
    ``FunctionEngine``, so ``Options.timeout`` and the answer checks work as there.
    ``name`` is how messages call the engine (``hoare_engine`` for the fixture);
    ``model`` names the model of its answers (``FunctionEngine``'s default).
    """

    def __init__(self, *answers: object, model: str = "function",
                 name: str = "ScriptedEngine") -> None:
        super().__init__(model)
        self.name = name
        self._answers: deque[str | Response | BaseException] = deque()
        self.exhausted = 0  # requests that found no scripted answer
        self._engine = FunctionEngine(self._answer, model=model)
        self.push(*answers)

    def __repr__(self) -> str:
        return f"ScriptedEngine({self.name!r}, remaining={self.remaining})"

    def push(self, *answers: object) -> ScriptedEngine:
        """Queue answers: strings, ``Response``s and exceptions as they are; models,
        dicts and lists as JSON."""
        for answer in answers:
            if isinstance(answer, str | Response | BaseException):
                self._answers.append(answer)
            else:
                self._answers.append(as_json(answer))
        return self

    @property
    def remaining(self) -> int:
        """Answers still in the script."""
        return len(self._answers)

    def _answer(self, request: Request) -> str | Response:
        number = self._record(request)
        try:
            answer = self._answers.popleft()
        except IndexError:
            self.exhausted += 1  # the hoare_engine fixture fails the test at teardown
            raise FatalEngineError(f"{self.name}: no scripted answer left for request "
                                   f"{number} (push more with {self.name}.push(...))") from None
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def complete(self, request: Request) -> Response:
        return self._engine.complete(request)

    async def acomplete(self, request: Request) -> Response:
        return await self._engine.acomplete(request)


class DummyEngine(_Recording):
    """An offline engine giving the same answer to every request: ``answer`` is the text
    (one completion, one request of usage) or a whole ``Response``."""

    def __init__(self, answer: str | Response = "", *, model: str = "dummy") -> None:
        super().__init__(model)
        self.response = answer if isinstance(answer, Response) else Response(
            (answer,), ("stop",), ONE_REQUEST, model)

    def __repr__(self) -> str:
        return f"DummyEngine({self.response.text!r})"

    def complete(self, request: Request) -> Response:
        self._record(request)
        return self.response

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


class FailingEngine(_Recording):
    """An offline engine that raises ``error`` for every request. ``error`` is an
    exception instance (raised as it is) or an exception class (instantiated with a
    message naming the call); by default an ``EngineError``."""

    def __init__(self, error: BaseException | type[BaseException] = EngineError, *,
                 model: str = "failing") -> None:
        super().__init__(model)
        self.error = error

    def __repr__(self) -> str:
        return f"FailingEngine({self.error!r})"

    def complete(self, request: Request) -> Response:
        number = self._record(request)
        if isinstance(self.error, BaseException):
            raise self.error
        raise self.error(f"FailingEngine: request {number} fails, as scripted")

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)
