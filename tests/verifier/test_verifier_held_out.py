"""Held-out soundness probes (issue 29 item 5), each as a class of constructs.

Real Python and pydantic are the oracle. Two levels:

* the translation of one predicate against Python value by value (hypothesis over
  generated values and generated constants): when the translation is not opaque,
  Python's outcome must be one it allows (exactly it when nothing is havoc);
* whole contracts through the public path: ``hoare verify`` never says ``fail``
  (or ``warn``) and the run-time pre-flight never refuses a call when a valid
  output passes (the false refusal that turns a working contract into a permanent
  fallback).

Classes: module constants of every shape compared with or containing fields;
``str``/``int`` mixin enum members used as their base type; printf-style and
other formatting; builtins that raise on some values (``str(int)`` past CPython's
digit limit, huge ints); ``self.<attr>`` set anywhere but a plain class attribute.
"""

# The probes spell the constructs users write: %-formatting, .format, (str, Enum).
# ruff: noqa: UP031, UP032, UP042

from __future__ import annotations

import enum
import importlib.util
import itertools
import math
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, GetPydanticSchema
from pydantic_core import core_schema
from test_verifier_domains import raw_refutation
from verifier_support import predicate_source

from hoare import verify
from hoare.declaration.models import type_spec
from hoare.engines import FunctionEngine
from hoare.kernel import Verdict
from hoare.verifier.search.concrete import BindError, bind
from hoare.verifier.search.witness import call_predicate
from hoare.verifier.translate.metadata import core_schema_gaps
from hoare.verifier.translate.predicates import Translation, translate
from hoare.verifier.translate.types import TypeBuilder

PROFILE = settings(max_examples=40, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# -- the translation against Python, value by value -----------------------------------------


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "b"


class Shade(enum.StrEnum):
    DARK = "da"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Perm(enum.IntFlag):
    R = 1
    W = 2


class Plain(enum.Enum):
    A = "red"


class Loud(str, enum.Enum):
    """A str mixin whose operators are the user's: never read as its data."""

    A = "a"

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__

    def __contains__(self, item: object) -> bool:
        return True


class V(BaseModel):
    s: str
    n: int
    f: float
    xs: list[int]
    xss: list[list[int]]
    tp: tuple[int, ...]


floats = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 0.5, math.nan, math.inf, -math.inf]),
                   st.floats())
texts = st.one_of(
    st.sampled_from(["", "red", "a red", "redb", "b", "rb", "da", "dark", "%s", "3"]),
    st.text(alphabet=st.sampled_from(["r", "e", "d", "a", "b", "%", "s", "\U0010fffd"]),
            max_size=5))
small_lists = st.one_of(st.sampled_from([[], [1, 2], [3, 4], [1]]),
                        st.lists(st.integers(-2, 3), max_size=3))
values = st.builds(V, s=texts, n=st.one_of(st.integers(-5, 5), st.integers()), f=floats,
                   xs=small_lists,
                   xss=st.one_of(st.sampled_from([[[1, 2]], [[1, 2], [3, 4]], [[]]]),
                                 st.lists(small_lists, max_size=3)),
                   tp=small_lists.map(tuple))


def _possible(translation: Translation, typed: Any, value: V) -> tuple[bool, bool] | None:
    """(can pass, can fail) of the translation on ``value`` (None: not bindable)."""
    try:
        bindings = bind(typed.value, value)
    except BindError:
        return None
    answers = []
    for goal in (translation.passes(), translation.fails()):
        solver = z3.Solver()
        solver.set("timeout", 20_000)
        solver.add(*bindings, *translation.defs, goal)
        answer = solver.check()
        if answer == z3.unknown:
            return None
        answers.append(answer == z3.sat)
    return answers[0], answers[1]


def agrees(fn: Callable[[V], object], value: V) -> Translation:
    """The translation of ``fn`` allows what Python does on ``value`` (exactly that
    when neither a havoc nor a rounded float is involved); returns the translation."""
    typed = TypeBuilder("input").build(type_spec(V))
    translation = translate(predicate_source(fn), [typed.value], None)
    if translation.opaque is not None:
        return translation
    real = call_predicate(translation.source, None, value).passed
    possible = _possible(translation, typed, value)
    if possible is None:
        return translation
    can_pass, can_fail = possible
    assert (can_pass if real else can_fail), (value, real, possible)
    if not translation.havoc and not translation.uses_float:
        assert (can_pass, can_fail) == (real, not real), (value, real, possible)
    return translation


