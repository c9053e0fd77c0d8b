"""Predicate code → z3, from the AST (never by calling the predicate on z3 objects).

A predicate *fails* when it raises or returns a falsy value other than ``None``
(spec §3.2). Its body is executed symbolically, path by path: every ``if``
forks, every ``raise``/failing ``assert``/falsy ``return`` ends a path as a
*failure case* ``(path condition, label)``, and an expression that may raise
(``10 // x``, ``s[5]``, ``None < 1``) adds a failure case under the condition
that it raises. The predicate passes exactly when no failure case holds, so
each case becomes one tracked assertion and an unsat core names the guard
(``"score must exceed 1"``) that conflicts.

Supported: ``if``/``raise``, ``assert``, ``return``, local assignments, ``for``
over a list (unrolled over its slots), ``and``/``or``/``not`` with Python's value
semantics, comparisons and chains, arithmetic, generator expressions, ``in`` on
strings and literal collections, ``is None``, attribute access on models and
enums, ``self.<attr>``, and the calls registered in ``calls/`` (one handler per
builtin, module function and method, each declaring its precision:
``calls.table()``). Anything else raises ``Opaque``: the predicate is *opaque*.
"""

from __future__ import annotations

import ast
import builtins
import enum
import inspect
import math
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import z3

from hoare.declaration.description import PredicateSource
from hoare.declaration.source import FunctionNode, SourceNotFound, function_node
from hoare.verifier.solve.context import true
from hoare.verifier.solve.z3util import is_false, is_true
from hoare.verifier.translate.attributes import InstanceSelf, SelfModel, StaticSelf, plain
from hoare.verifier.translate.calls import CallSite, lookup_function, lookup_method, receiver_kind
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.semantics import Semantics
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
    SOpaque,
    SOpt,
    SSelf,
    SStr,
    STruth,
    Sym,
    const_to_sym,
    fresh_name,
    int_val,
    is_plain_data,
)

__all__ = ["FailureCase", "InstanceSelf", "SelfModel", "StaticSelf", "Translation", "translate"]

MAX_PATHS = 256


@dataclass(frozen=True)
class FailureCase:
    """The predicate fails when ``cond`` holds. ``kind``: ``check`` (a guard the user
    wrote), ``error`` (an expression raises) or ``havoc`` (not modelled exactly)."""

    cond: z3.BoolRef
    label: str
    kind: str


REGISTRY_NOTE = "registry: "  # the prefix of a ``rests_on`` note (shown with -v only)


@dataclass
class Translation:
    """A predicate in z3: it passes iff no failure case holds. ``opaque`` says why a
    predicate was not translated (then ``cases`` is empty and means nothing)."""

    source: PredicateSource
    name: str
    cases: list[FailureCase] = field(default_factory=list)
    opaque: str | None = None
    defs: list[z3.BoolRef] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    havoc: list[str] = field(default_factory=list)
    uses_float: bool = False
    reads_input: bool = False
    self_attrs: tuple[str, ...] = ()
    free: dict[str, Sym] = field(default_factory=dict)
    may_return_none: bool = False  # some return value may be None, which passes
    # (getter, value) of every global, closure cell and module or class attribute read:
    # the translation baked the value in, so a cache must check it has not changed.
    reads: list[tuple[Callable[[], object], object]] = field(default_factory=list)
    # registry keys (``calls``) of the functions and methods the translation used
    constructs: frozenset[str] = frozenset()

    def rests_on(self) -> list[str]:
        """The registry entries this translation used, as a report note (``hoare
        verify -v`` shows them: a verdict is as sound as the entries it rests on)."""
        if not self.constructs:
            return []
        from hoare.verifier.translate.calls import REGISTRY

        entries = ", ".join(f"{key} ({REGISTRY[key].precision})" if key in REGISTRY else key
                            for key in sorted(self.constructs))
        return [f"{REGISTRY_NOTE}{self.name} rests on {entries}"]

    def stale(self) -> bool:
        """Has a value the translation baked in changed since?"""
        return any(_changed(get(), value) for get, value in self.reads)

    @property
    def label(self) -> str:
        """How reports name the predicate: a method by its name, a condition by its
        message (or source expression) in quotes."""
        if self.source.is_method:
            return getattr(self.source.fn, "__qualname__", self.source.id)
        return f'"{self.source.message}"'

    def passes(self) -> z3.BoolRef:
        return z3_and(*[z3_not(c.cond) for c in self.cases])

    def fails(self) -> z3.BoolRef:
        return z3_or(*[c.cond for c in self.cases])


def _custom_truth(cls: type) -> bool:
    """Does a class (below pydantic's BaseModel, Enum and the builtins) define its own
    truth value?"""
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "enum") or klass.__module__.startswith("pydantic"):
            continue
        if "__bool__" in vars(klass) or "__len__" in vars(klass):
            return True
    return False


def _changed(now: object, then: object) -> bool:
    if now is then:
        return False
    try:
        return bool(now != then)
    except Exception:
        return True


