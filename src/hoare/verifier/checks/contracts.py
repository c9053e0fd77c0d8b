"""The checks of ``hoare verify``: per contract and per pipeline.

* ``pre_satisfiable``: some well-typed input passes every pre-condition.
* ``post_satisfiable``: for some input passing the pre-conditions (or, with an
  ``act``, some output of ``act``, which is opaque) some well-typed output passes
  every post-condition.
* ``predicate_vacuous`` (one per predicate): can it pass and can it fail, given
  the types? Never passes: ``fail``; never fails: ``warn``.
* ``composition`` (one per pair of adjacent pipeline stages): every output of A
  its type and post-conditions allow is accepted by B's input type and
  pre-conditions; otherwise a counterexample.

Soundness: an opaque predicate is left out of a query. Leaving a conjunct out
only grows the modelled set, so a refutation (unsat) still holds; a ``pass``
resting on a witness needs the witness replayed through pydantic and every
predicate, which an opaque predicate prevents: such a check is ``unknown``. A
``pass`` resting on unsat (composition) needs every negated part exact.

A negative verdict (``fail``, ``warn``; and a composition ``pass``, which claims
that no rejected value exists) is put through ``falsify`` first: a concrete
value refuting it makes the check ``unknown`` and is logged as a translator bug.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import z3
from pydantic import BaseModel

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.kernel import Policy
from hoare.verifier.report.model import CheckResult, ContractReport
from hoare.verifier.search.falsify import (
    Budget,
    Constants,
    Counterexample,
    Sampler,
    _Clock,
    _probe,
    _replaced,
    _valid,
    _validate,
    constants_of,
    find_failing,
    find_passing,
    log_refutation,
    search,
    valid_values,
)
from hoare.verifier.search.witness import WitnessError, call_predicate, concretize, validate
from hoare.verifier.solve.context import in_fresh_context
from hoare.verifier.solve.solver import Assertion, QueryCache, QueryResult, SolverOptions, solve
from hoare.verifier.translate.predicates import (
    InstanceSelf,
    SelfModel,
    StaticSelf,
    Translation,
    translate,
)
from hoare.verifier.translate.semantics import _not
from hoare.verifier.translate.types import TypeBuilder, TypedValue
from hoare.verifier.translate.values import (
    EXACT_INTS,
    FIN,
    Z3_LOCK,
    SFloat,
    SList,
    SModel,
    SOpt,
    SStr,
    Sym,
    naming,
)

__all__ = ["ContractModel", "check_contract", "contract_model"]

@dataclass
class ContractModel:
    """A contract in z3: symbolic input/act output/output with their type
    constraints, and the predicates that run (``ignore`` ones are left out)."""

    desc: ContractDescription
    instance: object | None
    self_model: SelfModel
    input: TypedValue
    act_output: TypedValue | None
    output: TypedValue
    pre: list[Translation]
    post: list[Translation]
    ignored: list[str] = field(default_factory=list)
    # z3 answers of independent components, shared by every query on this contract
    cache: QueryCache = field(default_factory=QueryCache)
    # validated candidate values per role ("input", "output", "used"), shared by checks
    samples: dict[str, _Samples] = field(default_factory=dict)
    sample_constants: Constants | None = None
    # the sampled witness of pre_satisfiable, (json, validated) or None: post's input
    witnesses: dict[str, tuple[Any, Any] | None] = field(default_factory=dict)
    # each field's candidate values per role, for the one-field-away search
    columns: dict[str, list[tuple[str, list[Any]]]] = field(default_factory=dict)

    @property
    def used(self) -> TypedValue:
        return self.act_output or self.input

    @property
    def used_key(self) -> str:
        return "act_output" if self.act_output is not None else "input"

    @property
    def name(self) -> str:
        return self.desc.name

    def translations(self) -> list[Translation]:
        return [*self.pre, *self.post]


def _effective(desc: ContractDescription, source: PredicateSource) -> bool:
    return (source.policy or desc.config.policy) is not Policy.IGNORE


def contract_model(desc: ContractDescription, instance: object | None = None,
                   prefix: str = "c.") -> ContractModel:
    """Translate a contract once: types, then each effective predicate."""
    with Z3_LOCK, naming(prefix):
        self_model: SelfModel = InstanceSelf(instance) if instance is not None \
            else StaticSelf(desc.cls)
        typed_in = TypeBuilder("input").build(desc.input)
        typed_act = TypeBuilder("act_output").build(desc.act_output) \
            if desc.act_output is not None else None
        typed_out = TypeBuilder("output").build(desc.output)
        used = typed_act or typed_in
        ignored = [p.id for p in (*desc.pre, *desc.post) if not _effective(desc, p)]
        pre = [translate(p, [typed_in.value], self_model) for p in desc.pre
               if _effective(desc, p)]
        post = [translate(p, [typed_out.value, used.value], self_model) for p in desc.post
                if _effective(desc, p)]
    return ContractModel(desc, instance, self_model, typed_in, typed_act, typed_out, pre, post,
                         ignored)


# -- assertions ------------------------------------------------------------------------


def type_assertions(typed: TypedValue) -> list[Assertion]:
    return [Assertion(c.label, c.expr, c.kind) for c in typed.constraints]


def predicate_assertions(translations: Sequence[Translation]) -> list[Assertion]:
    out: list[Assertion] = []
    for t in translations:
        if t.opaque is not None:
            continue
        out.extend(Assertion(None, d, "def") for d in t.defs)
        out.extend(Assertion(c.label, _not(c.cond), "pred") for c in t.cases)
    return out


def _nice_strings(*values: TypedValue) -> list[z3.BoolRef]:
    """Printable ASCII strings, tried first for readable witnesses; finite floats
    that are integers of at most 2**53, which are doubles (a float is a real in z3,
    and a real that is not a double is rounded on the way to pydantic)."""
    printable = z3.Star(z3.Range(z3.StringVal(" "), z3.StringVal("~")))
    out = []
    for typed in values:
        for sym in _leaves(typed.root):
            if isinstance(sym, SStr):
                out.append(z3.InRe(sym.e, printable))
            elif isinstance(sym, SFloat):
                out.append(z3.Or(sym.tag != FIN, z3.And(
                    z3.IsInt(sym.r), sym.r <= EXACT_INTS, sym.r >= -EXACT_INTS)))
    return out


def _leaves(sym: Sym) -> list[Sym]:
    if isinstance(sym, SModel):
        return [leaf for value in sym.fields.values() for leaf in _leaves(value)]
    if isinstance(sym, SOpt):
        return _leaves(sym.inner)
    if isinstance(sym, SList):
        return [leaf for slot in sym.slots for leaf in _leaves(slot)]
    return [sym]


# -- replay ----------------------------------------------------------------------------


class _Replay:
    """Replays witnesses: pydantic validation, then the real predicates."""

    def __init__(self, cm: ContractModel) -> None:
        self.cm = cm

    def instance(self, model: z3.ModelRef | None) -> tuple[object, list[str]]:
        """The instance predicates see, and the assumed attribute values."""
        if self.cm.instance is not None:
            return self.cm.instance, []
        cls = self.cm.desc.cls
        obj: object = object.__new__(cls)
        assumed = []
        static = self.cm.self_model
        assert isinstance(static, StaticSelf)
        for name, (kind, payload, _ann) in static._init.items():
            if kind in ("const", "default"):
                obj.__dict__[name] = payload
        for name, sym in static.free.items():
            if model is None:
                continue
            try:
                value = concretize(sym, model)
            except WitnessError:
                continue
            obj.__dict__[name] = value
            assumed.append(f"self.{name} = {value!r}")
        return obj, assumed

    def predicates(self, translations: Sequence[Translation], instance: object, value: object,
                   used: object = None) -> list[str]:
        """Failures of the translated predicates on a validated value."""
        failures = []
        for t in translations:
            if t.opaque is not None:
                continue
            run = call_predicate(t.source, instance, value, used)
            if not run.passed:
                failures.append(f"{t.label} ({t.name}) {run.detail}")
        return failures


def _value(typed: TypedValue, model: z3.ModelRef) -> Any:
    root = concretize(typed.root, model)
    return root.get("value") if typed.spec.wrapped else root


def _opaque(translations: Sequence[Translation]) -> list[Translation]:
    return [t for t in translations if t.opaque is not None]


def _opaque_text(translations: Sequence[Translation]) -> str:
    return "; ".join(f"{t.name} is opaque ({t.opaque})" for t in translations)


def _notes(cm: ContractModel, *typed: TypedValue, translations: Sequence[Translation] = ()
           ) -> list[str]:
    notes: list[str] = []
    for tv in typed:
        notes.extend(f"not translated: {d}" for d in tv.dropped)
    for t in translations:
        notes.extend(f"{t.name}: modelled loosely: {h}" for h in t.havoc)
        notes.extend(t.rests_on())
    return list(dict.fromkeys(notes))


def _assumptions(*typed: TypedValue, translations: Sequence[Translation] = ()) -> list[str]:
    out: list[str] = []
    for tv in typed:
        out.extend(tv.assumptions)
    for t in translations:
        out.extend(t.assumptions)
    return list(dict.fromkeys(out))


def _unknown(kind: str, query: QueryResult, notes: list[str], predicate: str | None = None
             ) -> CheckResult:
    return CheckResult(kind, "unknown", query.reason, notes=notes, predicate=predicate)


# -- falsification of negative verdicts ----------------------------------------------------


def _sources(translations: Sequence[Translation]) -> list[PredicateSource]:
    """The predicates a z3 refutation is about: the translated ones."""
    return [t.source for t in translations if t.opaque is None]


class _Falsifier:
    """Looks for a concrete value refuting a ``fail``/``warn`` before it is reported
    (``falsify``): real pydantic validation, real predicates, the instance the
    witness replay uses; seeded with z3's models of nearby satisfiable queries."""

    def __init__(self, cm: ContractModel, options: SolverOptions,
                 near_models: bool = True) -> None:
        self.cm = cm
        self.near_models = near_models
        self.options = replace(options, timeout_ms=min(options.timeout_ms, 300),
                               rlimit=min(options.rlimit, 1_000_000))
        self.instance, _ = _Replay(cm).instance(None)
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
                    seeds.append(_value(typed, query.model))
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
            ((j, v) for j, v in itertools.islice(_samples(cm, "used"), 64)
             if _passes(_sources(pre), self.instance, v)), 8))
        if len(found) < 8:
            found += valid_values(cm.used.spec, _sources(pre), self.instance,
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
            return find_passing(cm.input.spec, _sources(translations), self.instance,
                                seeds=self.near(cm.input, translations),
                                constants=self.constants)
        used = self.used_values(with_pre)
        return find_passing(cm.output.spec, _sources(translations), self.instance, used=used,
                            seeds=self.near(cm.output, translations),
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
            search: Callable[[_Falsifier], Counterexample | None],
            near_models: bool = True) -> CheckResult:
    """``result`` (a negative verdict), or ``unknown`` when a concrete value refutes it
    (then the translator has a bug: it is logged on ``hoare.verifier``)."""
    try:
        found = search(_Falsifier(cm, options, near_models))
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


# -- checks ----------------------------------------------------------------------------


def check_pre(cm: ContractModel, options: SolverOptions) -> CheckResult:
    kind = "pre_satisfiable"
    notes = _notes(cm, cm.input, translations=cm.pre)
    assumptions = _assumptions(cm.input, translations=cm.pre)
    sampled = _sampled_passing(cm, "pre")
    if sampled is not None:
        return _satisfied(kind, cm, cm.pre, sampled, notes, assumptions)
    query = solve(type_assertions(cm.input) + predicate_assertions(cm.pre), options,
                  _nice_strings(cm.input), cm.cache)
    if query.status == "unsat":
        return falsify(cm, CheckResult(kind, "fail", f"no valid {cm.desc.input.name} passes "
                                       f"the pre-conditions: the contract can never run",
                                       constraints=query.core, notes=notes,
                                       assumptions=assumptions), options,
                       lambda f: f.passing(cm.pre, "pre"))
    if query.status == "unknown":
        return _unknown(kind, query, notes)
    assert query.model is not None
    replay = _Replay(cm)
    try:
        witness = _value(cm.input, query.model)
    except WitnessError as error:
        return CheckResult(kind, "unknown", f"no concrete witness: {error}", notes=notes)
    instance, assumed = replay.instance(query.model)
    ok, value, error_text = validate(cm.desc.input, witness)
    if not ok:
        return CheckResult(kind, "unknown", f"the witness does not validate: {error_text}",
                           witness=witness, notes=notes)
    failures = replay.predicates(cm.pre, instance, value)
    if failures:
        return CheckResult(kind, "unknown", "the witness does not replay: " +
                           "; ".join(failures), witness=witness, notes=notes)
    opaque = _opaque(cm.pre)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid input passes the translated "
                           f"pre-conditions, but {_opaque_text(opaque)}", witness=witness,
                           notes=notes, assumptions=assumptions + assumed)
    what = "pre-conditions" if cm.pre else "input type (no pre-conditions)"
    return CheckResult(kind, "pass", f"a valid input passes the {what}", witness=witness,
                       notes=notes, assumptions=assumptions + assumed)


