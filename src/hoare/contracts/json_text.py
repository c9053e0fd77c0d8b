"""Find the JSON document in an LLM's answer.

Models wrap JSON in markdown fences or surround it with prose; costing a
remedy call for that (as SymbolicAI does) is waste. ``extract_json`` returns
the text most likely meant as the JSON document and leaves judging it to the
caller's parser: malformed or truncated JSON comes back as is, so the parser's
error (and the corrective prompt built from it) is about the model's actual
JSON, not about the prose around it.

An answer may hold several JSON values (two objects, an example then the
answer). ``json_candidates`` yields every one in the order it appears (fenced
blocks labelled as JSON first, then the values in the prose), so the caller
takes the first that validates against the output type, not the longest.
``NaN``/``Infinity`` tokens do not make a value parse here (they are not JSON);
such text is still handed to the type's own validator, which decides.

An answer that *opens* with a JSON object (``{`` then a key or ``}``) is that object
alone: later values are not candidates. This is what lets a stream be judged on its
first object before its end (``hoare.contracts.early_stop``): no continuation of a doomed first
object can then bring in another value that passes.

Every reader here is linear in the text, whatever it holds (runs of backticks, of
brackets, of quotes, nesting 100,000 deep): fences are found by ``str.find`` with the
next newline remembered, brackets by one scan of the special characters, and a JSON
value nested too deep to parse is a value that does not parse, never a
``RecursionError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_JSON_LABELS = frozenset({"json", "jsonc", "json5", "javascript", "js"})
_LABEL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-")
# the characters that change the bracket depth or the string state (one class: linear)
_SPECIAL = re.compile(r'["\\{}\[\]]')
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def fences(text: str, *, closed: bool = False) -> Iterator[tuple[str, str, int]]:
    """Each markdown fence of ``text``, left to right, as ``(label in lower case, body,
    where the body starts)``: three backticks, an optional label on the rest of that
    line, then the body up to the next three backticks (or, unless ``closed``, the end
    of the text): the fences the regex ``FENCE[ \\t]*([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)
    (?:FENCE|\\Z)`` finds (FENCE: three backticks), in one pass. The regex retries each
    backtick of a run and scans to the end of the line each time (quadratic in a run of
    backticks); here the next newline is found once and reused, and a fence that
    cannot close ends the search (no later one can close either)."""
    position = 0
    newline = -1
    while True:
        at = text.find("```", position)
        if at < 0:
            return
        if newline < at + 3:
            newline = text.find("\n", at + 3)
            if newline < 0:
                return  # no line break after any later fence either
        start = at + 3
        while start < newline and text[start] in " \t":
            start += 1
        end = start
        while end < newline and text[end] in _LABEL_CHARS:
            end += 1
        close = text.find("```", newline + 1)
        if close < 0:
            if not closed:
                yield text[start:end].lower(), text[newline + 1:], newline + 1
            return
        yield text[start:end].lower(), text[newline + 1:close], newline + 1
        position = close + 3


def _no_constants(token: str) -> object:
    raise ValueError(f"{token} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)
_MAX_CANDIDATES = 32
_CLOSER = {"{": "}", "[": "]"}


def extract_json(text: str) -> str:
    """The JSON document in ``text``: the object it opens with, when it opens with one
    (``leading_object``: the whole text when it is one), else the whole text when it
    looks like one (checked by its first and last characters only), else the contents
    of the first markdown fence that holds JSON, else the first ``{…}``/``[…]`` in the
    prose that parses, else the first balanced one (brace
    matching that skips strings), else the stripped text. An answer that starts as
    JSON and never closes is returned whole (it was truncated). Never raises."""
    if not isinstance(text, str):
        return ""
    stripped = text.strip()
    if not stripped:
        return ""
    leading = leading_object(stripped)
    if leading is not None:
        return leading
    first, last = stripped[0], stripped[-1]
    if first in _CLOSER and last == _CLOSER[first]:
        return stripped
    if first in _CLOSER and _balanced_end(stripped, 0) is None:
        # The answer starts as JSON and never closes: it was cut off. Return it whole so
        # the parse error says so, rather than some complete value nested inside it.
        return stripped
    if "```" in stripped:
        fenced = _from_fences(stripped)
        if fenced is not None:
            return fenced
    return _from_prose(stripped)


def json_candidates(text: str) -> Iterator[str]:
    """Every JSON value in ``text`` worth validating, in order, without repeats: the whole
    text when it looks like one value (the common case: nothing else is computed unless
    the caller asks for more), then the JSON-labelled fences, other fences, and every
    top-level ``{…}``/``[…]`` in the prose that parses (at most 32), and last what
    ``extract_json`` picks. Never raises."""
    if not isinstance(text, str):
        return
    stripped = text.strip()
    if not stripped:
        return
    seen: set[str] = set()

    def fresh(candidate: str) -> bool:
        if candidate in seen:
            return False
        seen.add(candidate)
        return True

    first, last = stripped[0], stripped[-1]
    if first in _CLOSER and last == _CLOSER[first] and fresh(stripped):
        yield stripped
    if opens_object(stripped):  # the first object is the answer: nothing else is
        leading = leading_object(stripped)
        if leading is not None and fresh(leading):
            yield leading
        return
    if "```" in stripped:
        for label, body, _ in fences(stripped):
            body = body.strip()
            if label in _JSON_LABELS and body:
                for candidate in _values(body):
                    if fresh(candidate):
                        yield candidate
    for candidate in _values(stripped):
        if fresh(candidate):
            yield candidate
    chosen = extract_json(text)
    if chosen and fresh(chosen):
        yield chosen


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """Where the top-level JSON objects and arrays of ``text`` that parse stand, left
    to right (at most ``_MAX_CANDIDATES`` tries).

    A value nested in a malformed or truncated one is never a candidate: it is a
    fragment of the answer, not the answer (``{"title": "Title"}`` copied from the
    schema inside a cut-off object would otherwise pass as a success). So when a
    bracket that opens like JSON does not parse, the search goes on after its closing
    bracket, or stops when it never closes (the rest of the text is inside it). A
    bracket that does not open like JSON (``[see below]``) is prose: the search goes
    on right after it."""
    position = _find_start(text)
    tried = 0
    while position is not None and tried < _MAX_CANDIDATES:
        tried += 1
        try:
            _, end = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            if not _opens_json(text, position):
                position = _find_start(text, position + 1)
                continue
            closing = _balanced_end(text, position)
            if closing is None:
                return  # truncated: everything after is inside it
            position = _find_start(text, closing)
            continue
        yield position, end
        position = _find_start(text, end)


_VALUE_START = frozenset('{["-0123456789tfn')


def _opens_json(text: str, at: int) -> bool:
    """Whether the bracket at ``at`` starts like a JSON value: ``{`` then a key or
    ``}``; ``[`` then a value or ``]``."""
    rest = text[at + 1:at + 64].lstrip()
    if not rest:
        return True  # the text ends right after it: a truncated value
    if text[at] == "{":
        return rest[0] in '"}'
    return rest[0] in _VALUE_START or rest[0] == "]"


def _values(text: str) -> Iterator[str]:
    """The top-level JSON objects and arrays in ``text`` that parse, left to right."""
    for start, end in _spans(text):
        yield text[start:end]


def _from_fences(text: str) -> str | None:
    """The first fence labelled as JSON, else the first fence whose body holds JSON."""
    found = [(label, body.strip(), at) for label, body, at in fences(text)]
    labelled = [(body, at) for label, body, at in found if label in _JSON_LABELS and body]
    others = [(body, at) for label, body, at in found
              if label not in _JSON_LABELS and _find_start(body) is not None]
    for body, at in labelled + others:
        start = _find_start(text, at)
        if start is not None:  # parse from the fence on: a string may contain ```
            try:
                _, end = _DECODER.raw_decode(text, start)
            except (ValueError, RecursionError):
                pass
            else:
                if start - at <= len(body):
                    return text[start:end]
        return _inner(body)
    return None


def _inner(body: str) -> str:
    """A fence body, trimmed to its JSON if prose or comments surround it."""
    if body[:1] in _CLOSER and body[-1:] == _CLOSER[body[0]]:
        return body
    return _from_prose(body)


def _find_start(text: str, start: int = 0) -> int | None:
    positions = [p for p in (text.find("{", start), text.find("[", start)) if p != -1]
    return min(positions) if positions else None


def _from_prose(text: str) -> str:
    """The longest ``{…}``/``[…]`` in ``text`` that parses as JSON (so a stray ``[1]``
    in the prose does not win over the object), else the first balanced bracket span,
    else everything from the first opening bracket (truncated JSON): what the parser's
    error should be about."""
    first_start = _find_start(text)
    if first_start is None:
        return text
    best: tuple[int, int] | None = None
    for start, end in _spans(text):
        if best is None or end - start > best[1] - best[0]:
            best = (start, end)
    if best is not None:
        return text[best[0]:best[1]]
    closing = _balanced_end(text, first_start)
    if closing is not None:
        return text[first_start:closing]
    return text[first_start:].strip()


def opens_object(text: str) -> bool:
    """Does ``text`` (already stripped) open with a JSON object: ``{``, JSON whitespace,
    then a key (``"``) or ``}``? (``{braces}`` in prose does not.)"""
    if text[:1] != "{":
        return False
    spaces = _JSON_SPACE.match(text, 1)
    assert spaces is not None  # "[...]*" matches, if only the empty string
    after = spaces.end()
    return after == len(text) or text[after] in '"}'


def leading_object(text: str) -> str | None:
    """When ``text`` (already stripped) opens with a JSON object, that object's text: up
    to where it ends if it parses, else to its closing bracket, else (cut off) all of
    it. None when it does not open with one."""
    if not opens_object(text):
        return None
    try:
        _, end = _DECODER.raw_decode(text, 0)
    except (ValueError, RecursionError):
        end = _balanced_end(text, 0) or len(text)
    return text if end == len(text) else text[:end]


def _balanced_end(text: str, start: int) -> int | None:
    """The index just past the bracket closing ``text[start]``, skipping over JSON
    string literals (with escapes), or ``None`` if it never closes. One pass over the
    special characters only (a counter, no recursion: any depth)."""
    depth = 0
    in_string = False
    escaped_at = -2  # the index of the character a backslash escapes
    for match in _SPECIAL.finditer(text, start):
        i = match.start()
        c = text[i]
        if in_string:
            if i == escaped_at:
                continue
            if c == "\\":
                escaped_at = i + 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        else:  # a closing bracket
            depth -= 1
            if depth == 0:
                return i + 1
    return None
