"""A contract compiled into the provider's structured-output schema, with a proof of
what is left to check after decoding (``hoare schema``, ``@contract(decoding=...)``).

1. **Candidates.** Each post-condition's body is read for atoms JSON Schema can say
   about one top-level output field: ``o.f <= 5`` (``maximum``), ``o.f in ("a", "b")``
   (``enum``), ``o.f == "x"``, ``len(o.f) >= 2`` (``minLength``/``minItems``),
   ``o.f.startswith("ab")`` (``pattern``), each side of an ``and`` and of a chained
   comparison (``schema_atoms``). Reading the source is only a guess at what to fold.
2. **Folding, proved.** A candidate is folded into the schema only when z3 proves
   that every output the contract accepts satisfies it (types ∧ posts ∧ ¬C unsat), so
   the schema never excludes an output the contract would take, and no sampled output
   that pydantic and the real predicates accept breaks it. Otherwise it is dropped,
   with the reason.
3. **The residual, proved per dialect.** A post-condition is ``enforced`` by a
   dialect when z3 proves that the folded constraints that dialect honours, with the
   types, imply it (types ∧ C ∧ ¬P unsat) and no sampled output satisfying them fails
   the real predicate; ``residual`` when z3 finds an output that passes the schema
   and fails it; ``unknown`` otherwise (opaque, assumptions, timeouts). Everything
   not proved stays residual; enforced predicates still run after decoding (a
   provider may not honour its schema), and a violation of one is the provider's
   fault, not the model's.

Dialects (what the provider's decoder is known to honour):

* ``json_schema``: a full JSON Schema decoder (vLLM's guided decoding, Outlines);
* ``openai_strict``: OpenAI's strict structured outputs: no ``minLength``/
  ``maxLength``/``const`` (an ``enum`` of one replaces ``const``);
* ``llama_cpp``: llama.cpp's server (``{"type": "json_object", "schema": S}``),
  whose grammar honours ``enum``, ``minLength``/``maxLength`` and ``minItems``/
  ``maxItems`` but silently ignores ``minimum``/``maximum`` and the exclusive bounds
  (those stay in the schema sent, and residual), and drops a whole schema whose
  pattern it cannot convert: no pattern is folded for it.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

import z3

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.verifier.checks.model import (
    ContractModel,
    contract_model,
    predicate_assertions,
    type_assertions,
)
from hoare.verifier.checks.samples import samples_of
from hoare.verifier.runtime import finite_folding
from hoare.verifier.runtime.schema_atoms import (
    BOUND_KEYWORDS,
    atoms,
    keyword_holds,
    keyword_meaning,
    post_body,
    schema_keyword,
)
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.solve.context import in_fresh_context
from hoare.verifier.solve.solver import Assertion, SolverOptions, solve
from hoare.verifier.translate.values import (
    SModel,
)

__all__ = ["DIALECTS", "Compiled", "Folded", "compile_contract"]

DIALECTS = ("json_schema", "openai_strict", "llama_cpp")
# the keywords each dialect's decoder honours (what a residual proof may rely on)
_HONOURED: dict[str, frozenset[str]] = {
    "json_schema": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                              "enum", "minLength", "maxLength", "pattern", "minItems",
                              "maxItems"}),
    "openai_strict": frozenset({"minimum", "maximum", "exclusiveMinimum",
                                "exclusiveMaximum", "enum", "pattern", "minItems",
                                "maxItems"}),
    "llama_cpp": frozenset({"enum", "minLength", "maxLength", "minItems", "maxItems"}),
}
# the folded keywords sent to each dialect (llama.cpp: no pattern, which could make it
# drop the whole schema; OpenAI strict: no minLength/maxLength, which it refuses)
_ALL = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum",
                  "minLength", "maxLength", "pattern", "minItems", "maxItems"})
_SENT: dict[str, frozenset[str]] = {
    "json_schema": _ALL,
    "openai_strict": _ALL - {"minLength", "maxLength"},
    "llama_cpp": _ALL - {"pattern"},
}
_SAMPLES = 400  # sampled outputs replayed against each proof


@dataclass(frozen=True)
class Folded:
    """One constraint of the schema drawn from a post-condition."""

    field: str
    keyword: str
    value: Any
    predicate: str  # the post-condition it was read from

    def text(self) -> str:
        return f"{self.field}: {self.keyword} {self.value!r}"


@dataclass
class Compiled:
    """A contract's schema for one dialect, and what it proves."""

    contract: str
    dialect: str
    schema: dict[str, Any]
    folded: list[Folded] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "what: why"
    enforced: dict[str, str] = field(default_factory=dict)  # predicate -> how
    residual: dict[str, str] = field(default_factory=dict)  # predicate -> why
    unknown: dict[str, str] = field(default_factory=dict)
    # the finite-domain fold (an ``anyOf`` of branches, or per-field enums), said as text
    finite: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"contract": self.contract, "dialect": self.dialect, "schema": self.schema,
                "folded": [f.text() for f in self.folded] + self.finite,
                "dropped": self.dropped,
                "enforced_by_schema": self.enforced, "residual": self.residual,
                "unknown": self.unknown}


