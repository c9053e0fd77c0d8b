"""Unicode character classes as sorted code-point ranges, and the astral "twins".

Python's ``str.isdigit()``, ``isalpha()``, ``isspace()``… and the regex classes
``\\d``, ``\\w``, ``\\s`` follow Unicode, not ASCII (``'٣'.isdigit()``). The
classes are computed once, lazily, from the running interpreter's own ``str``
methods (exact for this Python by construction) and, for pydantic's default
regex engine, by asking pydantic-core's Rust ``regex`` itself which code points
``\\d``/``\\w``/``\\s`` match (bisection over whole ranges: a few ms).

z3's characters stop at U+2FFFF (``MAX_CHAR``); Python's go to U+10FFFF. A
string *variable* stays sound thanks to twins: every *signature* (membership in
every base class below) that an astral character has is also the signature of
``TWIN_POOL`` characters ≤ U+2FFFF (``RESERVED``: rare characters never used
by a translated constant or pattern literal, see ``is_reserved``). Renaming
the astral characters of a Python value injectively to unused twins of the same
signature preserves every translated operation (lengths, concatenation,
slicing, equality, containment, membership in any class built from base classes,
``.``, negation and ranges that avoid reserved characters), so a value that
exists in Python has a z3 image with the same outcome: a negative verdict over
z3 strings holds over Python strings. String *ordering* does not survive the
renaming: it is opaque (``semantics``). The argument needs at most
``TWIN_POOL`` distinct astral characters of one signature in a witness;
``tests/verifier/test_verifier_strings.py`` checks the inclusion over all code points.
"""

from __future__ import annotations

import array
import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterable

import z3

from hoare.verifier.solve.context import per_context

__all__ = [
    "BASE_CLASSES",
    "LAST_CODE_POINT",
    "MAX_CHAR",
    "RESERVED",
    "RUST_CLASSES",
    "STR_CLASSES",
    "TWIN_POOL",
    "Ranges",
    "class_ranges",
    "complement",
    "contains",
    "is_reserved",
    "normalize",
    "ranges_re",
    "signature",
    "touches_reserved",
    "twin_counts",
]

MAX_CHAR = 0x2FFFF  # the last character of z3's (default, unicode) string alphabet
LAST_CODE_POINT = 0x10FFFF
TWIN_POOL = 64  # reserved twins per astral signature

Ranges = tuple[tuple[int, int], ...]

# Per-character classes from ``str`` methods. ``title``: titlecase letters proper
# (``c.istitle()`` is also true of uppercase letters).
_STR_TESTS: dict[str, Callable[[str], bool]] = {
    "decimal": str.isdecimal,
    "digit": str.isdigit,
    "numeric": str.isnumeric,
    "alpha": str.isalpha,
    "alnum": str.isalnum,
    "space": str.isspace,
    "upper": str.isupper,
    "lower": str.islower,
    "title": lambda c: c.istitle() and not c.isupper(),
    "printable": str.isprintable,
    "word": lambda c: c.isalnum() or c == "_",  # Python re's \\w
}
STR_CLASSES = tuple(_STR_TESTS)
# Rust ``regex`` classes (pydantic-core's default engine), probed from pydantic-core.
RUST_CLASSES = ("rust-digit", "rust-word", "rust-space")
_RUST_PROBES = {"rust-digit": ("\\d", "\\D"), "rust-word": ("\\w", "\\W"),
                "rust-space": ("\\s", "\\S")}
BASE_CLASSES = STR_CLASSES + RUST_CLASSES
_SURROGATES = (0xD800, 0xDFFF)


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, merged, non-empty ranges."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def complement(ranges: Ranges, last: int = MAX_CHAR) -> Ranges:
    """The code points up to ``last`` outside ``ranges`` (normalized)."""
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, min(lo - 1, last)))
        start = max(start, hi + 1)
        if start > last:
            break
    if start <= last:
        out.append((start, last))
    return normalize(out)


