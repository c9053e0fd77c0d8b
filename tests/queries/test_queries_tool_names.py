"""A query offers its tool types under names a native tool call can carry
(``^[a-zA-Z0-9_-]{1,64}$``): for generated class names (Python identifiers reach far
into Unicode) and ``__tool_name__`` texts, ``response_with`` and ``final_tool_call_as``
either refuse the type when the parser is made (``TypeError``) or offer only such
names; a provider would answer 400 to every request otherwise.

Failing before: ``Résumé`` and ``__tool_name__ = "has space"`` were offered as they
were."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import create_model

from hoare.queries import final_tool_call_as, response_with
from hoare.queries.parsers import tool_spec

PROVIDER_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
identifiers = st.text(st.characters(min_codepoint=48, max_codepoint=0x2FFFF,
                                    exclude_categories=("Cs",)), min_size=1, max_size=70
                      ).filter(str.isidentifier)
tool_names = st.none() | st.text(max_size=70)


@settings(max_examples=150, deadline=None)
@given(identifiers, tool_names)
def test_offered_names_are_provider_names_or_refused(name: str,
                                                     tool_name: str | None) -> None:
    tool_type = create_model(name, x=(int, ...))
    if tool_name is not None:
        tool_type.__tool_name__ = tool_name  # type: ignore[attr-defined]  # the class's own
    for make in (lambda: response_with([tool_type]), lambda: final_tool_call_as(tool_type)):
        try:
            parser = make()
        except TypeError as refused:
            assert "native tool call" in str(refused)
            continue
        for offered in parser.tools:
            assert PROVIDER_NAME.fullmatch(tool_spec(offered)["function"]["name"])


def test_a_valid_name_is_offered_as_it_is() -> None:
    tool_type = create_model("Search_v2", q=(str, ...))
    assert tool_spec(response_with([tool_type]).tools[0])["function"]["name"] == "Search_v2"
    with pytest.raises(TypeError, match="native tool call"):
        response_with([create_model("Résumé", q=(str, ...))])
