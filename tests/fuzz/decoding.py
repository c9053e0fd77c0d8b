"""The decoding schema of a case (``compile_contract``, json_schema dialect) judged on
the JSON text a decoder writes.

A decoder checks the schema against the *text*; the post-conditions see what pydantic
reads from it (a string stripped or case-changed, a number rounded to the nearest
double, a key that is another field's alias). Two claims are checked:

* ``enforced``: every text the schema admits (numbers compared as exact decimals)
  that pydantic validates passes the predicate;
* folding never excludes an output the contract accepts: its own text (as pydantic
  writes it) stays admitted when the type's schema admits it.

Texts: the case's drawn outputs, and each with its numbers nudged by less than half a
unit in the last place (``0.5`` → ``0.50000000000000000001``: the same double, a
different decimal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

import jsonschema
from pydantic import BaseModel

__all__ = ["check_decoding", "nudged"]

TEXTS_CAP = 120  # texts replayed against one compiled schema
COMPILE_SECONDS = 1.0  # the compile's budget in a fuzz case (what is not proved is dropped)
_NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def nudged(text: str) -> list[str]:
    """``text`` with its decimals moved up, then down, by far less than an ulp."""
    out = []
    for step in ("1e-40", "-1e-40"):
        def move(match: re.Match[str], step: str = step) -> str:
            try:
                value = Decimal(match.group()) * (1 + Decimal(step))
            except InvalidOperation:
                return match.group()
            return format(value, "f") if abs(value.adjusted()) < 30 else str(value)
        changed = _NUMBER.sub(move, text)
        if changed != text:
            out.append(changed)
    return out


def admits(schema: dict[str, Any], text: str) -> bool:
    """The decoder's view: the schema as sent, checked on the text, numbers exact."""
    try:  # NaN/Infinity are not JSON: no decoder writes them
        exact = json.loads(json.dumps(schema), parse_float=Decimal,
                           parse_constant=_not_json)
        instance = json.loads(text, parse_float=Decimal, parse_constant=_not_json)
        return bool(jsonschema.Draft202012Validator(exact).is_valid(instance))
    except (ValueError, TypeError, ArithmeticError, RecursionError,
            jsonschema.exceptions.SchemaError):  # a multipleOf past Decimal's precision
        return False


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_decoding(desc: Any, out_cls: type[BaseModel], texts: Iterable[str],
                   inputs: list[BaseModel], passes: Callable[[Any, object, object], bool],
                   contradiction: Callable[[str, str, str], None]) -> str | None:
    """Compile the case's schema and replay ``texts``; the compile's status."""
    from hoare.verifier.runtime.decoding import compile_contract, has_candidates

    if not has_candidates(desc) or not inputs:
        return None
    compiled = compile_contract(desc, "json_schema", seconds=COMPILE_SECONDS)
    if not compiled.folded and not compiled.finite:
        return "nothing folded"
    by_id = {p.id: p for p in desc.post}
    used = inputs[0]
    candidates: list[str] = []
    for text in texts:
        candidates += [text, *nudged(text)]
    for text in candidates[:TEXTS_CAP]:
        try:
            value = out_cls.model_validate_json(text)
        except Exception:
            continue
        if admits(compiled.schema, text):
            for name in compiled.enforced:
                source = by_id.get(name)
                if source is not None and not passes(source, value, used):
                    contradiction(f"decoding enforced[{name}]", "a text the schema admits "
                                  "fails the predicate", text)
                    return "contradiction"
        if all(passes(p, value, used) for p in desc.post):
            own = value.model_dump_json(by_alias=True)
            if admits(desc.output.schema, own) and not admits(compiled.schema, own):
                contradiction("decoding folded", "the schema turns away an output the "
                              "contract accepts", own)
                return "contradiction"
    return "checked"
