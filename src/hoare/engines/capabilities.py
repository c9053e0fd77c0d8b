"""What a server's structured-output decoder really enforces, per dialect and keyword
(``hoare probe``, ``structured="auto"``).

A table maps each of the verifier's dialects (``json_schema``: ``response_format``
``json_schema``, not strict; ``openai_strict``: the same, strict; ``llama_cpp``:
``{"type": "json_object", "schema": S}``) and each schema keyword to what the server
did when asked, in the prompt, for a value that keyword forbids:

* ``enforced``: the answer obeyed the keyword every time (k of k);
* ``ignored``: an answer came back with the forbidden value;
* ``refused``: the server answered with an HTTP error;
* ``dropped``: the answer did not even follow the schema's type (the whole schema
  was dropped, as llama.cpp does with a pattern its converter cannot read).

``type`` is the format itself (a schema with types only). Where a table comes from,
first found: ``[tool.hoare] server_capabilities = "<path>"`` (a pinned, checked-in
table), ``$HOARE_CACHE_DIR/servers/<host>_<port>.json`` (what ``hoare probe`` measured
for that server), else ``BUILT_IN`` (what is known of each dialect). Everything read
back is validated: a corrupt file is a ``CapabilityError`` naming what is wrong, which
``structured="auto"`` logs and steps over (the built-in table), never crashes on.

Stdlib only: the engines import it at construction; the verifier imports its integer
range helpers.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import time
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoare.errors import HoareError
from hoare.forking import hold_across_fork

__all__ = ["BUILT_IN", "DIALECTS", "KEYWORDS", "MAX_ENUM_RANGE", "VERDICTS",
           "CapabilityError", "CapabilityTable", "cache_path",
           "integer_range", "integer_ranges_as_enums", "load", "parse", "probe",
           "resolve", "save", "shaped"]

log = logging.getLogger("hoare.engines.capabilities")

DIALECTS = ("json_schema", "openai_strict", "llama_cpp")
KEYWORDS = ("type", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
            "minLength", "maxLength", "pattern", "minItems", "maxItems", "anyOf")
VERDICTS = ("enforced", "ignored", "refused", "dropped")
FORMAT = "hoare-server-capabilities/1"
MAX_FILE_BYTES = 1 << 20  # a capability table is a few KiB; more is not one
MAX_ENUM_RANGE = 64  # an integer range sent as an ``enum`` for a decoder ignoring bounds


class CapabilityError(HoareError, ValueError):
    """A capability table that cannot be used (corrupt, unreadable, wrong shape)."""


@dataclass(frozen=True)
class CapabilityTable:
    """Per dialect, per keyword, what the server did (see the module docstring)."""

    server: str  # the base URL measured, or "built-in"
    version: str | None  # what the server said it is (its system fingerprint), if anything
    dialects: Mapping[str, Mapping[str, str]]
    source: str = "built-in"  # where the table was read from
    measured_at: str | None = None
    trials: int | None = None
    notes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def verdict(self, dialect: str, keyword: str) -> str | None:
        return self.dialects.get(dialect, {}).get(keyword)

    def accepts(self, dialect: str) -> bool:
        """Whether the server takes this dialect's ``response_format`` at all."""
        return self.verdict(dialect, "type") not in ("refused", "dropped")

    def enforced(self, dialect: str) -> frozenset[str]:
        return frozenset(k for k, v in self.dialects.get(dialect, {}).items()
                         if v == "enforced")

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "server": self.server, "version": self.version,
                "measured_at": self.measured_at, "trials": self.trials,
                "dialects": {d: dict(k) for d, k in self.dialects.items()},
                "notes": {d: dict(k) for d, k in self.notes.items()}}


BUILT_IN = CapabilityTable("built-in", None, {
    "json_schema": {k: "enforced" for k in KEYWORDS},
    "openai_strict": {**{k: "enforced" for k in KEYWORDS},
                      "minLength": "refused", "maxLength": "refused"},
    "llama_cpp": {**{k: "enforced" for k in KEYWORDS},
                  "minimum": "ignored", "maximum": "ignored", "exclusiveMinimum": "ignored",
                  "exclusiveMaximum": "ignored", "pattern": "dropped"},
})


