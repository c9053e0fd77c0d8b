"""The run-time pre-flight (spec §3.4): before the first generation, can any output
satisfy the post-conditions for *this* input and instance?

``unsatisfiable`` is only answered when z3 proves it (the reason names the
conflicting constraints); opaque predicates, limits and anything unexpected
give ``unknown``, which lets the call proceed. The work is done once per class
and cached:

* post-conditions that read neither the input nor ``self``: one verdict per
  class, so a call costs a dictionary lookup;
* post-conditions reading ``self.<attr>``: one verdict (or one prepared solver)
  per distinct tuple of those attribute values;
* post-conditions reading the input: the translation is prepared once; a call
  binds the concrete input (``concrete.bind``) inside ``push``/``pop`` on a
  prepared incremental solver, and an LRU cache answers repeated inputs.
"""

from __future__ import annotations

import inspect
import sys
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import z3

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.forking import free_in_child, hold_across_fork
from hoare.kernel import Policy, PreflightResult, Verdict
from hoare.verifier.runtime.certificate import DOMAIN, Certificate
from hoare.verifier.runtime.input_keys import ABSENT, NotPlain, Snapshot, freeze, input_key
from hoare.verifier.runtime.placeholders import fill_placeholders, input_names
from hoare.verifier.search.candidates import constants_of
from hoare.verifier.search.concrete import BindError, Extractor
from hoare.verifier.search.falsify import (
    PREFLIGHT_BUDGET,
    Confirmed,
    find_passing,
    log_refutation,
)
from hoare.verifier.solve.context import MAIN
from hoare.verifier.solve.qe import (
    Compiled,
    compile_formula,
    eliminate,
)
from hoare.verifier.solve.solver import Assertion, SolverOptions, ordered_core, solve
from hoare.verifier.solve.z3util import constant_names, group_by_constants, is_true, named_constants
from hoare.verifier.translate.predicates import (
    InstanceSelf,
    StaticSelf,
    Translation,
    reads_parameter,
    self_attributes,
    translate,
)
from hoare.verifier.translate.types import TypeBuilder, TypedValue
from hoare.verifier.translate.values import Z3_LOCK, Opaque, is_plain_data, naming

__all__ = ["Preflight"]

PREFLIGHT_OPTIONS = SolverOptions(timeout_ms=1_000, rlimit=3_000_000)
# The budget of a per-call query: small, because it is paid on every call.
PER_CALL_OPTIONS = SolverOptions(timeout_ms=100, rlimit=300_000)
_INPUT_CACHE = 256
_PREPARED_CACHE = 64  # translations kept per class, one per tuple of self attributes read
_CANDIDATES = 8  # outputs that satisfied earlier calls, tried first by substitution
_GIVE_UP = 3  # per-call queries in a row that z3 could not decide: stop asking
_CONFIRMED = Confirmed()  # unsatisfiable verdicts already put through the falsifier
# unsatisfiable verdicts resting only on exact parts (certificate.py), by identity; one
# evicted is put through the falsifier again (sound, only slower)
_CERTIFIED = Confirmed(2 * _INPUT_CACHE)


