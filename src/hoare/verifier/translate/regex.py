"""Regular expressions → z3, for the dialect that really runs.

``z3.Re("[0-9]+")`` matches the *literal text* ``[0-9]+``: patterns are parsed
here and rebuilt from ``z3.Range`` unions. pydantic validates ``pattern`` with a
*search* (``"[a-z]+"`` accepts ``"1a1"``), by pydantic-core's Rust ``regex``
crate unless the model sets ``regex_engine='python-re'`` (then
``re.compile(p).search``); predicates call Python's ``re`` directly. The two
dialects differ (``[[a-c]]`` nests classes in Rust and is ``[`` or ``a-c`` then
``]`` in Python; ``\\<`` is a word start in Rust and ``<`` in Python; Python's
``$`` also matches before a final newline, Rust's does not; ``\\z`` is Rust's
end, ``\\Z`` Python's; ``\\d``/``\\w``/``\\s`` are Unicode in both but not the same
sets), so one parser reads only the *common, well-understood subset* and gives
each construct its engine's meaning; anything else (lookarounds,
backreferences, flags but a leading ``(?s)``, word boundaries, class set operations, POSIX classes,
Unicode property escapes, anchors inside groups, unknown escapes, doubled
quantifiers, a brace that is not a repeat) is *not translated*: the caller
drops the constraint and says so. A pattern the real engine rejects is never
translated (the model or the call would raise).

Classes come from ``unicode_classes``: Python's from ``str`` methods, Rust's
probed from pydantic-core, so a translation is exact on z3's alphabet. Pattern
characters above U+2FFFF or reserved as astral twins make the pattern opaque
(see ``unicode_classes`` for why the variables stay sound).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import z3

from hoare.unmodelled import Unsupported
from hoare.verifier.solve.context import per_context
from hoare.verifier.translate import unicode_classes as uc
from hoare.verifier.translate.unicode_classes import MAX_CHAR, Ranges

__all__ = ["ENGINES", "MAX_CHAR", "RegexTranslation", "field_pattern", "translate_pattern"]

ENGINES = ("rust-regex", "python-re")
_ALL: Ranges = ((0, uc.LAST_CODE_POINT),)


@dataclass(frozen=True)
class RegexTranslation:
    """``regex``: what the whole string must be in (search semantics applied).
    ``exact``: membership in ``regex`` is equivalent to the real check (on z3's
    alphabet, astral characters by their twins); else ``regex`` is implied by the
    real check and ``under`` implies it (big Unicode classes approximated off
    Latin-1, see ``unicode_classes.approximate``). ``regex is None``: not
    translated, ``reason`` says why."""

    regex: z3.ReRef | None
    exact: bool
    reason: str = ""
    under: z3.ReRef | None = None



# -- the parsed pattern -------------------------------------------------------------------
@dataclass(frozen=True)
class _Chars:
    ranges: Ranges  # over all of Unicode


@dataclass(frozen=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    options: tuple[_Node, ...]


@dataclass(frozen=True)
class _Repeat:
    inner: _Node
    low: int
    high: int | None


@dataclass(frozen=True)
class _Anchor:
    kind: str  # "start", "end" (end of text), "dollar" (Python's $: end or before a final \n)


_Node = _Chars | _Seq | _Alt | _Repeat | _Anchor

_CLASS_ESCAPES = {"d": "digit", "w": "word", "s": "space"}
_CHAR_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7}
# ASCII punctuation both engines read as itself after a backslash (``<``, ``>``
# are word boundaries in Rust).
_PUNCTUATION = set("!\"#$%&'()*+,-./:;=?@[\\]^_`{|}~ ")
_MAX_REPEAT = 1000


def _class_ranges(name: str, engine: str) -> Ranges:
    """``\\d``, ``\\w``, ``\\s`` of ``engine`` over all of Unicode."""
    if engine == "rust-regex":
        return uc.class_ranges(f"rust-{name}", uc.LAST_CODE_POINT)
    return uc.class_ranges({"digit": "decimal"}.get(name, name), uc.LAST_CODE_POINT)


class _Parser:
    """Recursive descent over the common subset; ``engine`` gives the meaning."""

    def __init__(self, pattern: str, engine: str) -> None:
        self.text = pattern
        self.pos = 0
        self.engine = engine
        self.literals: list[tuple[int, int]] = []  # characters the pattern spells out
        self.classes: list[Ranges] = []  # every character set built
        self.dotall = pattern.startswith("(?s)")  # the one flag read (same in both)
        if self.dotall:
            self.pos = 4

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise Unsupported("unexpected end of pattern")
        self.pos += 1
        return char

    def parse(self) -> _Node:
        node = self.alternation()
        if self.pos != len(self.text):
            raise Unsupported(f"unbalanced {self.peek()!r}")
        return node

    def alternation(self) -> _Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while self.peek() and self.peek() not in "|)":
            atom = self.atom()
            items.append(self.quantified(atom))
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def quantified(self, atom: _Node) -> _Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif char == "{":
            match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.text, self.pos)
            if not match:
                raise Unsupported("a brace that is not a repeat {n}, {n,} or {n,m}")
            self.pos = match.end()
            low = int(match.group(1))
            high = low if match.group(2) is None else (
                int(match.group(3)) if match.group(3) else None)
            if low > _MAX_REPEAT or (high is not None and (high > _MAX_REPEAT or high < low)):
                raise Unsupported("a repeat count out of range")
        else:
            return atom
        if isinstance(atom, _Anchor):
            raise Unsupported("a repeated anchor")
        if self.peek() == "?":
            self.pos += 1  # lazy: same language
        if self.peek() and self.peek() in "*+?{":
            raise Unsupported("a doubled quantifier (possessive in Python, nested in Rust)")
        return _Repeat(atom, low, high)

    def atom(self) -> _Node:
        char = self.take()
        if char == "(":
            return self.group()
        if char == "[":
            return self.chars(self.char_class())
        if char == ".":
            return self.chars(_ALL if self.dotall else
                              uc.complement(((10, 10),), uc.LAST_CODE_POINT))
        if char == "^":
            return _Anchor("start")
        if char == "$":
            return _Anchor("dollar" if self.engine == "python-re" else "end")
        if char == "\\":
            return self.escape()
        if char in "*+?{}]":
            raise Unsupported(f"a bare {char!r}")
        return self.literal(ord(char))

    def literal(self, code: int) -> _Chars:
        self.literals.append((code, code))
        return self.chars(((code, code),))

    def chars(self, ranges: Ranges) -> _Chars:
        self.classes.append(ranges)
        return _Chars(ranges)

    def group(self) -> _Node:
        if self.peek() == "?":
            named = re.compile(r"\?P<[A-Za-z_][A-Za-z0-9_]*>").match(self.text, self.pos)
            if self.peek(1) == ":":
                self.pos += 2
            elif named:
                self.pos = named.end()
            elif self.text.startswith(("?=", "?!"), self.pos):
                raise Unsupported("lookahead")
            elif self.text.startswith(("?<=", "?<!"), self.pos):
                raise Unsupported("lookbehind")
            elif re.match(r"\?[a-zA-Z-]*i", self.text[self.pos:]):
                raise Unsupported("case-insensitive matching (?i)")
            else:
                raise Unsupported("a group with flags or a named reference")
        inner = self.alternation()
        if self.take() != ")":
            raise Unsupported("an unclosed group")
        return inner

    def escape(self) -> _Node:
        char = self.take()
        if char.isdigit():
            raise Unsupported(f"backreference or octal escape \\{char}")
        if char in "bB<>":
            raise Unsupported(f"anchor or word boundary \\{char}")
        if char.lower() in _CLASS_ESCAPES:
            ranges = _class_ranges(_CLASS_ESCAPES[char.lower()], self.engine)
            return self.chars(uc.complement(ranges, uc.LAST_CODE_POINT) if char.isupper()
                              else ranges)
        if char == "A":
            return _Anchor("start")
        if char == "z" and self.engine == "rust-regex":
            return _Anchor("end")
        if char == "Z" and self.engine == "python-re":
            return _Anchor("end")
        return self.literal(self.char_escape(char))

    def char_escape(self, char: str) -> int:
        """The code point of an escape that stands for one character."""
        if char in _CHAR_ESCAPES:
            return _CHAR_ESCAPES[char]
        if char in _PUNCTUATION:
            return ord(char)
        widths = {"x": 2, "u": 4, "U": 8}
        if char in widths:
            if self.engine == "rust-regex" and self.peek() == "{":
                end = self.text.find("}", self.pos)
                digits = self.text[self.pos + 1:end] if end > 0 else ""
                self.pos = end + 1
            else:
                digits = self.text[self.pos:self.pos + widths[char]]
                self.pos += widths[char]
            if not re.fullmatch(r"[0-9A-Fa-f]{1,8}", digits) or (
                    self.engine == "python-re" and len(digits) != widths[char]):
                raise Unsupported(f"the escape \\{char}{digits}")
            code = int(digits, 16)
            if code > uc.LAST_CODE_POINT:
                raise Unsupported(f"the escape \\{char}{digits}")
            return code
        if char.isdigit():
            raise Unsupported(f"backreference or octal escape \\{char}")
        if char in "bB<>":
            raise Unsupported(f"anchor or word boundary \\{char}")
        raise Unsupported(f"the escape \\{char}")

    def class_char(self) -> int | Ranges:
        """One class member: a code point, or the ranges of a class escape."""
        char = self.take()
        if char != "\\":
            return ord(char)
        char = self.take()
        if char.lower() in _CLASS_ESCAPES:
            ranges = _class_ranges(_CLASS_ESCAPES[char.lower()], self.engine)
            return uc.complement(ranges, uc.LAST_CODE_POINT) if char.isupper() else ranges
        return self.char_escape(char)

    def char_class(self) -> Ranges:
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        members: list[tuple[int, int]] = []
        first = True
        while True:
            char = self.peek()
            if not char:
                raise Unsupported("an unclosed class")
            if char == "]" and not first:
                self.pos += 1
                break
            if self.text.startswith(("&&", "--", "~~", "[:"), self.pos):
                raise Unsupported("a class set operation or POSIX class")
            if char == "[" and self.engine == "rust-regex":
                self.pos += 1
                members.extend(self.char_class())
                first = False
                continue
            if char == "-" and not first and self.peek(1) != "]":
                raise Unsupported("a '-' that is neither a range nor at an end of a class")
            start = self.pos
            low = self.class_char()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.class_char()
                if not isinstance(low, int) or not isinstance(high, int) or low > high:
                    raise Unsupported(f"the range {self.text[start:self.pos]!r}")
                self.literals.append((low, high))
                members.append((low, high))
            elif isinstance(low, int):
                self.literals.append((low, low))
                members.append((low, low))
            else:
                members.extend(low)
            first = False
        ranges = uc.normalize(members)
        return uc.complement(ranges, uc.LAST_CODE_POINT) if negate else ranges


# -- z3 ---------------------------------------------------------------------------------------
def _empty_word() -> z3.ReRef:
    return z3.Re(z3.StringVal(""))


def _to_z3(node: _Node, side: str) -> z3.ReRef:
    if isinstance(node, _Chars):
        return uc.ranges_re(node.ranges, side)
    if isinstance(node, _Seq):
        parts = [_to_z3(item, side) for item in node.items] or [_empty_word()]
        return z3.Concat(*parts) if len(parts) > 1 else parts[0]
    if isinstance(node, _Alt):
        return z3.Union(*[_to_z3(option, side) for option in node.options])
    if isinstance(node, _Repeat):
        inner = _to_z3(node.inner, side)
        if node.high is None:
            return z3.Star(inner) if node.low == 0 else \
                z3.Concat(z3.Loop(inner, node.low, node.low), z3.Star(inner))
        if node.high == 0:
            return _empty_word()
        return z3.Loop(inner, node.low, node.high)
    raise Unsupported("an anchor inside the pattern (only at the ends of an alternative)")


def _alternative_re(node: _Node, mode: str, side: str) -> z3.ReRef:
    """One top-level alternative with its leading/trailing anchors applied."""
    items = list(node.items) if isinstance(node, _Seq) else [node]
    start = mode in ("match", "fullmatch")
    while items and isinstance(items[0], _Anchor) and items[0].kind == "start":
        items.pop(0)
        start = True
    ends: list[str] = []
    while items and isinstance(last := items[-1], _Anchor) and last.kind in ("end", "dollar"):
        items.pop()
        ends.append(last.kind)
    everything = z3.Full(z3.ReSort(z3.StringSort()))
    if mode == "fullmatch" or "end" in ends:
        tail = _empty_word()
    elif ends:
        tail = z3.Option(z3.Re(z3.StringVal("\n")))
    else:
        tail = everything
    parts = ([] if start else [everything]) + [_to_z3(item, side) for item in items] + [tail]
    return z3.Concat(*parts) if len(parts) > 1 else parts[0]


def _compiles(pattern: str, engine: str) -> str | None:
    """Why the real engine rejects ``pattern``, or ``None``."""
    if engine == "python-re":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # "possible nested set"
                re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as error:
            return f"Python's re rejects it: {error}"
        return None
    from pydantic_core import SchemaError, SchemaValidator, core_schema

    try:
        SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex"))
    except SchemaError as error:
        return f"pydantic's Rust regex rejects it: {str(error).splitlines()[-1].strip()}"
    return None


@per_context
def translate_pattern(pattern: str, engine: str = "rust-regex",
                      mode: str = "search") -> RegexTranslation:
    """The z3 regex of the strings ``pattern`` accepts under ``engine``.

    ``mode``: ``search`` (pydantic's check, ``re.search``), ``match``
    (``re.match``) or ``fullmatch``. ``engine``: ``rust-regex`` or ``python-re``.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown regex engine {engine!r}; expected one of {ENGINES}")
    if mode not in ("search", "match", "fullmatch"):
        raise ValueError(f"unknown match mode {mode!r}")
    rejected = _compiles(pattern, engine)
    if rejected:
        return RegexTranslation(None, False, rejected)
    parser = _Parser(pattern, engine)
    try:
        tree = parser.parse()
        if uc.touches_reserved(uc.normalize(parser.literals)):
            raise Unsupported("a character above U+2FFFF or reserved as an astral twin")
        options = tree.options if isinstance(tree, _Alt) else (tree,)
        exact = not any(uc.is_big(ranges) for ranges in parser.classes)

        def build(side: str) -> z3.ReRef:
            branches = [_alternative_re(option, mode, side) for option in options]
            return z3.Union(*branches) if len(branches) > 1 else branches[0]

        regex = build("over")
        under = regex if exact else build("under")
    except Unsupported as error:
        return RegexTranslation(None, False, f"unsupported regex feature: {error}")
    except (z3.Z3Exception, RecursionError) as error:
        return RegexTranslation(None, False, f"regex not translated: {error}")
    return RegexTranslation(regex, exact, under=under)


@per_context
def field_pattern(pattern: str, engine: str = "rust-regex", flags: int = 0) -> RegexTranslation:
    """What pydantic's ``Field(pattern=...)`` accepts under ``regex_engine``: a
    search, and no lone surrogate (pydantic rejects such a string before matching).
    ``flags`` of a compiled ``re.Pattern`` other than ``re.UNICODE``: not translated."""
    if flags & ~re.UNICODE:
        return RegexTranslation(None, False, "a compiled pattern with flags")
    found = translate_pattern(pattern, engine, "search")
    if found.regex is None:
        return found
    no_surrogate = z3.Star(uc.ranges_re(uc.complement(((0xD800, 0xDFFF),))))
    return RegexTranslation(z3.Intersect(found.regex, no_surrogate), found.exact,
                            under=z3.Intersect(found.under, no_surrogate))


# -- kept for callers of the former helpers ------------------------------------------------
def _category(name: str, engine: str) -> tuple[Ranges, Ranges]:
    """(under, over) ranges of ``\\d``/``\\w``/``\\s`` on z3's alphabet: both exact."""
    ranges = uc.clip(_class_ranges(name, engine))
    return ranges, ranges


def _complement(ranges: Ranges) -> Ranges:
    return uc.complement(ranges)


_ranges_re = uc.ranges_re
