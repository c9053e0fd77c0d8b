"""Sampled witnesses: most satisfiability and "can it fail?" checks are settled by
concrete values before z3 is asked. Candidate values of each role (input, output, the
input used) are generated and validated once per contract (``Samples``) and searched
for one passing (or failing) the real predicates, climbing one field at a time."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from hoare.declaration.description import PredicateSource
from hoare.verifier.checks.model import (
    ContractModel,
    Replay,
)
from hoare.verifier.search.candidates import Constants, Sampler, constants_of, replaced
from hoare.verifier.search.falsify import (
    Clock,
    SearchBudget,
    probe,
    valid_candidates,
    validate_candidate,
)
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.predicates import (
    StaticSelf,
    Translation,
)

__all__ = [
    "CLIMB_BUDGET",
    "SAMPLING_BUDGET",
    "Samples",
    "passes",
    "sampled_example",
    "sampled_failing",
    "sampled_passing",
    "samples_of",
]


# A witness is usually among the first candidates (each costs ~20 µs; a z3 query about
# 2 ms): the search settles most satisfiability and "can it fail?" checks, z3 the rest.
# The candidate count decides what it sees, so reports reproduce; the time limit only
# guards against a pathologically slow predicate.
SAMPLING_BUDGET = SearchBudget(candidates=400, seconds=1.0)
# Values tried one field away from a sample, when the samples alone settle nothing.
CLIMB_BUDGET = SearchBudget(candidates=400, seconds=1.0)


def sampled_passing(cm: ContractModel, phase: str) -> Any:
    """A concrete witness of ``pre_satisfiable`` (an input passing every pre-condition)
    or ``post_satisfiable`` (``{used: ..., output: ...}``), validated by pydantic and
    passing every predicate for real; None when a small search finds none (z3 then)."""
    instance = _sampling_instance(cm)
    if instance is _NO_INSTANCE:
        return None
    pre = [t.source for t in cm.pre]
    if phase == "pre" or (cm.act_output is None and "pre" not in cm.witnesses):
        found = _passing_sample(cm, "input", pre, instance, [(None, None)])
        cm.witnesses["pre"] = None if found is None else found[:2]
        if phase == "pre":
            return None if found is None else found[0]
    free = cm.act_output is not None  # act's output: the pre-conditions do not apply
    inputs = samples_of(cm, "used")
    known = cm.witnesses.get("pre")
    used = [known] if known is not None and not free else []
    # a few more inputs, among the first samples only (a rare one is not worth a scan)
    used += itertools.islice(
        (u for u in itertools.islice(inputs, _FIRST_SAMPLES)
         if inputs.readable(u[0]) and (free or passes(pre, instance, u[1]))
         and (known is None or u[0] != known[0])), 4 - len(used))
    if not used:
        return None
    found = _passing_sample(cm, "output", [t.source for t in cm.post], instance, used)
    if found is None:
        return None
    value, _validated, used_json = found
    return {cm.used_key: used_json, "output": value}


def _passing_sample(cm: ContractModel, role: str, preds: list[PredicateSource],
                    instance: object, used: list[tuple[Any, Any]]
                    ) -> tuple[Any, Any, Any] | None:
    """(json, validated, used json) of a readable sample of ``role`` passing every
    predicate of ``preds``: among the first samples, then by climbing from the one
    that passes the most of them, one field at a time, then among the other samples
    (and climbing again, from a better start if they hold one)."""
    samples = samples_of(cm, role)
    best: tuple[int, Any, tuple[Any, Any]] | None = None
    for start, stop in ((0, _FIRST_SAMPLES), (_FIRST_SAMPLES, None)):
        climbed_from = best
        for index, (value, validated) in enumerate(itertools.islice(samples, start, stop),
                                                   start):
            if not samples.readable(value):
                continue
            for context in _contexts(used, index):
                score = _score(preds, instance, validated, context[1])
                if score == len(preds):
                    return value, validated, context[0]
                if best is None or score > best[0]:
                    best = (score, value, context)
        if best is not None and best is not climbed_from:
            found = _climb(cm, role, preds, instance, best)
            if found is not None:
                return found
    return None


_FIRST_SAMPLES = 64  # scanned before the first climb


def _climb(cm: ContractModel, role: str, preds: list[PredicateSource], instance: object,
           start: tuple[int, Any, tuple[Any, Any]]) -> tuple[Any, Any, Any] | None:
    """From ``start`` (score, json, context), change one field at a time, keeping a
    change that passes more predicates, until all pass (the result) or none helps."""
    score, base, context = start
    if not isinstance(base, dict):
        return None
    clock = Clock(CLIMB_BUDGET)
    for _sweep in range(2):  # a field settled early may need to move again
        before = score
        for key, candidates in _columns(cm, role):
            for candidate in candidates:
                row = replaced(base, key, candidate)
                if row == base or not _readable(row):
                    continue
                if not clock.tick():
                    return None
                ok, validated = _validate_role(cm, role, row)
                if not ok:
                    continue
                new = _score(preds, instance, validated, context[1])
                if new == len(preds):
                    return row, validated, context[0]
                if new > score:
                    score, base = new, row
                    break
        if score == before:
            return None  # a sweep that moved nothing: another would see the same
    return None


def _score(preds: Sequence[PredicateSource], instance: object, value: object,
           used: object) -> int:
    return sum(call_predicate(p, instance, value, used).passed for p in preds)


def _columns(cm: ContractModel, role: str) -> list[tuple[str, list[Any]]]:
    """Each field's candidate JSON values (the sampler's, with the contract's
    constants), by the key a JSON object carries it under."""
    if role not in cm.columns:
        spec = _spec(cm, role)
        drawn = samples_of(cm, role).sampler.columns.get(spec.model)  # pydantic-accepted
        sampler = Sampler(cm.sample_constants)
        cm.columns[role] = [] if spec.wrapped else drawn if drawn is not None else [
            (info.alias or name, sampler.field_values(info))
            for name, info in spec.model.model_fields.items()]
    return cm.columns[role]


def _validate_role(cm: ContractModel, role: str, value: Any) -> tuple[bool, Any]:
    return validate_candidate(_spec(cm, role), value, role == "output")


def _spec(cm: ContractModel, role: str) -> Any:
    return {"input": cm.input.spec, "output": cm.output.spec, "used": cm.used.spec}[role]


class Samples:
    """Candidate values of one type, generated and validated once per contract and
    replayed to every check that searches it (the same values, in the same order, as a
    fresh search would see), extended lazily: a search that succeeds early stops early."""

    def __init__(self, spec: Any, from_json: bool, constants: Constants) -> None:
        budget = SAMPLING_BUDGET.candidates
        self.sampler = Sampler(constants)
        self._source = valid_candidates(spec, self.sampler.candidates(
                                  spec, budget, probe(spec, from_json)),
                              Clock(SAMPLING_BUDGET), budget, from_json)
        self._seen: list[tuple[Any, Any]] = []
        self._readable: dict[int, bool] = {}  # by id: the values live in ``_seen``

    def readable(self, value: Any) -> bool:
        """``_readable(value)`` for one of the samples, worked out once."""
        found = self._readable.get(id(value))
        if found is None:
            found = self._readable[id(value)] = _readable(value)
        return found

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        index = 0
        while True:
            if index == len(self._seen):
                item = next(self._source, None)
                if item is None:
                    return
                self._seen.append(item)
            yield self._seen[index]
            index += 1


def samples_of(cm: ContractModel, role: str) -> Samples:
    if role == "used" and cm.act_output is None:
        role = "input"  # the same type, validated the same way: the same samples
    if role not in cm.samples:
        spec = _spec(cm, role)
        if cm.sample_constants is None:  # the literals every predicate compares with
            instance = _sampling_instance(cm)
            cm.sample_constants = constants_of(
                [t.source for t in cm.translations()],
                *(() if instance is _NO_INSTANCE else (instance,)))
        cm.samples[role] = Samples(spec, role == "output", cm.sample_constants)
    return cm.samples[role]


_NO_INSTANCE = object()


def _sampling_instance(cm: ContractModel) -> object:
    """The ``self`` predicates see, or ``_NO_INSTANCE`` when an attribute is free: a
    missing ``self.<attr>`` would make a predicate fail for a reason z3 does not see."""
    if isinstance(cm.self_model, StaticSelf) and cm.self_model.free:
        return _NO_INSTANCE
    return Replay(cm).instance(None)[0]


def passes(preds: Sequence[PredicateSource], instance: object, value: object,
            used: object = None) -> bool:
    return all(call_predicate(p, instance, value, used).passed for p in preds)


def _contexts(used: list[tuple[Any, Any]], index: int) -> list[tuple[Any, Any]]:
    """The inputs an output candidate is tried with: the first, and one other in turn."""
    if len(used) == 1:
        return used
    other = used[index % len(used)]
    return [used[0]] if other is used[0] else [used[0], other]


_STRICT_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _readable(value: Any) -> bool:
    """Printable ASCII once in JSON: a witness a reader can take in at a glance
    (z3 is asked for such witnesses too, ``nice_strings``)."""
    try:
        text = _STRICT_JSON.encode(value)
    except (TypeError, ValueError):
        return False
    return len(text) <= 400 and text.isascii() and text.isprintable()


def sampled_failing(cm: ContractModel, t: Translation) -> Any:
    """A concrete, validated value on which ``t`` really fails (shown as the z3 path
    shows its counterexample), or None: among the first samples, then among the values
    that differ from the first sample in one field (a predicate mostly reads one or two
    fields, and a random mix rarely keeps the others valid while hitting the value
    that fails it), then among the other samples."""
    instance = _sampling_instance(cm)
    if instance is _NO_INSTANCE:
        return None
    role = "input" if t.source.phase == "pre" else "output"
    used = _inputs_for(cm, t)
    if not used:
        return None
    samples = samples_of(cm, role)
    first: Any = None
    for index, (value, validated) in enumerate(itertools.islice(samples, _FIRST_SAMPLES)):
        first = value if first is None else first
        for used_json, context in _contexts(used, index):
            if not call_predicate(t.source, instance, validated, context).passed:
                return _shown(cm, t, value, used_json)
    if isinstance(first, dict):
        clock = Clock(CLIMB_BUDGET)
        for key, candidates in _columns(cm, role):
            for candidate in candidates:
                row = replaced(first, key, candidate)
                if not clock.tick():
                    break
                ok, validated = _validate_role(cm, role, row)
                if ok:
                    for used_json, context in used:
                        if not call_predicate(t.source, instance, validated,
                                              context).passed:
                            return _shown(cm, t, row, used_json)
    for index, (value, validated) in enumerate(itertools.islice(samples, _FIRST_SAMPLES,
                                                                None), _FIRST_SAMPLES):
        for used_json, context in _contexts(used, index):
            if not call_predicate(t.source, instance, validated, context).passed:
                return _shown(cm, t, value, used_json)
    return None


def sampled_example(cm: ContractModel, t: Translation) -> Any:
    """A concrete, validated value passing ``t`` (shown as ``_known_example`` shows
    one), or None: when the phase's satisfiability check found no witness."""
    instance = _sampling_instance(cm)
    if instance is _NO_INSTANCE:
        return None
    used = _inputs_for(cm, t)
    if not used:
        return None
    role = "input" if t.source.phase == "pre" else "output"
    found = _passing_sample(cm, role, [t.source], instance, used)
    return None if found is None else _shown(cm, t, found[0], found[2])


def _inputs_for(cm: ContractModel, t: Translation) -> list[tuple[Any, Any]]:
    """The (json, validated) inputs ``t`` is tried with: none needed (``(None, None)``)
    unless it is a post-condition reading the input; then four samples of it."""
    if not t.source.takes_input:
        return [(None, None)]
    return list(itertools.islice(samples_of(cm, "used"), 4))


def _shown(cm: ContractModel, t: Translation, value: Any, used_json: Any) -> Any:
    if t.source.phase == "pre" or not t.source.takes_input:
        return value
    return {cm.used_key: used_json, "output": value}
