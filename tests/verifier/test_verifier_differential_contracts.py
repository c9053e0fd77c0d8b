"""Whole contracts against brute force: ``hoare verify``'s verdicts and the run-time
pre-flight never contradict the truth over a small finite domain.

Hypothesis builds random small contracts (an input with one small int; an output
with one or two fields among bounded ints, bools, ``Literal``s, short strings over
a tiny alphabet, optionals; pre- and post-conditions from a small grammar of
comparisons, ``and``/``or``/``not``, arithmetic, ``len``, ``in``,
``startswith``, ``//``), writes each as a module (so ``inspect.getsource`` sees
the lambdas) and enumerates every value of a superset of the domain, validated by
the real pydantic models and checked by the real predicates. A ``pass``, ``fail``
or ``warn`` must agree with the enumeration; ``unknown`` is allowed and counted
(the share is printed at the end of the module; run with ``-s`` to see it).
``HOARE_NIGHTLY=1`` runs many more contracts.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.replay import passes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from hoare import verify
from hoare.declaration.description import PredicateSource
from hoare.engines import FunctionEngine
from hoare.kernel import Verdict
from hoare.verifier.report.model import CheckResult

NIGHTLY = os.environ.get("HOARE_NIGHTLY") == "1"
EXAMPLES = 300 if NIGHTLY else 20
STATS: Counter[str] = Counter()
_DIR = Path(tempfile.mkdtemp(prefix="hoare_diff_contracts_"))
_COUNTER = itertools.count()


# -- random contracts ------------------------------------------------------------------------


@dataclass(frozen=True)
class Fld:
    """One output field: its annotation text, the brute-force superset, its kind."""

    name: str
    annotation: str
    superset: tuple[Any, ...]
    kind: str  # int | bool | lit | str | optint


ALPHABET = "ab"
STRINGS = tuple("".join(p) for n in range(3) for p in itertools.product("abc", repeat=n))


@st.composite
def fields(draw: st.DrawFn, name: str) -> Fld:
    kind = draw(st.sampled_from(["int", "int", "bool", "lit", "str", "optint"]))
    if kind in ("int", "optint"):
        low = draw(st.integers(-3, 3))
        empty = draw(st.integers(0, 9)) == 0  # now and then a type with no value
        high = low - 1 if empty else low + draw(st.integers(0, 4))
        constraint = f"Field(ge={low}, le={high})" if kind == "int" else \
            f"Field(None, ge={low}, le={high})"
        annotation = "int" if kind == "int" else "Optional[int]"
        superset: tuple[Any, ...] = tuple(range(low - 2, high + 3))
        if kind == "optint":
            superset += (None,)
        return Fld(name, f"{annotation} = {constraint}", superset, kind)
    if kind == "bool":
        return Fld(name, "bool", (True, False), kind)
    if kind == "lit":
        members = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
        text = ", ".join(repr(m) for m in sorted(members))
        return Fld(name, f"Literal[{text}]", ("a", "b", "c", "d"), kind)
    max_length = draw(st.integers(0, 2))
    min_length = draw(st.integers(0, max_length))
    return Fld(name, f'str = Field(min_length={min_length}, max_length={max_length}, '
                     f'pattern="^[{ALPHABET}]*$")', STRINGS, kind)


def ints(draw: st.DrawFn, flds: list[Fld], depth: int) -> str:
    """An int-valued expression over the output ``o`` and the input ``i``."""
    atoms = [f"o.{f.name}" for f in flds if f.kind == "int"] * 2
    atoms += [f"len(o.{f.name})" for f in flds if f.kind == "str"] * 2
    atoms += ["i.n", str(draw(st.integers(-3, 4)))]
    choice = draw(st.integers(0, 5 if depth < 2 else 0))
    if choice <= 1:
        return draw(st.sampled_from(atoms))
    left = ints(draw, flds, depth + 1)
    right = ints(draw, flds, depth + 1)
    op = draw(st.sampled_from(["+", "-", "*", "//", "%"] if choice == 5 else ["+", "-"]))
    return f"({left} {op} {right})"


def bools(draw: st.DrawFn, flds: list[Fld], depth: int) -> str:
    """A predicate body over ``o`` and ``i``."""
    choice = draw(st.integers(0, 9 if depth < 2 else 5))
    if choice <= 2:
        op = draw(st.sampled_from(["<", "<=", "==", "!=", ">", ">="]))
        return f"{ints(draw, flds, depth + 1)} {op} {ints(draw, flds, depth + 1)}"
    if choice <= 5:
        field = draw(st.sampled_from(flds))
        o = f"o.{field.name}"
        if field.kind == "bool":
            return o if draw(st.booleans()) else f"{o} == (i.n > 1)"
        if field.kind == "lit":
            options = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=2))
            return f"{o} == {options[0]!r}" if len(options) == 1 else \
                f"{o} in {tuple(options)!r}"
        if field.kind == "str":
            text = draw(st.sampled_from(["", "a", "b", "ab", "ba", "c"]))
            return draw(st.sampled_from([f"{o} == {text!r}", f"{text!r} in {o}",
                                         f"{o}.startswith({text!r})", f"{o}.endswith({text!r})",
                                         f"len({o}) == i.n", o]))
        if field.kind == "optint":
            k = draw(st.integers(-2, 3))
            return draw(st.sampled_from([f"{o} is None", f"{o} is not None",
                                         f"{o} is not None and {o} > {k}",
                                         f"{o} is None or {o} < i.n", f"{o} > {k}"]))
        return f"{o} {draw(st.sampled_from(['<', '==', '>=']))} {draw(st.integers(-3, 4))}"
    if choice == 6:
        return f"not ({bools(draw, flds, depth + 1)})"
    op = draw(st.sampled_from(["and", "or"]))
    return f"({bools(draw, flds, depth + 1)}) {op} ({bools(draw, flds, depth + 1)})"


def statements(draw: st.DrawFn, flds: list[Fld], depth: int, indent: str) -> list[str]:
    """A block of a method predicate: guards, early and bare returns, raises, asserts,
    a local, and a tail that may fall off the end (returning None, which passes)."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["if", "if", "assert", "local"] if depth < 2 else
                                    ["assert", "local"]))
        if kind == "if":
            lines.append(f"{indent}if {bools(draw, flds, 1)}:")
            lines += statements(draw, flds, depth + 1, indent + "    ")
            if draw(st.booleans()):
                lines.append(f"{indent}else:")
                lines += statements(draw, flds, depth + 1, indent + "    ")
        elif kind == "assert":
            lines.append(f"{indent}assert {bools(draw, flds, 1)}, \"failed assert\"")
        else:
            lines.append(f"{indent}k = {ints(draw, flds, 1)}")
            lines.append(f"{indent}if k {draw(st.sampled_from(['<', '==', '>']))} "
                         f"{draw(st.integers(-2, 3))}:")
            lines += _exit(draw, flds, indent + "    ")
    tail = draw(st.sampled_from(["exit", "exit", "fall off"]))
    if tail == "exit":
        lines += _exit(draw, flds, indent)
    return lines


