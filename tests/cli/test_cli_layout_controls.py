"""What the commands print for a name read from a store or a module holds no character
that breaks, moves or reorders a terminal line: C0/C1 controls, lone surrogates, and
(failing before) the line and paragraph separators U+2028/U+2029 and the
bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C), which
``hoare stats``/``compare`` tables and ``hoare verify``'s table printed raw: a label
holding U+202E showed its text reversed, U+2028 split the line in a log viewer.

Both escapers are checked (the stats side, ``hoare.stats.values.display_text`` under
``hoare.cli.output.terminal_safe``, and the verifier's table, ``report.model.shown``),
against ``unicodedata`` as the oracle.
"""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.cli.output import terminal_safe, terminal_safe_lines
from hoare.stats.report import render_table, summarize
from hoare.verifier.report.model import shown

_BIDI_CONTROLS = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
_MARKS = {"\u200e", "\u200f", "\u061c"}
_LAYOUT = ["\u2028", "\u2029", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
           "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c", "\x1b",
           "\x85", "\ud800", "\udfff", "\n", "\r"]
TEXT = st.text(st.one_of(st.characters(blacklist_categories=()), st.sampled_from(_LAYOUT)),
               max_size=40)


def _unsafe(char: str, *, newline_allowed: bool = False) -> bool:
    if newline_allowed and char == "\n":
        return False
    return unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") or char in _MARKS or \
        unicodedata.bidirectional(char) in _BIDI_CONTROLS


@settings(max_examples=400, deadline=None)
@given(text=TEXT)
def test_terminal_text_holds_no_layout_control(text: str) -> None:
    for out in (terminal_safe(text), shown(text)):
        assert not any(_unsafe(c) for c in out), ascii(out)
    assert not any(_unsafe(c, newline_allowed=True) for c in shown(text, lines=True))
    assert not any(_unsafe(c, newline_allowed=True) for c in terminal_safe_lines(text))


@settings(max_examples=100, deadline=None)
@given(label=TEXT, contract=TEXT)
def test_a_stats_table_of_hostile_names_keeps_its_lines(label: str, contract: str) -> None:
    rows: list[dict[str, object]] = [{"id": k, "ts": 1.0 + k, "contract": contract, "label": label,
             "success": k % 2 == 0, "first_attempt": True, "attempts": 1, "cost": None,
             "latency_ms": 1.0, "input_tokens": 0, "output_tokens": 0, "preflight": None,
             "kind": "contract", "provider_faults": 0, "shadow_refusals": 0, "trials": []}
            for k in range(3)]
    table = terminal_safe_lines(render_table(summarize(rows)))
    assert not any(_unsafe(c, newline_allowed=True) for c in table), ascii(table)
    plain = terminal_safe_lines(render_table(summarize(
        [{**row, "label": "L", "contract": "C"} for row in rows])))
    assert table.count("\n") == plain.count("\n")  # no line added or lost


@settings(max_examples=60, deadline=None)
@given(baseline=TEXT, candidate=TEXT, contract=TEXT)
def test_a_comparison_of_hostile_names_keeps_its_lines(baseline: str, candidate: str,
                                                       contract: str) -> None:
    from hoare.stats.compare import compare
    from hoare.stats.compare import render_table as render_comparison

    def rows(label: str) -> list[dict[str, object]]:
        return [{"id": k, "ts": 1.0 + k, "contract": contract, "label": label,
                 "success": k % 3 != 0, "cost": None, "latency_ms": 1.0}
                for k in range(6)]

    def table(a: str, b: str, name: str) -> str:
        result = {"contract": name, **compare(rows(a), rows(b), 0.0, 0.95)}
        return terminal_safe_lines(render_comparison([result], a, b))

    hostile = table(baseline, candidate, contract)
    assert not any(_unsafe(c, newline_allowed=True) for c in hostile), ascii(hostile)
    assert hostile.count("\n") == table("A", "B", "C").count("\n")


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(TEXT, min_size=1, max_size=4), name=TEXT, error=TEXT)
def test_the_verify_table_has_one_line_per_check_whatever_the_messages(
        messages: list[str], name: str, error: str) -> None:
    """A newline in a predicate's message (it is part of a check's message) started a
    line at the table's left edge, where it could read as another check."""
    import re

    from hoare.verifier.report.model import CheckResult, ContractReport, ImportProblem, Report

    report = Report(contracts=[ContractReport(name, checks=[
        CheckResult("predicate_vacuous", "fail", f'"{m}" can never pass', predicate=m)
        for m in messages])], errors=[ImportProblem("t.py", error, "t.py", 1)])
    table = report.render()
    assert not any(_unsafe(c, newline_allowed=True) for c in table), ascii(table)
    lines = table.split("\n")
    starts = [line for line in lines
              if re.match(r"(contract|pipeline|import error:) |  (PASS|FAIL|WARN|UNKNOWN) ",
                          line)]
    assert len(starts) == 1 + len(messages) + 1, table
    # every other line is a detail (indented under its check) or the summary
    for line in lines:
        assert line in starts or line == "" or line.startswith(" " * 12) or \
            re.match(r"\d+ contract\(s\), ", line), (line, table)
