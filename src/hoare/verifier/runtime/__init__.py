"""What the contract layer uses at call time: the pre-flight and constrained decoding.

This is the face other packages use (``Preflight``, ``compile_contract``,
``has_candidates``, and ``only_narrows``, which the contract boundary asks about a
validator exactly as the verifier's domain does); each name is loaded on first use, so
importing this package loads no z3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.faces import load_on_first_use

if TYPE_CHECKING:
    from hoare.verifier.runtime.decoding import compile_contract, has_candidates
    from hoare.verifier.runtime.preflight import Preflight
    from hoare.verifier.translate.narrowing import only_narrows

__all__ = ["Preflight", "compile_contract", "has_candidates", "only_narrows"]

_FACE = {"Preflight": "hoare.verifier.runtime.preflight",
         "compile_contract": "hoare.verifier.runtime.decoding",
         "has_candidates": "hoare.verifier.runtime.decoding",
         "only_narrows": "hoare.verifier.translate.narrowing"}

__getattr__ = load_on_first_use(__name__, _FACE)
