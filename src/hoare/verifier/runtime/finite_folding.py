"""Post-conditions over finite-domain fields, compiled into an ``anyOf`` of object
branches that a decoder enforces exactly (issue 34).

JSON Schema cannot say ``(o.sentiment == "positive") == (o.stars >= 4)``, but when
every field such a post-condition reads has a finite domain (an ``enum``/``Literal``,
a ``bool``, an ``int`` with both bounds), the accepted combinations can be listed:
the schema becomes an ``anyOf`` of branches, each the output's object schema with
those fields narrowed to ``enum``s (the other fields keep their own schema). llama.cpp's
grammar and any full JSON Schema decoder enforce that exactly.

**Exact, by enumeration.** Each combination of the fields' values is put into a JSON
output (the other fields taken from validated sample outputs), validated by pydantic
and judged by the REAL post-conditions: the branches cover exactly the combinations
that pass, so the schema never turns away an answer the contract accepts and every
answer it lets through passes those post-conditions. A post-condition is folded only
when its evaluation cannot depend on anything else:

* its body reads the output only as ``o.<field>`` of finite fields (then methods and
  attributes of those values, constants and a few pure builtins); nothing from the
  input, ``self``, globals or closures;
* the output model has no model validator, custom ``__init__``/``model_post_init``/
  attribute hooks, and the finite fields have no validator, alias or core-schema
  feature the verifier does not model; a defaulted field's omission is enumerated as
  a value of its own (and must agree with its default);
* every combination gets the same verdict with each of the sample fillers.

Anything else is left to the residual (not folded, said why).
"""

from __future__ import annotations

import ast
import builtins
import copy
import itertools
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from hoare.declaration.description import PredicateSource
from hoare.engines.capabilities import integer_range, integer_ranges_as_enums
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.metadata import (
    core_schema_gaps,
    custom_behaviour,
    field_validator_names,
)

__all__ = [
    "MAX_BRANCHES",
    "MAX_COMBINATIONS",
    "FiniteFold",
    "field_blocker",
    "fold_finite",
    "integer_ranges_as_enums",
    "key",
    "reads_only",
]

MAX_COMBINATIONS = 256  # combinations enumerated for one fold (each a pydantic validation)
MAX_BRANCHES = 64  # anyOf branches sent (a decoder's grammar grows with each)
_OMITTED = ("omitted",)  # the domain value "the key is left out" (a defaulted field)
_PURE_BUILTINS = frozenset({"len", "abs", "min", "max", "int", "str", "bool", "float",
                            "round", "sorted", "set", "frozenset", "tuple", "list", "any",
                            "all", "sum", "isinstance"})
_ALLOWED_NODES = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
                  ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv,
                  ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In,
                  ast.NotIn, ast.Is, ast.IsNot, ast.IfExp, ast.Constant, ast.Tuple, ast.List,
                  ast.Set, ast.Load, ast.Name, ast.Attribute, ast.Call)


def key(value: Any) -> tuple[str, Any]:
    """A JSON value's identity as JSON Schema's ``enum`` compares it (``true`` is not
    ``1``; ``1`` is ``1.0``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)
    return ("json", json.dumps(value, sort_keys=True))


@dataclass
class FiniteFold:
    """The outcome of folding the finite-domain post-conditions of one contract."""

    fields: list[str] = field(default_factory=list)  # the enumerated fields, in order
    predicates: list[str] = field(default_factory=list)  # the folded post-conditions
    boxes: list[list[list[Any]]] = field(default_factory=list)  # per branch, per field
    combinations: int = 0  # enumerated
    accepted: set[tuple[tuple[str, Any], ...]] = field(default_factory=set)
    domains: dict[str, list[Any]] = field(default_factory=dict)  # each field's, in order
    dropped: list[str] = field(default_factory=list)  # "what: why"

    def text(self) -> str:
        return (f"anyOf of {len(self.boxes)} branch(es) over {', '.join(self.fields)} "
                f"(from {', '.join(self.predicates)}; {len(self.accepted)} of "
                f"{self.combinations} combinations accepted)")

    def projections(self) -> dict[str, list[Any]]:
        """Each field's accepted values (what a dialect without ``anyOf`` can say)."""
        out: dict[str, list[Any]] = {}
        for index, name in enumerate(self.fields):
            seen = {key(v) for box in self.boxes for v in box[index]}
            out[name] = [v for v in self.domains[name]
                         if v is not _OMITTED and key(v) in seen]
        return out

    def narrows(self, name: str) -> bool:
        """Whether some value of ``name``'s domain is in no accepted combination."""
        return len(self.projections()[name]) < len(
            [v for v in self.domains[name] if v is not _OMITTED])

    def projections_exact(self) -> tuple[bool, str | None]:
        """Whether the product of the projections is exactly the accepted set (then
        per-field ``enum``s enforce the folded post-conditions), else a combination
        they let through that fails."""
        columns = [list({key(v): v for box in self.boxes for v in box[i]}.values())
                   for i in range(len(self.fields))]
        for combo in itertools.product(*columns):
            if tuple(key(v) for v in combo) not in self.accepted:
                shown = ", ".join(f"{n}={'(omitted)' if v is _OMITTED else repr(v)}"
                                  for n, v in zip(self.fields, combo, strict=True))
                return False, shown
        return True, None


