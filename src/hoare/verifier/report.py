"""What ``hoare verify`` found: per contract and per pipeline, one row per check.

Statuses: ``pass`` (proved, or shown by a replayed witness), ``fail`` (refuted:
an unsat core or a replayed counterexample), ``warn`` (a predicate that can
never fail: a weak guarantee), ``unknown`` (opaque code, a limit hit, or a
witness that did not replay). ``Report.to_json()`` is the ``--json`` shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .witness import json_safe

__all__ = ["CheckResult", "ContractReport", "Report", "Status"]

Status = Literal["pass", "fail", "warn", "unknown"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "warn", "unknown")
_RANK = {"pass": 0, "warn": 1, "unknown": 2, "fail": 3}


@dataclass
class CheckResult:
    """One check. ``constraints``: the conflicting constraints (unsat core) of a
    refutation; ``witness``/``counterexample``: JSON values of the model types."""

    kind: str
    status: Status
    message: str
    witness: Any = None
    counterexample: Any = None
    constraints: list[str] = field(default_factory=list)
    predicate: str | None = None
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "status": self.status,
            "message": self.message,
            "witness": json_safe(self.witness),
            "counterexample": json_safe(self.counterexample),
            "constraints": list(self.constraints),
            "predicate": self.predicate,
            "assumptions": list(self.assumptions),
            "notes": list(self.notes),
        }


@dataclass
class ContractReport:
    """The checks of one contract (``module:Class``) or pipeline (``module:name``)."""

    name: str
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> Status:
        if not self.checks:
            return "pass"
        return max((c.status for c in self.checks), key=lambda s: _RANK[s])

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status,
                "checks": [c.to_json() for c in self.checks], "notes": list(self.notes)}


@dataclass
class Report:
    contracts: list[ContractReport] = field(default_factory=list)
    pipelines: list[ContractReport] = field(default_factory=list)
    seconds: float = 0.0

    def checks(self) -> list[CheckResult]:
        return [c for r in (*self.contracts, *self.pipelines) for c in r.checks]

    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for check in self.checks():
            counts[check.status] += 1
        return counts

    def ok(self, *, strict: bool = False) -> bool:
        """No check failed (and, ``strict``, none is unknown)."""
        summary = self.summary()
        return summary["fail"] == 0 and not (strict and summary["unknown"])

    def find(self, name: str) -> ContractReport:
        """The report of a contract or pipeline by full name or by its last part."""
        for report in (*self.contracts, *self.pipelines):
            if report.name == name or report.name.rsplit(":", 1)[-1] == name:
                return report
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "contracts": [r.to_json() for r in self.contracts],
            "pipelines": [r.to_json() for r in self.pipelines],
            "summary": self.summary(),
            "seconds": round(self.seconds, 3),
        }

    def json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_json(), indent=indent, ensure_ascii=False, allow_nan=False,
                          default=str)

    def render(self, *, verbose: bool = False, width: int = 100) -> str:
        """A readable table: one line per check, details indented below it."""
        lines: list[str] = []
        groups = [("contract", r) for r in self.contracts] + \
            [("pipeline", r) for r in self.pipelines]
        notes: list[str] = []
        for what, report in groups:
            lines.append(f"{what} {report.name}")
            for check in report.checks:
                subject = f"{check.kind}" + (f" [{check.predicate}]" if check.predicate else "")
                lines.append(f"  {check.status.upper():<8}{subject:<38} {check.message}")
                if check.constraints:
                    what = "implied by" if check.kind == "predicate_vacuous" and \
                        check.status == "warn" else "conflict"
                    lines.append(f"{'':12}{what}: {' ∧ '.join(check.constraints)}")
                if check.witness is not None and (verbose or check.status != "pass"):
                    lines.append(f"{'':12}witness: {_compact(check.witness, width - 21)}")
                if check.counterexample is not None and check.status != "pass":
                    lines.append(f"{'':12}counterexample: "
                                 f"{_compact(check.counterexample, width - 28)}")
                for assumption in check.assumptions:
                    lines.append(f"{'':12}assuming: {assumption}")
                if verbose or check.status != "pass":
                    for note in check.notes:
                        if note not in report.notes:  # report-wide notes are shown once
                            lines.append(f"{'':12}note: {note}")
            for note in report.notes:
                if note not in notes:
                    notes.append(note)
            lines.append("")
        summary = self.summary()
        counted = sum(summary.values())
        lines.append(
            f"{len(self.contracts)} contract(s), {len(self.pipelines)} pipeline(s), "
            f"{counted} check(s): {summary['pass']} pass, {summary['fail']} fail, "
            f"{summary['warn']} warn, {summary['unknown']} unknown "
            f"in {self.seconds:.2f} s")
        if notes:
            lines.append("notes:")
            lines.extend(f"  - {note}" for note in notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _compact(value: Any, width: int) -> str:
    text = json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False, default=str)
    width = max(width, 40)
    return text if len(text) <= width else text[:width - 1] + "…"
