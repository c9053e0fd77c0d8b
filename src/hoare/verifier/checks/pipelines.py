"""``composition``: does each pipeline stage accept what the previous one returns?

For stages A → B: every output A's type and post-conditions allow (for some
input A accepts) must be accepted by B, handed over exactly as ``Pipeline``
does it (modelled in ``handoff``; what is not modelled makes the link inexact, and
values where a conversion is not modelled are a *region* a ``pass`` must prove
unreachable).

z3 looks for an output B rejects, one rejection reason at a time (each query
stays small). A counterexample is replayed: A's type and post-conditions accept
it and B really rejects it (through ``TypeSpec.validate``). A ``pass`` rests on
every reason being refuted, so it needs B's checks exact: an opaque
pre-condition of B, a constraint of B not translated or a hand-off not modelled
make it ``unknown``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import z3

from hoare.verifier.checks.falsifier import falsify_composition
from hoare.verifier.checks.handoff import Link, handoff
from hoare.verifier.checks.model import (
    ContractModel,
    Replay,
    contract_model,
    model_value,
    nice_strings,
    predicate_assertions,
    type_assertions,
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
from hoare.verifier.search.witness import WitnessError, validate
from hoare.verifier.solve.context import in_fresh_context
from hoare.verifier.solve.solver import Assertion, QueryCache, QueryResult, SolverOptions, solve
from hoare.verifier.solve.z3util import is_false
from hoare.verifier.translate.logic import z3_and, z3_not
from hoare.verifier.translate.values import (
    Z3_LOCK,
    naming,
)

__all__ = ["check_pair", "check_pipeline"]


def check_pair(a: ContractModel, b: ContractModel, options: SolverOptions,
               index: int) -> CheckResult:
    """``composition`` of stages ``index`` (A) → ``index + 1`` (B)."""
    kind = "composition"
    stage = f"stage {index} → {index + 1}"
    a_name, b_name = a.desc.cls.__qualname__, b.desc.cls.__qualname__
    link = Link()
    with Z3_LOCK, naming(f"p{index}."):
        accepted = handoff(a, b, link)
    assertions = type_assertions(a.output) + predicate_assertions(a.post)
    if a.act_output is not None:
        assertions += type_assertions(a.act_output)
    else:
        assertions += type_assertions(a.input) + predicate_assertions(a.pre)
    assertions += [Assertion(None, d, "def") for d in link.defs]
    b_types = [c for c in b.input.constraints]
    assertions += [Assertion(None, c.expr) for c in b_types if c.label is None]
    assertions += [Assertion(c.label, c.expr, "bound") for c in b_types if c.kind == "bound"]
    b_checks: dict[str, list[z3.BoolRef]] = {}
    for c in b_types:
        if c.label is not None and c.kind == "type":
            b_checks.setdefault(c.label, []).append(c.expr)
    b_pre = [t for t in b.pre if t.opaque is None]
    for t in b_pre:
        assertions += [Assertion(None, d, "def") for d in t.defs]
    # B rejects the value for one of these reasons; one query per reason keeps each
    # query small (independent parts are sliced away and their answers shared).
    reasons: list[tuple[str, z3.BoolRef]] = [("the conversion", z3_not(accepted))]
    reasons += [(f"the hand-off is not modelled: {note}", cond)
                for note, cond in link.regions]
    reasons += [(label, z3_not(z3_and(*exprs))) for label, exprs in b_checks.items()]
    reasons += [(t.label, t.fails()) for t in b_pre]
    translations = [*a.post, *(a.pre if a.act_output is None else []), *b.pre]
    notes = notes_of(a, a.output, a.used, b.input, translations=translations) + link.notes
    assumptions = assumptions_of(a.output, a.used, b.input, translations=translations)
    assumptions.append(f"{a_name}.forward returns the output its contract accepted")
    b_opaque = opaque_of(b.pre)
    exact = link.exact and b.input.exact and not b_opaque
    cache = QueryCache()
    query = QueryResult("unsat")
    unknown: QueryResult | None = None
    for label, reason in reasons:
        if is_false(reason):
            continue
        goal = f"{b_name} rejects the value: {label}"
        result = solve([*assertions, Assertion(goal, reason, "goal")], options,
                       nice_strings(a.output, a.used), cache)
        if result.status == "sat":
            query = result
            break
        if result.status == "unknown":
            unknown = unknown or result
    if query.status == "unsat" and unknown is not None:
        query = unknown
    if query.status == "unsat":
        if exact:  # a universal claim: a concrete counterexample refutes it
            return falsify_composition(a, b, CheckResult(
                kind, "pass", f"{stage}: every output {a_name} may return is accepted by "
                f"{b_name} (type and pre-conditions)", notes=notes, assumptions=assumptions),
                options)
        why = opaque_text(b_opaque) if b_opaque else \
            "; ".join([*link.notes, *b.input.dropped, *b.input.assumptions])
        return CheckResult(kind, "unknown", f"{stage}: no counterexample among what is "
                           f"translated, but {why}", notes=notes, assumptions=assumptions)
    if query.status == "unknown":
        return unknown_result(kind, query, notes)
    assert query.model is not None
    try:
        value_json = model_value(a.output, query.model)
        used_json = model_value(a.used, query.model)
    except WitnessError as error:
        return CheckResult(kind, "unknown", f"{stage}: no concrete counterexample: {error}",
                           notes=notes)
    # Replay: A accepts this output, and B rejects it.
    replay_a = Replay(a)
    instance_a, _ = replay_a.instance(query.model)
    problems = []
    ok, used, text = validate(a.used.spec, used_json)
    if not ok:
        problems.append(f"{a_name}'s {a.used_key} does not validate: {text}")
    elif a.act_output is None:
        problems += replay_a.predicates(a.pre, instance_a, used)
    ok_out, out, text = validate(a.desc.output, value_json)
    if not ok_out:
        problems.append(f"{a_name}'s output does not validate: {text}")
    elif ok:
        problems += replay_a.predicates(a.post, instance_a, out, used)
    a_opaque = opaque_of([*a.post, *(a.pre if a.act_output is None else [])])
    if problems or a_opaque:
        why = "; ".join(problems) if problems else opaque_text(a_opaque)
        return CheckResult(kind, "unknown", f"{stage}: a possible counterexample could not "
                           f"be confirmed: {why}", counterexample=value_json, notes=notes)
    replay_b = Replay(b)
    instance_b, _ = replay_b.instance(None)
    ok_b, b_value, text = validate(b.desc.input, out)
    if not ok_b:
        reason = f"{b_name}'s input type rejects: {text}"
    else:
        failures = replay_b.predicates(b.pre, instance_b, b_value)
        if not failures:
            return CheckResult(kind, "unknown", f"{stage}: a possible counterexample passes "
                               f"{b_name}'s translated checks"
                               + (f"; {opaque_text(b_opaque)}" if b_opaque else ""),
                               counterexample=value_json, notes=notes)
        reason = f"{b_name} rejects: " + "; ".join(failures)
    extra = f" (for {a_name} input {used_json!r:.80})" if any(
        t.reads_input for t in a.post) else ""
    return CheckResult(kind, "fail", f"{stage}: {a_name} may return a {a.desc.output.name} "
                       f"that {reason}{extra}",
                       counterexample=value_json, notes=notes, assumptions=assumptions)


@in_fresh_context
def check_pipeline(stages: Sequence[object], name: str, options: SolverOptions
                   ) -> ContractReport:
    """The composition checks of a pipeline of contract instances."""
    report = ContractReport(name)
    models = []
    try:
        for index, stage in enumerate(stages):
            desc = type(stage).__hoare__  # type: ignore[attr-defined]  # set by @contract
            models.append(contract_model(desc, stage, prefix=f"s{index}."))
    except Exception as error:
        report.checks.append(CheckResult("composition", "unknown", f"internal error: "
                                         f"{type(error).__name__}: {error}"))
        return report
    for index in range(len(models) - 1):
        report.checks.append(guarded("composition", functools.partial(
            check_pair, models[index], models[index + 1], options, index)))
    return report
