"""``ContractPolicy`` is the kernel's ``Policy``: one set of names for contracts on LLM
calls and on tools (``IGNORE``, ``OBSERVE``, ``ENFORCE``, ``QUICK_ENFORCE``)."""

from hoare.kernel import Policy as ContractPolicy

__all__ = ["ContractPolicy"]
