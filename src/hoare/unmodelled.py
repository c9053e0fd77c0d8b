"""Every reason the verifier answers ``unknown``, as one exception tree.

The verifier's verdicts must hold for real Python and pydantic; whatever it does
not model exactly stops the reasoning that needs it and becomes ``unknown``
(pre-flight then lets the call proceed). These exceptions carry that reason,
with a message naming the construct and where it was met; none of them escapes
the verifier::

    Unmodelled                  root: catch it to turn any of these into unknown
    ├── Opaque                  a construct of predicate code or a type not modelled
    │   └── Unrepresentable     a string with a character z3 strings cannot hold
    ├── SourceNotFound          a predicate's source cannot be located
    ├── BindError               a concrete value does not fit its symbolic value
    └── WitnessError            a z3 model cannot be turned into a concrete value

Private causes (a regex feature ``regex.py`` does not translate, a formula
``qe.py`` cannot compile, a value the pre-flight cannot key) subclass
``Unmodelled`` in their modules. This module is standard library only and sits
outside ``hoare.verifier`` because ``hoare.declaration.source`` (used when contracts are
defined, without z3) raises ``SourceNotFound``; ``hoare.unmodelled``
re-exports it.
"""

from __future__ import annotations

from hoare.errors import HoareError

__all__ = [
    "BindError",
    "Opaque",
    "SourceNotFound",
    "Unmodelled",
    "Unrepresentable",
    "Unsupported",
    "WitnessError",
]


class Unmodelled(HoareError):
    """Something the verifier does not model exactly: the verdict that needed it is
    ``unknown``. The message says what and where."""


class Opaque(Unmodelled):
    """A construct the verifier does not model faithfully.

    Raised while translating; the predicate (or the value) becomes *opaque*: no
    check that depends on it may pass.
    """


class Unrepresentable(Opaque):
    """A string with a character z3 strings cannot hold (above U+2FFFF)."""


class Unsupported(Unmodelled):
    """A construct one translator (a regex, a concrete generator, a tool condition, a
    quantifier elimination) does not handle; the caller falls back or reports it."""


class SourceNotFound(Unmodelled):
    """The predicate's source cannot be located unambiguously."""


class BindError(Unmodelled):
    """The value does not have the shape of the symbolic value."""


class WitnessError(Unmodelled):
    """A model cannot be turned into a concrete value."""
