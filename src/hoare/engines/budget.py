"""Budgets: caps on what engine calls may spend, enforced before sending.

A ``Budget`` is the immutable policy (caps and a price table); a ``Spend`` is
a meter that enforces one budget and records what was spent; a
``BudgetedEngine`` puts a meter in front of any engine. The contract layer
creates one ``Spend`` per contract call for a per-call budget; one ``Spend``
may also be shared by many engines, calls and threads for a global cap.

Reserve, then settle. The cost of a request is only known once it is
answered, so a request first *reserves* (atomically, under the meter's lock)
one request and a worst-case bound of its tokens and cost: input tokens at
most the UTF-8 bytes of its messages and schema plus a few per message (a
token is at least one byte), output tokens at most ``max_tokens × n`` (unknown,
hence unbounded, when ``max_tokens`` is not set). When the answer arrives the
reservation is *settled* with the real usage (a failed call releases its
tokens; the request stays counted, it was sent).

When to refuse. The request cap is exact: the n-th request, transport retries
included, is refused when ``n > max_requests``. A token or cost cap admits a
request when what is spent plus what in-flight requests hold plus its own bound
fits under the cap; when it does not fit but other requests are in flight, the
request waits for them to settle; with nothing in flight it is admitted while
the spent amount is below the cap (so the last request may overshoot by its own
size, exactly as one caller alone would), and refused once the cap is reached.
Concurrent callers therefore never overspend more than one caller alone does.

Cache hits. Put the ``BudgetedEngine`` outside a ``CachedEngine`` to have a
replayed run spend (and be refused) exactly like the recorded one; inside it,
cache hits are free.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hoare.engines.base import BudgetExceeded, Engine, Request, Response, Usage, require_engine
from hoare.errors import BudgetError, EngineError
from hoare.forking import hold_across_fork

_PER_MESSAGE_TOKENS = 8  # role markers and separators a chat template adds per message
_WAIT_POLL = 0.005  # seconds between admission checks of an async caller that must wait


class MissingPrice(BudgetError, ValueError):
    """A cost cap is set but the price of the model in use is unknown."""


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars (or any currency) per million input and output tokens; input tokens the
    provider served from its prompt cache cost ``cached_input_per_million`` (None: the
    input price)."""

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million", "cached_input_per_million"):
            value = getattr(self, name)
            if value is None and name == "cached_input_per_million":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value >= 0):
                raise ValueError(f"Price({name}={value!r}): must be a finite number ≥ 0")

    def cost(self, usage: Usage) -> float:
        cached = min(getattr(usage, "cached_input_tokens", 0), usage.input_tokens)
        cached_price = self.input_per_million if self.cached_input_per_million is None \
            else self.cached_input_per_million
        total = ((usage.input_tokens - cached) * self.input_per_million
                 + cached * cached_price
                 + usage.output_tokens * self.output_per_million) / 1_000_000
        return min(total, sys.float_info.max)  # finite prices of huge counts: no infinity


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
        for name in ("max_requests", "max_input_tokens", "max_output_tokens"):
            value = getattr(self, name)  # a count: True or 1.5 is not one
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"Budget({name}={value!r}): must be a whole number ≥ 0 or "
                                 "None")
        cost = self.max_cost
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)
                                 or not cost >= 0):  # NaN fails ``>=``
            raise ValueError(f"Budget(max_cost={cost!r}): must be a number ≥ 0 or None")
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

    def call_meter(self) -> Spend:
        """A fresh meter for one call alone: no other thread can hold it when another
        forks (the call's thread is not in the child), so it is not held across a fork."""
        return Spend(self, False)


MAX_METERED = 10**12
"""The most tokens of one kind a meter takes from one answer (``OpenAIEngine`` reports no
more): a bigger number is not a count and would poison the meter's sums."""


