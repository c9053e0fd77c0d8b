"""What ``hoare verify`` found, and its formats (table, JSON, SARIF, JUnit).

This is the face other packages use: the report's types, and ``write_report`` (loaded
on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.faces import load_on_first_use
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

__getattr__ = load_on_first_use(__name__, {"write_report": "hoare.verifier.report.formats"})