# -- validation ----------------------------------------------------------------------------

def parse(data: object, source: str) -> CapabilityTable:
    """A table from its JSON value, every part checked (``CapabilityError`` names the
    first thing wrong)."""
    def fail(what: str) -> CapabilityError:
        return CapabilityError(f"{source}: not a capability table: {what}")

    if not isinstance(data, dict):
        raise fail(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise fail(f"format must be {FORMAT!r}, got {str(data.get('format'))[:60]!r}")
    unknown = set(data) - {"format", "server", "version", "measured_at", "trials",
                           "dialects", "notes"}
    if unknown:
        raise fail(f"unknown key {sorted(unknown)[0][:60]!r}")
    server, version, measured = data.get("server"), data.get("version"), \
        data.get("measured_at")
    if not isinstance(server, str) or not 0 < len(server) <= 2000:
        raise fail("server must be a non-empty string")
    for key, value in (("version", version), ("measured_at", measured)):
        if value is not None and (not isinstance(value, str) or len(value) > 200):
            raise fail(f"{key} must be a string of at most 200 characters or null")
    trials = data.get("trials")
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int)
                               or not 1 <= trials <= 100):
        raise fail(f"trials must be an integer in [1, 100] or null, got {trials!r:.40}")
    dialects = data.get("dialects")
    if not isinstance(dialects, dict):
        raise fail("dialects must be an object")
    checked: dict[str, dict[str, str]] = {}
    for dialect, keywords in dialects.items():
        if dialect not in DIALECTS:
            raise fail(f"unknown dialect {str(dialect)[:60]!r} (known: "
                       f"{', '.join(DIALECTS)})")
        if not isinstance(keywords, dict):
            raise fail(f"dialects.{dialect} must be an object")
        for keyword, verdict in keywords.items():
            if keyword not in KEYWORDS:
                raise fail(f"dialects.{dialect}: unknown keyword {str(keyword)[:60]!r}")
            if verdict not in VERDICTS:
                raise fail(f"dialects.{dialect}.{keyword}: verdict must be one of "
                           f"{', '.join(VERDICTS)}, got {str(verdict)[:60]!r}")
        checked[dialect] = dict(keywords)
    notes = data.get("notes") or {}
    if not isinstance(notes, dict) or not all(
            isinstance(d, str) and isinstance(n, dict) and all(
                isinstance(k, str) and isinstance(v, str) and len(v) <= 500
                for k, v in n.items()) for d, n in notes.items()):
        raise fail("notes must map dialects to keyword -> text")
    return CapabilityTable(server, version, checked, source, measured, trials, notes)