def _exit(draw: st.DrawFn, flds: list[Fld], indent: str) -> list[str]:
    kind = draw(st.sampled_from(["return bool", "return bool", "return", "return None",
                                 "raise", "pass"]))
    if kind == "return bool":
        return [f"{indent}return {bools(draw, flds, 1)}"]
    if kind == "raise":
        return [f"{indent}raise ValueError(\"rejected\")"]
    return [f"{indent}{kind}"]


@dataclass(frozen=True)
class Generated:
    source: str
    flds: tuple[Fld, ...]
    input_range: tuple[int, int]


@st.composite
def contracts(draw: st.DrawFn) -> Generated:
    count = draw(st.integers(1, 2))
    flds = [draw(fields(f"f{k}")) for k in range(count)]
    low = draw(st.integers(0, 1))
    high = draw(st.integers(low, 3))
    posts = []
    for index in range(draw(st.integers(1, 3))):
        body = bools(draw, flds, 0)
        reads_input = "i." in body
        args = "o, i" if reads_input else "o"
        posts.append(f"        Post(lambda {args}: {body}, \"post {index}\"),")
    pres = []
    if draw(st.booleans()):
        k = draw(st.integers(0, 3))
        pres.append(f"        Pre(lambda i: i.n {draw(st.sampled_from(['<', '!=', '>=']))} {k},"
                    f" \"pre 0\"),")
    method = ""
    if draw(st.booleans()):
        body = "\n".join(statements(draw, flds, 0, "        "))
        method = f"\n    def post(self, o: Out, i: In) -> Optional[bool]:\n{body}\n"
    field_lines = "\n".join(f"    {f.name}: {f.annotation}" for f in flds)
    source = f'''from typing import Literal, Optional

from pydantic import BaseModel, Field

from hoare import Contract, Post, Pre, contract


class In(BaseModel):
    n: int = Field(ge={low}, le={high})


class Out(BaseModel):
{field_lines}


@contract(post_remedy=False, on_violation=lambda outcome: None)
class Generated(Contract):
    prompt = "generated"
    pre_conditions = [
{chr(10).join(pres)}
    ]
    post_conditions = [
{chr(10).join(posts)}
    ]

    def forward(self, input: In) -> Out:
        return self.contract_result
{method}'''
    return Generated(source, tuple(flds), (low, high))


