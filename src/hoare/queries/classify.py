"""``classify``: an answer from a finite set, with a probability for every element.

The request asks for the log-probabilities of the first answer token and its
``top_logprobs`` alternatives. Each alternative token is matched against the
written form of every possible answer (``answer_text``: a string as itself, an
enum by its value, a bool as true/false; quotes and surrounding spaces aside,
case-insensitively): a token that starts exactly one answer gives that answer its
probability; a token shared by several answers is split between them equally;
other tokens are dropped. The masses are renormalised over the finite set, then
``temperature`` rescales them (``p ∝ p₀^(1/T)``; 0 keeps only the most likely) and
``bias=(e, p)`` mixes in a point mass: ``(1-p)·D + p·δₑ``.

The answer itself still goes through the kernel like any query's: parsed into the
finite set (a token that is no answer is a parse error fed back to the model),
checked by the post-conditions, remedied within ``tries``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hoare.engines.base import Options, Request, Response, TokenLogprob
from hoare.errors import UsageError
from hoare.kernel import Generate, Reply
from hoare.queries.answers import Answer, ParseError
from hoare.queries.demonstrations import Selector
from hoare.queries.parsers import Parser
from hoare.queries.policies import one_call
from hoare.queries.query import Query, answer_text
from hoare.queries.session import Session
from hoare.queries.settings import Settings, policy_settings

__all__ = ["Classification", "NoLogprobs", "classify", "distribution_of"]

T = TypeVar("T")


class NoLogprobs(UsageError, RuntimeError):
    """The server returned no log-probabilities although they were asked for."""


@dataclass(frozen=True)
class Classification(Generic[T]):
    """``value``: the accepted answer; ``distribution``: a probability for every
    element of the finite answer set (summing to 1)."""

    value: T
    distribution: dict[T, float]


def _normal(text: str) -> str:
    return text.strip().strip("\"'`").strip().casefold()


def finite_parser(values: Sequence[Any]) -> Parser[Any]:
    """Read an answer as one element of ``values`` by its written form."""
    table = {_normal(answer_text(v)): v for v in values}

    def parse(answer: Answer) -> Any:
        key = _normal(answer.text)
        if key in table:
            return table[key]
        shown = ", ".join(answer_text(v) for v in values)
        raise ParseError(f"answer with exactly one of: {shown} (got {answer.text[:80]!r})")
    return Parser(parse, description="finite_answer")


def _number(value: object) -> float | None:
    """``value`` as a float when it is a real number (not a bool) that is not NaN, else
    None: a server's log-probability is foreign data."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        return None
    return None if math.isnan(number) else number


def _log_sum(terms: Sequence[float]) -> float:
    """``log(sum(exp(t)))`` without overflow or underflow (the max subtracted first)."""
    top = max(terms)
    if math.isinf(top):
        return top
    return top + math.log(math.fsum(math.exp(t - top) for t in terms))


def distribution_of(values: Sequence[T], tokens: Sequence[tuple[str, float]],
                    temperature: float = 1.0, bias: tuple[T, float] | None = None
                    ) -> dict[T, float]:
    """The distribution over ``values`` from first-token alternatives ``(token,
    logprob)`` (see the module docstring). Empty when no token matches an answer.

    Computed in log space with the largest term subtracted before any ``exp`` (a stable
    softmax), so any finite log-probability works, +1000 or -1000 alike; a token whose
    log-probability is not a number (NaN, a string, None) or whose text is not a string
    tells nothing and is skipped; ``-inf`` is probability 0, ``+inf`` takes all the mass
    (shared between the answers it names)."""
    if _number(temperature) is None or not (math.isfinite(temperature) and temperature >= 0):
        raise UsageError(f"temperature must be a finite number >= 0, got {temperature!r}")
    texts = [_normal(answer_text(v)) for v in values]
    terms: list[list[float]] = [[] for _ in values]
    seen: set[str] = set()
    for entry in tokens:
        try:
            token, raw = entry
        except (TypeError, ValueError):
            continue  # not a (token, logprob) pair
        logprob = _number(raw)
        if not isinstance(token, str) or logprob is None or logprob == -math.inf:
            continue
        key = _normal(token)
        if not key or key in seen:
            continue  # a token repeated with other spacing counts once
        seen.add(key)
        matches = [i for i, text in enumerate(texts) if text.startswith(key)]
        share = logprob - math.log(len(matches)) if matches else 0.0
        for i in matches:
            terms[i].append(share)
    if any(math.inf in t for t in terms):  # certain: the mass goes to those answers alone
        terms = [[0.0] if math.inf in t else [] for t in terms]
    logs = [_log_sum(t) if t else -math.inf for t in terms]
    top = max(logs, default=-math.inf)
    if top == -math.inf:
        return {}
    if temperature == 0:
        winners = [i for i, m in enumerate(logs) if m == top]
        probs = [1.0 / len(winners) if i in winners else 0.0 for i in range(len(values))]
    else:  # p ∝ p₀^(1/T), the largest first: every exponent is <= 0
        weights = [math.exp((m - top) / temperature) if m != -math.inf else 0.0
                   for m in logs]
        norm = math.fsum(weights)
        probs = [w / norm for w in weights]
    if bias is not None:
        element, p = bias
        if _number(p) is None or not (0.0 <= p <= 1.0):
            raise UsageError(f"bias=(e, p) needs 0 <= p <= 1, got {p!r}")
        if element not in values:
            raise UsageError(f"bias element {element!r} is not in the answer set")
        probs = [(1 - p) * q + (p if values[i] == element else 0.0)
                 for i, q in enumerate(probs)]
    return {values[i]: probs[i] for i in range(len(values))}


