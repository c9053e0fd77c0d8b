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
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from hoare.declaration.description import PredicateSource
from hoare.declaration.source import SourceNotFound, function_node
from hoare.verifier.translate.attributes import InstanceSelf, SelfModel, StaticSelf
from hoare.verifier.translate.calls import registered
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.statements import FailureCase, Translator
from hoare.verifier.translate.values import (
    Opaque,
    Sym,
)

__all__ = ["FailureCase", "InstanceSelf", "SelfModel", "StaticSelf", "Translation", "translate"]

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
        registry = registered()
        entries = ", ".join(f"{key} ({registry[key].precision})" if key in registry else key
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



def _changed(now: object, then: object) -> bool:
    if now is then:
        return False
    try:
        return bool(now != then)
    except Exception:
        return True



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
    translator = Translator(source, node, self_model)
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
