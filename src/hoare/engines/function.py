"""``FunctionEngine``: an engine made of a plain function, for tests, rule-based
components and offline demos."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from .base import Request, Response, Usage

Answer = str | Response


class FunctionEngine:
    """``fn(request) -> str | Response`` (sync or async). A string answer is one
    completion with one request of usage and no token counts."""

    def __init__(self, fn: Callable[[Request], Answer | Awaitable[Answer]], *,
                 model: str = "function") -> None:
        if not callable(fn):
            raise TypeError(f"FunctionEngine needs a callable, got {fn!r}")
        self.fn = fn
        self.model = model
        self._is_async = inspect.iscoroutinefunction(fn)

    def _wrap(self, answer: object) -> Response:
        if isinstance(answer, Response):
            return answer
        if isinstance(answer, str):
            return Response((answer,), ("stop",), Usage(requests=1), self.model)
        raise TypeError(f"FunctionEngine function must return str or Response, "
                        f"got {type(answer).__name__}")

    def complete(self, request: Request) -> Response:
        if self._is_async:
            return self._wrap(asyncio.run(self.fn(request)))  # type: ignore[arg-type]
        return self._wrap(self.fn(request))

    async def acomplete(self, request: Request) -> Response:
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return self._wrap(answer)
