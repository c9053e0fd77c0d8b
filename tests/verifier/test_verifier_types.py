"""pydantic types → z3: constraints, regexes, defaults, floats, native types."""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Literal

import pytest
import z3
from fixtures.replay import check_witnesses
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hoare.declaration.conditions import Pre
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig
from hoare.verifier.checks.contracts import check_contract
from hoare.verifier.report.model import ContractReport
from hoare.verifier.solve.solver import SolverOptions
from hoare.verifier.translate.regex import translate_pattern
from hoare.verifier.translate.values import str_val

OPTIONS = SolverOptions(timeout_ms=10_000, rlimit=5_000_000)


def run(cls: type) -> ContractReport:
    desc = describe(cls, ContractConfig())
    report = check_contract(desc, OPTIONS)
    check_witnesses(desc, report)
    return report


def pre_status(cls: type) -> tuple[str, Any]:
    check = run(cls).checks[0]
    assert check.kind == "pre_satisfiable"
    return check.status, check.witness


class Out(BaseModel):
    text: str


def contract_on(model: Any, *conditions: Pre) -> type:
    """A plain contract class (no decorator) whose input is ``model``."""

    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": model, "return": Out}
    return type("C", (), {"forward": forward, "pre_conditions": list(conditions),
                          "__module__": __name__})


# -- regular expressions -----------------------------------------------------------------


def test_unanchored_pattern_searches_like_pydantic() -> None:
    class M(BaseModel):
        code: str = Field(pattern="[a-z]+")

    class Anchored(BaseModel):
        code: str = Field(pattern="^[a-z]+$")

    assert pre_status(contract_on(M, Pre(lambda m: m.code == "1a1"))) == ("pass", {"code": "1a1"})
    status, _ = pre_status(contract_on(Anchored, Pre(lambda m: m.code == "1a1")))
    assert status == "fail"


def test_regex_classes_are_not_literal_text() -> None:
    class M(BaseModel):
        code: str = Field(pattern=r"^[0-9]+$")

    assert pre_status(contract_on(M, Pre(lambda m: m.code == "[0-9]+")))[0] == "fail"
    assert pre_status(contract_on(M, Pre(lambda m: len(m.code) == 3)))[0] == "pass"


@pytest.mark.parametrize("pattern", [
    r"[a-z]+", r"^ab?c$", r"^(ab|cd)*$", r"a{2,3}", r"^[^ab]b$", r"\d\s", r"x|^y",
    r"^a.c$", r"(?s)^a.c$", r"^[a-c-]{2}$", r"^$", r"b\Z",
])
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="abcdxy-1 \n_é٣", max_size=5))
def test_python_re_translation_is_exact(pattern: str, text: str) -> None:
    translation = translate_pattern(pattern, "python-re")
    assert translation.regex is not None and translation.exact, translation.reason
    expected = re.search(pattern, text) is not None
    solver = z3.Solver()
    solver.add(z3.InRe(str_val(text), translation.regex))
    assert (solver.check() == z3.sat) == expected


@pytest.mark.parametrize("pattern", [r"^\d+$", r"^\w+-\d$", r"[a-z]\D", r"^\S+$", r"^a$"])
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="ab1-٣é \n", max_size=4))
def test_rust_translation_is_implied_by_pydantic(pattern: str, text: str) -> None:
    """The default engine: the translation may be wider, never narrower."""

    class M(BaseModel):
        value: str = Field(pattern=pattern)

    translation = translate_pattern(pattern, "rust-regex")
    assert translation.regex is not None
    try:
        M(value=text)
    except ValidationError:
        return
    solver = z3.Solver()
    solver.add(z3.InRe(str_val(text), translation.regex))
    assert solver.check() == z3.sat, text


def test_rust_dollar_does_not_accept_a_final_newline() -> None:
    class M(BaseModel):
        code: str = Field(pattern="^ab$")

    with pytest.raises(ValidationError):
        M(code="ab\n")
    assert pre_status(contract_on(M, Pre(lambda m: m.code == "ab\n")))[0] == "fail"


@pytest.mark.parametrize("pattern,feature", [
    ("(?=a)a", "lookahead"), (r"(a)\1", "backreference"), ("(?i)abc", "case-insensitive"),
    (r"\bword", "anchor or word boundary"), ("a*+", "possessive"),
])
def test_unsupported_regex_features_are_named(pattern: str, feature: str) -> None:
    translation = translate_pattern(pattern, "python-re")
    assert translation.regex is None
    assert feature in translation.reason


def test_untranslated_pattern_never_yields_a_false_pass() -> None:
    class M(BaseModel):
        model_config = ConfigDict(regex_engine="python-re")
        word: str = Field(pattern=r"^(?=x)\w+$")

    check = run(contract_on(M, Pre(lambda m: len(m.word) >= 1))).checks[0]
    # z3 ignores the lookahead; the witness is replayed through pydantic.
    if check.status == "pass":
        M.model_validate(check.witness)
    else:
        assert check.status == "unknown"
    assert any("lookahead" in note for note in check.notes)


# -- numbers -------------------------------------------------------------------------------


def test_float_bounds_decide_nan_and_infinity() -> None:
    class Open(BaseModel):
        x: float

    class Lower(BaseModel):
        x: float = Field(ge=0)

    class Closed(BaseModel):
        x: float = Field(ge=0, le=1)

    class Finite(BaseModel):
        x: float = Field(allow_inf_nan=False)

    nan = Pre(lambda m: m.x != m.x, "x is nan")
    inf = Pre(lambda m: m.x > 1e300 and m.x == m.x + 1, "x is +inf")
    assert pre_status(contract_on(Open, nan))[0] == "pass"
    status, witness = pre_status(contract_on(Lower, inf))
    x = Lower.model_validate(witness).x  # inf, or a finite double where x + 1 rounds to x
    assert status == "pass" and x > 1e300 and x == x + 1
    assert pre_status(contract_on(Lower, nan))[0] == "fail"
    assert pre_status(contract_on(Closed, inf))[0] == "fail"
    assert pre_status(contract_on(Finite, nan))[0] == "fail"


