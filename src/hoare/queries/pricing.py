"""Models, prices and Delphyne's budget keys, mapped once onto hoare's budget meters.

``standard_model(name)`` is an ``OpenAIEngine`` for any OpenAI-compatible server that
also knows its price (``ModelPricing``, per *million* tokens as hoare's ``Price``;
Delphyne's is per token) and its model class. ``budget_from_limits`` reads Delphyne's
budget keys::

    num_requests, num_completions, input_tokens, cached_input_tokens, output_tokens, price
    and each of them for one model class: num_requests__small, price__large, ...

Requests, input and output tokens and price are hoare's ``Budget`` caps
(``max_requests``, ``max_input_tokens``, ``max_output_tokens``, ``max_cost``), one
``Spend`` meter for the unqualified keys and one per model class, so the reservation
rules of ``hoare.engines.budget`` (refuse before sending, never overspend under
concurrency) hold here unchanged. ``num_completions`` and ``cached_input_tokens``
have no hoare meter: ``QueryBudget`` counts them itself (completions are refused
before sending when ``n`` would pass the cap; cached tokens, unknown in advance,
are refused once the cap is reached).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from hoare.contracts.driver import spent_by
from hoare.engines.base import BudgetExceeded, Options, Request, Response, Usage
from hoare.engines.budget import Budget, BudgetedEngine, Price, Spend
from hoare.engines.openai_engine import OpenAIEngine
from hoare.forking import hold_across_fork

__all__ = [
    "DEEPSEEK_MODELS",
    "DOLLAR_PRICE",
    "GEMINI_MODELS",
    "KNOWN_PRICING",
    "MISTRAL_MODELS",
    "NUM_CACHED_INPUT_TOKENS",
    "NUM_COMPLETIONS",
    "NUM_INPUT_TOKENS",
    "NUM_OUTPUT_TOKENS",
    "NUM_REQUESTS",
    "OPENAI_MODELS",
    "OPENAI_RESPONSES_MODELS",
    "STANDARD_MODELS",
    "ModelPricing",
    "QueryBudget",
    "StandardModel",
    "budget_entry",
    "budget_from_limits",
    "pricing_for",
    "standard_model",
]

NUM_REQUESTS = "num_requests"
NUM_COMPLETIONS = "num_completions"
NUM_INPUT_TOKENS = "input_tokens"
NUM_CACHED_INPUT_TOKENS = "cached_input_tokens"
NUM_OUTPUT_TOKENS = "output_tokens"
DOLLAR_PRICE = "price"
CATEGORIES = (NUM_REQUESTS, NUM_COMPLETIONS, NUM_INPUT_TOKENS, NUM_CACHED_INPUT_TOKENS,
              NUM_OUTPUT_TOKENS, DOLLAR_PRICE)
SEPARATOR = "__"


@dataclass(frozen=True)
class ModelPricing:
    """Dollars per million input, cached input and output tokens."""

    dollars_per_million_input: float
    dollars_per_million_cached_input: float
    dollars_per_million_output: float

    def __post_init__(self) -> None:
        self.as_price()  # validates each figure (finite, >= 0)

    def as_price(self) -> Price:
        return Price(self.dollars_per_million_input, self.dollars_per_million_output,
                     self.dollars_per_million_cached_input)

    def cost(self, usage: Usage) -> float:
        return self.as_price().cost(usage)


# List prices in USD per million tokens (input, cached input, output) of every standard
# model of Delphyne's table, read from jonathan-laurent/delphyne at commit e451493
# (src/delphyne/stdlib/standard_models.py, ``PRICING`` and the ``*ModelName`` literals).
# Prices change: pass pricing=ModelPricing(...) to override.
OPENAI_MODELS = ("gpt-5.2", "gpt-5.1", "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1",
                 "gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini")
OPENAI_RESPONSES_MODELS = ("gpt-5-pro",)
"""Served by OpenAI's Responses API only (``api_type="responses"``)."""
MISTRAL_MODELS = ("mistral-small-2503", "magistral-small-2506", "mistral-medium-2508",
                  "mistral-medium-3-5", "mistral-small-2603")
