"""The verifier's faces load what they re-export on first use (PEP 562): importing a
face (``hoare.verifier.runtime``, ``.project``, ``.search``, ``.report``) loads no z3,
and a program that never calls the verifier never pays for it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def load_on_first_use(package: str, faces: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name of ``faces`` is read from the
    module it maps to, imported then; any other name is an ``AttributeError``."""
    def attribute(name: str) -> Any:
        module = faces.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)
    return attribute
