"""Stop a streamed answer as soon as it is doomed (``@contract(stream=True)``).

As the answer streams in, its JSON is parsed in partial mode (pydantic-core's
``from_json(allow_partial="trailing-strings")``, the jiter parser pydantic uses). A
top-level field is *complete* once another key follows it, or a top-level comma, or the
object is closed. Each complete
field is validated alone, with its own annotation and constraints
(``validate_assignment``), and each post-condition whose reads are all complete is
evaluated on the fields read so far. The first failure stops the stream; the attempt
is then the type violation "stopped early: <reason>" (spec/pipeline.md §8.10), and
its feedback names the failing field or post-condition.

A stop must never reject an answer the full check would accept, so a stop is only
allowed where the full check cannot say otherwise:

* the output is a pydantic model without model or field validators (a validator
  may read several fields, or change them once all are there; ``Annotated``
  validators included), without aliases (a key the full check reads as another field,
  or ignores, is not judged as the field it names), not frozen and not
  strict (a field is validated in Python mode, which strict mode makes narrower than
  the JSON mode of the full check); otherwise no early stop (the answer is checked in
  full, as without streaming);
* a post-condition is evaluated early only when its code reads the value through
  attributes alone (``v.a``, ``v.b.c``: its reads are ``{a, b}``), governed by the
  contract's policy (no per-predicate policy), and the fields it reads are complete
  and valid: on them the full answer gives it the same arguments.

Not modelled: a key repeated later in the same object (JSON's last one wins in the full
check) is judged on its first occurrence.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    PlainValidator,
    ValidationError,
    WrapValidator,
)

from .description import ContractDescription, PredicateSource
from .models import format_validation_error
from .source import function_node

__all__ = ["EarlyStop", "Plan", "plan_for", "value_reads"]

# validators in a field's Annotated metadata: given ``info.data``, they may read other
# fields, which a field validated alone does not have
_VALIDATORS = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)


def value_reads(source: PredicateSource) -> frozenset[str] | None:
    """The top-level attributes a post-condition reads of its value (None: it uses the
    value in another way, or its source is unknown)."""
    try:
        node = function_node(source.fn)
    except Exception:
        return None
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if source.is_method:
        params = params[1:]
    if not params:
        return None
    name = params[0]
    body = node.body if isinstance(node, ast.Lambda) else node
    attributes: set[str] = set()
    used_plain = False
    parents = {id(child): parent for parent in ast.walk(body)
               for child in ast.iter_child_nodes(parent)}
    for item in ast.walk(body):
        if isinstance(item, ast.Name) and item.id == name:
            parent = parents.get(id(item))
            if isinstance(parent, ast.Attribute) and parent.value is item \
                    and isinstance(parent.ctx, ast.Load):
                attributes.add(parent.attr)
            else:
                used_plain = True  # passed on, compared whole, rebound in a comprehension
    return None if used_plain else frozenset(attributes)


@dataclass(frozen=True)
class Plan:
    """What early stopping may check for one contract (built once per class)."""

    model: type[BaseModel]
    checks: tuple[tuple[PredicateSource, frozenset[str]], ...]


def plan_for(desc: ContractDescription) -> Plan | None:
    """The plan of ``desc``, or None: early stopping cannot be sound for this output."""
    output = desc.output
    if output.wrapped:
        return None  # a native type: no fields to complete one by one
    model = output.model
    decorators = model.__pydantic_decorators__
    if decorators.model_validators or decorators.field_validators or \
            decorators.validators or decorators.root_validators:
        return None
    if "model_post_init" in model.__dict__:
        return None
    config = model.model_config
    if config.get("frozen") or config.get("strict") or any(
            info.frozen or any(getattr(m, "strict", None) for m in info.metadata)
            for info in model.model_fields.values()):
        return None  # frozen: no assignment; strict: Python mode is stricter than JSON
    if config.get("alias_generator") or any(
            info.alias or info.validation_alias or any(isinstance(m, _VALIDATORS)
                                                       for m in info.metadata)
            for info in model.model_fields.values()):
        return None  # a key is not its field's name, or a validator may read other fields
    fields = set(model.model_fields)
    checks = []
    for source in desc.post:
        if source.policy is not None:
            continue  # its own policy decides what a failure does: leave it to the kernel
        reads = value_reads(source)
        if reads is not None and reads and reads <= fields:
            checks.append((source, reads))
    return Plan(model, tuple(checks))


def _closes(text: str) -> bool:
    """Is ``text`` a whole JSON object? (After a top-level comma, the object so far closed
    with ``}`` is one: then its last value was complete, a number's last digit included.)"""
    try:
        return isinstance(pydantic_core.from_json(text), dict)
    except ValueError:
        return False


class EarlyStop:
    """The ``Request.watch`` of one generation: called with the text so far, returns a
    reason to stop or None."""

    def __init__(self, plan: Plan, call: Callable[[PredicateSource, object], bool]) -> None:
        self.plan = plan
        self.call = call  # (predicate, partial value) -> passed
        self.done: set[str] = set()
        self.valid: dict[str, object] = {}
        self.checked = 0  # length of the text at the last parse
        self.instance: BaseModel | None = None

    def __call__(self, text: str) -> str | None:
        # parse only when a field may have ended since the last look
        fresh = text[self.checked:]
        if "," not in fresh and "}" not in fresh and '"' not in fresh:
            return None
        self.checked = len(text)
        start = text.find("{")
        if start < 0:
            return None
        body = text[start:]
        try:
            partial = pydantic_core.from_json(body, allow_partial="trailing-strings")
        except ValueError:
            return None
        if not isinstance(partial, dict):
            return None
        keys = list(partial)
        complete = keys if _closes(body) or (_closes(body.rstrip().removesuffix(",") + "}") \
            and body.rstrip().endswith(",")) else keys[:-1]
        model = self.plan.model
        for key in complete:
            if key in self.valid or key not in model.model_fields:
                continue
            if self.instance is None:
                self.instance = model.model_construct()
            try:
                model.__pydantic_validator__.validate_assignment(self.instance, key,
                                                                 partial[key])
            except ValidationError as error:
                return f"field {key!r} is not valid: {format_validation_error(error)}"
            self.valid[key] = getattr(self.instance, key)
        for source, reads in self.plan.checks:
            if source.id in self.done or not reads <= self.valid.keys():
                continue
            self.done.add(source.id)
            if not self.call(source, self.instance):
                return source.message
        return None
