"""What ``hoare verify`` found: per contract and per pipeline, one row per check.

Statuses: ``pass`` (proved, or shown by a replayed witness), ``fail`` (refuted:
an unsat core or a replayed counterexample), ``warn`` (a predicate that can
never fail: a weak guarantee), ``unknown`` (opaque code, a limit hit, or a
witness that did not replay). ``Report.to_json()`` is the ``--json`` shape.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from hoare.verifier.search.witness import json_safe

__all__ = ["CheckResult", "ContractReport", "ImportProblem", "Report", "Status", "json_text",
           "shown"]

Status = Literal["pass", "fail", "warn", "unknown"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "warn", "unknown")
_RANK = {"pass": 0, "warn": 1, "unknown": 2, "fail": 3}

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls and DEL: a file name or message holding them could redraw a
# terminal (ANSI escapes) or break the one-line-per-check table; line and paragraph
# separators and bidirectional controls likewise (they break or reorder a line)
_LAYOUT = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_LAYOUT}]")
_CONTROL_IN_LINES = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_LAYOUT}]")


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON that any UTF-8 writer accepts: a lone surrogate (a file name
    that is not UTF-8, decoded with surrogate escapes) is written as its ``\\udcXX``
    escape, which ``json.loads`` turns back into the same string."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False, default=str)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def shown(text: str, *, lines: bool = False) -> str:
    """``text`` safe to print in the table: surrogates and control characters as
    visible escapes (``lines``: newlines kept, for multi-line messages)."""
    out = _SURROGATE.sub(_escape, text)
    return (_CONTROL_IN_LINES if lines else _CONTROL).sub(_escape, out)


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
    # where a reader fixes it: the predicate's (else the contract class's) file and line
    file: str | None = None
    line: int | None = None
    ignored: str | None = None  # the reason given in [tool.hoare] ignore, if it matched

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
            "location": None if self.file is None else {"file": self.file, "line": self.line},
            "ignored": self.ignored,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        """The inverse of ``to_json`` (the verdict cache and worker processes)."""
        location = data.get("location") or {}
        return cls(data["kind"], data["status"], data["message"], data.get("witness"),
                   data.get("counterexample"), list(data.get("constraints", [])),
                   data.get("predicate"), list(data.get("assumptions", [])),
                   list(data.get("notes", [])), location.get("file"), location.get("line"),
                   data.get("ignored"))

    @property
    def subject(self) -> str:
        """``kind`` or ``kind[predicate]``: how ``[tool.hoare] ignore`` names a check."""
        return self.kind + (f"[{self.predicate}]" if self.predicate else "")


@dataclass
class ContractReport:
    """The checks of one contract (``module:Class``) or pipeline (``module:name``)."""

    name: str
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    file: str | None = None
    line: int | None = None

    @property
    def status(self) -> Status:
        counted = [c.status for c in self.checks if c.ignored is None]
        return max(counted, key=lambda s: _RANK[s]) if counted else "pass"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status,
                "checks": [c.to_json() for c in self.checks], "notes": list(self.notes),
                "location": None if self.file is None else {"file": self.file,
                                                             "line": self.line}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContractReport:
        location = data.get("location") or {}
        return cls(data["name"], [CheckResult.from_json(c) for c in data.get("checks", [])],
                   list(data.get("notes", [])), location.get("file"), location.get("line"))


@dataclass
class ImportProblem:
    """A target that could not be imported: reported, the other targets still verified,
    and ``hoare verify`` exits 2 at the end."""

    target: str
    error: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "error": self.error, "file": self.file,
                "line": self.line}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportProblem:
        return cls(data["target"], data["error"], data.get("file"), data.get("line"))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else \
            f"{self.file}: " if self.file else ""
        return f"{where}{self.target}: {self.error}"


@dataclass
class Report:
    contracts: list[ContractReport] = field(default_factory=list)
    pipelines: list[ContractReport] = field(default_factory=list)
    seconds: float = 0.0
    errors: list[ImportProblem] = field(default_factory=list)

    def checks(self) -> list[CheckResult]:
        return [c for r in (*self.contracts, *self.pipelines) for c in r.checks]

    def summary(self) -> dict[str, int]:
        """Checks per status; ignored checks (``[tool.hoare] ignore``) are counted apart,
        under ``ignored``, which appears only when there is one."""
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        ignored = 0
        for check in self.checks():
            if check.ignored is not None:
                ignored += 1
            else:
                counts[check.status] += 1
        if ignored:
            counts["ignored"] = ignored
        return counts

    def ok(self, *, strict: bool = False) -> bool:
        """No check failed (and, ``strict``, none is unknown). Import errors are the
        caller's to weigh (the CLI exits 2)."""
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
            "errors": [e.to_json() for e in self.errors],
            "seconds": round(self.seconds, 3),
        }

    def json(self, indent: int | None = 2) -> str:
        """``indent`` None: one line, written by json's C encoder (large reports)."""
        return json_text(self.to_json(), indent)

    def render(self, *, verbose: bool = False, width: int = 100) -> str:
        """A readable table: one line per check, details indented below it."""
        lines: list[str] = []
        groups = [("contract", r) for r in self.contracts] + \
            [("pipeline", r) for r in self.pipelines]
        notes: list[str] = []
        for what, report in groups:
            lines.append(f"{what} {shown(report.name)}")
            for check in report.checks:
                subject = shown(f"{check.kind}" +
                                (f" [{check.predicate}]" if check.predicate else ""))
                # a message's own lines go under it, indented as details: a newline in
                # a predicate's message must not start a line that reads as a check
                message = shown(check.message, lines=True).replace("\n", "\n" + " " * 12)
                lines.append(f"  {check.status.upper():<8}{subject:<38} {message}")
                if check.ignored is not None:
                    lines.append(f"{'':12}ignored ([tool.hoare] ignore): "
                                 f"{shown(check.ignored)}")
                if check.file and check.status != "pass":
                    lines.append(f"{'':12}at: {_where(check.file, check.line)}")
                if check.constraints:
                    what = "implied by" if check.kind == "predicate_vacuous" and \
                        check.status == "warn" else "conflict"
                    lines.append(f"{'':12}{what}: {shown(' ∧ '.join(check.constraints))}")
                if check.witness is not None and (verbose or check.status != "pass"):
                    lines.append(f"{'':12}witness: {_compact(check.witness, width - 21)}")
                if check.counterexample is not None and check.status != "pass":
                    lines.append(f"{'':12}counterexample: "
                                 f"{_compact(check.counterexample, width - 28)}")
                for assumption in check.assumptions:
                    lines.append(f"{'':12}assuming: {shown(assumption)}")
                if verbose or check.status != "pass":
                    for note in check.notes:
                        if note.startswith("registry: ") and not verbose:
                            continue  # the registry entries a verdict rests on: -v only
                        if note not in report.notes:  # report-wide notes are shown once
                            lines.append(f"{'':12}note: {shown(note)}")
            for note in report.notes:
                if note not in notes:
                    notes.append(note)
            lines.append("")
        for problem in self.errors:
            text = shown(str(problem), lines=True).replace("\n", "\n" + " " * 14)
            lines.append(f"import error: {text}")
        if self.errors:
            lines.append("")
        summary = self.summary()
        counted = sum(summary.values())
        ignored = f", {summary['ignored']} ignored" if "ignored" in summary else ""
        lines.append(
            f"{len(self.contracts)} contract(s), {len(self.pipelines)} pipeline(s), "
            f"{counted} check(s): {summary['pass']} pass, {summary['fail']} fail, "
            f"{summary['warn']} warn, {summary['unknown']} unknown{ignored} "
            f"in {self.seconds:.2f} s")
        if notes:
            lines.append("notes:")
            lines.extend(f"  - {shown(note)}" for note in notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _where(file: str, line: int | None) -> str:
    """``path:line``, the path relative to the current directory when under it (the
    form editors and terminals turn into a link)."""
    import os

    try:
        relative = os.path.relpath(file)
        shown_ = relative if not relative.startswith("..") else file
    except ValueError:  # another drive
        shown_ = file
    shown_path = shown(shown_)
    return f"{shown_path}:{line}" if line else shown_path


def _compact(value: Any, width: int) -> str:
    text = shown(json_text(json_safe(value)))
    width = max(width, 40)
    return text if len(text) <= width else text[:width - 1] + "…"
