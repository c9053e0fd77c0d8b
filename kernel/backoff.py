"""Delays between the engine calls of a remedy stage (spec §4.3)."""

from __future__ import annotations

from .config import RetryPolicy


def base_delay(retry: RetryPolicy, retry_number: int) -> float:
    """``min(max_delay, delay * backoff**(retry_number-1))``, capped at every step so
    a long retry sequence can neither overflow nor exceed ``max_delay``."""
    delay = min(retry.delay, retry.max_delay)
    for _ in range(retry_number - 1):
        delay = min(retry.max_delay, delay * retry.backoff)
    return delay


def backoff_delay(retry: RetryPolicy, retry_number: int, u: float) -> float:
    """Seconds to sleep before the ``retry_number``-th retry (1 = the first retry).

    ``u`` is a uniform draw from [0, 1]; anything outside (or NaN) counts as 0, so
    the result never exceeds ``max_delay + jitter``.
    """
    if not 0.0 <= u <= 1.0:
        u = 0.0
    return base_delay(retry, retry_number) + retry.jitter * u
