"""Demonstration files are foreign data: whatever a generated YAML or JSONL file holds
(integers past CPython's digit limit, nesting past the recursion limit, ``nan`` and
``inf``, keys that are not text), ``load_demonstrations`` returns examples or raises
``DemonstrationError`` naming the file, never another error; the two entry formats
(hoare's ``answer`` and Delphyne's ``answers: [{answer}]``) take and refuse the same
answers and args; and a loaded answer is written to the model as strict JSON.

Failing before: a 5,000-digit integer raised ``ValueError``, a deep list
``RecursionError``, and a hoare-format entry took ``answer: .inf`` (sent to the model
as ``Infinity``) and args keyed by numbers, which a Delphyne-format entry refused."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.queries import DemonstrationError, load_demonstrations

DEEP = 3000
HUGE = "__huge__"  # written as a 5,000-digit integer: CPython cannot make it from text
atoms = st.one_of(
    st.integers(-5, 5), st.just(HUGE), st.just(math.nan), st.just(math.inf),
    st.just(-0.0), st.text(max_size=5), st.none(), st.booleans())


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


values = st.recursive(atoms, lambda inner: st.lists(inner, max_size=3) |
                      st.dictionaries(st.text(max_size=3) | st.integers(0, 3), inner,
                                      max_size=3), max_leaves=8)


def as_yaml(value: Any) -> str:
    """``value`` as YAML text, big integers and non-finite floats included."""
    text = yaml.safe_dump(value, allow_unicode=True, width=10**9)
    return text.replace(HUGE, "9" * 5000)


def load(tmp_path: Path, name: str, text: str) -> list[Any] | DemonstrationError:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    try:
        return load_demonstrations(path)
    except DemonstrationError as error:
        assert str(path)[:50] in str(error)
        return error


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@SETTINGS
@given(args=values, answer=values)
def test_a_file_loads_or_is_a_demonstration_error(tmp_path: Path, args: Any,
                                                  answer: Any) -> None:
    hoare_entry = {"query": "Q", "args": {"x": args}, "answer": answer}
    delphyne_entry = {"query": "Q", "args": {"x": args}, "answers": [{"answer": answer}]}
    texts = [as_yaml([hoare_entry]), as_yaml([delphyne_entry])]
    hoare = load(tmp_path, "hoare.yaml", texts[0])
    delphyne = load(tmp_path, "delphyne.yaml", texts[1])
    # the two formats agree on what they take
    assert isinstance(hoare, DemonstrationError) == isinstance(delphyne, DemonstrationError)
    for loaded in (hoare, delphyne):
        if not isinstance(loaded, DemonstrationError):
            for example in loaded:  # a text answer is the text as written, else JSON
                if example.answer_text is None:
                    json.dumps(json.loads(example.text()), allow_nan=False)


@SETTINGS
@given(st.lists(st.sampled_from([
    '{"query": "Q", "args": {}, "answer": 1}', '{"query": "Q", "args": {"x": NaN}, '
    '"answer": Infinity}', '{"query": "Q", "args": {}, "answer": ' + "9" * 5000 + "}",
    '{"query": "Q", "args": {}, "answer": ' + nested(DEEP) + "}", "", "{oops"]),
    min_size=1, max_size=4))
def test_a_jsonl_file_loads_or_is_a_demonstration_error(tmp_path: Path,
                                                        lines: list[str]) -> None:
    loaded = load(tmp_path, "demo.jsonl", "\n".join(lines))
    if not isinstance(loaded, DemonstrationError):
        for example in loaded:
            if example.answer_text is None:
                json.dumps(json.loads(example.text()), allow_nan=False)


def test_nesting_past_the_recursion_limit_is_a_demonstration_error(tmp_path: Path) -> None:
    # PyYAML reads deep text slowly (~0.7 s): one file of each format, not drawn
    for name, entry in (("hoare.yaml", "- query: Q\n  args: {}\n  answer: 1\n"),
                        ("delphyne.yaml", "- query: Q\n  args: {}\n  answers: []\n")):
        deep = entry.replace("query: Q", f"query: Q\n  tags: {nested(1100)}", 1)
        assert isinstance(load(tmp_path, name, deep), DemonstrationError)


def test_a_valid_file_still_loads(tmp_path: Path) -> None:
    loaded = load(tmp_path, "ok.yaml", as_yaml([
        {"query": "Q", "args": {"x": [1, -0.0]}, "answer": {"k": [1, 2]}},
        {"query": "Q", "args": {}, "answers": [{"answer": "text"}, {"answer": 3}]}]))
    assert not isinstance(loaded, DemonstrationError) and len(loaded) == 3
    with pytest.raises(DemonstrationError, match="'answer'"):
        load_demonstrations([{"query": "Q", "args": {}, "answer": math.nan}])