# Constants of every shape: nested lists/tuples, sets, frozensets, dicts, enums, floats
# with nan, empty ones, mixed ones, big ints.
scalars = st.one_of(st.integers(-2, 3), st.sampled_from([0.0, 1.0, -0.0, math.nan, math.inf]),
                    st.sampled_from(["", "red", "a"]), st.booleans(), st.none(),
                    st.sampled_from([Color.RED, Level.LOW, Plain.A, 10**700]))
shapes = st.sampled_from([[[1, 2]], [[1, 2], [3, 4]], ((1, 2),), [(1, 2)], [1, 2], (1, 2),
                          [], (), [[]], [math.nan], [[math.nan]], {"a": [1, 2]}, {1, 2},
                          frozenset({1}), ["red", Color.RED], [Level.LOW, 3], "red", 3])
constants = st.recursive(
    st.one_of(scalars, shapes),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.lists(inner, max_size=3).map(tuple),
                            st.frozensets(st.integers(-2, 3), max_size=3),
                            st.sets(st.sampled_from([1, 2, "a"]), max_size=2),
                            st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
    max_leaves=6)


def _with_constant(k: object) -> list[Callable[[V], object]]:
    """Predicates comparing fields with the constant ``k`` (read from a closure,
    as from a module)."""
    return [
        lambda v: v.xss == k, lambda v: k == v.xss, lambda v: v.xs == k, lambda v: v.xs != k,
        lambda v: v.tp == k, lambda v: v.xs in k, lambda v: v.n in k, lambda v: v.f in k,
        lambda v: v.s in k, lambda v: [v.n] == k, lambda v: (v.n,) == k, lambda v: {v.n} == k,
        lambda v: [v.f] == k, lambda v: v.n == k, lambda v: v.f == k, lambda v: v.s == k,
        lambda v: k[0] == v.n, lambda v: all(x == v.n for x in k), lambda v: v.xs in k,
        lambda v: len({v.n, 1}) == 2, lambda v: v.n in {v.n, k}, lambda v: (v.n, v.s) in k,
        lambda v: v.xs[Level.LOW] > 0, lambda v: v.s[v.n if v.n else v.f] == "a",
        lambda v: v.s[:Level.HIGH] == "red", lambda v: v.tp in k,
    ]


CONSTANT_PREDICATES = len(_with_constant(None))


@pytest.mark.parametrize("index", range(CONSTANT_PREDICATES))
@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(k=constants, value=values, data=st.data())
def test_module_constants_of_every_shape(k: object, value: V, index: int,
                                         data: st.DataObject) -> None:
    if data.draw(st.booleans()):  # often the field holds the constant itself
        fields = {"xss": k, "xs": k, "tp": k, "n": k, "f": k, "s": k}
        name = data.draw(st.sampled_from(sorted(fields)))
        try:
            value = V.model_validate({**value.model_dump(), name: fields[name]})
        except ValueError:
            pass
    agrees(_with_constant(k)[index], value)


def test_a_nested_list_constant_equals_a_nested_list_field() -> None:
    k = [[1, 2]]
    translation = agrees(lambda v: v.xss == k,
                         V(s="", n=0, f=0.0, xs=[], xss=[[1, 2]], tp=()))
    assert translation.opaque is None  # decided, and decided right
    agrees(lambda v: v.tp == k, V(s="", n=0, f=0.0, xs=[], xss=[], tp=(1, 2)))
    same = math.nan
    # containers compare items by identity first: [nan] == [nan] for one object
    agrees(lambda v: [same] == [v.f], V(s="", n=0, f=same, xs=[], xss=[], tp=()))


