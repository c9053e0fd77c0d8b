"""The README's contract example runs as printed and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_contract_is_complete_and_under_40_lines() -> None:
    (block,) = [b for b in python_blocks() if "@contract" in b]
    code_lines = [line for line in block.splitlines() if line.strip()]
    assert len(code_lines) < 40
    namespace: dict[str, object] = {"__name__": "readme_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(README), "exec"), namespace)
    printed = out.getvalue().splitlines()
    assert printed == ["sentiment='positive' stars=5", "2"]
