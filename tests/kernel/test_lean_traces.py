"""lean/HoareKernel/Traces.lean is generated from the Python kernel and kept in step.

Each of its examples states that the Lean model's `run_call` (or `tracked`) gives, on one
scripted scenario, exactly the summary the Python kernel produced; when Lean runs they
are refinement checks. Here: the file is what the kernel produces today, every invariant
of spec/invariants.toml has at least one example, and no example trusts the compiler.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.kernel_support import lean_traces

ROOT = Path(__file__).resolve().parents[2]


def test_traces_file_is_up_to_date() -> None:
    expected = lean_traces.render()
    actual = lean_traces.TRACES.read_text(encoding="utf-8")
    assert actual == expected, (
        "lean/HoareKernel/Traces.lean is stale: the kernel's behaviour on a scenario changed. "
        "Run `python -m tests.kernel_support.lean_traces` and check the diff: a changed "
        "summary means the Lean model must change the same way.")


def test_rendering_is_deterministic() -> None:
    assert lean_traces.render() == lean_traces.render()


def test_every_invariant_has_a_trace_example() -> None:
    spec = tomllib.loads((ROOT / "spec" / "invariants.toml").read_text(encoding="utf-8"))
    ids = {str(inv["id"]) for inv in spec["invariant"]}
    # a library rule (spec §8) is built on the kernel's transitions: a trace names it
    # where the kernel's side of it shows (a stopped stream is a type violation), but
    # what is not the kernel's (a stream's parse, a sample buffer) has no trace
    kernel_ids = {str(inv["id"]) for inv in spec["invariant"] if inv["scope"] != "library"}
    text = lean_traces.TRACES.read_text(encoding="utf-8")
    named = {name.strip() for line in re.findall(r"^-- invariants: (.*)$", text, re.M)
             for name in line.split(",")}
    missing = kernel_ids - named
    assert missing == set(), f"invariants without a trace example: {sorted(missing)}"
    assert named - ids == set(), f"examples name unknown invariants: {sorted(named - ids)}"


def test_examples_are_checked_by_the_kernel_not_the_compiler() -> None:
    text = lean_traces.TRACES.read_text(encoding="utf-8")
    examples = re.findall(r"^example\b", text, re.M)
    assert len(examples) >= len(lean_traces.SCENARIOS)
    assert text.count(":= by decide +kernel") == len(examples)
    assert "native_decide" not in text.replace("never `native_decide`", "")
    root = (ROOT / "lean" / "HoareKernel.lean").read_text(encoding="utf-8")
    assert "import HoareKernel.Traces" in root  # Lake builds only what the root imports


@pytest.mark.parametrize("scenario", lean_traces.SCENARIOS, ids=lambda s: s.name)
def test_scenario_matches_the_oracle_ending(scenario: lean_traces.Scenario) -> None:
    """The scripted scenarios end as the spec says (so a trace is not silently vacuous)."""
    run = lean_traces.run_python(scenario)
    policy = scenario.policy
    if run.ending == 3:
        assert scenario.forward[0] == "raise"
        return
    if run.ending == 4:  # a Sleep raised: the call ended there, before forward (§6)
        assert scenario.sleep_raises is not None and run.outcome is None
        assert run.forwards == [] and run.handlers == 0
        assert len(run.generates) == scenario.sleep_raises + 1  # one call per sleep before
        return
    assert run.outcome is not None
    if run.outcome.success:
        assert run.ending in (0, 2) and run.forwards == [run.outcome.input_used]
        assert run.handlers == 0
    elif run.ending == 1:  # enforce or quick_enforce: no forward
        assert run.forwards == [] and run.outcome.policy.value in ("enforce", "quick_enforce")
    else:
        assert run.forwards == [run.outcome.input_used] and policy in ("observe", "ignore")
    engine_calls = [g for g in run.generates if g.phase.value == "post"]
    assert len(engine_calls) <= (scenario.tries if scenario.post_remedy else 1)