def _metered_count(value: object) -> int:
    """A count a meter can add: a negative, NaN or non-numeric count would lower or poison
    it, so it reads as 0 (a meter never goes down); an infinite or huge one as the cap."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return min(max(value, 0), MAX_METERED)
    if isinstance(value, float):
        if math.isnan(value) or value <= 0:
            return 0
        return MAX_METERED if value >= MAX_METERED else math.ceil(value)
    return 0


def metered(usage: Usage) -> Usage:
    """``usage`` as a meter takes it: every count an integer in ``[0, MAX_METERED]`` (the
    engines validate what servers report; this guards every other source of a ``Usage``,
    such as a user's ``FunctionEngine`` answer)."""
    counts = (usage.requests, usage.input_tokens, usage.output_tokens,
              getattr(usage, "cached_input_tokens", 0))
    if all(type(c) is int and 0 <= c <= MAX_METERED for c in counts):
        return usage
    requests, input_tokens, output_tokens, cached = (_metered_count(c) for c in counts)
    return Usage(requests, input_tokens, output_tokens, min(cached, input_tokens))


@dataclass(frozen=True, slots=True)
class Bound:
    """A worst-case bound of what one request can spend (``None``: unbounded)."""

    input_tokens: int = 0
    output_tokens: int | None = None


def request_bound(request: Request, budget: Budget) -> Bound:
    """The worst case of ``request`` for the caps ``budget`` has (no rendering otherwise):
    a token is at least one UTF-8 byte, and the output is capped by ``max_tokens × n``."""
    input_tokens = 0
    if budget.max_input_tokens is not None or budget.max_cost is not None:
        for message in request.messages:
            input_tokens += _PER_MESSAGE_TOKENS + len(
                message.content.encode("utf-8", "surrogatepass"))
        if request.schema is not None:
            input_tokens += len(json.dumps(request.schema, default=str).encode())
    max_tokens = request.options.max_tokens
    output = max_tokens * max(1, request.options.n) if max_tokens is not None else None
    return Bound(input_tokens, output)


@dataclass(slots=True)
class Reservation:
    """What one admitted request holds on a meter until it is settled."""

    input_tokens: float
    output_tokens: float
    cost: float
    price: Price | None
    settled: bool = False


class Spend:
    """A thread-safe meter enforcing one ``Budget``.

    ``reserve(model, bound)`` before sending (raises ``BudgetExceeded`` if a cap forbids
    the request, waits while in-flight requests may free room), ``settle(reservation,
    usage)`` after the answer, ``release(reservation)`` when the call failed.
    """

    def __init__(self, budget: Budget, shared: bool = True) -> None:
        self.budget = budget
        self._lock = threading.Condition()
        if shared:  # a meter callers share: free in a forked child (hoare.forking)
            hold_across_fork(self, self._lock)
        self._requests = 0
        self._input = 0
        self._output = 0
        self._cost = 0.0
        self._held = [0.0, 0.0, 0.0]  # input tokens, output tokens, cost held by in-flight
        self._unbounded = [0, 0, 0]  # in-flight requests holding an unbounded amount of each
        self._in_flight = 0

    def __repr__(self) -> str:
        return f"Spend({self.spent()}, budget={self.budget})"

    def _refusal(self, model: str | None, reasons: list[str]) -> BudgetExceeded:
        return BudgetExceeded(
            f"budget exhausted, request to {model or 'the engine'} not sent: "
            + "; ".join(reasons) + ". Raise the cap or pass a larger budget.")

    def _try_reserve(self, model: str | None, bound: Bound,
                     price: Price | None) -> Reservation | None:
        """Admit (a ``Reservation``), refuse (raise), or ``None``: wait and try again.
        Call with the lock held."""
        b = self.budget
        refusals: list[str] = []
        if b.max_requests is not None and self._requests + 1 > b.max_requests:
            plural = "" if self._requests == 1 else "s"
            refusals.append(f"{self._requests} request{plural} sent, cap max_requests="
                            f"{b.max_requests}")
        output_need = math.inf if bound.output_tokens is None else float(bound.output_tokens)
        if price is None:
            cost_need = 0.0
        elif bound.output_tokens is None:
            cost_need = math.inf
        else:
            cost_need = price.cost(Usage(0, bound.input_tokens, bound.output_tokens))
        needs = (float(bound.input_tokens), output_need, cost_need)
        caps = (b.max_input_tokens, b.max_output_tokens, b.max_cost)
        spent = (self._input, self._output, self._cost)
        labels = ("input tokens spent, cap max_input_tokens", "output tokens spent, cap "
                  "max_output_tokens", "spent, cap max_cost")
        wait = False
        held_now = [math.inf if n else h for h, n in zip(self._held, self._unbounded, strict=True)]
        for cap, used, held, need, label in zip(caps, spent, held_now, needs, labels,
                                                strict=True):
            if cap is None:
                continue
            if used >= cap:
                shown = f"cost {used:.6g}" if label.endswith("max_cost") else str(used)
                refusals.append(f"{shown} {label}={cap}")
            elif used + held + need > cap and self._in_flight > 0:
                wait = True
        if refusals:
            refusal = self._refusal(model, refusals)
            refusal.unsent = True  # refused before sending: outer meters withdraw theirs
            raise refusal
        if wait:
            return None
        held_needs = (needs[0] if caps[0] is not None else 0.0,
                      needs[1] if caps[1] is not None else 0.0,
                      needs[2] if caps[2] is not None else 0.0)
        self._requests += 1
        self._in_flight += 1
        self._hold(held_needs, 1)
        return Reservation(held_needs[0], held_needs[1], held_needs[2], price)

    def reserve(self, model: str | None, bound: Bound | None = None) -> Reservation:
        """Admit one request for ``model`` (waiting while in-flight requests hold the room
        it needs) or raise ``BudgetExceeded`` (nothing is sent)."""
        price = self.budget.require_price(model)
        bound = bound or Bound()
        with self._lock:
            while True:
                reservation = self._try_reserve(model, bound, price)
                if reservation is not None:
                    return reservation
                self._lock.wait()

    async def areserve(self, model: str | None, bound: Bound | None = None) -> Reservation:
        """``reserve`` for async callers: waits without blocking the event loop."""
        price = self.budget.require_price(model)
        bound = bound or Bound()
        while True:
            with self._lock:
                reservation = self._try_reserve(model, bound, price)
            if reservation is not None:
                return reservation
            await asyncio.sleep(_WAIT_POLL)

    def _hold(self, amounts: tuple[float, float, float], sign: int) -> None:
        for i, amount in enumerate(amounts):
            if math.isinf(amount):
                self._unbounded[i] += sign
            else:
                self._held[i] += sign * amount

    def _unhold(self, reservation: Reservation) -> None:
        if reservation.settled:
            return
        reservation.settled = True
        self._hold((reservation.input_tokens, reservation.output_tokens, reservation.cost), -1)
        self._in_flight -= 1
        if self._in_flight == 0:  # no rounding drift survives an idle meter
            self._held, self._unbounded = [0.0, 0.0, 0.0], [0, 0, 0]
        self._lock.notify_all()

    def settle(self, reservation: Reservation, usage: Usage) -> float:
        """Replace a reservation by the real ``usage`` of its answer; returns its cost."""
        usage = metered(usage)
        price = reservation.price
        cost = price.cost(usage) if price is not None else 0.0
        with self._lock:
            self._input += usage.input_tokens
            self._output += usage.output_tokens
            self._cost = min(self._cost + cost, sys.float_info.max)  # a sum of finite costs
            self._unhold(reservation)
        return cost

    def release(self, reservation: Reservation) -> None:
        """Give back what a failed call held (its request stays counted: it was sent)."""
        with self._lock:
            self._unhold(reservation)

    def withdraw(self, reservation: Reservation) -> None:
        """Cancel a reservation whose request was never sent (an inner meter refused
        it): give back what it held and its request."""
        with self._lock:
            if not reservation.settled:
                self._requests -= 1
            self._unhold(reservation)

    def charge_retry(self, model: str | None) -> None:
        """Count one transport retry (a resend) as a request, or raise ``BudgetExceeded``."""
        b = self.budget
        with self._lock:
            if b.max_requests is not None and self._requests + 1 > b.max_requests:
                plural = "" if self._requests == 1 else "s"
                raise self._refusal(model, [
                    f"{self._requests} request{plural} sent (transport retries included), "
                    f"cap max_requests={b.max_requests}"])
            self._requests += 1

    def record(self, usage: Usage, price: Price | None) -> float:
        """Add token usage spent outside a reservation (and its cost at ``price``)."""
        usage = metered(usage)
        cost = price.cost(usage) if price is not None else 0.0
        with self._lock:
            self._input += usage.input_tokens
            self._output += usage.output_tokens
            self._cost = min(self._cost + cost, sys.float_info.max)  # a sum of finite costs
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


_ACTIVE: contextvars.ContextVar[tuple[tuple[Spend, str | None], ...]] = contextvars.ContextVar(
    "hoare_active_spends", default=())


@contextmanager
def _metering(spend: Spend, model: str | None) -> Iterator[None]:
    token = _ACTIVE.set((*_ACTIVE.get(), (spend, model)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def charge_transport_retry() -> None:
    """Charge one resend to every budget the current engine call runs under (called by
    ``TransportRetry`` before each retry; raises ``BudgetExceeded`` when a cap forbids it)."""
    for spend, model in _ACTIVE.get():
        spend.charge_retry(model)


def _model_of(engine: object, request: Request | None = None) -> str | None:
    if request is not None and request.options.model:
        return request.options.model
    model = getattr(engine, "model", None)
    return model if isinstance(model, str) and model else None


class BudgetedEngine:
    """``inner`` behind a budget meter: reserves before sending, settles after.

    ``budget`` may be a ``Budget`` (a fresh meter is made) or a ``Spend`` (shared).
    With a cost cap, the price of ``inner.model`` is checked here, up front.
    """

    def __init__(self, inner: Engine, budget: Budget | Spend) -> None:
        require_engine(inner, "BudgetedEngine")
        if not isinstance(budget, Budget | Spend):
            raise TypeError(f"BudgetedEngine(budget=...): expected a Budget or a Spend meter, "
                            f"got {type(budget).__name__}")
        self.inner = inner
        self.spend = budget if isinstance(budget, Spend) else Spend(budget)
        self.budget = self.spend.budget
        if self.budget.max_cost is not None:
            self.budget.require_price(_model_of(inner))

    def __repr__(self) -> str:
        return f"BudgetedEngine({self.inner!r}, {self.budget!r})"

    @property
    def model(self) -> str | None:
        return _model_of(self.inner)

    def spent(self) -> dict[str, Any]:
        return self.spend.spent()

    def _undo(self, reservation: Reservation, failure: BaseException) -> None:
        """A failed call: withdraw the reservation when an inner meter refused the request
        (it was never sent), else release it (the request was sent and stays counted)."""
        if isinstance(failure, BudgetExceeded) and failure.unsent:
            self.spend.withdraw(reservation)
            return
        usage = getattr(failure, "usage", None) if isinstance(failure, EngineError) else None
        if isinstance(usage, Usage):  # a paid answer that is not an answer (a refusal)
            self.spend.settle(reservation, usage)
        else:
            self.spend.release(reservation)

    def complete(self, request: Request) -> Response:
        model = _model_of(self.inner, request)
        reservation = self.spend.reserve(model, request_bound(request, self.budget))
        try:
            with _metering(self.spend, model):
                response = self.inner.complete(request)
        except BaseException as failure:
            self._undo(reservation, failure)
            raise
        self.spend.settle(reservation, _usage_of(response))
        return response

    async def acomplete(self, request: Request) -> Response:
        model = _model_of(self.inner, request)
        reservation = await self.spend.areserve(model, request_bound(request, self.budget))
        try:
            with _metering(self.spend, model):
                response = await self.inner.acomplete(request)
        except BaseException as failure:
            self._undo(reservation, failure)
            raise
        self.spend.settle(reservation, _usage_of(response))
        return response


def _usage_of(response: object) -> Usage:
    usage = response.usage if isinstance(response, Response) else None  # foreign: none
    return usage if isinstance(usage, Usage) else Usage()
