"""Post-conditions over finite-domain fields folded into an ``anyOf`` of branches
(issue 34, ``hoare.verifier.runtime.finite_folding``), held to ``jsonschema`` (the schema's
meaning), pydantic and the real predicates: for every output of the type's domain,
the folded schema accepts it exactly when the contract does. Generated contracts
(hypothesis: fields, domains, defaults, predicates) cover the class, not one example."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.contracts.runtime import runtime_of
from hoare.verifier.runtime.decoding import compile_contract


class Q(LLMDataModel):
    text: str


class Sentiment(LLMDataModel):
    sentiment: Literal["positive", "negative", "neutral"]
    stars: int = Field(ge=1, le=5)
    reason: str


@contract()
class Rate(Contract[Q, Sentiment]):
    prompt = "Rate the review."
    post_conditions = [Post(lambda r: (r.sentiment == "positive") == (r.stars >= 4),
                            "sentiment and stars agree")]

    def forward(self, q: Q) -> Sentiment:
        return self.contract_result


def accepts(schema: dict[str, Any], value: Any) -> bool:
    try:
        jsonschema.validate(value, schema)
        return True
    except jsonschema.ValidationError:
        return False


def contract_accepts(desc: Any, data: dict[str, Any]) -> bool:
    """pydantic from JSON, then every effective post-condition, as the runtime does."""
    try:
        value = desc.output.model.model_validate_json(json.dumps(data))
    except ValueError:
        return False
    for source in desc.post:
        try:
            verdict = source.fn(value)
        except Exception:
            return False
        if verdict is not None and not verdict:
            return False
    return True


def test_the_sentiment_contract_goes_out_as_branches_covering_exactly_the_accepted() -> None:
    desc = runtime_of(Rate).description
    for dialect in ("json_schema", "llama_cpp"):
        compiled = compile_contract(desc, dialect)
        assert "anyOf" in compiled.schema and "properties" not in compiled.schema
        assert compiled.enforced["post_conditions[0]"].startswith("proved by enumeration")
        assert not compiled.residual and not compiled.unknown
        for sentiment, stars, reason in itertools.product(
                ["positive", "negative", "neutral", "other", ""], range(-1, 8),
                ["", "fine", "é\U0010ffff"]):
            data = {"sentiment": sentiment, "stars": stars, "reason": reason}
            if not accepts(desc.output.schema, data):
                continue  # outside the type's domain: the type's schema decides
            assert accepts(compiled.schema, data) == contract_accepts(desc, data), \
                (dialect, data)


def test_hoare_schema_reports_the_equivalence_as_enforced_for_both_dialects() -> None:
    here = Path(__file__).resolve().parent  # tests/verifier: this module; tests/: its support
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([LIBRARY, str(here.parent)])}
    for dialect in ("json_schema", "llama_cpp"):
        done = subprocess.run([sys.executable, "-m", "hoare", "schema",
                               "test_decoding_finite:Rate", "--dialect", dialect, "--json"],
                              cwd=here, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert list(found["enforced_by_schema"]) == ["post_conditions[0]"]
        assert len(found["schema"]["anyOf"]) == 2
        assert any(f.startswith("anyOf of 2 branch(es) over sentiment, stars")
                   for f in found["folded"])
    shown = subprocess.run([sys.executable, "-m", "hoare", "schema",
                            "test_decoding_finite:Rate", "--dialect", "llama_cpp"],
                           cwd=here, capture_output=True, text=True, timeout=300, env=env)
    assert shown.returncode == 0, shown.stderr
    folded = shown.stdout.split("folded:")[1].split("enforced_by_schema:")[0]
    assert "anyOf of 2 branch(es)" in folded and "integer range sent as an enum" in folded


def test_openai_strict_gets_no_anyof_at_the_root_and_says_so() -> None:
    compiled = compile_contract(runtime_of(Rate).description, "openai_strict")
    assert compiled.schema["type"] == "object" and "anyOf" not in compiled.schema
    assert any("not sent to openai_strict" in d for d in compiled.dropped)
    assert "post_conditions[0]" not in compiled.enforced  # the enums alone cannot say it


# -- what is not folded, and why ------------------------------------------------------------

FREE_WORD = "ok"


class Mixed(LLMDataModel):
    level: Literal["low", "high"]
    flag: bool
    note: str
    count: int


def _posts_contract(output: type, *posts: Post) -> Any:
    def forward(self: Any, q: Q) -> Any:
        return self.contract_result

    forward.__annotations__ = {"q": Q, "return": output}

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(prompt="x", post_conditions=list(posts), forward=forward,
                         __module__=__name__)

    cls = types.new_class("C", (Contract[Q, output],), exec_body=body)  # type: ignore[valid-type]
    desc = runtime_of(contract()(cls)).description
    assert output in (desc.output.model, desc.output.annotation)  # really this output type
    return desc


def test_the_control_folds() -> None:
    """The contracts below differ from this one only in what keeps them from folding."""
    desc = _posts_contract(Mixed, Post(lambda m: (m.level == "high") == m.flag, "eq"))
    assert "anyOf" in compile_contract(desc, "json_schema").schema


@pytest.mark.parametrize("post, why", [
    (Post(lambda m: (m.level == "high") == (m.note == "x"), "reads note"),
     "not a finite-domain field"),
    (Post(lambda m: (m.level == "high") == (m.count > 3), "reads count"),
     "not a finite-domain field"),
])
def test_a_post_reading_an_unbounded_field_is_not_folded(post: Post, why: str) -> None:
    desc = _posts_contract(Mixed, post)
    compiled = compile_contract(desc, "json_schema")
    assert "anyOf" not in compiled.schema
    assert any(why in d for d in compiled.dropped)


def test_a_post_reading_a_global_an_input_or_the_whole_output_is_not_folded() -> None:
    for post in (Post(lambda m: (m.level == "high") == (FREE_WORD == "ok"), "global"),
                 Post(lambda m, q: (m.level == "high") == m.flag, "reads input"),
                 Post(lambda m: (m.level == "high") == bool(str(m)), "whole output")):
        compiled = compile_contract(_posts_contract(Mixed, post), "json_schema")
        assert "anyOf" not in compiled.schema, post


def test_policy_ignore_posts_are_never_folded() -> None:
    desc = _posts_contract(Mixed, Post(lambda m: (m.level == "high") == m.flag, "eq",
                                       policy="ignore"))
    assert "anyOf" not in compile_contract(desc, "json_schema").schema


def test_a_model_validator_blocks_the_fold() -> None:
    from pydantic import model_validator

    class Checked(LLMDataModel):
        level: Literal["low", "high"]
        flag: bool

        @model_validator(mode="after")
        def agree(self) -> Checked:
            return self

    desc = _posts_contract(Checked, Post(lambda m: (m.level == "high") == m.flag, "eq"))
    compiled = compile_contract(desc, "json_schema")
    assert "anyOf" not in compiled.schema
    assert any("model validator" in d for d in compiled.dropped)


class WithDefault(LLMDataModel):
    level: Literal["low", "high"] = "low"
    flag: bool


def test_leaving_out_a_defaulted_field_is_accepted_exactly_when_its_default_is() -> None:
    desc = _posts_contract(WithDefault, Post(lambda m: (m.level == "high") == m.flag, "eq"))
    for dialect in ("json_schema", "llama_cpp"):
        schema = compile_contract(desc, dialect).schema
        assert "anyOf" in schema
        for data in ({"flag": False}, {"flag": True}, {"level": "high", "flag": True},
                     {"level": "low", "flag": True}, {"level": "low", "flag": False}):
            assert accepts(schema, data) == contract_accepts(desc, data), (dialect, data)


# -- the class: generated contracts against jsonschema, pydantic and the predicates ----------

_FIELD_KINDS = st.sampled_from(["literal", "bool", "range", "enum"])
_WORDS = st.sampled_from(["a", "b", "yes", "no", "é", "\U0010ffff", "", "a b"])


@st.composite
def finite_field(draw: Any, name: str) -> tuple[str, str, list[Any]]:
    """(annotation source, default source or "", the JSON values of the domain)."""
    kind = draw(_FIELD_KINDS)
    if kind == "literal":
        words = draw(st.lists(_WORDS, min_size=1, max_size=3, unique=True))
        annotation, values = f"Literal[{', '.join(map(repr, words))}]", words
    elif kind == "bool":
        annotation, values = "bool", [False, True]
    elif kind == "range":
        low = draw(st.integers(-3, 3))
        high = low + draw(st.integers(0, 4))
        annotation, values = f"int = Field(ge={low}, le={high})", list(range(low, high + 1))
    else:
        words = draw(st.lists(st.sampled_from(["red", "green", "blue"]), min_size=1,
                              max_size=3, unique=True))
        annotation, values = f"Colour{name}", words
    default = draw(st.one_of(st.none(), st.sampled_from(values)))
    return annotation, "" if default is None else repr(default), values


@st.composite
def atom(draw: Any, fields: list[tuple[str, list[Any], str]]) -> str:
    name, values, kind = draw(st.sampled_from(fields))
    value = draw(st.sampled_from(values))
    read = f"o.{name}.value" if kind == "enum" else f"o.{name}"
    shape = draw(st.sampled_from(["eq", "ne", "cmp", "in", "truth"]))
    if shape == "cmp" and isinstance(value, int) and not isinstance(value, bool):
        return f"{read} {draw(st.sampled_from(['<', '<=', '>', '>=']))} {value}"
    if shape == "in":
        chosen = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
        return f"{read} in {tuple(chosen)!r}"
    if shape == "truth" and kind == "bool":
        return read
    return f"{read} {'==' if shape != 'ne' else '!='} {value!r}"


@st.composite
def expression(draw: Any, fields: list[tuple[str, list[Any], str]], depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(atom(fields))
    left = draw(expression(fields, depth - 1))
    right = draw(expression(fields, depth - 1))
    operator = draw(st.sampled_from(["and", "or", "==", "!="]))
    text = f"({left}) {operator} ({right})"
    return f"not ({text})" if draw(st.booleans()) else text


@st.composite
def generated(draw: Any) -> tuple[str, list[tuple[str, list[Any], bool]]]:
    """A module's source: an output with 1-3 finite fields and a free one, and a
    contract with 1-2 post-conditions over the finite fields."""
    count = draw(st.integers(1, 3))
    lines = ["import enum", "from typing import Literal",
             "from hoare import Contract, Field, LLMDataModel, Post, contract",
             "class Q(LLMDataModel):", "    text: str"]
    body, fields, domains = [], [], []
    for index in range(count):
        name = f"f{index}"
        annotation, default, values = draw(finite_field(name))
        kind = "enum" if annotation.startswith("Colour") else "plain"
        if kind == "enum":
            lines += [f"class Colour{name}(str, enum.Enum):"] + \
                [f"    {v.upper()} = {v!r}" for v in values]
        if default:
            if "= Field(" in annotation:
                annotation = annotation.replace("Field(", f"Field({default}, ")
            elif kind == "enum":
                annotation = f"{annotation} = Colour{name}({default})"
            else:
                annotation = f"{annotation} = {default}"
        body.append(f"    {name}: {annotation}")
        fields.append((name, values, "bool" if values == [False, True] else kind))
        domains.append((name, values, bool(default)))
    lines += ["class Out(LLMDataModel):", *body, "    note: str"]
    posts = draw(st.lists(expression(fields), min_size=1, max_size=2))
    lines += ["@contract()", "class C(Contract[Q, Out]):", "    prompt = 'x'",
              "    post_conditions = ["]
    lines += [f"        Post(lambda o: {p}, 'p{i}')," for i, p in enumerate(posts)]
    lines += ["    ]", "    def forward(self, q: Q) -> Out:",
              "        return self.contract_result"]
    return "\n".join(lines) + "\n", domains


_MODULES = tempfile.mkdtemp(prefix="hoare_finite_")
_counter = itertools.count()


def _load(source: str) -> Any:
    name = f"hoare_finite_{next(_counter)}"
    path = Path(_MODULES) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated())
def test_generated_folds_agree_with_pydantic_and_the_predicates(
        case: tuple[str, list[tuple[str, list[Any], bool]]]) -> None:
    """decoding-finite-exact: for generated contracts over finite-domain fields, every
    output of the type's domain is accepted by the folded schema exactly when pydantic
    and every post-condition accept it (never turned away; nothing wrong let through),
    in each dialect; and what the engine sends llama.cpp means what is proved."""
    source, domains = case
    desc = runtime_of(_load(source).C).description
    columns = []
    for _, values, defaulted in domains:  # the domain, one value outside, and omission
        extra = ["zzz"] if isinstance(values[0], str) else \
            [2] if isinstance(values[0], bool) else [max(values) + 1]
        columns.append([*values, *extra, *(["<omitted>"] if defaulted else [])])
    rows = []
    for combo in itertools.product(*columns):
        data: dict[str, Any] = {"note": "n"}
        for (name, _, _), value in zip(domains, combo, strict=True):
            if value != "<omitted>":
                data[name] = value
        rows.append(data)
    # what the engine sends llama.cpp (the json_schema compile, shaped for its grammar)
    # means what the llama_cpp compile proves things about
    from hoare.engines.capabilities import shaped

    sent = shaped(compile_contract(desc, "json_schema").schema, "llama_cpp")
    proved = compile_contract(desc, "llama_cpp").schema
    for data in rows:
        assert accepts(sent, data) == accepts(proved, data), (source, data, sent, proved)
    for dialect in ("json_schema", "llama_cpp", "openai_strict"):
        compiled = compile_contract(desc, dialect)
        folded_all = "anyOf" in compiled.schema or all(
            name in compiled.enforced for name in (s.id for s in desc.post))
        for data in rows:
            if not accepts(desc.output.schema, data):
                continue
            if dialect == "openai_strict" and set(data) != set(desc.output.schema[
                    "properties"]):
                continue  # the strict subset requires every key
            by_contract = contract_accepts(desc, data)
            by_schema = accepts(compiled.schema, data)
            if by_contract:  # never turns away an answer the contract accepts
                assert by_schema, (dialect, source, data, compiled.schema)
            if by_schema:  # and what it lets through passes what it enforces
                value = desc.output.model.model_validate_json(json.dumps(data))
                for post in desc.post:
                    if post.id in compiled.enforced:
                        assert post.fn(value) in (True, None) or bool(post.fn(value)), \
                            (dialect, source, data, post.id)
            if folded_all and dialect != "openai_strict":
                assert by_schema == by_contract, (dialect, source, data, compiled.schema)


def test_the_engine_sends_llama_cpp_the_branches_and_counts_a_breach_as_a_provider_fault(
        tmp_path: Path) -> None:
    """llama.cpp's dialect gets the anyOf (stars as enums in each branch); an answer
    breaking the equivalence, which that schema enforces, is the provider's fault."""
    from openai_server import OpenAIServer

    import hoare
    from hoare.stats.query import query

    good = '{"sentiment": "positive", "stars": 5, "reason": "great"}'
    breach = '{"sentiment": "positive", "stars": 1, "reason": "great"}'
    path = str(tmp_path / "calls.db")
    hoare.configure(stats=path, label="finite")
    try:
        with OpenAIServer([good, breach, good], dialect="llama_cpp") as server:
            rate = Rate(engine=server.engine())
            assert rate(Q(text="warm-up")).stars == 5
            assert rate(Q(text="x")).stars == 5
            bodies = server.bodies
        assert hoare.flush_stats()
    finally:
        hoare.configure(stats=None, label=None)
    sent = bodies[1]["response_format"]["schema"]
    assert [sorted(b["properties"]["stars"]["enum"]) for b in sent["anyOf"]] in (
        [[4, 5], [1, 2, 3]], [[1, 2, 3], [4, 5]])
    assert [r["provider_faults"] for r in query(path)] == [0, 1]