def load(path: Path) -> CapabilityTable:
    """The table in ``path`` (``CapabilityError`` when it cannot be read or is corrupt)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise CapabilityError(f"{path}: cannot be read: {error}") from error
    if len(raw) > MAX_FILE_BYTES:
        raise CapabilityError(f"{path}: not a capability table: larger than "
                              f"{MAX_FILE_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CapabilityError(f"{path}: not a capability table: not JSON "
                              f"({' '.join(str(error).split())[:120]})") from error
    return parse(data, str(path))


def cache_path(base_url: str, directory: Path | None = None) -> Path:
    """``$HOARE_CACHE_DIR/servers/<host>_<port>.json`` for a server (the cache directory
    defaults to ``.hoare_cache`` in the current directory)."""
    if directory is None:
        given = os.environ.get("HOARE_CACHE_DIR")
        directory = Path(given) if given else Path.cwd() / ".hoare_cache"
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or "unknown"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    safe = "".join(c if c.isalnum() or c in ".-" else "-" for c in host)[:200]
    return directory / "servers" / f"{safe}_{port}.json"


def save(table: CapabilityTable, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_text(json.dumps(table.as_dict(), indent=2, sort_keys=True) + "\n",
                         encoding="utf-8")
    os.replace(temporary, path)


def pinned_path() -> Path | None:
    """``[tool.hoare] server_capabilities`` of the nearest pyproject.toml, resolved from
    its directory (None: not set; a bad value is a ``CapabilityError``)."""
    from hoare.verifier.project import find_pyproject

    found = find_pyproject()
    if found is None:
        return None
    try:
        with found.open("rb") as handle:
            table: object = tomllib.load(handle)
    except (OSError, ValueError, RecursionError) as error:
        raise CapabilityError(f"{found}: cannot read [tool.hoare] server_capabilities: "
                              f"{' '.join(str(error).split())[:200]}") from error
    for part in ("tool", "hoare"):
        table = table.get(part, {}) if isinstance(table, dict) else {}
    value = table.get("server_capabilities") if isinstance(table, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\x00" in value:
        raise CapabilityError(f"{found}: [tool.hoare] server_capabilities must be a path "
                              f"(a string), got {value!r:.60}")
    return found.parent / value


def resolve(base_url: str) -> CapabilityTable:
    """The table ``structured="auto"`` uses for a server: pinned, else cached, else
    built-in. A table that cannot be read (or a file system that cannot be asked: a
    deleted working directory, a path too long) is logged (WARNING) and stepped over:
    building an engine never fails for it."""
    try:
        pinned = pinned_path()
        if pinned is not None:
            return load(pinned)
    except (CapabilityError, OSError, ValueError, RecursionError) as error:
        log.warning("hoare: %s; using the next capability table",
                    " ".join(str(error).split())[:500])
    try:
        cached = cache_path(base_url)
        if cached.is_file():
            return load(cached)
    except (CapabilityError, OSError, ValueError, RecursionError) as error:
        log.warning("hoare: %s; using the built-in capability table",
                    " ".join(str(error).split())[:500])
    return BUILT_IN


# -- a schema in a dialect's strongest form -------------------------------------------------

def integer_range(node: Mapping[str, Any], limit: int) -> list[int] | None:
    """The integers ``node``'s bounds allow (``None``: unbounded, or more than ``limit``)."""
    def number(key: str) -> float | None:
        value = node.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            return None
        return value

    low = [math.ceil(v) for v in (number("minimum"),) if v is not None] + \
          [math.floor(v) + 1 for v in (number("exclusiveMinimum"),) if v is not None]
    high = [math.floor(v) for v in (number("maximum"),) if v is not None] + \
           [math.ceil(v) - 1 for v in (number("exclusiveMaximum"),) if v is not None]
    if not low or not high:
        return None
    lo, hi = max(low), min(high)
    if hi - lo + 1 > limit:
        return None
    step = node.get("multipleOf")
    if step is not None and not (isinstance(step, int) and not isinstance(step, bool)
                                 and step > 0):
        return None
    return [v for v in range(lo, hi + 1) if step is None or v % step == 0]


_VALUES = frozenset({"enum", "const", "default", "examples"})  # data, not schemas
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def integer_ranges_as_enums(schema: Any, limit: int = MAX_ENUM_RANGE,
                            drop: frozenset[str] = frozenset(),
                            trusted: frozenset[str] = frozenset()) -> tuple[Any, list[str]]:
    """A copy of ``schema`` where each bounded ``integer`` range of at most ``limit``
    values is also said as an ``enum`` (a decoder ignoring ``minimum``/``maximum``
    but honouring ``enum``, like llama.cpp's grammar, then enforces the range) unless
    every bound it uses is in ``trusted`` (enforced anyway), the keywords in ``drop``
    left out, and the paths converted."""
    converted: list[str] = []

    def visit(node: Any, path: str, in_properties: bool) -> Any:
        if isinstance(node, list):
            return [visit(item, f"{path}[{i}]", False) for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not in_properties and key in drop and (key != "pattern"
                                                      or isinstance(value, str)):
                continue
            if not in_properties and key in _VALUES:
                out[key] = value
            else:
                out[key] = visit(value, f"{path}.{key}" if path else key,
                                 not in_properties and key in ("properties", "$defs"))
        if not in_properties and out.get("type") == "integer" and "enum" not in out \
                and "const" not in out and not {k for k in _BOUNDS if k in out} <= trusted:
            values = integer_range(out, limit)
            if values:
                out["enum"] = values
                converted.append(path or "(root)")
        return out

    return visit(schema, "", False), converted


# (id(schema), dialect, id(table)) -> (schema, table, shaped): the objects are kept, so
# an id is never reused while its entry lives, and checked by identity on a hit
_SHAPED: dict[tuple[int, str, int],
              tuple[Mapping[str, Any], CapabilityTable, dict[str, Any]]] = {}
_SHAPED_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _SHAPED_LOCK)  # free in a forked child