# -- translation -----------------------------------------------------------------------


@dataclass
class _Path:
    pc: z3.BoolRef
    env: dict[str, Sym]


def _src(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 1] + "…"


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


class _Translator(Semantics):
    def __init__(self, source: PredicateSource, node: FunctionNode,
                 self_model: SelfModel | None) -> None:
        self.source = source
        self.node = node
        self.fn = inspect.unwrap(source.fn)
        self.self_model = self_model
        self.cases: list[FailureCase] = []
        self.defs: list[z3.BoolRef] = []
        self.havocs: list[str] = []
        self.errs: list[tuple[z3.BoolRef, str, str]] = []
        self.guards: list[z3.BoolRef] = []
        self.current = ""
        self.uses_float = False
        self.pass_exits = 0  # returns that may pass: they forbid relaxing (see statement)
        self.none_returns = False
        returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        self.single_return = isinstance(node, ast.Lambda) or len(returns) <= 1
        closure = getattr(self.fn, "__closure__", None) or ()
        freevars = self.fn.__code__.co_freevars
        self.cells: dict[str, Any] = dict(zip(freevars, closure, strict=False))
        # Python's compiler knows which names are local: reading one that this path has
        # not bound raises UnboundLocalError (it never falls back to a global).
        code = self.fn.__code__
        self.locals = frozenset((*code.co_varnames, *code.co_cellvars))
        self.reads: list[tuple[Callable[[], object], object]] = []
        self.constructs: set[str] = set()  # registry keys of the calls translated

    # -- hooks of Semantics -----------------------------------------------------------
    def truthy(self, value: Sym) -> z3.BoolRef:
        """Python's truth, but a model or enum whose class defines ``__bool__`` or
        ``__len__`` is opaque (the base semantics takes such values as always true)."""
        cls = value.cls if isinstance(value, (SModel, SEnum)) else None
        if cls is not None and _custom_truth(cls):
            raise Opaque(f"{cls.__name__} defines its own truth (__bool__ or __len__)")
        return super().truthy(value)

    def error(self, cond: z3.BoolRef, exc: str) -> None:
        self.errs.append((z3_and(*self.guards, cond), exc, self.current))

    def define(self, constraint: z3.BoolRef) -> None:
        self.defs.append(constraint)

    def havoc_note(self, reason: str) -> None:
        if reason not in self.havocs:
            self.havocs.append(reason)

    @contextmanager
    def guarded(self, cond: z3.BoolRef) -> Iterator[None]:
        self.guards.append(cond)
        try:
            yield
        finally:
            self.guards.pop()

    # -- labels -------------------------------------------------------------------------
    @property
    def message(self) -> str:
        return self.source.message

    @property
    def owner(self) -> str:
        """The predicate in labels: a method's name, a condition's quoted message."""
        if self.source.is_method:
            return getattr(self.source.fn, "__qualname__", self.source.id)
        return f'"{self.message}"'

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
                self.reads.append((lambda fn=self.fn: getattr(fn, "__defaults__", None),
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
            label = f'"{message}"' if message else f'"assert {_src(node.test)}"'
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
        return f'"{_src(value_node)}" ({owner})'

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
            op = _BINOPS.get(type(node.op))
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
        raise Opaque(f"assignment to `{_src(target)}`")

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
            reason = f"loop over {_src(node.iter)} past the verifier's element bound"
            for p in live:
                self.fail(z3_and(p.pc, tail, self.havoc_bool(reason)), reason, "havoc")
                done.append(_Path(z3_and(p.pc, z3_not(tail)), p.env))
        else:
            done.extend(live)
        return [p for p in done if not is_false(p.pc)]

    # -- expressions --------------------------------------------------------------------
    def expr(self, node: ast.expr, env: dict[str, Sym]) -> Sym:
        previous = self.current
        if isinstance(node, (ast.Call, ast.BinOp, ast.Compare, ast.Subscript, ast.Attribute)):
            self.current = _src(node)
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
            raise Opaque(f"`{type(node).__name__}` expression `{_src(node)}`")
        finally:
            self.current = previous

    def name(self, name: str, env: dict[str, Sym]) -> Sym:
        if name in env:
            return env[name]
        if name in self.locals:
            raise Opaque(f"local {name} may be read before it is assigned")
        if name in self.cells:
            cell = self.cells[name]
            try:
                value = cell.cell_contents
            except ValueError:
                raise Opaque(f"{name} is not bound yet") from None
            self.reads.append((lambda c=cell: _cell(c), value))
            return self.global_value(value, name)
        module_globals = getattr(self.fn, "__globals__", {})
        if name in module_globals:
            value = module_globals[name]
            self.reads.append((lambda g=module_globals, n=name: g.get(n, _MISSING), value))
            return self.global_value(value, name)
        if hasattr(builtins, name):
            return self.global_value(getattr(builtins, name), name)
        raise Opaque(f"unknown name {name}")

    @staticmethod
    def global_value(value: object, name: str) -> Sym:
        if is_plain_data(value):
            return const_to_sym(value)
        return SObj(value)

    def attribute(self, obj: Sym, attr: str) -> Sym:
        if isinstance(obj, SSelf):
            return obj.resolve(attr)
        if isinstance(obj, SOpt):
            self.error(obj.none, "AttributeError")
            return self.attribute(obj.inner, attr)
        if isinstance(obj, SNone):
            self.error(true(), "AttributeError")
            raise Opaque("attribute of None")
        if isinstance(obj, SModel):
            if attr in obj.fields:
                value = obj.fields[attr]
                if isinstance(value, SOpaque) and value.truthy is None:
                    raise Opaque(value.reason)
                return value
            raise Opaque(f"{obj.cls.__name__}.{attr} is not a field")
        if isinstance(obj, SEnum):
            if attr == "value":
                return self.enum_value(obj)
            if attr == "name":
                return self.enum_name(obj)
            raise Opaque(f"enum attribute {attr}")
        if isinstance(obj, SObj):
            target = obj.obj
            if isinstance(target, types.ModuleType):
                if target is math and attr in ("inf", "nan", "pi", "e", "tau"):
                    return const_to_sym(getattr(math, attr))
                value = getattr(target, attr, _MISSING)
                if value is _MISSING:
                    raise Opaque(f"{target.__name__}.{attr} not found")
                self.reads.append((lambda m=target, a=attr: getattr(m, a, _MISSING), value))
                return self.global_value(value, attr)
            if isinstance(target, type):
                try:
                    static = inspect.getattr_static(target, attr)
                except AttributeError:
                    raise Opaque(f"{target.__name__}.{attr} not found") from None
                if issubclass(target, enum.Enum) and attr in target.__members__:
                    return const_to_sym(target.__members__[attr])
                self.reads.append((lambda t=target, a=attr: inspect.getattr_static(
                    t, a, _MISSING), static))
                if is_plain_data(static):
                    return const_to_sym(static)
                return SObj(static)
        raise Opaque(f"attribute .{attr} of a {obj.kind}")

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
        op = _BINOPS.get(type(node.op))
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
            index = self.index_operand(index, "an index")
            if index is None:
                return SInt(int_val(0))
            i = self.int_expr(index)
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
                if isinstance(result, STruth):
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
            if part is None:
                return default
            value = self.unwrap(self.expr(part, env))
            if isinstance(value, SNone):
                return default
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


_MISSING = object()


def _cell(cell: Any) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


_BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**",
}


def reads_parameter(source: PredicateSource, index: int) -> bool:
    """Does the predicate's code use its ``index``-th value parameter (0: the value,
    1: the input of a post-condition)? Conservatively True when unsure."""
    try:
        node = function_node(source.fn)
    except SourceNotFound:
        return True
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if source.is_method:
        params = params[1:]
    if index >= len(params):
        return False
    name = params[index]
    body = node.body if isinstance(node, ast.Lambda) else node
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(body))


