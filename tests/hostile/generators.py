"""Hostile values, as named plain lists (for the child-process sweep, where each case
must be named in a report) and as hypothesis strategies (for in-process properties).

Every value is made by a factory, so a 10 MB text exists only while its case runs.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st


class HostileDunder(Exception):
    """What a hostile object's dunder raises: user code's own exception, which hoare
    may let through unchanged (never wrapped into AttributeError, RecursionError...)."""


def _raiser(dunder: str) -> Callable[..., Any]:
    def raise_(*_args: object, **_kwargs: object) -> Any:
        raise HostileDunder(f"{dunder} raised")
    raise_.__name__ = dunder
    return raise_


DUNDERS = ("__str__", "__repr__", "__format__", "__bool__", "__eq__", "__hash__")


def _object_raising(dunder: str) -> object:
    namespace: dict[str, Any] = {dunder: _raiser(dunder)}
    if dunder == "__eq__":
        namespace["__hash__"] = object.__hash__  # defining __eq__ alone drops __hash__
    return type(f"Raises{dunder.strip('_').title()}", (), namespace)()


class RaisesEverything:
    """Every dunder a library may touch raises (and ``__getattr__`` too)."""

    def __getattr__(self, name: str) -> Any:
        raise HostileDunder(f"__getattr__({name!r}) raised")


for _name in (*DUNDERS, "__len__", "__iter__", "__int__", "__float__", "__index__",
              "__lt__", "__getitem__", "__contains__"):
    setattr(RaisesEverything, _name, _raiser(_name))


NESTING = 100_000
BIG = 10 * 1024 * 1024

# Text from outside the process: name -> factory.
TEXTS: dict[str, Callable[[], object]] = {
    "ten_megabytes": lambda: "x" * BIG,
    "json_nested_100000": lambda: "[" * NESTING + "]" * NESTING,
    "json_object_nested_100000": lambda: '{"a":' * NESTING + "1" + "}" * NESTING,
    "invalid_utf8_bytes": lambda: b"\xff\xfe\xc3(\xa0\xa1\xed\xa0\x80",
    "lone_surrogate": lambda: "a\ud800b\udfff",
    "control_characters": lambda: "".join(chr(c) for c in range(32)) + "\x7f\x1b[2J\u202e",
    "long_run_of_one_character": lambda: "{" * 1_000_000,
    "max_code_point": lambda: "\U0010ffff" * 1000,
    "nul_bytes": lambda: "a\x00b",
    "empty": lambda: "",
}

# Numbers from outside the process (usage, logprobs, stored rows, CLI input).
NUMBERS: dict[str, Callable[[], object]] = {
    "nan": lambda: math.nan,
    "inf": lambda: math.inf,
    "minus_inf": lambda: -math.inf,
    "negative": lambda: -1,
    "negative_float": lambda: -0.5,
    "minus_zero": lambda: -0.0,
    "ten_to_the_20": lambda: 10**20,
    "huge_float": lambda: 1e308,
    "not_a_number_text": lambda: "12",
    "none": lambda: None,
    "bool": lambda: True,
    "list": lambda: [1],
}

OBJECTS: dict[str, Callable[[], object]] = {
    **{f"raises{d}": (lambda d=d: _object_raising(d)) for d in DUNDERS},
    "raises_everything": RaisesEverything,
}


# The BaseExceptions the hostile callbacks raised in the current case, in order: the
# runner checks the first one reached the caller unchanged.
FIRED: list[BaseException] = []


def _raising_callable(exception: type[BaseException]) -> Callable[..., Any]:
    def callback(*_args: object, **_kwargs: object) -> Any:
        raised = exception("hostile callback")
        FIRED.append(raised)
        raise raised
    callback.__name__ = f"raises_{exception.__name__}"
    return callback


async def _async_callable(*_args: object, **_kwargs: object) -> Any:
    return True


# Callables handed where hoare calls back (predicates, forward, engines, handlers,
# tools): BaseExceptions must propagate unchanged; an async one where a sync one is
# expected is refused or awaited, never silently truthy.
INTERRUPTS: dict[str, type[BaseException]] = {
    "KeyboardInterrupt": KeyboardInterrupt,
    "SystemExit": SystemExit,
    "CancelledError": asyncio.CancelledError,
}
CALLBACKS: dict[str, Callable[[], object]] = {
    **{f"raises_{n}": (lambda e=e: _raising_callable(e)) for n, e in INTERRUPTS.items()},
    "async_def": lambda: _async_callable,
}

ALL_VALUES: dict[str, Callable[[], object]] = {
    **{f"text:{k}": v for k, v in TEXTS.items()},
    **{f"number:{k}": v for k, v in NUMBERS.items()},
    **{f"object:{k}": v for k, v in OBJECTS.items()},
    **{f"callback:{k}": v for k, v in CALLBACKS.items()},
}


def values(*families: str) -> Iterator[tuple[str, Callable[[], object]]]:
    """The named factories of the given families (text, number, object, callback)."""
    for name, factory in ALL_VALUES.items():
        if name.split(":", 1)[0] in families:
            yield name, factory


# Hostile paths: name -> factory(folder) -> the path.
def _fifo(folder: Path) -> Path:
    path = folder / "fifo"
    os.mkfifo(path)
    return path


def _dangling_symlink(folder: Path) -> Path:
    path = folder / "dangling"
    path.symlink_to(folder / "nowhere")
    return path


def _symlink_loop(folder: Path) -> Path:
    path = folder / "loop"
    path.symlink_to(path)
    return path


def _read_only(folder: Path) -> Path:
    inner = folder / "ro"
    inner.mkdir()
    path = inner / "file"
    path.write_text("", encoding="utf-8")
    path.chmod(stat.S_IRUSR)
    inner.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return path


def _foreign_sqlite(folder: Path) -> Path:
    path = folder / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE calls (id TEXT, body BLOB)")
        db.execute("INSERT INTO calls VALUES ('x', x'00ff')")
        db.execute("CREATE TABLE meta (k, v)")
        db.execute("INSERT INTO meta VALUES ('schema_version', 'banana')")
    db.close()
    return path


def _newer_schema(folder: Path) -> Path:
    path = folder / "newer.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 999999")
        db.execute("CREATE TABLE hoare_meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO hoare_meta VALUES ('schema_version', '999999')")
    db.close()
    return path


def _not_sqlite(folder: Path) -> Path:
    path = folder / "garbage.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    return path


def _directory(folder: Path) -> Path:
    path = folder / "a_directory"
    path.mkdir()
    return path


def _invalid_utf8_lines(folder: Path) -> Path:
    path = folder / "bad.jsonl"
    path.write_bytes(b'{"x": 1}\n\xff\xfe\n' + b"[" * NESTING + b"\n" + b'{"x": NaN}\n'
                     + b'{"x": 1e999}\n' + b"\x00\n")
    return path


PATHS: dict[str, Callable[[Path], Path]] = {
    "fifo": _fifo,
    "dangling_symlink": _dangling_symlink,
    "symlink_loop": _symlink_loop,
    "read_only": _read_only,
    "foreign_sqlite": _foreign_sqlite,
    "newer_schema": _newer_schema,
    "not_sqlite": _not_sqlite,
    "directory": _directory,
    "invalid_utf8_lines": _invalid_utf8_lines,
}


# Hypothesis strategies over the same classes, for in-process properties.
def outside_numbers() -> st.SearchStrategy[object]:
    """Any number a server, a file or a user may send, and things that are not numbers."""
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([10**20, -(10**20), 2**63, 2**64, -1, -0.0]),
        st.none(), st.booleans(), st.text(max_size=5),
        st.sampled_from([[1], {"n": 1}, b"1"]),
    )


def outside_text(max_size: int = 200) -> st.SearchStrategy[str]:
    """Text to U+10FFFF with surrogates and controls, plus runs of one character and
    deep nesting."""
    return st.one_of(
        st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=max_size),
        st.builds(lambda c, n: c * n, st.sampled_from(list('{["\\\x00a\ud800')),
                  st.integers(0, 50_000)),
        st.integers(1, 20_000).map(lambda n: "[" * n + "]" * n),
    )


def secret_spellings(secret: str) -> list[str]:
    """Every way a secret may be written out: raw, stripped, repr-escaped, JSON-escaped,
    URL-quoted."""
    from urllib.parse import quote, quote_plus

    spellings = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1],
                 quote(secret, safe=""), quote_plus(secret)}
    return sorted(s for s in spellings if s)
