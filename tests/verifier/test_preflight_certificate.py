"""Pre-flight refusals on exact certificates (issue 29 item 3, issue 31 item 3).

The concrete search (``PREFLIGHT_BUDGET``) is skipped only for a refusal resting on
exact parts (``runtime/certificate.py``). These tests check that:

* such a refusal skips the search, and one resting on a loose part (``len``, float
  rounding, an inexact input) still runs it and still catches a planted translator
  bug;
* over generated contracts (exact and loose constructs mixed) and generated inputs
  (the fuzzer's values: huge ints, every float, all of Unicode, subclass instances),
  no refusal hides a passing output. The output domain is finite and enumerated in
  full, each output built from JSON as an engine's answer is, and the predicates run
  in real Python under the kernel's semantics;
* a formula rounding reals to integers is not sent to ``qe`` (it would only run to
  its timeout), and a z3 timeout gives ``unknown``, never a refusal.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from typing import Any
from unittest.mock import patch

import pytest
import z3
from fuzz.cases import load, unload
from fuzz.values import draw_float, draw_int, draw_text, floats, ints, texts
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

from hoare import Post
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig, Verdict
from hoare.verifier.runtime import preflight
from hoare.verifier.runtime.certificate import DOMAIN, Certificate, exact_translation
from hoare.verifier.solve import qe
from hoare.verifier.solve.solver import Assertion
from hoare.verifier.translate.predicates import Translation
from hoare.verifier.translate.statements import FailureCase


class Ticket(BaseModel):
    text: str = Field(min_length=1)
    sla: int = Field(ge=0, le=720)
    ratio: float = 1.0


class Triage(BaseModel):
    eta: int = Field(ge=1, le=720)
    tags: list[str] = Field(default_factory=list, max_length=10)
    score: float = Field(ge=0.0, le=1.0, default=0.5)


def make(*post: Post) -> type:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": Ticket, "return": Triage}
    return type("Plain", (), {"forward": forward, "post_conditions": list(post),
                              "__module__": __name__})


def checker_of(cls: type) -> preflight.Preflight:
    return preflight.Preflight(describe(cls, ContractConfig()))


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every concrete search the pre-flight starts (its arguments)."""
    calls: list[Any] = []
    real = preflight.find_passing

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(preflight, "find_passing", spy)
    return calls


WITHIN_SLA = Post(lambda o, t: o.eta <= t.sla, "within the SLA")


def test_an_exact_refusal_skips_the_concrete_search(searches: list[Any]) -> None:
    """Failed before: every per-input refusal ran the search to its cap."""
    checker = checker_of(make(WITHIN_SLA, Post(lambda o: len(o.tags) <= 5, "few tags")))
    for case in range(20):  # distinct inputs: no cache answers
        result = checker.check(object(), Ticket(text=f"case {case}", sla=0))
        assert result.verdict is Verdict.UNSATISFIABLE
        assert '"within the SLA"' in result.reason and "ge=1 (Triage.eta)" in result.reason
    assert searches == []
    assert checker.check(object(), Ticket(text="q", sla=3)).verdict is Verdict.SATISFIABLE


@pytest.mark.parametrize("post", [
    Post(lambda o, t: len(o.tags) > t.sla + 10, "more tags than the SLA"),  # len: over
    Post(lambda o, t: o.score + 0.5 > t.ratio + 1.0, "rounded"),  # float rounding: havoc
])
def test_a_refusal_resting_on_a_loose_part_keeps_the_search(searches: list[Any],
                                                             post: Post) -> None:
    checker = checker_of(make(post))
    result = checker.check(object(), Ticket(text="q", sla=0, ratio=1e308))
    assert result.verdict is Verdict.UNSATISFIABLE, result
    assert len(searches) == 1


class Many(BaseModel):
    items: list[int] = Field(default_factory=list)