def has_candidates(desc: ContractDescription) -> bool:
    """Whether a post-condition reads as a constraint JSON Schema can say: read from
    the source alone, no z3. When none does, the folded schema is the type's schema,
    so a call need not compile it (z3 stays off the run-time path)."""
    if desc.output.wrapped:
        return False
    finite: dict[str, list[Any]] | None = None
    for source in desc.post:
        found = post_body(source)
        if found is not None and next(atoms(*found), None) is not None:
            return True
        if found is not None and not source.takes_input and not source.is_method:
            if finite is None:
                try:
                    finite = finite_folding.finite_fields(
                        desc.output.model, desc.output.schema,
                        finite_folding.MAX_COMBINATIONS)
                except Exception:
                    finite = {}
            if finite and finite_folding.reads_only(source, *found, finite)[0]:
                return True
    return False


COMPILE_SECONDS = 3.0  # the whole compile's time, proofs included (a contract's first call)


class _Clock:
    """The compile's time budget: each z3 query gets at most what is left of it."""

    def __init__(self, options: SolverOptions, seconds: float) -> None:
        self.options = options
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def left(self) -> SolverOptions | None:
        """Options for the next query, or None when the budget is spent."""
        remaining_ms = int((self.deadline - time.monotonic()) * 1000)
        if remaining_ms < 10:
            return None
        return replace(self.options, timeout_ms=min(self.options.timeout_ms, remaining_ms))

    def spent(self) -> str:
        return f"not tried: the compile's time budget ({self.seconds:g} s) was spent"


