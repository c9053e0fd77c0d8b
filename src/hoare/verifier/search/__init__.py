"""Concrete values: counterexamples by sampling, witnesses from z3 models, and their
replay in Python.

The face other packages use is ``find_examples`` (``examples="auto"`` in
``hoare.queries``); it is loaded on first use, so importing this package loads no z3.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hoare.verifier.search.examples import find_examples

__all__ = ["find_examples"]

_FACE = {"find_examples": "hoare.verifier.search.examples"}


def __getattr__(name: str) -> Any:
    if name in _FACE:
        return getattr(importlib.import_module(_FACE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
