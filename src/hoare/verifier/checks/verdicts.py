"""What every check reports besides its status, shared by the contract, pipeline and
tool checks: the notes (what is not translated or modelled loosely), the assumptions,
the opaque predicates that keep a check from passing, and the ``unknown`` results (a
solver that gives up; a check that hits a bug, ``guarded``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from hoare.verifier.report.model import CheckResult
from hoare.verifier.solve.solver import QueryResult
from hoare.verifier.translate.predicates import (
    Translation,
)
from hoare.verifier.translate.types import TypedValue

if TYPE_CHECKING:
    from hoare.verifier.checks.model import ContractModel

__all__ = ["assumptions_of", "guarded", "notes_of", "opaque_of", "opaque_text", "unknown_result"]


def opaque_of(translations: Sequence[Translation]) -> list[Translation]:
    """The opaque ones: left out of every query, so a witness cannot vouch for them."""
    return [t for t in translations if t.opaque is not None]


def opaque_text(translations: Sequence[Translation]) -> str:
    """Why a check resting on these opaque predicates is ``unknown``."""
    return "; ".join(f"{t.name} is opaque ({t.opaque})" for t in translations)


def notes_of(cm: ContractModel, *typed: TypedValue,
             translations: Sequence[Translation] = ()) -> list[str]:
    """What the check's queries leave out or model loosely, and the registry entries
    they rest on (each once, in order)."""
    notes: list[str] = []
    for tv in typed:
        notes.extend(f"not translated: {d}" for d in tv.dropped)
    for t in translations:
        notes.extend(f"{t.name}: modelled loosely: {h}" for h in t.havoc)
        notes.extend(t.rests_on())
    return list(dict.fromkeys(notes))


def assumptions_of(*typed: TypedValue, translations: Sequence[Translation] = ()) -> list[str]:
    """What the types and translations assume of every value (each once, in order)."""
    out: list[str] = []
    for tv in typed:
        out.extend(tv.assumptions)
    for t in translations:
        out.extend(t.assumptions)
    return list(dict.fromkeys(out))


def unknown_result(kind: str, query: QueryResult, notes: list[str],
                   predicate: str | None = None) -> CheckResult:
    """``unknown``: z3 could not decide ``query`` (its reason is the message)."""
    return CheckResult(kind, "unknown", query.reason, notes=notes, predicate=predicate)


_Checked = TypeVar("_Checked", CheckResult, CheckResult | None)


def guarded(kind: str, run: Callable[[], _Checked], predicate: str | None = None
            ) -> _Checked | CheckResult:
    """A check that hits a bug or an unexpected z3 error is ``unknown``, never fatal."""
    try:
        return run()
    except Exception as error:  # a verifier bug must not stop the other checks
        return CheckResult(kind, "unknown", f"internal error: {type(error).__name__}: {error}",
                           predicate=predicate)