@dataclass
class _Prepared:
    """One translation of the post stage (for one tuple of ``self`` attributes)."""

    output: TypedValue
    used: TypedValue
    posts: list[Translation]
    verdict: PreflightResult | None = None  # when no post-condition reads the input
    solver: z3.Solver | None = None
    literals: list[z3.BoolRef] | None = None
    names: dict[int, str] | None = None  # a tracking literal's AST id -> its label
    positive: PreflightResult | None = None  # the verdict when an output exists
    relevant: set[str] | None = None  # input constants the post-conditions constrain

    def __post_init__(self) -> None:
        # What each read value was at translation time, as an exact key (a list
        # mutated in place, or True replaced by 1, is a change) or, for a value that
        # has no exact key (a module, a class), by identity.
        self.reads = [(get, Snapshot(value)) for t in self.posts for get, value in t.reads]

    def stale(self) -> bool:
        """Has a module constant, closure variable or class attribute read by a
        post-condition changed since the translation? (Checked on every call: the
        common case, no such read, costs one truth test.)"""
        return bool(self.reads) and any(snap.changed(get()) for get, snap in self.reads)
    phi: Compiled | None = None  # ∃ output. post — over the input, from quantifier elimination
    extract: Extractor | None = None  # the input's relevant constant values
    formula: z3.BoolRef | None = None  # the input-dependent part, all conjoined
    outside: list[z3.ExprRef] = field(default_factory=list)  # its non-input constants
    candidates: list[list[tuple[z3.ExprRef, z3.ExprRef]]] = field(default_factory=list)
    certificate: Certificate | None = None  # which per-input refusals rest on exact parts
    undecided: int = 0  # per-call queries in a row that ended unknown
    reads: list[tuple[Any, Snapshot]] = field(default_factory=list)  # values baked in


def _effective(desc: ContractDescription, source: PredicateSource) -> bool:
    return (source.policy or desc.config.policy) is not Policy.IGNORE


# A checker refers to its description (and through it to the class): held strongly here,
# it would keep its own weak key alive, and every contract class ever checked with it.
# The callers keep their checker (per class); this only shares one while it lives.
_REGISTRY: weakref.WeakKeyDictionary[ContractDescription,
                                     weakref.ref[Preflight] | None] = \
    weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _REGISTRY_LOCK)  # free in a forked child


