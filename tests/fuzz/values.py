"""Values over the whole domain pydantic lets through, for the fuzzer and for any
differential test that wants them.

Two forms of each generator: a ``random.Random``-driven function (``draw_float``,
``draw_text``, ``draw_int``; cheap, used by the fuzz runner) and a hypothesis
strategy (``floats()``, ``texts()``, ``ints()``; shrinkable, for property tests).
Both mix uniform draws over the full domain with the boundary values where
translators go wrong: every float class (nan, ±inf, -0.0, subnormals, the largest
finite, the edge of exact integers), every Unicode plane up to U+10FFFF
(surrogates, combining marks, case changers such as 'ß' and 'İ', the whitespace
and digit classes of ``str.isspace``/``str.isdigit``), and ints past 64 bits.
"""

from __future__ import annotations

import math
import random
import struct
import sys
from collections.abc import Sequence

from hypothesis import strategies as st

__all__ = [
    "BOUNDARY_FLOATS", "BOUNDARY_INTS", "SPECIAL_CHARS", "draw_char", "draw_float",
    "draw_int", "draw_text", "floats", "ints", "near", "texts",
]

BOUNDARY_FLOATS: tuple[float, ...] = (
    0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5,
    -2.5, 0.1, 0.2, 0.3, 1 / 3, 2.0, 3.0, 10.0, 100.0, 1e-7, 1e16, 1e300, -1e300,
    5e-324, -5e-324, sys.float_info.min, sys.float_info.max, -sys.float_info.max,
    sys.float_info.epsilon, 2.0 ** 53, 2.0 ** 53 + 2, -(2.0 ** 53), 2.0 ** 63, 2.0 ** 64,
    0.49999999999999994, 4503599627370495.5, 9007199254740993.0,
)

BOUNDARY_INTS: tuple[int, ...] = (
    0, 1, -1, 2, -2, 3, 7, 10, -10, 100, 255, 256, 2 ** 31 - 1, -(2 ** 31), 2 ** 53,
    2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 63 - 1, -(2 ** 63), 2 ** 64, 10 ** 20, -(10 ** 20),
    10 ** 100, -(10 ** 100), 2 ** 1023, 2 ** 1024,
)

# Characters where Unicode semantics differ from the naive: case mapping that
# changes length ('ß'.upper() == 'SS', 'İ'.lower() has two code points),
# title case, combining marks, every kind of whitespace and digit, the NUL and
# control characters, surrogates (valid in a Python str), the last code point.
SPECIAL_CHARS: tuple[str, ...] = (
    "a", "b", "A", "Z", "z", "0", "1", "9", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c",
    "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u3000",
    "\x00", "\x7f", "\u200b", "\ufeff", "ß", "İ", "ı", "ﬁ", "ŉ", "Σ", "ς", "ǅ", "ǈ",
    "\u0301", "\u0345", "é", "É", "ÿ", "Ÿ", "µ", "²", "½", "٣", "५", "Ⅻ", "〇", "一",
    "\U0001d7ce", "\U0001f600", "\ud800", "\udfff", "\ue000", "\uffff", "\U0010ffff",
    "_", "-", ".", "'", '"', "\\", "%", "{", "}", "$", "^", "*",
)


def draw_char(rng: random.Random) -> str:
    """One code point: a special one, ASCII, Latin-1, the BMP or any plane."""
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(SPECIAL_CHARS)
    if roll < 0.65:
        return chr(rng.randrange(0x20, 0x7f))
    if roll < 0.75:
        return chr(rng.randrange(0x80, 0x100))
    if roll < 0.9:
        return chr(rng.randrange(0x100, 0x10000))
    return chr(rng.randrange(0x10000, 0x110000))


def draw_text(rng: random.Random, max_size: int = 6,
              alphabet: Sequence[str] | None = None) -> str:
    """A short string; ``alphabet`` (when given) is drawn from two times in three."""
    size = min(rng.randrange(max_size + 1), rng.randrange(max_size + 1))
    chars = []
    for _ in range(size):
        if alphabet and rng.random() < 0.67:
            chars.append(rng.choice(alphabet))
        else:
            chars.append(draw_char(rng))
    return "".join(chars)


def draw_float(rng: random.Random, anchors: Sequence[float] = ()) -> float:
    """Any float: a boundary value, a value next to an anchor, a small decimal, or
    a uniformly random bit pattern (which reaches nan payloads and subnormals)."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(BOUNDARY_FLOATS)
    if roll < 0.5 and anchors:
        return near(rng, rng.choice(anchors))
    if roll < 0.75:
        return round(rng.uniform(-20, 20), rng.randrange(4))
    if roll < 0.85:
        return float(rng.randrange(-100, 101))
    value: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    return value


def near(rng: random.Random, anchor: float) -> float:
    """``anchor`` or one of its neighbours (the edge of a strict bound)."""
    if isinstance(anchor, int) and not isinstance(anchor, bool):
        anchor_int: int = anchor
        if abs(anchor_int) > 2 ** 1000:
            return float(rng.choice([-1, 1])) * sys.float_info.max
        anchor = float(anchor_int)
    step = rng.choice([0, 1, -1, 2, -2])
    value = float(anchor)
    for _ in range(abs(step)):
        value = math.nextafter(value, math.inf if step > 0 else -math.inf)
    return value


def draw_int(rng: random.Random, anchors: Sequence[int] = ()) -> int:
    """Any int: small, a boundary, next to an anchor, or huge."""
    roll = rng.random()
    if roll < 0.45:
        return rng.randrange(-5, 11)
    if roll < 0.7:
        return rng.choice(BOUNDARY_INTS) * rng.choice([1, 1, -1])
    if roll < 0.85 and anchors:
        return rng.choice(anchors) + rng.randrange(-2, 3)
    if roll < 0.95:
        return rng.randrange(-1000, 1001)
    return rng.getrandbits(rng.randrange(1, 200)) * rng.choice([1, -1])


# -- hypothesis strategies -----------------------------------------------------------------


def floats() -> st.SearchStrategy[float]:
    """Every float (nan and its sign, ±inf, -0.0, subnormals) plus the boundary values."""
    return st.one_of(st.sampled_from(BOUNDARY_FLOATS),
                     st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))


def texts(max_size: int = 8) -> st.SearchStrategy[str]:
    """Strings over all of Unicode, surrogates included, weighted to the specials."""
    chars = st.one_of(st.sampled_from(SPECIAL_CHARS),
                      st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                    categories=None, exclude_characters=""))
    return st.text(chars, max_size=max_size)


def ints() -> st.SearchStrategy[int]:
    """Small ints, boundary ints, and ints far past 64 bits."""
    return st.one_of(st.integers(-10, 10), st.sampled_from(BOUNDARY_INTS),
                     st.integers(-(2 ** 200), 2 ** 200))