def _satisfied(kind: str, cm: ContractModel, translations: Sequence[Translation],
               witness: Any, notes: list[str], assumptions: list[str]) -> CheckResult:
    """The verdict on a concrete witness that passed every predicate for real."""
    phase = "pre" if kind == "pre_satisfiable" else "post"
    noun = "input" if phase == "pre" else "output"
    opaque = _opaque(translations)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid {noun} passes the translated "
                           f"{phase}-conditions, but {_opaque_text(opaque)}",
                           witness=witness, notes=notes, assumptions=assumptions)
    has = cm.pre if phase == "pre" else cm.post
    what = f"{phase}-conditions" if has else f"{noun} type (no {phase}-conditions)"
    return CheckResult(kind, "pass", f"a valid {noun} passes the {what}", witness=witness,
                       notes=notes, assumptions=assumptions)


def _sampled_passing(cm: ContractModel, phase: str) -> Any:
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
    inputs = _samples(cm, "used")
    known = cm.witnesses.get("pre")
    used = [known] if known is not None and not free else []
    # a few more inputs, among the first samples only (a rare one is not worth a scan)
    used += itertools.islice(
        (u for u in itertools.islice(inputs, _FIRST_SAMPLES)
         if inputs.readable(u[0]) and (free or _passes(pre, instance, u[1]))
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
    samples = _samples(cm, role)
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
    clock = _Clock(CLIMB_BUDGET)
    for _sweep in range(2):  # a field settled early may need to move again
        before = score
        for key, candidates in _columns(cm, role):
            for candidate in candidates:
                row = _replaced(base, key, candidate)
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
        drawn = _samples(cm, role).sampler.columns.get(spec.model)  # pydantic-accepted
        sampler = Sampler(cm.sample_constants)
        cm.columns[role] = [] if spec.wrapped else drawn if drawn is not None else [
            (info.alias or name, sampler.field_values(info))
            for name, info in spec.model.model_fields.items()]
    return cm.columns[role]


def _validate_role(cm: ContractModel, role: str, value: Any) -> tuple[bool, Any]:
    return _validate(_spec(cm, role), value, role == "output")


def _spec(cm: ContractModel, role: str) -> Any:
    return {"input": cm.input.spec, "output": cm.output.spec, "used": cm.used.spec}[role]


class _Samples:
    """Candidate values of one type, generated and validated once per contract and
    replayed to every check that searches it (the same values, in the same order, as a
    fresh search would see), extended lazily: a search that succeeds early stops early."""

    def __init__(self, spec: Any, from_json: bool, constants: Constants) -> None:
        budget = SAMPLING_BUDGET.candidates
        self.sampler = Sampler(constants)
        self._source = _valid(spec, self.sampler.candidates(
                                  spec, budget, _probe(spec, from_json)),
                              _Clock(SAMPLING_BUDGET), budget, from_json)
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


def _samples(cm: ContractModel, role: str) -> _Samples:
    if role == "used" and cm.act_output is None:
        role = "input"  # the same type, validated the same way: the same samples
    if role not in cm.samples:
        spec = _spec(cm, role)
        if cm.sample_constants is None:  # the literals every predicate compares with
            instance = _sampling_instance(cm)
            cm.sample_constants = constants_of(
                [t.source for t in cm.translations()],
                *(() if instance is _NO_INSTANCE else (instance,)))
        cm.samples[role] = _Samples(spec, role == "output", cm.sample_constants)
    return cm.samples[role]


_NO_INSTANCE = object()


def _sampling_instance(cm: ContractModel) -> object:
    """The ``self`` predicates see, or ``_NO_INSTANCE`` when an attribute is free: a
    missing ``self.<attr>`` would make a predicate fail for a reason z3 does not see."""
    if isinstance(cm.self_model, StaticSelf) and cm.self_model.free:
        return _NO_INSTANCE
    return _Replay(cm).instance(None)[0]


def _passes(preds: Sequence[PredicateSource], instance: object, value: object,
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
    (z3 is asked for such witnesses too, ``_nice_strings``)."""
    try:
        text = _STRICT_JSON.encode(value)
    except (TypeError, ValueError):
        return False
    return len(text) <= 400 and text.isascii() and text.isprintable()


def check_post(cm: ContractModel, options: SolverOptions,
               pre: CheckResult | None = None) -> CheckResult:
    kind = "post_satisfiable"
    if pre is not None and pre.status == "fail" and cm.act_output is None:
        return CheckResult(kind, "fail", "no input passes the pre-conditions (see "
                           "pre_satisfiable), so no output is ever accepted",
                           constraints=pre.constraints, notes=pre.notes,
                           assumptions=pre.assumptions)
    assertions = type_assertions(cm.output) + predicate_assertions(cm.post)
    typed = [cm.output, cm.used]
    translations = list(cm.post)
    if cm.act_output is not None:
        assertions += type_assertions(cm.act_output)
    else:
        assertions += type_assertions(cm.input) + predicate_assertions(cm.pre)
        translations += cm.pre
    notes = _notes(cm, *typed, translations=translations)
    assumptions = _assumptions(*typed, translations=translations)
    sampled = _sampled_passing(cm, "post")
    if sampled is not None:
        return _satisfied(kind, cm, translations, sampled, notes, assumptions)
    query = solve(assertions, options, _nice_strings(cm.output, cm.used), cm.cache)
    if query.status == "unsat":
        source = "act's output (act is opaque)" if cm.act_output is not None else \
            "any input passing the pre-conditions"
        return falsify(cm, CheckResult(kind, "fail", f"no valid {cm.desc.output.name} "
                                       f"passes the post-conditions for {source}: "
                                       f"remediation can never succeed",
                                       constraints=query.core, notes=notes,
                                       assumptions=assumptions), options,
                       lambda f: f.passing(cm.post, "post"))
    if query.status == "unknown":
        return _unknown(kind, query, notes)
    assert query.model is not None
    replay = _Replay(cm)
    try:
        used_json = _value(cm.used, query.model)
        out_json = _value(cm.output, query.model)
    except WitnessError as error:
        return CheckResult(kind, "unknown", f"no concrete witness: {error}", notes=notes)
    witness = {cm.used_key: used_json, "output": out_json}
    instance, assumed = replay.instance(query.model)
    ok, used, error_text = validate(cm.used.spec, used_json)
    failures = [] if ok else [f"the {cm.used_key} does not validate: {error_text}"]
    if ok and cm.act_output is None:
        failures += replay.predicates(cm.pre, instance, used)
    ok_out, out, error_text = validate(cm.desc.output, out_json)
    if not ok_out:
        failures.append(f"the output does not validate: {error_text}")
    elif ok:
        failures += replay.predicates(cm.post, instance, out, used)
    if failures:
        return CheckResult(kind, "unknown", "the witness does not replay: " +
                           "; ".join(failures), witness=witness, notes=notes)
    opaque = _opaque(translations)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid output passes the translated "
                           f"post-conditions, but {_opaque_text(opaque)}", witness=witness,
                           notes=notes, assumptions=assumptions + assumed)
    what = "post-conditions" if cm.post else "output type (no post-conditions)"
    return CheckResult(kind, "pass", f"a valid output passes the {what}", witness=witness,
                       notes=notes, assumptions=assumptions + assumed)


def check_vacuity(cm: ContractModel, t: Translation, options: SolverOptions,
                  known: CheckResult | None = None) -> CheckResult:
    """``known``: a replayed ``pre_satisfiable``/``post_satisfiable`` pass, whose
    witness passes every predicate of its phase: then it shows that ``t`` can pass
    and only the "can fail" query is needed."""
    kind = "predicate_vacuous"
    is_pre = t.source.phase == "pre"
    typed = [cm.input] if is_pre else [cm.output, cm.used]
    notes = _notes(cm, *typed, translations=[t])
    assumptions = _assumptions(*typed, translations=[t])
    if t.opaque is not None:
        return CheckResult(kind, "unknown", f"opaque: {t.opaque}", predicate=t.name,
                           notes=notes)
    context = [a for tv in typed for a in type_assertions(tv)]
    defs = [Assertion(None, d, "def") for d in t.defs]
    reused = _known_example(cm, t, known)
    if reused is None:
        reused, known = _sampled_example(cm, t), None
    can_pass = QueryResult("sat") if reused is not None else \
        solve(context + defs + predicate_assertions([t]), options, _nice_strings(*typed),
              cm.cache)
    if can_pass.status == "unsat":
        return falsify(cm, CheckResult(kind, "fail", f"{t.label} can never pass for a valid "
                                       f"{'input' if is_pre else 'output'}",
                                       constraints=can_pass.core, predicate=t.name,
                                       notes=notes, assumptions=assumptions), options,
                       lambda f: f.passing([t], t.source.phase, with_pre=False))
    if reused is not None:
        sampled = _sampled_failing(cm, t)
        if sampled is not None:
            return CheckResult(kind, "pass", f"{t.label} can pass and can fail",
                               witness=reused, counterexample=sampled, predicate=t.name,
                               notes=notes,
                               assumptions=_merged(assumptions, _self_assumptions(known)))
    negated = f"not {t.label}"
    can_fail = solve(context + defs + [Assertion(negated, t.fails(), "goal")], options,
                     _nice_strings(*typed), cm.cache)
    if can_fail.status == "unsat":
        core = [label for label in can_fail.core if label != negated]
        reason = "the types imply it" if core else "it holds for every value"
        if t.may_return_none:
            reason += ("; note that a predicate returning None passes (spec §3.2): "
                       "return a bool, e.g. `... is not None`")
        return falsify(cm, CheckResult(kind, "warn", f"{t.label} can never fail: {reason} "
                                       f"(a weak guarantee)", constraints=core,
                                       predicate=t.name, notes=notes,
                                       assumptions=assumptions), options,
                       lambda f: f.failing(t))
    for query in (can_pass, can_fail):
        if query.status == "unknown":
            return _unknown(kind, query, notes, t.name)
    assert can_fail.model is not None
    replay = _Replay(cm)
    results = []
    example_assumptions: list[str] = []
    for query, should_pass in ((can_pass, True), (can_fail, False)):
        if query.model is None and reused is not None:
            results.append(reused)
            example_assumptions += _self_assumptions(known)
            continue
        assert query.model is not None
        try:
            if is_pre:
                value_json: Any = _value(cm.input, query.model)
                shown = value_json
            else:
                used_json = _value(cm.used, query.model)
                value_json = _value(cm.output, query.model)
                shown = {cm.used_key: used_json, "output": value_json} \
                    if t.source.takes_input else value_json
        except WitnessError as error:
            return CheckResult(kind, "unknown", f"no concrete witness: {error}",
                               predicate=t.name, notes=notes)
        instance, assumed = replay.instance(query.model)
        role = "witness" if should_pass else "counterexample"
        example_assumptions += [f"{role}: {a}" for a in assumed]
        ok, value, error_text = validate(cm.input.spec if is_pre else cm.output.spec,
                                         value_json)
        used = None
        if ok and not is_pre:
            ok, used, error_text = validate(cm.used.spec, used_json)
        if not ok:
            return CheckResult(kind, "unknown", f"the witness does not validate: {error_text}",
                               witness=shown, predicate=t.name, notes=notes)
        run = call_predicate(t.source, instance, value, used)
        if run.passed != should_pass:
            what = "passing" if should_pass else "failing"
            return CheckResult(kind, "unknown", f"the {what} example does not replay "
                               f"({run.detail or 'it passed'})", witness=shown,
                               predicate=t.name, notes=notes)
        results.append(shown)
    return CheckResult(kind, "pass", f"{t.label} can pass and can fail", witness=results[0],
                       counterexample=results[1], predicate=t.name, notes=notes,
                       assumptions=_merged(assumptions, example_assumptions))


def _merged(assumptions: list[str], examples: list[str]) -> list[str]:
    """``assumptions`` and the examples' own (``witness: self.x = 1``), without repeating
    one the check already states for every value."""
    return [*assumptions, *(a for a in dict.fromkeys(examples)
                            if a.split(": ", 1)[-1] not in assumptions)]


def _self_assumptions(known: CheckResult | None) -> list[str]:
    """The attribute values the reused witness assumed (a free ``self.<attr>``)."""
    return [f"witness: {a}" for a in (known.assumptions if known else ())
            if a.startswith("self.") and " = " in a]


# A witness is usually among the first candidates (each costs ~20 µs; a z3 query about
# 2 ms): the search settles most satisfiability and "can it fail?" checks, z3 the rest.
# The candidate count decides what it sees, so reports reproduce; the time limit only
# guards against a pathologically slow predicate.
SAMPLING_BUDGET = Budget(candidates=400, seconds=1.0)
# Values tried one field away from a sample, when the samples alone settle nothing.
CLIMB_BUDGET = Budget(candidates=400, seconds=1.0)


def _sampled_failing(cm: ContractModel, t: Translation) -> Any:
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
    samples = _samples(cm, role)
    first: Any = None
    for index, (value, validated) in enumerate(itertools.islice(samples, _FIRST_SAMPLES)):
        first = value if first is None else first
        for used_json, context in _contexts(used, index):
            if not call_predicate(t.source, instance, validated, context).passed:
                return _shown(cm, t, value, used_json)
    if isinstance(first, dict):
        clock = _Clock(CLIMB_BUDGET)
        for key, candidates in _columns(cm, role):
            for candidate in candidates:
                row = _replaced(first, key, candidate)
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


def _sampled_example(cm: ContractModel, t: Translation) -> Any:
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
    return list(itertools.islice(_samples(cm, "used"), 4))


def _shown(cm: ContractModel, t: Translation, value: Any, used_json: Any) -> Any:
    if t.source.phase == "pre" or not t.source.takes_input:
        return value
    return {cm.used_key: used_json, "output": value}


def _known_example(cm: ContractModel, t: Translation, known: CheckResult | None) -> Any:
    """The passing example a replayed satisfiability witness gives for ``t``."""
    if known is None or known.status != "pass" or known.witness is None:
        return None
    if t.source.phase == "pre":
        return known.witness
    witness = known.witness
    if t.source.takes_input:
        return {cm.used_key: witness[cm.used_key], "output": witness["output"]}
    return witness["output"]


def check_total(cm: ContractModel, options: SolverOptions) -> CheckResult | None:
    """``post_total``: every input passing the pre-conditions (with an ``act``: every
    value of act's output type) admits an output passing the post-conditions.

    ``Φ(u) = ∃ output. type(output) ∧ post(output, u)`` is computed once by
    quantifier elimination (linear arithmetic only); then z3 looks for an input
    with ``pre(u) ∧ ¬Φ(u)``. A counterexample is confirmed on the concrete input
    (no output exists for it) before it is reported, as a ``warn``: the run-time
    pre-flight stops such calls at no cost, but the pre-conditions are too weak.
    None when the check does not apply or cannot be decided.
    """
    from hoare.verifier.search.concrete import Extractor
    from hoare.verifier.solve.qe import eliminate
    from hoare.verifier.solve.solver import components
    from hoare.verifier.solve.z3util import constant_names

    translated = [t for t in cm.post if t.opaque is None]
    if not any(t.reads_input for t in translated):
        return None  # post_satisfiable already decides it
    kind = "post_total"
    outputs = [a for a in type_assertions(cm.output) if a.kind != "bound"]
    posts = outputs + predicate_assertions(cm.post)
    with Z3_LOCK:
        inputs = set(Extractor(cm.used.value).consts)
        memo = cm.cache.constants  # shared with every query on this contract
        dynamic = [a for group in components(posts, cm.cache) for a in group
                   if any(constant_names(x.expr, memo) & inputs for x in group)]
        if not dynamic:
            return None
        keep = set().union(*(constant_names(a.expr, memo) for a in dynamic)) & inputs
        phi = eliminate(z3.And(*[a.expr for a in dynamic]), keep, options.timeout_ms)
    if phi is None:
        return None
    domain = type_assertions(cm.used)
    translations = list(cm.post)
    if cm.act_output is None:
        domain += predicate_assertions(cm.pre)
        translations += cm.pre
    notes = _notes(cm, cm.output, cm.used, translations=translations)
    query = solve([*domain, Assertion("no output exists", z3.Not(phi), "goal")], options,
                  _nice_strings(cm.used), cm.cache)
    exact = cm.output.exact and len(translated) == len(cm.post) and \
        not any(t.havoc for t in cm.post)
    if query.status == "unsat":
        if not exact:
            return None
        source = "value of act's output type" if cm.act_output is not None else \
            "input passing the pre-conditions"
        return CheckResult(kind, "pass", f"every {source} admits an output passing the "
                           f"post-conditions", notes=notes)
    if query.status != "sat" or query.model is None:
        return None
    try:
        used_json = _value(cm.used, query.model)
    except WitnessError:
        return None
    replay = _Replay(cm)
    instance, _ = replay.instance(query.model)
    ok, used, _text = validate(cm.used.spec, used_json)
    if not ok or (cm.act_output is None and replay.predicates(cm.pre, instance, used)) or \
            _opaque(cm.pre if cm.act_output is None else []):
        return None
    from hoare.verifier.search.concrete import bind

    try:
        with Z3_LOCK:
            equalities = [Assertion(None, e) for e in bind(cm.used.value, used)]
    except Exception:
        return None
    confirm = solve([*posts, *equalities], options)
    if confirm.status != "unsat":
        return None
    if cm.act_output is not None:
        message = ("for this output of act no output can pass the post-conditions: such "
                   "calls end in the pre-flight; constrain act's output type or the "
                   "post-conditions")
    else:
        message = ("for this input (it passes the pre-conditions) no output can pass the "
                   "post-conditions: such calls end in the pre-flight; strengthen the "
                   "pre-conditions")
    return falsify(cm, CheckResult(kind, "warn", message, counterexample=used_json,
                                   constraints=confirm.core, notes=notes), options,
                   lambda f: _total_output(f, translated, used))


def _total_output(falsifier: _Falsifier, translated: Sequence[Translation], used: object
                  ) -> Counterexample | None:
    """An output passing the translated post-conditions for the one input ``used``."""
    cm = falsifier.cm
    falsifier.constants.add(used)
    return find_passing(cm.output.spec, _sources(translated), falsifier.instance,
                        used=[used], seeds=falsifier.near(cm.output, translated),
                        constants=falsifier.constants, from_json=True)


_Checked = TypeVar("_Checked", CheckResult, CheckResult | None)


def _guarded(kind: str, run: Callable[[], _Checked], predicate: str | None = None
             ) -> _Checked | CheckResult:
    """A check that hits a bug or an unexpected z3 error is ``unknown``, never fatal."""
    try:
        return run()
    except Exception as error:  # a verifier bug must not stop the other checks
        return CheckResult(kind, "unknown", f"internal error: {type(error).__name__}: {error}",
                           predicate=predicate)


@in_fresh_context
def check_contract(desc: ContractDescription, options: SolverOptions,
                   instance: object | None = None, name: str | None = None) -> ContractReport:
    """Every check of one contract."""
    report = ContractReport(name or desc.name)
    try:
        cm = contract_model(desc, instance)
    except Exception as error:
        report.checks.append(CheckResult("translation", "unknown", f"internal error: "
                                         f"{type(error).__name__}: {error}"))
        return report
    pre = _guarded("pre_satisfiable", lambda: check_pre(cm, options))
    report.checks.append(pre)
    report.checks.append(_guarded("post_satisfiable", lambda: check_post(cm, options, pre)))
    post = report.checks[-1]
    if post.status == "pass":
        total = _guarded("post_total", lambda: check_total(cm, options))
        if total is not None:
            report.checks.append(total)
    for t in cm.translations():
        known = pre if t.source.phase == "pre" else post
        report.checks.append(_guarded(
            "predicate_vacuous",
            functools.partial(check_vacuity, cm, t, options, known),
            t.name))
    report.checks.extend(_guarded_fields(desc))
    if cm.ignored:
        report.notes.append(f"{desc.name}: predicates with policy ignore are never evaluated "
                            f"and not checked: {', '.join(cm.ignored)}")
    return report


def _guarded_fields(desc: ContractDescription) -> list[CheckResult]:
    try:
        return check_fields(desc)
    except Exception as error:  # never lose the other checks to this one
        return [CheckResult("no_such_field", "unknown",
                            f"internal error: {type(error).__name__}: {error}")]


# A composition pass is the common case, not a rare negative one: a smaller search.
COMPOSITION_BUDGET = Budget(candidates=500, seconds=0.05)


def falsify_composition(a: ContractModel, b: ContractModel, result: CheckResult,
                        options: SolverOptions) -> CheckResult:
    """A composition ``pass`` claims that no output A accepts is rejected by B (z3 found
    none): look for one concretely (A's translated checks pass, then B's input type
    or a translated pre-condition of B rejects it after the runtime conversion)."""

    def search_a(f: _Falsifier) -> Counterexample | None:
        b_instance, _ = _Replay(b).instance(None)
        a_post, b_pre = _sources(a.post), _sources(b.pre)

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


# -- predicates reading an attribute the type does not have ------------------------------
#
# ``lambda o: o.lable == "x"`` on a model with a field ``label`` raises AttributeError on
# every call: the predicate can never pass. Read from the predicate's source, the
# attribute chains rooted at a parameter are looked up on the parameter's type. The
# verdict is ``fail`` only where the lookup is exact for every value the predicate can
# receive: an output (validated from JSON into exactly the annotated class) of a model
# with ``extra`` not "allow" and no ``__getattr__``/``__getattribute__`` of its own. An
# input (built in Python, maybe an instance of a subclass carrying the attribute), or a
# model with ``extra="allow"``, is a ``warn``. Anything else is not reported.

_OWN_LOOKUP = ("__getattr__", "__getattribute__")


def _library_class(klass: type) -> bool:
    """pydantic's own classes and ``object``: their ``__getattr__`` only serves private
    attributes and extras, which are looked up below."""
    return klass is object or (klass.__module__ or "").startswith("pydantic")


_SCALARS = (str, int, float, bool, bytes, type(None))
# a class that sets instance attributes in code of its own may have any of them
_OWN_INSTANCE_CODE = ("__getattr__", "__getattribute__", "__init__", "model_post_init",
                      "__setattr__", "__new__", "__setstate__", "__post_init__")


def _attribute_names(cls: type) -> set[str] | None:
    """Every attribute an instance of exactly ``cls`` can have, or None when that is
    not knowable: only pydantic models, dataclasses, enums and scalar types are looked
    into, and not one with code of its own that could add attributes (a ``__getattr__``,
    an ``__init__``, a ``model_post_init``...)."""
    import dataclasses
    import enum

    try:
        if not isinstance(cls, type) or cls.__module__ == "typing":
            return None
        model = issubclass(cls, BaseModel)
        if not (model or dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum) or
                cls in _SCALARS):
            return None
        names: set[str] = set()
        for klass in cls.__mro__:
            own = vars(klass)
            if not _library_class(klass) and klass not in _SCALARS and \
                    any(_user_code(own[n]) for n in _OWN_INSTANCE_CODE if n in own):
                return None
            names.update(own)
            slots = own.get("__slots__", ())
            names.update((slots,) if isinstance(slots, str) else
                         slots if isinstance(slots, tuple | list) else ())
        if issubclass(cls, BaseModel):  # ``model``, narrowed for the type checker
            names.update(cls.model_fields)
            names.update(cls.model_computed_fields)
            names.update(getattr(cls, "__private_attributes__", {}) or {})
        if dataclasses.is_dataclass(cls):
            names.update(f.name for f in dataclasses.fields(cls))
        return {n for n in names if isinstance(n, str)}
    except Exception:  # a foreign class may raise from any dunder
        return None


def _user_code(member: object) -> bool:
    """A method written by the user, not made by ``enum``, ``dataclasses`` or pydantic
    (generated code has no file: ``<string>``)."""
    function = getattr(member, "__func__", member)
    module = getattr(function, "__module__", None) or ""
    if module.startswith(("enum", "dataclasses", "pydantic", "builtins")):
        return False
    code = getattr(function, "__code__", None)
    if code is None:  # a builtin slot wrapper (object.__init__ and the like)
        return not isinstance(function, type(object.__init__) | type(object.__new__))
    return getattr(code, "co_filename", "<string>") != "<string>"


def _extra_allowed(cls: type) -> bool:
    try:
        return issubclass(cls, BaseModel) and cls.model_config.get("extra") == "allow"
    except Exception:
        return True


def _field_class(cls: type, attribute: str) -> type | None:
    """The class of ``cls``'s field ``attribute`` when it is one plain class (a nested
    model, a ``str``): the next link of a chain is looked up on it."""
    try:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return None
        info = cls.model_fields.get(attribute)
        annotation = getattr(info, "annotation", None)
        return annotation if isinstance(annotation, type) and \
            not hasattr(annotation, "__origin__") else None
    except Exception:
        return None


def _closest(attribute: str, cls: type, names: set[str]) -> str | None:
    """The field closest to ``attribute`` (difflib), else the closest public name."""
    import difflib

    try:
        fields = [*cls.model_fields, *cls.model_computed_fields] \
            if issubclass(cls, BaseModel) else []
    except Exception:
        fields = []
    for pool in (sorted(fields), sorted(n for n in names if not n.startswith("_"))):
        found = difflib.get_close_matches(attribute, pool, n=1, cutoff=0.6)
        if found:
            return found[0]
    return None


def _chains(node: Any, roots: set[str]) -> Iterator[tuple[str, list[str], Any]]:
    """``(root, [attribute, ...], node)`` of every attribute chain on a root name (the
    longest chain of each, ``o.a.b`` → ``["a", "b"]``); calls on it are not entered."""
    import ast

    parents: dict[int, Any] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load)):
            continue
        above = parents.get(id(sub))
        if isinstance(above, ast.Attribute) and above.value is sub:
            continue  # not the longest chain
        attributes: list[str] = []
        current: Any = sub
        while isinstance(current, ast.Attribute):
            attributes.insert(0, current.attr)
            current = current.value
        if isinstance(current, ast.Name) and current.id in roots:
            yield current.id, attributes, sub


def _rebound(node: Any) -> set[str]:
    """Names bound anywhere inside a predicate (an inner lambda's or comprehension's
    parameter, an assignment, a walrus, a ``for``): a chain on them is not the
    parameter's. Also names narrowed or probed (``isinstance``, ``hasattr``,
    ``getattr``) or read under ``try``: their attributes are guarded."""
    import ast

    names: set[str] = set()
    body = node.body if isinstance(node.body, list) else [node.body]
    for statement in body:
        for sub in ast.walk(statement):
            if isinstance(sub, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = sub.args
                names |= {a.arg for a in (*arguments.posonlyargs, *arguments.args,
                                          *arguments.kwonlyargs)}
                names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
                names.add(sub.id)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                    sub.func.id in ("isinstance", "hasattr", "getattr", "type", "vars",
                                    "setattr", "delattr") and sub.args and \
                    isinstance(sub.args[0], ast.Name):
                names.add(sub.args[0].id)
            elif isinstance(sub, ast.Try | ast.ExceptHandler):
                names |= {n.id for n in ast.walk(sub) if isinstance(n, ast.Name)}
            elif isinstance(sub, ast.Global | ast.Nonlocal):
                names |= set(sub.names)
    return names


def _typed_parameters(desc: ContractDescription, source: PredicateSource, node: Any
                      ) -> list[tuple[str, type, bool]]:
    """(parameter name, class of its values, exact) of each value parameter: ``exact``
    when every value is an instance of exactly that class (an output from JSON)."""
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if source.is_method:
        names = names[1:]  # self
    roles: list[tuple[Any, bool]] = []
    if source.phase == "pre":
        roles.append((desc.input, False))
    else:
        roles.append((desc.output, True))
        if source.takes_input:
            roles.append((desc.used_input, False))
    out = []
    for name, (spec, from_json) in zip(names, roles, strict=False):
        annotation = spec.annotation if spec.wrapped else spec.model
        if isinstance(annotation, type) and not hasattr(annotation, "__origin__"):
            out.append((name, annotation, from_json))
    return out


def check_fields(desc: ContractDescription) -> list[CheckResult]:
    """A ``no_such_field`` check per attribute a predicate reads that its value's type
    does not have (see above for when it is a ``fail`` and when a ``warn``)."""
    from hoare.declaration.source import SourceNotFound, function_node

    results: list[CheckResult] = []
    for source in (*desc.pre, *desc.post):
        if not _effective(desc, source):  # policy ignore: never evaluated
            continue
        try:
            node = function_node(source.fn)
        except (SourceNotFound, OSError, TypeError, ValueError, SyntaxError):
            continue
        except Exception:  # a foreign callable
            continue
        parameters = _typed_parameters(desc, source, node)
        guarded = _rebound(node)
        roots = {name for name, _cls, _exact in parameters if name not in guarded}
        by_name = {name: (cls, exact) for name, cls, exact in parameters}
        reported: set[tuple[str, tuple[str, ...]]] = set()
        for root, attributes, _where in _chains(node, roots):
            cls, from_json = by_name[root]
            why = None if from_json else \
                "an input built in Python may be an instance of a subclass that has it"
            for depth, attribute in enumerate(attributes):
                names = _attribute_names(cls)
                if names is None:
                    break
                why = why or _not_exact(cls)
                if attribute in names:
                    nested = _field_class(cls, attribute)
                    if nested is None:
                        break
                    why = why or _replaced_field(cls, attribute)
                    cls = nested
                    continue
                key = (root, tuple(attributes[:depth + 1]))
                if key not in reported:
                    reported.add(key)
                    results.append(_no_such_field(source, root, attributes[:depth + 1], cls,
                                                  names, why))
                break
    return results


def _not_exact(cls: type) -> str | None:
    """Why a value validated as ``cls`` may not be exactly a ``cls`` with only its
    declared attributes, or None."""
    if _extra_allowed(cls):
        return "extra fields are allowed, so an output may carry it"
    try:
        decorators = getattr(cls, "__pydantic_decorators__", None)
        validators = getattr(decorators, "model_validators", {}) or {}
        if any(getattr(v.info, "mode", "after") != "before" for v in validators.values()):
            return "a model validator of its own may return or change the value"
    except Exception:
        return "its validators cannot be read"
    return None


def _replaced_field(cls: type, attribute: str) -> str | None:
    """Why field ``attribute`` of ``cls`` may hold something else than exactly its
    annotated class (a validator or annotation metadata of its own), or None."""
    try:
        info = cls.model_fields[attribute]  # type: ignore[attr-defined]
        if info.metadata:
            return f"field {attribute!r} has validators or constraints that may replace it"
        decorators = getattr(cls, "__pydantic_decorators__", None)
        for validator in (getattr(decorators, "field_validators", {}) or {}).values():
            if attribute in validator.info.fields or "*" in validator.info.fields:
                return f"a field validator of {attribute!r} may replace it"
    except Exception:
        return "its validators cannot be read"
    return None


def _no_such_field(source: PredicateSource, root: str, chain: list[str], cls: type,
                   names: set[str], why: str | None) -> CheckResult:
    """``fail`` when ``why`` is None (the lookup is exact), else ``warn`` saying why."""
    attribute = chain[-1]
    closest = _closest(attribute, cls, names)
    hint = f" (did you mean {closest!r}?)" if closest else ""
    read = ".".join([root, *chain])
    type_name = getattr(cls, "__qualname__", None) or repr(cls)
    notes = [f"attribute {attribute!r}" + (f", closest field {closest!r}" if closest else "")]
    if why is None:
        message = (f"{source.id} reads {read}, but {type_name} has no field or attribute "
                   f"{attribute!r}{hint}: the predicate raises AttributeError on every "
                   f"output, so it can never pass")
        return CheckResult("no_such_field", "fail", message, predicate=source.id,
                           notes=notes)
    message = (f"{source.id} reads {read}, but {type_name} has no field or attribute "
               f"{attribute!r}{hint}; not a definite failure: {why}")
    return CheckResult("no_such_field", "warn", message, predicate=source.id, notes=notes)