class Defaults(LLMDataModel):
    word: str = "a"
    n: int = 0
    tags: list[str] = Field(default_factory=list)


def test_a_folded_constraint_binds_an_omitted_key_through_its_default() -> None:
    """A constraint folded on an optional field says nothing about an answer leaving
    the key out (which gets the default): where the default breaks it, the key is
    required; a default_factory's value is not in the schema, so nothing is folded."""
    desc = _posts_contract(Defaults, Post(lambda d: d.word == "b", "word"),
                           Post(lambda d: d.n >= 1, "n"),
                           Post(lambda d: len(d.tags) >= 1, "tags"))
    for dialect in ("json_schema", "llama_cpp", "openai_strict"):
        compiled = compile_contract(desc, dialect)
        for data in ({}, {"word": "b"}, {"word": "b", "n": 2}, {"n": 2, "tags": ["x"]},
                     {"word": "b", "n": 2, "tags": ["x"]}, {"word": "b", "n": 2, "tags": []}):
            if dialect == "openai_strict" and len(data) < 3:
                continue
            value = Defaults.model_validate(data)
            if accepts(compiled.schema, data):
                for post in desc.post:
                    if post.id in compiled.enforced:
                        assert post.fn(value), (dialect, data, post.id)
            if contract_accepts(desc, data):
                assert accepts(compiled.schema, data), (dialect, data)
        assert any("default_factory" in d for d in compiled.dropped)