DEEPSEEK_MODELS = ("deepseek-chat", "deepseek-reasoner")
GEMINI_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")
STANDARD_MODELS = (*OPENAI_RESPONSES_MODELS, *OPENAI_MODELS, *MISTRAL_MODELS,
                   *DEEPSEEK_MODELS, *GEMINI_MODELS)
"""Delphyne's ``StandardModelName``: every one has a price in ``KNOWN_PRICING``."""

KNOWN_PRICING: Mapping[str, ModelPricing] = MappingProxyType({
    "gpt-5-pro": ModelPricing(15.00, 15.00, 120.00),
    "gpt-5.2": ModelPricing(1.75, 0.175, 14.00),
    "gpt-5.1": ModelPricing(1.25, 0.125, 10.00),
    "gpt-5": ModelPricing(1.25, 0.125, 10.00),
    "gpt-5-mini": ModelPricing(0.25, 0.025, 2.00),
    "gpt-5-nano": ModelPricing(0.05, 0.005, 0.40),
    "gpt-4.1": ModelPricing(2.00, 0.50, 8.00),
    "gpt-4.1-mini": ModelPricing(0.40, 0.10, 1.60),
    "gpt-4.1-nano": ModelPricing(0.10, 0.025, 0.40),
    "gpt-4o": ModelPricing(2.50, 1.25, 10.00),
    "gpt-4o-mini": ModelPricing(0.15, 0.075, 0.60),
    "o3": ModelPricing(2.00, 0.50, 8.00),
    "o4-mini": ModelPricing(1.10, 0.275, 4.40),
    "mistral-small-2503": ModelPricing(0.10, 0.10, 0.30),
    "magistral-small-2506": ModelPricing(0.5, 0.5, 1.5),
    "mistral-medium-2508": ModelPricing(0.4, 0.4, 2.0),
    "mistral-medium-3-5": ModelPricing(1.5, 1.5, 7.5),
    "mistral-small-2603": ModelPricing(0.15, 0.15, 0.6),
    "deepseek-chat": ModelPricing(0.27, 0.07, 1.10),
    "deepseek-reasoner": ModelPricing(0.55, 0.14, 2.19),
    "gemini-2.5-pro": ModelPricing(1.25, 0.31, 10.00),
    "gemini-2.5-flash": ModelPricing(0.30, 0.075, 2.50),
    "gemini-2.5-flash-lite": ModelPricing(0.10, 0.025, 0.40),
})


def pricing_for(name: str) -> ModelPricing | None:
    """The known pricing of the longest model name that ``name`` starts with (a dated
    snapshot such as ``gpt-4o-2024-08-06`` is priced as ``gpt-4o``), else None."""
    if not isinstance(name, str):
        raise TypeError(f"pricing_for needs a model name (str), got {type(name).__name__}")
    best = max((known for known in KNOWN_PRICING
                if name == known or name.startswith(known + "-")), key=len, default=None)
    return None if best is None else KNOWN_PRICING[best]