@in_fresh_context
def compile_contract(desc: ContractDescription, dialect: str = "json_schema",
                     options: SolverOptions | None = None,
                     seconds: float = COMPILE_SECONDS) -> Compiled:
    """The output schema of ``desc`` with the post-conditions folded in, for
    ``dialect``, and which post-conditions it enforces (see the module docstring).
    ``seconds`` bounds the whole compile: what is not proved in time is not folded (or
    stays residual), which is always sound; it runs at a contract's first call."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    clock = _Clock(options or SolverOptions(timeout_ms=2000), seconds)
    schema = copy.deepcopy(desc.output.schema)
    compiled = Compiled(desc.name, dialect, schema)
    cm = contract_model(desc)
    root = cm.output.root
    if not isinstance(root, SModel):
        compiled.dropped.append("the output is not a model: nothing folded")
        return compiled
    fields = root.fields
    properties = schema.get("properties", {})
    context = [a for typed in (cm.output, cm.used) for a in type_assertions(typed)]
    posts = predicate_assertions(cm.post)
    guesses: list[tuple[str, str, Any, PredicateSource]] = []
    for t in cm.post:
        found = post_body(t.source)
        if found is None:
            continue
        expr, param = found
        if cm.output.spec.wrapped:  # ``-> int``: the predicate reads the value itself
            continue
        for name, raw, value in atoms(expr, param):
            guesses.append((name, raw, value, t.source))
    samples = _sampled_outputs(cm)
    folded: list[tuple[Folded, z3.BoolRef]] = []
    for name, raw, value, source in guesses:
        sym = fields.get(name)
        what = f"{name}: {raw} {value!r} (from {source.id})"
        if sym is None or name not in properties:
            compiled.dropped.append(f"{what}: not a field of the output")
            continue
        blocker = finite_folding.model_blocker(cm.desc.output.model) or \
            finite_folding.field_blocker(cm.desc.output.model, name)
        if blocker is not None:
            compiled.dropped.append(f"{what}: {blocker}")
            continue
        keyword = schema_keyword(sym, raw)
        meaning = keyword_meaning(sym, keyword, value) if keyword is not None else None
        if keyword is None or meaning is None:
            compiled.dropped.append(f"{what}: not expressible for a field of this type")
            continue
        target = properties[name]
        if not isinstance(target, dict) or "$ref" in target or "anyOf" in target \
                or "allOf" in target:
            compiled.dropped.append(f"{what}: the field's schema is a reference or a union")
            continue
        if _omitted_unknown(cm, name, target):
            compiled.dropped.append(f"{what}: the field's default is not a JSON value in its "
                                    f"schema (a default_factory): an omitted key would not "
                                    f"be bound by the schema")
            continue
        options = clock.left()
        if options is None:
            compiled.dropped.append(f"{what}: {clock.spent()}")
            continue
        proof = solve(context + posts + [Assertion("not C", z3.Not(meaning), "goal")],
                      options)
        if proof.status != "unsat":
            compiled.dropped.append(f"{what}: not proved implied by the post-conditions "
                                    f"({proof.status})")
            continue
        if any(ok and not keyword_holds(keyword, value, getattr(out, name, None))
               for out, ok in samples):
            compiled.dropped.append(f"{what}: an output the contract accepts breaks it")
            continue
        folded.append((Folded(name, keyword, value, source.id), meaning))
    honoured = _HONOURED[dialect]
    sent = []
    for item, meaning in folded:
        if _schema_keyword(item.keyword) not in _SENT[dialect]:
            compiled.dropped.append(f"{item.text()}: not sent to {dialect} "
                                    f"({_WHY_NOT_SENT[dialect]})")
        elif _apply(properties[item.field], item, compiled):
            sent.append((item, meaning))
    folded = sent
    compiled.folded = [item for item, _ in folded]
    on_field: dict[str, list[tuple[str, Any]]] = {}
    for item, _ in folded:
        on_field.setdefault(item.field, []).append((item.keyword, item.value))
    _bind_defaults(schema, on_field, compiled)
    ranged: set[str] = set()
    if dialect == "llama_cpp":  # its grammar ignores bounds and honours enum
        compiled.schema, paths = finite_folding.integer_ranges_as_enums(
            compiled.schema, drop=frozenset({"pattern"}))
        schema = compiled.schema
        properties = schema.get("properties", {})
        ranged = {p[len("properties."):] for p in paths if p.startswith("properties.")
                  and p.count(".") == 1}
        compiled.finite.extend(f"{p}: integer range sent as an enum" for p in paths)
    honoured_items = [(item, m) for item, m in folded
                      if _schema_keyword(item.keyword) in honoured
                      or (item.field in ranged
                          and item.keyword in BOUND_KEYWORDS.values())]
    fold = _fold_finite(cm, compiled, schema, clock)
    # what a value decoded from text the schema admits satisfies (a number's text is
    # rounded to a double: ``exclusiveMinimum 5`` admits 5.0000000000000001, read as 5.0)
    decoded = [keyword_meaning(fields[item.field], item.keyword, item.value, decoded=True)
               for item, _ in honoured_items]
    _prove_residual(cm, compiled, context, [m for m in decoded if m is not None], samples,
                    honoured_items, clock)
    if fold is not None:
        _claim_finite(compiled, fold)
    if dialect == "openai_strict":
        _strict_subset(compiled)
    return compiled


_FILLERS = 3  # validated outputs whose other fields fill each enumerated combination


def _fold_finite(cm: ContractModel, compiled: Compiled, schema: dict[str, Any],
                 clock: _Clock) -> finite_folding.FiniteFold | None:
    """Fold the post-conditions over finite-domain fields (``finite_folding``): an
    ``anyOf`` of branches where the dialect allows one at the root, per-field enums
    (the projections) in OpenAI's strict subset, which needs an object there."""
    if cm.output.spec.wrapped:  # ``-> bool``: predicates see the value, not the wrapper
        return None
    posts = []
    for t in cm.post:
        found = post_body(t.source)
        if found is not None:
            posts.append((t.source, found[0], found[1]))
    if not posts or not isinstance(schema.get("properties"), dict) \
            or schema.get("type") != "object":
        return None
    if clock.left() is None:
        compiled.dropped.append(f"finite-domain fold: {clock.spent()}")
        return None
    fillers: list[dict[str, Any]] = []
    try:
        for _, value in samples_of(cm, "output"):
            data = value.model_dump(mode="json")
            if data not in fillers:
                fillers.append(data)
            if len(fillers) >= _FILLERS:
                break
    except Exception:  # no sample: nothing to fill the other fields with
        pass
    fold = finite_folding.fold_finite(cm.desc.output.model, schema, posts, fillers,
                                      clock.deadline)
    compiled.dropped.extend(fold.dropped)
    if not fold.boxes:
        return None
    if compiled.dialect == "openai_strict" or len(fold.boxes) == 1:
        if len(fold.boxes) > 1:
            compiled.dropped.append(f"{fold.text()}: not sent to openai_strict (its subset "
                                    f"needs an object at the root, not an anyOf); each "
                                    f"field's accepted values sent as an enum")
        defaults = {name: node["default"] for name, node in schema["properties"].items()
                    if isinstance(node, dict) and "default" in node}
        for name, values in fold.projections().items():
            if not fold.narrows(name):
                continue
            target = schema["properties"][name]
            if isinstance(target, dict) and "$ref" not in target:
                old = target.get("enum")
                keys = {finite_folding.key(v) for v in values}
                target["enum"] = values if old is None else \
                    [v for v in old if finite_folding.key(v) in keys]
            else:
                schema["properties"][name] = {"enum": values}
        compiled.finite.append(f"{', '.join(fold.fields)}: each field's accepted values "
                               f"as an enum (from {', '.join(fold.predicates)})")
        _bind_defaults(schema, {name: [("enum", values)] for name, values
                                in fold.projections().items()}, compiled, defaults)
        return fold
    compiled.schema = finite_folding.branches_schema(schema, fold)
    compiled.finite.append(fold.text())
    return fold


