"""hoare: Hoare triples {P} C {Q} around LLM calls.

    from hoare import contract, Contract, LLMDataModel, Field, Pre, Post
"""

from .conditions import Post, Pre
from .configuration import configure
from .contract import Contract, contract
from .errors import (
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
from .kernel import Outcome, Policy
from .models import Field, LLMDataModel
from .pipeline import Pipeline

__all__ = [
    "BudgetError", "Contract", "ContractCallError", "ContractDefinitionError",
    "ContractViolationError", "EngineError", "EngineNotConfigured", "FatalEngineError", "Field",
    "HoareError", "InvalidValue", "LLMDataModel", "Outcome", "Pipeline", "Policy", "Post", "Pre",
    "ResultTypeError", "RetryableEngineError", "UsageError", "configure", "contract", "verify",
]


def verify(target: object, **options: object) -> object:
    """Check a module, contract class, instance or pipeline with z3 (see ``hoare verify``)."""
    from .verifier import verify as _verify

    return _verify(target, **options)
