"""Which negative verdicts of ``hoare verify`` may skip the falsifier's concrete search.

A ``fail`` or ``warn`` claims that no value exists. z3 proves it on the translation,
and ``falsifier.falsify`` then searches for a concrete value refuting it, to catch a
translator bug (tens of milliseconds per verdict, most of a defective contract's
check). When every part the proof rests on is exact, in the sense of the pre-flight's
exact certificates (``runtime/certificate.py``), the search can only agree, so it is
skipped, as the pre-flight skips it.

The parts of a proof: the assertions named in z3's unsat core, and every assertion
asserted without a label (always part of it). Each has an owner: a type (exact when
``TypedValue.exact``: nothing dropped, nothing assumed) or one predicate's translation
(``exact_translation``). A label owned by several parts is exact only when all of them
are. Verifier bounds (how many list elements are modelled) never count: a refutation
that needs one is retried without them (``solve``), so a core never names one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hoare.verifier.checks.model import predicate_assertions, type_assertions
from hoare.verifier.runtime.certificate import exact_translation
from hoare.verifier.solve.solver import Assertion
from hoare.verifier.translate.predicates import Translation
from hoare.verifier.translate.types import TypedValue

__all__ = ["Part", "exact_refutation", "owned_by", "translation_parts", "type_part"]

# The assertions one owner contributes to a query, and whether that owner is exact.
Part = tuple[Sequence[Assertion], bool]


def type_part(typed: TypedValue) -> Part:
    """The type constraints of ``typed`` (as ``type_assertions`` asserts them)."""
    return type_assertions(typed), typed.exact


def translation_parts(translations: Iterable[Translation]) -> list[Part]:
    """Each translated predicate's assertions (as ``predicate_assertions`` asserts
    them), with its exactness."""
    return [(predicate_assertions([t]), exact_translation(t)) for t in translations
            if t.opaque is None]


def owned_by(translation: Translation, assertions: Sequence[Assertion]) -> Part:
    """Assertions a check built from ``translation`` (its definitions, a goal on its
    failure), owned by it."""
    return assertions, exact_translation(translation)


def exact_refutation(core: Iterable[str], parts: Iterable[Part]) -> bool:
    """Does an unsat answer with this ``core``, to a query made of ``parts`` (every
    assertion of the query, by owner), rest only on exact parts?"""
    labels: dict[str, bool] = {}
    for assertions, exact in parts:
        for assertion in assertions:
            if assertion.kind == "bound":
                continue
            if assertion.label is None:
                if not exact:
                    return False  # an unlabelled assertion is always in the proof
            else:
                labels[assertion.label] = labels.get(assertion.label, True) and exact
    return all(labels.get(label, False) for label in core)
