"""hoare: Hoare triples {P} C {Q} around LLM calls.

    from hoare import contract, Contract, LLMDataModel, Field, Pre, Post
"""

import typing as _typing

from hoare.contracts.base import Contract
from hoare.contracts.configuration import configure
from hoare.contracts.decorator import contract
from hoare.contracts.pipeline import Pipeline
from hoare.declaration.conditions import Post, Pre
from hoare.declaration.models import Field, LLMDataModel
from hoare.errors import (
    BudgetError,
    ContractCallError,
    ContractDefinitionError,
    ContractViolationError,
    EngineError,
    EngineNotConfigured,
    FatalEngineError,
    HoareError,
    InvalidValue,
    ResultTypeError,
    RetryableEngineError,
    UsageError,
)
from hoare.forking import hold_across_fork as _hold_across_fork  # noqa: F401  # its fork hooks
from hoare.kernel import Outcome, Policy

if _typing.TYPE_CHECKING:  # imported on first use only: the verifier loads z3
    from hoare.verifier.report import Report

__version__ = "0.2.0"  # kept equal to pyproject.toml's by tests/test_public_api.py

__all__ = [
    "BudgetError", "Contract", "ContractCallError", "ContractDefinitionError",
    "ContractViolationError", "EngineError", "EngineNotConfigured", "FatalEngineError", "Field",
    "HoareError", "InvalidValue", "LLMDataModel", "Outcome", "Pipeline", "Policy", "Post", "Pre",
    "Report", "ResultTypeError", "RetryableEngineError", "UsageError", "__version__",
    "configure", "contract", "flush_stats", "verify",
]


def __getattr__(name: str) -> object:
    """``Report`` (what ``verify`` returns) on first use: the verifier loads z3."""
    if name == "Report":
        from hoare.verifier.report import Report

        return Report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def flush_stats(timeout: float = 10.0) -> bool:
    """Wait until every recorded call is written to the stats store (also done at
    interpreter exit); False when ``timeout`` seconds were not enough."""
    from hoare.stats.store import flush_all

    return flush_all(timeout)


def verify(target: object, **options: int) -> "Report":
    """Check a module, contract class, instance or pipeline with z3 (see ``hoare verify``).
    ``options``: ``timeout_ms`` and ``rlimit`` (``hoare.verifier.verify``)."""
    from hoare.verifier import verify as _verify

    return _verify(target, **options)
