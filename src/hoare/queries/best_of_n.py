"""Budget-aware best-of-n: n samples in one request, or one sample per request with
repair in between?

``few_shot(..., num_completions="auto", budget={...token caps...})`` decides from
what this query class has measured: its calls in the stats store when one is
configured (``hoare.configure(stats=...)``), else its calls in this process
(``AttemptRates``, updated by every call): the success rate of first attempts
``p₁`` (a fresh sample of the plain prompt, which is what each of n samples is) and of
later attempts ``pᵣ`` (a sample
that saw a repair message), each Laplace-smoothed (``(s+1)/(t+2)``, so an unmeasured
query starts at ½), and the mean input tokens per request and output tokens per
sample (before any measure: the prompt's UTF-8 bytes / 4 and ``max_tokens`` or 256).

Within the caps, n samples in one request cost ``in`` input and ``n·out`` output
tokens and succeed with ``1 − (1 − p₁)ⁿ``; k sequential requests cost ``k·in`` and
``k·out`` and succeed with ``1 − (1 − p₁)(1 − pᵣ)^(k−1)``. The larger success
probability wins (ties: sequential, which spends less when the first answer passes);
the choice and its figures are logged and kept on each ``Solution`` (``strategy``).
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import Any

from hoare.forking import hold_across_fork
from hoare.kernel import Outcome, Phase

__all__ = ["AttemptRates", "Choice", "choose"]

MAX_SAMPLES = 8  # n samples in one request at most (providers cap n; cost grows with it)
logger = logging.getLogger("hoare.queries")


class AttemptRates:
    """Per-attempt success counts and token means of one query class (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first = [0, 0]  # trials, successes
        self.later = [0, 0]
        self.requests = 0
        self.input_tokens = 0
        self.samples = 0
        self.output_tokens = 0
        hold_across_fork(self, self._lock)  # a child forked mid-count must not hang

    def record(self, outcome: Outcome) -> None:
        posts = [a for a in outcome.attempts if a.phase is Phase.POST]
        usage = outcome.usage
        with self._lock:
            for index, attempt in enumerate(posts):
                counts = self.first if index == 0 else self.later
                counts[0] += 1
                counts[1] += not attempt.violations
            self.requests += int(usage.get("requests", 0))
            self.input_tokens += int(usage.get("input_tokens", 0))
            self.samples += int(usage.get("samples", 0))
            self.output_tokens += int(usage.get("output_tokens", 0))

    @classmethod
    def from_store(cls, rows: list[dict[str, Any]]) -> AttemptRates:
        """The success counts of stored calls (``hoare.stats.query.query``): a call's
        first attempt passed when ``first_attempt``; its later attempts are
        ``attempts - 1`` (its generations), and one of them passed when it succeeded
        otherwise."""
        rates = cls()
        for row in rows:
            generations = int(row.get("attempts") or 0)
            if generations < 1:
                continue
            first = bool(row.get("first_attempt"))
            rates.first[0] += 1
            rates.first[1] += first
            rates.later[0] += generations - 1
            rates.later[1] += bool(row.get("success")) and not first
        return rates

    def estimates(self) -> tuple[float, float, float | None, float | None]:
        """(p₁, pᵣ, input tokens per request, output tokens per sample); None: no data."""
        with self._lock:
            p1 = (self.first[1] + 1) / (self.first[0] + 2)
            pr = (self.later[1] + 1) / (self.later[0] + 2)
            per_request = self.input_tokens / self.requests if self.requests and \
                self.input_tokens else None
            per_sample = self.output_tokens / self.samples if self.samples and \
                self.output_tokens else None
        return p1, pr, per_request, per_sample


@dataclass(frozen=True)
class Choice:
    """What ``choose`` decided, with the figures it used."""

    strategy: str  # "best_of_n" or "sequential"
    n: int  # samples per request
    requests: int  # requests the sequential plan affords (informative)
    p_best_of_n: float
    p_sequential: float


def stored_rates(name: str) -> AttemptRates | None:
    """The success counts of ``name``'s calls in the configured stats store (None: no
    store, no stored call, or it cannot be read)."""
    from hoare.contracts import configuration

    store = configuration.stats_store()
    target = getattr(store, "path", None)
    if not isinstance(target, str):
        return None
    try:
        from hoare.stats.query import query

        rows = query(target, contract=name)
    except Exception:  # a statistic is a hint: never fail the query for it
        return None
    rates = AttemptRates.from_store(rows)
    return rates if rates.first[0] else None


def choose(rates: AttemptRates, *, max_input_tokens: float | None,
           max_output_tokens: float | None, prompt_tokens: float, max_tokens: int | None,
           tries: int, stored: AttemptRates | None = None) -> Choice:
    """The strategy with the larger success probability within the token caps. The
    success rates come from ``stored`` (the stats store's calls of this query) when
    given, else from ``rates`` (this process); the token means from ``rates``."""
    p1, pr, per_request, per_sample = rates.estimates()
    if stored is not None:
        p1, pr, _, _ = stored.estimates()
    cost_in = per_request or prompt_tokens
    cost_out = per_sample or float(max_tokens or 256)
    cap_in = math.inf if max_input_tokens is None else max_input_tokens
    cap_out = math.inf if max_output_tokens is None else max_output_tokens
    n = 0 if cost_in > cap_in else int(min(MAX_SAMPLES, cap_out // max(cost_out, 1)))
    k = int(min(tries, cap_in // max(cost_in, 1), cap_out // max(cost_out, 1)))
    p_batch = 1 - (1 - p1) ** n if n >= 1 else 0.0
    p_seq = 1 - (1 - p1) * (1 - pr) ** (k - 1) if k >= 1 else 0.0
    choice = Choice("best_of_n", n, k, p_batch, p_seq) if n > 1 and p_batch > p_seq \
        else Choice("sequential", 1, k, p_batch, p_seq)
    logger.info("hoare.queries: %s (n=%d; P(success) best-of-n %.2f vs sequential %.2f; "
                "p1=%.2f, p_repair=%.2f, %.0f input tokens/request, %.0f output "
                "tokens/sample)", choice.strategy, choice.n, p_batch, p_seq, p1, pr,
                cost_in, cost_out)
    return choice
