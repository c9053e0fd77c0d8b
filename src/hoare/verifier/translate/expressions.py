"""Expressions of predicate code → symbolic values.

``ExpressionTranslator`` evaluates one expression over an environment of ``Sym``s:
names and attributes (``names.NameResolver``), ``and``/``or``/``not`` with
Python's value semantics, arithmetic and comparisons (``Semantics``), subscripts
and string slices, comprehensions over the modelled elements of a list, and
calls, which go to the ``calls`` registry (its handlers receive the
``ExpressionTranslator``). An expression that may raise records the condition
with ``error`` under the current guards (``guarded``: the short-circuit and
``if``-expression conditions that reach it); ``statements.Translator`` turns
those into failure cases of the path.
"""

from __future__ import annotations

import ast
import sys

import z3

from hoare.verifier.solve.context import true
from hoare.verifier.translate.calls import CallSite, lookup_function, lookup_method, receiver_kind
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.names import NameResolver
from hoare.verifier.translate.values import (
    SETS,
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
    SSelf,
    SStr,
    Sym,
    const_to_sym,
    fresh_name,
    int_val,
)
from hoare.verifier.translate.views import truth_only

__all__ = ["BINOPS", "ExpressionTranslator", "source_text"]


def source_text(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 1] + "…"



class ExpressionTranslator(NameResolver):
    """The expression half of the predicate translator: one method per kind of
    expression; the call handlers of ``calls`` receive it."""

    # -- expressions --------------------------------------------------------------------
    def expr(self, node: ast.expr, env: dict[str, Sym]) -> Sym:
        previous = self.current
        if isinstance(node, (ast.Call, ast.BinOp, ast.Compare, ast.Subscript, ast.Attribute)):
            self.current = source_text(node)
        try:
            if isinstance(node, ast.Constant):
                value = const_to_sym(node.value)
                if isinstance(value, SObj) and node.value is not Ellipsis:
                    raise Opaque(f"constant {node.value!r:.30}")
                return value
            if isinstance(node, ast.Name):
                return self.name(node.id, env)
            if isinstance(node, ast.Attribute):
                return self.attribute(self.expr(node.value, env), node.attr)
            if isinstance(node, ast.BoolOp):
                return self.boolop(node, env)
            if isinstance(node, ast.UnaryOp):
                op = {ast.Not: "not", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[
                    type(node.op)]
                return self.unary(op, self.expr(node.operand, env))
            if isinstance(node, ast.BinOp):
                return self.binary(node, env)
            if isinstance(node, ast.Compare):
                return self.comparison(node, env)
            if isinstance(node, ast.IfExp):
                cond = self.truthy(self.expr(node.test, env))
                with self.guarded(cond):
                    then = self.expr(node.body, env)
                with self.guarded(z3_not(cond)):
                    other = self.expr(node.orelse, env)
                return self.ite(cond, then, other)
            if isinstance(node, ast.Call):
                return self.call(node, env)
            if isinstance(node, ast.Subscript):
                return self.subscript(node, env)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                if any(isinstance(e, ast.Starred) for e in node.elts):
                    raise Opaque("starred expression")
                items = tuple(self.expr(e, env) for e in node.elts)
                # a set display keeps duplicates here ({a, b} with a == b): "setlit"
                # supports `in` and `==`, not len() or iteration
                container = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "setlit"}[
                    type(node)]
                if container == "setlit":
                    for item in items:
                        self.hashable(item)  # building the set hashes every item
                return SColl(items, container)
            raise Opaque(f"`{type(node).__name__}` expression `{source_text(node)}`")
        finally:
            self.current = previous

    def boolop(self, node: ast.BoolOp, env: dict[str, Sym]) -> Sym:
        is_and = isinstance(node.op, ast.And)
        values: list[Sym] = []
        truths: list[z3.BoolRef] = []
        reach: list[z3.BoolRef] = []
        for operand in node.values:
            with self.guarded(z3_and(*reach)):
                value = self.expr(operand, env)
            values.append(value)
            truth = self.truthy(value)
            truths.append(truth)
            reach.append(truth if is_and else z3_not(truth))
        result = values[-1]
        for index in range(len(values) - 2, -1, -1):
            stop = z3_not(truths[index]) if is_and else truths[index]
            result = self.ite(stop, values[index], result)
        return result

    def binary(self, node: ast.BinOp, env: dict[str, Sym]) -> Sym:
        left = self.expr(node.left, env)
        right = self.expr(node.right, env)
        if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and \
                isinstance(left, SBool) and isinstance(right, SBool):
            if isinstance(node.op, ast.BitAnd):
                return SBool(z3.And(left.e, right.e))
            if isinstance(node.op, ast.BitOr):
                return SBool(z3.Or(left.e, right.e))
            return SBool(z3.Xor(left.e, right.e))
        op = BINOPS.get(type(node.op))
        if op is None:
            raise Opaque(f"operator {type(node.op).__name__}")
        return self.binop(op, left, right)

    def comparison(self, node: ast.Compare, env: dict[str, Sym]) -> Sym:
        left = self.expr(node.left, env)
        results: list[z3.BoolRef] = []
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            with self.guarded(z3_and(*results)):
                right = self.expr(comparator, env)
                results.append(self.compare_op(op, left, right))
            left = right
        return SBool(z3_and(*results))

    def compare_op(self, op: ast.cmpop, left: Sym, right: Sym) -> z3.BoolRef:
        if isinstance(op, ast.Eq):
            return self.eq(left, right)
        if isinstance(op, ast.NotEq):
            return z3_not(self.eq(left, right))
        if isinstance(op, ast.Is):
            return self.is_(left, right)
        if isinstance(op, ast.IsNot):
            return z3_not(self.is_(left, right))
        if isinstance(op, ast.In):
            return self.contains(right, left)
        if isinstance(op, ast.NotIn):
            return z3_not(self.contains(right, left))
        symbol = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[type(op)]
        return self.compare(symbol, left, right)

    # -- subscripts ---------------------------------------------------------------------
    def subscript(self, node: ast.Subscript, env: dict[str, Sym]) -> Sym:
        container = self.expr(node.value, env)
        if isinstance(node.slice, ast.Slice):
            return self.slice(container, node.slice, env)
        index = self.expr(node.slice, env)
        container = self.unwrap(container)
        if isinstance(container, SColl) and container.container in SETS:
            self.error(true(), "TypeError")  # sets are not subscriptable
            return SInt(int_val(0))
        if isinstance(container, (SStr, SList, SColl)):
            operand = self.index_operand(index, "an index")
            if operand is None:
                return SInt(int_val(0))
            i = self.int_expr(operand)
            length = self.length(container).e
            position = z3.If(i < 0, length + i, i)
            self.error(z3.Or(position < 0, position >= length), "IndexError")
            if isinstance(container, SStr):
                return SStr(z3.SubString(container.e, position, 1))
            items = container.slots if isinstance(container, SList) else container.items
            if isinstance(container, SList) and not container.exact:
                result: Sym = container.tail()
                self.havoc_note(f"element of {container.path} past the verifier's bound")
            elif items:
                result = items[-1]
            else:
                return SInt(int_val(0))
            for k in range(len(items) - 1, -1, -1):
                if result is items[k]:
                    continue
                result = self.ite(position == k, items[k], result)
                if truth_only(result):
                    raise Opaque("indexing a collection of mixed types")
            return result
        if isinstance(container, SModel):
            self.type_error(container)  # a subclass may define __getitem__
            return SInt(int_val(0))
        raise Opaque(f"indexing a {container.kind}")

    def slice(self, container: Sym, node: ast.Slice, env: dict[str, Sym]) -> Sym:
        container = self.unwrap(container)
        if not isinstance(container, SStr):
            raise Opaque(f"slicing a {container.kind}")
        if node.step is not None:
            raise Opaque("slice with a step")
        length = z3.Length(container.e)

        def bound(part: ast.expr | None, default: z3.ArithRef) -> z3.ArithRef:
            return default if part is None else bound_of(self.expr(part, env), default)

        def bound_of(value: Sym, default: z3.ArithRef) -> z3.ArithRef:
            """A slice bound: ``None`` (written, or an optional's) is the default."""
            if isinstance(value, SNone):
                return default
            if isinstance(value, SOpt):
                with self.guarded(z3_not(value.none)):
                    given = bound_of(value.inner, default)
                return z3.If(value.none, default, given)
            index = self.index_operand(value, "a slice bound")
            if index is None:
                return default
            i = self.int_expr(index)
            shifted = z3.If(i < 0, length + i, i)
            return z3.If(shifted < 0, 0, z3.If(shifted > length, length, shifted))

        start = bound(node.lower, int_val(0))
        stop = bound(node.upper, length)
        return SStr(z3.SubString(container.e, start, z3.If(stop > start, stop - start, 0)))

    # -- iteration ----------------------------------------------------------------------
    def elements(self, iterable: Sym) -> tuple[list[tuple[z3.BoolRef, Sym]], z3.BoolRef | None]:
        """(present, element) pairs and the condition that elements past them exist."""
        iterable = self.unwrap(iterable)
        if isinstance(iterable, SColl):
            if iterable.container in SETS:
                raise Opaque("iterating over a set (hash order, no duplicates)")
            return [(true(), item) for item in iterable.items], None
        if isinstance(iterable, SList):
            pairs = [(iterable.n > index, slot) for index, slot in enumerate(iterable.slots)]
            tail = None if iterable.exact else iterable.n > len(iterable.slots)
            return pairs, tail
        if isinstance(iterable, (SInt, SFloat, SBool, SNone)):
            self.error(true(), "TypeError")
            return [], None
        raise Opaque(f"iterating over a {iterable.kind}")

    def comprehension(self, node: ast.expr, env: dict[str, Sym], mode: str
                      ) -> tuple[list[tuple[z3.BoolRef, Sym]], z3.BoolRef | None, Sym | None]:
        """Items of a generator/list comprehension or of an iterable expression.

        ``mode`` (``all``/``any``/``plain``) sets which earlier items stop the
        evaluation (errors of later items only count when they are reached).
        Returns (condition, value) pairs, the tail condition and the iterable.
        """
        if not isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            iterable = self.expr(node, env)
            pairs, tail = self.elements(iterable)
            return pairs, tail, iterable
        if len(node.generators) != 1:
            raise Opaque("comprehension with several `for`")
        generator = node.generators[0]
        if generator.is_async or not isinstance(generator.target, ast.Name):
            raise Opaque("comprehension target is not a name")
        iterable = self.expr(generator.iter, env)
        pairs, tail = self.elements(iterable)
        out: list[tuple[z3.BoolRef, Sym]] = []
        reach: z3.BoolRef = true()
        errors_before = len(self.errs)
        for present, element in pairs:
            child = dict(env)
            child[generator.target.id] = element
            cond = present
            with self.guarded(z3_and(reach, present)):
                for condition in generator.ifs:
                    with self.guarded(cond):
                        cond = z3_and(cond, self.truthy(self.expr(condition, child)))
                with self.guarded(cond):
                    value = self.expr(node.elt, child)
            out.append((cond, value))
            if mode == "all":
                reach = z3_and(reach, z3_or(z3_not(cond), self.truthy(value)))
            elif mode == "any":
                reach = z3_and(reach, z3_or(z3_not(cond), z3_not(self.truthy(value))))
        if tail is not None and len(self.errs) > errors_before:
            self.error(z3_and(reach, tail, self.havoc_bool("errors past the element bound")),
                       "an exception")
        if tail is not None:
            tail = z3_and(reach, tail) if mode != "plain" else tail
        return out, tail, iterable

    # -- calls --------------------------------------------------------------------------
    def call(self, node: ast.Call, env: dict[str, Sym]) -> Sym:
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise Opaque("call with *args or **kwargs")
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.expr(func.value, env)
            if not isinstance(receiver, (SObj, SSelf)):
                return self.method(receiver, func.attr, node, env)
            if isinstance(receiver, SSelf):
                raise Opaque(f"call to self.{func.attr}()")
            target = self.attribute(receiver, func.attr)
        else:
            target = self.expr(func, env)
        if not isinstance(target, SObj):
            raise Opaque(f"call of a {target.kind}")
        return self.builtin(target.obj, node, env)

    def builtin(self, fn: object, node: ast.Call, env: dict[str, Sym]) -> Sym:
        """A call to a function: its handler in the ``calls`` registry, or opaque."""
        name = _function_name(fn)
        entry = lookup_function(fn)
        if entry is None:
            raise Opaque(f"call to {name}() in {self.owner}: not a modelled function")
        self.constructs.add(entry.key)
        return entry.handler(self, CallSite(node, env, entry.key, self.owner))

    def fresh_like(self, value: Sym, reason: str) -> Sym:
        self.havoc_note(reason)
        if isinstance(value, SInt):
            return SInt(z3.Int(fresh_name("havoc")))
        if isinstance(value, SFloat):
            return self.havoc_float(reason)
        if isinstance(value, SStr):
            return SStr(z3.String(fresh_name("havoc")))
        raise Opaque(reason)

    def method(self, receiver: Sym, name: str, node: ast.Call, env: dict[str, Sym]) -> Sym:
        """A method call: the handler registered for the receiver's type, or opaque."""
        receiver = self.unwrap(receiver, "AttributeError")
        if isinstance(receiver, SEnum) and issubclass(receiver.cls, str):
            receiver = self.base(receiver)
        if node.keywords:
            raise Opaque(f".{name}() with keyword arguments in {self.owner}")
        kind = receiver_kind(receiver)
        entry = lookup_method(kind, name)
        if entry is None:
            what = f"{kind}.{name}()" if kind else f"method .{name}() of a {receiver.kind}"
            raise Opaque(f"{what} in {self.owner}: not a modelled method")
        self.constructs.add(entry.key)
        return entry.handler(self, receiver, CallSite(node, env, entry.key, self.owner))


def _function_name(fn: object) -> str:
    """How messages name a called object: ``math.floor``, ``print``, ``Foo``."""
    name = str(getattr(fn, "__name__", None) or repr(fn))
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and module != "builtins" and \
            module.split(".")[0] in sys.stdlib_module_names:
        return f"{module}.{name}"
    return name




BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**",
}
