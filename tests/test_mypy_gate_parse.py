"""The mypy ratchet's reading of mypy's output and of its baseline (tests/mypy_gate.py):
exact counts over generated outputs, and refusal of whatever it cannot account for.
The real mypy run is tests/test_mypy_gate.py (serial)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mypy_gate import (
    BASELINE,
    GateError,
    check_output,
    compare,
    count_errors,
    format_baseline,
    parse_baseline,
)

# A path as mypy prints one: segments of any text but ':' and line breaks (spaces and
# non-ASCII included), not starting with a space, ending in .py or .pyi.
_SEGMENT = st.text(st.characters(blacklist_characters=":/\\\r\n\x0b\x0c\x1c\x1d\x1e\x85"
                                 "\u2028\u2029", blacklist_categories=("Cs",)),
                   min_size=1, max_size=8).filter(lambda s: not s[0].isspace())
_PATH = st.builds(lambda parts, suffix: "/".join(parts) + suffix,
                  st.lists(_SEGMENT, min_size=1, max_size=4), st.sampled_from([".py", ".pyi"]))
# a message may itself contain ": error: ", colons and brackets
_MESSAGE = st.text(st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                                 blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(
    ['Name "x" is not defined  [name-defined]', "see a.py:3: error: here", ": error: "])
_DIAGNOSTIC = st.tuples(_PATH, st.none() | st.integers(1, 10**6),
                        st.none() | st.integers(1, 500), st.sampled_from(["error", "note"]),
                        _MESSAGE)


def _render(path: str, line: int | None, column: int | None, severity: str,
            message: str) -> str:
    where = path if line is None else f"{path}:{line}" + (
        "" if column is None else f":{column}")
    return f"{where}: {severity}: {message}"


def _summary(counts: Counter[str]) -> str:
    total = sum(counts.values())
    return (f"Found {total} error{'s' if total != 1 else ''} in {len(counts)} "
            f"file{'s' if len(counts) != 1 else ''} (checked 9 source files)")


@given(st.lists(_DIAGNOSTIC, max_size=30))
def test_errors_are_counted_per_file_exactly(diagnostics: list[tuple]) -> None:
    expected = Counter(d[0] for d in diagnostics if d[3] == "error")
    output = "\n".join(_render(*d) for d in diagnostics)
    assert count_errors(output) == expected
    if expected:
        check_output(1, output + "\n" + _summary(expected) + "\n")
    else:
        check_output(0, output + "\nSuccess: no issues found in 9 source files\n")


@given(st.lists(_DIAGNOSTIC.filter(lambda d: d[3] == "error"), min_size=1, max_size=20),
       st.data())
def test_output_the_summary_does_not_account_for_is_refused(
        diagnostics: list[tuple], data: st.DataObject) -> None:
    """An error line of another shape (here: one dropped from what is read), a crash's
    exit status or a clean status with errors: the gate says it cannot read mypy."""
    counts = Counter(d[0] for d in diagnostics)
    lines = [_render(*d) for d in diagnostics]
    summary = _summary(counts)
    output = "\n".join(lines) + "\n" + summary
    with pytest.raises(GateError, match="does not account"):
        check_output(data.draw(st.sampled_from([0, 2, 3, -11]), label="status"), output)
    # one more error than read: mypy printed one whose shape is not known
    unread = summary.replace(f"Found {sum(counts.values())} ",
                             f"Found {sum(counts.values()) + 1} ", 1)
    with pytest.raises(GateError, match="does not account"):
        check_output(1, "\n".join(lines) + "\n" + unread)
    with pytest.raises(GateError, match="does not account"):
        check_output(1, "\n".join(lines))  # no summary: a crash after some errors


def test_a_crash_or_a_usage_error_is_refused() -> None:
    with pytest.raises(GateError, match="exited 2"):
        check_output(2, "mypy: error: Cannot find implementation or library stub\n")
    with pytest.raises(GateError, match="exited 1"):
        check_output(1, "src/hoare: error: Duplicate module named 'hoare'\n"
                        "Found 1 error in 1 file (errors prevented further checking)\n")


@given(st.dictionaries(_PATH.filter(lambda p: p.strip() == p and not p.startswith("#")),
                       st.integers(0, 10**4), max_size=20))
def test_the_baseline_round_trips(counts: dict[str, int]) -> None:
    assert parse_baseline(format_baseline(counts)) == {p: c for p, c in counts.items() if c}


@pytest.mark.parametrize("line", ["src/a.py 3", "src/a.py: 0", "src/a.py: -1", "src/a.py:",
                                  "src/a.txt: 2", "src/a.py: 2 # two", ": 4", "src/a.py: x"])
def test_a_malformed_baseline_line_is_named(line: str) -> None:
    with pytest.raises(GateError, match=r"line 3: expected"):
        parse_baseline(f"# header\n\n{line}\n")


def test_a_path_listed_twice_is_refused() -> None:
    with pytest.raises(GateError, match=r"line 2: src/a\.py is listed twice"):
        parse_baseline("src/a.py: 1\nsrc/a.py: 2\n")


_COUNTS = st.dictionaries(st.sampled_from([f"src/m{i}.py" for i in range(8)]),
                          st.integers(0, 6), max_size=8)


@given(_COUNTS, _COUNTS)
def test_compare_fails_exactly_when_a_file_gets_worse(baseline: dict[str, int],
                                                      current: dict[str, int]) -> None:
    result = compare(baseline, current)
    paths = set(baseline) | set(current)
    assert set(result.worse) == {p for p in paths if current.get(p, 0) > baseline.get(p, 0)}
    assert set(result.better) == {p for p in paths if current.get(p, 0) < baseline.get(p, 0)}
    assert result.ok == all(current.get(p, 0) <= baseline.get(p, 0) for p in paths)
    lowered = result.lowered(baseline)
    # lowering never raises a line, keeps a worse file's line, and leaves nothing better
    assert all(lowered.get(p, 0) <= baseline.get(p, 0) for p in paths)
    assert all(lowered.get(p, 0) == baseline.get(p, 0) for p in result.worse)
    assert not compare(lowered, current).better
    assert all(count > 0 for count in lowered.values())


def test_the_checked_in_baseline_is_empty() -> None:
    """``mypy --strict`` passes on kernel/ and src/hoare (issue 27): the baseline allows
    no error in any file, so the gate is the strict check itself, not a ratchet."""
    assert parse_baseline(BASELINE.read_text(encoding="utf-8")) == {}
