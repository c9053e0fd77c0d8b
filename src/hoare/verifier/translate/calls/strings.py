"""``str()`` and the ``str`` methods the translator models.

Whitespace for ``strip`` & co. is ``str.isspace``, and ``isdigit()`` & co. use
Python's own Unicode tables (``unicode_classes``); the definitions are exact
(see ``define_stripped``) except where a class is too big for z3 (``isalpha``…),
which is modelled exactly on Latin-1 and free elsewhere.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import z3

from hoare.verifier.solve.context import false, true
from hoare.verifier.translate import unicode_classes as uc
from hoare.verifier.translate.calls.registry import CallSite, Family
from hoare.verifier.translate.logic import z3_and, z3_not, z3_or
from hoare.verifier.translate.values import (
    Opaque,
    SBool,
    SColl,
    SInt,
    SList,
    SOpt,
    SStr,
    SStripped,
    Sym,
    fresh_name,
    int_val,
)

if TYPE_CHECKING:
    from hoare.verifier.translate.expressions import ExpressionTranslator


FAMILY = Family("strings")


@FAMILY.function(str, "str", precision="exact",
          note="of a str, int, bool or None; ValueError past sys.get_int_max_str_digits()")
def _str(t: ExpressionTranslator, call: CallSite) -> Sym:
    value = call.one(t)
    if isinstance(value, SOpt):  # str(None) is "None", not a TypeError
        with t.only_when(z3.Not(value.none)):  # the inner value's errors need it present
            inner = t.to_str(value.inner)
        return t.ite(value.none, SStr(z3.StringVal("None")), inner)
    return t.to_str(value)


def define_stripped(t: ExpressionTranslator, s: z3.SeqRef, name: str) -> z3.SeqRef:
    """``str.strip()`` & co. exactly: ``s == p + r + q`` with ``p``, ``q`` made of
    whitespace (``str.isspace``) and ``r`` empty or starting and ending with a
    non-whitespace character. ``r`` is a function of ``s``, so these definitions
    hold in every query."""
    space = uc.ranges_re(uc.class_ranges("space"))
    r = z3.String(fresh_name("strip"))
    p = z3.String(fresh_name("strip.lead"))
    q = z3.String(fresh_name("strip.trail"))
    first_ok = z3.Not(z3.InRe(z3.SubString(r, 0, 1), space))
    last_ok = z3.Not(z3.InRe(z3.SubString(r, z3.Length(r) - 1, 1), space))
    if name == "strip":
        t.define(z3.And(s == z3.Concat(p, r, q), z3.InRe(p, z3.Star(space)),
                        z3.InRe(q, z3.Star(space)),
                        z3.Or(r == z3.StringVal(""), z3.And(first_ok, last_ok))))
    elif name == "lstrip":
        t.define(z3.And(s == z3.Concat(p, r), z3.InRe(p, z3.Star(space)),
                        z3.Or(r == z3.StringVal(""), first_ok)))
    else:
        t.define(z3.And(s == z3.Concat(r, q), z3.InRe(q, z3.Star(space)),
                        z3.Or(r == z3.StringVal(""), last_ok)))
    return r


def _stripper(name: str) -> None:
    @FAMILY.method("str", name, precision="exact", note="without an argument")
    def handler(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
        call.only_positional(0)
        assert isinstance(receiver, SStr)
        return SStripped(receiver.e, name, functools.partial(define_stripped, t))


for _name in ("strip", "lstrip", "rstrip"):
    _stripper(_name)


def _affix_test(name: str) -> None:
    @FAMILY.method("str", name, precision="exact", note="with a str or a tuple of str")
    def handler(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
        assert isinstance(receiver, SStr)
        call.only_positional(1)
        affix = t.expr(call.args[0], call.env)
        if not isinstance(affix, (SColl, SList)):
            text = t.str_operand(affix, f"str.{name}()")
            return SBool(false() if text is None else _affix_of(name, text, receiver))
        if affix.container != "tuple":  # a list or a set is refused, even empty
            t.error(true(), "TypeError")
            return SBool(false())
        return SBool(_tuple_affix(t, name, receiver, affix))


def _affix_of(name: str, text: SStr, receiver: SStr) -> z3.BoolRef:
    return z3.PrefixOf(text.e, receiver.e) if name == "startswith" else \
        z3.SuffixOf(text.e, receiver.e)


def _tuple_affix(t: ExpressionTranslator, name: str, receiver: SStr,
                 affix: SColl | SList) -> z3.BoolRef:
    """``s.startswith(tuple)``: Python tries the items in order and stops at the first
    that matches, so an item that is not a ``str`` raises ``TypeError`` only when it is
    reached (no earlier item matched, and, in a tuple field, it is present)."""
    if isinstance(affix, SColl):
        present: list[tuple[z3.BoolRef, Sym]] = [(true(), item)
                                                 for item in affix.items]
    else:
        present = [(affix.n > index, slot) for index, slot in enumerate(affix.slots)]
    matched: z3.BoolRef = false()
    for here, option in present:
        with t.guarded(z3_and(here, z3_not(matched))):
            text = t.str_operand(option, f"str.{name}()")
        if text is not None:
            matched = z3_or(matched, z3_and(here, _affix_of(name, text, receiver)))
    if isinstance(affix, SList) and not affix.exact:  # items past the slots
        if not isinstance(affix.tail(), SStr):  # a later item may raise TypeError
            raise Opaque(f"str.{name}() with the items of {affix.path} past the "
                         f"verifier's bound")
        matched = z3_or(matched, z3_and(affix.n > len(affix.slots), t.havoc_bool(
            f"str.{name}() with the items of {affix.path} past the verifier's bound")))
    return matched


for _name in ("startswith", "endswith"):
    _affix_test(_name)


def _finder(name: str) -> None:
    @FAMILY.method("str", name, precision="exact", note="with one argument")
    def handler(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
        assert isinstance(receiver, SStr)
        sub = t.str_operand(call.one(t), f"str.{name}()")
        if sub is None:
            return SInt(int_val(0))
        position = z3.IndexOf(receiver.e, sub.e, 0)
        if name == "index":
            t.error(position < 0, "ValueError")
        return SInt(position)


for _name in ("find", "index"):
    _finder(_name)


def _remover(name: str) -> None:
    @FAMILY.method("str", name, precision="exact")
    def handler(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
        assert isinstance(receiver, SStr)
        affix = t.str_operand(call.one(t), f"str.{name}()")
        if affix is None:
            return receiver
        s, a = receiver.e, affix.e
        if name == "removeprefix":
            return SStr(z3.If(z3.PrefixOf(a, s),
                              z3.SubString(s, z3.Length(a), z3.Length(s) - z3.Length(a)), s))
        return SStr(z3.If(z3.SuffixOf(a, s), z3.SubString(s, 0, z3.Length(s) - z3.Length(a)),
                          s))


for _name in ("removeprefix", "removesuffix"):
    _remover(_name)


def _class_test(name: str) -> None:
    exact = name in uc.EXACT_METHODS
    note = "Unicode tables" if exact else "Unicode tables exact on Latin-1, free above"

    @FAMILY.method("str", name, precision="exact" if exact else "over", note=note)
    def handler(t: ExpressionTranslator, receiver: Sym, call: CallSite) -> Sym:
        assert isinstance(receiver, SStr)
        call.only_positional(0)
        if exact:
            return SBool(z3.InRe(receiver.e, uc.method_language(name)))
        result = z3.Bool(fresh_name(name))
        # free above Latin-1: no claim without a replay may rest on it (the pre-flight)
        t.havoc_note(f"str.{name}() above Latin-1 (Unicode tables modelled loosely)")
        t.define(z3.And(z3.Implies(z3.InRe(receiver.e, uc.method_language(name, "under")),
                                   result),
                        z3.Implies(result,
                                   z3.InRe(receiver.e, uc.method_language(name, "over")))))
        return SBool(result)


for _name in uc.STR_TESTS:
    _class_test(_name)
