"""What the contract layer uses at call time: the pre-flight and constrained decoding.

This is the face other packages use (``Preflight``, ``compile_contract``,
``has_candidates``); each name is loaded on first use, so importing this package
loads no z3.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hoare.verifier.runtime.decoding import compile_contract, has_candidates
    from hoare.verifier.runtime.preflight import Preflight

__all__ = ["Preflight", "compile_contract", "has_candidates"]

_FACE = {"Preflight": "hoare.verifier.runtime.preflight",
         "compile_contract": "hoare.verifier.runtime.decoding",
         "has_candidates": "hoare.verifier.runtime.decoding"}


def __getattr__(name: str) -> Any:
    if name in _FACE:
        return getattr(importlib.import_module(_FACE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
