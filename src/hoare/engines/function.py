"""``FunctionEngine``: an engine made of a plain function, for tests, rule-based
components and offline demos.

A request's ``Options.timeout`` bounds the function: past it the call raises
``EngineTimeout`` (a fatal engine error: the stage ends). A synchronous function
cannot be interrupted, so with a timeout it runs in a daemon thread that is
abandoned if it hangs. An answer that is neither ``str`` nor ``Response`` raises
``EngineAnswerError``: that attempt has no candidate and the stage goes on."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from hoare.engines.base import ONE_REQUEST, EngineAnswerError, Request, Response
from hoare.engines.deadline import WatchdogTimeout, call_within
from hoare.engines.transport import EngineTimeout, Failure, transport_error

Answer = str | Response


def _run_coroutine(coroutine: Coroutine[Any, Any, object]) -> object:
    """Run ``coroutine`` to completion from synchronous code. Inside a running event
    loop ``asyncio.run`` would refuse, so the coroutine gets its own loop in a worker
    thread (this blocks the caller's loop, as any synchronous call does)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="FunctionEngine") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class FunctionEngine:
    """``fn(request) -> str | Response`` (sync or async), usable from ``complete`` and
    ``acomplete``. A string answer is one completion with one request of usage and no
    token counts."""

    def __init__(self, fn: Callable[[Request], Answer | Awaitable[Answer]], *,
                 model: str = "function") -> None:
        if not callable(fn):
            raise TypeError(f"FunctionEngine needs a callable fn(request) -> str | Response, "
                            f"got {fn!r}")
        self.fn = fn
        self.model = model

    def __repr__(self) -> str:
        return f"FunctionEngine({getattr(self.fn, '__qualname__', self.fn)!r})"

    def _wrap(self, answer: object) -> Response:
        if isinstance(answer, Response):
            texts = answer.texts
            if type(texts) is tuple and all(type(t) is str for t in texts):
                return answer
            if isinstance(texts, list | tuple) and all(isinstance(t, str) for t in texts):
                return dataclasses.replace(answer, texts=tuple(str(t) for t in texts))
            name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
            raise EngineAnswerError(f"FunctionEngine function {name} returned a Response whose "
                                    f"texts are {_shown(texts)}: expected a tuple of str, one "
                                    "per completion (Response(texts=(text,)))")
        if isinstance(answer, str):
            return Response((answer,), ("stop",), ONE_REQUEST, self.model)
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        raise EngineAnswerError(f"FunctionEngine function {name} "
                                f"must return str or Response, got {type(answer).__name__}: "
                                f"{_shown(answer)}. Return the model's text (e.g. a JSON string), "
                                "or hoare.engines.Response(texts=(...,)).")

    def _timeout(self, seconds: float) -> EngineTimeout:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        error = transport_error(Failure("timeout", f"{name} did not answer within {seconds:g} s"),
                                attempts=1, where=f"FunctionEngine {name}")
        assert isinstance(error, EngineTimeout)
        return error

    def _answer(self, request: Request) -> object:
        return self._settled(self.fn(request))

    def _settled(self, answer: object) -> object:
        """``fn``'s answer, awaited to its end when it is a coroutine or an awaitable."""
        if inspect.iscoroutine(answer):
            answer = _run_coroutine(answer)
        elif inspect.isawaitable(answer):
            awaitable = answer

            async def wait() -> object:
                return await awaitable

            answer = _run_coroutine(wait())
        return answer

    def complete(self, request: Request) -> Response:
        seconds = request.options.timeout
        if seconds is None:
            answer: object = self.fn(request)
            if type(answer) is str:  # the common answer: nothing to await or to check
                return Response((answer,), ("stop",), ONE_REQUEST, self.model)
            return self._wrap(self._settled(answer))
        try:
            answer = call_within(lambda: self._answer(request), seconds, "FunctionEngine")
        except WatchdogTimeout:
            raise self._timeout(seconds) from None
        return self._wrap(answer)

    async def acomplete(self, request: Request) -> Response:
        seconds = request.options.timeout
        if seconds is None:
            answer: object = self.fn(request)
            if inspect.isawaitable(answer):
                answer = await answer
            return self._wrap(answer)
        if _is_async(self.fn):
            try:
                async with asyncio.timeout(seconds):
                    pending = self.fn(request)  # a coroutine: fn is async
                    answer = await pending if inspect.isawaitable(pending) else pending
            except TimeoutError:
                raise self._timeout(seconds) from None
            return self._wrap(answer)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()

        def settle(value: object, error: BaseException | None) -> None:
            if not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(value)

        def run() -> None:  # a daemon thread: a hung function cannot block loop shutdown
            try:
                value, error = self._answer(request), None
            except BaseException as raised:
                value, error = None, raised
            with contextlib.suppress(RuntimeError):  # the loop may be gone
                loop.call_soon_threadsafe(settle, value, error)

        threading.Thread(target=run, daemon=True, name="FunctionEngine").start()
        try:
            answer = await asyncio.wait_for(future, seconds)
        except TimeoutError:
            raise self._timeout(seconds) from None
        return self._wrap(answer)


def _shown(value: object) -> str:
    """A short repr of a foreign value (its ``repr`` may raise)."""
    try:
        shown = repr(value)
    except Exception:
        shown = f"<{type(value).__name__} whose repr() raised>"
    return shown if len(shown) <= 80 else shown[:80] + "…"


def _is_async(fn: object) -> bool:
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
