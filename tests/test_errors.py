"""The error tree of hoare.errors: one root, groups, old import paths, texts that never crash."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import hoare
from hoare import errors, kernel


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in hoare (library and kernel)."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(hoare.__path__, "hoare."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.values(), key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_every_public_error_is_a_hoare_error() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type):
            assert issubclass(value, errors.HoareError), name


def test_groups() -> None:
    assert issubclass(errors.ContractDefinitionError, errors.UsageError)
    assert issubclass(errors.ContractDefinitionError, TypeError)
    assert issubclass(errors.ContractCallError, errors.UsageError)
    assert issubclass(errors.EngineNotConfigured, errors.UsageError)
    assert issubclass(errors.EngineNotConfigured, RuntimeError)
    assert issubclass(errors.ResultTypeError, errors.ContractViolationError)
    assert issubclass(errors.FatalEngineError, errors.EngineError)
    assert issubclass(errors.RetryableEngineError, errors.EngineError)
    assert not issubclass(errors.RetryableEngineError, errors.FatalEngineError)
    assert issubclass(errors.BudgetError, errors.FatalEngineError)
    assert issubclass(errors.InvalidValue, ValueError)
    for group in (errors.UsageError, errors.ContractViolationError, errors.EngineError):
        assert group.__bases__ == (errors.HoareError,)


def test_old_import_paths_are_the_same_classes() -> None:
    from hoare.contracts import InvalidValue
    from hoare.contracts.configuration import EngineNotConfigured
    from hoare.declaration.description import ContractDefinitionError

    assert EngineNotConfigured is errors.EngineNotConfigured is hoare.EngineNotConfigured
    assert InvalidValue is errors.InvalidValue is hoare.InvalidValue
    assert ContractDefinitionError is errors.ContractDefinitionError
    assert kernel.ContractViolationError is errors.ContractViolationError
    assert kernel.FatalEngineError is errors.FatalEngineError
    assert kernel.HoareError is errors.HoareError is hoare.HoareError


def test_no_class_has_three_bases() -> None:
    crowded = [f"{c.__module__}.{c.__qualname__}" for c in _exception_classes()
               if len(c.__bases__) > 2]
    assert crowded == []


def test_kernel_errors_do_not_depend_on_the_library() -> None:
    for cls in (kernel.HoareError, kernel.ContractViolationError, kernel.EngineError,
                kernel.FatalEngineError, kernel.ResultTypeError):
        assert all(k.__module__.startswith(("hoare.kernel", "builtins")) for k in cls.__mro__)


class _BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class _NotAString(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


@pytest.mark.parametrize("error", [_BrokenStr("x"), _NotAString("x"), ValueError("")])
def test_safe_text_never_raises_and_names_the_type(error: Exception) -> None:
    assert type(error).__name__ in errors.safe_text(error)


def test_safe_text_truncates_and_says_so() -> None:
    text = errors.safe_text(ValueError("a" * 1000), limit=10)
    assert text.startswith("a" * 10)
    assert "[truncated: 10 of 1000 characters shown]" in text


# Exceptions whose name is public but which never leave the kernel's drivers: the
# carrier of a StopIteration raised by ``forward`` (re-raised as the StopIteration).
_NEVER_ESCAPE = {"hoare.kernel.effects.ForwardRaised"}


def _public(cls: type[BaseException]) -> bool:
    return not any(part.startswith("_") for part in
                   (*cls.__module__.split("."), *cls.__qualname__.split(".")))


def _name(cls: type[BaseException]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_public_exception_class_is_in_the_tree() -> None:
    """Issue 27: one error tree. Catching HoareError catches everything hoare raises."""
    outside = [_name(c) for c in _exception_classes()
               if _public(c) and _name(c) not in _NEVER_ESCAPE
               and not issubclass(c, errors.HoareError)]
    assert outside == []


def _instance(cls: type[BaseException]) -> BaseException:
    """An instance built as hoare builds it (some constructors take more than a text)."""
    from hoare.agents.violation import ContractTermination, ContractViolation
    from hoare.engines.transport import Failure, TransportError

    if issubclass(cls, TransportError):
        return cls("sent 3 times: HTTP 500",
                   failure=Failure("server", "boom", 500), attempts=3, delays=(0.5, 1.0))
    if issubclass(cls, errors.SecretRedacted):
        return cls("KeyError", "the key was [redacted]")
    if issubclass(cls, ContractTermination):
        return cls(ContractViolation(kind="post", location="answer",
                                     predicate="lambda a: len(a) < 9", message="too long"))
    return cls("what went wrong: a message")


_PICKLED = [c for c in _exception_classes()
            if not c.__module__.startswith("hoare.kernel.") or _public(c)]


@pytest.mark.parametrize("cls", [c for c in _PICKLED if _name(c) not in _NEVER_ESCAPE],
                         ids=_name)
def test_every_exception_survives_a_pickle_round_trip(cls: type[BaseException]) -> None:
    """Issue 30: an error crosses a process boundary (ProcessPoolExecutor) with its type,
    message and picklable attributes; an attribute that cannot be pickled is dropped."""
    import pickle

    error = _instance(cls)
    error.unpicklable = lambda: None  # type: ignore[attr-defined]
    error.kept = {"attempt": 2}  # type: ignore[attr-defined]
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert back.args == error.args
    assert back.kept == {"attempt": 2}  # type: ignore[attr-defined]
    assert not hasattr(back, "unpicklable")
    for name, value in vars(error).items():
        if name != "unpicklable":
            assert repr(getattr(back, name)) == repr(value), name


def test_the_private_unsupported_classes_are_one_unmodelled_class() -> None:
    from hoare import unmodelled

    strays = [_name(c) for c in _exception_classes() if c.__name__ == "_Unsupported"]
    assert strays == []
    assert issubclass(unmodelled.Unsupported, unmodelled.Unmodelled)
    assert issubclass(unmodelled.Unmodelled, errors.HoareError)


class _Raising(Exception):
    pass


def _raise(*_args: object) -> object:
    raise _Raising("a foreign dunder")


class _LoudText(str):
    """A str whose own dunders raise: what a foreign __repr__ may return."""

    __len__ = __format__ = __getitem__ = __add__ = __hash__ = _raise  # type: ignore[assignment]


def _values() -> list[object]:
    returns_loud = type("ReturnsLoud", (), {"__repr__": lambda self: _LoudText("x" * 500)})
    returns_number = type("ReturnsNumber", (), {"__repr__": lambda self: 5})
    raising = type("Raising", (), {"__repr__": _raise, "__class__": property(_raise)})
    return [returns_loud(), returns_number(), raising(), "é\ud800\U0010ffff", 10**5000 // 3,
            float("nan"), -0.0]


@pytest.mark.parametrize("index", range(len(_values())))
def test_shown_never_raises_and_is_a_bounded_plain_str(index: int) -> None:
    """``errors.shown``: what an argument check quotes of a bad value (made in the test:
    pytest itself reads a parameter's ``__class__``)."""
    text = errors.shown(_values()[index], limit=100)
    assert type(text) is str and 0 < len(text) <= 101
    assert f"{text}" == text
