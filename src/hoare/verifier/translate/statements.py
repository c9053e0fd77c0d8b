"""Statements of predicate code → failure cases, path by path.

``Translator`` executes a predicate's body symbolically: every ``if`` forks the
path, every ``raise``/failing ``assert``/falsy ``return`` ends it as a
``FailureCase`` (path condition, label), and an expression that may raise adds a
case under the condition that it raises. Local assignments update the path's
environment; a ``for`` over a list is unrolled over its slots. Expressions are
``ExpressionTranslator``'s.
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass

import z3

from hoare.declaration.description import PredicateSource
from hoare.declaration.source import FunctionNode
from hoare.verifier.solve.context import true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.attributes import SelfModel, plain
from hoare.verifier.translate.expressions import BINOPS, ExpressionTranslator, source_text
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.values import (
    Opaque,
    SColl,
    SList,
    SNone,
    SOpt,
    SSelf,
    Sym,
)

__all__ = ["MAX_PATHS", "FailureCase", "Translator"]


MAX_PATHS = 256


@dataclass(frozen=True)
class FailureCase:
    """The predicate fails when ``cond`` holds. ``kind``: ``check`` (a guard the user
    wrote), ``error`` (an expression raises) or ``havoc`` (not modelled exactly)."""

    cond: z3.BoolRef
    label: str
    kind: str



@dataclass
class _Path:
    pc: z3.BoolRef
    env: dict[str, Sym]



def _template(node: ast.expr | None) -> str | None:
    """The text of an exception message: a literal, or an f-string shown with its
    placeholders (``Coverage score {output.coverage_score:.2f} is below …``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                spec = ""
                if value.format_spec is not None:
                    spec = ":" + (_template(value.format_spec) or "")
                parts.append("{" + ast.unparse(value.value) + spec + "}")
        return "".join(parts)
    return None



def _defaults(fn: object) -> object:
    """``fn``'s default values now (a ``reads`` getter: have they changed?)."""
    return getattr(fn, "__defaults__", None)


class Translator(ExpressionTranslator):
    """The predicate translator: statements and paths over ``ExpressionTranslator``."""

    def __init__(self, source: PredicateSource, node: FunctionNode,
                 self_model: SelfModel | None) -> None:
        super().__init__(source, node, self_model)
        self.cases: list[FailureCase] = []
        self.pass_exits = 0  # returns that may pass: they forbid relaxing (see statement)
        self.none_returns = False
        returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        self.single_return = isinstance(node, ast.Lambda) or len(returns) <= 1

    def fail(self, cond: z3.BoolRef, label: str, kind: str = "check") -> None:
        if is_false(cond):
            return
        self.cases.append(FailureCase(cond, label, kind))
        if len(self.cases) > MAX_PATHS:
            raise Opaque("too many paths to translate")

    # -- entry --------------------------------------------------------------------------
    def run(self, args: list[Sym]) -> None:
        node = self.node
        if not isinstance(node, ast.Lambda) and node.decorator_list:
            raise Opaque("decorated predicate")
        if self.fn is not self.source.fn and not isinstance(node, ast.Lambda):
            raise Opaque("wrapped predicate (functools.wraps)")
        spec = node.args
        if spec.vararg or spec.kwonlyargs or spec.kwarg:
            raise Opaque("predicate with *args, keyword-only or **kwargs parameters")
        params = [a.arg for a in (*spec.posonlyargs, *spec.args)]
        env: dict[str, Sym] = {}
        if self.source.is_method:
            if not params:
                raise Opaque("method predicate without self")
            env[params[0]] = SSelf(self._resolve_self)
            params = params[1:]
        defaults = list(getattr(self.fn, "__defaults__", None) or ())
        first_default = len(params) - len(defaults)
        for index, name in enumerate(params):
            if index < len(args):
                env[name] = args[index]
            elif index >= first_default:
                default = defaults[index - first_default]
                env[name] = plain(default, f"the default of {name}")
                # the translation bakes the default in: a cache must see it change
                self.reads.append((functools.partial(_defaults, self.fn),
                                   getattr(self.fn, "__defaults__", None)))
            else:
                raise Opaque(f"parameter {name} has no value")
        start = _Path(true(), env)
        if isinstance(node, ast.Lambda):
            self.do_return(node.body, start, node.body)
            return
        if self.block(node.body, [start]):
            # Falling off the end returns None: the predicate passes (spec §3.2).
            self.none_returns = True

    def _resolve_self(self, name: str) -> Sym:
        if self.self_model is None:
            raise Opaque("self is not available")
        return self.self_model.resolve(name)

    # -- statements ---------------------------------------------------------------------
    def block(self, statements: list[ast.stmt], paths: list[_Path]) -> list[_Path]:
        for statement in statements:
            out: list[_Path] = []
            for path in paths:
                out.extend(self.statement(statement, path))
            paths = out
            if len(paths) + len(self.cases) > MAX_PATHS:
                raise Opaque("too many paths to translate")
        return paths

    def evaluate(self, node: ast.expr, path: _Path) -> tuple[Sym, z3.BoolRef]:
        """Evaluate ``node`` on ``path``; record its raising cases; return the value
        and the condition that it did not raise."""
        self.errs = []
        value = self.expr(node, path.env)
        raised = []
        for cond, exc, where in self.errs:
            full = z3_and(path.pc, cond)
            where_text = f": {where}" if where else ""
            self.fail(full, f"{self.owner} raises {exc}{where_text}", kind="error")
            raised.append(cond)
        self.errs = []
        return value, z3_not(z3_or(*raised)) if raised else true()

    def statement(self, node: ast.stmt, path: _Path) -> list[_Path]:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return [path]
        if isinstance(node, ast.Pass):
            return [path]
        if isinstance(node, ast.Return):
            self.do_return(node.value, path, node)
            return []
        if isinstance(node, ast.Raise):
            self.fail(path.pc, self.raise_label(node))
            return []
        # A world in which a failure case holds fails whatever happens next, so the
        # path that continues after a failing exit (an error, a failed assert, an
        # `if` whose branch always fails) need not exclude it: the conjunction of
        # the failure cases is unchanged, and independent guards stay independent.
        if isinstance(node, ast.Assert):
            if sys.flags.optimize:  # `python -O` compiles asserts away
                return [path]
            value, ok = self.evaluate(node.test, path)
            holds = self.truthy(value)
            message = _template(node.msg) if node.msg is not None else None
            label = f'"{message}"' if message else f'"assert {source_text(node.test)}"'
            self.fail(z3_and(path.pc, ok, z3_not(holds)), label)
            return [_Path(path.pc, path.env)]
        if isinstance(node, ast.If):
            value, ok = self.evaluate(node.test, path)
            cond = self.truthy(value)
            base = path.pc
            out = []
            then_fails_only = False
            if not is_false(cond):
                exits = self.pass_exits
                then_paths = self.block(node.body, [_Path(z3_and(base, cond), dict(path.env))])
                then_fails_only = not then_paths and self.pass_exits == exits
                out.extend(then_paths)
            if not is_true(cond):
                else_pc = base if then_fails_only else z3_and(base, z3_not(cond))
                out.extend(self.block(node.orelse, [_Path(else_pc, dict(path.env))]))
            return out
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self.assign(node, path)
        if isinstance(node, ast.For):
            return self.for_loop(node, path)
        raise Opaque(f"`{type(node).__name__}` statement at line {node.lineno}")

    def raise_label(self, node: ast.Raise) -> str:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            text = _template(exc.args[0])
            if text:
                return f'"{text}"'
        owner = getattr(self.source.fn, "__qualname__", self.source.id)
        return f"{owner} raises (line {node.lineno})"

    def return_label(self, value_node: ast.expr, where: ast.AST) -> str:
        """A declarative condition: its message. A method: the returned expression,
        or ``Class.post returns False (line n)``."""
        if not self.source.is_method:
            return f'"{self.message}"'
        owner = getattr(self.source.fn, "__qualname__", self.source.id)
        if isinstance(value_node, ast.Constant):
            return f"{owner} returns {value_node.value!r} (line {getattr(where, 'lineno', '?')})"
        return f'"{source_text(value_node)}" ({owner})'

    def do_return(self, value_node: ast.expr | None, path: _Path, where: ast.AST) -> None:
        if value_node is None:  # a bare `return` returns None: the path passes
            self.none_returns = True
            self.pass_exits += 1
            return
        value, ok = self.evaluate(value_node, path)
        passes = self.passes(value)
        if isinstance(value, (SNone, SOpt)):
            self.none_returns = True
        if not is_false(passes):
            self.pass_exits += 1
        self.fail(z3_and(path.pc, ok, z3_not(passes)), self.return_label(value_node, where))

    def assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign,
               path: _Path) -> list[_Path]:
        if isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name):
                raise Opaque("augmented assignment to something else than a name")
            op = BINOPS.get(type(node.op))
            if op is None:
                raise Opaque(f"operator {type(node.op).__name__}")
            current = path.env.get(node.target.id)
            if isinstance(current, SList) or (isinstance(current, SColl) and
                                              current.container != "tuple"):
                # `+=` on a list extends it in place: aliases (the model's own list) change
                raise Opaque("in-place update of a list or set")
            fake = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            ast.copy_location(fake, node)
            value, _ok = self.evaluate(fake, path)
            env = dict(path.env)
            env[node.target.id] = value
            return [_Path(path.pc, env)]
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None:
            return [path]
        if len(targets) != 1:
            raise Opaque("chained assignment")
        target = targets[0]
        env = dict(path.env)
        if isinstance(target, ast.Name):
            value, _ok = self.evaluate(node.value, path)
            env[target.id] = value
            return [_Path(path.pc, env)]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and \
                len(target.elts) == len(node.value.elts) and \
                all(isinstance(t, ast.Name) for t in target.elts):
            values = [self.evaluate(element, path)[0] for element in node.value.elts]
            for name_node, value in zip(target.elts, values, strict=True):
                assert isinstance(name_node, ast.Name)
                env[name_node.id] = value
            return [_Path(path.pc, env)]
        raise Opaque(f"assignment to `{source_text(target)}`")

    def for_loop(self, node: ast.For, path: _Path) -> list[_Path]:
        if node.orelse or any(isinstance(n, (ast.Break, ast.Continue))
                              for n in ast.walk(node)):
            raise Opaque("loop with break, continue or else")
        if not isinstance(node.target, ast.Name):
            raise Opaque("loop target is not a name")
        iterable, ok = self.evaluate(node.iter, path)
        self.errs = []
        elements, tail = self.elements(iterable)
        for cond, exc, where in self.errs:  # iterating None raises
            self.fail(z3_and(path.pc, cond), f"{self.owner} raises {exc}: {where}", "error")
            ok = z3_and(ok, z3_not(cond))
        self.errs = []
        live = [_Path(z3_and(path.pc, ok), dict(path.env))]
        done: list[_Path] = []
        for active, element in elements:
            entering = []
            for p in live:
                done.append(_Path(z3_and(p.pc, z3_not(active)), p.env))
                env = dict(p.env)
                env[node.target.id] = element
                entering.append(_Path(z3_and(p.pc, active), env))
            live = self.block(node.body, entering)
        if tail is not None:
            reason = f"loop over {source_text(node.iter)} past the verifier's element bound"
            for p in live:
                self.fail(z3_and(p.pc, tail, self.havoc_bool(reason)), reason, "havoc")
                done.append(_Path(z3_and(p.pc, z3_not(tail)), p.env))
        else:
            done.extend(live)
        return [p for p in done if not is_false(p.pc)]
