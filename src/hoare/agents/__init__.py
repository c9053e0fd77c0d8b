"""Contracts on tools and plain functions, with cyllama's names (``ContractPolicy``,
``@pre``/``@post``, ``contract_assert``, ``tool``): a cyllama user ports by changing
imports. ``ContractAgent`` runs tools on any hoare engine (native tool calls or JSON actions).
"""

from hoare.agents.agent import ContractAgent
from hoare.agents.chain import ToolChain
from hoare.agents.conditions import ContractSpec, PostCondition, PreCondition, post, pre
from hoare.agents.context import ContractContext, contract_assert, contract_context, current_context
from hoare.agents.events import AgentEvent, AgentResult, EventType, IterationState
from hoare.agents.policy import ContractPolicy
from hoare.agents.tool import Tool, tool
from hoare.agents.violation import ContractTermination, ContractViolation, ViolationHandler

__all__ = [
    "AgentEvent", "AgentResult", "ContractAgent", "ContractContext", "ContractPolicy",
    "ContractSpec", "ContractTermination", "ContractViolation", "EventType", "IterationState",
    "PostCondition", "PreCondition", "Tool", "ToolChain", "ViolationHandler",
    "contract_assert",
    "contract_context", "current_context", "post", "pre", "tool",
]
