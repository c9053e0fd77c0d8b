"""Regular expressions → z3, built from ``re._parser`` (sre_parse) pieces.

``z3.Re("[0-9]+")`` matches the *literal text* ``[0-9]+``; a character class
must be built as a union of ``z3.Range``. pydantic validates ``pattern`` with a
*search* (``"[a-z]+"`` accepts ``"1a1"``), with the Rust ``regex`` crate by
default or Python's ``re`` (``regex_engine="python-re"``), so an unanchored
pattern ``R`` becomes ``.*R.*`` and the two engines' ``$`` differ (Python's also
matches before a final newline).

Each translation says whether it is *exact*. ``\\d`` and ``\\w`` under the Rust
engine follow Unicode tables that may differ from Python's: a class is
over-approximated (its ASCII part or any non-ASCII character) and a negated
class is the complement of an under-approximation (the ASCII part), so an
inexact translation is still *implied by* the real constraint (sound for
refutations). Features we do not model (lookarounds,
backreferences, case-insensitive or multiline flags, possessive repeats, word
boundaries) give no translation at all: the caller drops the constraint, and
says so.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import z3

try:  # Python 3.11+
    import re._constants as sre_c  # type: ignore[import-not-found]
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from .unmodelled import Unmodelled
from .values import MAX_CHAR, Opaque, str_val

__all__ = ["MAX_CHAR", "RegexTranslation", "translate_pattern"]

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class RegexTranslation:
    """``regex``: what the whole string must be in (search semantics applied).
    ``exact``: membership in ``regex`` is equivalent to the real check; else implied
    by it. ``regex is None``: not translated, ``reason`` says why."""

    regex: z3.ReRef | None
    exact: bool
    reason: str = ""


class _Unsupported(Unmodelled):
    pass


def _normalize(ranges: list[tuple[int, int]]) -> Ranges:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start <= MAX_CHAR:
        out.append((start, MAX_CHAR))
    return tuple(out)


def _ranges_of(test: object) -> Ranges:
    out: list[tuple[int, int]] = []
    start = None
    for code in range(MAX_CHAR + 2):
        inside = code <= MAX_CHAR and test(chr(code))  # type: ignore[operator]
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            out.append((start, code - 1))
            start = None
    return tuple(out)


@functools.cache
def _category(name: str, engine: str) -> tuple[Ranges, Ranges]:
    """(under, over) approximations of a class escape for one engine.

    Python's classes are computed from ``str`` methods (exact for ``python-re``).
    Rust's ``\\d``/``\\w`` follow Unicode tables that may be newer than Python's:
    they are bounded by their ASCII part below and "ASCII part or any non-ASCII
    character" above, which is compact and sound.
    """
    if engine == "python-re":
        tests = {"digit": str.isdecimal, "space": str.isspace,
                 "word": lambda c: c.isalnum() or c == "_"}
        exact = _ranges_of(tests[name])
        return exact, exact
    non_ascii = (0x80, MAX_CHAR)
    if name == "digit":
        return ((48, 57),), _normalize([(48, 57), non_ascii])
    if name == "word":
        ascii_word = _normalize([(48, 57), (65, 90), (95, 95), (97, 122)])
        return ascii_word, _normalize([*ascii_word, non_ascii])
    if name == "space":  # \\p{White_Space}: a stable, closed list
        white = _normalize([(9, 13), (32, 32), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
                            (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
                            (0x205F, 0x205F), (0x3000, 0x3000)])
        return white, white
    raise _Unsupported(f"class {name}")


_CATEGORIES = {
    sre_c.CATEGORY_DIGIT: ("digit", False), sre_c.CATEGORY_NOT_DIGIT: ("digit", True),
    sre_c.CATEGORY_SPACE: ("space", False), sre_c.CATEGORY_NOT_SPACE: ("space", True),
    sre_c.CATEGORY_WORD: ("word", False), sre_c.CATEGORY_NOT_WORD: ("word", True),
}


def _ranges_re(ranges: Ranges) -> z3.ReRef:
    if not ranges:
        return z3.Empty(z3.ReSort(z3.StringSort()))
    parts = [z3.Range(str_val(chr(lo)), str_val(chr(hi))) for lo, hi in ranges]
    return z3.Union(*parts) if len(parts) > 1 else parts[0]


class _Builder:
    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.exact = True

    def category(self, code: object, negate: bool = False) -> tuple[Ranges, Ranges]:
        """(under, over) ranges of a category escape, negation applied."""
        if code not in _CATEGORIES:
            raise _Unsupported(f"character class {code}")
        name, negated = _CATEGORIES[code]
        under, over = _category(name, self.engine)
        if under != over:
            self.exact = False
        if negated:
            under, over = _complement(over), _complement(under)
        return under, over

    def char_set(self, items: list[tuple[object, object]], flags: int) -> z3.ReRef:
        negate = False
        under: list[tuple[int, int]] = []
        over: list[tuple[int, int]] = []
        for op, av in items:
            if op is sre_c.NEGATE:
                negate = True
            elif op is sre_c.LITERAL:
                under.append((av, av))  # type: ignore[arg-type]
                over.append((av, av))  # type: ignore[arg-type]
            elif op is sre_c.RANGE:
                under.append(av)  # type: ignore[arg-type]
                over.append(av)  # type: ignore[arg-type]
            elif op is sre_c.CATEGORY:
                u, o = self.category(av)
                under.extend(u)
                over.extend(o)
            else:
                raise _Unsupported(f"character set item {op}")
        u_ranges, o_ranges = _normalize(under), _normalize(over)
        if negate:
            return _ranges_re(_complement(u_ranges))
        return _ranges_re(o_ranges)

    def any_char(self, flags: int) -> z3.ReRef:
        if flags & sre_c.SRE_FLAG_DOTALL:
            return _ranges_re(((0, MAX_CHAR),))
        return _ranges_re(((0, 9), (11, MAX_CHAR)))

    def sequence(self, items: list[tuple[object, object]], flags: int) -> z3.ReRef:
        parts = [self.item(op, av, flags) for op, av in items]
        if not parts:
            return z3.Re(z3.StringVal(""))
        return z3.Concat(*parts) if len(parts) > 1 else parts[0]

    def item(self, op: object, av: object, flags: int) -> z3.ReRef:
        if op is sre_c.LITERAL:
            return z3.Re(str_val(chr(av)))  # type: ignore[arg-type]
        if op is sre_c.NOT_LITERAL:
            return _ranges_re(_complement(((av, av),)))  # type: ignore[arg-type]
        if op is sre_c.ANY:
            return self.any_char(flags)
        if op is sre_c.IN:
            return self.char_set(av, flags)  # type: ignore[arg-type]
        if op is sre_c.CATEGORY:  # only inside IN in practice
            _under, over = self.category(av)
            return _ranges_re(over)
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            low, high, sub = av  # type: ignore[misc]
            inner = self.sequence(list(sub), flags)
            if high is sre_c.MAXREPEAT:
                if low == 0:
                    return z3.Star(inner)
                return z3.Concat(z3.Loop(inner, low, low), z3.Star(inner))
            if high == 0:
                return z3.Re(z3.StringVal(""))
            if low == high:
                return z3.Loop(inner, low, low)
            return z3.Loop(inner, low, high)
        if op is sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av  # type: ignore[misc]
            new_flags = (flags | add_flags) & ~del_flags
            self.check_flags(new_flags)
            return self.sequence(list(sub), new_flags)
        if op is sre_c.BRANCH:
            _, alternatives = av  # type: ignore[misc]
            return z3.Union(*[self.sequence(list(alt), flags) for alt in alternatives])
        raise _Unsupported(_describe(op))

    def check_flags(self, flags: int) -> None:
        for flag, name in ((sre_c.SRE_FLAG_IGNORECASE, "case-insensitive matching (?i)"),
                           (sre_c.SRE_FLAG_MULTILINE, "multiline anchors (?m)"),
                           (sre_c.SRE_FLAG_ASCII, "ASCII classes (?a)"),
                           (sre_c.SRE_FLAG_LOCALE, "locale classes (?L)")):
            if flags & flag:
                raise _Unsupported(name)


def _describe(op: object) -> str:
    names = {
        "ASSERT": "lookahead/lookbehind", "ASSERT_NOT": "negative lookaround",
        "GROUPREF": "backreference", "GROUPREF_EXISTS": "conditional group",
        "POSSESSIVE_REPEAT": "possessive repeat", "ATOMIC_GROUP": "atomic group",
        "AT": "anchor or word boundary inside the pattern",
    }
    return names.get(str(op), str(op))


_STARTS = {sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING}
_ENDS = {sre_c.AT_END, sre_c.AT_END_STRING}


def _alternatives(parsed: list[tuple[object, object]]) -> list[list[tuple[object, object]]]:
    """Top-level alternatives, looking through one non-capturing/capturing group that
    spans the whole pattern only when it has no anchors of its own outside."""
    if len(parsed) == 1 and parsed[0][0] is sre_c.BRANCH:
        return [list(alt) for alt in parsed[0][1][1]]  # type: ignore[index]
    return [parsed]


@functools.lru_cache(maxsize=512)
def translate_pattern(pattern: str, engine: str = "rust-regex",
                      mode: str = "search") -> RegexTranslation:
    """The z3 regex of the strings ``pattern`` accepts.

    ``mode``: ``search`` (pydantic, ``re.search``), ``match`` (``re.match``:
    anchored at the start) or ``fullmatch``. ``engine``: ``rust-regex`` or
    ``python-re`` (only ``$`` differs among the features translated).
    """
    if engine == "rust-regex" and re.search(r"\\[pPx]\{|\[\[:|&&|--|~~|\\[zZ]", pattern):
        return RegexTranslation(None, False, "Rust-only regex syntax")
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as error:
        return RegexTranslation(None, False, f"pattern not parsed: {error}")
    builder = _Builder(engine)
    try:
        flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
        builder.check_flags(flags & ~(sre_c.SRE_FLAG_UNICODE | sre_c.SRE_FLAG_VERBOSE
                                      | sre_c.SRE_FLAG_DOTALL))
        everything = z3.Full(z3.ReSort(z3.StringSort()))
        branches = []
        for alternative in _alternatives(list(parsed)):
            items = list(alternative)
            start = mode in ("match", "fullmatch")
            end_re = None
            while items and items[0][0] is sre_c.AT and items[0][1] in _STARTS:
                items = items[1:]
                start = True
            if items and items[-1][0] is sre_c.AT and items[-1][1] in _ENDS:
                code = items[-1][1]
                items = items[:-1]
                if code is sre_c.AT_END and engine == "python-re" and mode != "fullmatch":
                    end_re = z3.Option(z3.Re(z3.StringVal("\n")))
                else:
                    end_re = z3.Re(z3.StringVal(""))
            elif mode == "fullmatch":
                end_re = z3.Re(z3.StringVal(""))
            body = builder.sequence(items, flags)
            parts = ([] if start else [everything]) + [body] + \
                [end_re if end_re is not None else everything]
            branches.append(z3.Concat(*parts))
        regex = z3.Union(*branches) if len(branches) > 1 else branches[0]
    except _Unsupported as error:
        return RegexTranslation(None, False, f"unsupported regex feature: {error}")
    except Opaque as error:
        return RegexTranslation(None, False, str(error))
    except (z3.Z3Exception, RecursionError) as error:
        return RegexTranslation(None, False, f"regex not translated: {error}")
    return RegexTranslation(regex, builder.exact)
