"""Falsification of negative verdicts: before a ``fail``, a ``warn`` or a composition
``pass`` (a claim that no value exists) is reported, a concrete search looks for a value
refuting it; one found makes the check ``unknown`` and is logged as a translator bug.
Seeded with z3's models of nearby satisfiable queries."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from hoare.declaration.description import PredicateSource
from hoare.verifier.checks.model import (
    ContractModel,
    Replay,
    model_value,
    predicate_assertions,
    type_assertions,
)
from hoare.verifier.checks.samples import (
    passes,
    samples_of,
)
from hoare.verifier.report.model import CheckResult
from hoare.verifier.search.candidates import constants_of
from hoare.verifier.search.falsify import (
    Counterexample,
    SearchBudget,
    find_failing,
    find_passing,
    log_refutation,
    search,
    valid_values,
)
from hoare.verifier.search.witness import WitnessError, call_predicate, validate
from hoare.verifier.solve.solver import SolverOptions, solve
from hoare.verifier.translate.predicates import (
    Translation,
)
from hoare.verifier.translate.types import TypedValue

__all__ = [
    "COMPOSITION_BUDGET",
    "Falsifier",
    "falsify",
    "falsify_composition",
    "translated_sources",
]


def translated_sources(translations: Sequence[Translation]) -> list[PredicateSource]:
    """The predicates a z3 refutation is about: the translated ones."""
    return [t.source for t in translations if t.opaque is None]


class Falsifier:
    """Looks for a concrete value refuting a ``fail``/``warn`` before it is reported
    (``falsify``): real pydantic validation, real predicates, the instance the
    witness replay uses; seeded with z3's models of nearby satisfiable queries."""

    def __init__(self, cm: ContractModel, options: SolverOptions,
                 near_models: bool = True) -> None:
        self.cm = cm
        self.near_models = near_models
        self.options = replace(options, timeout_ms=min(options.timeout_ms, 300),
                               rlimit=min(options.rlimit, 1_000_000))
        self.instance, _ = Replay(cm).instance(None)
        self.constants = constants_of([t.source for t in cm.translations()], self.instance)

    def near(self, typed: TypedValue, translations: Sequence[Translation]) -> list[Any]:
        """Values of ``typed`` from z3 models of its type with each translated
        predicate alone (cheap, often close to a counterexample)."""
        seeds: list[Any] = []
        if not self.near_models:
            return seeds
        # (the type alone: the contract's samples already hold many valid values)
        groups = [[t] for t in translations if t.opaque is None][:4]
        for group in groups:  # (no readable-string preference: a seed is never shown)
            query = solve(type_assertions(typed) + predicate_assertions(group), self.options,
                          cache=self.cm.cache)
            if query.status == "sat" and query.model is not None:
                try:
                    seeds.append(model_value(typed, query.model))
                except WitnessError:
                    continue
        return seeds

    def used_values(self, with_pre: bool) -> list[Any]:
        """Validated values the post-conditions may receive as the input used."""
        cm = self.cm
        pre = cm.pre if with_pre and cm.act_output is None else []
        # The contract's own samples first (made already); z3 and a search only when
        # too few of them pass the pre-conditions.
        found = list(itertools.islice(
            ((j, v) for j, v in itertools.islice(samples_of(cm, "used"), 64)
             if passes(translated_sources(pre), self.instance, v)), 8))
        if len(found) < 8:
            found += valid_values(cm.used.spec, translated_sources(pre), self.instance,
                                  seeds=self.near(cm.used, pre),
                                  constants=self.constants)[:8 - len(found)]
        for _json, value in found:
            self.constants.add(value)
        return [value for _json, value in found]

    def passing(self, translations: Sequence[Translation], phase: str,
                with_pre: bool = True) -> Counterexample | None:
        """A valid value passing every translated predicate of ``translations``."""
        cm = self.cm
        if phase == "pre":
            return find_passing(cm.input.spec, translated_sources(translations), self.instance,
                                seeds=self.near(cm.input, translations),
                                constants=self.constants)
        used = self.used_values(with_pre)
        return find_passing(cm.output.spec, translated_sources(translations), self.instance,
                            used=used, seeds=self.near(cm.output, translations),
                            constants=self.constants, from_json=True)

    def failing(self, t: Translation) -> Counterexample | None:
        """A valid value on which ``t`` fails."""
        cm = self.cm
        if t.source.phase == "pre":
            return find_failing(cm.input.spec, t.source, self.instance,
                                seeds=self.near(cm.input, []), constants=self.constants)
        return find_failing(cm.output.spec, t.source, self.instance,
                            used=self.used_values(False), seeds=self.near(cm.output, []),
                            constants=self.constants, from_json=True)


def falsify(cm: ContractModel, result: CheckResult, options: SolverOptions,
            search: Callable[[Falsifier], Counterexample | None],
            near_models: bool = True) -> CheckResult:
    """``result`` (a negative verdict), or ``unknown`` when a concrete value refutes it
    (then the translator has a bug: it is logged on ``hoare.verifier``)."""
    try:
        found = search(Falsifier(cm, options, near_models))
    except Exception:  # a falsifier bug must not hide the verdict z3 proved
        logging.getLogger("hoare.verifier").exception("falsifier error on %s", cm.name)
        return result
    if found is None:
        return result
    note = log_refutation(f"{cm.name} {result.kind}" + (
        f" [{result.predicate}]" if result.predicate else ""), result.status, found,
        cm.used_key)
    used = found.used.model_dump(mode="json") if isinstance(found.used, BaseModel) \
        else found.used
    return CheckResult(result.kind, "unknown", f"the translation claimed: {result.message}; "
                       f"but a concrete value refutes it", counterexample=found.value,
                       witness=used, predicate=result.predicate,
                       notes=[*result.notes, note], assumptions=result.assumptions)


# A composition pass is the common case, not a rare negative one: a smaller search.
COMPOSITION_BUDGET = SearchBudget(candidates=500, seconds=0.05)


def falsify_composition(a: ContractModel, b: ContractModel, result: CheckResult,
                        options: SolverOptions) -> CheckResult:
    """A composition ``pass`` claims that no output A accepts is rejected by B (z3 found
    none): look for one concretely (A's translated checks pass, then B's input type
    or a translated pre-condition of B rejects it after the runtime conversion)."""

    def search_a(f: Falsifier) -> Counterexample | None:
        b_instance, _ = Replay(b).instance(None)
        a_post, b_pre = translated_sources(a.post), translated_sources(b.pre)

        def rejected_by_b(output: object, used: object) -> bool:
            if not all(call_predicate(p, f.instance, output, used).passed for p in a_post):
                return False
            ok, value, _text = validate(b.desc.input, output)
            return not ok or not all(call_predicate(p, b_instance, value).passed
                                     for p in b_pre)

        found = constants_of(b_pre, b_instance)
        for value in (*found.numbers, *found.strings):
            f.constants.add(value)
        return search(a.output.spec, rejected_by_b, f.used_values(True),
                      f.near(a.output, a.post), f.constants, COMPOSITION_BUDGET, from_json=True)

    return falsify(a, result, options, search_a, near_models=False)