def load(generated: Generated) -> Any:
    name = f"hoare_diff_contract_{os.getpid()}_{next(_COUNTER)}"
    path = _DIR / f"{name}.py"
    path.write_text(generated.source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- brute force -----------------------------------------------------------------------------


def _valid(model: type[BaseModel], rows: Iterator[dict[str, Any]]) -> list[BaseModel]:
    out = []
    for row in rows:
        try:
            out.append(model.model_validate(row))
        except ValidationError:
            continue
    return out


@dataclass
class Truth:
    inputs: list[BaseModel]  # valid inputs
    outputs: list[BaseModel]  # valid outputs
    pre: list[PredicateSource]
    post: list[PredicateSource]

    def pre_ok(self, x: BaseModel) -> bool:
        return all(passes(p, None, x) for p in self.pre)

    def post_ok(self, o: BaseModel, x: BaseModel) -> bool:
        return all(passes(p, None, o, x) for p in self.post)

    def runnable(self) -> list[BaseModel]:
        return [x for x in self.inputs if self.pre_ok(x)]

    def outputs_for(self, x: BaseModel) -> list[BaseModel]:
        return [o for o in self.outputs if self.post_ok(o, x)]


def truth_of(module: Any, generated: Generated) -> Truth:
    desc = module.Generated.__hoare__
    low, high = generated.input_range
    inputs = _valid(module.In, ({"n": n} for n in range(low - 2, high + 3)))
    names = [f.name for f in generated.flds]
    rows = (dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(f.superset for f in generated.flds)))
    outputs = _valid(module.Out, rows)
    return Truth(inputs, outputs, list(desc.pre), list(desc.post))


def _expected_vacuity(truth: Truth, source: PredicateSource) -> tuple[bool, bool]:
    """(can pass, can fail) over the types alone (no other predicate)."""
    if source.phase == "pre":
        results = [passes(source, None, x) for x in truth.inputs]
    else:
        results = [passes(source, None, o, x) for o in truth.outputs for x in truth.inputs]
    return any(results), not all(results)


