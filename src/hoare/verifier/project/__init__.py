"""A ``hoare verify`` run over a project: targets, discovery, units, workers, the
verdict cache and ``[tool.hoare]``.

This is the face the CLI, the pytest plugin and the configuration use (``run_verify``,
``VerifyError``, ``find_pyproject``, ``FORMATS``, ``seconds_argument``); each name is
loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hoare.verifier.project.config import FORMATS, find_pyproject, seconds_argument
    from hoare.verifier.project.run import VerifyError, run_verify

__all__ = ["FORMATS", "VerifyError", "find_pyproject", "run_verify", "seconds_argument"]

_FACE = {"FORMATS": "hoare.verifier.project.config",
         "find_pyproject": "hoare.verifier.project.config",
         "seconds_argument": "hoare.verifier.project.config",
         "VerifyError": "hoare.verifier.project.run",
         "run_verify": "hoare.verifier.project.run"}


def __getattr__(name: str) -> Any:
    if name in _FACE:
        return getattr(importlib.import_module(_FACE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
