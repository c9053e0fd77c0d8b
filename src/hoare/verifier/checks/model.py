"""A contract in z3 (``ContractModel``), made once and shared by every check of it:
the symbolic input, act output and output with their type constraints, the translated
predicates, and the pieces each check builds its queries and replays from (assertions,
readable-witness preferences, the witness replay through pydantic and the predicates)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import z3

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.kernel import Policy
from hoare.verifier.search.candidates import Constants
from hoare.verifier.search.witness import WitnessError, call_predicate, concretize
from hoare.verifier.solve.solver import Assertion, QueryCache
from hoare.verifier.translate.logic import z3_not
from hoare.verifier.translate.predicates import (
    InstanceSelf,
    SelfModel,
    StaticSelf,
    Translation,
    translate,
)
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

if TYPE_CHECKING:
    from hoare.verifier.checks.samples import Samples

__all__ = [
    "ContractModel",
    "Replay",
    "contract_model",
    "effective",
    "model_value",
    "nice_strings",
    "predicate_assertions",
    "type_assertions",
]


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
    samples: dict[str, Samples] = field(default_factory=dict)
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


def effective(desc: ContractDescription, source: PredicateSource) -> bool:
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
        ignored = [p.id for p in (*desc.pre, *desc.post) if not effective(desc, p)]
        pre = [translate(p, [typed_in.value], self_model) for p in desc.pre
               if effective(desc, p)]
        post = [translate(p, [typed_out.value, used.value], self_model) for p in desc.post
                if effective(desc, p)]
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
        out.extend(Assertion(c.label, z3_not(c.cond), "pred") for c in t.cases)
    return out


def nice_strings(*values: TypedValue) -> list[z3.BoolRef]:
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


class Replay:
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


def model_value(typed: TypedValue, model: z3.ModelRef) -> Any:
    root = concretize(typed.root, model)
    return root.get("value") if typed.spec.wrapped else root