def clip(ranges: Ranges, last: int = MAX_CHAR) -> Ranges:
    return tuple((lo, min(hi, last)) for lo, hi in ranges if lo <= last)


def contains(ranges: Ranges, code: int) -> bool:
    index = bisect.bisect_right(ranges, (code, LAST_CODE_POINT + 1)) - 1
    return index >= 0 and ranges[index][0] <= code <= ranges[index][1]


@functools.cache
def _all_code_points() -> str:
    return array.array("I", range(LAST_CODE_POINT + 1)).tobytes().decode(
        "utf-32-le", "surrogatepass")


def _ranges_where(test: Callable[[str], bool], last: int) -> Ranges:
    text = _all_code_points()[:last + 1]
    out: list[tuple[int, int]] = []
    start = -1
    for code, char in enumerate(text):
        if test(char):
            if start < 0:
                start = code
        elif start >= 0:
            out.append((start, code - 1))
            start = -1
    if start >= 0:
        out.append((start, last))
    return tuple(out)


@functools.cache
def _rust_ranges(name: str) -> Ranges:
    """The code points pydantic-core's Rust ``\\d``/``\\w``/``\\s`` match: a range is
    wholly inside when ``\\A\\d*\\z`` accepts it, wholly outside when ``\\A\\D*\\z``
    does, else split. Surrogates cannot reach Rust (pydantic rejects a string
    holding one when a pattern is set): they are outside."""
    from pydantic_core import SchemaValidator, ValidationError, core_schema

    positive, negative = _RUST_PROBES[name]

    def validator(cls: str) -> SchemaValidator:
        return SchemaValidator(core_schema.str_schema(pattern=f"\\A{cls}*\\z",
                                                      regex_engine="rust-regex"))

    inside, outside = validator(positive), validator(negative)

    def accepts(check: SchemaValidator, text: str) -> bool:
        try:
            check.validate_python(text)
        except ValidationError:
            return False
        return True

    text = _all_code_points()
    out: list[tuple[int, int]] = []
    stack = [(_SURROGATES[1] + 1, LAST_CODE_POINT), (0, _SURROGATES[0] - 1)]
    while stack:
        lo, hi = stack.pop()
        piece = text[lo:hi + 1]
        if accepts(inside, piece):
            out.append((lo, hi))
        elif not accepts(outside, piece):
            if lo == hi:  # neither: cannot happen for a class and its negation
                raise RuntimeError(f"Rust {positive} is undecided on U+{lo:04X}")
            mid = (lo + hi) // 2
            stack.append((mid + 1, hi))
            stack.append((lo, mid))
    return normalize(out)


# Python's re classes are CPython's ``str`` tests (Py_UNICODE_ISSPACE,
# ISDECIMAL, ISALNUM or "_"); scanning with them is ~20x faster (tested equal).
_RE_SCANS = {"space": re.compile(r"\s+"), "decimal": re.compile(r"\d+"),
             "word": re.compile(r"\w+")}


@functools.cache
def class_ranges(name: str, last: int = MAX_CHAR) -> Ranges:
    """The code points up to ``last`` of base class ``name`` (z3's alphabet by
    default: ~40 ms for a ``str`` method; all of Unicode costs ~0.2 s)."""
    if name in _RE_SCANS:
        text = _all_code_points()[:last + 1]
        return tuple((m.start(), m.end() - 1) for m in _RE_SCANS[name].finditer(text))
    if name in _STR_TESTS:
        return _ranges_where(_STR_TESTS[name], last)
    if name in _RUST_PROBES:
        return clip(_rust_ranges(name), last)
    raise KeyError(f"unknown character class {name!r}")


def signature(code: int) -> tuple[bool, ...]:
    """Membership of ``code`` in every base class."""
    return tuple(contains(class_ranges(name, LAST_CODE_POINT), code) for name in BASE_CLASSES)