# Enum members used as their base type: in, startswith/endswith, find, ==, +, len, re.
ENUM_PREDICATES: list[Callable[[V], object]] = [
    lambda v: Color.RED in v.s, lambda v: v.s in Color.RED, lambda v: v.s.startswith(Color.RED),
    lambda v: v.s.endswith((Color.BLUE, "x")), lambda v: v.s.find(Color.RED) >= 0,
    lambda v: v.s.removeprefix(Color.BLUE) == "", lambda v: v.s == Color.RED,
    lambda v: Color.RED == v.s, lambda v: v.s + Color.BLUE == "rb", lambda v: len(Color.RED) == 3,
    lambda v: re.search("e", Color.RED) is not None and v.n > 0,
    lambda v: Shade.DARK in v.s, lambda v: v.s.startswith(Shade.DARK),
    lambda v: v.n == Level.HIGH, lambda v: v.n + Level.HIGH > 3, lambda v: v.n < Level.HIGH,
    lambda v: v.n == Perm.W, lambda v: v.n in (Level.LOW, Perm.W),
    lambda v: Plain.A == v.s, lambda v: Loud.A == v.s, lambda v: v.s in Loud.A,
    lambda v: Loud.A in v.s, lambda v: v.s * Level.HIGH == "redredred",
    lambda v: Level.LOW * v.s == v.s, lambda v: v.n % Level.HIGH == 0,
    lambda v: v.s[Level.LOW] == "e", lambda v: isinstance(Color.RED, str) and v.n > 0,
    lambda v: int(Level.HIGH) + v.n == 3, lambda v: abs(Level.HIGH) == v.n,
]


@PROFILE
@given(value=values, index=st.integers(0, len(ENUM_PREDICATES) - 1))
def test_mixin_enum_members_are_their_base_type(value: V, index: int) -> None:
    agrees(ENUM_PREDICATES[index], value)


def test_str_enum_members_are_translated_not_refused() -> None:
    for fn in (lambda v: Color.RED in v.s, lambda v: v.s.startswith(Color.RED)):
        translation = agrees(fn, V(s="a red", n=0, f=0.0, xs=[], xss=[], tp=()))
        assert translation.opaque is None


# Every formatting path: printf-style %, str.format, format(), f-strings with specs
# and conversions: modelled exactly or opaque.
FORMATTING: list[Callable[[V], object]] = [
    lambda v: "%s!" % v.s == "red!", lambda v: "#%d" % v.n == "#3",
    lambda v: "%s" % (v.s,) == v.s, lambda v: v.s % () == v.s,
    lambda v: "%r" % v.s != "", lambda v: "%5.1f" % v.f != "",
    lambda v: "{}!".format(v.s) == "red!", lambda v: format(v.n, "d") == "3",
    lambda v: f"{v.s}!" == "red!", lambda v: f"{v.n:>3}" == "  3", lambda v: f"{v.s!r}" != "",
    lambda v: f"{v.f:.1f}" != "x", lambda v: f"{Color.RED}" == "red",
]


@PROFILE
@given(value=values, index=st.integers(0, len(FORMATTING) - 1))
def test_formatting_is_exact_or_opaque(value: V, index: int) -> None:
    agrees(FORMATTING[index], value)


def test_str_of_an_int_past_the_digit_limit_raises() -> None:
    """``str(n)`` raises ValueError past ``sys.get_int_max_str_digits()`` digits: the
    translation must allow the raise (it was modelled as total)."""
    typed = TypeBuilder("input").build(type_spec(V))
    translation = translate(predicate_source(lambda v: str(v.n) != ""), [typed.value], None)
    assert translation.opaque is None
    n = typed.value.fields["n"].e
    limit = sys.get_int_max_str_digits()
    assert limit > 0
    for bound, fails in ((z3.IntVal(10) ** limit, True), (z3.IntVal(10) ** (limit - 1), False),
                         (-(z3.IntVal(10) ** limit), True)):
        solver = z3.Solver()
        solver.set("timeout", 20_000)
        solver.add(n == bound, *translation.defs, translation.fails())
        assert solver.check() == (z3.sat if fails else z3.unsat), bound
    with pytest.raises(ValueError):
        str(10**limit)


