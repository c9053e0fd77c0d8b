"""Concrete counterexamples to negative verdicts, found by sampling.

``fail``, ``warn`` and ``unsatisfiable`` claim that *no* value exists; a bug in
the z3 translation makes such a claim false. Before one is reported, this
module looks for a value refuting it: candidates built from the typed domain
(``candidates.Sampler``: types, bounds, ``Literal``/enum members, simple patterns,
defaults, the field's ``examples``, every numeric constant of the constraints and
predicates ±1, IEEE edge values, non-ASCII and astral strings, strings built from the
predicates' string constants) and from seeds the caller passes (z3's models of
nearby queries), each validated by the real pydantic model and checked by the
real predicates, exactly as ``witness.call_predicate`` replays a witness. Here: the
budget (``SearchBudget``, ``Clock``), validation as the kernel validates, and the
searches.

Deterministic (a fixed seed, a candidate budget; the time budget only guards
against slow user code) and only run on the rare negative path. Hypothesis is
a test dependency: this is a small sampler of its own.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hoare.declaration.description import PredicateSource
from hoare.declaration.models import TypeSpec
from hoare.forking import hold_across_fork
from hoare.verifier.search.candidates import Constants, Sampler
from hoare.verifier.search.witness import call_predicate

__all__ = [
    "PREFLIGHT_BUDGET",
    "VERIFY_BUDGET",
    "Clock",
    "Confirmed",
    "Counterexample",
    "SearchBudget",
    "find_failing",
    "find_passing",
    "log_refutation",
    "probe",
    "search",
    "valid_candidates",
    "valid_values",
    "validate_candidate",
]

LOG = logging.getLogger("hoare.verifier")


@dataclass(frozen=True)
class SearchBudget:
    """At most ``candidates`` values are tried, within ``seconds`` (a guard against slow
    predicates; the candidate count alone decides what a fast contract sees). Not the
    engines' ``Budget``, which caps what a call spends."""

    candidates: int
    seconds: float


PREFLIGHT_BUDGET = SearchBudget(candidates=200, seconds=0.005)
VERIFY_BUDGET = SearchBudget(candidates=600, seconds=0.25)


@dataclass(frozen=True)
class Counterexample:
    """A value that refutes a negative verdict (``used``: the input the predicates
    received alongside, for post-conditions)."""

    value: Any
    used: Any = None

    def describe(self, used_key: str = "input") -> str:
        if self.used is None:
            return f"{self.value!r:.200}"
        return f"output {self.value!r:.160} for {used_key} {self.used!r:.120}"


def _passes_all(preds: Sequence[PredicateSource], instance: object, value: object,
                used: object) -> bool:
    return all(call_predicate(p, instance, value, used).passed for p in preds)


class Clock:
    """Counts down a ``SearchBudget``: its candidates, and its seconds (read every 16th
    tick)."""

    def __init__(self, budget: SearchBudget) -> None:
        self.left = budget.candidates
        self.deadline = time.perf_counter() + budget.seconds

    def tick(self) -> bool:
        self.left -= 1
        if self.left < 0:
            return False
        return self.left % 16 != 0 or time.perf_counter() < self.deadline  # a clock read in 16


_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=True)  # json.dumps, made once


def validate_candidate(spec: TypeSpec, value: Any, from_json: bool) -> tuple[bool, Any]:
    """Validate as the kernel does: an engine's answer arrives as JSON text
    (``validate_json``), an input or act's output as a Python value."""
    if not from_json:
        try:
            return True, spec.validate(value, shown=False)
        except Exception:  # ValidationError, or a validator raising something else
            return False, None
    try:
        text = _JSON.encode(value)
    except (TypeError, ValueError):
        return False, None
    return _validate_text(spec, text)


def _validate_text(spec: TypeSpec, text: str) -> tuple[bool, Any]:
    try:
        return True, spec.validate_json(text)
    except Exception:
        return False, None


def probe(spec: TypeSpec, from_json: bool) -> Callable[[Any], bool]:
    return lambda value: validate_candidate(spec, value, from_json)[0]


def valid_candidates(spec: TypeSpec, values: Iterable[Any], clock: Clock, keep: int,
           from_json: bool = False) -> Iterator[tuple[Any, Any]]:
    """(json value, validated value) of the candidates pydantic accepts."""
    kept = 0
    seen: set[str] = set()
    for value in values:
        if from_json:  # the JSON text is both the key and what pydantic parses
            try:
                key = _JSON.encode(value)
            except (TypeError, ValueError):
                continue
        else:
            key = repr(value)
        if key in seen:
            continue
        seen.add(key)
        if not clock.tick():
            return
        if from_json:
            ok, validated = _validate_text(spec, key)
        else:
            ok, validated = validate_candidate(spec, value, from_json)
        if ok:
            yield value, validated
            kept += 1
            if kept >= keep:
                return


