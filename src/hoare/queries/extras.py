"""The optional dependencies of ``hoare.queries`` (``pip install 'hoare[queries]'``):
Jinja2 for prompt templates, PyYAML for YAML instances, answers and demonstrations.
Importing ``hoare.queries`` needs neither; the first use of one that is missing is an
``ImportError`` naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

_PACKAGES = {"yaml": "PyYAML", "jinja2": "Jinja2"}


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or say which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        raise ImportError(f"{purpose} need {_PACKAGES.get(module, module)}: "
                          f"pip install 'hoare[queries]'") from missing
