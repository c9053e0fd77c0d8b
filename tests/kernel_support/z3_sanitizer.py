"""A pytest plugin that reports every z3 term used while another z3 context is active.

``hoare/verifier/solve/context.py`` builds each check in a fresh context; a term cached
in one context and used in another is undefined behaviour in z3's C API (a crash, a
wrong sort) or a ``Context mismatch`` error that the verifier would turn into a silent
``unknown``. With ``-p kernel_support.z3_sanitizer``, every z3 wrapper's ``as_ast`` is
checked against the active context (z3.py's own reference counting, printing and
hashing are allowed), and so is every ``Context mismatch`` assertion. The findings are
written as JSON to ``$HOARE_Z3_SANITIZER_REPORT`` at the end of the session
(``tests/verifier/test_verifier_z3_context.py`` runs the verifier's tests under it).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import traceback
from typing import Any

import z3.z3 as z3py

_FOUND: collections.Counter[str] = collections.Counter()
_ALLOWED = {"__init__", "__del__", "__str__", "__repr__", "sexpr", "__deepcopy__", "eq",
            "get_id", "hash", "__hash__", "__copy__", "_repr_html_"}


def _where() -> str:
    return "".join(traceback.format_stack(limit=10)[:-2])


def _wrap(cls: type) -> None:
    original = cls.__dict__.get("as_ast")
    if original is None:
        return

    def as_ast(self: Any) -> Any:
        active = z3py._main_ctx
        if self.ctx is not active and active is not None \
                and sys._getframe(1).f_code.co_name not in _ALLOWED:
            stack = _where()
            if "/hoare/" in stack:
                _FOUND[stack] += 1
        return original(self)

    cls.as_ast = as_ast  # type: ignore[attr-defined]


for _cls in (z3py.AstRef, z3py.SortRef, z3py.FuncDeclRef, z3py.ExprRef, z3py.PatternRef,
             z3py.QuantifierRef):
    _wrap(_cls)

_original_assert = z3py._z3_assert


def _checked_assert(cond: Any, message: Any) -> Any:
    if not cond and "mismatch" in str(message):
        _FOUND["Context mismatch\n" + _where()] += 1
    return _original_assert(cond, message)


z3py._z3_assert = _checked_assert


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    target = os.environ.get("HOARE_Z3_SANITIZER_REPORT")
    if target:
        with open(target, "w") as out:
            json.dump([[stack, count] for stack, count in _FOUND.most_common()], out)
