"""The decoding schema judged on the JSON *text* a decoder writes, not on the value
pydantic makes of it (``hoare.verifier.runtime.decoding``).

A decoder checks the schema against the text; the post-conditions see what pydantic
reads from it. The two differ when pydantic changes the value on its way in
(``strip_whitespace``, ``to_lower``/``to_upper``, a validator running before the
type's, a key that is another field's alias) and when a number's text is rounded to
the nearest double (``exclusiveMaximum 1.0`` admits ``0.99999999999999999``, read as
``1.0``). Before the fix the schema folded ``minLength 2`` onto a stripped field and
called ``len(o.a) >= 2`` enforced (``" a"`` passes the schema and is read as ``"a"``),
constrained the wrong field of two swapped aliases (turning away outputs the contract
accepts), called ``0.0 <= o.score < 1.0`` enforced by ``exclusiveMaximum``, and
forbade extra keys in OpenAI's strict subset for a model that keeps them
(``extra='allow'``: every output a post-condition reading one accepts was turned away).

The oracle: ``jsonschema`` on the text parsed with exact decimals (the decoder's view),
pydantic's ``model_validate_json`` and the real predicate on the same text. Two claims
must hold for every generated text, contract and dialect:

* the folded schema never turns away an output the contract accepts (its text as
  pydantic writes it, when the type's own schema admits that);
* a text the folded schema admits and pydantic validates passes every predicate the
  compile calls ``enforced``.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from fuzz.cases import load, unload
from fuzz.values import draw_float, draw_text

from hoare.contracts.runtime import runtime_of
from hoare.verifier.runtime.decoding import DIALECTS, compile_contract

HEADER = '''from typing import Annotated
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints,
                      field_validator)
from hoare import Contract, Post, contract


class In(BaseModel):
    x: int = 0
'''

# (kind, the output model's body): fields whose text is not their value, and controls
FIELDS: list[tuple[str, str]] = [
    ("str", "a: Annotated[str, StringConstraints(strip_whitespace=True)]"),
    ("str", "a: Annotated[str, StringConstraints(to_lower=True)]"),
    ("str", "a: Annotated[str, StringConstraints(to_upper=True)]"),
    ("str", "model_config = ConfigDict(str_strip_whitespace=True)\n    a: str"),
    ("str", "model_config = ConfigDict(str_to_lower=True)\n    a: str"),
    ("str", "model_config = ConfigDict(str_to_upper=True)\n    a: str"),
    ("str", "a: Annotated[str, BeforeValidator(lambda v: v.strip() if isinstance(v, str) "
            "else v)]"),
    ("str", "a: str"),
    ("int", "a: Annotated[int, BeforeValidator(lambda v: v * 2 if isinstance(v, int) "
            "else v)]"),
    ("int", "a: int\n\n    @field_validator('a', mode='before')\n    @classmethod\n"
            "    def twice(cls, v: object) -> object:\n"
            "        return v * 2 if isinstance(v, int) else v"),
    ("int", "a: int = Field(alias='b')\n    b: int = Field(alias='a')"),
    ("int", "a: int"),
    ("int", "model_config = ConfigDict(extra='allow')\n    a: int"),
    ("float", "a: float = Field(allow_inf_nan=False)"),
    ("float", "a: float"),
]

POSTS: dict[str, list[str]] = {
    "str": ["len(o.a) >= 2", "len(o.a) <= 2", "len(o.a) == 1", "o.a.startswith('x')",
            "o.a.endswith('b')", "o.a in ('ab', 'x', 'Y', ' y')", "o.a == 'SS'"],
    "int": ["o.a <= 5", "o.a > 2", "o.a in (1, 2)", "o.a == 3 or o.a == 12",
            "o.a <= 5 and getattr(o, 'zzz', 0) == 1"],
    "float": ["o.a > 5", "0.0 <= o.a < 1.0", "o.a >= 0.5 and o.a <= 2.5", "o.a in (1.5, 2.5)"],
}

_STRINGS = ["", " a", "a ", " ab ", "ab", "AB", "Ab", "x", "X", "xy", "XY", " x", "  xy",
            "y", "Y", " y", "İ", "ß", "SS", "ss", "ǅ", "ﬀ", "\u3000ab", "ab\u2029", "b"]
_NUMBERS = ["5", "6", "5.00000000000000001", "4.99999999999999999", "0.99999999999999999",
            "1.00000000000000001", "1e400", "-1e400", "0.5", "0.49999999999999999", "1.5",
            "2.5", "2.50000000000000001", "1.50000000000000001", "0", "-0.0", "3", "2",
            "1", "12"]


def texts(kind: str, body: str, rng: random.Random) -> list[str]:
    """JSON texts of one output: edges of the class, then generated values."""
    if kind == "str":
        values = _STRINGS + [draw_text(rng) for _ in range(30)]
        bodies = [json.dumps(v) for v in values if not any(0xD800 <= ord(c) <= 0xDFFF
                                                            for c in v)]
    elif kind == "int":
        bodies = [n for n in _NUMBERS if n.lstrip("-").isdigit()] + \
            [str(rng.randint(-20, 20)) for _ in range(10)]
    else:
        bodies = _NUMBERS + [repr(draw_float(rng, (0.5, 1.0, 1.5, 2.5, 5.0)))
                             for _ in range(30)]
        bodies = [b for b in bodies if b not in ("nan", "inf", "-inf")]
    out = [f'{{"a": {b}}}' for b in bodies]
    if "extra='allow'" in body:  # a key the model keeps and a predicate may read
        out += [f'{{"a": {b}, "zzz": 1}}' for b in bodies]
    if "alias='a'" in body:  # both keys: each is the other field's
        out += [f'{{"a": {b}, "b": {c}}}' for b in bodies[:8] for c in bodies[:8]]
    return out


def _admits(schema: dict[str, Any], text: str) -> bool:
    """The decoder's view: the schema (as the JSON sent) checked on the text, every
    number an exact decimal."""
    exact = json.loads(json.dumps(schema), parse_float=Decimal)
    instance = json.loads(text, parse_float=Decimal)
    return jsonschema.Draft202012Validator(exact).is_valid(instance)


CASES = [(kind, body, post) for kind, body in FIELDS for post in POSTS[kind]]


@pytest.mark.parametrize(("kind", "body", "post"), CASES)
def test_the_schema_holds_on_the_text_a_decoder_writes(kind: str, body: str,
                                                        post: str) -> None:
    source = f"{HEADER}\n\nclass Out(BaseModel):\n    {body}\n\n\n" \
             f"@contract()\nclass Generated(Contract[In, Out]):\n    prompt = 'g'\n" \
             f"    post_conditions = [Post(lambda o: {post}, 'post')]\n\n" \
             f"    def forward(self, i: In) -> Out:\n        return self.contract_result\n"
    module = load(source)
    try:
        desc = runtime_of(module.Generated).description
        predicate = desc.post[0]
        rng = random.Random(f"{body}|{post}")
        bodies = texts(kind, body, rng)
        for dialect in DIALECTS:
            compiled = compile_contract(desc, dialect)
            for text in bodies:
                try:
                    value = module.Out.model_validate_json(text)
                except Exception:
                    continue  # not an output: pydantic turns it away
                try:  # the kernel's semantics: a raise or a falsy non-None result fails
                    result = predicate.fn(value)
                    passes = result is None or bool(result)
                except Exception:
                    passes = False
                admitted = _admits(compiled.schema, text)
                # an accepted output keeps a text the schema admits: its own, as
                # pydantic writes it (another text of the same value may be turned
                # away: "0.49999999999999999" when 0.5 is the bound)
                own = value.model_dump_json(by_alias=True)
                if passes and _admits(desc.output.schema, own):
                    assert _admits(compiled.schema, own), (dialect, own, compiled.as_dict())
                if admitted and predicate.id in compiled.enforced:
                    assert passes, (dialect, text, value, compiled.as_dict())
    finally:
        unload(module)
