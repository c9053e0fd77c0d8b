"""hoare's trusted kernel: the semantics of one contracted call (spec/pipeline.md).

Pure Python, standard library only, no I/O: every effect (the engine, sleeping)
is performed by a driver, every user behaviour is an injected hook. The Lean
model in lean/ mirrors these modules one-to-one.
"""

from .backoff import backoff_delay, base_delay
from .config import ContractConfig, Policy, RetryPolicy, strictest
from .effects import (
    Effect,
    EngineError,
    FatalEngineError,
    Generate,
    Reply,
    Sleep,
    run_async,
    run_sync,
)
from .outcome import (
    Attempt,
    ContractViolationError,
    HoareError,
    Outcome,
    Phase,
    PreflightResult,
    ResultTypeError,
    Verdict,
    Violation,
    ViolationKind,
    exception_text,
)
from .pipeline import Hooks, run_call
from .predicate import Predicate, evaluate
from .stats import Rate, Stats, SuccessTracker, wilson_interval

__all__ = [
    "Attempt", "ContractConfig", "ContractViolationError", "Effect", "EngineError",
    "FatalEngineError", "Generate", "HoareError", "Hooks", "Outcome", "Phase", "Policy",
    "Predicate", "PreflightResult", "Rate", "Reply", "ResultTypeError", "RetryPolicy", "Sleep",
    "Stats", "SuccessTracker", "Verdict", "Violation", "ViolationKind", "backoff_delay",
    "base_delay", "evaluate", "exception_text", "run_async", "run_call", "run_sync",
    "strictest", "wilson_interval",
]
