"""Predicate bodies from a grammar of the Python contracts are written in.

``Grammar`` draws typed expressions (bool, number, str) over the fields of the
input ``i`` and output ``o``: comparisons (chained too), arithmetic, ``and``/
``or``/``not``, conditional expressions, membership and identity, the calls and
methods of the verifier's registry (``hoare.verifier.translate.calls.registered()``: every
registered key is a production, so coverage follows the registry), a few calls
it does not register (which must come out opaque), comprehensions, slicing,
formatting (f-strings, ``%``, ``format``) and module constants of every shape.
Every production it takes is counted in ``covered`` for the coverage table.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field

from .models import PATTERNS, FieldType, Pool
from .values import BOUNDARY_FLOATS, BOUNDARY_INTS, SPECIAL_CHARS, draw_text

__all__ = ["Atom", "Constant", "Grammar", "float_literal", "module_constants"]

STR_LITERALS = ("", "a", "b", "ab", "A", " ", "ß", "SS", "ẞ", "İ", "i̇", "x", "1", "\u3000",
                "a b", "\U0010ffff", "\ud800", "é", "é", "%", "{}", "a\n", "\n", "\x1c",
                "\x85", "\t", "٣", "²", "ǅ", "ﬁ", "\u0301", "None", "nan", "-0.0", "0",
                "True")
UNARY_STR_METHODS = ("isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "islower",
                     "isnumeric", "isprintable", "isspace", "istitle", "isupper")


def _registered(prefix: str) -> tuple[str, ...]:
    """Registry keys (``str.<method>``, ``<function>``): new entries become productions."""
    from hoare.verifier.translate.calls import registered
    REGISTRY = registered()

    if prefix:
        return tuple(sorted(k.removeprefix(prefix) for k in REGISTRY if k.startswith(prefix)))
    return tuple(sorted(k for k, e in REGISTRY.items() if e.kind == "function"))


STR_METHODS = _registered("str.")
FUNCTIONS = _registered("")
LITERAL_OPS = {"eq": "==", "ne": "!=", "is": "is"}
UNREGISTERED = ("upper", "lower", "casefold", "title", "swapcase")


def float_literal(value: float) -> str:
    """Source text evaluating to ``value`` (nan and inf have no literal)."""
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


@dataclass(frozen=True)
class Constant:
    name: str
    source: str
    kind: str  # int | float | str | strs (a collection of str) | ints | dict


def module_constants(rng: random.Random) -> list[Constant]:
    """Module-level names predicates may read: every shape a contract file has."""
    words = rng.sample(["a", "b", "ab", "ß", "", "İ", "x"], rng.randrange(1, 4))
    numbers = rng.sample([0, 1, 2, 3, -1, 10], rng.randrange(1, 4))
    shapes = [
        Constant("LIMIT", repr(rng.choice([0, 1, 2, 3, 10, 2 ** 64])), "int"),
        Constant("RATIO", float_literal(rng.choice([0.5, -0.0, 1e308, math.nan, math.inf,
                                                    0.1])), "float"),
        Constant("PREFIX", repr(rng.choice(STR_LITERALS)), "str"),
        Constant("WORDS", repr(tuple(words)), "strs"),
        Constant("ALLOWED", f"frozenset({sorted(words)!r})", "strs"),
        Constant("NAMES", repr(sorted(words)), "strs"),
        Constant("SET", "{" + ", ".join(repr(w) for w in sorted(words)) + "}", "strs"),
        Constant("NUMBERS", repr(tuple(numbers)), "ints"),
        Constant("TABLE", repr({w: k for k, w in enumerate(words)}), "dict"),
        Constant("FLAG", repr(rng.choice([True, False])), "bool"),
        Constant("NOTHING", "None", "none"),
        Constant("PATTERN", f"re.compile({rng.choice(PATTERNS)!r})", "regex"),
        Constant("PAIRS", repr(tuple((w, k) for k, w in enumerate(words))), "pairs"),
    ]
    return rng.sample(shapes, rng.randrange(2, len(shapes) + 1))


@dataclass
class Atom:
    text: str
    ftype: FieldType


@dataclass
class Grammar:
    rng: random.Random
    atoms: list[Atom]
    constants: list[Constant]
    pool: Pool
    covered: Counter[str] = field(default_factory=Counter)
    max_depth: int = 3

    # -- helpers -----------------------------------------------------------------------

    def _take(self, production: str) -> None:
        self.covered[production] += 1

    def _called(self, name: str) -> str:
        self._take(f"call:{name}")
        return name

    def _of(self, *kinds: str) -> list[Atom]:
        return [a for a in self.atoms if a.ftype.kind in kinds]

    def _int_lit(self) -> str:
        value = self.rng.choice([*range(-3, 5), *BOUNDARY_INTS[:12], *self.pool.ints])
        self.pool.ints.append(value)
        return repr(value)

    def _float_lit(self) -> str:
        value = self.rng.choice([*BOUNDARY_FLOATS, 0.5, 1.5, -2.5])
        self.pool.floats.append(value)
        return float_literal(value)

    def _str_lit(self) -> str:
        roll = self.rng.random()
        value = self.rng.choice(STR_LITERALS) if roll < 0.7 else \
            self.rng.choice(SPECIAL_CHARS) if roll < 0.85 else draw_text(self.rng, 3, "ab ")
        self.pool.strs.append(value)
        return repr(value)

    def _const(self, kind: str) -> Constant | None:
        found = [c for c in self.constants if c.kind == kind]
        return self.rng.choice(found) if found else None

    # -- bool ---------------------------------------------------------------------------

    def boolean(self, depth: int = 0) -> str:
        rng = self.rng
        if depth >= self.max_depth:
            return self.comparison(depth)
        roll = rng.random()
        if roll < 0.3:
            return self.comparison(depth)
        if roll < 0.42:
            op = rng.choice(["and", "or"])
            self._take(f"bool:{op}")
            return f"({self.boolean(depth + 1)} {op} {self.boolean(depth + 1)})"
        if roll < 0.47:
            self._take("bool:not")
            return f"not ({self.boolean(depth + 1)})"
        if roll < 0.5:
            self._take("expr:ifexp")
            return f"({self.boolean(depth + 1)} if {self.boolean(depth + 1)} else " \
                   f"{self.boolean(depth + 1)})"
        return self.field_predicate(depth)

    def comparison(self, depth: int) -> str:
        rng = self.rng
        op = rng.choice(["<", "<=", "==", "!=", ">", ">="])
        numbers, texts = self._of("int", "float"), self._of("str")
        roll = rng.random()
        if texts and not numbers:
            roll = 0.3 + 0.7 * roll
        elif numbers and not texts:
            roll = 0.6 * roll if roll < 0.9 else roll
        if roll < 0.55:
            left = self.number(depth + 1)
            right = self.number(depth + 1)
            if rng.random() < 0.15:
                self._take("compare:chained")
                return f"{left} {op} {right} {rng.choice(['<', '<=', '!='])} " \
                       f"{self.number(depth + 1)}"
            self._take(f"compare:number{op}")
            return f"{left} {op} {right}"
        if roll < 0.85:
            self._take(f"compare:str{op}")
            return f"{self.text(depth + 1)} {op} {self.text(depth + 1)}"
        if roll < 0.93:
            self._take("compare:mixed")
            return f"{self.number(depth + 1)} {rng.choice(['==', '!='])} {self.text(depth + 1)}"
        # identity of values other than None/bool/enum members: CPython's caches decide
        # (small ints, one-character strings), so only an opaque answer is sound
        self._take("identity:value")
        make = self.number if numbers and (not texts or rng.random() < 0.5) else self.text
        return f"{make(depth + 1)} {rng.choice(['is', 'is not'])} {make(depth + 1)}"

    def field_predicate(self, depth: int) -> str:
        """A predicate shaped by one field's type (the common case in contracts)."""
        rng = self.rng
        atom = rng.choice(self.atoms)
        ftype, text = atom.ftype, atom.text
        if ftype.optional and rng.random() < 0.6:
            test = rng.choice(["is None", "is not None"])
            self._take(f"identity:{test}")
            if test == "is not None" and rng.random() < 0.6:
                inner = Grammar(rng, [Atom(text, _required(ftype))], self.constants,
                                self.pool, self.covered, self.max_depth)
                return f"({text} is not None and {inner.field_predicate(depth + 1)})"
            return f"{text} {test}"
        if ftype.optional and rng.random() < 0.4:
            return self.nullable_predicate(text, ftype, depth)
        if rng.random() < 0.06:
            return self.operand_predicate(text, ftype)
        kind = ftype.kind
        if kind == "bool":
            form = rng.choice(["bare", "eq", "is", "int"])
            self._take(f"bool-field:{form}")
            return {"bare": text, "eq": f"{text} == {rng.choice(['True', 'False'])}",
                    "is": f"{text} is {rng.choice(['True', 'False'])}",
                    "int": f"{text} + 1 > 1"}[form]
        if kind == "enum":
            return self._enum_predicate(text, ftype)
        if kind == "literal":
            value = rng.choice(ftype.members)[0]
            form = rng.choice(["eq", "ne", "in", "is"])
            self._take(f"literal:{form}")
            if form == "in":
                others = ", ".join(m for m, _v in ftype.members[:2])
                return f"{text} in ({others},)"
            return f"{text} {LITERAL_OPS[form]} {value}"
        if kind == "list":
            return self._list_predicate(text, ftype, depth)
        if kind == "other":
            form = rng.choice(["isinstance", "eq", "len", "in", "is", "index", "truthy"])
            self._take(f"other:{form}")
            lit = rng.choice(["1", "'a'", "1.0", "True", "'1'", "None", "1.5"])
            return {
                "isinstance": f"isinstance({text}, {rng.choice(['int', 'str', 'float', 'bool'])})",
                "eq": f"{text} {rng.choice(['==', '!='])} {lit}",
                "len": f"len({text}) {rng.choice(['==', '>'])} {rng.randrange(0, 3)}",
                "in": f"{lit} in {text}", "is": f"{text} is {rng.choice(['True', 'None'])}",
                "index": f"{text}[0] == {lit}", "truthy": text,
            }[form]
        if kind == "model":
            sub = [Atom(f"{text}.{n}", t) for n, t in ftype.fields]
            self._take("model:attribute")
            return Grammar(rng, sub, self.constants, self.pool, self.covered,
                           self.max_depth).field_predicate(depth + 1)
        if kind == "str":
            return self._str_predicate(text, depth)
        return self._number_predicate(text, kind, depth)

    def nullable_predicate(self, text: str, ftype: FieldType, depth: int) -> str:
        """An optional field where Python takes ``None`` as well as a value: hashed (``in``
        a set, in a tuple in a set), compared, formatted, counted, a slice bound. A
        translation that makes every use of ``None`` an error is caught here."""
        rng = self.rng
        kind = ftype.kind
        lit = {"str": self._str_lit, "int": self._int_lit, "float": self._float_lit}.get(
            kind, lambda: "None")()
        form = rng.choice(["in-set", "tuple-in-set", "eq", "str", "fstring", "bool", "or",
                           "count", "slice"])
        if form == "slice" and kind != "int":
            form = "in-set"
        self._take(f"nullable:{form}")
        if form == "in-set":
            const = self._const({"str": "strs", "int": "ints"}.get(kind, ""))
            container = const.name if const is not None and rng.random() < 0.5 else \
                "{" + rng.choice([f"{lit}, None", lit, "None"]) + "}"
            if const is not None and container == const.name:
                self._take(f"constant:{const.name}")
            return f"{text} {rng.choice(['in', 'not in'])} {container}"
        if form == "tuple-in-set":
            return f"({text}, 0) {rng.choice(['in', 'not in'])} {{({lit}, 0), (None, 1)}}"
        if form == "eq":
            return f"{text} {rng.choice(['==', '!='])} {lit}"
        if form == "str":
            self._take("call:str")
            return f"str({text}) {rng.choice(['==', '!='])} 'None'"
        if form == "fstring":
            spec = rng.choice(["", "", "!r", ":>3"])
            return f"f'<{{{text}{spec}}}>' {rng.choice(['==', '!='])} '<None>'"
        if form == "bool":
            self._take("call:bool")
            return rng.choice([f"bool({text})", f"not {text}"])
        if form == "or":
            return f"({text} or {lit}) {rng.choice(['==', '!='])} {lit}"
        if form == "count":
            return rng.choice([f"[{text}, None].count(None) == 2",
                               f"({text},).count(None) {rng.choice(['==', '!='])} 1"])
        bound = rng.choice([f"{text}:", f":{text}", f"{text}:{text}", f"{text}:-1"])
        return f"len({self.text(depth + 1)}[{bound}]) {rng.choice(['==', '>', '<='])} " \
               f"{rng.randrange(0, 3)}"

    def operand_predicate(self, text: str, ftype: FieldType) -> str:
        """A field where Python's rule for that position differs from the obvious one:
        an item compared inside a container (``is`` first: ``[nan] == [nan]`` when it is
        one object, an optional float's too), an optional's identity with itself (``None
        is None``), a tuple of affixes (tried in order; a
        list raises), a sum or min over items (an absent or filtered-out item is
        never added or compared). A translation that models the obvious rule is caught here."""
        rng = self.rng
        kind = ftype.kind
        item = ftype.item
        forms = ["container-self"]
        if ftype.optional:
            forms += ["identity-self", "filtered"]
        if kind == "str" and not ftype.optional:
            forms.append("affix")
        if kind == "list" and item is not None:
            forms.append("items")
            if item.kind == "str" and ftype.features[:1] == ("tuple:str",):
                forms.append("affix-field")
        form = rng.choice(forms)
        self._take(f"operand:{form}")
        if form == "container-self":
            return rng.choice([f"[{text}] == [{text}]", f"({text},) != ({text},)",
                               f"{text} in [{text}]", f"{text} not in ({text}, 0)",
                               f"[{text}, 0].count({text}) >= 1"])
        if form == "identity-self":  # None is None: both sides may be None at once
            return f"{text} {rng.choice(['is', 'is not'])} {text}"
        if form == "filtered":  # a filtered-out item is never added nor compared
            name = self._called(rng.choice(["sum", "min", "max"]))
            lit = self._str_lit() if kind == "str" else self._int_lit()
            items = rng.choice([f"({text}, {lit})", f"({lit}, {text})"])
            return f"{name}([v for v in {items} if v is not None]) == {lit}"
        if form == "affix":
            method = self._called(rng.choice(["str.startswith", "str.endswith"]))[4:]
            lit, other = self._str_lit(), self._str_lit()
            affix = rng.choice([f"({lit}, {other})", f"({lit},)", "()", f"[{lit}]",
                                f"({lit}, 1)"])
            return f"{text}.{method}({affix})"
        if form == "affix-field":
            method = self._called(rng.choice(["str.startswith", "str.endswith"]))[4:]
            return f"{self._str_lit()}.{method}({text}) {rng.choice(['==', '!='])} " \
                   f"{rng.choice(['True', 'False'])}"
        assert item is not None
        name = self._called(rng.choice(["sum", "min", "max"]))
        if name == "sum":
            return f"sum({text}) {rng.choice(['==', '!='])} 0"
        return f"{name}({text}, default=None) is None"

    def _enum_predicate(self, text: str, ftype: FieldType) -> str:
        rng = self.rng
        name, value = rng.choice(ftype.members)
        forms = ["eq_member", "is_member", "value", "in_members", "name"]
        if ftype.enum_base == "str":
            forms += ["eq_str", "startswith", "in_str"]
        if ftype.enum_base == "int":
            forms += ["int_compare", "int_arith"]
        form = rng.choice(forms)
        self._take(f"enum:{form}")
        member = f"{ftype.enum_name}.{name}"
        return {
            "eq_member": f"{text} == {member}", "is_member": f"{text} is {member}",
            "value": f"{text}.value == {value!r}",
            "in_members": f"{text} in ({member},)", "name": f"{text}.name == {name!r}",
            "eq_str": f"{text} == {value!r}", "startswith": f"{text}.startswith('a')",
            "in_str": f"'a' in {text}", "int_compare": f"{text} > {rng.randrange(-1, 3)}",
            "int_arith": f"{text} + 1 == {rng.randrange(0, 4)}",
        }[form]

    def _list_predicate(self, text: str, ftype: FieldType, depth: int) -> str:
        rng = self.rng
        item = ftype.item
        assert item is not None
        element = "x"
        inner = Grammar(rng, [Atom(element, item)], self.constants, self.pool, self.covered,
                        self.max_depth)
        form = rng.choice(["len", "any", "all", "in", "index", "count", "sum", "min",
                           "listcomp", "slice", "truthy"])
        if item.kind == "str" and form in ("sum", "min"):
            form = "len"
        self._take(f"list:{form}")
        container = ftype.features[0].split(":")[0] if ftype.features else "list"
        call = {"any": "any", "all": "all", "sum": "sum", "len": "len", "listcomp": "len",
                "slice": "len", "count": f"{container}.count"}.get(form)
        if call is not None:
            self._take(f"call:{call}")
        body = inner.field_predicate(depth + 1) if form in ("any", "all", "listcomp") else ""
        lit = self._str_lit() if item.kind == "str" else self._int_lit()
        return {
            "len": f"len({text}) {rng.choice(['>', '==', '<='])} {rng.randrange(0, 4)}",
            "any": f"any({body} for x in {text})",
            "all": f"all({body} for x in {text})",
            "in": f"{lit} in {text}",
            "index": f"{text}[{rng.choice([0, -1, 1])}] {rng.choice(['==', '!='])} {lit}",
            "count": f"{text}.count({lit}) {rng.choice(['>=', '=='])} 1",
            "sum": f"sum({text}) {rng.choice(['>', '<', '=='])} {self.number(depth + 1)}",
            "min": f"{self._called(rng.choice(['min', 'max']))}({text}) > "
                   f"{self.number(depth + 1)}",
            "listcomp": f"len([x for x in {text} if {body}]) {rng.choice(['>=', '=='])} 1",
            "slice": f"len({text}[1:]) == {rng.randrange(0, 3)}",
            "truthy": text,
        }[form]

    def _str_predicate(self, text: str, depth: int) -> str:
        rng = self.rng
        form = rng.choice(["method", "registry", "unary", "in", "regex", "len", "compare",
                           "const_in", "isinstance", "strip", "find", "unregistered",
                           "format", "truthy", "constants"])
        self._take(f"str:{form}")
        lit = self._str_lit()
        if form == "method":
            name = rng.choice(["startswith", "endswith"])
            self._take(f"call:str.{name}")
            arg = lit if rng.random() < 0.7 else f"({lit}, {self._str_lit()})"
            return f"{text}.{name}({arg})"
        if form == "unary":
            name = rng.choice(UNARY_STR_METHODS)
            self._take(f"call:str.{name}")
            return f"{text}.{name}()"
        if form == "registry":  # any registered str method, with no or one argument
            name = rng.choice(STR_METHODS)
            self._take(f"call:str.{name}")
            args = rng.choice(["", lit])
            return rng.choice([f"{text}.{name}({args})",
                               f"{text}.{name}({args}) == {self._str_lit()}"])
        if form == "in":
            return f"{lit} in {text}"
        if form == "regex":
            fn = rng.choice(["match", "fullmatch", "search"])
            self._take(f"call:re.{fn}")
            return f"re.{fn}({rng.choice(PATTERNS)!r}, {text}) is not None"
        if form == "len":
            self._take("call:len")
            return f"len({text}) {rng.choice(['>', '==', '<=', '!='])} {rng.randrange(0, 4)}"
        if form == "compare":
            return f"{text} {rng.choice(['==', '!=', '<', '>='])} {lit}"
        if form == "const_in":
            const = self._const("strs")
            if const is None:
                return f"{text} in ({lit}, {self._str_lit()})"
            self._take(f"constant:{const.name}")
            return f"{text} {rng.choice(['in', 'not in'])} {const.name}"
        if form == "isinstance":
            self._take("call:isinstance")
            return f"isinstance({text}, {rng.choice(['str', 'int', '(int, str)'])})"
        if form == "constants":  # the rarer shapes of module constants
            const = self._const(rng.choice(["bool", "none", "regex", "pairs"]))
            if const is None:
                return f"{text} != {lit}"
            self._take(f"constant:{const.name}")
            return {"bool": f"({text} == {lit}) is {const.name}",
                    "none": f"{text} is not {const.name}",
                    "regex": f"{const.name}.match({text}) is not None",
                    "pairs": f"({text}, 0) in {const.name}"}[const.kind]
        if form == "strip":
            name = rng.choice(["strip", "lstrip", "rstrip", "removeprefix", "removesuffix"])
            self._take(f"call:str.{name}")
            arg = lit if name.startswith("remove") else ""
            return f"{text}.{name}({arg}) {rng.choice(['==', '!='])} {self._str_lit()}"
        if form == "find":
            name = rng.choice(["find", "index"])
            self._take(f"call:str.{name}")
            return f"{text}.{name}({lit}) {rng.choice(['>=', '==', '<'])} {rng.randrange(-1, 2)}"
        if form == "unregistered":
            name = rng.choice(UNREGISTERED)
            return f"{text}.{name}() == {lit}"
        if form == "format":
            return f"{self.text(depth + 1)} == {lit}"
        return text

    def _number_predicate(self, text: str, kind: str, depth: int) -> str:
        rng = self.rng
        form = rng.choice(["compare", "compare", "range", "isnan", "arith", "abs", "int",
                           "round", "isinstance", "truthy", "float", "in", "registry"])
        self._take(f"{kind}:{form}")
        other = self.number(depth + 1)
        if form == "compare":
            return f"{text} {rng.choice(['<', '<=', '==', '!=', '>', '>='])} {other}"
        if form == "range":
            self._take("compare:chained")
            return f"{self._int_lit()} <= {text} < {other}"
        if form == "isnan":
            name = rng.choice(["isnan", "isinf", "isfinite"])
            self._take(f"call:math.{name}")
            return f"{'not ' if rng.random() < 0.3 else ''}math.{name}({text})"
        if form == "arith":
            op = rng.choice(["+", "-", "*", "/", "//", "%", "**"])
            self._take(f"arith:{op}")
            if op == "**":  # a small literal exponent: x ** x of a big int runs for hours
                other = str(rng.choice([0, 1, 2, 3, -1]))
            return f"{text} {op} {other} {rng.choice(['>', '==', '<='])} {self.number(depth + 1)}"
        if form == "abs":
            self._take("call:abs")
            return f"abs({text}) {rng.choice(['<', '>='])} {other}"
        if form == "int":
            self._take("call:int")
            return f"int({text}) == {self._int_lit()}"
        if form == "round":
            self._take("call:round")
            return f"round({text}) {rng.choice(['==', '>'])} {self._int_lit()}"
        if form == "isinstance":
            self._take("call:isinstance")
            return f"isinstance({text}, {rng.choice(['int', 'float', 'bool', '(int, float)'])})"
        if form == "float":
            self._take("call:float")
            return f"float({text}) {rng.choice(['==', '<'])} {self._float_lit()}"
        if form == "registry":  # any registered function, applied to the field
            name = rng.choice(FUNCTIONS)
            self._take(f"call:{name}")
            return rng.choice([f"{name}({text})", f"{name}({text}) == {other}"])
        if form == "in":
            const = self._const("ints")
            if const is not None:
                self._take(f"constant:{const.name}")
                return f"{text} in {const.name}"
            return f"{text} in ({self._int_lit()}, {self._int_lit()})"
        self._take("call:bool")
        return rng.choice([text, f"bool({text})"])

    # -- numbers ------------------------------------------------------------------------

    def number(self, depth: int) -> str:
        rng = self.rng
        numeric = self._of("int", "float")
        numeric = [a for a in numeric if not a.ftype.optional]
        roll = rng.random()
        if depth >= self.max_depth or roll < 0.35:
            if numeric and rng.random() < 0.7:
                self._take("number:field")
                return rng.choice(numeric).text
            if rng.random() < 0.2:
                const = self._const(rng.choice(["int", "float"]))
                if const is not None:
                    self._take(f"constant:{const.name}")
                    return const.name
            if rng.random() < 0.6:
                self._take("number:int-literal")
                return self._int_lit()
            self._take("number:float-literal")
            return self._float_lit()
        if roll < 0.6:
            op = rng.choice(["+", "-", "*", "/", "//", "%"])
            self._take(f"arith:{op}")
            return f"({self.number(depth + 1)} {op} {self.number(depth + 1)})"
        if roll < 0.65:
            self._take("arith:neg")
            return f"-{self.number(depth + 1)}"
        texts = self._of("str")
        strs = [a for a in texts if not a.ftype.optional]
        choices = ["abs", "int", "float", "round", "minmax", "len", "find", "sum", "bool-arith",
                   "list-index"]
        form = rng.choice(choices)
        if form == "abs":
            self._take("call:abs")
            return f"abs({self.number(depth + 1)})"
        if form == "int":
            self._take("call:int")
            return f"int({self.number(depth + 1)})"
        if form == "float":
            self._take("call:float")
            return f"float({self.number(depth + 1)})"
        if form == "round":
            self._take("call:round")
            return f"round({self.number(depth + 1)})"
        if form == "minmax":
            name = rng.choice(["min", "max"])
            self._take(f"call:{name}")
            return f"{name}({self.number(depth + 1)}, {self.number(depth + 1)})"
        if form == "len" and strs:
            self._take("call:len")
            return f"len({self.text(depth + 1)})"
        if form == "find" and strs:
            name = rng.choice(["find", "index"])
            self._take(f"call:str.{name}")
            return f"{rng.choice(strs).text}.{name}({self._str_lit()})"
        lists = [a for a in self._of("list") if a.ftype.item and a.ftype.item.kind != "str"]
        if form == "sum" and lists:
            self._take("call:sum")
            target = rng.choice(lists).text
            if rng.random() < 0.5:
                self._take("comprehension:generator")
                return f"sum(x for x in {target} if x > 0)"
            return f"sum({target})"
        if form == "list-index" and lists:
            self._take("subscript:list")
            return f"{rng.choice(lists).text}[{rng.choice([0, -1])}]"
        bools = [a for a in self._of("bool") if not a.ftype.optional]
        if form == "bool-arith" and bools:
            self._take("arith:bool")
            return f"({rng.choice(bools).text} + {self.number(depth + 1)})"
        self._take("number:int-literal")
        return self._int_lit()

    # -- strings ------------------------------------------------------------------------

    def text(self, depth: int) -> str:
        rng = self.rng
        strs = [a for a in self._of("str") if not a.ftype.optional]
        roll = rng.random()
        if depth >= self.max_depth or roll < 0.4:
            if strs and rng.random() < 0.7:
                self._take("str:field")
                return rng.choice(strs).text
            const = self._const("str")
            if const is not None and rng.random() < 0.3:
                self._take(f"constant:{const.name}")
                return const.name
            self._take("str:literal")
            return self._str_lit()
        form = rng.choice(["concat", "slice", "index", "strip", "str", "fstring", "percent",
                           "format", "remove", "enum-value", "table", "unregistered"])
        self._take(f"str-expr:{form}")
        if form == "concat":
            return f"({self.text(depth + 1)} + {self.text(depth + 1)})"
        if form == "slice":
            bounds = rng.choice(["1:", ":2", "::-1", "1:-1", "::2", "-1:"])
            return f"{self.text(depth + 1)}[{bounds}]"
        if form == "index":
            return f"{self.text(depth + 1)}[{rng.choice([0, -1])}]"
        if form == "strip":
            name = rng.choice(["strip", "lstrip", "rstrip"])
            self._take(f"call:str.{name}")
            return f"{self.text(depth + 1)}.{name}()"
        if form == "remove":
            name = rng.choice(["removeprefix", "removesuffix"])
            self._take(f"call:str.{name}")
            return f"{self.text(depth + 1)}.{name}({self._str_lit()})"
        if form == "str":
            self._take("call:str")
            return f"str({self.number(depth + 1)})"
        if form == "fstring":
            spec = rng.choice(["", "", "!r", ":>3", ":.1f", ":d", ":x"])
            inner = self.number(depth + 1)
            if "\\" in inner or ("'" in inner and '"' in inner):
                return f"str({inner})"  # Python 3.11: no backslash or reused quote inside
            quote = '"' if "'" in inner else "'"
            return f"f{quote}<{{{inner}{spec}}}>{quote}"
        if form == "percent":
            spec = rng.choice(["%s", "%d", "%r", "%.2f", "%x"])
            return f"({spec!r} % ({self.number(depth + 1)},))"
        if form == "format":
            return f"'{{}}-{{}}'.format({self.text(depth + 1)}, {self.number(depth + 1)})"
        if form == "enum-value":
            enums = [a for a in self._of("enum") if a.ftype.enum_base == "str"
                     and not a.ftype.optional]
            if enums:
                return f"{rng.choice(enums).text}.value"
        if form == "table":
            const = self._const("dict")
            if const is not None:
                self._take(f"constant:{const.name}")
                return f"str({const.name}.get({self.text(depth + 1)}, -1))"
        if form == "unregistered":
            return f"{self.text(depth + 1)}.{rng.choice(UNREGISTERED)}()"
        return self._str_lit()


def _required(ftype: FieldType) -> FieldType:
    return FieldType(ftype.annotation, ftype.kind, ftype.draw, ftype.defs, False, ftype.finite,
                     ftype.members, ftype.enum_name, ftype.enum_base, ftype.item, ftype.fields,
                     ftype.model_name, ftype.features)
