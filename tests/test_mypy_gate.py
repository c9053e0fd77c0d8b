"""The strict-types ratchet in the suite: ``mypy --strict kernel/ src/hoare`` has no
file with more errors than tests/mypy_baseline.txt allows (what ``make lint`` checks;
tests/mypy_gate.py). Serial (tests/conftest.py SERIAL_FILES): mypy over the whole
library is heavy. The parsing is tested in tests/test_mypy_gate_parse.py."""

from __future__ import annotations

import sys
from pathlib import Path

import mypy_gate
import pytest


def test_no_file_has_more_strict_errors_than_the_baseline() -> None:
    baseline = mypy_gate.parse_baseline(mypy_gate.BASELINE.read_text(encoding="utf-8"))
    current = mypy_gate.count_errors(mypy_gate.run_mypy(sys.executable))
    result = mypy_gate.compare(baseline, current)
    assert result.ok, "mypy --strict got worse (errors now, the baseline allows):\n" + \
        "\n".join(f"  {path}: {now} > {allowed}"
                  for path, (allowed, now) in result.worse.items())


def test_the_gate_fails_on_a_real_new_error_and_names_the_file(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """Real mypy on a module with two strict errors against a baseline that allows one:
    the gate exits 1 naming it; allowing three, it passes and says the file improved;
    ``--lower`` then writes two."""
    module = tmp_path / "typed_badly.py"
    module.write_text("def untyped(x):\n    return x\n\n\nvalue: int = 'text'\n")
    path = str(module).replace("\\", "/")
    monkeypatch.setattr(mypy_gate, "TARGETS", (str(module),))
    # a cache of its own: mypy replays a cached module's errors under the path it had
    # when cached (another run's temporary directory)
    monkeypatch.setenv("MYPY_CACHE_DIR", str(tmp_path / "mypy-cache"))
    baseline = tmp_path / "baseline.txt"
    baseline.write_text(f"{path}: 1\n")
    assert mypy_gate.main(["--baseline", str(baseline)]) == 1
    assert f"WORSE {path}: 2 error(s), the baseline allows 1" in capsys.readouterr().out
    baseline.write_text(f"{path}: 3\n")
    assert mypy_gate.main(["--baseline", str(baseline)]) == 0
    assert f"better {path}: 2 error(s), the baseline says 3" in capsys.readouterr().out
    assert mypy_gate.main(["--baseline", str(baseline), "--lower"]) == 0
    assert mypy_gate.parse_baseline(baseline.read_text()) == {path: 2}