def _claim_finite(compiled: Compiled, fold: finite_folding.FiniteFold) -> None:
    """The folded post-conditions' status, decided by the enumeration (exact)."""
    per_field = compiled.dialect == "openai_strict" or len(fold.boxes) == 1
    if per_field:
        exact, example = fold.projections_exact()
        if not exact:  # each post keeps z3's verdict; the enums alone do not decide it
            compiled.finite.append(f"{', '.join(fold.fields)}: the per-field enums allow "
                                   f"{example}, which the folded post-conditions reject")
            return
    how = "per-field enums" if per_field else "anyOf branches"
    for name in fold.predicates:
        compiled.residual.pop(name, None)
        compiled.unknown.pop(name, None)
        compiled.enforced.setdefault(name, f"proved by enumeration: the {how} admit exactly "
                                     f"the {len(fold.accepted)} accepted of "
                                     f"{fold.combinations} combinations of "
                                     f"{', '.join(fold.fields)}")


def _omitted_unknown(cm: ContractModel, name: str, prop: dict[str, Any]) -> bool:
    """Whether leaving ``name``'s key out gives a value the schema cannot be checked
    against (a default factory, or no default said in the schema)."""
    info = cm.desc.output.model.model_fields.get(name)
    if info is None or info.is_required():
        return False
    return info.default_factory is not None or "default" not in prop