def budget_entry(category: str, model_class: str | None = None) -> str:
    """The budget key of ``category``, for one model class if given."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown budget category {category!r}: expected one of "
                         f"{', '.join(CATEGORIES)}")
    return category if model_class is None else f"{category}{SEPARATOR}{model_class}"


def _parse_key(key: object) -> tuple[str, str | None]:
    if not isinstance(key, str):
        raise ValueError(f"budget key {key!r} is not a string")
    category, sep, model_class = key.partition(SEPARATOR)
    if category not in CATEGORIES or (sep and not model_class):
        raise ValueError(f"budget key {key!r}: expected one of {', '.join(CATEGORIES)}, "
                         f"optionally followed by {SEPARATOR}<model_class>")
    return category, model_class if sep else None


class _Level:
    """The meters of the unqualified keys, or of one model class."""

    def __init__(self, limits: dict[str, float], prices: dict[str, Price]) -> None:
        def cap(key: str) -> Any:
            return limits.get(key)
        budget = Budget(max_requests=_int(cap(NUM_REQUESTS)),
                        max_input_tokens=_int(cap(NUM_INPUT_TOKENS)),
                        max_output_tokens=_int(cap(NUM_OUTPUT_TOKENS)),
                        max_cost=cap(DOLLAR_PRICE))
        # the prices of the models registered so far, seen live by the meter
        object.__setattr__(budget, "prices", MappingProxyType(prices))
        self.spend = Spend(budget)
        self.max_completions = _int(cap(NUM_COMPLETIONS))
        self.max_cached = _int(cap(NUM_CACHED_INPUT_TOKENS))
        self.completions = 0
        self.cached = 0


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"a token or request cap must be a number >= 0, got {value!r}")
    return None if value == math.inf else int(value)  # an infinite cap is no cap


class QueryBudget:
    """One budget (Delphyne's keys) shared by any number of engines, threads and loops."""

    def __init__(self, limits: Mapping[str, float]) -> None:
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child
        self._prices: dict[str, Price] = {}
        grouped: dict[str | None, dict[str, float]] = {None: {}}
        for key, value in limits.items():
            category, model_class = _parse_key(key)
            if category == DOLLAR_PRICE and (isinstance(value, bool) or
                                             not isinstance(value, int | float) or value < 0):
                raise ValueError(f"budget key {key!r}: a price cap must be a number >= 0")
            grouped.setdefault(model_class, {})[category] = value
        self._levels = {c: _Level(v, self._prices) for c, v in grouped.items()}

    def _level(self, model_class: str | None) -> _Level:
        with self._lock:
            level = self._levels.get(model_class)
            if level is None:
                level = self._levels[model_class] = _Level({}, self._prices)
            return level

    def engine(self, engine: Any, model_class: str | None = None,
               pricing: ModelPricing | None = None) -> Any:
        """``engine`` behind this budget: every request through the unqualified meters
        and, with a ``model_class``, that class's meters."""
        name = getattr(engine, "model", None)
        if pricing is not None and isinstance(name, str):
            with self._lock:
                self._prices[name] = pricing.as_price()
        levels = [self._level(None)]
        if model_class is not None:
            levels.append(self._level(model_class))
        inner = engine
        for level in reversed(levels):
            inner = BudgetedEngine(inner, level.spend)
        return _Counted(inner, levels, self._lock)

    def spent(self) -> dict[str, float]:
        """What was spent, in Delphyne's keys (``<key>__<class>`` per class used)."""
        out: dict[str, float] = {}
        with self._lock:
            levels = list(self._levels.items())
        for model_class, level in levels:
            spent = level.spend.spent()
            values = {NUM_REQUESTS: spent["requests"], NUM_COMPLETIONS: level.completions,
                      NUM_INPUT_TOKENS: spent["input_tokens"],
                      NUM_CACHED_INPUT_TOKENS: level.cached,
                      NUM_OUTPUT_TOKENS: spent["output_tokens"], DOLLAR_PRICE: spent["cost"]}
            for category, value in values.items():
                out[budget_entry(category, model_class)] = value
        return out


def budget_from_limits(limits: Mapping[str, float]) -> QueryBudget:
    """A ``QueryBudget`` from Delphyne's budget keys (an unknown key is a ``ValueError``
    naming it)."""
    if not isinstance(limits, Mapping):
        raise ValueError(f"budget limits must be a mapping, got {type(limits).__name__}")
    return QueryBudget(limits)


def _unsent(message: str) -> BudgetExceeded:
    refusal = BudgetExceeded(message)
    refusal.unsent = True
    return refusal


class _Counted:
    """Completions and cached tokens, counted and capped around the hoare meters."""

    def __init__(self, inner: Any, levels: list[_Level], lock: threading.Lock) -> None:
        self.inner = inner
        self.levels = levels
        self.lock = lock

    @property
    def model(self) -> Any:
        return getattr(self.inner, "model", None)

    def _admit(self, request: Request) -> None:
        n = max(1, request.options.n)
        with self.lock:
            for level in self.levels:
                if level.max_completions is not None and \
                        level.completions + n > level.max_completions:
                    raise _unsent(
                        f"budget {NUM_COMPLETIONS}: {level.completions} completion(s) spent, "
                        f"{n} more would pass the cap of {level.max_completions}")
                if level.max_cached is not None and level.cached >= level.max_cached:
                    raise _unsent(
                        f"budget {NUM_CACHED_INPUT_TOKENS}: {level.cached} spent, the cap "
                        f"is {level.max_cached}")
            for level in self.levels:  # held now; corrected when the answer comes
                level.completions += n

    def _settle(self, request: Request, response: object) -> None:
        n = max(1, request.options.n)
        # an engine's answer is read only when it is a Response (a foreign one may raise)
        texts = response.texts if isinstance(response, Response) else ()
        got = len(texts) if isinstance(texts, tuple) else n
        usage = response.usage if isinstance(response, Response) else None
        cached = getattr(usage, "cached_input_tokens", 0) if usage is not None else 0
        if isinstance(cached, bool) or not isinstance(cached, int) or cached < 0:
            cached = 0  # an engine's count is foreign data: only a count >= 0 is one
        with self.lock:
            for level in self.levels:
                level.completions += got - n
                level.cached += cached

    def _release(self, request: Request, error: BaseException) -> None:
        n = max(1, request.options.n)
        spent = spent_by(error)  # a refusal was paid for: its cached input tokens count
        cached = 0 if spent is None else spent.cached_input_tokens
        with self.lock:
            for level in self.levels:
                level.completions -= n
                level.cached += cached

    def complete(self, request: Request) -> Response:
        self._admit(request)
        try:
            response: Response = self.inner.complete(request)
        except BaseException as error:
            self._release(request, error)
            raise
        self._settle(request, response)
        return response

    async def acomplete(self, request: Request) -> Response:
        self._admit(request)
        try:
            response: Response = await self.inner.acomplete(request)
        except BaseException as error:
            self._release(request, error)
            raise
        self._settle(request, response)
        return response


class StandardModel:
    """An ``OpenAIEngine`` with its pricing and model class (see ``standard_model``)."""

    def __init__(self, name: str, pricing: ModelPricing | None, model_class: str | None,
                 inner: OpenAIEngine) -> None:
        self.name = name
        self.model = name
        self.pricing = pricing
        self.model_class = model_class
        self.inner = inner

    def __repr__(self) -> str:
        return (f"standard_model({self.name!r}, model_class={self.model_class!r}, "
                f"priced={self.pricing is not None})")

    def cost(self, usage: Usage) -> float | None:
        return None if self.pricing is None else self.pricing.cost(usage)

    def complete(self, request: Request) -> Response:
        return self.inner.complete(request)

    async def acomplete(self, request: Request) -> Response:
        return await self.inner.acomplete(request)


def standard_model(name: str, *, pricing: ModelPricing | Literal["auto"] | None = "auto",
                   model_class: str | None = None, options: Options | None = None,
                   base_url: str | None = None, api_key: str | None = None,
                   **engine_options: Any) -> StandardModel:
    """A model on any OpenAI-compatible server (``OPENAI_BASE_URL``/``base_url``).
    ``pricing="auto"`` looks ``name`` up in ``KNOWN_PRICING`` (None when unknown: a
    ``price`` budget then fails with ``MissingPrice``); ``model_class`` names the budget
    keys ``<key>__<model_class>`` this model also counts toward."""
    if pricing == "auto":
        resolved = pricing_for(name)
    elif pricing is None or isinstance(pricing, ModelPricing):
        resolved = pricing
    else:
        raise TypeError(f"pricing must be 'auto', None or a ModelPricing, got {pricing!r}")
    engine = OpenAIEngine(name, base_url=base_url, api_key=api_key, default_options=options,
                          **engine_options)
    return StandardModel(name, resolved, model_class, engine)