@PROFILE
@given(n=st.one_of(st.integers(), st.sampled_from([10**600, -(10**700), 2**2000, 2**2001])))
def test_ints_z3_cannot_hold_are_unknown_not_errors(n: int) -> None:
    """A huge int (a constant or a value) is unrepresentable (unknown), never a
    ValueError from z3's decimal parsing."""
    agrees(lambda v: v.n > 0, V(s="", n=n, f=0.0, xs=[], xss=[], tp=()))
    agrees(lambda v: v.n != n, V(s="", n=0, f=0.0, xs=[], xss=[], tp=()))


# -- whole contracts: hoare verify and the run-time pre-flight ----------------------------------

_DIR = Path(tempfile.mkdtemp(prefix="hoare_held_out_"))
_COUNTER = itertools.count()

_HEAD = '''import enum
import math
import re
from typing import Optional

from pydantic import BaseModel, Field

from hoare import Contract, Post, Pre, contract


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


NESTED = [[1, 2]]
PAIRS = ((1, 2), (3, 4))
TABLE = {"a": [1, 2]}
FLOATS = [0.5, float("nan")]


class In(BaseModel):
    n: int = 0
'''


def _load(source: str) -> Any:
    name = f"hoare_held_out_{next(_COUNTER)}"
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _post_contract(fields: str, post: str) -> str:
    return _HEAD + f'''

class Out(BaseModel):
{fields}


@contract(post_remedy=False, on_violation=lambda outcome: None)
class C(Contract):
    prompt = "p"
    post_conditions = [Post({post}, "q")]

    def forward(self, input: In) -> Out:
        return self.contract_result
'''


def _assert_not_refused(module: Any, answer: str, given: Any = None) -> None:
    """verify never says fail (or warn when the predicate can fail), the pre-flight
    never refuses, and the call with a passing answer succeeds."""
    output = module.Out.model_validate_json(answer)
    assert module.C.__hoare__.post, "the contract has a post-condition"
    report = verify(module.C)
    (contract_report,) = report.contracts
    for check in contract_report.checks:
        assert check.status != "fail", (check.kind, check.message)
    instance = module.C(engine=FunctionEngine(lambda request: answer))
    result = instance(given if given is not None else module.In())
    outcome = instance.contract_outcome
    assert outcome is not None
    if outcome.preflight is not None:
        assert outcome.preflight.verdict is not Verdict.UNSATISFIABLE, outcome.preflight
    assert outcome.success, outcome.violations
    assert result.model_dump_json() == output.model_dump_json()  # nan != nan


POSTS_THAT_PASS = [
    ("    v: list[list[int]]", "lambda o: o.v == NESTED", '{"v": [[1, 2]]}'),
    ("    v: list[list[int]]", "lambda o: NESTED == o.v", '{"v": [[1, 2]]}'),
    ("    v: list[int]", "lambda o: o.v in NESTED", '{"v": [1, 2]}'),
    ("    v: list[int]", "lambda o: tuple(o.v) in PAIRS or o.v != PAIRS", '{"v": [3, 4]}'),
    ("    k: str", "lambda o: o.k in TABLE", '{"k": "a"}'),
    ("    v: list[int]", "lambda o: o.v == TABLE['a']", '{"v": [1, 2]}'),
    ("    x: float", "lambda o: o.x in FLOATS", '{"x": 0.5}'),
    ("    text: str", "lambda o: Color.RED in o.text", '{"text": "a red"}'),
    ("    text: str", "lambda o: o.text.startswith(Color.RED)", '{"text": "red!"}'),
    ("    text: str", "lambda o: o.text == Color.RED + '!'", '{"text": "red!"}'),
    ("    n: int", "lambda o: o.n == Level.HIGH", '{"n": 3}'),
    ("    text: str", 'lambda o: o.text == "%s!" % "hi"', '{"text": "hi!"}'),
    ("    n: int", 'lambda o: "#%d" % o.n == "#3"', '{"n": 3}'),
    ("    text: str", 'lambda o: "{}!".format(o.text) == "hi!"', '{"text": "hi"}'),
    ("    text: str", 'lambda o: f"{o.text!r}" == "\'hi\'"', '{"text": "hi"}'),
    ("    ratio: float", "lambda o: math.isfinite(max(o.ratio, 0))", '{"ratio": 0.5}'),
    ("    ratio: float", "lambda o: not math.isfinite(max(o.ratio, 0))", '{"ratio": NaN}'),
    ("    n: int", "lambda o: max(o.n, 0.5) == 0.5", '{"n": 0}'),
    # a Rust nested class; the same pattern on Python's re (a class, then "]")
    ("    t: str = Field(pattern=r'^[[a-c]]$')", "lambda o: o.t == 'b'", '{"t": "b"}'),
    ("    model_config = {'regex_engine': 'python-re'}\n"
     "    t: str = Field(pattern=r'^[[a-c]]$')", "lambda o: o.t.endswith(']')", '{"t": "b]"}'),
    ("    t: str = Field(pattern=r'^\\d$')", "lambda o: o.t != '1'", '{"t": "\u0663"}'),
]


