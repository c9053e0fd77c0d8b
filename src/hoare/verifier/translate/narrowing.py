"""``only_narrows``: which user validators only narrow a domain. The analysis lives in
``hoare.declaration.narrowing``, where the contract boundary asks it too without
loading the verifier; the translator reads it from here."""

from __future__ import annotations

from hoare.declaration.narrowing import only_narrows

__all__ = ["only_narrows"]
