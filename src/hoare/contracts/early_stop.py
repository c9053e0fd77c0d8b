"""Stop a streamed answer as soon as it is doomed (``@contract(stream=True)``).

As the answer streams in, one scanner reads each piece once (its state kept between
pieces: linear in the answer, whatever the chunking). Only an answer that *opens* with
a JSON object is judged: the full check takes such an answer's first object as the
answer and nothing after it (``hoare.contracts.json_text``), so no text that follows can rescue
a doomed first object. An answer that opens otherwise (prose, a fence, a list) is
checked in full, as without streaming. A top-level member is *complete* when the
top-level ``,`` or ``}`` after it arrives; it is then validated alone, as JSON, against
a model of that one field (its annotation, constraints and the model's config: the full
check's own JSON mode), and each post-condition whose reads are all complete is
evaluated on the fields read so far. The first failure stops the stream; the attempt
is then the type violation "stopped early: <reason>" (spec/pipeline.md §8.10), and
its feedback names the failing field or post-condition. A member that is not
well-formed JSON (or nested too deep to parse) stops nothing: the full check says why.

A stop must never reject an answer the full check would accept, so a stop is only
allowed where the full check cannot say otherwise:

* the output is a pydantic model without model or field validators (a validator
  may read several fields, or change them once all are there; ``Annotated``
  validators included), without aliases (a key the full check reads as another field,
  or ignores, is not judged as the field it names), not frozen and not strict;
  otherwise no early stop (the answer is checked in full, as without streaming);
* a post-condition is evaluated early only when its code reads the value through
  attributes alone (``v.a``, ``v.b.c``: its reads are ``{a, b}``), governed by the
  contract's policy (no per-predicate policy) and that policy is not ``ignore`` (which
  evaluates no post-condition), and the fields it reads are complete and valid: on
  them the full answer gives it the same arguments.

Not modelled: a key repeated later in the same object (JSON's last one wins in the full
check) is judged on its first occurrence.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    PlainValidator,
    ValidationError,
    WrapValidator,
    create_model,
)
from pydantic.fields import FieldInfo

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.declaration.models import format_validation_error
from hoare.declaration.source import function_node
from hoare.kernel import Policy

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
    # each field of ``model`` as a model of that one field (its annotation, constraints
    # and the model's config): a member is validated as JSON, as the full check does
    fields: Mapping[str, type[BaseModel]]


def _field_definition(name: str, info: FieldInfo) -> dict[str, Any]:
    """``create_model``'s keyword for one field: its annotation and its whole FieldInfo
    (constraints, default). Typed ``Any``: mypy matches no overload for ``**`` of a
    dict, as its keys could name create_model's own ``__config__`` & co."""
    return {name: (info.annotation, info)}


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
    try:
        alone: dict[str, type[BaseModel]] = {
            name: create_model(f"{model.__name__}_{name}", __config__=config,
                               **_field_definition(name, info))
            for name, info in model.model_fields.items()}
    except Exception:
        return None  # a field pydantic cannot rebuild alone: judged in full only
    checks = []
    # under ``policy="ignore"`` post-conditions are not evaluated: none is evaluated early
    if desc.config.policy is not Policy.IGNORE:
        for source in desc.post:
            if source.policy is not None:
                continue  # its own policy decides what a failure does: the kernel's
            reads = value_reads(source)
            if reads is not None and reads and reads <= alone.keys():
                checks.append((source, reads))
    return Plan(model, tuple(checks), alone)


_STRING = re.compile(r'["\\]')  # what ends or escapes inside a string
_NESTED = re.compile(r'["{}\[\]]')  # what changes the depth below the top level
_TOP = re.compile(r'["{}\[\],:]')  # ... and, at the top level, what ends a member
_JSON_SPACE = " \t\n\r"


