"""Prompting policies on the kernel: ``query.run``, ``few_shot`` and their async twins.

Every answer goes through the kernel (``hoare.kernel.run_call``): the query's
pre-conditions, the parser (a ``ParseError`` is a type violation), the
post-conditions, the remedy loop (the failure is fed back as a repair message)
and the statistics. The policy only decides which messages a ``Generate``
effect sends and where its answer comes from:

* ``num_completions=n`` asks for n samples in one request. The kernel takes
  them one by one as successive candidates (best-of-n as a remedy strategy):
  the first that satisfies the contract wins; a new request is sent only once
  the batch is used up, with the last failure's repair message. Statistics
  count samples, not only requests.
* ``iterative_mode=True`` keeps one conversation: each failed answer is
  followed by a repair message, each accepted one by a "more" message asking
  for a different answer (templates ``<Query>.repair.jinja``/``.more.jinja``).
* ``few_shot`` is a stream: each accepted answer is yielded as a ``Solution``
  with the spending so far. It ends when ``max_requests`` requests were sent,
  when the budget refuses a request, or when the engine fails for good; with
  neither ``max_requests`` nor a budget it runs as long as it is consumed.

This module holds the policies themselves; the run they drive is a ``Session``
(``session.py``), their keyword arguments and budgets are checked in ``settings.py``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hoare import telemetry
from hoare.kernel import (
    ContractViolationError,
    Outcome,
    Phase,
    run_async,
    run_call,
    run_sync,
)
from hoare.queries.answers import Answer
from hoare.queries.demonstrations import Selector
from hoare.queries.query import Query
from hoare.queries.session import Session
from hoare.queries.settings import policy_settings, split_budget

__all__ = ["Solution", "afew_shot", "arun_query", "few_shot", "one_acall", "one_call",
           "outcome_of", "run_query"]

T = TypeVar("T")


@dataclass(frozen=True)
class Solution(Generic[T]):
    """An accepted answer of a stream: its ``value``, the ``budget`` spent so far by the
    stream (Delphyne's keys: ``num_requests``, ``num_completions``, ``input_tokens``,
    ``output_tokens``, ``price`` when the model's pricing is known), the number of
    answers the kernel examined for it (``attempts``) and its kernel ``outcome``."""

    value: T
    budget: dict[str, float]
    attempts: int
    outcome: Outcome
    strategy: str = "fixed"
    """How the samples were asked for: ``"fixed"`` (``num_completions`` as given), or
    what ``num_completions="auto"`` chose: ``"best_of_n"`` or ``"sequential"``."""



def one_call(session: Session) -> tuple[Outcome, object]:
    """One kernel call of the session's query: its outcome and value, recorded (a
    ``quick_enforce`` violation is recorded too, then raised), in a span when traced."""
    started = time.perf_counter_ns()
    span = None if telemetry.tracer is None else \
        telemetry.start_call(session.runtime.description.name)
    try:
        outcome, value = run_sync(run_call(session.query, session.config, session.hooks()),
                                  session.perform)
    except BaseException as error:
        _settle(session, error, started, span)
        raise
    outcome = session.record(outcome, started, span)  # with its engine errors' usage
    return outcome, value


async def one_acall(session: Session) -> tuple[Outcome, object]:
    """``one_call`` for event loops (the engine's ``acomplete``)."""
    started = time.perf_counter_ns()
    span = None if telemetry.tracer is None else \
        telemetry.start_call(session.runtime.description.name)
    try:
        outcome, value = await run_async(run_call(session.query, session.config,
                                                  session.hooks()), session.aperform)
    except BaseException as error:
        _settle(session, error, started, span)
        raise
    outcome = session.record(outcome, started, span)  # with its engine errors' usage
    return outcome, value


def _settle(session: Session, error: BaseException, started: int,
            span: tuple[Any, Any] | None) -> None:
    """A call that raised: a ``quick_enforce`` violation carries its outcome, recorded;
    anything else (an interrupt, a cancellation) only ends the span."""
    if isinstance(error, ContractViolationError) and error.outcome is not None:
        session.record(error.outcome, started, span, error)
    elif span is not None:
        telemetry.finish_call(span, None, error, session.model)


def run_query(query: Query[Any], engine: Any, **policy: Any) -> object:
    """``query.run``: one kernel call; its value, or the fallback's."""
    budget, options = split_budget(policy)
    session = Session(query, engine, budget, policy_settings(query, **options), for_run=True)
    _, value = one_call(session)
    return value


async def arun_query(query: Query[Any], engine: Any, **policy: Any) -> object:
    budget, options = split_budget(policy)
    session = Session(query, engine, budget, policy_settings(query, **options), for_run=True)
    _, value = await one_acall(session)
    return value


def outcome_of(query: Query[Any], engine: Any, **policy: Any) -> Outcome:
    """One kernel call of ``query`` and its ``Outcome`` (attempts, violations, usage),
    whether it succeeded or not: no fallback, nothing raised for a failed contract."""
    budget, options = split_budget(policy)
    session = Session(query, engine, budget, policy_settings(query, **options), for_run=False)
    try:
        outcome, _ = one_call(session)
    except ContractViolationError as error:  # a quick_enforce predicate
        if error.outcome is None:
            raise
        outcome = error.outcome
    return outcome


def few_shot(query: Query[T], engine: Any, *, params: Mapping[str, Any] | None = None,
             examples: Any = None, select_examples: Sequence[Selector] = (),
             mode: str | None = None, temperature: float | None = None,
             max_tokens: int | None = None, num_completions: int | str = 1,
             max_requests: int | None = None, iterative_mode: bool = False, tries: int = 3,
             budget: Any = None, near_miss: str | None = None,
             no_wrap_parse_errors: bool = False) -> Iterator[Solution[T]]:
    """Delphyne's few-shot policy on the kernel: a stream of accepted answers.

    The prompt is the system prompt, then each selected example (``examples``: a
    demonstration file or list, filtered by ``select_examples``; ``"auto"``: an
    answer found by the verifier's search, and a ``near_miss`` violating one named
    post-condition), then the query. ``tries`` bounds the answers the kernel
    examines for one solution (remedy); ``max_requests`` and ``budget`` (Delphyne's
    keys, a ``QueryBudget`` or a hoare ``Budget``) bound the stream.
    ``num_completions="auto"``: n samples per request or sequential repair, whichever
    this query's measured rates make likelier to succeed within the budget's token caps
    (``best_of_n``); each ``Solution`` says which (``strategy``).
    ``no_wrap_parse_errors=True``: a ``WrappedParseError`` the parser returns is a
    parse error of that answer (fed back, retried), not a value of the stream.
    """
    session = Session(query, engine, budget, policy_settings(
        query, params=params, examples=examples, select_examples=select_examples, mode=mode,
        temperature=temperature, max_tokens=max_tokens, num_completions=num_completions,
        max_requests=max_requests, iterative_mode=iterative_mode, tries=tries,
        near_miss=near_miss, no_wrap_parse_errors=no_wrap_parse_errors), for_run=False)
    return _stream(session)


def _stream(session: Session) -> Iterator[Solution[Any]]:
    while True:
        try:
            outcome, _ = one_call(session)
        except ContractViolationError as error:  # a quick_enforce predicate
            if error.outcome is None:
                raise
            outcome = error.outcome
        if outcome.success:
            yield _solution(session, outcome)
            continue
        if session.exhausted or session.fatal or _refused(outcome):
            return


def _solution(session: Session, outcome: Outcome) -> Solution[Any]:
    accepted = next((a.raw for a in reversed(outcome.attempts)
                     if a.phase is Phase.POST and not a.violations), None)
    session.last_accepted = accepted if isinstance(accepted, Answer) else None
    attempts = sum(1 for a in outcome.attempts if a.phase is Phase.POST)
    return Solution(outcome.result, session.spent(), attempts, outcome, session.strategy)


def _refused(outcome: Outcome) -> bool:
    """The input itself fails (a pre-condition, or no answer can pass): asking again
    cannot help."""
    return any(v.phase in (Phase.INPUT, Phase.PRE, Phase.PREFLIGHT)
               for v in outcome.violations)


async def afew_shot(query: Query[T], engine: Any, **policy: Any
                    ) -> AsyncIterator[Solution[T]]:
    """``few_shot`` for event loops (the engine's ``acomplete``)."""
    budget, options = split_budget(dict(policy))
    session = Session(query, engine, budget, policy_settings(query, **options), for_run=False)
    while True:
        try:
            outcome, _ = await one_acall(session)
        except ContractViolationError as error:
            if error.outcome is None:
                raise
            outcome = error.outcome
        if outcome.success:
            yield _solution(session, outcome)
            continue
        if session.exhausted or session.fatal or _refused(outcome):
            return
