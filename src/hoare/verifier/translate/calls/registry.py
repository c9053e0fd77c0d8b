"""The table of calls the predicate translator models, and how to add one.

The translator does not know any function by itself: a call ``f(...)`` or a
method call ``x.m(...)`` is looked up here, and whatever is not registered is
*opaque by construction* (``Opaque("call to f() in <predicate>: ...")``). One
handler per construct, registered once, grouped in one module per family
(``numeric``, ``strings``, ``containers``, ``regexes``; see ``calls/__init__``).

Declaring a handler in a family module (``FAMILY = Family("strings")``)::

    @FAMILY.function(math.isnan, "math.isnan", precision="exact")
    def _isnan(t: ExpressionTranslator, call: CallSite) -> Sym: ...

    @FAMILY.method("str", "strip", precision="exact")
    def _strip(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym: ...

Importing a family registers nothing: ``register_all()`` registers every family
(listed there) once, where the registry is first needed (a lookup, ``registered()``,
``table()``), and ``reset()`` forgets it all for tests. A new family is added to
``register_all``'s list.

``receiver`` is already unwrapped (``None`` raises ``AttributeError``) and a
``str`` enum member already replaced by its value. The receiver kinds are those
of ``receiver_kind``: ``str``, ``int``, ``float``, ``bool``, ``list``, ``tuple``,
``set``, ``enum``, ``model``.

Precision, which the docs' soundness table is generated from (``table()``):

* ``exact``: the translation is Python's behaviour (values and raised
  exceptions) on every value the verifier models;
* ``over``: it allows every behaviour of Python and possibly more (a *havoc*,
  e.g. past the verifier's list-element bound), which keeps negative verdicts
  sound but may turn them into ``unknown``.

An under-approximation (a behaviour of Python the translation excludes) is a
bug: such a construct must stay unregistered.

Differential coverage: every registered key must be covered by a differential
test (z3 translation against Python on generated values). A test module covers
keys by defining a module-level ``COVERS`` set of registry keys (for example
``COVERS = {"math.isnan", "float"}``) next to tests that exercise them;
``tests/verifier/test_verifier_registry.py`` collects ``COVERS`` from every
``tests/test_verifier_*.py`` module and fails unless their union is exactly the
set of registered keys. Register a construct and its differential test in the
same commit. A test should also check that its predicate really went through
the entry: ``key in translation.constructs`` (the registry keys a
``Translation`` used), as ``test_verifier_registry.py`` does; its module
docstring shows the comparison (exact: Python's verdict is the only possible
one; over: it is among the possible ones).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hoare.forking import free_in_child
from hoare.verifier.translate.values import (
    Opaque,
    SBool,
    SColl,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SStr,
    Sym,
)

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator

__all__ = [
    "CallSite",
    "Construct",
    "Family",
    "Precision",
    "function",
    "lookup_function",
    "lookup_method",
    "markdown_table",
    "method",
    "receiver_kind",
    "register_all",
    "registered",
    "reset",
    "table",
]

Precision = Literal["exact", "over"]
FunctionHandler = Callable[["ExpressionTranslator", "CallSite"], Sym]
MethodHandler = Callable[["ExpressionTranslator", Sym, "CallSite"], Sym]


@dataclass(frozen=True)
class CallSite:
    """One call in predicate code: its AST, the environment its arguments are
    evaluated in, and the names used in messages."""

    node: ast.Call
    env: dict[str, Sym]
    name: str  # "len", "math.isnan", "str.strip"
    owner: str  # the predicate, as labels name it

    @property
    def args(self) -> list[ast.expr]:
        return self.node.args

    @property
    def keywords(self) -> dict[str, ast.expr]:
        return {k.arg: k.value for k in self.node.keywords if k.arg is not None}

    def unsupported(self, what: str) -> Opaque:
        """The exception for a use of a registered construct it does not model."""
        return Opaque(f"{self.name}() {what} in {self.owner}")

    def only_positional(self, *counts: int) -> None:
        """Demand no keyword and one of ``counts`` positional arguments."""
        if self.node.keywords or len(self.args) not in counts:
            raise self.unsupported(f"with {len(self.args)} arguments"
                                   + (" and keywords" if self.node.keywords else ""))

    def one(self, t: ExpressionTranslator) -> Sym:
        """The value of the single positional argument."""
        self.only_positional(1)
        return t.expr(self.args[0], self.env)


@dataclass(frozen=True)
class Construct:
    """A registered function or method: its key, precision and handler."""

    key: str
    kind: Literal["function", "method"]
    precision: Precision
    handler: Callable[..., Sym]
    note: str = ""


_CONSTRUCTS: dict[str, Construct] = {}  # key -> entry; read it through registered()
_FUNCTIONS: dict[int, tuple[object, Construct]] = {}  # id(fn) -> (fn kept alive, entry)
_METHODS: dict[tuple[str, str], Construct] = {}


class _Registration:
    """Whether ``register_all`` has run, and the lock that makes it run once when
    threads (the runtime pre-flight) look calls up at the same time."""

    done = False
    lock = threading.Lock()


free_in_child(_Registration, _Registration.lock)  # held while the calls register


def _add(entry: Construct, fn: object = None, receiver: str | None = None) -> None:
    if entry.precision not in ("exact", "over"):
        raise ValueError(f"{entry.key}: precision must be 'exact' or 'over', "
                         f"not {entry.precision!r}")
    if entry.key in _CONSTRUCTS:
        raise ValueError(f"{entry.key} is registered twice")
    _CONSTRUCTS[entry.key] = entry
    if entry.kind == "function":
        _FUNCTIONS[id(fn)] = (fn, entry)
    else:
        assert receiver is not None
        _METHODS[(receiver, entry.key.removeprefix(f"{receiver}."))] = entry


class Family:
    """The handlers of one family of calls (``numeric``, ``strings``…), declared with
    its ``function`` and ``method`` decorators. Declaring registers nothing:
    ``register_all`` adds every family's handlers to the registry, once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.declared: list[tuple[Construct, object, str | None]] = []  # entry, fn, receiver

    def function(self, fn: object, key: str, *, precision: Precision, note: str = ""
                 ) -> Callable[[FunctionHandler], FunctionHandler]:
        """Declare the handler of calls to the Python object ``fn`` (a builtin, a
        type, a module function), shown as ``key``."""

        def declare(handler: FunctionHandler) -> FunctionHandler:
            self.declared.append((Construct(key, "function", precision, handler, note),
                                  fn, None))
            return handler

        return declare

    def method(self, receiver: str, name: str, *, precision: Precision, note: str = ""
               ) -> Callable[[MethodHandler], MethodHandler]:
        """Declare the handler of ``x.name(...)`` for receivers of kind ``receiver``
        (see ``receiver_kind``); the key is ``receiver.name``."""

        def declare(handler: MethodHandler) -> MethodHandler:
            self.declared.append((Construct(f"{receiver}.{name}", "method", precision,
                                            handler, note), None, receiver))
            return handler

        return declare


