"""What every ``hoare`` command prints through: terminal-safe text, strict JSON, XML-safe
text, and verdict words in colour on a terminal.

Names and messages read from a store or a user's module may hold anything (control
characters, lone surrogates, NaN figures); each command prints them through these
helpers so that no output can drive a terminal or break a JSON or XML reader.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import TextIO

__all__ = ["colour_wanted", "json_text", "paint_table", "terminal_safe", "terminal_safe_lines",
           "xml_text"]


def terminal_safe(text: str) -> str:
    """``text`` with control characters and lone surrogates escaped: a name read from
    a store may hold anything, and must not drive the terminal."""
    from hoare.stats.values import display_text

    return display_text(text, 100_000)


def terminal_safe_lines(text: str) -> str:
    """``terminal_safe`` line by line: a table keeps its line breaks."""
    return "\n".join(terminal_safe(line) for line in text.split("\n"))


def json_text(value: object) -> str:
    """``value`` as strict JSON (RFC 8259): a NaN or infinite figure becomes null,
    never ``NaN``/``Infinity``, and text is escaped to ASCII."""
    return json.dumps(_finite(value), indent=2, allow_nan=False)


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, str):
        from hoare.stats.values import storable_text

        return storable_text(value, len(value) + 1)
    return value


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 allows: characters it forbids (control characters,
    lone surrogates, U+FFFE/U+FFFF) written as a visible escape (``\\x01``)."""
    return _XML_ILLEGAL.sub(lambda found: f"\\x{ord(found[0]):02x}"
                            if ord(found[0]) < 0x100 else f"\\u{ord(found[0]):04x}",
                            str(value))


# -- colour on a terminal (never in files or pipes; NO_COLOR turns it off) ---------------
_STYLES = {"PASS": "32", "not worse": "32", "FAIL": "1;31", "worse": "1;31",
           "WARN": "33", "UNKNOWN": "33", "cannot tell yet": "33"}
_WORDS = re.compile(r"\b(PASS|FAIL|WARN|UNKNOWN|not worse|cannot tell yet|worse)\b")


def colour_wanted(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, unless ``NO_COLOR`` is set (https://no-color.org)
    or ``TERM=dumb``."""
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def paint_table(text: str) -> str:
    """The verdict words of a table in colour when ``colour_wanted``."""
    if not colour_wanted():
        return text
    return _WORDS.sub(lambda found: f"\x1b[{_STYLES[found[1]]}m{found[1]}\x1b[0m", text)
