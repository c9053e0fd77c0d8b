"""Each call is a Bernoulli trial: empirical success rates (spec §7).

Per contract: P_succ = successes / calls with a Wilson 95% interval, split into
first-attempt successes and successes after a remedy. Per predicate family:
every evaluation of the family on a candidate is one trial. The product of the
family rates is the paper's approximation of the probability that one candidate
passes every family (it assumes independence; compare it with the measured
first-attempt rate).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .outcome import Outcome

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``trials``; (0, 1) with no trials.

    Clamped to [0, 1] and widened by rounding error only so that it always
    contains the point estimate.
    """
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = (z / denominator) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True, slots=True)
class Rate:
    """``successes`` out of ``trials`` Bernoulli trials."""

    successes: int
    trials: int

    @property
    def estimate(self) -> float | None:
        """successes / trials, or ``None`` before the first trial."""
        return self.successes / self.trials if self.trials else None

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval around ``estimate``."""
        return wilson_interval(self.successes, self.trials)


@dataclass(frozen=True, slots=True)
class Stats:
    """A consistent snapshot of a ``SuccessTracker``."""

    calls: Rate
    first_attempt_successes: int
    remedied_successes: int
    generation_calls: int
    families: Mapping[str, Rate]

    @property
    def p_succ(self) -> float | None:
        """Empirical success probability of the contract."""
        return self.calls.estimate

    @property
    def product_estimate(self) -> float | None:
        """Product of the family rates (families with at least one trial)."""
        rates = [r.estimate for r in self.families.values() if r.estimate is not None]
        if not rates:
            return None
        product = 1.0
        for rate in rates:
            product *= rate
        return product

    def as_dict(self) -> dict[str, object]:
        """Plain figures for reports and JSON."""
        return {
            "calls": self.calls.trials,
            "successes": self.calls.successes,
            "p_succ": self.p_succ,
            "interval_95": list(self.calls.interval),
            "first_attempt_successes": self.first_attempt_successes,
            "remedied_successes": self.remedied_successes,
            "generation_calls": self.generation_calls,
            "product_estimate": self.product_estimate,
            "families": {
                name: {"passes": r.successes, "trials": r.trials, "rate": r.estimate,
                       "interval_95": list(r.interval)}
                for name, r in self.families.items()
            },
        }


class SuccessTracker:
    """Thread-safe counters fed with one ``Outcome`` per call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._successes = 0
        self._first_attempt = 0
        self._generation_calls = 0
        self._families: dict[str, list[int]] = {}  # family -> [passes, trials]

    def record(self, outcome: Outcome) -> None:
        """Count one call and every family trial it made."""
        generations = outcome.generation_attempts
        first_try = outcome.success and generations == len(outcome.attempts) <= 1
        families = self._families
        with self._lock:
            self._calls += 1
            self._successes += outcome.success
            self._first_attempt += first_try
            self._generation_calls += generations
            for family, passed in outcome.trials:
                counts = families.get(family)
                if counts is None:
                    counts = families[family] = [0, 0]
                counts[0] += passed
                counts[1] += 1

    def snapshot(self) -> Stats:
        """The figures so far, read under the lock."""
        with self._lock:
            families = {name: Rate(c[0], c[1]) for name, c in self._families.items()}
            return Stats(Rate(self._successes, self._calls), self._first_attempt,
                         self._successes - self._first_attempt, self._generation_calls,
                         MappingProxyType(families))

    def reset(self) -> None:
        """Forget every recorded call."""
        with self._lock:
            self._calls = self._successes = self._first_attempt = self._generation_calls = 0
            self._families.clear()
