"""The Lean model (lean/HoareKernel/*.lean) and the kernel (kernel/*.py) keep the same names.

The Lean sources are parsed as text (no Lean toolchain here, see lean/README.md); the
kernel is imported as `hoare.kernel`. A rename on either side fails here until the other
side follows.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from pathlib import Path

import pytest

from hoare import kernel

ROOT = Path(__file__).resolve().parents[2]
LEAN = ROOT / "lean"
LEAN_PACKAGE = LEAN / "HoareKernel"
KERNEL = ROOT / "kernel"

# Lean modules with no kernel module: the proofs of the invariants (split by spec section
# under Invariants/) and the concrete traces generated from the kernel.
LEAN_ONLY_MODULES = {"Invariants", "Traces"}

# Fields the model leaves out, and why (the model mirrors every other field).
PYTHON_ONLY_FIELDS: dict[str, dict[str, str]] = {
    "Outcome": {
        "usage": "token counts are summed for reports and never decide anything",
        "clock_marks": "clock readings (timings_ns) never decide anything",
    },
    "Predicate": {
        "uses_context": "a calling convention: the model's check gets the context, may ignore it",
    },
}

ENUMS: dict[str, type[enum.Enum]] = {
    "Policy": kernel.Policy,
    "Phase": kernel.Phase,
    "ViolationKind": kernel.ViolationKind,
    "Verdict": kernel.Verdict,
}

RECORDS: dict[str, type] = {
    "RetryPolicy": kernel.RetryPolicy,
    "ContractConfig": kernel.ContractConfig,
    "Outcome": kernel.Outcome,
    "Violation": kernel.Violation,
    "Attempt": kernel.Attempt,
    "PreflightResult": kernel.PreflightResult,
    "Predicate": kernel.Predicate,
    "Hooks": kernel.Hooks,
    "Rate": kernel.Rate,
    "Stats": kernel.Stats,
}

# Kernel functions and the Lean definitions that model them.
FUNCTIONS = {
    "strictest": "strictest",
    "ContractConfig.generation_budget": "ContractConfig.generation_budget",
    "ContractConfig.pre_remedy_budget": "ContractConfig.pre_remedy_budget",
    "Policy.rank": "Policy.rank",
    "base_delay": "base_delay",
    "backoff_delay": "backoff_delay",
    "evaluate": "evaluate",
    "run_call": "run_call",
    "Outcome.generation_attempts": "Outcome.generation_attempts",
    "Outcome.pre_remedies": "Outcome.pre_remedies",
    "Outcome.post_remedies": "Outcome.post_remedies",
    "SuccessTracker.record": "SuccessTracker.record",
    "SuccessTracker.snapshot": "SuccessTracker.snapshot",
    "Stats.product_estimate": "Stats.product_estimate",
    "wilson_interval": "wilson_interval",
}


def _lean_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(LEAN_PACKAGE.glob("*.lean")))


def _block(text: str, header: str) -> list[str]:
    """The indented lines right after `header` (an `inductive`/`structure` line)."""
    match = re.search(rf"^{header}\b[^\n]*\bwhere[ \t]*\n", text, re.M)
    assert match is not None, f"no `{header} ... where` in lean/HoareKernel"
    lines: list[str] = []
    for line in text[match.end():].splitlines():
        if not line.startswith("  ") or line.strip().startswith("deriving"):
            break
        lines.append(line)
    return lines


def lean_constructors(name: str) -> list[str]:
    lines = _block(_lean_sources(), rf"inductive {name}")
    return [m.group(1) for line in lines if (m := re.match(r"\s+\|\s*«?([A-Za-z_][\w]*)»?", line))]


def lean_fields(name: str) -> list[str]:
    lines = _block(_lean_sources(), rf"structure {name}")
    return [m.group(1) for line in lines if (m := re.match(r"  «?([A-Za-z_][\w]*)»? :", line))]


def python_fields(cls: type) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    fields = getattr(cls, "_fields", None)
    assert fields is not None, f"{cls.__name__} is neither a dataclass nor a NamedTuple"
    return list(fields)


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_constructors_are_the_python_values(name: str) -> None:
    assert lean_constructors(name) == [member.value for member in ENUMS[name]]


def test_policy_rank_matches() -> None:
    ranks = dict(re.findall(r"\|\s*Policy\.(\w+)\s*=>\s*(\d+)", _lean_sources()))
    assert {policy.value: policy.rank for policy in kernel.Policy} == {
        name: int(rank) for name, rank in ranks.items()
    }


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_record_fields_match(name: str) -> None:
    python = python_fields(RECORDS[name])
    skipped = PYTHON_ONLY_FIELDS.get(name, {})
    for field in skipped:
        assert field in python, f"{name}.{field} is listed as Python-only but does not exist"
    assert lean_fields(name) == [field for field in python if field not in skipped]


def test_retry_defaults_match() -> None:
    """Same defaults, with seconds as milliseconds in the model."""
    text = "\n".join(_block(_lean_sources(), "structure RetryPolicy"))
    lean = dict(re.findall(r"  (\w+) : \w+ := (\w+)", text))
    default = kernel.RetryPolicy()
    assert int(lean["tries"]) == default.tries
    for name in ("delay", "max_delay", "jitter"):
        assert int(lean[name]) == round(getattr(default, name) * 1000), name
    assert int(lean["backoff"]) == default.backoff
    assert lean["graceful"] == str(default.graceful).lower()


def test_contract_defaults_match() -> None:
    text = "\n".join(_block(_lean_sources(), "structure ContractConfig"))
    lean = dict(re.findall(r"  (\w+) : [\w]+ := ([\w.]+)", text))
    default = kernel.ContractConfig()
    for name in ("pre_remedy", "post_remedy", "accumulate_errors"):
        assert lean[name] == str(getattr(default, name)).lower(), name
    assert lean["policy"] == f"Policy.{default.policy.value}"


@pytest.mark.parametrize("python_name", sorted(FUNCTIONS))
def test_kernel_functions_are_modelled(python_name: str) -> None:
    owner, _, attribute = python_name.rpartition(".")
    target = getattr(kernel, owner) if owner else kernel
    assert hasattr(target, attribute), f"kernel has no {python_name}"
    lean_name = re.escape(FUNCTIONS[python_name])
    assert re.search(rf"^def {lean_name}\b", _lean_sources(), re.M), f"no def {python_name}"


def test_modules_mirror_one_to_one() -> None:
    python = {p.stem for p in KERNEL.glob("*.py") if p.stem != "__init__"}
    lean = {p.stem for p in LEAN_PACKAGE.glob("*.lean")}
    assert {name.lower() for name in lean - LEAN_ONLY_MODULES} == python
    assert all(name[0].isupper() for name in lean)


def test_root_imports_every_module() -> None:
    root = (LEAN / "HoareKernel.lean").read_text(encoding="utf-8")
    imported = set(re.findall(r"^import HoareKernel\.(\w+)", root, re.M))
    assert imported == {p.stem for p in LEAN_PACKAGE.glob("*.lean")}


def test_lake_project_is_pinned() -> None:
    toolchain = (LEAN / "lean-toolchain").read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"leanprover/lean4:v\d+\.\d+\.\d+", toolchain), toolchain
    lakefile = (LEAN / "lakefile.toml").read_text(encoding="utf-8")
    assert 'name = "HoareKernel"' in lakefile
    assert "require" not in lakefile, "the model uses core Lean only"
    assert "/.lake" in (LEAN / ".gitignore").read_text(encoding="utf-8").split()