def _signature_runs(lo: int, hi: int) -> list[tuple[int, int, tuple[bool, ...]]]:
    """``(start, end, signature)`` runs covering ``lo..hi``."""
    bounds = {lo, hi + 1}
    for name in BASE_CLASSES:
        for a, b in class_ranges(name, LAST_CODE_POINT):
            for edge in (a, b + 1):
                if lo < edge <= hi:
                    bounds.add(edge)
    edges = sorted(bounds)
    return [(a, b - 1, signature(a)) for a, b in itertools.pairwise(edges)]


@functools.cache
def astral_signatures() -> frozenset[tuple[bool, ...]]:
    return frozenset(sig for _a, _b, sig in _signature_runs(MAX_CHAR + 1, LAST_CODE_POINT))


def twin_counts() -> dict[tuple[bool, ...], int]:
    """How many reserved twins each astral signature has (the twin argument needs
    ``TWIN_POOL`` each; the tests check it over all of Unicode: slow, ~3 s)."""
    counts = dict.fromkeys(astral_signatures(), 0)
    for lo, hi in RESERVED:
        for a, b, sig in _signature_runs(lo, hi):
            if sig in counts:
                counts[sig] += b - a + 1
    return counts


# Reserved twins, found by scanning down from U+2FFFF for characters with an
# astral signature (Python 3.11's Unicode 14 and pydantic-core's Rust tables):
# unassigned plane-2 code points, CJK compatibility ideographs, plane-2 code
# points Rust's newer tables call letters, and Glagolitic/Adlam/... combining
# marks. Hard-coded so that run time never scans Unicode; ``twin_counts`` (tested)
# proves each astral signature has its pool here.
RESERVED: Ranges = normalize([
    (0x1E000, 0x1E02A), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF),
    (0x1E8D0, 0x1E8D6), (0x1E944, 0x1E94A), (0x2EE1E, 0x2EE5D), (0x2F9DE, 0x2FA1D),
    (0x2FFC0, 0x2FFFF)])


def is_reserved(code: int) -> bool:
    """Astral or a reserved twin: no translated constant may hold it."""
    return code > MAX_CHAR or contains(RESERVED, code)


def touches_reserved(ranges: Ranges) -> bool:
    """Whether a literal class (ranges a pattern spells out) contains a reserved
    twin or an astral character."""
    reserved = RESERVED
    for lo, hi in ranges:
        if hi > MAX_CHAR:
            return True
        index = bisect.bisect_right(reserved, (hi, LAST_CODE_POINT + 1)) - 1
        if index >= 0 and reserved[index][1] >= lo:
            return True
    return False


def _char(code: int) -> z3.SeqRef:
    return z3.StringVal(chr(code) if 32 <= code < 127 and code != 92 else f"\\u{{{code:x}}}")


def _union(ranges: Ranges) -> z3.ReRef:
    parts = [z3.Range(_char(lo), _char(hi)) for lo, hi in ranges]
    if not parts:
        return z3.Empty(z3.ReSort(z3.StringSort()))
    return z3.Union(*parts) if len(parts) > 1 else parts[0]


_EXACT_LIMIT = 160  # ranges; beyond, z3's regex solver gives up (isalpha: 700 ranges)
_WINDOW = 0xFF  # approximations stay exact on Latin-1


def is_big(ranges: Ranges) -> bool:
    """Whether a class is too big to give z3 exactly (then it is approximated)."""
    return len(clip(normalize(ranges))) > _EXACT_LIMIT


def approximate(ranges: Ranges, side: str) -> Ranges:
    """``ranges`` if small, else exact on Latin-1 and, above, everything
    (``side == "over"``, when the class has a character there) or nothing
    (``"under"``)."""
    ranges = clip(normalize(ranges))
    if side == "exact" or not is_big(ranges):
        return ranges
    low = clip(ranges, _WINDOW)
    if side == "under" or not any(hi > _WINDOW for _lo, hi in ranges):
        return low
    return normalize([*low, (_WINDOW + 1, MAX_CHAR)])


