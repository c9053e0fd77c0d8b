"""Builtins over collections: ``len``, ``all``, ``any``, ``sum``, ``min``, ``max``
and ``list.count``/``tuple.count``.

A list is modelled by its exact length and a few element slots; elements past
the slots are unconstrained, so results that depend on them are *havoc* (a
fresh value): those constructs are ``over``-approximations.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import z3

from hoare.verifier.solve.context import true
from hoare.verifier.translate.calls.registry import CallSite, Family
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.values import SBool, SInt, SList, STruth, Sym, fresh_name, int_val

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator

_PAST_BOUND = "past the verifier's element bound"


FAMILY = Family("containers")


@FAMILY.function(len, "len", precision="over",
          note=f"of a str, list, tuple, literal collection; a filtered list {_PAST_BOUND} "
               "is havoc")
def _len(t: ExpressionTranslator, call: CallSite) -> Sym:
    args = call.args
    if len(args) == 1 and not call.node.keywords and isinstance(args[0], ast.ListComp):
        pairs, tail, iterable = t.comprehension(args[0], call.env, "plain")
        count: z3.ArithRef = z3.Sum(*[z3.If(c, 1, 0) for c, _ in pairs]) \
            if pairs else int_val(0)
        if tail is not None:
            assert isinstance(iterable, SList)
            extra = z3.Int(fresh_name("havoc.count"))
            t.havoc_note("elements past the verifier's bound")
            # a definition holds in every query: it must not constrain short lists
            past = iterable.n - len(iterable.slots)
            t.define(z3.And(extra >= 0, extra <= z3.If(past > 0, past, 0)))
            count = count + z3.If(tail, extra, 0)
        return SInt(count)
    return t.length(call.one(t))


def _all_any(t: ExpressionTranslator, call: CallSite, is_all: bool) -> Sym:
    call.only_positional(1)
    pairs, tail, _ = t.comprehension(call.args[0], call.env, "all" if is_all else "any")
    if is_all:
        result = z3_and(*[z3_or(z3_not(c), t.truthy(v)) for c, v in pairs])
        if tail is not None:
            result = z3_and(result, z3_or(z3_not(tail), t.havoc_bool(f"all() {_PAST_BOUND}")))
    else:
        result = z3_or(*[z3_and(c, t.truthy(v)) for c, v in pairs])
        if tail is not None:
            result = z3_or(result, z3_and(tail, t.havoc_bool(f"any() {_PAST_BOUND}")))
    return SBool(result)


@FAMILY.function(all, "all", precision="over", note=f"havoc {_PAST_BOUND}")
def _all(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _all_any(t, call, True)


@FAMILY.function(any, "any", precision="over", note=f"havoc {_PAST_BOUND}")
def _any(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _all_any(t, call, False)


@FAMILY.function(sum, "sum", precision="over", note=f"havoc {_PAST_BOUND}")
def _sum(t: ExpressionTranslator, call: CallSite) -> Sym:
    args, keywords = call.args, call.keywords
    if not args or len(args) > 2 or set(keywords) - {"start"}:
        raise call.unsupported("with these arguments")
    start_node = args[1] if len(args) == 2 else keywords.get("start")
    total: Sym = t.expr(start_node, call.env) if start_node is not None else \
        SInt(int_val(0))
    pairs, tail, _ = t.comprehension(args[0], call.env, "plain")
    for cond, value in pairs:
        with t.guarded(cond):  # an item is added (and may raise) only when present
            added = t.binop("+", total, value)
        total = t.ite(cond, added, total)
        if isinstance(total, STruth):
            raise call.unsupported("of mixed types")
    if tail is not None:
        total = t.ite(tail, t.fresh_like(total, f"sum() {_PAST_BOUND}"), total)
    return total


def _min_max(t: ExpressionTranslator, call: CallSite, name: str) -> Sym:
    args, keywords = call.args, call.keywords
    if set(keywords) - {"default"}:
        raise call.unsupported("with key=")
    if len(args) == 1:
        pairs, tail, _ = t.comprehension(args[0], call.env, "plain")
        if "default" not in keywords:
            # an empty iterable raises ValueError; with a tail the slots are full
            result = t.min_max(name, pairs)
        else:
            default = t.expr(keywords["default"], call.env)
            if not pairs:
                return default
            present_any = z3_or(*[c for c, _ in pairs])
            result = t.ite(present_any, t.min_max(name, pairs, False), default)
        if tail is not None:
            result = t.ite(tail, t.fresh_like(result, f"{name}() past the bound"), result)
        return result
    if keywords:
        raise call.unsupported("with default= and several arguments")
    values = [(true(), t.expr(a, call.env)) for a in args]
    return t.min_max(name, values)


@FAMILY.function(min, "min", precision="over", note=f"no key=; havoc {_PAST_BOUND}")
def _min(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _min_max(t, call, "min")


@FAMILY.function(max, "max", precision="over", note=f"no key=; havoc {_PAST_BOUND}")
def _max(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _min_max(t, call, "max")


def _count(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
    call.only_positional(1)
    item = t.expr(call.args[0], call.env)
    pairs, tail = t.elements(receiver)
    count: z3.ArithRef = z3.Sum(*[z3.If(z3_and(c, t.item_eq(v, item)), 1, 0)  # `is` first
                                  for c, v in pairs]) if pairs else int_val(0)
    if tail is not None:
        return t.ite(tail, t.fresh_like(SInt(count), "count() past the bound"), SInt(count))
    return SInt(count)


FAMILY.method("list", "count", precision="over", note=f"havoc {_PAST_BOUND}")(_count)
FAMILY.method("tuple", "count", precision="over", note=f"havoc {_PAST_BOUND}")(_count)
