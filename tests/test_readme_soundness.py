"""The README's soundness table of registered calls is the registry's own rendering."""

from __future__ import annotations

import re
from pathlib import Path

from hoare.verifier.calls.registry import markdown_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_registry_table_is_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- registry-table:start -->\n(.*?)<!-- registry-table:end -->",
                      text, re.S)
    assert found, "README lost its registry table markers"
    assert found.group(1) == markdown_table(), (
        "README's table of registered calls is stale: paste markdown_table() "
        "from hoare.verifier.calls.registry between the markers")
