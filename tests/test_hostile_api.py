"""Every public entry point under hostile input (issue 30, items 2 and 3).

Each kind of entry point of ``tests/hostile/registry.py`` runs in a child process
over every value of its families (``tests/hostile/generators.py``): objects whose
dunders raise, numbers from outside (NaN, ±inf, negative, 10**20, not numbers) as
arguments and as an engine's usage, texts of 10 MB, nested 100,000 deep, invalid
UTF-8, controls, surrogates, callbacks raising KeyboardInterrupt/SystemExit/
CancelledError or async where sync is expected, hostile paths (FIFO, symlinks,
read-only, another application's SQLite file, a newer schema). The properties
(``tests/hostile/properties.py``): only documented exceptions escape, with a text
that does not raise; a callback's BaseException propagates unchanged; no coroutine is
left unawaited, no thread left behind; every case ends (a hang or crash in the child
fails the test naming the case).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile.registry import registry
from hypothesis import given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

import hoare

TESTS = Path(__file__).resolve().parent
KINDS = sorted({entry.kind for entry in registry().values() if entry.drive is not None})
BOUND = 900  # seconds for one kind's child: it only detects a hang


def run_kind(names: list[str]) -> list[dict[str, str]]:
    """Run the entries in a child; every case's verdict, or fail naming the case that
    crashed or hung the child."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.jsonl"
        report.touch()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([LIBRARY, str(TESTS)]),
               "PYTHONFAULTHANDLER": "1", "HOARE_STATS": "", "PYTHONHASHSEED": "0"}
        try:
            done = subprocess.run([sys.executable, "-m", "hostile.runner", str(report),
                                   *names], capture_output=True, text=True, timeout=BOUND,
                                  cwd=folder, env=env)
            tail = (done.stdout + done.stderr)[-3000:]
        except subprocess.TimeoutExpired:
            done, tail = None, "timed out"
        lines = [json.loads(line) for line in report.read_text().splitlines() if line]
    last = lines[-1] if lines else {}
    if done is None or done.returncode != 0 or last.get("verdict") == "start":
        pytest.fail(f"the child died or hung in case {last.get('entry')} / "
                    f"{last.get('value')}: {tail}")
    return [line for line in lines if line["verdict"] != "start"]


@pytest.mark.parametrize("kind", KINDS)
def test_only_documented_exceptions_escape_and_interrupts_propagate(kind: str) -> None:
    """hostile-documented-errors, hostile-interrupts-propagate, hostile-bounded: every
    entry point of this kind, every hostile value."""
    names = sorted(name for name, entry in registry().items()
                   if entry.kind == kind and entry.drive is not None)
    verdicts = run_kind(names)
    assert {line["entry"] for line in verdicts} == set(names)
    bad = [f"{line['entry']} <- {line['value']}: {line['detail']}"
           for line in verdicts if line["verdict"] == "bad"]
    assert not bad, "\n\n".join(bad)


class _Dunder(Exception):
    """What an in-process hostile argument's dunder raises."""


def _raise(*_args: object, **_kwargs: object) -> Any:
    raise _Dunder("a hostile dunder")


_DUNDERS = ("__eq__", "__hash__", "__bool__", "__len__", "__iter__", "__repr__", "__str__",
            "__format__", "__getattr__", "__class__", "__index__", "__float__", "__int__",
            "__lt__", "__gt__", "__fspath__")


def _hostile(names: frozenset[str]) -> object:
    namespace: dict[str, Any] = {name: property(_raise) if name == "__class__" else _raise
                                 for name in names}
    return type("Hostile", (), namespace)()


_CONFIGURE = ("engine", "cache_size", "stats", "label", "stats_retention_days", "preflight")


@contextlib.contextmanager
def _configuration_kept() -> Iterator[Any]:
    """``hoare.configure`` (typed loosely: the arguments are wrong on purpose), the
    settings reset afterwards."""
    try:
        yield hoare.configure
    finally:
        hoare.configure(engine=None, stats=None, label=None, stats_retention_days=None,
                        preflight=None)


@settings(max_examples=80, deadline=None)
@given(names=st.frozensets(st.sampled_from(_DUNDERS), min_size=1),
       keyword=st.sampled_from(_CONFIGURE))
