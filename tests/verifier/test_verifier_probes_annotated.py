"""Outside-reviewer probes: ``annotated_types`` constraints reach the concrete
falsifier (issue 29).

Class: a constraint object the search reads by a protocol it does not have.
``annotated_types`` declares its classes as slotted dataclasses; the candidate
search read ``Interval`` with ``vars()``, which raised, and the falsifier (the
safety net behind every negative verdict) logged an error and gave up on the
contract. Each constraint form is verified here with a predicate whose verdict
the falsifier must check, and no falsifier error may be logged.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import annotated_types as at
import pytest
from pydantic import BaseModel

from hoare import Contract, Post, contract, verify

FORMS: list[tuple[Any, Any]] = [
    (Annotated[int, at.Interval(ge=0, lt=3)], lambda o: o.v > 5),
    (Annotated[int, at.Interval(gt=0, le=3)], lambda o: o.v < 1),
    (Annotated[int, at.Gt(0), at.Lt(3)], lambda o: o.v > 5),
    (Annotated[int, at.Ge(0), at.Le(3)], lambda o: o.v > 5),
    (Annotated[int, at.MultipleOf(2), at.Interval(ge=0, le=4)], lambda o: o.v == 3),
    (Annotated[str, at.Len(1, 2)], lambda o: len(o.v) > 2),
    (Annotated[str, at.MinLen(1), at.MaxLen(2)], lambda o: len(o.v) > 2),
    (Annotated[list[int], at.Len(0, 1)], lambda o: len(o.v) > 1),
]


@pytest.mark.parametrize(("annotation", "post"), FORMS, ids=[str(i) for i in range(len(FORMS))])
def test_the_falsifier_reads_every_annotated_types_form(
        annotation: Any, post: Any, caplog: pytest.LogCaptureFixture) -> None:
    class Out(BaseModel):
        v: annotation

    class In(BaseModel):
        n: int = 0

    @contract(post_remedy=False)
    class C(Contract[In, Out]):
        prompt = "p"
        post_conditions = [Post(post, "the bound is outside the type")]

        def forward(self, input: In) -> Out:
            result: Out = self.contract_result
            return result

    with caplog.at_level(logging.ERROR, logger="hoare.verifier"):
        report = verify(C)
    errors = [r for r in caplog.records if "falsifier error" in r.getMessage()]
    assert not errors, errors[0].getMessage()
    statuses = {c.kind: c.status for c in report.contracts[0].checks}
    assert statuses["post_satisfiable"] == "fail", statuses  # the bound is modelled
