"""``re.match``, ``re.search``, ``re.fullmatch`` with a literal pattern, in
Python's ``re`` dialect; a pattern ``regex.py`` cannot translate makes the call
opaque, one with a big Unicode class (``\\w``) is exact on Latin-1 and free
above."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import z3

from hoare.verifier.translate.calls.registry import CallSite, Family
from hoare.verifier.translate.regex import translate_pattern
from hoare.verifier.translate.values import (
    NONE,
    SOpaque,
    SOpt,
    SStr,
    Sym,
    decode_z3_string,
    fresh_name,
)

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator


def _regex_call(t: ExpressionTranslator, call: CallSite, mode: str) -> Sym:
    if len(call.args) != 2 or call.node.keywords:
        raise call.unsupported("with flags or without a pattern and a string")
    pattern = t.expr(call.args[0], call.env)
    if not (isinstance(pattern, SStr) and z3.is_string_value(pattern.e)):
        raise call.unsupported("with a pattern that is not a literal")
    text = t.str_operand(t.expr(call.args[1], call.env), f"re.{mode}()")
    if text is None:
        return NONE
    literal = decode_z3_string(pattern.e.as_string())
    translation = translate_pattern(literal, "python-re", mode)
    if translation.regex is None or translation.under is None:
        raise call.unsupported(f"with the pattern {literal!r} ({translation.reason})")
    if translation.exact:
        matched = z3.InRe(text.e, translation.regex)
    else:  # a big Unicode class (\w): exact on Latin-1, free above (see regex.py)
        t.havoc_note(f"re.{mode}() with a big Unicode class above Latin-1 (modelled loosely)")
        matched = z3.Bool(fresh_name("re." + mode))
        t.define(z3.And(z3.Implies(z3.InRe(text.e, translation.under), matched),
                        z3.Implies(matched, z3.InRe(text.e, translation.regex))))
    return SOpt(z3.Not(matched), SOpaque("a re.Match object", truthy=True))


FAMILY = Family("regexes")


@FAMILY.function(re.match, "re.match", precision="over",
          note="literal pattern, no flags; exact unless it has a big Unicode class (\\w)")
def _match(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _regex_call(t, call, "match")


@FAMILY.function(re.search, "re.search", precision="over",
          note="literal pattern, no flags; exact unless it has a big Unicode class (\\w)")
def _search(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _regex_call(t, call, "search")


@FAMILY.function(re.fullmatch, "re.fullmatch", precision="over",
          note="literal pattern, no flags; exact unless it has a big Unicode class (\\w)")
def _fullmatch(t: ExpressionTranslator, call: CallSite) -> Sym:
    return _regex_call(t, call, "fullmatch")
