"""A ``hoare verify`` run over a project: targets, discovery, units, workers, the
verdict cache and ``[tool.hoare]``.

This is the face the CLI, the pytest plugin and the configuration use (``run_verify``,
``VerifyError``, ``find_pyproject``, ``FORMATS``, ``seconds_argument``,
``solver_limit_argument``); each name is
loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.faces import load_on_first_use

if TYPE_CHECKING:
    from hoare.verifier.project.config import (
        FORMATS,
        find_pyproject,
        seconds_argument,
        solver_limit_argument,
    )
    from hoare.verifier.project.run import VerifyError, run_verify

__all__ = ["FORMATS", "VerifyError", "find_pyproject", "run_verify", "seconds_argument",
           "solver_limit_argument"]

_FACE = {"FORMATS": "hoare.verifier.project.config",
         "find_pyproject": "hoare.verifier.project.config",
         "seconds_argument": "hoare.verifier.project.config",
         "solver_limit_argument": "hoare.verifier.project.config",
         "VerifyError": "hoare.verifier.project.run",
         "run_verify": "hoare.verifier.project.run"}

__getattr__ = load_on_first_use(__name__, _FACE)
