"""What ``hoare verify`` found, and its formats (table, JSON, SARIF, JUnit).

This is the face other packages use: the report's types, and ``write_report`` (loaded
on first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hoare.verifier.report.model import (
    CheckResult,
    ContractReport,
    ImportProblem,
    Report,
    Status,
)

if TYPE_CHECKING:
    from hoare.verifier.report.formats import write_report

__all__ = ["CheckResult", "ContractReport", "ImportProblem", "Report", "Status",
           "write_report"]


def __getattr__(name: str) -> Any:
    if name == "write_report":
        return importlib.import_module("hoare.verifier.report.formats").write_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
