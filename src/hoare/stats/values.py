"""The values that cross the stats store, checked both ways: a record made into a
row every back end accepts (``clean_record``), and the checks the reader applies to
what it reads back (``finite_number``, ``stored_integer``); text made storable
(``storable_text``) or safe to show (``display_text``).

Every value is checked before it is written, record by record (``clean_record``):
counts beyond the column's range, NaN or infinite figures, text that is not UTF-8 (lone
surrogates, as ``os.environ`` gives for undecodable bytes: stored escaped, ``\\xff``)
or too long are stored sanitized, and a record that cannot be is skipped (the problems
said, for the writer's WARNING). A record a contract call makes passes exact type
tests: a whole batch column by column (``plain_batch``), each distinct shape once
(``stored_shape``), so the writer's cost per record stays small; one record at a time,
``_plain``.
"""

from __future__ import annotations

import json
import math
from itertools import chain
from typing import Any, NamedTuple

__all__ = [
    "INT64",
    "TEXT_LIMIT",
    "TRIALS_AT",
    "TRIALS_LIMIT",
    "PlainBatch",
    "clean_record",
    "display_text",
    "finite_number",
    "plain_batch",
    "plain_row",
    "shown_value",
    "storable_text",
    "stored_integer",
    "stored_shape",
]

_INT32 = 2**31 - 1  # the attempt and fault columns are INTEGER (32 bits) in PostgreSQL
INT64 = 2**63 - 1  # SQLite's and BIGINT's largest integer
TEXT_LIMIT = 4096  # characters of a name, label, engine or model kept
TRIALS_LIMIT = 1000  # predicate families kept per record


def _escaped_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as surrogateescape gives it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def storable_text(value: str, limit: int = TEXT_LIMIT) -> str:
    """``value`` as text every back end stores and reads back unchanged: lone
    surrogates (undecodable bytes of ``os.environ``) and NUL escaped (``\\xff``,
    ``\\x00``), at most ``limit`` characters."""
    text = str.__str__(value)  # a str subclass's own methods are not trusted
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join(_escaped_char(c) if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text.replace("\x00", "\\x00") if "\x00" in text else text


# Characters that move or reorder what a terminal shows: line and paragraph separators
# (a log reader breaks the line there) and the bidirectional controls (Trojan Source:
# U+202E shows "b" + RLO + "dac" as "b" "cad"), escaped like the C0/C1 controls
LAYOUT_CONTROLS = (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F),
                   *range(0x2066, 0x206A))
_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROL.update({code: f"\\u{code:04x}" for code in LAYOUT_CONTROLS})


def display_text(value: str, limit: int = TEXT_LIMIT) -> str:
    """``value`` safe to show in a terminal, a log or XML: control characters, line
    and paragraph separators, bidirectional controls and lone surrogates escaped."""
    return storable_text(value, limit).translate(_CONTROL)


def finite_number(value: object) -> float | None:
    """A finite real number as a float, else None (NaN, infinities, huge ints, text,
    objects: their dunders are never called)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float.__float__(value) if isinstance(value, float) else \
            float(int.__index__(value))
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _integer(value: object, top: int) -> int | None:
    """An integer in ``0..top`` (bool as 0/1), else None."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int):
        return None
    number = int.__index__(value)
    return number if 0 <= number <= top else None


def stored_integer(value: object, top: int) -> int | None:
    """An integer in ``0..top`` as read back: a whole float counts (a column another
    program declared REAL gives 1.0 for 1)."""
    if type(value) is float and value.is_integer() and 0 <= value <= top:
        return int(value)
    return _integer(value, top)


