"""The checks of ``hoare verify`` on one contract (``check_contract``).

* ``pre_satisfiable``: some well-typed input passes every pre-condition.
* ``post_satisfiable``: for some input passing the pre-conditions (or, with an
  ``act``, some output of ``act``, which is opaque) some well-typed output passes
  every post-condition.
* ``predicate_vacuous`` (one per predicate): can it pass and can it fail, given
  the types? Never passes: ``fail``; never fails: ``warn``.
* ``post_total``: every input passing the pre-conditions admits an output.
* ``no_such_field``: see ``fields``.

Soundness: an opaque predicate is left out of a query. Leaving a conjunct out
only grows the modelled set, so a refutation (unsat) still holds; a ``pass``
resting on a witness needs the witness replayed through pydantic and every
predicate, which an opaque predicate prevents: such a check is ``unknown``. A
``pass`` resting on unsat (composition) needs every negated part exact.

A negative verdict (``fail``, ``warn``; and a composition ``pass``, which claims
that no rejected value exists) is put through ``falsifier.falsify`` first: a concrete
value refuting it makes the check ``unknown`` and is logged as a translator bug. A
``fail`` or ``warn`` whose proof rests only on exact parts skips that search
(``exactness``), as the pre-flight's exact refusals do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import z3

from hoare.declaration.description import ContractDescription
from hoare.verifier.checks.exactness import (
    Part,
    exact_refutation,
    owned_by,
    translation_parts,
    type_part,
)
from hoare.verifier.checks.falsifier import Falsifier, falsify, translated_sources
from hoare.verifier.checks.fields import check_fields
from hoare.verifier.checks.model import (
    ContractModel,
    Replay,
    contract_model,
    model_value,
    nice_strings,
    predicate_assertions,
    type_assertions,
)
from hoare.verifier.checks.samples import (
    sampled_example,
    sampled_failing,
    sampled_passing,
)
from hoare.verifier.checks.verdicts import (
    assumptions_of,
    guarded,
    notes_of,
    opaque_of,
    opaque_text,
    unknown_result,
)
from hoare.verifier.report.model import CheckResult, ContractReport
from hoare.verifier.search.falsify import (
    Counterexample,
    find_passing,
)
from hoare.verifier.search.witness import WitnessError, call_predicate, validate
from hoare.verifier.solve.context import in_fresh_context
from hoare.verifier.solve.solver import Assertion, QueryResult, SolverOptions, solve
from hoare.verifier.translate.predicates import (
    Translation,
)
from hoare.verifier.translate.values import (
    Z3_LOCK,
)

__all__ = ["check_contract", "check_post", "check_pre", "check_total", "check_vacuity"]


def check_pre(cm: ContractModel, options: SolverOptions) -> CheckResult:
    kind = "pre_satisfiable"
    notes = notes_of(cm, cm.input, translations=cm.pre)
    assumptions = assumptions_of(cm.input, translations=cm.pre)
    sampled = sampled_passing(cm, "pre")
    if sampled is not None:
        return _satisfied(kind, cm, cm.pre, sampled, notes, assumptions)
    query = solve(type_assertions(cm.input) + predicate_assertions(cm.pre), options,
                  nice_strings(cm.input), cm.cache)
    if query.status == "unsat":
        return _refuted(cm, CheckResult(kind, "fail", f"no valid {cm.desc.input.name} passes "
                                        f"the pre-conditions: the contract can never run",
                                        constraints=query.core, notes=notes,
                                        assumptions=assumptions), options,
                        lambda f: f.passing(cm.pre, "pre"), query.core,
                        [type_part(cm.input), *translation_parts(cm.pre)])
    if query.status == "unknown":
        return unknown_result(kind, query, notes)
    assert query.model is not None
    replay = Replay(cm)
    try:
        witness = model_value(cm.input, query.model)
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
    opaque = opaque_of(cm.pre)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid input passes the translated "
                           f"pre-conditions, but {opaque_text(opaque)}", witness=witness,
                           notes=notes, assumptions=assumptions + assumed)
    what = "pre-conditions" if cm.pre else "input type (no pre-conditions)"
    return CheckResult(kind, "pass", f"a valid input passes the {what}", witness=witness,
                       notes=notes, assumptions=assumptions + assumed)


def _satisfied(kind: str, cm: ContractModel, translations: Sequence[Translation],
               witness: Any, notes: list[str], assumptions: list[str]) -> CheckResult:
    """The verdict on a concrete witness that passed every predicate for real."""
    phase = "pre" if kind == "pre_satisfiable" else "post"
    noun = "input" if phase == "pre" else "output"
    opaque = opaque_of(translations)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid {noun} passes the translated "
                           f"{phase}-conditions, but {opaque_text(opaque)}",
                           witness=witness, notes=notes, assumptions=assumptions)
    has = cm.pre if phase == "pre" else cm.post
    what = f"{phase}-conditions" if has else f"{noun} type (no {phase}-conditions)"
    return CheckResult(kind, "pass", f"a valid {noun} passes the {what}", witness=witness,
                       notes=notes, assumptions=assumptions)


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
    notes = notes_of(cm, *typed, translations=translations)
    assumptions = assumptions_of(*typed, translations=translations)
    sampled = sampled_passing(cm, "post")
    if sampled is not None:
        return _satisfied(kind, cm, translations, sampled, notes, assumptions)
    query = solve(assertions, options, nice_strings(cm.output, cm.used), cm.cache)
    if query.status == "unsat":
        source = "act's output (act is opaque)" if cm.act_output is not None else \
            "any input passing the pre-conditions"
        parts = [type_part(cm.output), *translation_parts(cm.post)] + (
            [type_part(cm.act_output)] if cm.act_output is not None else
            [type_part(cm.input), *translation_parts(cm.pre)])
        return _refuted(cm, CheckResult(kind, "fail", f"no valid {cm.desc.output.name} "
                                        f"passes the post-conditions for {source}: "
                                        f"remediation can never succeed",
                                        constraints=query.core, notes=notes,
                                        assumptions=assumptions), options,
                        lambda f: f.passing(cm.post, "post"), query.core, parts)
    if query.status == "unknown":
        return unknown_result(kind, query, notes)
    assert query.model is not None
    replay = Replay(cm)
    try:
        used_json = model_value(cm.used, query.model)
        out_json = model_value(cm.output, query.model)
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
    opaque = opaque_of(translations)
    if opaque:
        return CheckResult(kind, "unknown", f"a valid output passes the translated "
                           f"post-conditions, but {opaque_text(opaque)}", witness=witness,
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
    notes = notes_of(cm, *typed, translations=[t])
    assumptions = assumptions_of(*typed, translations=[t])
    if t.opaque is not None:
        return CheckResult(kind, "unknown", f"opaque: {t.opaque}", predicate=t.name,
                           notes=notes)
    context = [a for tv in typed for a in type_assertions(tv)]
    defs = [Assertion(None, d, "def") for d in t.defs]
    reused = _known_example(cm, t, known)
    if reused is None:
        reused, known = sampled_example(cm, t), None
    can_pass = QueryResult("sat") if reused is not None else \
        solve(context + defs + predicate_assertions([t]), options, nice_strings(*typed),
              cm.cache)
    typed_parts = [type_part(tv) for tv in typed]
    if can_pass.status == "unsat":
        return _refuted(cm, CheckResult(kind, "fail", f"{t.label} can never pass for a "
                                        f"valid {'input' if is_pre else 'output'}",
                                        constraints=can_pass.core, predicate=t.name,
                                        notes=notes, assumptions=assumptions), options,
                        lambda f: f.passing([t], t.source.phase, with_pre=False),
                        can_pass.core, [*typed_parts, *translation_parts([t])])
    if reused is not None:
        sampled = sampled_failing(cm, t)
        if sampled is not None:
            return CheckResult(kind, "pass", f"{t.label} can pass and can fail",
                               witness=reused, counterexample=sampled, predicate=t.name,
                               notes=notes,
                               assumptions=_merged(assumptions, _self_assumptions(known)))
    negated = f"not {t.label}"
    goal = Assertion(negated, t.fails(), "goal")
    can_fail = solve(context + defs + [goal], options, nice_strings(*typed), cm.cache)
    if can_fail.status == "unsat":
        core = [label for label in can_fail.core if label != negated]
        reason = "the types imply it" if core else "it holds for every value"
        if t.may_return_none:
            reason += ("; note that a predicate returning None passes (spec §3.2): "
                       "return a bool, e.g. `... is not None`")
        goal_part = owned_by(t, [*defs, goal])
        return _refuted(cm, CheckResult(kind, "warn", f"{t.label} can never fail: {reason} "
                                        f"(a weak guarantee)", constraints=core,
                                        predicate=t.name, notes=notes,
                                        assumptions=assumptions), options,
                        lambda f: f.failing(t), can_fail.core, [*typed_parts, goal_part])
    for query in (can_pass, can_fail):
        if query.status == "unknown":
            return unknown_result(kind, query, notes, t.name)
    assert can_fail.model is not None
    replay = Replay(cm)
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
                value_json: Any = model_value(cm.input, query.model)
                shown = value_json
            else:
                used_json = model_value(cm.used, query.model)
                value_json = model_value(cm.output, query.model)
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


def _refuted(cm: ContractModel, result: CheckResult, options: SolverOptions,
             search: Callable[[Falsifier], Counterexample | None], core: Sequence[str],
             parts: Sequence[Part]) -> CheckResult:
    """A negative verdict z3 proved with ``core`` on a query of ``parts``: as is when
    the proof rests only on exact parts (``exactness``: the concrete search could
    only agree), else after the falsifier's search."""
    if exact_refutation(core, parts):
        return result
    return falsify(cm, result, options, search)


