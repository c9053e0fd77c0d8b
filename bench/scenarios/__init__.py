"""Benchmark scenarios. Each module has ``run(ctx) -> Report``."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
WORK = BENCH / ".work"  # scratch space (git-ignored)


@dataclass
class Context:
    quick: bool
    symai: Any = None  # a SymaiWorker, or None
    symai_skip_reason: str | None = None

    def rounds(self, full: int, quick: int = 5) -> int:
        return quick if self.quick else full

    @property
    def target_ns(self) -> float:
        """Duration of one timed batch."""
        return 15e6 if self.quick else 25e6


@dataclass
class Report:
    """What a scenario measured: figures (JSON), table rows, goals, notes."""

    key: str
    title: str
    status: str = "ok"  # ok | partial | skipped | error
    reason: str | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, Any] = field(default_factory=dict)
    goals: list[dict[str, Any]] = field(default_factory=list)
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def row(self, label: str, value: str, goal: str = "", met: bool | None = None) -> None:
        mark = "" if met is None else ("yes" if met else "NO")
        self.rows.append((label, value, goal, mark))

    def goal(self, name: str, value: Any, target: str, met: bool) -> None:
        self.goals.append({"goal": name, "value": value, "target": target, "met": met})

    def skip(self, reason: str) -> "Report":
        self.status = "skipped"
        self.reason = reason
        self.rows.append(("SKIPPED", reason, "", ""))
        return self

    def partial(self, reason: str) -> None:
        """Part of the scenario could not run: say which and why, in the table too."""
        if self.status == "ok":
            self.status = "partial"
        self.reason = reason if self.reason is None else f"{self.reason}; {reason}"
        self.rows.append(("SKIPPED (part)", reason, "", ""))

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.key, "title": self.title, "status": self.status,
            "reason": self.reason, "figures": self.figures, "ratios": self.ratios,
            "goals": self.goals, "notes": self.notes, "seconds": round(self.seconds, 2),
            "table": [list(row) for row in self.rows],
        }


def strip_raw(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``measure.interleaved`` results without the raw batch means, rounded."""
    return {name: {k: (round(v, 3) if isinstance(v, float) else v)
                   for k, v in stats.items() if not k.startswith("raw_")}
            for name, stats in results.items()}


def us(stats: dict[str, Any]) -> str:
    """``median (min–max) µs; cpu median`` of a summary in µs."""
    text = f"{stats['median']:.1f} µs ({stats['min']:.1f}–{stats['max']:.1f})"
    if "cpu_median" in stats:
        text += f"; cpu {stats['cpu_median']:.1f} µs"
    return text


def rounded(value: Any, digits: int = 3) -> Any:
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    return value
