"""Exact certificates: which pre-flight refusals may skip the concrete search.

A refusal (``unsatisfiable``: no output passes for this input) is a universal claim.
z3 proves it on the translation, so it is as sound as what the proof rests on. Every
refusal is put through the falsifier's concrete search (``PREFLIGHT_BUDGET``), which
costs a few milliseconds per call, to catch translator bugs. This module decides when
that search can be skipped (issue 29 item 3, issue 31 item 3): when every part of
the proof is exact, the search adds nothing.

The parts of a per-input proof are the assertions in z3's unsat core, the
assertions asserted without a tracking label (always part of it), and the input's
binding. Each assertion has an *owner*: the output's type (the domain) or one
post-condition's translation. The proof is exact when:

* the domain is exact: nothing dropped, nothing assumed (``TypedValue.exact``);
* each translation in the proof is translated (not opaque), loosens nothing
  (no havoc), assumes nothing, reads no free ``self`` attribute, baked in only plain
  data (values of exactly the builtin types, enum members) or inert objects (modules,
  functions, classes: ``views.inert``), and every registry entry it used is
  registered ``exact``. Operators, literals and comparisons are
  modelled by the semantics modules, whose differential tests draw from the
  fuzzer's generators; float rounding and values past a list's modelled elements
  are havoc, so they never certify;
* the input was bound exactly (``Extractor``: every relevant value of exactly its
  modelled type; a subclass instance is not bound at all).

Anything else keeps the concrete search. A label owned by several parts is exact only
when all of them are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hoare.verifier.solve.solver import Assertion
from hoare.verifier.translate.calls import registered
from hoare.verifier.translate.predicates import Translation
from hoare.verifier.translate.values import is_plain_data
from hoare.verifier.translate.views import inert

__all__ = ["DOMAIN", "Certificate", "exact_translation"]

DOMAIN = -1  # the owner of the output type's constraints (translations are 0, 1, ...)


def exact_translation(translation: Translation) -> bool:
    """Is the translation Python's behaviour on every value it can receive?"""
    if translation.opaque is not None or translation.havoc or translation.assumptions \
            or translation.free:
        return False
    if not all(is_plain_data(value) or inert(value) for _get, value in translation.reads):
        return False  # a constant of a class that may define its own operators
    entries = registered()
    return all(key in entries and entries[key].precision == "exact"
               for key in translation.constructs)


@dataclass(frozen=True)
class Certificate:
    """For one prepared per-input query: which core labels rest only on exact parts,
    and whether the parts asserted without a label (always in the proof) are exact."""

    exact_labels: frozenset[str]
    unlabelled_exact: bool

    @classmethod
    def of(cls, assertions: Sequence[tuple[Assertion, int]], domain_exact: bool,
           posts: Sequence[Translation]) -> Certificate:
        """``assertions``: the query's assertions, each with its owner (``DOMAIN`` or
        the index of its translation in ``posts``); ``domain_exact``: the output type's
        ``TypedValue.exact``."""
        owner_exact = {DOMAIN: domain_exact}
        owner_exact.update((index, exact_translation(t)) for index, t in enumerate(posts))
        labels: dict[str, bool] = {}
        unlabelled = True
        for assertion, owner in assertions:
            if assertion.kind == "bound":
                continue  # not asserted: the input is concrete, no witness is built
            exact = owner_exact.get(owner, False)
            if assertion.label is None:
                unlabelled = unlabelled and exact
            else:
                labels[assertion.label] = labels.get(assertion.label, True) and exact
        return cls(frozenset(label for label, exact in labels.items() if exact), unlabelled)

    def certifies(self, core: Iterable[str], input_exact: bool) -> bool:
        """Does a refusal with this unsat core rest only on exact parts?"""
        return input_exact and self.unlabelled_exact and \
            all(label in self.exact_labels for label in core)
