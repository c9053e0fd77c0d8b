"""``hoare verify``: z3 proves contract sets consistent before any LLM call.

    from hoare import verify
    report = verify(my_module)          # or a contract class, an instance, a Pipeline
    print(report.render()); assert report.ok()

The public face only re-exports: ``verify``/``verify_found`` are
``project.python_api``'s, ``discover`` is ``project.discovery``'s, the report types are
``report.model``'s. See ``checks`` for what is checked and why a verdict can be
trusted, ``translate`` for what is translated, ``runtime.preflight`` for the run-time
check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.project.discovery import DiscoveryError, discover
from hoare.verifier.project.python_api import verify, verify_found
from hoare.verifier.report.model import CheckResult, ContractReport, Report
from hoare.verifier.solve.solver import SolverOptions

if TYPE_CHECKING:  # annotations only: ``Any`` is no name of this public module
    from typing import Any

    from hoare.verifier.runtime.preflight import Preflight


def __getattr__(name: str) -> Any:
    """``Preflight`` on first use: the translator is not needed to read a cached
    report (``hoare verify`` on unchanged files imports none of it)."""
    if name == "Preflight":
        from hoare.verifier.runtime.preflight import Preflight

        return Preflight
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CheckResult", "ContractReport", "DiscoveryError", "Preflight", "Report", "SolverOptions",
    "discover", "verify", "verify_found",
]
