"""Concrete values: counterexamples by sampling, witnesses from z3 models, and their
replay in Python.

The face other packages use is ``find_examples`` (``examples="auto"`` in
``hoare.queries``); it is loaded on first use, so importing this package loads no z3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hoare.verifier.faces import load_on_first_use

if TYPE_CHECKING:
    from hoare.verifier.search.examples import find_examples

__all__ = ["find_examples"]

_FACE = {"find_examples": "hoare.verifier.search.examples"}

__getattr__ = load_on_first_use(__name__, _FACE)