def _merged(assumptions: list[str], examples: list[str]) -> list[str]:
    """``assumptions`` and the examples' own (``witness: self.x = 1``), without repeating
    one the check already states for every value."""
    return [*assumptions, *(a for a in dict.fromkeys(examples)
                            if a.split(": ", 1)[-1] not in assumptions)]


def _self_assumptions(known: CheckResult | None) -> list[str]:
    """The attribute values the reused witness assumed (a free ``self.<attr>``)."""
    return [f"witness: {a}" for a in (known.assumptions if known else ())
            if a.startswith("self.") and " = " in a]


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
    notes = notes_of(cm, cm.output, cm.used, translations=translations)
    query = solve([*domain, Assertion("no output exists", z3.Not(phi), "goal")], options,
                  nice_strings(cm.used), cm.cache)
    # a pass says an output exists: floats are reals here, a superset of the doubles
    # (none lies beyond ±max, between neighbours, or equals 2**53 + 1), and rounding
    # is existential, so an output found over the reals need not exist
    exact = cm.output.exact and len(translated) == len(cm.post) and \
        not any(t.havoc for t in cm.post) and not cm.output.uses_float and \
        not any(t.uses_float for t in cm.post)
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
        used_json = model_value(cm.used, query.model)
    except WitnessError:
        return None
    replay = Replay(cm)
    instance, _ = replay.instance(query.model)
    ok, used, _text = validate(cm.used.spec, used_json)
    if not ok or (cm.act_output is None and replay.predicates(cm.pre, instance, used)) or \
            opaque_of(cm.pre if cm.act_output is None else []):
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


def _total_output(falsifier: Falsifier, translated: Sequence[Translation], used: object
                  ) -> Counterexample | None:
    """An output passing the translated post-conditions for the one input ``used``."""
    cm = falsifier.cm
    falsifier.constants.add(used)
    return find_passing(cm.output.spec, translated_sources(translated), falsifier.instance,
                        used=[used], seeds=falsifier.near(cm.output, translated),
                        constants=falsifier.constants, from_json=True)


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
    pre = guarded("pre_satisfiable", lambda: check_pre(cm, options))
    report.checks.append(pre)
    report.checks.append(guarded("post_satisfiable", lambda: check_post(cm, options, pre)))
    post = report.checks[-1]
    if post.status == "pass":
        total = guarded("post_total", lambda: check_total(cm, options))
        if total is not None:
            report.checks.append(total)
    for t in cm.translations():
        known = pre if t.source.phase == "pre" else post
        report.checks.append(guarded(
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
