"""``FunctionEngine``: an engine made of a plain function, for tests, rule-based
components and offline demos."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .base import ONE_REQUEST, Request, Response

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
            return answer
        if isinstance(answer, str):
            return Response((answer,), ("stop",), ONE_REQUEST, self.model)
        shown = repr(answer)
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        raise TypeError(f"FunctionEngine function {getattr(self.fn, '__qualname__', self.fn)} "
                        f"must return str or Response, got {type(answer).__name__}: {shown}. "
                        "Return the model's text (e.g. a JSON string), or "
                        "hoare.engines.Response(texts=(...,)).")

    def complete(self, request: Request) -> Response:
        answer: object = self.fn(request)
        if inspect.iscoroutine(answer):
            answer = _run_coroutine(answer)
        elif inspect.isawaitable(answer):
            awaitable = answer

            async def wait() -> object:
                return await awaitable

            answer = _run_coroutine(wait())
        return self._wrap(answer)

    async def acomplete(self, request: Request) -> Response:
        answer: object = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return self._wrap(answer)
