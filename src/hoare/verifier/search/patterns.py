"""Strings matching a simple regex (literals, classes, repeats, groups, alternatives):
what the sampler tries for a ``pattern``-constrained field. Best effort, on Python's own
regex parser: pydantic's validation decides which strings are kept."""

from __future__ import annotations

import random
from typing import Any

from hoare.unmodelled import Unsupported

try:  # Python 3.11+
    import re._parser as _sre_parse  # type: ignore[import-not-found]  # no stub ships for the private parser
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse  # (Python 3.10)

__all__ = ["pattern_samples"]


def pattern_samples(pattern: str, rng: random.Random, count: int = 6) -> list[str]:
    """Strings matching simple regexes (literals, classes, repeats, groups,
    alternatives): the shortest first, then random ones. Best effort: pydantic's
    own validation decides which candidates are valid."""
    if "[[" in pattern:  # a nested class (Rust syntax): Python's parser reads it otherwise
        return []
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:
        return []
    out = []
    for index in range(count):
        try:
            out.append(_generate(parsed, rng if index else None))
        except Unsupported:
            return out
        except Exception:
            return out
    return list(dict.fromkeys(out))  # (the first of each, in order)



def _generate(items: Any, rng: random.Random | None) -> str:
    parts = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            parts.append(chr(arg))
        elif name == "NOT_LITERAL":
            parts.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            parts.append("a")
        elif name == "IN":
            parts.append(_class_char(arg, rng))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            high = min(high, low + 3)
            n = low if rng is None else rng.randint(low, high)
            parts.extend(_generate(sub, rng) for _ in range(n))
        elif name == "SUBPATTERN":
            parts.append(_generate(arg[-1], rng))
        elif name == "BRANCH":
            options = arg[1]
            parts.append(_generate(options[0] if rng is None else rng.choice(options), rng))
        elif name == "AT":
            continue
        else:
            raise Unsupported(name)
    return "".join(parts)


def _class_char(items: Any, rng: random.Random | None) -> str:
    choices: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            raise Unsupported("negated class")
        if name == "LITERAL":
            choices.append(chr(arg))
        elif name == "RANGE":
            low, high = arg
            choices += [chr(low), chr(high)]
            if rng is not None:
                choices.append(chr(rng.randint(low, high)))
        elif name == "CATEGORY":
            text = str(arg)
            positive = "NOT" not in text
            choices += list("0123456789" if "DIGIT" in text and positive else
                            " \t" if "SPACE" in text and positive else
                            "aZ_0" if "WORD" in text and positive else "a-")
    if not choices:
        raise Unsupported("empty class")
    return choices[0] if rng is None else rng.choice(choices)

