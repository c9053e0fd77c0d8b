"""``isinstance``: decided from the symbolic value's Python type, which the
verifier knows exactly for every value it models."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import z3

from hoare.verifier.translate.calls.registry import CallSite, Family
from hoare.verifier.translate.values import (
    NONE,
    Opaque,
    SBool,
    SColl,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SObj,
    SOpt,
    SStr,
    Sym,
)
from hoare.verifier.translate.views import open_model_reason

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator


FAMILY = Family("introspection")


@FAMILY.function(isinstance, "isinstance", precision="exact",
          note="with a class or a tuple of classes")
def _isinstance(t: ExpressionTranslator, call: CallSite) -> Sym:
    call.only_positional(2)
    value = t.expr(call.args[0], call.env)
    return SBool(isinstance_of(t, value, call.args[1], call))


def isinstance_of(t: ExpressionTranslator, value: Sym, type_node: ast.expr, call: CallSite
                  ) -> z3.BoolRef:
    target = t.expr(type_node, call.env)
    if isinstance(target, SObj) and isinstance(target.obj, type):
        classes: tuple[type, ...] = (target.obj,)
    elif isinstance(target, SObj) and isinstance(target.obj, tuple) and \
            all(isinstance(c, type) for c in target.obj):
        classes = tuple(c for c in target.obj if isinstance(c, type))
    elif isinstance(target, SColl) and target.container == "tuple" and all(
            isinstance(c, SObj) and isinstance(c.obj, type) for c in target.items):
        classes = tuple(c.obj for c in target.items
                        if isinstance(c, SObj) and isinstance(c.obj, type))
    else:
        raise call.unsupported("with a type that is not a class")

    def check(v: Sym) -> z3.BoolRef:
        if isinstance(v, SOpt):
            return z3.If(v.none, check(NONE), check(v.inner))
        python_type = {SInt: int, SBool: bool, SFloat: float, SStr: str,
                       SNone: type(None)}.get(type(v))
        if isinstance(v, SStr):
            python_type = str
        if isinstance(v, SModel) and v.open and not issubclass(v.cls, classes):
            # an instance of a subclass of v.cls may also derive from a class tested
            raise Opaque(f"isinstance() of {open_model_reason(v)} in {call.owner}")
        if isinstance(v, (SModel, SEnum)):
            python_type = v.cls
        elif isinstance(v, SList):
            python_type = list if v.container == "list" else tuple
        if python_type is None:
            raise Opaque(f"isinstance() of a {v.kind} in {call.owner}")
        return z3.BoolVal(issubclass(python_type, classes))

    return check(value)
