"""hoare: Hoare triples {P} C {Q} around LLM calls.

    from hoare import contract, Contract, LLMDataModel, Field, Pre, Post
"""

from .conditions import Post, Pre
from .configuration import EngineNotConfigured, configure
from .contract import Contract, InvalidValue, contract
from .description import ContractDefinitionError
from .kernel import ContractViolationError, Outcome, Policy, ResultTypeError
from .models import Field, LLMDataModel
from .pipeline import Pipeline

__all__ = [
    "Contract", "ContractDefinitionError", "ContractViolationError", "EngineNotConfigured",
    "Field", "InvalidValue", "LLMDataModel", "Outcome", "Pipeline", "Policy", "Post", "Pre",
    "ResultTypeError", "configure", "contract", "verify",
]


def verify(target: object, **options: object) -> object:
    """Check a module, contract class, instance or pipeline with z3 (see ``hoare verify``)."""
    from .verifier import verify as _verify

    return _verify(target, **options)
