"""Outside-reviewer probes: enum domains wider than their members (issue 29).

Class: an enum whose class (or an ancestor) defines ``_missing_``. pydantic-core
looks a value up among the members and, failing that, calls ``cls(value)``, which
calls ``_missing_``: it may answer with a member built on the spot (a pseudo-member
not in ``list(cls)``). The domain is then not the members, so the field is opaque;
before the fix ``o.k.value == 'zz'`` was a false ``fail`` and a false pre-flight
refusal.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict
from test_verifier_domains import raw_refutation

from hoare import Contract, Post, contract, verify
from hoare.engines import FunctionEngine
from hoare.kernel import Verdict


def _hooked(where: str, values: list[Any], pseudo: bool) -> Any:
    """An enum of ``values`` whose ``_missing_`` (its own, assigned after creation, or
    a parent's) builds a member (``pseudo``) or answers with the first member."""

    def _missing_(cls: Any, value: object) -> Any:
        if not pseudo:
            return next(iter(cls))
        member: Any = object.__new__(cls)
        member._value_ = value
        member._name_ = f"X{value}"
        return member

    if where == "own":
        names = [(f"M{i}", v) for i, v in enumerate(values)]
        hooked = enum.Enum("Hooked", names)  # type: ignore[misc]  # members built at run time
        owner: Any = hooked
        owner._missing_ = classmethod(_missing_)  # a hook set after creation
        return owner
    namespace = enum.EnumType.__prepare__("Parent", (enum.Enum,))
    namespace["_missing_"] = classmethod(_missing_)
    namespace["__module__"] = __name__
    parent = enum.EnumType("Parent", (enum.Enum,), namespace)
    return parent("Hooked", [(f"M{i}", v) for i, v in enumerate(values)])


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.sampled_from(["a", "b", "", "ß"]), min_size=1, max_size=3,
                       unique=True),
       raw=st.one_of(st.sampled_from(["zz", "a", "", "ß"]), st.text(max_size=3)),
       where=st.sampled_from(["own", "inherited"]), pseudo=st.booleans(),
       use_values=st.booleans())
def test_every_value_an_enum_hook_produces_is_in_the_domain(
        values: list[str], raw: str, where: str, pseudo: bool,
        use_values: bool) -> None:
    """Whatever pydantic produces for a raw value (inherited hook or the class's own,
    with or without ``use_enum_values``), ``m.k == that value`` is never refuted."""
    hooked = _hooked(where, values, pseudo)

    class M(BaseModel):
        model_config = ConfigDict(use_enum_values=use_values)
        k: hooked  # type: ignore[valid-type]

    try:
        produced: Any = M.model_validate({"k": raw}).k
    except ValueError:
        return
    assert not raw_refutation(M, lambda m: m.k == produced), (values, raw, produced)
    if isinstance(produced, enum.Enum):
        value = produced.value
        assert not raw_refutation(M, lambda m: m.k.value == value), (values, raw)


class Col(enum.Enum):
    A = "a"

    @classmethod
    def _missing_(cls, value: object) -> Col:
        member: Any = object.__new__(cls)
        member._value_ = value
        member._name_ = "X"
        return member  # type: ignore[no-any-return]  # a pseudo-member built by hand


class Out(BaseModel):
    k: Col


class In(BaseModel):
    n: int = 0


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Pick(Contract[In, Out]):
    prompt = "p"
    post_conditions = [Post(lambda o: o.k.value == "zz", "a value no member has")]

    def forward(self, input: In) -> Out:
        result: Out = self.contract_result
        return result


def test_a_missing_hook_member_is_not_refused() -> None:
    """The minimized probe: verify says no fail, the pre-flight does not refuse, and
    the call with the engine's answer ``{"k": "zz"}`` succeeds."""
    report = verify(Pick)
    for check in report.contracts[0].checks:
        assert check.status != "fail", (check.kind, check.message)
    instance = Pick(engine=FunctionEngine(lambda request: '{"k": "zz"}'))
    result = instance(In())
    outcome = instance.contract_outcome
    assert outcome is not None and outcome.success, outcome
    assert outcome.preflight is None or outcome.preflight.verdict is not Verdict.UNSATISFIABLE
    produced: object = result.k.value
    assert produced == "zz"


@pytest.mark.parametrize("cls", [enum.Enum("Plain", {"A": "a"}), enum.StrEnum("S", {"A": "a"})])
def test_enums_without_a_hook_keep_their_definite_verdicts(cls: type[enum.Enum]) -> None:
    """No false unknown: an enum with no hook of its own is still its members."""

    class M(BaseModel):
        k: cls  # type: ignore[valid-type]

    assert raw_refutation(M, lambda m: m.k.value == "zz")
