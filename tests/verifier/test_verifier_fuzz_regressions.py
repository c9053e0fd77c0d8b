"""Contradictions the verifier's differential fuzzer (tests/fuzz) found between a verdict
of ``hoare verify`` or the pre-flight and real Python/pydantic, one test each.

A test marked ``xfail(strict=True)`` records a contradiction not fixed yet: it turns
into a failure the day the verdict becomes sound, so the fixer removes the mark.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fuzz.values import floats, ints, texts
from hypothesis import example, given, settings
from hypothesis import strategies as st

import hoare
from hoare.engines import FunctionEngine
from hoare.kernel import Phase, ViolationKind

# A nested model field given as an instance is not validated again by pydantic
# (revalidate_instances='never', the default): an instance of a subclass whose field
# drops the constraint, or a model_construct(), passed through `In` and through the
# contract's input check, refuting the `fail` of pre_satisfiable and the vacuity
# verdicts. The contract's input check now validates every model instance inside an
# input again (`TypeSpec.validate`), so such an input is refused before anything runs,
# and the verdicts, which rest on the input model's constraints, hold.
NESTED_SUBCLASS = '''
from pydantic import BaseModel, Field

from hoare import Contract, Post, Pre, contract


class Inner(BaseModel):
    x0: int = Field(ge=0, le=3)


class In(BaseModel):
    n0: Inner


class Out(BaseModel):
    f0: int


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Generated(Contract):
    prompt = "generated"
    pre_conditions = [Pre(lambda i: i.n0.x0 < 0, "pre 0")]
    post_conditions = [Post(lambda o, i: o.f0 == i.n0.x0, "post 0")]

    def forward(self, input: In) -> Out | None:
        return self.contract_result


class LooseInner(Inner):
    x0: int = -5
'''


def _load(tmp_path: Path, source: str) -> ModuleType:
    name = f"fuzz_regression_{tmp_path.name}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# Three ways to hand a contract an input whose model fields break their constraints,
# each one pydantic itself lets through unchanged.
UNCHECKED_INPUTS = {
    "nested subclass instance": lambda m: m.In(n0=m.LooseInner()),
    "nested model_construct": lambda m: m.In(n0=m.Inner.model_construct(x0=-5)),
    "model_construct": lambda m: m.In.model_construct(n0=m.Inner.model_construct(x0=-5)),
}


@pytest.mark.parametrize("how", sorted(UNCHECKED_INPUTS))
def test_unvalidated_input_instance_refutes_pre_fail(tmp_path: Path, how: str) -> None:
    logging.disable(logging.CRITICAL)
    try:
        module = _load(tmp_path, NESTED_SUBCLASS)
        report = hoare.verify(module.Generated)
    finally:
        logging.disable(logging.NOTSET)
    x = UNCHECKED_INPUTS[how](module)
    assert x.n0.x0 == -5 and x.n0.x0 < 0  # the pre-condition would pass on it
    requests: list[object] = []
    contract = module.Generated(engine=FunctionEngine(
        lambda request: requests.append(request) or '{"f0": -5}'))
    assert contract(x) is None  # refused: forward got the failed case
    outcome = contract.contract_outcome
    assert outcome is not None and not outcome.success and requests == []
    assert [(v.kind, v.phase) for v in outcome.violations] == [
        (ViolationKind.TYPE, Phase.INPUT)], outcome.violations  # the input's type
    assert "n0.x0" in outcome.violations[0].message
    verdicts = {(c.kind, c.predicate): c.status for c in report.contracts[0].checks}
    # the definite verdicts stay, and now hold for every input the contract runs on
    assert verdicts[("pre_satisfiable", None)] == "fail", verdicts
    assert verdicts[("predicate_vacuous", "pre_conditions[0]")] == "fail", verdicts


# The class of the three above: a verdict resting on an input model's constraints
# (`fail` of pre_satisfiable, "can never pass", "can never fail") against inputs built
# every way Python allows (model_construct at any depth, a subclass whose fields drop
# the constraints, an instance mutated after validation), with values drawn from the
# fuzzer's generators. The call's own path decides: the engine is reached exactly when
# the pre-condition passed on the input the contract ran on.
BUILT_IN_PYTHON = '''
from pydantic import BaseModel, Field

from hoare import Contract, Pre, contract


class Inner(BaseModel):
    x0: int = Field(ge=0, le=3)
    s: str = Field(max_length=2)
    f: float = Field(ge=0, allow_inf_nan=False)


class In(BaseModel):
    n0: Inner
    many: list[Inner] = Field(default_factory=list, max_length=2)


class Out(BaseModel):
    f0: int


@contract(post_remedy=False, pre_remedy=False, on_violation=lambda outcome: None)
class Never(Contract):
    prompt = "generated"
    pre_conditions = [Pre(lambda i: i.n0.x0 < 0 or len(i.n0.s) > 2 or not i.n0.f >= 0
                          or any(m.x0 > 3 for m in i.many) or len(i.many) > 2, "never")]

    def forward(self, input: In) -> Out | None:
        return self.contract_result


@contract(post_remedy=False, pre_remedy=False, on_violation=lambda outcome: None)
class Always(Contract):
    prompt = "generated"
    pre_conditions = [Pre(lambda i: 0 <= i.n0.x0 <= 3 and len(i.n0.s) <= 2
                          and 0 <= i.n0.f < 1e309 and len(i.many) <= 2
                          and all(0 <= m.x0 <= 3 for m in i.many), "always")]

    def forward(self, input: In) -> Out | None:
        return self.contract_result
'''
# the verdicts each contract gets, and what they claim of every input it runs on
BUILT_IN_PYTHON_VERDICTS = {
    "Never": ({("pre_satisfiable", None): "fail",
               ("predicate_vacuous", "pre_conditions[0]"): "fail"}, False),
    "Always": ({("predicate_vacuous", "pre_conditions[0]"): "warn"}, True),
}


@pytest.fixture(scope="module")
def built_in_python(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    module = _load(tmp_path_factory.mktemp("built_in_python"), BUILT_IN_PYTHON)
    logging.disable(logging.CRITICAL)
    try:
        for name, (expected, _) in BUILT_IN_PYTHON_VERDICTS.items():
            report = hoare.verify(getattr(module, name))
            verdicts = {(c.kind, c.predicate): c.status for c in report.contracts[0].checks}
            assert {key: verdicts.get(key) for key in expected} == expected, verdicts
    finally:
        logging.disable(logging.NOTSET)
    return module


def _inner(module: ModuleType, how: str, x0: int, s: str, f: float) -> object:
    """An ``Inner`` holding the drawn values, built ``how``."""
    if how == "subclass":  # a subclass whose fields keep the types, drop the constraints
        loose = type("LooseInner", (module.Inner,), {
            "__annotations__": {"x0": int, "s": str, "f": float}, "x0": x0, "s": s, "f": f})
        return loose()
    if how == "mutated":
        inner = module.Inner(x0=0, s="", f=0.0)
        inner.x0, inner.s, inner.f = x0, s, f
        return inner
    return module.Inner.model_construct(x0=x0, s=s, f=f)


@settings(max_examples=200, deadline=None)
@given(contract=st.sampled_from(sorted(BUILT_IN_PYTHON_VERDICTS)),
       how=st.sampled_from(["model_construct", "subclass", "mutated"]),
       outer=st.booleans(), x0=ints(), s=texts(4), f=floats(),
       many=st.lists(ints(), max_size=3))
def test_input_verdicts_hold_for_inputs_built_in_python(
        built_in_python: ModuleType, contract: str, how: str, outer: bool, x0: int, s: str,
        f: float, many: list[int]) -> None:
    module = built_in_python
    inner = _inner(module, how, x0, s, f)
    items = [module.Inner.model_construct(x0=m, s="", f=0.0) for m in many]
    x = module.In.model_construct(n0=inner, many=items) if outer else \
        module.In(n0=inner, many=[module.Inner(x0=0, s="", f=0.0)])
    if not outer:
        x.many = items  # mutated after validation
    requests: list[object] = []
    instance = getattr(module, contract)(engine=FunctionEngine(
        lambda request: requests.append(request) or '{"f0": 1}'))
    instance(x)
    outcome = instance.contract_outcome
    assert outcome is not None
    _, passes = BUILT_IN_PYTHON_VERDICTS[contract]
    refused = [v for v in outcome.violations if v.phase is Phase.INPUT]
    if refused:  # the input check refused it: nothing ran on it
        assert requests == [] and not outcome.success
        return
    # the input ran: the verdict says whether its pre-condition passed
    assert bool(requests) == passes, (outcome.violations, x)


# The same class at act's result, the input generation and the post-conditions use:
# `act` returning a model_construct() (or a loose subclass instance) of its declared
# type passed the result check (an isinstance), so a post-condition reading it that
# `hoare verify` calls "can never pass" passed. act's result is validated again too.
ACT_RESULT = '''
from pydantic import BaseModel, Field

from hoare import Contract, Post, contract


class In(BaseModel):
    a: int


class Used(BaseModel):
    x0: int = Field(ge=0, le=3)


class Out(BaseModel):
    f0: int


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Acting(Contract):
    prompt = "generated"
    post_conditions = [Post(lambda o, u: u.x0 < 0, "post 0")]

    def act(self, input: In) -> Used:
        if input.a % 2:
            return type("LooseUsed", (Used,), {"__annotations__": {"x0": int},
                                               "x0": input.a})()
        return Used.model_construct(x0=input.a)

    def forward(self, input: In) -> Out | None:
        return self.contract_result
'''


@pytest.fixture(scope="module")
def act_result(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    module = _load(tmp_path_factory.mktemp("act_result"), ACT_RESULT)
    logging.disable(logging.CRITICAL)
    try:
        report = hoare.verify(module.Acting)
    finally:
        logging.disable(logging.NOTSET)
    verdicts = {(c.kind, c.predicate): c.status for c in report.contracts[0].checks}
    assert verdicts[("predicate_vacuous", "post_conditions[0]")] == "fail", verdicts
    assert verdicts[("post_satisfiable", None)] == "fail", verdicts
    return module


@settings(max_examples=100, deadline=None)
@given(a=ints())
@example(a=-5)
@example(a=-4)
def test_post_verdicts_hold_for_act_results_built_in_python(act_result: ModuleType,
                                                            a: int) -> None:
    instance = act_result.Acting(engine=FunctionEngine(lambda request: '{"f0": 1}'))
    instance(act_result.In(a=a))
    outcome = instance.contract_outcome
    assert outcome is not None and not outcome.success, "a post that can never pass passed"
    if not 0 <= a <= 3:  # act's result breaks its type: refused before any request
        assert [(v.kind, v.phase) for v in outcome.violations] == [
            (ViolationKind.ERROR, Phase.ACT)], outcome.violations


# The boundary checks an instance against what validation leaves in its fields: an
# after validator of a field runs again when it only narrows (the verifier assumes
# what it checks), else the boundary accepts what the field holds, and no verdict
# about an input may rest on the constraints behind it (the verifier's field is opaque).
AFTER_VALIDATED = '''
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, field_validator

from hoare import Contract, Pre, contract


def same(value: int) -> int:
    if value == 7:
        raise ValueError("not 7")
    return value


class In(BaseModel):
    a: Annotated[int, Field(ge=0), AfterValidator(same)]
    b: int = Field(default=0, ge=0)

    @field_validator("b")
    @classmethod
    def bump(cls, value: int) -> int:
        return value + 1


class Out(BaseModel):
    f0: int


@contract(post_remedy=False, pre_remedy=False, on_violation=lambda outcome: None)
class Narrowed(Contract):
    prompt = "generated"
    pre_conditions = [Pre(lambda i: i.a < 0, "pre 0")]

    def forward(self, input: In) -> Out | None:
        return self.contract_result


@contract(post_remedy=False, pre_remedy=False, on_violation=lambda outcome: None)
class Changed(Contract):
    prompt = "generated"
    pre_conditions = [Pre(lambda i: i.b < 0, "pre 0")]

    def forward(self, input: In) -> Out | None:
        return self.contract_result
'''


@pytest.mark.parametrize("name, built, runs", [
    ("Narrowed", {"a": -1, "b": 1}, False),  # rechecked: refused, as the fail says
    ("Narrowed", {"a": 7, "b": 1}, False),  # the narrowing itself is checked again
    ("Changed", {"a": 0, "b": -1}, True),  # what bump left is accepted: no fail
])
def test_after_validated_input_fields(tmp_path: Path, name: str, built: dict[str, int],
                                      runs: bool) -> None:
    module = _load(tmp_path, AFTER_VALIDATED)
    logging.disable(logging.CRITICAL)
    try:
        report = hoare.verify(getattr(module, name))
    finally:
        logging.disable(logging.NOTSET)
    verdicts = {(c.kind, c.predicate): c.status for c in report.contracts[0].checks}
    requests: list[object] = []
    instance = getattr(module, name)(engine=FunctionEngine(
        lambda request: requests.append(request) or '{"f0": 1}'))
    instance(module.In.model_construct(**built))
    outcome = instance.contract_outcome
    assert outcome is not None and outcome.success == runs == bool(requests)
    if runs:  # the pre-condition passed on it
        assert verdicts[("pre_satisfiable", None)] != "fail", verdicts
        assert verdicts[("predicate_vacuous", "pre_conditions[0]")] != "fail", verdicts
    else:
        assert [v.phase for v in outcome.violations] == [Phase.INPUT]
        assert verdicts[("pre_satisfiable", None)] == "fail", verdicts


# The pre-flight answered "satisfiable" for `i.n0 > i.n0 + 3` at n0 = 3.15e16 (and
# 1e300), where no output passes: float arithmetic on a computed value is modelled
# within its rounding error bound (an over-approximation), and a "satisfiable" that
# no replay backs rested on it. Found by `make fuzz` (seed 13, case 505). The class:
# every rounded operation (+ - * / // % on floats, int / int, int to float) inside a
# post-condition reading the input, checked on many inputs over the whole float range.
ROUNDING = '''
from typing import Annotated
from pydantic import BaseModel, Field
from hoare import Contract, Post, contract

LIMIT = {k!r}


class In(BaseModel):
    n0: float


class Out(BaseModel):
    pass


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Generated(Contract):
    prompt = "generated"
    post_conditions = [Post(lambda o, i: {body}, "post 0")]

    def forward(self, input: In) -> Out:
        return self.contract_result
'''

ROUNDING_BODIES = ("i.n0 > i.n0 + LIMIT", "i.n0 < i.n0 - LIMIT", "i.n0 * LIMIT < i.n0",
                   "i.n0 / LIMIT > i.n0", "(i.n0 + LIMIT) - LIMIT != i.n0",
                   "i.n0 // LIMIT > i.n0", "i.n0 % LIMIT < 0")
_ROUNDING_MODULES: dict[tuple[str, object], ModuleType] = {}


def _rounding_module(tmp_dir: Path, body: str, k: object) -> ModuleType:
    key = (body, k)
    if key not in _ROUNDING_MODULES:
        folder = tmp_dir / f"r{len(_ROUNDING_MODULES)}"
        folder.mkdir()
        _ROUNDING_MODULES[key] = _load(folder, ROUNDING.format(k=k, body=body))
    return _ROUNDING_MODULES[key]


@pytest.fixture(scope="module")
def rounding_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rounding")


@settings(max_examples=150)
@given(body=st.sampled_from(ROUNDING_BODIES), k=st.sampled_from([3, 1, 0.5, 2.5, 1e-300]),
       n0=floats())
@example(body="i.n0 > i.n0 + LIMIT", k=3, n0=3.1525197391593468e16)
@example(body="i.n0 > i.n0 + LIMIT", k=3, n0=1e300)
def test_preflight_verdict_on_float_arithmetic_holds(rounding_dir: Path, body: str,
                                                      k: object, n0: float) -> None:
    from hoare.kernel import Verdict
    from hoare.verifier.runtime.preflight import Preflight

    module = _rounding_module(rounding_dir, body, k)
    x = module.In(n0=n0)
    source = module.Generated.__hoare__.post[0]
    try:
        truth = bool(source.fn(module.Out(), x))
    except Exception:
        truth = False
    checker = Preflight.for_description(module.Generated.__hoare__)
    assert checker is not None
    verdict = checker.check(module.Generated(), x).verdict
    if truth:
        assert verdict is not Verdict.UNSATISFIABLE, (body, k, n0)
    else:
        assert verdict is not Verdict.SATISFIABLE, (body, k, n0)


# Same class, in the Unicode tables: str.isupper() & co. and re.* with \w are exact on
# Latin-1 and free above, and the pre-flight answered "satisfiable" on that freedom
# ('ǅ'.isupper() is False, so `o.f0 == i.n0 and o.f0.isupper()` has no output for
# n0 = 'ǅ'). Every loosely modelled str method of the registry and \w patterns, on
# inputs over all of Unicode.
UNICODE_TESTS = '''
import re
from pydantic import BaseModel
from hoare import Contract, Post, contract


class In(BaseModel):
    n0: str


class Out(BaseModel):
    f0: str


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Generated(Contract):
    prompt = "generated"
    post_conditions = [Post(lambda o, i: o.f0 == i.n0 and {test}, "post 0")]

    def forward(self, input: In) -> Out:
        return self.contract_result
'''


def _loose_str_tests() -> list[str]:
    from hoare.verifier.translate.calls import registered
    REGISTRY = registered()

    methods = [f"o.f0.{key.removeprefix('str.')}()" for key, entry in sorted(REGISTRY.items())
               if key.startswith("str.is") and entry.precision == "over"]
    return [*methods, r"re.fullmatch(r'\w', o.f0) is not None",
            r"re.search(r'\w+', o.f0) is not None", r"re.match(r'\W', o.f0) is not None"]


@settings(max_examples=150)
@given(test=st.sampled_from(_loose_str_tests()), n0=texts(3))
@example(test="o.f0.isupper()", n0="ǅ")
@example(test="o.f0.isalpha()", n0="\u0378")
@example(test=r"re.fullmatch(r'\w', o.f0) is not None", n0="\u0301")
def test_preflight_verdict_on_unicode_tables_holds(rounding_dir: Path, test: str,
                                                   n0: str) -> None:
    from hoare.kernel import Verdict
    from hoare.verifier.runtime.preflight import Preflight

    key = ("unicode", test)
    if key not in _ROUNDING_MODULES:
        folder = rounding_dir / f"u{len(_ROUNDING_MODULES)}"
        folder.mkdir()
        _ROUNDING_MODULES[key] = _load(folder, UNICODE_TESTS.format(test=test))
    module = _ROUNDING_MODULES[key]
    x = module.In(n0=n0)
    try:
        truth = bool(module.Generated.__hoare__.post[0].fn(module.Out(f0=n0), x))
    except Exception:
        truth = False
    checker = Preflight.for_description(module.Generated.__hoare__)
    assert checker is not None
    verdict = checker.check(module.Generated(), x).verdict
    if truth:
        assert verdict is not Verdict.UNSATISFIABLE, (test, n0)
    else:
        assert verdict is not Verdict.SATISFIABLE, (test, n0)