def test_bounds_and_multiple_of() -> None:
    class M(BaseModel):
        n: int = Field(gt=0, le=10, multiple_of=4)
        ratio: float = Field(gt=0.5, lt=2)

    assert pre_status(contract_on(M, Pre(lambda m: m.n not in (4, 8))))[0] == "fail"
    assert pre_status(contract_on(M, Pre(lambda m: m.n == 8 and m.ratio > 1.5)))[0] == "pass"
    assert pre_status(contract_on(M, Pre(lambda m: m.ratio <= 0.5 or m.ratio >= 2)))[0] \
        == "fail"


def test_invalid_default_is_a_possible_value() -> None:
    """pydantic does not validate defaults: -1 is reachable by omitting the field."""

    class M(BaseModel):
        retries: int = Field(default=-1, ge=0)

    status, witness = pre_status(contract_on(M, Pre(lambda m: m.retries < 0)))
    assert status == "pass" and "retries" not in witness
    assert M.model_validate(witness).retries == -1


# -- structure -------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_optional_enum_literal_nested_and_lists() -> None:
    class Inner(BaseModel):
        tag: Literal["x", "y"]
        weight: int = Field(ge=1)

    class M(BaseModel):
        color: Color | None = None
        items: list[Inner] = Field(min_length=1, max_length=2)
        note: Annotated[str, Field(max_length=2)] | None = None

    ok = contract_on(M, Pre(lambda m: m.color is Color.GREEN and m.items[-1].tag == "y"
                            and (m.note is None or len(m.note) == 2)))
    status, witness = pre_status(ok)
    assert status == "pass" and witness["color"] == "green"
    bad = contract_on(M, Pre(lambda m: all(i.weight < 1 for i in m.items)))
    assert pre_status(bad)[0] == "fail"
    too_long = contract_on(M, Pre(lambda m: m.note is not None and len(m.note) > 2))
    assert pre_status(too_long)[0] == "fail"


def test_use_enum_values_and_aliases() -> None:
    class M(BaseModel):
        model_config = ConfigDict(use_enum_values=True)
        color: Color
        size: int = Field(alias="Size", ge=3)

    status, witness = pre_status(contract_on(M, Pre(lambda m: m.color == "green")))
    assert status == "pass" and witness["color"] == "green" and witness["Size"] >= 3


def test_native_types_are_wrapped_values() -> None:
    def forward_int(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward_int.__annotations__ = {"input": Annotated[int, Field(ge=0)], "return": list[str]}

    cls = type("Native", (), {"forward": forward_int, "__module__": __name__,
                              "pre_conditions": [Pre(lambda n: n % 7 == 3, "n is 3 mod 7")],
                              "post_conditions": []})
    report = run(cls)
    pre = report.checks[0]
    assert pre.status == "pass" and pre.witness % 7 == 3 and pre.witness >= 0


def test_long_lists_need_the_verifier_bound_and_say_so() -> None:
    class M(BaseModel):
        values: list[int]

    check = run(contract_on(M, Pre(lambda m: len(m.values) > 10))).checks[0]
    assert check.status == "unknown"
    assert "more list elements" in check.message


def test_unmodelled_types_are_opaque_not_wrong() -> None:
    class M(BaseModel):
        data: dict[str, int]
        mixed: int | str

    check = run(contract_on(M, Pre(lambda m: "k" in m.data))).checks[0]
    assert check.status == "unknown" and "dict" in check.message


class _Plain(BaseModel):
    n: int = Field(ge=0, le=10)


class _Rendered(BaseModel):
    """Renders itself its own way, and nothing else: still plain data to predicates."""

    n: int = Field(ge=0, le=10)

    def __str__(self) -> str:
        return f"n is {self.n}"

    def __repr__(self) -> str:
        return "Rendered()"

    def __format__(self, spec: str) -> str:
        return "formatted"


class _Tone(enum.Enum):
    LOW = "low"
    HIGH = "high"

    def __str__(self) -> str:
        return self.value.upper()


def _statuses(model: Any, *conditions: Pre) -> list[str]:
    return [c.status for c in run(contract_on(model, *conditions)).checks]


@pytest.mark.parametrize("predicate", [
    lambda m: m.n < 5, lambda m: m.n <= 10, lambda m: m.n > 10, lambda m: m.n in (2, 3),
])
def test_a_model_that_only_renders_itself_gets_the_plain_model_s_verdicts(predicate: Any) -> None:
    """``__str__``/``__repr__``/``__format__`` change no modelled operation: the verdicts
    on a model defining them equal those on the same model without them."""
    plain = _statuses(_Plain, Pre(predicate))
    assert "unknown" not in plain
    assert _statuses(_Rendered, Pre(predicate)) == plain


def test_rendering_a_model_or_an_enum_stays_unmodelled() -> None:
    """What those methods return is never modelled: a predicate reading it is unknown."""
    class WithTone(BaseModel):
        tone: _Tone

    for model, predicate in [(_Rendered, lambda m: str(m) == "n is 3"),
                             (_Rendered, lambda m: repr(m) == "Rendered()"),
                             (_Rendered, lambda m: f"{m}" == "formatted"),
                             (WithTone, lambda m: str(m.tone) == "LOW")]:
        assert _statuses(model, Pre(predicate))[0] == "unknown"
    assert _statuses(WithTone, Pre(lambda m: m.tone == _Tone.HIGH))[0] == "pass"