def test_a_refusal_on_list_elements_keeps_the_search(searches: list[Any]) -> None:
    """Elements past the modelled ones are havoc, so a refusal reading a list's
    elements keeps the search, for a short list and for one the binding models only in
    part (``exact`` False)."""

    def forward(self: object, input: Many) -> Triage:
        raise NotImplementedError

    forward.__annotations__ = {"input": Many, "return": Triage}
    cls = type("Plain", (), {"forward": forward, "__module__": __name__,
                             "post_conditions": [Post(lambda o, m: o.eta <= m.items[0] - 100,
                                                      "eta below the first item")]})
    checker = checker_of(cls)
    prepared_exact = []
    for length in (1, 40):
        result = checker.check(object(), Many(items=list(range(length))))
        assert result.verdict is Verdict.UNSATISFIABLE, result
        prepared = next(iter(checker._prepared.values()))
        assert prepared.extract is not None
        prepared_exact.append(prepared.extract(Many(items=list(range(length))))[1])
    assert prepared_exact == [True, False]
    assert len(searches) == 2


def _never_passes(t: Translation) -> Translation:
    """A planted translator bug: every failure case always holds (a tautology over the
    same constants, so the refusal stays a per-input one)."""
    if t.opaque is None:
        t.cases = [FailureCase(z3.Or(c.cond, z3.Not(c.cond)), c.label, c.kind)
                   for c in t.cases]
    return t


