"""Outside-reviewer probes: behaviour methods assigned rather than written in the
class body (issue 29).

Class: a user's class gets ``__bool__``/``__len__``/``__eq__``/``_missing_`` from a
function defined elsewhere (``__bool__ = is_filled``, ``_missing_ =
classmethod(lookup)``) or as ``None`` (``__hash__ = None``). ``custom_behaviour``
compared the function's qualified name with the class's, so an assigned function
counted as the enum or pydantic machinery's own. For ``_missing_`` that was a false
refutation (``test_verifier_probes_enums.py``); for the operators the translation of
truth, comparison and hashing already stops on its own checks, which the truthiness
test below pins. Now only the machinery's own functions (modules ``enum``,
``pydantic``, builtins) are left out; ``__hash__ = None`` is the user's.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest
from pydantic import BaseModel
from test_verifier_domains import raw_refutation

from hoare.verifier.translate.metadata import custom_behaviour


def _never(self: object) -> bool:
    return False


def _size(self: object) -> int:
    return 0


class Falsy(BaseModel):
    k: int = 1
    __bool__ = _never


class Empty(BaseModel):
    k: int = 1
    __len__ = _size


class Holder(BaseModel):
    falsy: Falsy
    empty: Empty


def test_an_assigned_bool_is_the_models_truth() -> None:
    assert not Holder(falsy=Falsy(), empty=Empty()).falsy  # Python: falsy
    assert not raw_refutation(Holder, lambda m: not m.falsy)
    assert not raw_refutation(Holder, lambda m: not m.empty)


class Pure(BaseModel):
    k: int = 1


class Shade(str, enum.Enum):  # noqa: UP042  # the mixin form users write
    A = "a"


class Frozen(BaseModel, frozen=True):  # pydantic writes its own __hash__
    k: int = 1


@pytest.mark.parametrize("cls", [Pure, Shade, Frozen, enum.StrEnum("S", {"A": "a"}),
                                 enum.IntFlag("F", {"A": 1})])
def test_the_machinerys_own_methods_are_not_the_users(cls: Any) -> None:
    """No false unknown: enum's and pydantic's generated methods stay theirs."""
    base = enum.Enum if issubclass(cls, enum.Enum) else BaseModel
    assert custom_behaviour(cls, base) is None


def test_a_hash_set_to_none_is_the_users() -> None:
    class Unhashable(BaseModel):
        k: int = 1
        __hash__ = None  # type: ignore[assignment]

    assert custom_behaviour(Unhashable, BaseModel) == "__hash__"