def shaped(schema: Mapping[str, Any], dialect: str,
           table: CapabilityTable = BUILT_IN) -> dict[str, Any]:
    """``schema`` in the strongest form ``dialect``'s decoder enforces, per ``table``:
    the keywords it refuses or that make it drop the schema are left out (llama.cpp
    drops a whole schema whose pattern its converter cannot read), and where it
    ignores bounds but enforces ``enum``, each small integer range is also an
    ``enum``. Worked out once per schema object (a contract's compiled schema is one
    object for all its calls) and table."""
    key = (id(schema), dialect, id(table))
    with _SHAPED_LOCK:
        found = _SHAPED.get(key)
        if found is not None and found[0] is schema and found[1] is table:
            return found[2]
    drop = frozenset(k for k in KEYWORDS if k not in ("type", "anyOf", "enum")
                     and table.verdict(dialect, k) in ("refused", "dropped"))
    enforced = table.enforced(dialect)
    limit = MAX_ENUM_RANGE if "enum" in enforced else 0
    converted: dict[str, Any]  # a copy of ``schema``, a mapping: a dict
    converted, _ = integer_ranges_as_enums(schema, limit=limit, drop=drop,
                                           trusted=enforced & frozenset(_BOUNDS))
    with _SHAPED_LOCK:
        if len(_SHAPED) >= 256:
            _SHAPED.pop(next(iter(_SHAPED)))
        _SHAPED[key] = (schema, table, converted)
    return converted


# -- measuring a live server -----------------------------------------------------------------

