"""The fixture contract sets: broken ones get their declared verdicts, sound ones
pass, and every witness replays through pydantic and the real predicates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fixtures.replay import check_witnesses, statuses

from hoare.verifier import verify
from hoare.verifier.project.discovery import load

FIXTURES = Path(__file__).parents[1] / "fixtures"
BROKEN = sorted((FIXTURES / "broken").glob("*.py"))


def _expectations(module: object) -> list[tuple[str, str, str | None, str, list[str] | None]]:
    out = []
    for name, checks in module.EXPECTED.items():  # type: ignore[attr-defined]
        for key, (status, constraints) in checks.items():
            match = re.fullmatch(r"(\w+)(?:\[(.+)\])?", key)
            assert match, key
            out.append((name, match.group(1), match.group(2), status, constraints))
    return out


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_fixture_verdicts(path: Path) -> None:
    (module,) = load(str(path))
    report = verify(module, rlimit=2_000_000)
    for name, kind, predicate, status, constraints in _expectations(module):
        checks = statuses(report.find(name), kind, predicate)
        assert checks, f"{name}: no {kind} check"
        for check in checks:
            assert check.status == status, (name, kind, check.message)
            if constraints is not None:
                assert sorted(check.constraints) == sorted(constraints), check.constraints
            if status == "fail" and kind != "composition":
                assert check.constraints, "a refutation names the conflicting constraints"


def test_broken_witnesses_replay() -> None:
    replayed = 0
    for path in BROKEN:
        (module,) = load(str(path))
        report = verify(module, rlimit=2_000_000)
        for contract in report.contracts:
            cls = getattr(module, contract.name.rsplit(":", 1)[1])
            replayed += check_witnesses(cls.__hoare__, contract)
    assert replayed >= 8


def test_composition_counterexample_is_rejected_by_the_next_stage() -> None:
    (module,) = load(str(FIXTURES / "broken" / "composition.py"))
    report = verify(module.publishing)
    (check,) = report.find("publishing").checks
    assert check.status == "fail"
    draft = module.Draft.model_validate(check.counterexample)
    assert draft.quality < 7  # WriteDraft's type allows it, Publish's pre refuses it
    assert '"only good drafts are published"' in check.message


def test_sound_fixture_passes_everything() -> None:
    (module,) = load(str(FIXTURES / "sound" / "support_desk.py"))
    report = verify(module)
    assert report.ok(strict=True), report.render()
    assert report.summary() == {"pass": 13, "fail": 0, "warn": 0, "unknown": 0}
    for contract in report.contracts:
        cls = getattr(module, contract.name.rsplit(":", 1)[1])
        assert check_witnesses(cls.__hoare__, contract) >= 2
    (composition,) = report.find("support").checks
    assert composition.status == "pass"


def test_pipeline_stage_instances_are_verified_with_their_attributes() -> None:
    (module,) = load(str(FIXTURES / "sound" / "support_desk.py"))
    strict = module.Pipeline(module.TriageTicket(min_confidence=0.2), module.DraftReply())
    report = verify(strict)
    (check,) = report.pipelines[0].checks
    # confidence 0.2 passes TriageTicket but not DraftReply's "confident triage only"
    assert check.status == "fail"
    assert 0.2 <= check.counterexample["confidence"] < 0.6
