"""The properties every entry point keeps, whatever it is given.

* Only documented exceptions escape: a ``HoareError``, or a ``TypeError`` /
  ``ValueError`` naming what was wrong, never one of ``UNDOCUMENTED`` (a bare
  ``UnicodeDecodeError``, ``json.JSONDecodeError``...), whose text never raises.
* ``KeyboardInterrupt``, ``SystemExit`` and ``CancelledError`` raised by a callback
  propagate unchanged: the same instance, never swallowed or wrapped.
* A hostile object's own exception (``HostileDunder``) may pass through unchanged: it
  is user code's (spec §8.1); hoare never turns it into another error.
* Outputs in a machine format are well-formed (``strict_json``, ``well_formed_xml``).
"""

from __future__ import annotations

import json
import math
import sqlite3
import xml.etree.ElementTree as ElementTree

# Subclasses of the documented builtins that are never a clear error: each says only
# that hoare tripped over the input (and a sqlite3 error is not even a ValueError).
UNDOCUMENTED: tuple[type[BaseException], ...] = (
    UnicodeError, json.JSONDecodeError, sqlite3.Error,
)


def is_documented(error: BaseException) -> bool:
    """A HoareError, or a TypeError/ValueError that is not a leaked parsing error."""
    from hoare.errors import HoareError

    if isinstance(error, HoareError):
        return True
    return isinstance(error, (TypeError, ValueError)) and not isinstance(error, UNDOCUMENTED)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-standard JSON constant {name}")


def strict_json(text: str) -> object:
    """Parse ``text`` as strict JSON: no NaN/Infinity, no lone surrogate escapes that
    cannot be encoded, no trailing garbage; every float finite."""
    value = json.loads(text, parse_constant=_reject_constant)

    def walk(node: object) -> None:
        if isinstance(node, float) and not math.isfinite(node):
            raise ValueError(f"non-finite number {node!r}")
        if isinstance(node, dict):
            for key, item in node.items():
                walk(key)
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            node.encode("utf-8")  # a lone surrogate escape fails here
    walk(value)
    return value


def well_formed_xml(text: str) -> ElementTree.Element:
    return ElementTree.fromstring(text)
