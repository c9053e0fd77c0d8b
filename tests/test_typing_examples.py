"""``mypy --strict`` passes on the README's contract example and on ``examples/``:
``Contract[In, Out]`` types ``contract_result`` and the call, so no cast is needed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from library_under_test import FROM_WHEEL, LIBRARY

from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_on_the_readme_example_and_examples(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is a dev dependency (make test installs it)")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "@contract" in b]
    example = tmp_path / "readme_example.py"
    example.write_text(block)
    # hoare as the type checker sees an installed package: its own modules are followed
    # for types, and only the checked files' errors count (the wheel's site-packages is
    # found through the interpreter; mypy refuses it on MYPYPATH)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    if not FROM_WHEEL:
        env["MYPYPATH"] = LIBRARY
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "mypy-cache"), str(example), str(ROOT / "examples")],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


class _N(LLMDataModel):
    x: int


def test_typed_and_untyped_contracts_behave_the_same() -> None:
    results = []
    for base in (Contract, Contract[_N, _N]):
        @contract()
        class Double(base):  # type: ignore[valid-type,misc]
            prompt = "p"

            def forward(self, input: _N) -> _N:
                return self.contract_result  # type: ignore[no-any-return]

        results.append(Double(engine=FunctionEngine(lambda r: '{"x": 2}'))(input=_N(x=1)))
    assert results == [_N(x=2), _N(x=2)]