def _agrees(check: CheckResult, holds: bool, name: str) -> None:
    """``pass`` claims ``holds``; ``fail``/``warn`` claim its negation."""
    STATS[check.status] += 1
    if check.status == "pass":
        assert holds, f"{name}: pass, but brute force says no: {check.message}"
    elif check.status in ("fail", "warn"):
        assert not holds, f"{name}: {check.status}, but brute force says yes: {check.message}"


def _refutation_is_right(check: CheckResult, truth: Truth,
                         by_id: dict[str, PredicateSource]) -> None:
    """A negative verdict the falsifier refuted (now ``unknown``) was really false:
    the falsifier never hides a true ``fail``/``warn``."""
    STATS["refuted by the falsifier"] += 1
    if check.kind == "pre_satisfiable":
        assert truth.runnable(), check
    elif check.kind == "post_satisfiable":
        assert any(truth.outputs_for(x) for x in truth.runnable()), check
    elif check.kind == "predicate_vacuous":
        assert check.predicate is not None
        can_pass, can_fail = _expected_vacuity(truth, by_id[check.predicate])
        assert can_pass if "can never pass" in check.message else can_fail, check


def check_report(module: Any, truth: Truth) -> None:
    report = verify(module.Generated)
    (contract_report,) = report.contracts
    by_id = {p.id: p for p in (*truth.pre, *truth.post)}
    for check in contract_report.checks:
        if check.status == "unknown" and any("translation was refuted" in note
                                             for note in check.notes):
            _refutation_is_right(check, truth, by_id)
        if check.kind == "pre_satisfiable":
            _agrees(check, bool(truth.runnable()), check.kind)
        elif check.kind == "post_satisfiable":
            exists = any(truth.outputs_for(x) for x in truth.runnable())
            _agrees(check, exists, check.kind)
        elif check.kind == "post_total":
            total = all(truth.outputs_for(x) for x in truth.runnable())
            _agrees(check, total, check.kind)
        elif check.kind == "predicate_vacuous":
            assert check.predicate is not None
            can_pass, can_fail = _expected_vacuity(truth, by_id[check.predicate])
            STATS[check.status] += 1
            if check.status == "pass":
                assert can_pass and can_fail, check
            elif check.status == "fail":
                assert not can_pass, check
            elif check.status == "warn":
                assert not can_fail, check


def check_preflight(module: Any, truth: Truth) -> None:
    """Run the contract on every runnable input with an engine answering a passing
    output when one exists: the pre-flight never refuses such a call, and never calls
    a call with no passing output satisfiable."""
    for x in truth.runnable():
        found = truth.outputs_for(x)
        answer = (found[0] if found else truth.outputs[0] if truth.outputs else None)
        text = answer.model_dump_json() if answer is not None else "{}"
        instance = module.Generated(engine=FunctionEngine(lambda request, t=text: t))
        try:
            instance(x)
        except Exception:  # forward may return None: only the outcome matters
            pass
        outcome = instance.contract_outcome
        assert outcome is not None
        verdict = outcome.preflight.verdict if outcome.preflight is not None else None
        STATS[f"preflight {verdict.value if verdict else 'none'}"] += 1
        if found:
            assert verdict is not Verdict.UNSATISFIABLE, (x, found[0], outcome.preflight)
            assert outcome.success, (x, found[0], outcome.violations)
        else:
            assert verdict is not Verdict.SATISFIABLE, (x, outcome.preflight)


@pytest.fixture(scope="module", autouse=True)
def _share() -> Iterator[None]:
    yield
    checks = STATS["pass"] + STATS["fail"] + STATS["warn"] + STATS["unknown"]
    if checks:
        print(f"\nverify checks: {checks}, unknown share "
              f"{STATS['unknown'] / checks:.1%} ({dict(STATS)})")


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(generated=contracts())
def test_verdicts_agree_with_brute_force(generated: Generated) -> None:
    module = load(generated)
    truth = truth_of(module, generated)
    check_report(module, truth)
    check_preflight(module, truth)