def register_all() -> None:
    """Register the handlers of every family, once: called where the registry is
    first needed (a lookup, ``registered()``, the table); later calls return at once."""
    if _Registration.done:
        return
    # the families declare their handlers with this module's Family: imported here
    from hoare.verifier.translate.calls import (
        containers,
        introspection,
        numeric,
        regexes,
        strings,
    )

    with _Registration.lock:
        if _Registration.done:
            return
        for family in (containers.FAMILY, introspection.FAMILY, numeric.FAMILY,
                       regexes.FAMILY, strings.FAMILY):
            for entry, fn, receiver in family.declared:
                _add(entry, fn, receiver)
        _Registration.done = True


def reset() -> None:
    """Forget every registration (for tests): the next use registers the families
    again, and handlers registered by ``function``/``method`` are gone."""
    with _Registration.lock:
        _CONSTRUCTS.clear()
        _FUNCTIONS.clear()
        _METHODS.clear()
        _Registration.done = False


def registered() -> Mapping[str, Construct]:
    """Every registered construct by key (the families registered first)."""
    register_all()
    return _CONSTRUCTS


def function(fn: object, key: str, *, precision: Precision, note: str = ""
             ) -> Callable[[FunctionHandler], FunctionHandler]:
    """Register now, after the families, the handler of calls to ``fn`` shown as
    ``key`` (a construct outside the families: tests, extensions)."""

    def register(handler: FunctionHandler) -> FunctionHandler:
        register_all()
        _add(Construct(key, "function", precision, handler, note), fn)
        return handler

    return register


def method(receiver: str, name: str, *, precision: Precision, note: str = ""
           ) -> Callable[[MethodHandler], MethodHandler]:
    """Register now, after the families, the handler of ``x.name(...)`` for
    receivers of kind ``receiver``; the key is ``receiver.name``."""

    def register(handler: MethodHandler) -> MethodHandler:
        register_all()
        _add(Construct(f"{receiver}.{name}", "method", precision, handler, note),
             receiver=receiver)
        return handler

    return register


def lookup_function(fn: object) -> Construct | None:
    """The handler registered for calls to ``fn``, or None (the call is opaque)."""
    register_all()
    found = _FUNCTIONS.get(id(fn))
    return found[1] if found is not None and found[0] is fn else None


def lookup_method(kind: str | None, name: str) -> Construct | None:
    """The handler registered for ``x.name()`` on a receiver of ``kind``, or None."""
    register_all()
    return _METHODS.get((kind, name)) if kind is not None else None


def receiver_kind(value: Sym) -> str | None:
    """The Python type of a symbolic receiver, as method keys name it."""
    if isinstance(value, (SList, SColl)):
        return "set" if value.container == "setlit" else value.container  # a set display
    kinds: tuple[tuple[type[Sym], str], ...] = (
        (SStr, "str"), (SBool, "bool"), (SInt, "int"), (SFloat, "float"),
        (SEnum, "enum"), (SModel, "model"))
    for cls, kind in kinds:
        if isinstance(value, cls):
            return kind
    return None


def table() -> list[tuple[str, str, str, str]]:
    """(key, function/method, precision, note) of every registered construct,
    sorted: the source of the docs' soundness table."""
    return sorted((e.key, e.kind, e.precision, e.note) for e in registered().values())


def markdown_table() -> str:
    """The soundness table for the docs: one row per registered construct."""
    rows = ["| construct | kind | precision | scope |", "|---|---|---|---|"]
    for key, kind, precision, note in table():
        rows.append(f"| `{key}` | {kind} | {precision} | {note} |")
    return "\n".join(rows) + "\n"