class EarlyStop:
    """The ``Request.watch`` of one generation: fed the answer's pieces as they arrive
    (``feed``; or called with the text so far), returns a reason to stop or None.

    One pass over the text, whatever the chunking: a scanner keeps its state (depth,
    inside a string, a pending escape, the current member's pieces) between pieces and
    looks only at the characters that matter (a compiled character class, so a long
    string or a deep value costs C time). A top-level member is judged once, when the
    ``,`` or ``}`` after it arrives, by validating ``{member}`` as JSON against a model
    of that one field (``Plan.fields``): the full check's own JSON mode and config.

    Judged only while the answer opens with an object (``{`` then a key): the full check
    takes such an answer's first object as the answer and nothing after it
    (``json_text``), so a doomed first object is a rejected answer whatever follows. An
    answer that opens otherwise, or a member that is not well-formed JSON, is left to
    the full check (never a stop)."""

    def __init__(self, plan: Plan, call: Callable[[PredicateSource, object], bool]) -> None:
        self.plan = plan
        self.call = call  # (predicate, partial value) -> passed
        self.done: set[str] = set()
        self.valid: dict[str, object] = {}
        self.instance: BaseModel | None = None
        self.reason: str | None = None
        self.fed = 0  # characters fed so far (``__call__`` feeds only what is new)
        self.opened = False  # the opening ``{`` was read
        self.finished = False  # the first object closed, or it is not judged: no more work
        self.depth = 0
        self.in_string = False
        self.escape = False  # the last piece ended with a backslash inside a string
        self.member: list[str] = []  # the current top-level member's earlier pieces
        self.member_length = 0
        self.colon = -1  # where the current member's top-level ``:`` is, -1: none yet
        self.members = 0

    def __call__(self, text: str) -> str | None:
        """The text so far (the ``Request.watch`` protocol): only its new part is read."""
        fresh = text[self.fed:] if len(text) > self.fed else ""
        self.fed = max(self.fed, len(text))
        return self.feed(fresh, counted=True)

    def feed(self, piece: str, *, counted: bool = False) -> str | None:
        """Read the next piece of the answer; a reason to stop, or None."""
        if not counted:
            self.fed += len(piece)
        if self.finished or self.reason is not None or not piece:
            return self.reason
        at = 0
        if not self.opened:
            rest = piece.lstrip()  # the full check strips the answer (str.strip)
            if not rest:
                return None
            if rest[0] != "{":
                self.finished = True  # not an object first: judged in full only
                return None
            self.opened, self.depth = True, 1
            at = len(piece) - len(rest) + 1
        # the state lives in locals while a piece is read (this loop is the stream's hot
        # path) and is written back before any return
        start = at  # where this piece's part of the current member begins
        end = len(piece)
        in_string, depth = self.in_string, self.depth
        in_text, nested, top = _STRING.search, _NESTED.search, _TOP.search
        if self.escape:
            at += 1  # the character the last piece's final backslash escapes
            self.escape = False
        reason: str | None = None
        while True:
            found = (in_text if in_string else top if depth == 1 else nested)(piece, at)
            if found is None:
                break
            at = found.end()
            char = piece[at - 1]
            if in_string:
                if char == '"':
                    in_string = False
                elif at < end:
                    at += 1  # the escaped character
                else:
                    self.escape = True
            elif char == '"':
                in_string = True
            elif char == "{" or char == "[":
                depth += 1
            elif char == "}" or char == "]":
                depth -= 1
                if depth == 0:
                    self.in_string, self.depth, self.finished = False, 0, True
                    if char == "}":  # else malformed: left to the full check
                        reason = self.reason = self._member(piece, start, at - 1,
                                                            closing=True)
                    return reason
            elif char == ",":
                self.in_string, self.depth = in_string, depth
                reason = self.reason = self._member(piece, start, at - 1, closing=False)
                if reason is not None or self.finished:
                    return reason
                start = at
            elif self.colon < 0:  # the member's first top-level ':'
                self.colon = self.member_length + at - 1 - start
            else:
                self.finished = True  # two colons in one member: malformed
                return None
        self.in_string, self.depth = in_string, depth
        if start < end:
            self.member.append(piece[start:] if start else piece)
            self.member_length += end - start
        return None

    def _member(self, piece: str, start: int, stop: int, *, closing: bool) -> str | None:
        """Judge the member that just ended (``piece[start:stop]`` is its last part)."""
        text = "".join(self.member) + piece[start:stop] if self.member else piece[start:stop]
        colon = self.colon
        self.member, self.member_length, self.colon = [], 0, -1
        if colon < 0:
            if not (closing and self.members == 0 and not text.strip(_JSON_SPACE)):
                self.finished = True  # not "key": value (or a trailing comma)
            return None
        self.members += 1
        try:
            key = pydantic_core.from_json(text[:colon].strip(_JSON_SPACE))
        except ValueError:
            self.finished = True  # not a JSON key: malformed, left to the full check
            return None
        field = self.plan.fields.get(key) if isinstance(key, str) else None
        if field is None or key in self.valid:
            return None  # not a field (ignored, or the full check's concern), or repeated
        try:
            value = getattr(field.model_validate_json("{" + text + "}"), key)
        except ValidationError as error:
            if any(item.get("type") == "json_invalid" for item in error.errors()):
                self.finished = True  # malformed (or nested too deep): the full check's
                return None
            return f"field {key!r} is not valid: {format_validation_error(error)}"
        if self.instance is None:
            self.instance = self.plan.model.model_construct()
        self.instance.__dict__[key] = value
        self.valid[key] = value
        for source, reads in self.plan.checks:
            if source.id in self.done or not reads <= self.valid.keys():
                continue
            self.done.add(source.id)
            if not self.call(source, self.instance):
                return source.message
        return None


def repeated_top_level_key(text: str) -> str | None:
    """The first key that the answer's opening object gives twice, or None.

    Early stop judges a top-level member when it completes; a later repetition of its key
    would replace the value the full check sees (JSON parsers keep the last). So, for a
    contract that streams with early stop, an answer repeating a top-level key is
    malformed (``Runtime.check_output``), and a stop on the first occurrence never
    rejects an answer the full check accepts (spec/pipeline.md §8.10)."""
    body = text.lstrip()
    if not body.startswith("{"):
        return None
    found: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        seen: set[str] = set()
        repeated = ""
        for key, _ in items:
            if key in seen and not repeated:
                repeated = key
            seen.add(key)
        found.append(repeated)
        return dict(items)

    try:
        json.JSONDecoder(object_pairs_hook=pairs).raw_decode(body)
    except (ValueError, RecursionError):
        return None  # malformed or too deep: the full check's concern
    return (found[-1] or None) if found else None  # the outermost object comes last
