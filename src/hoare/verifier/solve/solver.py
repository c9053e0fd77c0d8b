"""One z3 query: tracked assertions, limits, unsat cores.

Every query gets a fresh solver with a ``timeout``, a deterministic resource
limit (``rlimit``) and a fixed ``random_seed``, so a verdict reproduces; hitting
either limit is ``unknown``. Each labelled assertion is guarded by a tracking
literal, so an unsat core is a list of labels (``ge=0 (Score.score)``,
``"score must exceed 1"``). *Verifier bounds* (how many list elements are
modelled) are tracked too: a refutation whose core needs one is retried
without them, and is only reported when it holds without.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import z3

from hoare.verifier.solve.z3util import constant_names, group_by_constants, is_true, named_constants
from hoare.verifier.translate.values import Z3_LOCK

__all__ = ["Assertion", "QueryCache", "QueryResult", "SolverOptions", "solve"]

DEFAULT_TIMEOUT_MS = 5_000
DEFAULT_RLIMIT = 10_000_000


@dataclass(frozen=True)
class SolverOptions:
    """Limits of each z3 query. ``rlimit`` is z3's deterministic resource count
    (roughly 2–3 million units per second of solving on a current machine)."""

    timeout_ms: int = DEFAULT_TIMEOUT_MS
    rlimit: int = DEFAULT_RLIMIT
    seed: int = 0


@dataclass(frozen=True)
class Assertion:
    """``label`` None: asserted as is (structure, definitions). ``kind`` ``bound``:
    a verifier bound, dropped when a refutation needs it; ``schema``: a constraint a
    decoder's schema enforces (``runtime.decoding``)."""

    label: str | None
    expr: z3.BoolRef
    kind: Literal["type", "pred", "bound", "def", "goal", "schema"] = "type"


def ordered_core(labels: list[str]) -> list[str]:
    """Type constraints first, then predicates (quoted), each group sorted: stable
    output whatever order z3 returns the core in."""
    return sorted(dict.fromkeys(labels), key=lambda label: (label.startswith('"'), label))


@dataclass
class QueryResult:
    status: Literal["sat", "unsat", "unknown"]
    model: z3.ModelRef | None = None
    core: list[str] = field(default_factory=list)
    reason: str = ""


def _configure(solver: z3.Solver, options: SolverOptions) -> None:
    solver.set("timeout", max(1, int(options.timeout_ms)))
    solver.set("rlimit", max(1, int(options.rlimit)))
    solver.set("random_seed", int(options.seed))
    solver.set("core.minimize", True)


def _reason(solver: z3.Solver) -> str:
    reason = solver.reason_unknown()
    if reason in ("max. resource limit exceeded", "resource limits reached"):
        return f"z3 hit its deterministic resource limit (rlimit: {reason})"
    if reason == "canceled":  # either limit: z3 does not say which
        return "z3 hit its resource limit (rlimit) or time limit (canceled)"
    if reason == "timeout":
        return "z3 timed out"
    return f"z3 could not decide ({reason})"


class MergedModel:
    """The models of independent components, as one: ``eval`` of a constant gives
    its value in the component that has it (or a default: it is unconstrained)."""

    def __init__(self, models: Sequence[z3.ModelRef]) -> None:
        self.models = list(models)

    def _value(self, const: z3.ExprRef) -> z3.ExprRef:
        decl = const.decl()
        for model in self.models:
            found = model.get_interp(decl)
            if found is not None:
                return found
        return _default(const)

    def eval(self, expr: z3.ExprRef, model_completion: bool = True) -> z3.ExprRef:
        if z3.is_const(expr) and expr.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            return self._value(expr)
        pairs = [(const, self._value(const)) for const in named_constants(expr).values()]
        return z3.simplify(z3.substitute(expr, *pairs) if pairs else expr)


def _default(const: z3.ExprRef) -> z3.ExprRef:
    if z3.is_bool(const):
        return z3.BoolVal(False)
    if z3.is_int(const):
        return z3.IntVal(0)
    if z3.is_real(const):
        return z3.RealVal(0)
    if z3.is_string(const):
        return z3.StringVal("")
    raise z3.Z3Exception(f"no default value for {const.sort()}")


@dataclass
class QueryCache:
    """What the queries of one check or contract share: the answers of independent
    components and the constants of each AST. AST ids are only unique while the
    ASTs live, so the cache keeps every root it has seen alive."""

    answers: dict[tuple[Any, ...], QueryResult] = field(default_factory=dict)
    solver: z3.Solver | None = None  # reused with push/pop by every query of the cache
    constants: dict[int, frozenset[str]] = field(default_factory=dict)
    roots: list[z3.ExprRef] = field(default_factory=list)


def components(assertions: Sequence[Assertion], cache: QueryCache | None = None
               ) -> list[list[Assertion]]:
    """Group assertions that share constants. Independent groups are solved apart:
    z3's string solver in particular degrades when unrelated string constraints
    share one query."""
    memo: dict[int, frozenset[str]] = cache.constants if cache is not None else {}
    if cache is not None:
        cache.roots.extend(a.expr for a in assertions)
    groups = group_by_constants(assertions, lambda a: constant_names(a.expr, memo))
    return [items for items, _names in groups]