def test_a_planted_bug_on_a_loose_entry_is_still_refuted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The safety net stays for what is not exact: a translation using ``len`` (an
    over-approximation) corrupted to never pass is refuted by a sampled output."""
    real = preflight.translate

    def broken(*args: Any, **kwargs: Any) -> Translation:
        return _never_passes(real(*args, **kwargs))

    monkeypatch.setattr(preflight, "translate", broken)
    checker = checker_of(make(Post(lambda o, t: len(o.tags) <= t.sla, "tags within sla")))
    result = checker.check(object(), Ticket(text="q", sla=4))
    assert result.verdict is Verdict.UNKNOWN and "refuted" in result.reason


# -- the certificate's rules ------------------------------------------------------------------


def _translation(**changes: Any) -> Translation:
    source = describe(make(WITHIN_SLA), ContractConfig()).post[0]
    return Translation(source, "t", **changes)


def test_which_translations_are_exact() -> None:
    assert exact_translation(_translation())
    assert exact_translation(_translation(constructs=frozenset({"abs", "str.startswith"})))
    assert not exact_translation(_translation(constructs=frozenset({"abs", "len"})))
    assert not exact_translation(_translation(constructs=frozenset({"not.registered"})))
    assert not exact_translation(_translation(havoc=["float rounding"]))
    assert not exact_translation(_translation(assumptions=["a validator only rejects"]))
    assert not exact_translation(_translation(opaque="a call"))


def test_a_label_is_exact_only_when_every_owner_is() -> None:
    exact, loose = _translation(), _translation(havoc=["x"])
    t = z3.BoolVal(True)
    owned = [(Assertion("ge=1", t), DOMAIN), (Assertion('"p"', t, "pred"), 0),
             (Assertion('"shared"', t, "pred"), 0), (Assertion('"shared"', t, "pred"), 1),
             (Assertion("bound", t, "bound"), 1)]
    cert = Certificate.of(owned, True, [exact, loose])
    assert cert.certifies(["ge=1", '"p"'], input_exact=True)
    assert not cert.certifies(["ge=1", '"p"'], input_exact=False)
    assert not cert.certifies(['"shared"'], input_exact=True)
    assert cert.certifies([], input_exact=True)
    with_def = Certificate.of([*owned, (Assertion(None, t, "def"), 1)], True, [exact, loose])
    assert not with_def.certifies(["ge=1"], input_exact=True)  # always in the proof
    inexact_domain = Certificate.of(owned, False, [exact, loose])
    assert not inexact_domain.certifies(["ge=1"], input_exact=True)
    assert inexact_domain.certifies(['"p"'], input_exact=True)


# -- generated contracts against real Python ----------------------------------------------

MODELS = '''from typing import Literal
from pydantic import BaseModel, Field, ValidationError
from hoare import Post


class In(BaseModel):
    n: int
    s: str
    t: Literal["x", "ab", ""]
    f: float
    flag: bool


class Out(BaseModel):
    k: int = Field(ge=-3, le=3)
    c: Literal["a", "ab", "B", "", "ß"]
    flag: bool
'''

# Exact constructs (and some loose ones, which must keep the search) over the output
# and the input; every combination is a predicate Python can run on any value.
INTS = ["o.k", "i.n", "o.k + i.n", "o.k - i.n", "o.k * i.n", "o.k * 2", "-o.k", "abs(o.k)",
        "abs(i.n - o.k)", "i.n // 3", "o.k // 2", "i.n % 5", "o.k % 3", "int(o.flag)",
        "len(o.c)", "len(i.s)", "o.k + int(i.flag)", "(o.k if o.flag else -o.k)",
        "round(i.f)", "int(i.f)", "max(o.k, i.n)", "min(o.k, 0)", "0", "1", "3", "-2"]
STRS = ["o.c", "i.s", "i.t", "o.c + i.t", "i.s[:1]", "i.s[-1:]", "o.c.upper()",
        "i.s.lower()", "i.s.strip()", "o.c * 2", "'a'", "'ab'", "'B'", "''", "'SS'"]
BOOLS = ["o.flag", "i.flag", "not o.flag", "o.flag == i.flag", "o.c in i.s",
         "i.s.startswith(o.c)", "i.s.endswith(o.c)", "i.s.isupper()", "o.c.isupper()",
         "i.f > o.k", "o.k <= i.f", "i.f == o.k", "o.c == i.t", "i.t in o.c",
         "o.c.startswith(i.t)", "bool(o.c)", "isinstance(i.n, int)"]
COMPARE = ["<", "<=", "==", "!=", ">", ">="]


@st.composite
def atoms(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["int", "str", "bool"]))
    if kind == "bool":
        return draw(st.sampled_from(BOOLS))
    pool = INTS if kind == "int" else STRS
    op = draw(st.sampled_from(COMPARE if kind == "int" else ["==", "!="]))
    return f"{draw(st.sampled_from(pool))} {op} {draw(st.sampled_from(pool))}"


@st.composite
def bodies(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(atoms())
    left, right = draw(bodies(depth - 1)), draw(bodies(depth - 1))
    return draw(st.sampled_from([f"({left}) and ({right})", f"({left}) or ({right})",
                                 f"not ({left})"]))


class _Str(str):
    """A str subclass, as a caller may pass one (the binding must refuse it)."""


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    return {"n": draw(st.one_of(ints(), st.integers(-4, 4))),
            "s": draw(st.one_of(texts(4), st.sampled_from(["a", "ab", "B", "", "ß", "SS",
                                                           " ab ", "xab", "AB"]))),
            "t": draw(st.sampled_from(["x", "ab", ""])),
            "f": draw(st.one_of(floats(), st.sampled_from([-3.0, 0.5, 2.0, 3.0]))),
            "flag": draw(st.booleans()), "subclass": draw(st.booleans())}


def _outputs(module: Any) -> list[Any]:
    """Every output pydantic accepts, built from JSON as an engine's answer is."""
    out = []
    for k, c, flag in itertools.product(range(-3, 4), ["a", "ab", "B", "", "ß"],
                                        [False, True]):
        out.append(module.Out.model_validate_json(json.dumps({"k": k, "c": c,
                                                              "flag": flag})))
    return out


def _passes(fn: Any, output: Any, used: Any) -> bool:
    """The kernel's semantics: a raise or a falsy non-None result fails."""
    try:
        result = fn(output, used)
        return result is None or bool(result)
    except Exception:
        return False


class _Tally:
    """How often each path was taken, to show the properties are not vacuous."""

    counts: Counter[str] = Counter()


