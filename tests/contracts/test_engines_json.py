"""extract_json: fences, prose, strings with braces, truncation, and never raising."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoare.contracts.json_text import extract_json

CASES = [
    # already JSON: returned stripped, untouched
    ('{"a": 1}', '{"a": 1}'),
    ('  \n[1, 2]\n ', "[1, 2]"),
    # markdown fences
    ('```json\n{"a": 1}\n```', '{"a": 1}'),
    ('Here you go:\n```JSON\n{"a": 1}\n```\nAnything else?', '{"a": 1}'),
    ('```\n[1, 2]\n```', "[1, 2]"),
    ('```python\nprint(1)\n```\n```json\n{"b": 2}\n```', '{"b": 2}'),
    ('```text\nno json here\n```\n```\n{"c": 3}\n```', '{"c": 3}'),
    ('```json\n// the answer\n{"d": 4}\n```', '{"d": 4}'),
    # prose around the document
    ('Sure! The answer is {"a": 1}. Hope this helps.', '{"a": 1}'),
    ('Result:\n[{"a": 1}, {"a": 2}]\nDone', '[{"a": 1}, {"a": 2}]'),
    ('Step [1] of 2: {"x": {"y": [1, 2]}}', '{"x": {"y": [1, 2]}}'),
    # braces and quotes inside strings
    ('Answer: {"s": "a } b { c", "t": "say \\"hi\\" }"} end',
     '{"s": "a } b { c", "t": "say \\"hi\\" }"}'),
    ('```json\n{"code": "```py\\nx = 1\\n```"}\n```', '{"code": "```py\\nx = 1\\n```"}'),
    ('x {"s": "]"} y', '{"s": "]"}'),
    # malformed: handed to the parser as is, with the prose removed
    ('The JSON: {"a": 1,} thanks', '{"a": 1,}'),
    ("Here: {'a': 1} ok", "{'a': 1}"),
    ('Here: {"a": [1, 2', '{"a": [1, 2'),
    ('```json\n{"a": 1, "b": ', '{"a": 1, "b":'),
    # nothing JSON-like: the stripped text
    ("  no json at all ", "no json at all"),
    ("", ""),
    ("   \n\t", ""),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_extract_json(text: str, expected: str) -> None:
    assert extract_json(text) == expected


def test_already_json_is_returned_by_identity_after_strip() -> None:
    text = json.dumps({"k": list(range(1000))})
    assert extract_json(text) is text


def test_non_string_input_does_not_raise() -> None:
    assert extract_json(None) == ""  # type: ignore[arg-type]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20)
    | st.sampled_from(["```", "{", "}]", '"', "\\"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12,
)
PROSE = st.text(alphabet=st.characters(blacklist_characters="{}[]`\"'\\"), max_size=40)


@given(value=st.dictionaries(st.text(max_size=8), JSON, min_size=1, max_size=4),
       before=PROSE, after=PROSE, fenced=st.booleans())
def test_documents_survive_prose_and_fences(value: dict[str, object], before: str, after: str,
                                            fenced: bool) -> None:
    document = json.dumps(value, ensure_ascii=False)
    body = f"```json\n{document}\n```" if fenced else document
    assert json.loads(extract_json(f"{before}\n{body}\n{after}")) == value


@given(st.text())
def test_never_raises(text: str) -> None:
    assert isinstance(extract_json(text), str)


def test_truncated_object_is_returned_whole_not_an_inner_value() -> None:
    """A cut-off answer must fail as cut-off JSON, not as a nested array that parses."""
    text = '{"reason": "double charge", "tags": ["refund", "double-charge"], "sev'
    assert extract_json(text) == text