def self_attributes(source: PredicateSource) -> tuple[str, ...] | None:
    """The ``self.<attr>`` names a method predicate reads (None when unknown)."""
    if not source.is_method:
        return ()
    try:
        node = function_node(source.fn)
    except SourceNotFound:
        return None
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if not params:
        return None
    self_name = params[0]
    names: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == self_name:
            parent_ok = False
            for parent in ast.walk(node):
                if isinstance(parent, ast.Attribute) and parent.value is n:
                    parent_ok = True
                    if parent.attr not in names:
                        names.append(parent.attr)
            if not parent_ok:
                return None  # self used bare (passed somewhere): unknown
    return tuple(names)


def translate(source: PredicateSource, args: list[Sym], self_model: SelfModel | None,
              name: str | None = None) -> Translation:
    """Translate one predicate applied to ``args`` (the value, and for a post-condition
    taking it, the input actually used)."""
    display = name or source.id
    try:
        node = function_node(source.fn)
    except SourceNotFound as error:
        return Translation(source, display, opaque=str(error))
    translator = _Translator(source, node, self_model)
    if self_model is not None:
        self_model.begin()
    try:
        translator.run(args)
    except Opaque as error:
        return Translation(source, display, opaque=str(error))
    except (z3.Z3Exception, RecursionError, KeyError, TypeError, ValueError) as error:
        return Translation(source, display,
                           opaque=f"not translated ({type(error).__name__}: {error})")
    attrs = tuple(self_model.read) if self_model is not None else ()
    free = {k: v for k, v in self_model.free.items() if k in attrs} if self_model else {}
    assumptions = [self_model.assumptions[k] for k in attrs
                   if self_model is not None and k in self_model.assumptions]
    return Translation(
        source, display, translator.cases, None, translator.defs, assumptions,
        translator.havocs, translator.uses_float, reads_parameter(source, 1), attrs, free,
        translator.none_returns, translator.reads, frozenset(translator.constructs))