def test_configure_refuses_a_hostile_argument_naming_it(names: frozenset[str],
                                                        keyword: str) -> None:
    """configure() checks its arguments by their real type (never their ``__class__``
    or operators) and names the argument in a text that does not raise."""
    with _configuration_kept() as configure, pytest.raises((TypeError, ValueError)) as raised:
        configure(**{keyword: _hostile(names)})
    text = str(raised.value)
    assert keyword.split("_")[0] in text and "Hostile" in text


@settings(max_examples=150, deadline=None)
@given(days=st.one_of(st.integers(), st.integers(10**300, 10**400), st.floats(),
                      st.sampled_from([-0.0, 0.0, math.nan, math.inf, -math.inf, True])))
def test_configure_takes_only_a_finite_positive_retention(days: float) -> None:
    finite = type(days) is not bool and 0 < days < 10**300
    with _configuration_kept() as configure:
        if finite:
            configure(stats_retention_days=days)
        else:
            with pytest.raises(ValueError, match="stats_retention_days"):
                configure(stats_retention_days=days)


_CONTRACT = ("pre_remedy", "post_remedy", "accumulate_errors", "verbose", "remedy_retry_params",
             "policy", "preflight", "on_violation", "options", "feedback", "feedback_chars",
             "decoding", "resend", "stream")


def _subclass_hostile(base: type, value: object, names: frozenset[str]) -> object:
    """``value`` as an instance of a subclass of ``base`` whose dunders ``names`` raise."""
    namespace: dict[str, Any] = {name: _raise for name in names
                                 if name not in ("__class__", "__getattr__")}
    return type(f"Hostile{base.__name__}", (base,), namespace)(value)


@settings(max_examples=150, deadline=None)
@given(names=st.frozensets(st.sampled_from(_DUNDERS), min_size=1),
       keyword=st.sampled_from(_CONTRACT))
def test_contract_refuses_a_hostile_argument_naming_it(names: frozenset[str],
                                                       keyword: str) -> None:
    """``@contract(...)`` checks its arguments by their real type, before the kernel
    sees them, and names the argument in a text that does not raise (before: the
    object's own exception escaped for 29 argument/dunder pairs)."""
    with pytest.raises((TypeError, ValueError)) as raised:
        hoare.contract(**{keyword: _hostile(names)})
    assert keyword.split("_")[0] in str(raised.value)


@settings(max_examples=150, deadline=None)
@given(names=st.frozensets(st.sampled_from(("__eq__", "__hash__", "__repr__", "__str__",
                                            "__index__", "__lt__", "__gt__", "__bool__",
                                            "__format__")), min_size=1),
       case=st.sampled_from([("policy", str, "observe"), ("feedback", str, "errors"),
                             ("decoding", str, "schema"), ("resend", str, "vary"),
                             ("feedback_chars", int, 4000), ("policy", str, "nonsense"),
                             ("resend", str, "nonsense"), ("feedback_chars", int, 0)]))
def test_contract_reads_a_str_or_int_subclass_argument_as_its_plain_value(
        names: frozenset[str], case: tuple[str, type, object]) -> None:
    """A ``str``/``int`` subclass with raising operators is read as its plain value:
    taken when that value is valid, refused naming the argument when it is not."""
    keyword, base, value = case
    argument = _subclass_hostile(base, value, names)
    valid = value not in ("nonsense", 0)
    if valid:
        hoare.contract(**{keyword: argument})
    else:
        with pytest.raises(ValueError) as raised:
            hoare.contract(**{keyword: argument})
        assert keyword.split("_")[0] in str(raised.value)


@settings(max_examples=100, deadline=None)
@given(names=st.frozensets(st.sampled_from(_DUNDERS), min_size=1),
       key=st.sampled_from(["tries", "delay", "max_delay", "jitter", "backoff", "graceful"]))
def test_contract_refuses_a_hostile_retry_parameter_naming_it(names: frozenset[str],
                                                             key: str) -> None:
    with pytest.raises(ValueError) as raised:
        hoare.contract(remedy_retry_params={key: _hostile(names)})
    assert key in str(raised.value)
