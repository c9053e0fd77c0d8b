"""Contracts on tools and plain functions, with cyllama's names (``ContractPolicy``,
``@pre``/``@post``, ``contract_assert``, ``tool``): a cyllama user ports by changing
imports. The agent loop (``ContractAgent``) is not here yet.
"""

from .conditions import ContractSpec, PostCondition, PreCondition, post, pre
from .context import ContractContext, contract_assert, contract_context, current_context
from .policy import ContractPolicy
from .tool import Tool, tool
from .violation import ContractTermination, ContractViolation, ViolationHandler

__all__ = [
    "ContractContext", "ContractPolicy", "ContractSpec", "ContractTermination",
    "ContractViolation", "PostCondition", "PreCondition", "Tool", "ViolationHandler",
    "contract_assert", "contract_context", "current_context", "post", "pre", "tool",
]