def _check_case(posts: list[str], raw_inputs: list[dict[str, Any]]) -> None:
    lines = [f"    Post(lambda o, i: {body}, {f'post {k}'!r})," for k, body in enumerate(posts)]
    source = MODELS + "\n\nPOSTS = [\n" + "\n".join(lines) + "\n]\n"
    module = load(source)
    try:
        def forward(self: object, input: Any) -> Any:
            raise NotImplementedError

        forward.__annotations__ = {"input": module.In, "return": module.Out}
        cls = type("Generated", (), {"forward": forward, "post_conditions": module.POSTS,
                                     "__module__": module.__name__})
        checker = checker_of(cls)
        outputs = _outputs(module)
        for raw in raw_inputs:
            values = {k: v for k, v in raw.items() if k != "subclass"}
            if raw["subclass"]:
                values["s"] = _Str(values["s"])
            try:
                used = module.In.model_validate(values)
            except ValidationError:  # not an input a caller can pass
                continue
            with patch.object(preflight, "find_passing", wraps=preflight.find_passing) as spy:
                result = checker.check(object(), used)
            _Tally.counts[result.verdict.value] += 1
            passing = [o for o in outputs
                       if all(_passes(p.fn, o, used) for p in module.POSTS)]
            if result.verdict is Verdict.UNSATISFIABLE:
                per_input = all(p.verdict is None for p in checker._prepared.values())
                certified = per_input and not spy.called
                _Tally.counts["certified" if certified else "searched"] += 1
                assert not passing, (f"a refusal hides a passing output: posts {posts}, "
                                     f"input {used!r}, output {passing[0]!r}, "
                                     f"certified {certified}: {result.reason}")
            elif result.verdict is Verdict.SATISFIABLE:
                assert passing, f"satisfiable with no passing output: {posts}, {used!r}"
    finally:
        unload(module)


@settings(max_examples=100)
@given(st.lists(bodies(), min_size=1, max_size=3), st.lists(inputs(), min_size=1,
                                                             max_size=4))
def test_no_refusal_hides_a_passing_output(posts: list[str],
                                           raw_inputs: list[dict[str, Any]]) -> None:
    _check_case(posts, raw_inputs)


def test_generated_refusals_are_certified_and_sound() -> None:
    """The fuzzer's random drawers over a fixed seed: the certified path is taken (the
    property above is not vacuous) and every refusal is checked against all outputs."""
    rng = random.Random(20261127)
    _Tally.counts.clear()
    strategy_free_atoms = [f"{a} {op} {b}" for a in INTS[:14] for b in INTS[:14]
                           for op in COMPARE] + BOOLS
    for _ in range(120):
        posts = [" and ".join(rng.sample(strategy_free_atoms, rng.choice([1, 2])))
                 for _ in range(rng.choice([1, 2]))]
        raw_inputs = [{"n": rng.choice([draw_int(rng), rng.randrange(-4, 5)]),
                       "s": rng.choice([draw_text(rng, 4), rng.choice(["a", "ab", "ß"])]),
                       "t": rng.choice(["x", "ab", ""]),
                       "f": rng.choice([draw_float(rng), float(rng.randrange(-4, 5))]),
                       "flag": rng.random() < 0.5, "subclass": rng.random() < 0.2}
                      for _ in range(4)]
        _check_case(posts, raw_inputs)
    assert _Tally.counts["certified"] >= 20, _Tally.counts
    assert _Tally.counts["satisfiable"] >= 20, _Tally.counts


# -- float rounding and qe ------------------------------------------------------------------


