"""z3's boolean connectives, folded: ``z3_and``/``z3_or``/``z3_not``/``z3_if`` build
``And``/``Or``/``Not``/``If`` over z3 terms but simplify constant operands away
(``z3_and(true(), p)`` is ``p``), which keeps the formulas the translation builds
small. They are the connectives of the *formulas*, not Python's ``and``/``or``/``not``
(those return an operand and read truthiness: ``Semantics.truthy`` and
``ExpressionTranslator.boolop``)."""

from __future__ import annotations

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.solve.z3util import is_false, is_true

__all__ = ["z3_and", "z3_if", "z3_not", "z3_or"]


def z3_and(*parts: z3.BoolRef) -> z3.BoolRef:
    """The conjunction of ``parts``: true parts dropped, a false one makes it false."""
    kept = [p for p in parts if not is_true(p)]
    if any(is_false(p) for p in kept):
        return false()
    if not kept:
        return true()
    return kept[0] if len(kept) == 1 else z3.And(*kept)


def z3_or(*parts: z3.BoolRef) -> z3.BoolRef:
    """The disjunction of ``parts``: false parts dropped, a true one makes it true."""
    kept = [p for p in parts if not is_false(p)]
    if any(is_true(p) for p in kept):
        return true()
    if not kept:
        return false()
    return kept[0] if len(kept) == 1 else z3.Or(*kept)


def z3_not(p: z3.BoolRef) -> z3.BoolRef:
    """The negation of ``p``, folded when ``p`` is a constant."""
    if is_true(p):
        return false()
    if is_false(p):
        return true()
    return z3.Not(p)


def z3_if(c: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    """``If(c, a, b)``, or the branch ``c`` selects when it is a constant."""
    if is_true(c):
        return a
    if is_false(c):
        return b
    return z3.If(c, a, b)