def _bind_defaults(schema: dict[str, Any], constraints: dict[str, list[tuple[str, Any]]],
                   compiled: Compiled, defaults: dict[str, Any] | None = None) -> None:
    """A folded constraint binds a key only when it is sent: an optional field whose
    default breaks the constraints folded on it is made required (an answer leaving it
    out gets that default, which every post-condition accepting output rules out), so
    the schema enforces what it is proved to."""
    required = schema.get("required", [])
    for name, items in constraints.items():
        prop = schema.get("properties", {}).get(name)
        if defaults is not None and name in defaults:
            prop = {"default": defaults[name]}  # said before the property was replaced
        if name in required or not isinstance(prop, dict) or "default" not in prop:
            continue
        default = prop["default"]
        if not all(finite_folding.key(default) in {finite_folding.key(v) for v in value}
                   if keyword == "enum" else keyword_holds(keyword, value, default)
                   for keyword, value in items):
            required = [*required, name]
            compiled.finite.append(f"{name}: required (its default "
                                   f"{prop['default']!r:.40} breaks what was folded)")
    if required:
        schema["required"] = required


def _schema_keyword(keyword: str) -> str:
    return "pattern" if keyword in ("startswith", "endswith") else keyword


_WHY_NOT_SENT = {
    "json_schema": "",
    "openai_strict": "not in OpenAI's strict subset",
    "llama_cpp": "a pattern its grammar cannot convert makes it drop the whole schema",
}


def _apply(target: dict[str, Any], item: Folded, compiled: Compiled) -> bool:
    """Put one folded constraint into a field's schema, the strongest bound winning;
    False when it cannot be (said in ``dropped``)."""
    keyword, value = item.keyword, item.value
    if keyword in ("minimum", "exclusiveMinimum", "minLength", "minItems"):
        old = target.get(keyword)
        target[keyword] = value if old is None else max(old, value)
    elif keyword in ("maximum", "exclusiveMaximum", "maxLength", "maxItems"):
        old = target.get(keyword)
        target[keyword] = value if old is None else min(old, value)
    elif keyword == "enum":
        old = target.get("enum")
        target["enum"] = list(value) if old is None else [v for v in old if v in value]
    elif keyword in ("startswith", "endswith"):
        literal = _regex_literal(value)
        pattern = f"^{literal}[\\s\\S]*$" if keyword == "startswith" else \
            f"^[\\s\\S]*{literal}$"
        if "pattern" in target:  # two patterns cannot be joined in JSON Schema
            compiled.dropped.append(f"{item.text()}: the field already has a pattern")
            return False
        target["pattern"] = pattern
    return True


def _regex_literal(text: str) -> str:
    """``text`` as a regex matching itself in ECMA-262 and the decoders' dialects:
    each syntax character escaped with a backslash, nothing else."""
    return re.sub(r"([\\^$.*+?()\[\]{}|/])", r"\\\1", text)