@pytest.mark.parametrize(("fields", "post", "answer"), POSTS_THAT_PASS)
def test_contracts_with_a_passing_output_are_not_refused(fields: str, post: str,
                                                         answer: str) -> None:
    _assert_not_refused(_load(_post_contract(fields, post)), answer)


def test_str_of_a_huge_int_is_not_total() -> None:
    """``str(o.n) != ""`` fails for an int past the digit limit: never "can never fail"."""
    module = _load(_post_contract("    n: int", 'lambda o: str(o.n) != ""'))
    (contract_report,) = verify(module.C).contracts
    vacuous = [c for c in contract_report.checks if c.kind == "predicate_vacuous"]
    assert vacuous and all(c.status != "warn" for c in vacuous), vacuous
    _assert_not_refused(module, '{"n": 3}')


def test_a_huge_int_input_reaches_the_preflight_without_error() -> None:
    source = _HEAD.replace("class In(BaseModel):\n    n: int = 0\n", '''class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    k: int


@contract(post_remedy=False, on_violation=lambda outcome: None)
class C(Contract):
    prompt = "p"
    pre_conditions = [Pre(lambda i: i.n > 0, "positive")]
    post_conditions = [Post(lambda o, i: o.k < i.n, "below")]

    def forward(self, input: In) -> Out:
        return self.contract_result
''')
    module = _load(source)
    _assert_not_refused(module, '{"k": 1}', module.In(n=10**5000))


# self.<attr>: set anywhere but a plain class attribute.
_SELF_HEAD = _HEAD + '''

class Out(BaseModel):
    k: int = Field(ge=1)


class Parent(Contract):
    limit = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.limit = 0
        self.configure()

    def configure(self):
        pass
'''

_SELF_SHAPES = {
    "tuple assignment": '''    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.limit, self.other = 5, 1
''',
    "a helper method": '''    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._setup()

    def _setup(self):
        self.limit = 5
''',
    "setattr": '''    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        setattr(self, "limit", 5)
''',
    "__dict__": '''    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__["limit"] = 5
''',
    "an augmented assignment": '''    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.limit += 5
''',
    "a parent's hook": '''    def configure(self):
        self.limit = 5
''',
    "a property": '''    @property
    def limit(self):
        return 5
''',
}


@pytest.mark.parametrize("shape", sorted(_SELF_SHAPES))
def test_self_attributes_set_elsewhere_are_not_the_class_value(shape: str) -> None:
    base = "Parent" if shape == "a parent's hook" else "Contract"
    head = "" if shape in ("a property", "a parent's hook") else "    limit = 0\n"
    source = _SELF_HEAD + f'''

@contract(post_remedy=False, on_violation=lambda outcome: None)
class C({base}):
    prompt = "p"
{head}
{_SELF_SHAPES[shape]}
    def post(self, o: Out) -> bool:
        return o.k == self.limit

    def forward(self, input: In) -> Out:
        return self.contract_result
'''
    module = _load(source)
    assert module.C().limit == 5  # the truth: every instance has limit 5
    _assert_not_refused(module, '{"k": 5}')


# -- the compiled core schema is the gate (issue 29 item 1) -----------------------------------