@per_context  # z3 terms of the active context, like method_language
def ranges_re(ranges: Ranges, side: str = "exact") -> z3.ReRef:
    """The z3 regex of one character in ``ranges`` (clipped to z3's alphabet);
    ``side``: ``over``/``under`` approximate a big class (see ``approximate``).

    A long union of ranges makes z3's regex solver crawl (``[0-9]``'s Unicode
    version, 60 ranges, took 16 s for ``len(s) == 3``); "any character but the
    gaps" is the same set and solves in milliseconds."""
    ranges = approximate(ranges, side)
    if len(ranges) <= 16:
        return _union(ranges)
    any_char = z3.Range(_char(0), _char(MAX_CHAR))
    return z3.Intersect(any_char, z3.Complement(_union(complement(ranges))))


@per_context
def plain_strings() -> z3.ReRef:
    """Strings with no reserved twin (hence no astral character behind them). On these
    z3's order of strings is Python's; a twin stands for an astral character, which
    sorts above every character z3 has, so ordering involving one is not modelled."""
    return z3.Star(ranges_re(complement(RESERVED)))


# -- str methods as languages ------------------------------------------------------------------
STR_TESTS = ("isdecimal", "isdigit", "isnumeric", "isalpha", "isalnum", "isspace", "isupper",
             "islower", "istitle", "isprintable", "isascii")


# Methods whose classes are small enough to give z3 exactly (``method_is_exact``,
# checked by the tests; static so that registering the handlers costs nothing).
EXACT_METHODS = frozenset({"isdecimal", "isdigit", "isspace", "isascii"})


def method_is_exact(name: str) -> bool:
    """Whether ``method_language(name, side)`` is the same for every side."""
    names = {"isupper": ("upper", "lower", "title"), "islower": ("upper", "lower", "title"),
             "istitle": ("upper", "lower", "title"), "isascii": ()}.get(name, (name[2:],))
    return not any(is_big(class_ranges(n)) for n in names)


@per_context
def method_language(name: str, side: str = "exact") -> z3.ReRef:
    """The strings ``s`` for which ``s.<name>()`` is true (CPython's definitions):

    * ``isdecimal`` … ``isspace``: non-empty, every character in the class;
    * ``isprintable``, ``isascii``: every character in the class (``""`` too);
    * ``isupper``: no lowercase or titlecase character, at least one uppercase
      (``islower`` symmetrically, with uppercase and titlecase excluded);
    * ``istitle``: uppercase/titlecase characters only after uncased ones,
      lowercase only after cased ones, at least one cased character.

    ``side``: ``over`` or ``under`` approximate big classes; every language is
    monotone in its classes, so the languages are a superset or a subset.
    """

    def _one_of(*names: str) -> z3.ReRef:
        return ranges_re(normalize(r for n in names for r in class_ranges(n)), side)

    def _none_of(*names: str) -> z3.ReRef:
        return ranges_re(complement(normalize(r for n in names for r in class_ranges(n))),
                         side)

    if name in ("isdecimal", "isdigit", "isnumeric", "isalpha", "isalnum", "isspace"):
        return z3.Plus(_one_of(name[2:]))
    if name == "isprintable":
        return z3.Star(_one_of("printable"))
    if name == "isascii":
        return z3.Star(ranges_re(((0, 127),)))  # exact: a small class
    if name == "isupper":
        other = _none_of("lower", "title")
        return z3.Concat(z3.Star(other), _one_of("upper"), z3.Star(other))
    if name == "islower":
        other = _none_of("upper", "title")
        return z3.Concat(z3.Star(other), _one_of("lower"), z3.Star(other))
    if name == "istitle":
        uncased = _none_of("upper", "lower", "title")
        head, tail = _one_of("upper", "title"), _one_of("lower")
        word = z3.Concat(head, z3.Star(tail))
        return z3.Concat(z3.Star(uncased), word,
                         z3.Star(z3.Concat(z3.Plus(uncased), word)), z3.Star(uncased))
    raise KeyError(f"str.{name}() is not a character-class test")