# -- what a post-condition reads ---------------------------------------------------------

def reads_only(source: PredicateSource, body: ast.expr, param: str,
               finite: Iterable[str]) -> tuple[set[str] | None, str]:
    """The output fields ``body`` reads, when its value is a function of those fields'
    values alone (``None`` and why not otherwise)."""
    allowed = set(finite)
    fn = source.fn
    free_globals = getattr(fn, "__globals__", {})
    closure = set(getattr(getattr(fn, "__code__", None), "co_freevars", ()) or ())
    read: set[str] = set()
    for node in ast.walk(body):
        if not isinstance(node, _ALLOWED_NODES):
            return None, f"uses {type(node).__name__}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == param:
                if node.attr not in allowed:
                    return None, f"reads {param}.{node.attr}, not a finite-domain field"
                read.add(node.attr)
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            return None, f"reads {node.attr}"
        if isinstance(node, ast.Name) and node.id != param:
            if node.id not in _PURE_BUILTINS or node.id in free_globals \
                    or node.id in closure or not hasattr(builtins, node.id):
                return None, f"reads the name {node.id!r}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == param:
            return None, "calls the output"
    for node in ast.walk(body):  # the output itself only through ``o.<field>``
        if isinstance(node, ast.Name) and node.id == param:
            parent_ok = any(isinstance(p, ast.Attribute) and p.value is node
                            for p in ast.walk(body))
            if not parent_ok:
                return None, f"passes {param} itself on"
    if not read:
        return None, "reads no field of the output"
    return read, ""


# -- the fields' finite domains -----------------------------------------------------------

def _resolve(schema: dict[str, Any], node: Any) -> Any:
    """``node`` with a local ``$ref`` (``#/$defs/X``) followed, once."""
    if isinstance(node, dict) and isinstance(node.get("$ref"), str) \
            and node["$ref"].startswith("#/$defs/") and len(node) <= 3:
        target = schema.get("$defs", {}).get(node["$ref"][len("#/$defs/"):])
        if isinstance(target, dict):
            return target
    return node


def field_domain(schema: dict[str, Any], prop: Any, limit: int) -> list[Any] | None:
    """The JSON values a field's type schema allows, when finite and at most ``limit``."""
    node = _resolve(schema, prop)
    if not isinstance(node, dict) or any(k in node for k in ("anyOf", "oneOf", "allOf")):
        return None
    if "enum" in node and isinstance(node["enum"], list):
        values = node["enum"]
    elif "const" in node:
        values = [node["const"]]
    elif node.get("type") == "boolean":
        values = [False, True]
    elif node.get("type") == "integer":
        in_range = integer_range(node, limit)
        if in_range is None:
            return None
        values = in_range
    else:
        return None
    if not values or len(values) > limit or any(
            isinstance(v, float) or not isinstance(v, (str, int, bool)) for v in values):
        return None
    unique: dict[tuple[str, Any], Any] = {}
    for value in values:
        unique.setdefault(key(value), value)
    return list(unique.values())