class _Times10:
    """A custom type whose core schema changes the value after its constraints."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return core_schema.no_info_after_validator_function(lambda v: v * 10, handler(source))


class _CustomInit(BaseModel):
    k: int = Field(ge=0, le=5)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self.__dict__["k"] = 9  # what pydantic-core's call of __init__ leaves


class _SchemaHook(BaseModel):
    k: Annotated[int, Field(le=5), GetPydanticSchema(
        lambda tp, handler: core_schema.no_info_plain_validator_function(lambda v: 42))]


class _AfterType(BaseModel):
    k: Annotated[int, Field(ge=0, le=5), _Times10]


class _Exact(BaseModel):
    k: int = Field(ge=-3, le=5)
    s: Annotated[str, Field(max_length=2, pattern="^[ab]*$")] = ""
    xs: list[Annotated[int, Field(ge=0)]] = []


def test_core_schema_gaps_name_what_is_not_modelled() -> None:
    assert core_schema_gaps(_Exact) == {}
    assert "__init__" in core_schema_gaps(_CustomInit)["*"]
    assert "function-plain" in core_schema_gaps(_SchemaHook)["k"]


@pytest.mark.parametrize("model", [_CustomInit, _SchemaHook, _AfterType, _Exact])
@settings(max_examples=8, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(-4, 6))
def test_every_value_pydantic_produces_is_in_the_domain(model: type[BaseModel], k: int) -> None:
    """Whatever value pydantic-core really produces, the translation alone (types and
    the predicate ``m.k == that value``) never claims no input passes."""
    try:
        produced = model.model_validate({"k": k}).k
    except ValueError:
        return
    assert not raw_refutation(model, lambda m: m.k == produced), (model.__name__, k, produced)


def test_verbose_report_names_the_registry_entries_a_verdict_rests_on() -> None:
    """``hoare verify -v`` shows which registry entries (and their precision) a negative
    verdict rests on; the default table does not."""
    module = _load(_post_contract("    text: str = Field(max_length=2)",
                                  'lambda o: o.text.startswith("abc") and len(o.text) > 0'))
    report = verify(module.C)
    (contract_report,) = report.contracts
    failed = [c for c in contract_report.checks if c.status == "fail"]
    assert failed, contract_report.checks
    verbose = report.render(verbose=True)
    assert "rests on len (over), str.startswith (exact)" in verbose, verbose
    assert "rests on" not in report.render()


class _Sneaky(str):
    """A str subclass redefining what `==`, `in` and `len` mean."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__

    def __contains__(self, item: object) -> bool:
        return True

    def __len__(self) -> int:
        return 0


class _Loose(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class _Everything(list):  # type: ignore[type-arg]
    def __contains__(self, item: object) -> bool:
        return True


SNEAKY = _Sneaky("x")
LOOSE = _Loose(1)
EVERYTHING = _Everything([1])
SUBCLASS_PREDICATES: list[Callable[[V], object]] = [
    lambda v: v.s == SNEAKY, lambda v: SNEAKY == v.s, lambda v: v.s in SNEAKY,
    lambda v: len(SNEAKY) == 1, lambda v: v.n == LOOSE, lambda v: v.n in EVERYTHING,
    lambda v: v.s in (SNEAKY,), lambda v: v.n in [LOOSE],
]


@PROFILE
@given(value=values, index=st.integers(0, len(SUBCLASS_PREDICATES) - 1))
def test_constants_of_builtin_subclasses_are_not_their_base_values(value: V, index: int
                                                                   ) -> None:
    agrees(SUBCLASS_PREDICATES[index], value)


@pytest.mark.parametrize("fn", [lambda v: [v.f].count(v.f) == 1, lambda v: v.f in [v.f],
                                lambda v: [v.f] == [v.f], lambda v: (v.f,) == (v.f,)])
def test_containers_compare_items_by_identity_first(fn: Callable[[V], object]) -> None:
    """``[x].count(x)``, ``x in [x]``, ``[x] == [x]`` hold for ``x = nan`` (the same
    object): the translation must allow it, not claim they fail."""
    agrees(fn, V(s="", n=0, f=math.nan, xs=[], xss=[], tp=()))