class Preflight:
    """The pre-flight of one contract class. Thread-safe; z3 work is serialised."""

    def __init__(self, desc: ContractDescription,
                 options: SolverOptions = PREFLIGHT_OPTIONS) -> None:
        if not isinstance(desc, ContractDescription):
            raise TypeError(f"Preflight needs a ContractDescription (describe(cls)), got "
                            f"{type(desc).__name__}")
        self.desc = desc
        self.options = options
        self.posts = [p for p in desc.post if _effective(desc, p)]
        self.reads_input = any(p.takes_input and reads_parameter(p, 1) for p in self.posts)
        names: list[str] = []
        for post in self.posts:
            for name in self_attributes(post) or ():
                if name not in names:
                    names.append(name)
        self.attributes = tuple(names)
        # bounded, oldest first out: instances with ever new attribute values (one per
        # request, say) must not keep a translation each after they are gone
        self._prepared: OrderedDict[tuple[Any, ...], _Prepared] = OrderedDict()
        self._prepared_made = 0  # names each translation's z3 constants apart
        # each verdict with the translation it came from: a call that read a translation
        # since replaced (a constant changed meanwhile, on another thread) must not
        # leave its verdict for the new one
        self._inputs: OrderedDict[tuple[Any, ...], tuple[_Prepared, PreflightResult]] = \
            OrderedDict()
        self._lock = threading.RLock()
        free_in_child(self, self._lock)  # held while z3's is taken (hoare.forking)
        self._unkeyed: bool | None = None  # a method post reads self beyond attributes
        self._constant: PreflightResult | None = None  # the verdict of every call, if one

    # -- construction -------------------------------------------------------------------
    @classmethod
    def for_description(cls, desc: ContractDescription, *,
                        options: SolverOptions = PREFLIGHT_OPTIONS) -> Preflight | None:
        """The pre-flight of a class, built once (cached per description); ``None``
        when there is nothing to check at run time (no translatable post-condition
        and an output type that some value satisfies)."""
        with MAIN:  # the run-time terms live in the main context (z3_context)
            return cls._for_description(desc, options)

    @classmethod
    def _for_description(cls, desc: ContractDescription,
                         options: SolverOptions) -> Preflight | None:
        with _REGISTRY_LOCK:
            if desc in _REGISTRY:
                shared = _REGISTRY[desc]
                found = None if shared is None else shared()
                if shared is None or found is not None:
                    return found
        checker: Preflight | None = cls(desc, options)
        assert checker is not None
        if not checker._useful():
            checker = None
        with _REGISTRY_LOCK:
            shared = _REGISTRY.get(desc)
            found = None if shared is None else shared()
            if found is not None:  # another thread's, built meanwhile
                return found
            _REGISTRY[desc] = None if checker is None else weakref.ref(checker)
            return checker

    def _useful(self) -> bool:
        with Z3_LOCK, naming("pf.static."):
            output = TypeBuilder("output").build(self.desc.output)
            used = TypeBuilder("input").build(self.desc.used_input)
            posts = [translate(p, [output.value, used.value], StaticSelf(self.desc.cls))
                     for p in self.posts]
        if any(t.opaque is None for t in posts):
            return True
        if any(p.is_method and self_attributes(p) != () for p in self.posts):
            return True  # an instance's attributes may make a method translatable
        query = solve([Assertion(c.label, c.expr, c.kind) for c in output.constraints
                       if c.kind == "type" or c.label is None], self.options)
        return query.status == "unsat"

    # -- per call -----------------------------------------------------------------------
    def check(self, instance: object, used_input: object) -> PreflightResult:
        """Is there an output passing the post-conditions for ``used_input``? Safe from
        many threads on one instance: z3 is used from one thread at a time (z3_lock)."""
        constant = self._constant
        if constant is not None:  # decided once for every call (see below): no z3, no lock
            return constant
        MAIN.__enter__()  # z3 from one thread at a time, in the main context (z3_context)
        try:
            try:
                key = self._key(instance)
            except NotPlain as error:
                return PreflightResult(Verdict.UNKNOWN, str(error))
            prepared = self._prepared.get(key)
            if prepared is None or prepared.stale():
                prepared = self._prepare(key, instance, replace=prepared)
            if key == () and not prepared.reads and prepared.verdict is not None \
                    and prepared.verdict.verdict is not Verdict.UNSATISFIABLE:
                # no post-condition reads the input, self, or a value that may change
                # (a module constant, a closure, a class attribute): the verdict holds
                # for every call of every instance; a refusal still goes to _falsify
                self._constant = prepared.verdict
            result = prepared.verdict if prepared.verdict is not None else \
                self._check_input(prepared, key, used_input)
            if result.verdict is Verdict.UNSATISFIABLE:
                # an exact certificate proves it: the concrete search could only agree
                final = result if _CERTIFIED.get(result) is result else \
                    self._falsify(prepared, instance, used_input, result)
                if final.verdict is Verdict.UNSATISFIABLE:
                    return PreflightResult(final.verdict, fill_placeholders(
                        final.reason, input_names(self.desc), used_input))
                return final
            return result
        finally:
            MAIN.__exit__(None, None, None)

    def _falsify(self, prepared: _Prepared, instance: object, used_input: object,
                 result: PreflightResult) -> PreflightResult:
        """Refuse a call only if sampling finds no output passing the translated
        post-conditions either (falsify.py); a refuted verdict is a translator bug."""
        checked = _CONFIRMED.get(result)
        if isinstance(checked, PreflightResult):
            return checked
        sources = [t.source for t in prepared.posts if t.opaque is None]
        try:
            found = find_passing(self.desc.output, sources, instance, used=[used_input],
                                 constants=constants_of(sources, instance, used_input),
                                 budget=PREFLIGHT_BUDGET, from_json=True)
        except Exception:  # a falsifier bug must not hide what z3 proved
            found = None
        final = result if found is None else PreflightResult(
            Verdict.UNKNOWN, log_refutation(f"{self.desc.name} pre-flight", "unsatisfiable",
                                            found))
        _CONFIRMED.put(result, final)
        return final

    def _key(self, instance: object) -> tuple[Any, ...]:
        """The exact values of the ``self`` attributes the post-conditions read (a
        translation is only reused for an instance whose attributes have exactly the
        same values and types)."""
        if self._unkeyed is None:
            self._unkeyed = any(p.is_method and self_attributes(p) is None
                                for p in self.posts)
        if self._unkeyed:
            raise NotPlain("a post-condition uses self in a way the pre-flight cannot "
                            "key: pre-flight skipped")
        if not self.attributes:
            return ()
        data = getattr(instance, "__dict__", {})
        values = []
        for name in self.attributes:
            if name in data:
                value = data[name]
            else:
                value = inspect.getattr_static(type(instance), name, ABSENT)
                if value is ABSENT:
                    raise NotPlain(f"self.{name} is not set: pre-flight skipped")
            if not is_plain_data(value):
                raise NotPlain(f"self.{name} is not plain data: pre-flight skipped")
            values.append((name, freeze(value)))
        return tuple(values)

    def _prepare(self, key: tuple[Any, ...], instance: object,
                 replace: _Prepared | None = None) -> _Prepared:
        with self._lock:
            found = self._prepared.get(key)
            if found is not None and found is not replace:
                return found
            if replace is not None:  # a constant the predicates read has changed
                self._inputs.clear()
            self._prepared_made += 1
            with Z3_LOCK, naming(f"pf.{self._prepared_made}."):
                self_model = InstanceSelf(instance)
                output = TypeBuilder("output").build(self.desc.output)
                used = TypeBuilder("input").build(self.desc.used_input)
                posts = [translate(p, [output.value, used.value], self_model)
                         for p in self.posts]
            prepared = _Prepared(output, used, posts)
            owned = [(Assertion(c.label, c.expr, c.kind), DOMAIN) for c in output.constraints]
            for index, t in enumerate(posts):
                if t.opaque is None:
                    owned += [(Assertion(None, d), index) for d in t.defs]
                    owned += [(Assertion(c.label, z3.Not(c.cond), "pred"), index)
                              for c in t.cases]
            assertions = [assertion for assertion, _owner in owned]
            prepared.positive = self._positive(prepared)
            if self.reads_input:
                self._split(prepared, owned)
            else:
                query = solve(assertions, self.options)
                prepared.verdict = self._verdict(query.status, query.core, query.reason,
                                                 prepared, "")
            self._prepared[key] = prepared
            while len(self._prepared) > _PREPARED_CACHE:
                self._prepared.popitem(last=False)
            return prepared

    def _split(self, prepared: _Prepared, owned: list[tuple[Assertion, int]]) -> None:
        """Decide once what does not depend on the input; prepare the rest.

        Assertions are grouped into components that share no constant. A component
        without input constants (say, ``reason.strip() != ""`` on the output) has
        the same answer for every input: it is checked now. The others are
        prepared for each call, by quantifier elimination when they are linear
        arithmetic, else as an incremental solver. ``owned``: each assertion with its
        owner (the output type or a post-condition), for the certificate.
        """
        owned = [(a, owner) for a, owner in owned if a.kind != "bound"]  # a concrete input
        assertions = [a for a, _owner in owned]
        memo: dict[int, frozenset[str]] = {}
        with Z3_LOCK:
            input_names = set(assign_names(prepared.used))
            groups = group_by_constants(assertions, lambda a: constant_names(a.expr, memo))
        static = [a for group in groups if not (group[1] & input_names) for a in group[0]]
        dynamic = [a for group in groups if group[1] & input_names for a in group[0]]
        if static:
            query = solve(static, self.options)
            if query.status != "sat":
                prepared.verdict = self._verdict(query.status, query.core, query.reason,
                                                 prepared, "")
                if query.status == "unknown":
                    prepared.verdict = PreflightResult(Verdict.UNKNOWN, query.reason)
                return
        if not dynamic:
            prepared.verdict = prepared.positive
            return
        in_dynamic = {id(a) for a in dynamic}
        prepared.certificate = Certificate.of(
            [(a, owner) for a, owner in owned if id(a) in in_dynamic],
            prepared.output.exact, prepared.posts)
        with Z3_LOCK:
            relevant: set[str] = set()
            for a in dynamic:
                relevant |= constant_names(a.expr, memo) & input_names
            prepared.relevant = relevant
            prepared.extract = Extractor(prepared.used.value, relevant)
            formula = z3.And(*[a.expr for a in dynamic])
            reduced = eliminate(formula, relevant, self.options.timeout_ms)
            if reduced is not None:
                prepared.phi = compile_formula(reduced)
            prepared.formula = formula
            names = set().union(*(constant_names(a.expr, memo) for a in dynamic)) - relevant
            found = named_constants(formula)
            prepared.outside = [found[n] for n in sorted(names) if n in found]
        self._incremental(prepared, dynamic)
        if prepared.phi is None:  # a first candidate output, for the substitution test
            query = solve(dynamic, self.options)
            if query.status == "sat" and query.model is not None:
                self._remember(prepared, query.model)

    def _positive(self, prepared: _Prepared) -> PreflightResult:
        opaque = [t for t in prepared.posts if t.opaque is not None]
        if opaque:
            return PreflightResult(Verdict.UNKNOWN, "; ".join(
                f"{t.name} is opaque ({t.opaque})" for t in opaque))
        loose = prepared.output.dropped + [h for t in prepared.posts for h in t.havoc]
        if loose:
            return PreflightResult(Verdict.UNKNOWN, "not modelled exactly: " + "; ".join(loose))
        return PreflightResult(Verdict.SATISFIABLE,
                               "z3 found an output satisfying the post-conditions")

    def _verdict(self, status: str, core: list[str], reason: str, prepared: _Prepared,
                 where: str) -> PreflightResult:
        if status == "unsat" and prepared.output.assumptions:
            # Never block a call on an assumption (validators that might change values).
            return PreflightResult(Verdict.UNKNOWN, "no output would pass if " + "; ".join(
                prepared.output.assumptions))
        if status == "unsat":
            conflict = " ∧ ".join(ordered_core(core)) if core else "the output type"
            return PreflightResult(
                Verdict.UNSATISFIABLE,
                f"no {self.desc.output.name} can pass the post-conditions{where}: {conflict}")
        if status == "sat":
            assert prepared.positive is not None
            return prepared.positive
        return PreflightResult(Verdict.UNKNOWN, reason)

    def _incremental(self, prepared: _Prepared, assertions: list[Assertion]) -> None:
        with Z3_LOCK:
            solver = z3.Solver()
            solver.set("timeout", self.options.timeout_ms)
            solver.set("rlimit", self.options.rlimit)
            solver.set("random_seed", self.options.seed)
            solver.set("core.minimize", True)
            grouped: dict[str, list[z3.BoolRef]] = {}
            for assertion in assertions:
                if assertion.kind == "bound":
                    continue  # the input is concrete: no witness is built
                if assertion.label is None:
                    solver.add(assertion.expr)
                else:
                    grouped.setdefault(assertion.label, []).append(assertion.expr)
            literals = []
            names = {}
            for index, (label, exprs) in enumerate(grouped.items()):
                literal = z3.Bool(f"pf.track!{index}")
                names[literal.get_id()] = label  # an id: str() runs z3's slow printer
                literals.append(literal)
                solver.add(z3.Implies(literal, z3.And(*exprs)))
            prepared.solver, prepared.literals, prepared.names = solver, literals, names

    def _check_input(self, prepared: _Prepared, key: tuple[Any, ...],
                     used_input: object) -> PreflightResult:
        assert prepared.extract is not None
        try:
            env, exact = prepared.extract(used_input)
        except BindError as error:
            return PreflightResult(Verdict.UNKNOWN, f"input not modelled: {error}")
        if prepared.phi is not None:
            try:
                exists: bool | None = bool(prepared.phi(env))
            except (ArithmeticError, TypeError, ValueError):
                exists = None
            if exists is True:
                return self._satisfiable(prepared, exact)
        # No formula, or no output: ask the solver (which also names the conflict).
        try:
            cache_key: tuple[Any, ...] | None = input_key(key, used_input)
        except Exception:  # no exact key: not cached
            cache_key = None
        if cache_key is not None:
            cached = self._inputs.get(cache_key)
            if cached is not None and cached[0] is prepared:
                return cached[1]
        result = self._solve(prepared, env, exact)
        if cache_key is not None and result.verdict is not Verdict.UNKNOWN:
            with self._lock:
                self._inputs[cache_key] = (prepared, result)
                if len(self._inputs) > _INPUT_CACHE:
                    self._inputs.popitem(last=False)
        return result

    def _satisfiable(self, prepared: _Prepared, exact: bool) -> PreflightResult:
        result = prepared.positive
        assert result is not None
        if not exact and result.verdict is Verdict.SATISFIABLE:
            return PreflightResult(Verdict.UNKNOWN, "the input is only partly modelled "
                                   "(long lists or unmodelled fields)")
        return result

    def _remember(self, prepared: _Prepared, model: z3.ModelRef) -> None:
        """Keep the output part of a model as a candidate for later inputs."""
        pairs = [(const, model.eval(const, model_completion=True))
                 for const in prepared.outside]
        prepared.candidates.insert(0, pairs)
        del prepared.candidates[_CANDIDATES:]

    def _substitution_test(self, prepared: _Prepared, bindings: list[tuple[z3.ExprRef,
                                                                        z3.ExprRef]]) -> bool:
        """Does an output that satisfied an earlier call satisfy this one? Checked by
        substituting values and simplifying (no search): True is a proof."""
        assert prepared.formula is not None
        for candidate in prepared.candidates:
            try:
                value = z3.simplify(z3.substitute(prepared.formula, *bindings, *candidate))
            except z3.Z3Exception:
                continue
            if is_true(value):
                return True
        return False

    def _solve(self, prepared: _Prepared, env: dict[str, Any], exact: bool
               ) -> PreflightResult:
        solver = prepared.solver
        assert solver is not None and prepared.literals is not None and \
            prepared.names is not None and prepared.extract is not None
        with self._lock, Z3_LOCK:
            try:
                equalities = prepared.extract.equalities(env)
            except Opaque as error:  # a character z3 strings cannot hold
                return PreflightResult(Verdict.UNKNOWN, f"input not modelled: {error}")
            bindings = [(e.arg(0), e.arg(1)) for e in equalities]
            if prepared.candidates and self._substitution_test(prepared, bindings):
                prepared.undecided = 0
                return self._satisfiable(prepared, exact)
            if prepared.undecided >= _GIVE_UP:
                return PreflightResult(Verdict.UNKNOWN, "z3 cannot decide these "
                                       "post-conditions quickly: per-call pre-flight stopped")
            solver.set("timeout", PER_CALL_OPTIONS.timeout_ms)
            solver.set("rlimit", PER_CALL_OPTIONS.rlimit)
            solver.push()
            try:
                solver.add(*equalities)
                answer = solver.check(*prepared.literals)
                if answer == z3.unsat:
                    prepared.undecided = 0
                    core = [prepared.names[c.get_id()] for c in solver.unsat_core()]
                    result = self._verdict("unsat", core, "", prepared, " for this input")
                    if result.verdict is Verdict.UNSATISFIABLE and \
                            prepared.certificate is not None and \
                            prepared.certificate.certifies(core, exact):
                        _CERTIFIED.put(result, result)
                    return result
                if answer == z3.sat:
                    prepared.undecided = 0
                    self._remember(prepared, solver.model())
                    return self._satisfiable(prepared, exact)
                prepared.undecided += 1
                return PreflightResult(Verdict.UNKNOWN, solver.reason_unknown())
            finally:
                solver.pop()


def assign_names(typed: TypedValue) -> list[str]:
    """The names of every z3 constant of a symbolic value (leaves, list lengths,
    ``None`` flags)."""
    return list(Extractor(typed.value).consts)
