"""One failed tool contract (``ContractViolation``) and the exception that ends a run
under ``ENFORCE``/``QUICK_ENFORCE`` (``ContractTermination``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from hoare.agents.policy import ContractPolicy
from hoare.errors import HoareError

__all__ = ["ContractTermination", "ContractViolation", "ViolationHandler"]

Kind = Literal["pre", "post", "assert", "task_pre", "answer_post", "invariant"]


@dataclass
class ContractViolation:
    """``kind``: which check; ``location``: the tool's name, or ``"agent"``;
    ``predicate``: the condition's source text; ``context``: the arguments, result or
    state it saw; ``policy``: the policy that governed it."""

    kind: Kind
    location: str
    predicate: str
    message: str
    context: dict[str, Any] = field(default_factory=dict)
    policy: ContractPolicy = ContractPolicy.ENFORCE

    def __str__(self) -> str:
        shown = f" (predicate: {self.predicate})" if self.predicate else ""
        return f"Contract violation [{self.kind}] at {self.location}: {self.message}{shown}"


class ContractTermination(HoareError):
    """A violation under ``ENFORCE`` or ``QUICK_ENFORCE``: the run (or the plain call)
    ends; ``violation`` says what failed."""

    def __init__(self, violation: ContractViolation) -> None:
        super().__init__(str(violation))
        self.violation = violation


ViolationHandler = Callable[[ContractViolation], None]