def model_blocker(cls: type) -> str | None:
    """Why instances of ``cls`` may not be a function of their fields' JSON values."""
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        return "the output is not a pydantic model"
    decorators = getattr(cls, "__pydantic_decorators__", None)
    if getattr(decorators, "model_validators", None) or \
            getattr(decorators, "root_validators", None):
        return f"{cls.__name__} has a model validator"
    custom = custom_behaviour(cls, BaseModel)
    if custom is not None:
        return f"{cls.__name__} defines {custom}"
    for klass in cls.__mro__:
        if klass is BaseModel or not issubclass(klass, BaseModel):
            continue
        hook = klass.__dict__.get("model_post_init")
        if hook is not None and getattr(hook, "__name__", "") != "init_private_attributes":
            return f"{klass.__name__}.model_post_init may change the fields"
    if cls.model_config.get("alias_generator") is not None:
        return f"{cls.__name__} has an alias generator"
    if "*" in core_schema_gaps(cls):
        return f"{cls.__name__}: {core_schema_gaps(cls)['*']}"
    return None


_STR_TRANSFORMS = ("strip_whitespace", "to_lower", "to_upper")
_CHANGING_FUNCTIONS = ("function-before", "function-wrap", "function-plain")


def field_blocker(cls: type[BaseModel], name: str) -> str | None:
    """Why the JSON value a decoder writes under the key ``name`` may not be what the
    predicates read as ``o.<name>`` (then no schema constraint on that key says
    anything about the field): the key is another field's alias, or pydantic changes
    the value on its way in (a validator running before the type's, a field
    validator, stripping or case changes of a string). The schema constrains the
    text; the post-conditions judge the validated value."""
    info = cls.model_fields.get(name)
    if info is None:
        return f"{name} is not a field of {cls.__name__}"
    if info.alias not in (None, name) or info.validation_alias is not None:
        return f"{name} has an alias: its JSON key is another name"
    for other, field_info in cls.model_fields.items():
        choices = field_info.validation_alias
        if other != name and ((choices is not None and not isinstance(choices, str))
                              or name in (choices, field_info.alias)):
            return f"{other} may be read from the key {name!r}"
    gaps = core_schema_gaps(cls)
    if name in gaps or "*" in gaps:
        return gaps.get(name) or gaps["*"]
    validators = field_validator_names(cls)
    if validators.get(name) or validators.get("*"):
        return f"{name} has a field validator: pydantic may change the value"
    config = cls.model_config
    for node in _core_nodes(_field_core_schema(cls, name)):
        kind = node.get("type")
        if kind in _CHANGING_FUNCTIONS:
            return f"{name} has a validator running before its type's: the value decoded " \
                   f"is not the value checked"
        if kind == "str" and any(node.get(t) or config.get(f"str_{t}")
                                 for t in _STR_TRANSFORMS):
            return f"pydantic strips or changes the case of {name} after decoding"
    return None


def _field_core_schema(cls: type[BaseModel], name: str) -> Any:
    """``name``'s compiled core schema, with the model's definitions to resolve refs."""
    schema: Any = cls.__pydantic_core_schema__
    definitions = {d["ref"]: d for d in schema.get("definitions", ())} \
        if schema.get("type") == "definitions" else {}
    if schema.get("type") == "definitions":
        schema = schema["schema"]
    while schema.get("type") == "definition-ref" and schema["schema_ref"] in definitions:
        schema = definitions[schema["schema_ref"]]
    fields = schema.get("schema", {}).get("fields", {})
    return (fields[name]["schema"] if name in fields else None, definitions)


def _core_nodes(found: Any) -> Iterable[dict[str, Any]]:
    """Every schema node under a field's core schema (references followed once)."""
    root, definitions = found
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if isinstance(node, tuple):  # a union's (schema, label) choice
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if "type" not in node:  # a tagged union's choices by tag
            stack.extend(node.values())
            continue
        if node.get("type") == "definition-ref":
            ref = node.get("schema_ref")
            if ref not in seen and ref in definitions:
                seen.add(ref)
                stack.append(definitions[ref])
            continue
        yield node
        for key in ("schema", "items_schema", "choices", "keys_schema", "values_schema"):
            if key in node:
                stack.append(node[key])