def find_passing(spec: TypeSpec, preds: Sequence[PredicateSource], instance: object, *,
                 used: Sequence[Any] = (None,), seeds: Sequence[Any] = (),
                 constants: Constants | None = None, budget: SearchBudget = VERIFY_BUDGET,
                 from_json: bool = False) -> Counterexample | None:
    """A valid value of ``spec`` passing every predicate in ``preds``, each called as the
    kernel calls it with one of the ``used`` values (validated inputs) as context.
    ``from_json``: validate as an engine's answer is (an output)."""
    return search(spec, lambda v, u: _passes_all(preds, instance, v, u), used, seeds,
                 constants, budget, from_json)


def find_failing(spec: TypeSpec, pred: PredicateSource, instance: object, *,
                 used: Sequence[Any] = (None,), seeds: Sequence[Any] = (),
                 constants: Constants | None = None, budget: SearchBudget = VERIFY_BUDGET,
                 from_json: bool = False) -> Counterexample | None:
    """A valid value of ``spec`` on which ``pred`` fails (raises or returns falsy)."""
    return search(spec, lambda v, u: not call_predicate(pred, instance, v, u).passed, used,
                 seeds, constants, budget, from_json)


def search(spec: TypeSpec, accept: Callable[[Any, Any], bool], used: Sequence[Any],
          seeds: Sequence[Any], constants: Constants | None, budget: SearchBudget,
          from_json: bool = False) -> Counterexample | None:
    """The first candidate of ``spec`` pydantic accepts and ``accept(validated, used)``
    holds for, trying each candidate with ``used[0]`` and one other ``used`` value."""
    if not used:
        return None
    clock = Clock(budget)
    sampler = Sampler(constants)
    stream = _chain(seeds, sampler.candidates(spec, budget.candidates,
                                              probe(spec, from_json)))
    for index, (value, validated) in enumerate(valid_candidates(spec, stream, clock,
                                                      budget.candidates, from_json)):
        contexts = [used[0]] if len(used) == 1 else [used[0], used[index % len(used)]]
        for context in _unique_ids(contexts):
            if accept(validated, context):
                return Counterexample(value, context)
        if clock.left <= 0:
            return None
    return None


def _chain(seeds: Sequence[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from seeds
    yield from rest


def _unique_ids(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not any(value is seen for seen in out):
            out.append(value)
    return out


def valid_values(spec: TypeSpec, preds: Sequence[PredicateSource], instance: object, *,
                 seeds: Sequence[Any] = (), constants: Constants | None = None,
                 keep: int = 8, budget: SearchBudget = VERIFY_BUDGET) -> list[tuple[Any, Any]]:
    """Up to ``keep`` (json, validated) values of ``spec`` passing ``preds`` (the inputs
    a post-condition may receive)."""
    clock = Clock(SearchBudget(max(budget.candidates // 4, 1), budget.seconds / 4))
    sampler = Sampler(constants)
    stream = _chain(seeds, sampler.candidates(spec, clock.left, probe(spec, False)))
    out = []
    for value, validated in valid_candidates(spec, stream, clock, clock.left):
        if _passes_all(preds, instance, validated, None):
            out.append((value, validated))
            if len(out) >= keep:
                break
    return out


class Confirmed:
    """Negative verdicts already put through the falsifier, by identity (a cached
    verdict object is checked once), with the verdict to report; bounded, thread-safe."""

    def __init__(self, size: int = 256) -> None:
        self._seen: OrderedDict[int, tuple[object, object]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)

    def get(self, verdict: object) -> object | None:
        with self._lock:
            entry = self._seen.get(id(verdict))
        return entry[1] if entry is not None and entry[0] is verdict else None

    def put(self, verdict: object, final: object) -> None:
        with self._lock:
            self._seen[id(verdict)] = (verdict, final)  # holding it keeps its id unique
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)


def log_refutation(where: str, verdict: str, counterexample: Counterexample,
                   used_key: str = "input") -> str:
    """Log a refuted negative verdict as a translator bug; return the note to report."""
    shown = counterexample.describe(used_key)
    LOG.warning("translator bug: %s: the %s verdict is refuted by %s", where, verdict, shown)
    return (f"the z3 translation was refuted: {shown} is a concrete counterexample to the "
            f"{verdict} verdict (a verifier bug, please report it)")
