"""Every exception class of the verifier, private ones included, is in hoare's tree.

tests/test_errors.py checks the public classes; a private cause (``_Dynamic``…) can
still escape a helper that forgets to catch it, so it must be an ``Unmodelled``
(turned into ``unknown`` by whoever catches the root) and cross a process boundary.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import hoare.verifier
from hoare.errors import HoareError
from hoare.unmodelled import Unmodelled


def _verifier_exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    modules = ["hoare.unmodelled"] + [
        info.name for info in pkgutil.walk_packages(hoare.verifier.__path__, "hoare.verifier.")
        if not info.name.endswith("__main__")]
    for name in modules:
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


_CLASSES = _verifier_exception_classes()


def test_the_walk_finds_the_private_classes() -> None:
    names = {c.__qualname__ for c in _CLASSES}
    assert "_Dynamic" in names


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_verifier_exception_is_a_hoare_error_and_pickles(cls: type[BaseException]) -> None:
    assert issubclass(cls, HoareError)
    if cls.__qualname__.startswith("_"):
        assert issubclass(cls, Unmodelled), "a private cause is a reason for unknown"
    error = cls("what went wrong: a message")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and str(back) == str(error)