def _qe_tactics(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``qe`` tactics z3 is asked to build from now on (wherever eliminate runs)."""
    built: list[str] = []
    real = z3.Tactic

    def spy(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "qe":
            built.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(qe.z3, "Tactic", spy)
    return built


def test_a_formula_rounding_to_int_is_not_sent_to_qe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: ``qe`` ran on float rounding until its 1 s timeout (the pre-flight)."""
    built = _qe_tactics(monkeypatch)
    checker = checker_of(make(Post(lambda o, t: o.score + 0.25 <= t.ratio, "rounded")))
    assert checker.check(object(), Ticket(text="q", sla=1, ratio=0.5)).verdict is \
        Verdict.UNKNOWN  # float rounding is not modelled exactly
    assert built == []
    linear = checker_of(make(Post(lambda o, t: o.eta <= t.sla, "linear"),
                              Post(lambda o, t: o.score <= t.ratio, "no rounding")))
    assert linear.check(object(), Ticket(text="q", sla=5, ratio=0.5)).verdict is \
        Verdict.SATISFIABLE
    assert built == ["qe"]


def test_no_caller_sends_a_rounding_formula_to_qe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is in ``eliminate``, for every caller: ``hoare verify``'s ``post_total``
    ran ``qe`` on float rounding to its timeout (failed before), as the pre-flight did."""
    x, y, i = z3.Real("x"), z3.Real("y"), z3.Int("i")
    built = _qe_tactics(monkeypatch)
    for formula in (z3.And(x + 0.25 <= y, z3.ToReal(z3.ToInt(x)) == x),
                    z3.Or(z3.IsInt(x), x > y), z3.ToInt(x * 2) == i):
        assert qe.eliminate(formula, {"y", "i"}) is None
    assert built == []
    assert qe.eliminate(z3.And(x <= y, x >= 0), {"y"}) is not None
    assert built == ["qe"]
    from hoare.verifier.checks.contracts import check_contract
    from hoare.verifier.solve.solver import SolverOptions

    source = make(Post(lambda o, t: o.score + 0.25 <= t.ratio, "rounded"))
    built.clear()
    report = check_contract(describe(source, ContractConfig()), SolverOptions())
    assert "post_satisfiable" in {check.kind for check in report.checks}, report
    assert built == [], report


def test_rounds_to_int_finds_every_rounding() -> None:
    x, y = z3.Real("x"), z3.Int("y")
    assert not qe.rounds_to_int(z3.And(x + 1 <= 2 * x, y > 3))
    assert qe.rounds_to_int(z3.And(x <= 1, z3.ToReal(z3.ToInt(x)) == x))
    assert qe.rounds_to_int(z3.Or(y > 0, z3.IsInt(x)))
    deep = x
    for _ in range(5_000):  # no recursion limit on deep formulas
        deep = deep + 1
    assert qe.rounds_to_int(z3.ToInt(deep) > 0)


def test_a_solver_timeout_is_unknown_never_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever z3 gives up on (qe, the per-call query) answers ``unknown``."""
    monkeypatch.setattr(preflight, "eliminate", lambda *args, **kwargs: None)
    monkeypatch.setattr(preflight, "PER_CALL_OPTIONS",
                        preflight.SolverOptions(timeout_ms=1, rlimit=1))
    checker = checker_of(make(Post(lambda o, t: o.eta * o.eta == t.sla * 7 + 3, "square")))
    verdicts = {checker.check(object(), Ticket(text="q", sla=s)).verdict for s in range(6)}
    assert Verdict.UNSATISFIABLE not in verdicts and verdicts <= {Verdict.UNKNOWN,
                                                                  Verdict.SATISFIABLE}


# -- operators on objects of classes that may define them -----------------------------------

OBJECTS = '''from typing import Literal
from pydantic import BaseModel, Field
from hoare import Post


class Lenient(int):
    """An int whose comparisons always hold."""

    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True


class Adds:
    """A user class that adds to an int from the right."""

    def __radd__(self, other): return 100
    def __lt__(self, other): return True
    def __gt__(self, other): return True


class Meta(type):
    def __lt__(cls, other): return True
    def __gt__(cls, other): return True


class Ordered(metaclass=Meta):
    pass


LENIENT = Lenient(-100)
HUGE = 10 ** 5000
ADDS = Adds()


class In(BaseModel):
    n: int


class Out(BaseModel):
    k: int = Field(ge=-3, le=3)


POSTS = {
    "int subclass": Post(lambda o, i: i.n > 100 or LENIENT >= o.k, "lenient"),
    "int subclass, reflected": Post(lambda o, i: i.n > 100 or o.k < LENIENT, "lenient"),
    "huge int": Post(lambda o, i: i.n > 100 or o.k < HUGE, "huge"),
    "user class": Post(lambda o, i: i.n > 100 or o.k + ADDS == 100, "adds"),
    "user class, ordering": Post(lambda o, i: i.n > 100 or o.k < ADDS, "adds"),
    "metaclass": Post(lambda o, i: i.n > 100 or Ordered > o.k, "metaclass"),
}
'''


@pytest.mark.parametrize("name", ["int subclass", "int subclass, reflected", "huge int",
                                  "user class", "user class, ordering", "metaclass"])
def test_an_operator_on_an_object_that_may_define_it_is_not_a_type_error(name: str) -> None:
    """Failed before: an operand held as an object (not plain data) made the operator a
    certain ``TypeError``, so every output failed and the input was refused, though
    Python runs the object's own operator and every output passes."""
    module = load(OBJECTS)
    try:
        def forward(self: object, input: Any) -> Any:
            raise NotImplementedError

        forward.__annotations__ = {"input": module.In, "return": module.Out}
        post = module.POSTS[name]
        cls = type("Generated", (), {"forward": forward, "post_conditions": [post],
                                     "__module__": module.__name__})
        used = module.In(n=5)
        assert all(post.fn(module.Out(k=k), used) for k in range(-3, 4))
        result = checker_of(cls).check(object(), used)
        assert result.verdict is not Verdict.UNSATISFIABLE, result
    finally:
        unload(module)


def test_constants_the_certificate_accepts() -> None:
    import enum
    import math
    import re

    class Color(enum.Enum):
        RED = 1

    accepted = [1, "a", 2.5, None, (1, "a"), Color.RED, Color, math, len, math.isnan,
                re.compile("a"), Ticket]
    source = describe(make(WITHIN_SLA), ContractConfig()).post[0]
    for value in accepted:
        assert exact_translation(Translation(source, "t", reads=[(lambda v=value: v, value)]))
    for value in [_Str("a"), object(), {"a": 1}]:
        assert not exact_translation(Translation(source, "t", reads=[(lambda v=value: v, value)]))


# -- a value known by its truthiness still knows whether it is None --------------------------

NONE_RESULTS = '''from typing import Annotated, Optional
from pydantic import BaseModel, Field, StrictStr
from hoare import Post


class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    f0: Annotated[str, Field(min_length=2, max_length=5)] | None = None
    f2: Annotated[StrictStr, Field(max_length=5)]
    k: Optional[int] = None


POSTS = [
    [Post(lambda o: (o.f0 and o.f2.lstrip() == 'nan'), 'p0'),
     Post(lambda o: o.f2.rstrip() == '-0.0', 'p1')],
    [Post(lambda o, i: (o.f0 and o.f2 == 'x') if i.n > 0 else True, 'p0'),
     Post(lambda o: o.f2 == '-0.0', 'p1')],
    [Post(lambda o: o.k or o.f2 == 'zz', 'p0'), Post(lambda o: o.f2 == 'a', 'p1')],
]
'''


def test_a_returned_none_from_and_or_passes() -> None:
    """Failed before (the fuzzer, seed 32, case 136): ``o.f0 and <bool>`` with ``f0``
    None returns None, which passes, but the merged value was known only by its
    truthiness (falsy): a false class-level and per-input refusal."""
    module = load(NONE_RESULTS)
    try:
        def forward(self: object, input: Any) -> Any:
            raise NotImplementedError

        forward.__annotations__ = {"input": module.In, "return": module.Out}
        witnesses = [{"f2": "-0.0"}, {"f2": "-0.0"}, {"f2": "a", "k": 3}]
        for posts, witness in zip(module.POSTS, witnesses, strict=True):
            cls = type("Generated", (), {"forward": forward, "post_conditions": posts,
                                         "__module__": module.__name__})
            used = module.In(n=1)
            output = module.Out.model_validate_json(json.dumps(witness))
            assert all(_passes_any(p, output, used) for p in posts)
            result = checker_of(cls).check(object(), used)
            assert result.verdict is not Verdict.UNSATISFIABLE, (posts, result)
    finally:
        unload(module)


def _passes_any(post: Post, output: Any, used: Any) -> bool:
    """The kernel's semantics for a post-condition taking the input or not."""
    try:
        result = post.fn(output, used) if post.fn.__code__.co_argcount == 2 else \
            post.fn(output)
        return result is None or bool(result)
    except Exception:
        return False