def finite_fields(cls: type[BaseModel], schema: dict[str, Any], limit: int
                  ) -> dict[str, list[Any]]:
    """The output fields whose values are a finite list the fold may enumerate
    (a defaulted field's list ends with ``_OMITTED``)."""
    properties = schema.get("properties", {})
    out: dict[str, list[Any]] = {}
    for name, info in cls.model_fields.items():
        if field_blocker(cls, name) is not None or name not in properties:
            continue
        domain = field_domain(schema, properties[name], limit)
        if domain is None:
            continue
        if not info.is_required():
            prop = properties[name]
            if info.default_factory is not None or not isinstance(prop, dict) \
                    or "default" not in prop \
                    or key(prop["default"]) not in {key(v) for v in domain}:
                continue  # omitted, it takes a value outside the enumerated domain
            domain = [*domain, _OMITTED]
        out[name] = domain
    return out


# -- the fold ------------------------------------------------------------------------------

def fold_finite(cls: type[BaseModel], schema: dict[str, Any],
                posts: Sequence[tuple[PredicateSource, ast.expr, str]],
                fillers: Sequence[dict[str, Any]], deadline: float | None = None
                ) -> FiniteFold:
    """Enumerate the finite fields the foldable ``posts`` read and cover the
    combinations every one of them accepts with boxes (see the module docstring)."""
    result = FiniteFold()
    blocker = model_blocker(cls)
    if blocker is not None:
        result.dropped.extend(f"{s.id}: not folded over finite domains: {blocker}"
                              for s, _, _ in posts)
        return result
    domains = finite_fields(cls, schema, MAX_COMBINATIONS)
    candidates: list[tuple[PredicateSource, set[str]]] = []
    for source, body, param in posts:
        if source.takes_input or source.is_method:
            continue  # reads the input or ``self``: not a function of the output alone
        read, why = reads_only(source, body, param, domains)
        if read is None:
            if why.startswith("reads ") and "finite-domain" in why:
                result.dropped.append(f"{source.id}: not folded over finite domains: {why}")
            continue
        candidates.append((source, read))
    if not candidates:
        return result
    chosen: list[PredicateSource] = []
    fields: list[str] = []
    for source, read in candidates:
        trial = fields + sorted(read - set(fields))
        size = 1
        for name in trial:
            size *= len(domains[name])
        if size > MAX_COMBINATIONS:
            result.dropped.append(f"{source.id}: not folded over finite domains: "
                                  f"{size} combinations (at most {MAX_COMBINATIONS})")
            continue
        chosen.append(source)
        fields = trial
    if not chosen:
        return result
    valid_fillers = [f for f in fillers if _validates(cls, f)]
    if not valid_fillers:
        result.dropped.extend(f"{s.id}: not folded over finite domains: no valid output "
                              f"to fill the other fields" for s in chosen)
        return result
    accepted: set[tuple[tuple[str, Any], ...]] = set()
    rows: list[tuple[Any, ...]] = []
    combos = list(itertools.product(*(domains[n] for n in fields)))
    for combo in combos:
        if deadline is not None and time.monotonic() > deadline:
            result.dropped.extend(f"{s.id}: not folded over finite domains: the compile's "
                                  f"time budget was spent" for s in chosen)
            return result
        verdicts = {_verdict(cls, filler, fields, combo, chosen) for filler in valid_fillers}
        if len(verdicts) != 1:
            result.dropped.extend(f"{s.id}: not folded over finite domains: the verdict "
                                  f"depends on the other fields" for s in chosen)
            return result
        if verdicts.pop():
            accepted.add(tuple(key(v) for v in combo))
            rows.append(combo)
    # omission must mean the default: the same verdict, row by row
    for index, name in enumerate(fields):
        if _OMITTED not in domains[name]:
            continue
        default = schema["properties"][name]["default"]
        for combo in combos:
            if combo[index] is _OMITTED:
                twin = tuple(key(default) if i == index else key(v)
                             for i, v in enumerate(combo))
                if (tuple(key(v) for v in combo) in accepted) != (twin in accepted):
                    result.dropped.extend(f"{s.id}: not folded over finite domains: "
                                          f"leaving {name} out is not its default"
                                          for s in chosen)
                    return result
    if not rows:
        result.dropped.extend(f"{s.id}: not folded over finite domains: no combination "
                              f"passes (the contract accepts no output)" for s in chosen)
        return result
    boxes = cover(rows, len(fields))
    if len(boxes) > MAX_BRANCHES:
        result.dropped.extend(f"{s.id}: not folded over finite domains: {len(boxes)} "
                              f"branches (at most {MAX_BRANCHES})" for s in chosen)
        return result
    covered = {tuple(key(v) for v in combo) for box in boxes
               for combo in itertools.product(*box)}
    if covered != accepted:  # the cover is exact by construction; checked anyway
        raise AssertionError("finite fold: the branches do not cover the accepted set")
    result.fields, result.predicates = fields, [s.id for s in chosen]
    result.boxes, result.combinations, result.accepted = boxes, len(combos), accepted
    result.domains = {name: domains[name] for name in fields}
    return result


