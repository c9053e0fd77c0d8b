"""Budgets: caps on what engine calls may spend, enforced before sending.

A ``Budget`` is the immutable policy (caps and a price table); a ``Spend`` is
a meter that enforces one budget and records what was spent; a
``BudgetedEngine`` puts a meter in front of any engine. The contract layer
creates one ``Spend`` per contract call for a per-call budget; one ``Spend``
may also be shared by many engines or calls for a global cap.

When to refuse. The cost of a request is only known once it is answered, so
a meter refuses when the *next* request could not be afforded by what is
already spent: the request cap is exact (the n-th request is refused when
``n > max_requests``); token and cost caps refuse once the spent amount has
reached the cap (the last request allowed may overshoot by its own size).
Requests are counted when they are sent, under a lock, so concurrent callers
never overshoot the request cap either.

Cache hits. Put the ``BudgetedEngine`` outside a ``CachedEngine`` to have a
replayed run spend (and be refused) exactly like the recorded one; inside it,
cache hits are free.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..kernel import FatalEngineError
from .base import BudgetExceeded, Engine, EngineError, Request, Response, Usage


class MissingPrice(EngineError, FatalEngineError, ValueError):
    """A cost cap is set but the price of the model in use is unknown."""


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars (or any currency) per million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"Price({name}={value!r}): must be a finite number ≥ 0")

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input_per_million
                + usage.output_tokens * self.output_per_million) / 1_000_000


@dataclass(frozen=True)
class Budget:
    """Caps (``None``: no cap) and a price table ``{model: Price}``; the key ``"*"``
    prices any model not listed. A cost cap needs the price of every model used."""

    max_requests: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_cost: float | None = None
    prices: Mapping[str, Price] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in ("max_requests", "max_input_tokens", "max_output_tokens", "max_cost"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value >= 0):
                raise ValueError(f"Budget({name}={value!r}): must be a number ≥ 0 or None")
        object.__setattr__(self, "prices", MappingProxyType(dict(self.prices)))

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (exact name, else ``"*"``), or ``None``."""
        return self.prices.get(model) or self.prices.get("*")

    def require_price(self, model: str | None) -> Price | None:
        """The price of ``model``; with a cost cap, an unknown price is an error."""
        price = self.price(model) if model is not None else self.prices.get("*")
        if price is None and self.max_cost is not None:
            known = ", ".join(sorted(self.prices)) or "none"
            raise MissingPrice(
                f"Budget(max_cost={self.max_cost}) needs the price of model {model!r}, which is "
                f"not in its price table (known: {known}). Add prices={{{model!r}: "
                f"Price(input_per_million=..., output_per_million=...)}} or a '*' entry.")
        return price

    def meter(self) -> Spend:
        """A fresh meter for this budget."""
        return Spend(self)


class Spend:
    """A thread-safe meter enforcing one ``Budget``.

    ``reserve(model)`` before sending (raises ``BudgetExceeded`` if a cap forbids the
    request, else counts it), ``record(response, model)`` after an answer.
    """

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._requests = 0
        self._input = 0
        self._output = 0
        self._cost = 0.0

    def __repr__(self) -> str:
        return f"Spend({self.spent()}, budget={self.budget})"

    def reserve(self, model: str | None) -> Price | None:
        """Admit one request for ``model`` or raise ``BudgetExceeded`` (nothing is sent).
        Returns the model's price, if known."""
        price = self.budget.require_price(model)
        b = self.budget
        with self._lock:
            refusals = []
            if b.max_requests is not None and self._requests + 1 > b.max_requests:
                plural = "" if self._requests == 1 else "s"
                refusals.append(f"{self._requests} request{plural} sent, cap max_requests="
                                f"{b.max_requests}")
            if b.max_input_tokens is not None and self._input >= b.max_input_tokens:
                refusals.append(f"{self._input} input tokens spent, cap max_input_tokens="
                                f"{b.max_input_tokens}")
            if b.max_output_tokens is not None and self._output >= b.max_output_tokens:
                refusals.append(f"{self._output} output tokens spent, cap max_output_tokens="
                                f"{b.max_output_tokens}")
            if b.max_cost is not None and self._cost >= b.max_cost:
                refusals.append(f"cost {self._cost:.6g} spent, cap max_cost={b.max_cost}")
            if refusals:
                raise BudgetExceeded(
                    f"budget exhausted, request to {model or 'the engine'} not sent: "
                    + "; ".join(refusals) + ". Raise the cap or pass a larger budget.")
            self._requests += 1
        return price

    def record(self, usage: Usage, price: Price | None) -> float:
        """Add an answer's token usage (and cost at ``price``); returns that cost."""
        cost = price.cost(usage) if price is not None else 0.0
        with self._lock:
            self._input += usage.input_tokens
            self._output += usage.output_tokens
            self._cost += cost
        return cost

    def spent(self) -> dict[str, Any]:
        """``{"requests", "input_tokens", "output_tokens", "cost"}`` so far."""
        with self._lock:
            return {"requests": self._requests, "input_tokens": self._input,
                    "output_tokens": self._output, "cost": self._cost}

    @property
    def usage(self) -> Usage:
        with self._lock:
            return Usage(self._requests, self._input, self._output)


def _model_of(engine: object, request: Request | None = None) -> str | None:
    if request is not None and request.options.model:
        return request.options.model
    model = getattr(engine, "model", None)
    return model if isinstance(model, str) and model else None


class BudgetedEngine:
    """``inner`` behind a budget meter: refuses before sending, records after.

    ``budget`` may be a ``Budget`` (a fresh meter is made) or a ``Spend`` (shared).
    With a cost cap, the price of ``inner.model`` is checked here, up front.
    """

    def __init__(self, inner: Engine, budget: Budget | Spend) -> None:
        self.inner = inner
        self.spend = budget if isinstance(budget, Spend) else Spend(budget)
        self.budget = self.spend.budget
        if self.budget.max_cost is not None:
            self.budget.require_price(_model_of(inner))

    @property
    def model(self) -> str | None:
        return _model_of(self.inner)

    def spent(self) -> dict[str, Any]:
        return self.spend.spent()

    def complete(self, request: Request) -> Response:
        price = self.spend.reserve(_model_of(self.inner, request))
        response = self.inner.complete(request)
        self.spend.record(response.usage, price)
        return response

    async def acomplete(self, request: Request) -> Response:
        price = self.spend.reserve(_model_of(self.inner, request))
        response = await self.inner.acomplete(request)
        self.spend.record(response.usage, price)
        return response