# keyword -> (the field's schema, the forbidden value asked for, does a value obey it)
_PROBES: dict[str, tuple[dict[str, Any], Any, Callable[[Any], bool]]] = {
    "type": ({"type": "integer"}, "three", lambda v: isinstance(v, int)
             and not isinstance(v, bool)),
    "enum": ({"type": "string", "enum": ["yes"]}, "no", lambda v: v == "yes"),
    "minimum": ({"type": "integer", "minimum": 10}, 3,
                lambda v: _number(v) and v >= 10),
    "maximum": ({"type": "integer", "maximum": 3}, 10, lambda v: _number(v) and v <= 3),
    "exclusiveMinimum": ({"type": "integer", "exclusiveMinimum": 10}, 3,
                         lambda v: _number(v) and v > 10),
    "exclusiveMaximum": ({"type": "integer", "exclusiveMaximum": 3}, 10,
                         lambda v: _number(v) and v < 3),
    "minLength": ({"type": "string", "minLength": 5}, "ab",
                  lambda v: isinstance(v, str) and len(v) >= 5),
    "maxLength": ({"type": "string", "maxLength": 2}, "abcdef",
                  lambda v: isinstance(v, str) and len(v) <= 2),
    "pattern": ({"type": "string", "pattern": "^[0-9]+$"}, "abc",
                lambda v: isinstance(v, str) and v.isascii() and v.isdigit()),
    "minItems": ({"type": "array", "items": {"type": "string"}, "minItems": 3}, ["a"],
                 lambda v: isinstance(v, list) and len(v) >= 3),
    "maxItems": ({"type": "array", "items": {"type": "string"}, "maxItems": 1},
                 ["a", "b", "c"], lambda v: isinstance(v, list) and len(v) <= 1),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def probe_schema(keyword: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema probing ``keyword`` and the forbidden answer asked for."""
    if keyword == "anyOf":
        branch = {"type": "object", "properties": {"v": {"type": "string", "enum": ["yes"]},
                                                    "n": {"type": "integer", "enum": [1]}},
                  "required": ["v", "n"], "additionalProperties": False}
        other = json.loads(json.dumps(branch))
        other["properties"]["v"]["enum"], other["properties"]["n"]["enum"] = ["no"], [2]
        return {"anyOf": [branch, other]}, {"v": "yes", "n": 2}
    inner, asked, _ = _PROBES[keyword]
    return ({"type": "object", "properties": {"v": inner}, "required": ["v"],
             "additionalProperties": False}, {"v": asked})


def judge(keyword: str, text: str) -> str:
    """One answer's verdict: ``enforced`` (obeyed), ``ignored`` (the forbidden value),
    ``dropped`` (not even the schema's shape)."""
    start = text.lstrip()
    if not start.startswith("{"):
        return "dropped"  # the prompt asks for text before the JSON: no grammar ran
    try:
        value = json.loads(start)
    except ValueError:
        return "dropped"
    if not isinstance(value, dict) or "v" not in value:
        return "dropped"
    if keyword == "anyOf":
        pair = (value.get("v"), value.get("n"))
        if pair in (("yes", 1), ("no", 2)):
            return "enforced"
        return "ignored" if isinstance(value.get("v"), str) else "dropped"
    obeys = _PROBES[keyword][2]
    if obeys(value["v"]):
        return "enforced"
    if keyword != "type" and not _PROBES["type"][2](value["v"]) \
            and _PROBES[keyword][0].get("type") == "integer":
        return "dropped"
    return "ignored"


def response_format_for(dialect: str, schema: dict[str, Any]) -> dict[str, Any]:
    if dialect == "llama_cpp":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {
        "name": "probe", "schema": schema, "strict": dialect == "openai_strict"}}


def probe(base_url: str, model: str, *, trials: int = 2, api_key: str | None = None,
          timeout: float = 60.0, dialects: tuple[str, ...] = DIALECTS,
          keywords: tuple[str, ...] = KEYWORDS) -> CapabilityTable:
    """Measure a live server's table with a few tiny requests per dialect and keyword:
    each asks, in the prompt, for a value the schema forbids (after a line of text, so
    an answer without a grammar is told apart), ``trials`` times."""
    import openai

    if not 1 <= trials <= 100:
        raise CapabilityError(f"trials must be in [1, 100], got {trials}")
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname \
            or any(c.isspace() or ord(c) < 32 for c in base_url):
        raise CapabilityError(f"base URL must be an http(s) URL with a host, got "
                              f"{base_url[:200]!r}")
    if not model or len(model) > 512 or "\x00" in model:
        raise CapabilityError(f"model must be a name of 1 to 512 characters, got "
                              f"{model[:100]!r}")
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "sk-no-key-required",
                           max_retries=0, timeout=timeout)
    table: dict[str, dict[str, str]] = {}
    notes: dict[str, dict[str, str]] = {}
    version: str | None = None
    try:
        for dialect in dialects:
            table[dialect], notes[dialect] = {}, {}
            for keyword in keywords:
                schema, asked = probe_schema(keyword)
                verdicts: list[str] = []
                for _ in range(trials):
                    try:
                        answer = client.chat.completions.create(
                            model=model, temperature=0.0, max_tokens=48,
                            response_format=response_format_for(  # type: ignore[call-overload]  # llama.cpp's json_object takes a "schema" key the SDK's TypedDicts lack
                                dialect, schema),
                            messages=[{"role": "user", "content":
                                       "Reply with exactly this, nothing else: OK "
                                       + json.dumps(asked)}])
                    except openai.APIStatusError as error:
                        verdicts = ["refused"]
                        notes[dialect][keyword] = f"HTTP {error.status_code}: " + \
                            " ".join(str(error.message).split())[:200]
                        break
                    fingerprint = getattr(answer, "system_fingerprint", None)
                    if isinstance(fingerprint, str) and fingerprint and version is None:
                        version = fingerprint[:200]
                    choices = getattr(answer, "choices", None) or []
                    text = choices[0].message.content if choices else None
                    verdicts.append(judge(keyword, text if isinstance(text, str) else ""))
                table[dialect][keyword] = _combine(verdicts)
            if not notes[dialect]:
                del notes[dialect]
    except openai.APIConnectionError as error:
        raise CapabilityError(f"{base_url}: cannot reach the server: {error}") from error
    finally:
        client.close()
    return CapabilityTable(base_url, version, table, base_url,
                           time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), trials, notes)


def _combine(verdicts: list[str]) -> str:
    """k answers' verdicts as one: refused or dropped if any was, enforced only if all."""
    for worst in ("refused", "dropped", "ignored"):
        if worst in verdicts:
            return worst
    return "enforced"
