"""The soundness table of registered calls in docs/verify.md is the registry's own rendering."""

from __future__ import annotations

import re
from pathlib import Path

from hoare.verifier.translate.calls.registry import markdown_table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "verify.md"


def test_readme_registry_table_is_the_registry() -> None:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"<!-- registry-table:start -->\n(.*?)<!-- registry-table:end -->",
                      text, re.S)
    assert found, "docs/verify.md lost its registry table markers"
    assert found.group(1) == markdown_table(), (
        "docs/verify.md's table of registered calls is stale: paste markdown_table() "
        "from hoare.verifier.translate.calls.registry between the markers")
