"""``composition``: does each pipeline stage accept what the previous one returns?

For stages A → B: every output A's type and post-conditions allow (for some
input A accepts) must be accepted by B: converted the way the runtime does it
(``model_dump`` then B's ``model_validate``), valid for B's input type, and
passing B's pre-conditions. z3 looks for an output B rejects, one rejection
reason at a time (each query stays small). A counterexample is replayed: A's
type and post-conditions accept it and B really rejects it. A ``pass`` rests on
every reason being refuted, so it needs B's checks exact: an opaque
pre-condition of B, a constraint of B not translated or a conversion not
modelled make it ``unknown``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import z3

from .checks import (
    ContractModel,
    _assumptions,
    _guarded,
    _nice_strings,
    _notes,
    _opaque,
    _opaque_text,
    _Replay,
    _unknown,
    _value,
    contract_model,
    falsify_composition,
    predicate_assertions,
    type_assertions,
)
from .report import CheckResult, ContractReport
from .semantics import TRUE, _and, _not, _or
from .solver import Assertion, QueryCache, QueryResult, SolverOptions, solve
from .values import (
    FIN,
    Z3_LOCK,
    SBool,
    SEnum,
    SFloat,
    SInt,
    SList,
    SModel,
    SNone,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    const_to_sym,
    fresh_name,
    naming,
)
from .witness import WitnessError, validate

__all__ = ["check_pipeline"]


@dataclass
class _Link:
    """How B's input is made from A's output: definitions (always true), the
    condition that pydantic accepts the conversion, and whether it is exact."""

    defs: list[z3.BoolRef] = field(default_factory=list)
    valid: list[z3.BoolRef] = field(default_factory=list)
    exact: bool = True
    notes: list[str] = field(default_factory=list)

    def inexact(self, note: str) -> z3.BoolRef:
        self.exact = False
        self.notes.append(note)
        return z3.Bool(fresh_name("link.valid"))


def _link(a: Sym, b: Sym, link: _Link, where: str, strict: bool = False) -> z3.BoolRef:
    """Relate B's value ``b`` to A's value ``a`` (A's output after ``model_dump``)
    and return the condition that pydantic accepts it."""
    if isinstance(a, SOpaque) or isinstance(b, SOpaque):
        return link.inexact(f"{where}: a type is not modelled")
    if isinstance(b, SOpt):
        if isinstance(a, SNone):
            link.defs.append(b.none)
            return TRUE
        if isinstance(a, SOpt):
            link.defs.append(b.none == a.none)
            inner = _link(a.inner, b.inner, link, where, strict)
            return _or(a.none, inner)
        link.defs.append(z3.Not(b.none))
        return _link(a, b.inner, link, where, strict)
    if isinstance(a, SOpt):
        inner = _link(a.inner, b, link, where, strict)
        return _and(_not(a.none), inner)
    if isinstance(a, SNone):
        return z3.BoolVal(False)
    if type(a) is type(b) and isinstance(a, (SInt, SBool, SStr)):
        link.defs.append(a.e == b.e)  # type: ignore[attr-defined]
        return TRUE
    if isinstance(a, SFloat) and isinstance(b, SFloat):
        link.defs.append(z3.And(a.tag == b.tag, a.r == b.r))
        return TRUE
    if isinstance(a, SInt) and isinstance(b, SFloat):
        link.defs.append(z3.And(b.tag == FIN, b.r == z3.ToReal(a.e)))
        return TRUE
    if isinstance(a, SEnum) and isinstance(b, SEnum) and a.cls is b.cls:
        link.defs.append(a.idx == b.idx)
        return TRUE
    if isinstance(a, SStr) and isinstance(b, SEnum) and all(
            isinstance(m.value, str) for m in b.members):
        conds = []
        for index, member in enumerate(b.members):
            same = a.e == const_to_sym(member.value).e  # type: ignore[attr-defined]
            link.defs.append(z3.Implies(same, b.idx == index))
            conds.append(same)
        return _or(*conds)
    if isinstance(a, SList) and isinstance(b, SList):
        link.defs.append(a.n == b.n)
        valid = []
        for index, slot_b in enumerate(b.slots):
            if index < len(a.slots):
                ok = _link(a.slots[index], slot_b, link, f"{where}[{index}]", strict)
            else:
                ok = link.inexact(f"{where}: more elements than modelled")
            valid.append(z3.Implies(b.n > index, ok))
        if not b.exact:
            valid.append(z3.Implies(b.n > len(b.slots),
                                    link.inexact(f"{where}: elements past the bound")))
        return _and(*valid)
    if isinstance(a, SModel) and isinstance(b, SModel):
        if a.cls is b.cls:
            for name in a.fields:
                _link(a.fields[name], b.fields[name], link, f"{where}.{name}", strict)
            return TRUE
        conds = []
        target_fields = getattr(b.cls, "model_fields", {})
        for name, sym_b in b.fields.items():
            info = target_fields.get(name)
            if name in a.fields:
                conds.append(_link(a.fields[name], sym_b, link, f"{where}.{name}", strict))
            elif info is not None and not info.is_required():
                factory = info.default_factory
                if factory is not None and factory not in (list, dict, set, tuple, str, int):
                    conds.append(link.inexact(f"{where}.{name}: default_factory"))
                    continue
                default = factory() if factory is not None else info.default  # type: ignore[call-arg]
                conds.append(_link(const_to_sym(default), sym_b, link, f"{where}.{name}",
                                   strict))
            else:
                return z3.BoolVal(False)  # a required field A never produces
        extra = b.cls.model_config.get("extra")
        if extra == "forbid" and set(a.fields) - set(b.fields):
            return z3.BoolVal(False)
        return _and(*conds)
    return link.inexact(f"{where}: conversion {a.kind} → {b.kind} not modelled")


def _pipeline_pair(a: ContractModel, b: ContractModel, options: SolverOptions,
                   index: int) -> CheckResult:
    kind = "composition"
    stage = f"stage {index} → {index + 1}"
    a_name, b_name = a.desc.cls.__qualname__, b.desc.cls.__qualname__
    link = _Link()
    with Z3_LOCK, naming(f"p{index}."):
        accepted = _link(a.output.value, b.input.value, link, b.desc.input.name)
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
    reasons: list[tuple[str, z3.BoolRef]] = [("the conversion", _not(accepted))]
    reasons += [(label, _not(_and(*exprs))) for label, exprs in b_checks.items()]
    reasons += [(t.label, t.fails()) for t in b_pre]
    translations = [*a.post, *(a.pre if a.act_output is None else []), *b.pre]
    notes = _notes(a, a.output, a.used, b.input, translations=translations) + link.notes
    assumptions = _assumptions(a.output, a.used, b.input, translations=translations)
    assumptions.append(f"{a_name}.forward returns the output its contract accepted")
    b_opaque = _opaque(b.pre)
    exact = link.exact and b.input.exact and not b_opaque
    cache = QueryCache()
    query = QueryResult("unsat")
    unknown: QueryResult | None = None
    for label, reason in reasons:
        if z3.is_false(reason):
            continue
        goal = f"{b_name} rejects the value: {label}"
        result = solve([*assertions, Assertion(goal, reason, "goal")], options,
                       _nice_strings(a.output, a.used), cache)
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
        why = _opaque_text(b_opaque) if b_opaque else \
            "; ".join([*link.notes, *b.input.dropped, *b.input.assumptions])
        return CheckResult(kind, "unknown", f"{stage}: no counterexample among what is "
                           f"translated, but {why}", notes=notes, assumptions=assumptions)
    if query.status == "unknown":
        return _unknown(kind, query, notes)
    assert query.model is not None
    try:
        value_json = _value(a.output, query.model)
        used_json = _value(a.used, query.model)
    except WitnessError as error:
        return CheckResult(kind, "unknown", f"{stage}: no concrete counterexample: {error}",
                           notes=notes)
    # Replay: A accepts this output, and B rejects it.
    replay_a = _Replay(a)
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
    a_opaque = _opaque([*a.post, *(a.pre if a.act_output is None else [])])
    if problems or a_opaque:
        why = "; ".join(problems) if problems else _opaque_text(a_opaque)
        return CheckResult(kind, "unknown", f"{stage}: a possible counterexample could not "
                           f"be confirmed: {why}", counterexample=value_json, notes=notes)
    replay_b = _Replay(b)
    instance_b, _ = replay_b.instance(None)
    ok_b, b_value, text = validate(b.desc.input, out)
    if not ok_b:
        reason = f"{b_name}'s input type rejects: {text}"
    else:
        failures = replay_b.predicates(b.pre, instance_b, b_value)
        if not failures:
            return CheckResult(kind, "unknown", f"{stage}: a possible counterexample passes "
                               f"{b_name}'s translated checks"
                               + (f"; {_opaque_text(b_opaque)}" if b_opaque else ""),
                               counterexample=value_json, notes=notes)
        reason = f"{b_name} rejects: " + "; ".join(failures)
    extra = f" (for {a_name} input {used_json!r:.80})" if any(
        t.reads_input for t in a.post) else ""
    return CheckResult(kind, "fail", f"{stage}: {a_name} may return a {a.desc.output.name} "
                       f"that {reason}{extra}",
                       counterexample=value_json, notes=notes, assumptions=assumptions)


def check_pipeline(stages: Sequence[object], name: str, options: SolverOptions
                   ) -> ContractReport:
    """The composition checks of a pipeline of contract instances."""
    report = ContractReport(name)
    models = []
    try:
        for index, stage in enumerate(stages):
            desc = type(stage).__hoare__  # type: ignore[attr-defined]
            models.append(contract_model(desc, stage, prefix=f"s{index}."))
    except Exception as error:
        report.checks.append(CheckResult("composition", "unknown", f"internal error: "
                                         f"{type(error).__name__}: {error}"))
        return report
    for index in range(len(models) - 1):
        report.checks.append(_guarded("composition", lambda i=index: _pipeline_pair(  # type: ignore[misc]
            models[i], models[i + 1], options, i)))
    return report