def _prove_residual(cm: ContractModel, compiled: Compiled, context: list[Assertion],
                    enforced: list[z3.BoolRef], samples: list[tuple[Any, bool]],
                    honoured: list[tuple[Folded, z3.BoolRef]], clock: _Clock) -> None:
    schema = [Assertion(f"schema {i}", m, "schema") for i, m in enumerate(enforced)]
    for t in cm.post:
        name = t.source.id
        if t.opaque is not None:
            compiled.unknown[name] = f"not translated: {t.opaque}"
            continue
        if t.assumptions or t.havoc:
            compiled.unknown[name] = "the translation rests on assumptions: " + \
                "; ".join([*t.assumptions, *t.havoc])[:300]
            continue
        if not enforced:
            compiled.residual[name] = "nothing folded that this dialect honours"
            continue
        options = clock.left()
        if options is None:
            compiled.unknown[name] = clock.spent()
            continue
        defs = [Assertion(None, d, "def") for d in t.defs]
        query = solve(context + schema + defs + [Assertion("fails", t.fails(), "goal")],
                      options)
        if query.status == "sat":
            compiled.residual[name] = "an output the schema allows fails it"
        elif query.status == "unsat":
            breaking = _sampled_counterexample(t.source, honoured, samples)
            if breaking is not None:
                compiled.unknown[name] = f"z3 proved it, a sample refutes it: {breaking}"
            else:
                compiled.enforced[name] = "proved: the schema and the types imply it"
        else:
            compiled.unknown[name] = f"z3: {query.status}"


def _sampled_outputs(cm: ContractModel) -> list[tuple[Any, bool]]:
    """Validated output samples with whether every post-condition (not reading the
    input) accepts them: the concrete check of each proof."""
    out: list[tuple[Any, bool]] = []
    sources = [t.source for t in cm.post if not t.source.takes_input]
    if len(sources) != len(cm.post):
        return out  # posts reading the input: z3 alone decides
    try:
        for _, value in samples_of(cm, "output"):
            out.append((value, all(call_predicate(s, None, value).passed
                                   for s in sources if not s.is_method)))
            if len(out) >= _SAMPLES:
                break
    except Exception:
        return out
    return out


def _sampled_counterexample(source: PredicateSource, honoured: list[tuple[Folded, z3.BoolRef]],
                            samples: list[tuple[Any, bool]]) -> str | None:
    if source.takes_input or source.is_method:
        return None
    for value, _ in samples:
        if all(keyword_holds(f.keyword, f.value, getattr(value, f.field, None))
               for f, _ in honoured) \
                and not call_predicate(source, None, value).passed:
            return repr(value)[:200]
    return None


def _strict_subset(compiled: Compiled) -> None:
    """OpenAI's strict subset: ``const`` becomes an ``enum`` of one; the types'
    ``minLength``/``maxLength`` are dropped (said in ``dropped``: pydantic still checks
    them); every object lists all its properties as required (a defaulted field may
    always be sent with its value) and forbids others (pydantic ignores or refuses
    extra keys, so no value the contract accepts is lost), except an object whose
    model keeps them (``extra='allow'``, ``additionalProperties`` not false): forbidding
    them could turn away every accepted output, so that schema stays out of the subset
    (the engine then does not ask for strict mode)."""
    def visit(node: Any, path: str) -> None:
        if isinstance(node, list):
            for index, item in enumerate(node):
                visit(item, f"{path}[{index}]")
            return
        if not isinstance(node, dict):
            return
        if "const" in node:
            node["enum"] = [node.pop("const")]
        if isinstance(node.get("properties"), dict):
            node["required"] = list(node["properties"])
            if node.get("additionalProperties", False) is False:
                node["additionalProperties"] = False
            else:  # extra='allow': the extra keys are kept, and predicates may read them
                compiled.dropped.append(f"{path or '(root)'}: additionalProperties false "
                                        f"not set (the model keeps extra keys): the schema "
                                        f"is not in OpenAI's strict subset")
        for keyword in ("minLength", "maxLength", "default"):
            if keyword in node:
                value = node.pop(keyword)
                if keyword != "default":
                    compiled.dropped.append(f"{path or '(root)'}: {keyword} {value!r}: not "
                                            f"in OpenAI's strict subset")
        for key, value in node.items():
            visit(value, f"{path}.{key}" if path else key)

    visit(compiled.schema, "")

