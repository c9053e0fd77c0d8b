"""Contracts on tools and plain functions, with cyllama's names (``ContractPolicy``,
``@pre``/``@post``, ``contract_assert``, ``tool``): a cyllama user ports by changing
imports. ``ContractAgent`` runs tools on any hoare engine (native tool calls or JSON actions).
"""

from .agent import AgentEvent, AgentResult, ContractAgent, EventType, IterationState
from .chain import ToolChain
from .conditions import ContractSpec, PostCondition, PreCondition, post, pre
from .context import ContractContext, contract_assert, contract_context, current_context
from .policy import ContractPolicy
from .tool import Tool, tool
from .violation import ContractTermination, ContractViolation, ViolationHandler

__all__ = [
    "AgentEvent", "AgentResult", "ContractAgent", "ContractContext", "ContractPolicy",
    "ContractSpec", "ContractTermination", "ContractViolation", "EventType", "IterationState",
    "PostCondition", "PreCondition", "Tool", "ToolChain", "ViolationHandler",
    "contract_assert",
    "contract_context", "current_context", "post", "pre", "tool",
]