def _first_token(response: Response) -> Sequence[tuple[str, float]]:
    entries = getattr(response, "logprobs", ())
    first = entries[0] if entries else None
    if not first:
        raise NoLogprobs(
            "the server returned no logprobs for the answer: classify needs a server that "
            "supports logprobs/top_logprobs (OpenAI, vLLM, llama.cpp's server do; use "
            "few_shot or run for a plain answer)")
    try:  # an engine's logprobs are foreign data: a malformed entry says so
        token: TokenLogprob = first[0]
        return [(token.token, token.logprob), *token.top]
    except Exception as error:
        raise NoLogprobs(f"the engine's logprobs for the answer are malformed "
                         f"({type(error).__name__}): expected TokenLogprob entries with "
                         f"token, logprob and top") from None


class _LogprobSession(Session):
    """A query's session whose answer is one of ``values``: the format lists them, each
    request asks for the first answer token's log-probabilities (greedy, a few tokens,
    no schema), and every response is kept to read them from."""

    def __init__(self, query: Query[Any], engine: Any, budget: Any, settings: Settings,
                 values: Sequence[Any], top_logprobs: int) -> None:
        super().__init__(query, engine, budget, settings, for_run=True)
        self.top_logprobs = top_logprobs
        self.responses: list[Response] = []
        self.parser = finite_parser(values)
        self.schema = None
        self.hint = "Answer with exactly one of: " + ", ".join(answer_text(v) for v in values)
        self.prepare()  # again: the format changed

    def next_step(self, effect: Generate) -> Reply | Request:
        step = super().next_step(effect)
        if isinstance(step, Request):
            step = Request(messages=step.messages, schema=None, options=Options(
                temperature=0.0, max_tokens=8, logprobs=True, top_logprobs=self.top_logprobs),
                input=step.input, feedback=step.feedback, attempt=step.attempt,
                contract=step.contract)
        return step

    def received(self, response: object, request: Request) -> Reply:
        reply = super().received(response, request)
        if isinstance(response, Response):  # always: received() refuses anything else
            self.responses.append(response)
        return reply


def classify(query: Query[T], engine: Any, *, top_logprobs: int = 20,
             temperature: float = 1.0, bias: tuple[T, float] | None = None,
             params: Mapping[str, Any] | None = None, examples: Any = None,
             select_examples: Sequence[Selector] = (), mode: str | None = None,
             tries: int = 3, budget: Any = None) -> Classification[T]:
    """Ask ``query`` (whose answer type is a ``Literal``, an ``Enum`` or ``bool``) and
    read the distribution over its answers from the first token's log-probabilities.
    Raises ``ContractViolationError`` when no accepted answer comes back (or the
    query's ``fallback`` value, with a distribution on it alone)."""
    if not isinstance(query, Query):
        raise UsageError(f"classify needs a hoare.queries.Query instance, got "
                         f"{type(query).__name__}")
    values = query.finite_answer_set()
    if values is None:
        raise UsageError(f"classify needs a finite answer set: {type(query).__name__}'s "
                         f"answer type {query.answer_type()!r} is not a Literal, an Enum or "
                         f"bool")
    if not isinstance(top_logprobs, int) or isinstance(top_logprobs, bool) or \
            not 1 <= top_logprobs <= 20:
        raise UsageError(f"top_logprobs must be an integer from 1 to 20 (OpenAI's limit), "
                         f"got {top_logprobs!r}")
    session = _LogprobSession(query, engine, budget, policy_settings(
        query, params=params, examples=examples, select_examples=select_examples, mode=mode,
        tries=tries), values, top_logprobs)
    outcome, value = one_call(session)
    if not outcome.success:  # the fallback's value: all its mass
        return Classification(value, {v: (1.0 if v == value else 0.0) for v in values})
    accepted = session.responses[-1]
    distribution = distribution_of(values, _first_token(accepted), temperature, bias)
    if not distribution:  # no alternative token names an answer: the accepted one alone
        distribution = {v: (1.0 if v == value else 0.0) for v in values}
    return Classification(value, distribution)