def test_one_shared_contract_under_threads_sends_the_branches_every_time() -> None:
    """A shared contract instance on one llama.cpp-like server, 8 threads (half async):
    the schema is compiled once and shaped once; every request after the step-down
    carries the same anyOf, every answer passes, and no thread crashes (a child
    process: a crash fails the test)."""
    import textwrap

    here = Path(__file__).resolve().parent  # the child imports this module
    script = textwrap.dedent('''
        import asyncio, json, sys, threading
        sys.path[:0] = sys.argv[1:]  # this test's folder, then tests/ (openai_server)
        from openai_server import OpenAIServer
        from test_decoding_finite import Q, Rate
        good = '{"sentiment": "negative", "stars": 2, "reason": "meh"}'
        errors = []
        with OpenAIServer(default=good, dialect="llama_cpp") as server:
            rate = Rate(engine=server.engine())
            assert rate(Q(text="warm-up")).stars == 2

            def work(index):
                try:
                    for i in range(6):
                        if index % 2:
                            out = asyncio.run(rate.acall(Q(text=f"{index}-{i}")))
                        else:
                            out = rate(Q(text=f"{index}-{i}"))
                        assert (out.sentiment, out.stars) == ("negative", 2), out
                except BaseException as error:
                    errors.append(repr(error))

            threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            bodies = server.bodies
        assert not errors, errors
        sent = [json.dumps(b["response_format"], sort_keys=True) for b in bodies[1:]]
        assert len(sent) == 1 + 8 * 6 and len(set(sent)) == 1, len(set(sent))
        assert "anyOf" in json.loads(sent[0])["schema"]
        print("ok")
    ''')
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "child.py"
        path.write_text(script, encoding="utf-8")
        done = subprocess.run([sys.executable, str(path), str(here), str(here.parent)],
                              capture_output=True, text=True, timeout=600, cwd=here,
                              env={**os.environ, "PYTHONPATH": LIBRARY,
                                   "PYTHONFAULTHANDLER": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", \
        (done.stdout + done.stderr)[-4000:]


def test_a_native_output_is_not_folded_through_its_wrapper() -> None:
    """``-> bool`` is sent as a one-field wrapper object, but the predicates see the
    bool itself: ``b.value`` fails on every answer at run time, so reading the
    wrapper's ``value`` field must not fold (it would claim an enum it does not have)."""
    from typing import cast

    desc = _posts_contract(cast(type, bool), Post(lambda b: b.value is True, "value"))
    assert desc.output.wrapped
    compiled = compile_contract(desc, "json_schema")
    assert "anyOf" not in compiled.schema and not compiled.finite
    assert "enum" not in json.dumps(compiled.schema)


def test_a_decoder_enforcing_anyof_and_enum_turns_a_breach_into_an_accepted_answer() -> None:
    """Against the loopback server as a llama.cpp-like decoder (enum and anyOf enforced,
    bounds ignored), a model wanting to say "positive, 1 star": with the branches
    (decoding="schema") the decoder makes it consistent at the first attempt; with
    the type's schema alone (decoding="types") it cannot, and every try fails."""
    from openai_server import OpenAIServer

    breach = '{"sentiment": "positive", "stars": 1, "reason": "great"}'
    decoder = {"llama_cpp": {"type": "enforce", "enum": "enforce", "anyOf": "enforce"}}

    @contract(decoding="types", remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class TypesOnly(Contract[Q, Sentiment]):
        prompt = "Rate the review."
        post_conditions = Rate.post_conditions  # type: ignore[attr-defined]

        def forward(self, q: Q) -> Sentiment:
            return self.contract_result

    with OpenAIServer(default=breach, dialect="llama_cpp", enforcement=decoder) as server:
        rate = Rate(engine=server.engine())
        out = rate(Q(text="x"))
        assert (out.sentiment == "positive") == (out.stars >= 4)
        assert rate.contract_outcome.success and len(rate.contract_outcome.attempts) >= 1
        typed = TypesOnly(engine=server.engine())
        try:
            typed(Q(text="x"))
        except Exception:  # the fallback has no result to give: the contract is not met
            pass
        outcome = typed.contract_outcome
        assert not outcome.success
        failed = [v.predicate for a in outcome.attempts for v in a.violations]
        assert failed.count("post_conditions[0]") == 3, failed  # each of the 3 tries
