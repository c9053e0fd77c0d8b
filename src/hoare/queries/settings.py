"""A policy's settings and bounds: the keyword arguments of ``query.run``, ``few_shot``
and ``classify`` checked once into ``Settings`` (so a wrong one is the caller's error
before any request), the budget put in front of the engine (``metered``), its token caps
for ``num_completions="auto"``, and ``RequestsSpent``, raised when ``max_requests`` is
used up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hoare.engines.base import Options
from hoare.engines.budget import Budget, BudgetedEngine, Spend
from hoare.errors import FatalEngineError, UsageError
from hoare.queries.demonstrations import Example, Selector, examples_for, load_demonstrations
from hoare.queries.query import Query

__all__ = ["Meter", "RequestsSpent", "Settings", "metered", "policy_settings", "split_budget",
           "token_caps"]


class RequestsSpent(FatalEngineError):
    """The policy's ``max_requests`` were all sent; no further request is made."""


@dataclass(frozen=True)
class Settings:
    """A policy's keyword arguments, checked (``policy_settings``)."""

    params: Mapping[str, Any]
    mode: str | None
    temperature: float | None
    max_tokens: int | None
    num_completions: int  # 0: "auto" (decided when the session starts)
    max_requests: int | None
    iterative: bool
    tries: int
    examples: tuple[Example, ...]
    auto_examples: bool
    near_miss: str | None
    no_wrap_parse_errors: bool = False


def policy_settings(query: Query[Any], *, params: Mapping[str, Any] | None = None,
                    examples: Any = None, select_examples: Sequence[Selector] = (),
                    mode: str | None = None, temperature: float | None = None,
                    max_tokens: int | None = None, num_completions: int | str = 1,
                    max_requests: int | None = None, iterative_mode: bool = False,
                    tries: int = 3, near_miss: str | None = None,
                    no_wrap_parse_errors: bool = False) -> Settings:
    """The checked settings of one policy run on ``query``; ``UsageError`` names a wrong
    argument."""
    auto_n = num_completions == "auto"
    if not auto_n and (not isinstance(num_completions, int) or isinstance(num_completions, bool)
                       or num_completions < 1):
        raise UsageError(f"num_completions must be an integer >= 1 or 'auto', got "
                         f"{num_completions!r}")
    if iterative_mode and num_completions != 1:
        raise UsageError("iterative_mode keeps one conversation: it needs num_completions=1")
    if max_requests is not None and (not isinstance(max_requests, int)
                                     or isinstance(max_requests, bool) or max_requests < 1):
        raise UsageError(f"max_requests must be an integer >= 1 or None, got {max_requests!r}")
    if not isinstance(no_wrap_parse_errors, bool):
        raise UsageError(f"no_wrap_parse_errors must be True or False, got "
                         f"{no_wrap_parse_errors!r}")
    if not isinstance(tries, int) or isinstance(tries, bool) or tries < 1:
        raise UsageError(f"tries must be an integer >= 1, got {tries!r}")
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(f"params must be a mapping, got {type(params).__name__}")
    if not isinstance(query, Query):
        raise UsageError(f"the query must be a hoare.queries.Query instance, got "
                         f"{type(query).__name__}")
    query.mode_settings(mode)  # an unknown mode is an error now, not at the first answer
    auto = isinstance(examples, str) and examples == "auto"
    if near_miss is not None and not auto:
        raise UsageError("near_miss= names a post-condition of an examples='auto' near miss; "
                         "pass examples='auto' too")
    chosen: list[Example] = []
    if examples is not None and not auto:
        if isinstance(examples, (str, Path)) or isinstance(examples, (list, tuple)):
            loaded = load_demonstrations(examples)
        else:
            raise UsageError(f"examples must be a file, a list of entries or 'auto', got "
                             f"{type(examples).__name__}")
        chosen = examples_for(query, loaded, mode, select_examples)
    mode_settings = query.mode_settings(mode)
    chosen_temperature = temperature if temperature is not None else mode_settings.temperature
    chosen_max_tokens = max_tokens if max_tokens is not None else mode_settings.max_tokens
    # refused now, as the caller's error: every request would carry these options, and
    # an option no request can carry fails before any is sent, on every retry
    Options(temperature=chosen_temperature, max_tokens=chosen_max_tokens,
            n=1 if auto_n else int(num_completions))
    return Settings(dict(params or {}), mode, chosen_temperature, chosen_max_tokens,
                    0 if auto_n else int(num_completions), max_requests, iterative_mode,
                    tries, tuple(chosen), auto, near_miss, no_wrap_parse_errors)


def split_budget(policy: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(budget, the other options)`` of a policy's keyword arguments."""
    budget = policy.pop("budget", None)
    return budget, policy


class Meter(Protocol):
    """What reports a budgeted run's spending (a ``BudgetedEngine``, a ``QueryBudget``)."""

    def spent(self) -> Mapping[str, Any]: ...


def metered(engine: Any, budget: Any) -> tuple[Any, Meter | None]:
    """The engine behind the budget's meters, and the object whose ``spent()`` reports."""
    if budget is None:
        return engine, None
    if isinstance(budget, (Budget, Spend)):
        wrapped = BudgetedEngine(engine, budget)
        return wrapped, wrapped
    from hoare.queries.pricing import QueryBudget, budget_from_limits

    if isinstance(budget, Mapping):
        budget = budget_from_limits(budget)
    if isinstance(budget, QueryBudget):
        return budget.engine(engine, model_class=getattr(engine, "model_class", None),
                             pricing=getattr(engine, "pricing", None)), budget
    raise UsageError(f"budget must be a mapping of Delphyne budget keys, a QueryBudget, a "
                     f"hoare Budget or a Spend, got {type(budget).__name__}")


def token_caps(budget: Any) -> tuple[float | None, float | None] | None:
    """(input, output) token caps of a budget (None: no such cap); None: no token cap."""
    caps: tuple[float | None, float | None]
    if isinstance(budget, Budget):
        caps = (budget.max_input_tokens, budget.max_output_tokens)
    elif isinstance(budget, Spend):
        caps = (budget.budget.max_input_tokens, budget.budget.max_output_tokens)
    elif isinstance(budget, Mapping):
        caps = (budget.get("input_tokens"), budget.get("output_tokens"))
    else:
        return None
    return None if caps == (None, None) else caps