def solve(assertions: Sequence[Assertion], options: SolverOptions,
          nice: Sequence[z3.BoolRef] = (),
          cache: QueryCache | None = None) -> QueryResult:
    """Check the conjunction, one independent component at a time. ``nice``: extra
    constraints tried after a ``sat`` to get a readable witness (printable
    strings); dropped when they do not hold. ``cache``: component results shared
    by the queries of one check (keyed by the assertions' identities)."""
    with Z3_LOCK:
        kept = [a for a in assertions if not is_true(a.expr)]
        groups = components(kept, cache)
        if len(groups) <= 1 and cache is None:
            return _solve_one(kept, options, nice)
        memo: dict[int, frozenset[str]] = cache.constants if cache is not None else {}
        if cache is not None:
            cache.roots.extend(nice)
        nice_names = [(n, constant_names(n, memo)) for n in nice]
        models = []
        unknown: QueryResult | None = None
        for group in groups:
            names: set[str] = set()
            for a in group:
                names |= constant_names(a.expr, memo)
            local_nice = [n for n, used in nice_names if used and used <= names]
            # AST ids are unique while the ASTs live: the cache keeps the group alive.
            key = tuple(sorted((a.label or "", a.kind, a.expr.get_id()) for a in group)) + \
                tuple(sorted(n.get_id() for n in local_nice))
            hit = cache.answers.get(key) if cache is not None else None
            if hit is not None:
                result = hit
            else:
                result = _solve_one(group, options, local_nice, cache)
                if cache is not None:
                    cache.answers[key] = result
            if result.status == "unsat":
                return result
            if result.status == "unknown":
                unknown = unknown or result
            elif result.model is not None:
                models.append(result.model)
        if unknown is not None:
            return unknown
        return QueryResult("sat", MergedModel(models))


def _solve_one(assertions: Sequence[Assertion], options: SolverOptions,
               nice: Sequence[z3.BoolRef] = (), cache: QueryCache | None = None
               ) -> QueryResult:
    if cache is None:
        solver = z3.Solver()
        _configure(solver, options)
        return _check(solver, assertions, options, nice)
    if cache.solver is None:
        cache.solver = z3.Solver()
    solver = cache.solver
    _configure(solver, options)
    solver.push()
    try:
        return _check(solver, assertions, options, nice)
    finally:
        solver.pop()


def _check(solver: z3.Solver, assertions: Sequence[Assertion], options: SolverOptions,
           nice: Sequence[z3.BoolRef]) -> QueryResult:
    literals: dict[str, z3.BoolRef] = {}
    bounds: dict[str, z3.BoolRef] = {}
    grouped: dict[str, list[z3.BoolRef]] = {}
    kinds: dict[str, str] = {}
    for assertion in assertions:
        if assertion.label is None:
            solver.add(assertion.expr)
            continue
        grouped.setdefault(assertion.label, []).append(assertion.expr)
        kinds.setdefault(assertion.label, assertion.kind)
    names: dict[str, str] = {}
    for index, (label, exprs) in enumerate(grouped.items()):
        literal = z3.Bool(f"track!{index}")
        names[str(literal)] = label
        solver.add(z3.Implies(literal, z3.And(*exprs) if len(exprs) > 1 else exprs[0]))
        (bounds if kinds[label] == "bound" else literals)[label] = literal
    tracked = list(literals.values())
    answer = solver.check(*tracked, *bounds.values())
    if answer == z3.sat:
        model = solver.model()
        if nice and not is_true(model.eval(z3.And(*nice), model_completion=True)):
            # Readable witnesses are a nicety: give them a tenth of the budget.
            solver.set("rlimit", max(100_000, options.rlimit // 10))
            solver.set("timeout", max(50, options.timeout_ms // 10))
            nice_literal = z3.Bool("track!nice")
            solver.add(z3.Implies(nice_literal, z3.And(*nice)))
            if solver.check(*tracked, *bounds.values(), nice_literal) == z3.sat:
                model = solver.model()
        return QueryResult("sat", model)
    if answer == z3.unknown:
        return QueryResult("unknown", reason=_reason(solver))
    core = [names[str(c)] for c in solver.unsat_core()]
    if not any(label in bounds for label in core):
        return QueryResult("unsat", core=ordered_core(core))
    # The refutation used a verifier bound (how many list elements are modelled):
    # it only counts if it holds without the bounds.
    answer = solver.check(*tracked)
    if answer == z3.unsat:
        return QueryResult("unsat", core=ordered_core([names[str(c)]
                                                  for c in solver.unsat_core()]))
    if answer == z3.sat:
        needed = ", ".join(label for label in core if label in bounds)
        return QueryResult("unknown", reason=f"a witness would need more list elements "
                                             f"than the verifier models ({needed})")
    return QueryResult("unknown", reason=_reason(solver))
