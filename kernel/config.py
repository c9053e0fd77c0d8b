"""Configuration of one contract: violation policy, remedy switches, retry parameters.

Spec: spec/pipeline.md §2. Every value is validated here, once, so the pipeline
never has to guard against a nonsensical configuration.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field


class Policy(enum.Enum):
    """What a violation does to the call (spec §2.2), weakest first.

    ``IGNORE``: predicates are not evaluated; a failure falls back, no handler.
    ``OBSERVE``: check; on failure call the handler, then fall back to ``forward``.
    ``ENFORCE``: check; on failure call the handler, then raise.
    ``QUICK_ENFORCE``: check; raise at the first violation, no remedy, no handler.
    """

    IGNORE = "ignore"
    OBSERVE = "observe"
    ENFORCE = "enforce"
    QUICK_ENFORCE = "quick_enforce"

    @property
    def rank(self) -> int:
        """Position in the strictness order ignore < observe < enforce < quick_enforce."""
        return _RANK[self]

    @classmethod
    def parse(cls, value: Policy | str) -> Policy:
        """Accept a ``Policy`` or its name; reject anything else with the valid names."""
        if isinstance(value, Policy):
            return value
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(repr(p.value) for p in cls)
            raise ValueError(f"unknown policy {value!r}: use one of {names}") from None


_RANK = {Policy.IGNORE: 0, Policy.OBSERVE: 1, Policy.ENFORCE: 2, Policy.QUICK_ENFORCE: 3}


def strictest(policies: list[Policy]) -> Policy:
    """The strictest policy of a non-empty list (spec §2.2: it decides a failed call)."""
    return max(policies, key=_RANK.__getitem__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry parameters of the remedy loops (spec §2.1), SymbolicAI's documented defaults.

    ``tries`` bounds the engine calls of each stage; ``delay``, ``max_delay`` and
    ``jitter`` are seconds; the n-th retry of a stage sleeps
    ``min(max_delay, delay * backoff**(n-1)) + jitter * u`` with ``u`` in [0, 1].
    """

    tries: int = 5
    delay: float = 0.5
    max_delay: float = 15.0
    jitter: float = 0.1
    backoff: float = 2.0
    graceful: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.tries, bool) or not isinstance(self.tries, int) or self.tries < 1:
            raise ValueError(f"tries must be an integer >= 1, got {self.tries!r}")
        for name in ("delay", "max_delay", "jitter", "backoff"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number of seconds, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
        if not isinstance(self.graceful, bool):
            raise ValueError(f"graceful must be True or False, got {self.graceful!r}")

    @classmethod
    def from_mapping(cls, params: Mapping[str, object]) -> RetryPolicy:
        """Build from a (possibly partial) ``remedy_retry_params`` dict; unknown keys are errors."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(
                f"unknown remedy_retry_params key(s) {unknown}: valid keys are {sorted(known)}"
            )
        return cls(**params)  # type: ignore[arg-type]  # the keys were checked just above


@dataclass(frozen=True, slots=True)
class ContractConfig:
    """Everything that shapes one contracted call besides its hooks (spec §2)."""

    pre_remedy: bool = False
    post_remedy: bool = True
    accumulate_errors: bool = False
    policy: Policy = Policy.OBSERVE
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        for name in ("pre_remedy", "post_remedy", "accumulate_errors"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.policy, Policy):
            raise ValueError(f"policy must be a Policy, got {self.policy!r}: use Policy.parse()")

    @property
    def generation_budget(self) -> int:
        """Engine calls allowed in the post stage: ``tries`` with post-remedy, else exactly 1."""
        return self.retry.tries if self.post_remedy else 1

    @property
    def pre_remedy_budget(self) -> int:
        """Engine calls allowed in the pre stage: ``tries`` with pre-remedy, else 0."""
        return self.retry.tries if self.pre_remedy else 0
