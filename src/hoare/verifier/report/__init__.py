"""What ``hoare verify`` found, and its formats (table, JSON, SARIF, JUnit)."""

from hoare.verifier.report.model import (
    CheckResult,
    ContractReport,
    ImportProblem,
    Report,
    Status,
)

__all__ = ["CheckResult", "ContractReport", "ImportProblem", "Report", "Status"]