def _validates(cls: type[BaseModel], data: dict[str, Any]) -> bool:
    try:
        cls.model_validate_json(json.dumps(data))
        return True
    except (ValidationError, ValueError, TypeError):
        return False


def _verdict(cls: type[BaseModel], filler: dict[str, Any], fields: list[str],
             combo: tuple[Any, ...], posts: list[PredicateSource]) -> bool:
    """Whether the output with ``combo`` in ``fields`` (the rest from ``filler``),
    validated by pydantic from JSON, passes every post-condition in ``posts``."""
    data = dict(filler)
    for name, value in zip(fields, combo, strict=True):
        if value is _OMITTED:
            data.pop(name, None)
        else:
            data[name] = value
    try:
        value = cls.model_validate_json(json.dumps(data))
    except (ValidationError, ValueError, TypeError):
        return False
    return all(call_predicate(s, None, value).passed for s in posts)


def cover(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[list[Any]]]:
    """Boxes (a list of values per column) whose union is exactly ``rows``: a product
    of its columns is one box; otherwise split on the first column, cover each part,
    and join the parts whose rest is the same box."""
    columns = [list({key(r[i]): r[i] for r in rows}.values()) for i in range(width)]
    keys = {tuple(key(v) for v in r) for r in rows}
    size = 1
    for column in columns:
        size *= len(column)
    if size == len(keys):
        return [columns]
    if width == 1:  # unreachable: one column is always a product
        return [[[r[0]] for r in rows]]
    parts: dict[tuple[str, Any], tuple[Any, list[tuple[Any, ...]]]] = {}
    for row in rows:
        parts.setdefault(key(row[0]), (row[0], []))[1].append(row[1:])
    merged: dict[str, tuple[list[Any], list[list[Any]]]] = {}
    for head, rest in parts.values():
        for box in cover(rest, width - 1):
            signature = json.dumps([sorted(map(repr, map(key, c))) for c in box])
            merged.setdefault(signature, ([], box))[0].append(head)
    return [[heads, *box] for heads, box in merged.values()]


# -- the schema ----------------------------------------------------------------------------

def branches_schema(schema: dict[str, Any], fold: FiniteFold) -> dict[str, Any]:
    """``schema`` (an object at the root) as an ``anyOf`` of its object with the
    folded fields narrowed to each box's values (``$defs`` stay at the root)."""
    base = {k: v for k, v in schema.items() if k not in ("$defs", "title", "description")}
    branches = []
    for box in fold.boxes:
        branch = copy.deepcopy(base)
        required = list(branch.get("required", []))
        for name, values in zip(fold.fields, box, strict=True):
            sent = [v for v in values if v is not _OMITTED]
            own = branch["properties"][name]
            node = _resolve(schema, own)
            if node is own:  # the field's own keywords stay (a conjunction with the enum)
                narrowed = {k: v for k, v in own.items() if k not in ("default", "const")}
            else:  # a reference: its type, said again beside the values
                narrowed = {k: own[k] for k in ("title", "description") if k in own}
                if isinstance(node, dict) and isinstance(node.get("type"), str):
                    narrowed["type"] = node["type"]
            narrowed["enum"] = sent
            branch["properties"][name] = narrowed
            if _OMITTED not in values and name not in required:
                required.append(name)  # left out, it takes a default this box excludes
        if required:
            branch["required"] = required
        branches.append(branch)
    out: dict[str, Any] = {}
    for key in ("title", "description"):
        if key in schema:
            out[key] = schema[key]
    out["anyOf"] = branches
    if "$defs" in schema:
        out["$defs"] = copy.deepcopy(schema["$defs"])
    return out
