"""What the contract layer uses at call time: the pre-flight and constrained decoding.

This is the face other packages use (``Preflight``, ``compile_contract``,
``has_candidates``); each name is loaded on first use, so importing this package
loads no z3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.faces import load_on_first_use

if TYPE_CHECKING:
    from hoare.verifier.runtime.decoding import compile_contract, has_candidates
    from hoare.verifier.runtime.preflight import Preflight

__all__ = ["Preflight", "compile_contract", "has_candidates"]

_FACE = {"Preflight": "hoare.verifier.runtime.preflight",
         "compile_contract": "hoare.verifier.runtime.decoding",
         "has_candidates": "hoare.verifier.runtime.decoding"}

__getattr__ = load_on_first_use(__name__, _FACE)