def _plain(item: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The row (``COLUMNS``' order) of a record whose every value is already storable
    (the record a contract call makes), or None: then ``clean_record`` checks it field
    by field. Exact type tests only, so the writer's cost per record stays small: its
    numbers (``_plain_numbers``) and its shape (``stored_shape``)."""
    if type(item) is not tuple or len(item) != 20:  # CallRecord's 20 fields
        return None
    ts, name, digest, label, success, first, attempts, remedies, preflight, tokens_in, \
        tokens_out, cost, latency, engine, model, trials, kind, faults, shadow, _ = item
    if not _plain_numbers(ts, latency, tokens_in, tokens_out, cost):
        return None
    shape = stored_shape((name, digest, label, kind, engine, model, success, first,
                          attempts, remedies, preflight, trials, faults, shadow))
    if shape is None:
        return None
    name, digest, label, kind, engine, model, success, first, attempts, remedies, \
        preflight, encoded, faults, shadow = shape
    return (ts, name, digest, label, success, first, attempts, remedies, preflight,
            tokens_in, tokens_out, cost, latency, engine, model, encoded, kind, faults,
            shadow)


plain_row = _plain  # the writer's fast path, tried before ``clean_record``


def _plain_numbers(ts: object, latency: object, tokens_in: object, tokens_out: object,
                   cost: object) -> bool:
    """A record's own numbers are storable as they are (exact types, in range)."""
    return (type(ts) is float and ts - ts == 0 and type(latency) is float
            and latency >= 0 and latency - latency == 0
            and (tokens_in is None or (type(tokens_in) is int and 0 <= tokens_in <= INT64))
            and (tokens_out is None
                 or (type(tokens_out) is int and 0 <= tokens_out <= INT64))
            and (cost is None or (type(cost) is float and cost >= 0 and cost - cost == 0)))


def stored_shape(shape: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A record's shape (``SHAPE_COLUMNS``' values as the record holds them: booleans,
    the trials as a tuple) as stored, when every value is storable unchanged; else
    None (then ``clean_record`` checks the record field by field). Run once per
    distinct shape, not per record (``hoare.stats.shapes``). The texts (a caller's names,
    its label, its engine: the same few strings call after call) are looked up among
    those already found storable unchanged (``_storable``), and the trials among those
    already encoded."""
    if type(shape) is not tuple or len(shape) != 14:
        return None
    name, digest, label, kind, engine, model, success, first, attempts, remedies, \
        preflight, trials, faults, shadow = shape
    if not (type(success) is bool and type(first) is bool
            and type(attempts) is int and 0 <= attempts <= _INT32
            and type(remedies) is int and 0 <= remedies <= _INT32
            and type(faults) is int and 0 <= faults <= _INT32
            and type(shadow) is int and 0 <= shadow <= _INT32
            and type(name) is str and type(digest) is str and type(label) is str
            and type(kind) is str and (preflight is None or type(preflight) is str)
            and (engine is None or type(engine) is str)
            and (model is None or type(model) is str) and type(trials) is tuple):
        return None
    texts = (name, digest, label, kind, preflight, engine, model)
    if not _STORABLE.issuperset(texts):  # exact str or None only: their own hash and eq
        for text in texts:
            if text not in _STORABLE and not _storable(text):
                return None
    try:  # a tuple holding something unhashable (a list) is not a known one
        encoded = _ENCODED.get(trials)
    except TypeError:
        return None
    if encoded is None:
        return None
    return (name, digest, label, kind, engine, model, int(success), int(first), attempts,
            remedies, preflight, encoded, faults, shadow)


_NONE = type(None)
_COLUMNS = 19  # a row's values (CallRecord's fields but the families)


class PlainBatch(NamedTuple):
    """A batch of records whose own numbers are storable as they are, column by
    column, with each record's shape as the record holds it, to be looked up
    (``hoare.stats.shapes.ShapeIds``) and checked once per distinct shape
    (``stored_shape``): ``shape_columns`` are ``SHAPE_COLUMNS``' values, but the trials
    by identity (``id``: the same interned tuple call after call, ``call_record``'s;
    hashing an ``int`` never runs a caller's code, and costs less than hashing the
    pairs); the trials themselves are ``trials``."""

    ts: list[Any]
    latency: list[Any]
    tokens_in: list[Any]
    tokens_out: list[Any]
    cost: list[Any]
    trials: list[Any]
    shape_columns: tuple[list[Any], ...]

    def shapes(self) -> list[tuple[Any, ...]]:
        """Each record's shape, or, for a batch of one shape (every column one value:
        the common case, told in C at a few nanoseconds a value), that shape alone.
        The columns hold exact ``str``, ``int``, ``bool`` and None only: comparing them
        runs no caller's code, and equal values are the same value."""
        columns = self.shape_columns
        count = len(self.ts)
        if all(column.count(column[0]) == count for column in columns):
            return [tuple(column[0] for column in columns)]
        return list(zip(*columns, strict=True))

    def numbers(self, shape_ids: list[int]) -> list[Any]:
        """The ``call_numbers`` rows (``NUMBER_COLUMNS``' order), flat, given the id of
        each record's shape."""
        width = 6
        rows: list[Any] = [None] * (len(self.ts) * width)
        for index, column in enumerate((self.ts, shape_ids, self.latency, self.tokens_in,
                                        self.tokens_out, self.cost)):
            rows[index::width] = column
        return rows


TRIALS_AT = 11  # where a shape holds its trials (``SHAPE_COLUMNS``)


def plain_batch(values: list[Any], width: int) -> PlainBatch | None:
    """A batch of records queued flat (``width`` values each, in ``CallRecord``'s
    order) as a ``PlainBatch``, when every record's numbers pass ``_plain``'s checks and
    every value of its shape has the exact type ``stored_shape`` takes (so that the
    shapes hash and compare as plain values, and a shape equal to one already checked
    is stored as that one); else None (then each record is checked on its own). The
    checks run column by column in C (a set of types, a min, a max per column) rather
    than record by record in Python."""
    count, rest = divmod(len(values), width)
    if rest or count == 0 or width != _COLUMNS + 1:
        return None
    (ts, name, digest, label, success, first, attempts, remedies, preflight, tokens_in,
     tokens_out, cost, latency, engine, model, trials, kind, faults, shadow) = (
        values[index::width] for index in range(_COLUMNS))
    if not (_kinds(ts) == {float} and all(map(math.isfinite, ts))
            and _kinds(latency) == {float} and all(map(math.isfinite, latency))
            and min(latency) >= 0 and _token_counts(tokens_in, tokens_out)
            and _optional_amounts(cost)
            and set(map(type, chain(name, digest, label, kind))) == {str}
            and set(map(type, chain(preflight, engine, model))) <= {str, _NONE}
            and set(map(type, chain(success, first))) == {bool}
            and set(map(type, chain(attempts, remedies, faults, shadow))) == {int}
            and _kinds(trials) == {tuple}):
        return None
    return PlainBatch(ts, latency, tokens_in, tokens_out, cost, trials, (
        name, digest, label, kind, engine, model, success, first, attempts, remedies,
        preflight, list(map(id, trials)), faults, shadow))


def _token_counts(tokens_in: list[Any], tokens_out: list[Any]) -> bool:
    """Both columns ``_optional_counts``; when neither holds None (the engine reported
    its usage), in one pass."""
    if set(map(type, chain(tokens_in, tokens_out))) == {int}:
        low: int = min(min(tokens_in), min(tokens_out))
        high: int = max(max(tokens_in), max(tokens_out))
        return low >= 0 and high <= INT64
    return _optional_counts(tokens_in) and _optional_counts(tokens_out)


def _kinds(column: list[Any]) -> set[type]:
    return set(map(type, column))


def _present(column: list[Any]) -> list[Any] | None:
    """The values that are not None; None when there is another kind of value than
    ``int``, ``float`` or None (exact types)."""
    kinds = _kinds(column)
    if not kinds <= {int, float, _NONE}:
        return None
    return [value for value in column if value is not None] if _NONE in kinds else column


def _optional_counts(column: list[Any]) -> bool:
    """Every value None or an ``int`` (exactly) in ``0..INT64``."""
    present = _present(column)
    return present is not None and (not present or (
        _kinds(present) == {int} and min(present) >= 0 and max(present) <= INT64))


def _optional_amounts(column: list[Any]) -> bool:
    """Every value None or a finite ``float`` (exactly) >= 0."""
    present = _present(column)
    return present is not None and (not present or (
        _kinds(present) == {float} and all(map(math.isfinite, present))
        and min(present) >= 0))


# Exact ``str`` values found storable unchanged (and None): each text of a record is
# checked once per process, not once per record; bounded, past the bound texts are
# checked every time.
_STORABLE: set[str | None] = {None}
_STORABLE_LIMIT = 4096


def _storable(text: object) -> bool:
    """``text`` is an exact ``str`` that ``storable_text`` keeps unchanged: UTF-8
    (ASCII, here: the common case, checked in C), no NUL, within ``TEXT_LIMIT``;
    remembered in ``_STORABLE``. A ``str`` subclass is never taken as it is (its
    ``__eq__`` and ``__hash__`` are its own): the field-by-field check copies it."""
    if type(text) is not str or not text.isascii() or "\x00" in text \
            or len(text) > TEXT_LIMIT:
        return False
    if len(_STORABLE) < _STORABLE_LIMIT and len(text) <= 1024:  # at most ~4 MB kept
        _STORABLE.add(text)
    return True


def clean_record(item: tuple[Any, ...], problems: list[str]) -> tuple[Any, ...] | None:
    """``item`` (the fields of a ``CallRecord``) as a row every back end accepts, the
    problems noted in ``problems``; None when a field that cannot be replaced (the
    time, the names, the outcome, the latency) is unusable: the record is skipped."""
    fast = _plain(item)
    if fast is not None:
        return fast
    try:
        fields = tuple.__getitem__(item, slice(None)) if isinstance(item, tuple) else ()
    except Exception:
        fields = ()
    if len(fields) < 16:
        problems.append("shape: not a call record")
        return None
    fields = fields + (("contract", 0, 0)[len(fields) - 16:] if len(fields) < 19 else ())
    ts, name, digest, label, success, first, attempts, remedies, preflight, tokens_in, \
        tokens_out, cost, latency, engine, model, trials, kind, faults, shadow = fields[:19]
    row: list[Any] = []
    moment = finite_number(ts)
    if moment is None:
        problems.append(f"ts: {shown_value(ts)} is not a finite time")
        return None
    row.append(moment)
    for field, value in (("contract", name), ("contract_hash", digest), ("label", label)):
        if not isinstance(value, str):
            problems.append(f"{field}: {shown_value(value)} is not text")
            return None
        row.append(_sanitized_text(field, value, problems))
    for field, value in (("success", success), ("first_attempt", first)):
        flag = _integer(value, 1)
        if flag is None:
            problems.append(f"{field}: {shown_value(value)} is not a boolean")
            return None
        row.append(flag)
    for field, value in (("attempts", attempts), ("remedies", remedies)):
        row.append(_clamped(field, value, problems))
    row.append(_optional_text("preflight", preflight, problems))
    for field, value in (("input_tokens", tokens_in), ("output_tokens", tokens_out)):
        count = _integer(value, INT64)
        if count is None and value is not None:
            problems.append(f"{field}: {shown_value(value)} is not a count in "
                            f"0..2**63-1: stored as NULL")
        row.append(count)
    price = finite_number(cost)
    if (price is None and cost is not None) or (price is not None and price < 0):
        problems.append(f"cost: {shown_value(cost)} is not a finite amount >= 0: "
                        f"stored as NULL")
        price = None
    row.append(price)
    elapsed = finite_number(latency)
    if elapsed is None or elapsed < 0:
        problems.append(f"latency_ms: {shown_value(latency)} is not a finite duration")
        return None
    row.append(elapsed)
    row.append(_optional_text("engine", engine, problems))
    row.append(_optional_text("model", model, problems))
    row.append(_trials_text(trials, problems))
    if not isinstance(kind, str):
        problems.append(f"kind: {shown_value(kind)} is not text: stored as 'contract'")
        kind = "contract"
    row.append(_sanitized_text("kind", kind, problems))
    row.append(_clamped("provider_faults", faults, problems))
    row.append(_clamped("shadow_refusals", shadow, problems))
    return tuple(row)


def shown_value(value: object) -> str:
    """A short description of a bad value for a warning (never its dunders)."""
    if isinstance(value, (bool, int, float)) and type(value) in (bool, int, float):
        text = repr(value)
        return text if len(text) <= 40 else f"an integer of {len(text)} digits"
    if isinstance(value, str):
        return f"text of {len(value)} character(s)"
    return f"a {type(value).__name__}"


def _sanitized_text(field: str, value: str, problems: list[str]) -> str:
    text = storable_text(value)
    if text != value:
        problems.append(f"{field}: text that is not UTF-8, holds NUL or is longer than "
                        f"{TEXT_LIMIT} characters: stored escaped or cut")
    return text


def _optional_text(field: str, value: object, problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{field}: {shown_value(value)} is not text: stored as NULL")
        return None
    return _sanitized_text(field, value, problems)


def _clamped(field: str, value: object, problems: list[str]) -> int:
    """A count of a NOT NULL column: out of range clamped, not a count 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = int.__index__(value)
        if 0 <= number <= _INT32:
            return number
        problems.append(f"{field}: {shown_value(value)} out of 0..2**31-1: clamped")
        return min(max(number, 0), _INT32)
    count = _integer(value, _INT32)
    if count is None:
        problems.append(f"{field}: {shown_value(value)} is not a count: stored as 0")
        return 0
    return count


def _trials_text(trials: object, problems: list[str]) -> str:
    """The trials as JSON: the cached text of a well-formed tuple, else the pairs that
    are (family text, passed boolean), at most ``TRIALS_LIMIT`` of them."""
    if type(trials) is tuple and len(trials) <= TRIALS_LIMIT and all(
            type(pair) is tuple and len(pair) == 2 and type(pair[0]) is str
            and len(pair[0]) <= TEXT_LIMIT and type(pair[1]) is bool for pair in trials):
        try:
            return _encoded(trials)
        except ValueError:
            pass
    kept: list[tuple[str, bool]] = []
    try:
        for pair in trials if isinstance(trials, (tuple, list)) else ():
            if len(kept) == TRIALS_LIMIT:
                break
            if isinstance(pair, (tuple, list)) and len(pair) == 2 \
                    and isinstance(pair[0], str) and _integer(pair[1], 1) is not None:
                kept.append((storable_text(pair[0]), bool(_integer(pair[1], 1))))
    except Exception:
        pass
    problems.append("trials: not a sequence of (family, passed) pairs of at most "
                    f"{TRIALS_LIMIT}: the well-formed ones kept")
    return json.dumps(kept)



_ENCODED: dict[tuple[tuple[str, bool], ...], str] = {}


def _encoded(trials: tuple[tuple[str, bool], ...]) -> str:
    """``trials`` as JSON; the same few tuples recur call after call, so the text is
    kept (bounded) rather than encoded again."""
    text = _ENCODED.get(trials)
    if text is None:
        text = json.dumps(trials)
        if len(_ENCODED) < 4096:
            _ENCODED[trials] = text
    return text
