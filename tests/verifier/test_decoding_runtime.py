"""``@contract(decoding=...)`` on the wire, against the loopback OpenAI-compatible server
imitating llama.cpp's (HTTP 500 naming ``response_format.type`` for ``json_schema``,
``{"type": "json_object", "schema": ...}`` accepted): the compiled schema is sent,
the engine steps down to llama.cpp's dialect once and remembers it per server, and
``"types"``/``"none"`` send the type's schema or none."""

from __future__ import annotations

import json

from library_under_test import LIBRARY
from openai_server import OpenAIServer

from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.engines import FunctionEngine, Request


class Q(LLMDataModel):
    text: str


class Tag(LLMDataModel):
    label: str
    score: int = Field(ge=0, le=100)
    title: str


POSTS = [Post(lambda t: t.label in ("bug", "question"), "label"),
         Post(lambda t: t.score <= 10, "score"),
         Post(lambda t: t.title.startswith("T:") and len(t.title) <= 20, "title")]


@contract(decoding="schema")
class Folded(Contract[Q, Tag]):
    prompt = "Tag it."
    post_conditions = POSTS

    def forward(self, q: Q) -> Tag:
        return self.contract_result


@contract(decoding="types")
class Typed(Contract[Q, Tag]):
    prompt = "Tag it."
    post_conditions = POSTS

    def forward(self, q: Q) -> Tag:
        return self.contract_result


@contract()  # decoding="schema", the default
class Default(Contract[Q, Tag]):
    prompt = "Tag it."
    post_conditions = POSTS

    def forward(self, q: Q) -> Tag:
        return self.contract_result


@contract(decoding="none")
class Bare(Contract[Q, Tag]):
    prompt = "Tag it."
    post_conditions = POSTS

    def forward(self, q: Q) -> Tag:
        return self.contract_result


GOOD = '{"label": "bug", "score": 3, "title": "T: crash"}'


def test_the_compiled_schema_reaches_llama_cpp_in_its_dialect() -> None:
    with OpenAIServer([GOOD, GOOD], dialect="llama_cpp") as server:
        assert Folded(engine=server.engine())(Q(text="x")).label == "bug"
        assert Folded(engine=server.engine())(Q(text="y")).label == "bug"  # a new engine
        bodies = server.bodies
    assert [b["response_format"]["type"] for b in bodies] == [
        "json_schema", "json_object", "json_object"]  # the step is remembered per server
    sent = bodies[0]["response_format"]["json_schema"]["schema"]["properties"]
    assert sent["label"]["enum"] == ["bug", "question"]
    assert (sent["score"]["minimum"], sent["score"]["maximum"]) == (0, 10)
    assert sent["title"]["maxLength"] == 20 and sent["title"]["pattern"] == r"^T:[\s\S]*$"
    llama = bodies[1]["response_format"]["schema"]["properties"]
    assert llama["label"]["enum"] == ["bug", "question"] and llama["title"]["maxLength"] == 20
    assert "pattern" not in llama["title"]  # never sent to llama.cpp


def test_types_and_none() -> None:
    with OpenAIServer([GOOD, GOOD]) as server:
        Typed(engine=server.engine())(Q(text="x"))
        Bare(engine=server.engine())(Q(text="x"))
        typed, bare = server.bodies
    schema = typed["response_format"]["json_schema"]["schema"]
    assert schema == Tag.model_json_schema()  # the type's, nothing folded
    assert "response_format" not in bare


def test_the_default_folds_the_post_conditions_and_a_contract_with_none_uses_no_z3() -> None:
    from hoare.verifier.runtime.decoding import has_candidates

    with OpenAIServer([GOOD, GOOD]) as server:
        Default(engine=server.engine())(Q(text="x"))
        Folded(engine=server.engine())(Q(text="x"))
        default, folded = server.bodies
    assert default["response_format"] == folded["response_format"]
    assert default["response_format"]["json_schema"]["schema"] != Tag.model_json_schema()
    assert has_candidates(Default.__hoare__)  # type: ignore[attr-defined]

    @contract()
    class Opaque(Contract[Q, Tag]):  # no post-condition reads as a schema constraint
        prompt = "Tag it."
        post_conditions = [Post(lambda t: t.title.lower() != t.label, "distinct")]

        def forward(self, q: Q) -> Tag:
            return self.contract_result

    assert not has_candidates(Opaque.__hoare__)  # type: ignore[attr-defined]
    with OpenAIServer([GOOD]) as server:
        Opaque(engine=server.engine())(Q(text="x"))
        (body,) = server.bodies
    assert body["response_format"]["json_schema"]["schema"] == Tag.model_json_schema()


def test_the_request_carries_the_compiled_schema_to_any_engine() -> None:
    seen: list[Request] = []

    def answer(request: Request) -> str:
        seen.append(request)
        return GOOD

    Folded(engine=FunctionEngine(answer))(Q(text="x"))
    assert seen[0].schema is not None
    assert seen[0].schema["properties"]["label"]["enum"] == ["bug", "question"]


def test_an_unknown_decoding_is_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="decoding must be 'schema'"):
        contract(decoding="grammar")  # type: ignore[call-overload]


def test_hoare_schema_prints_the_schema_and_the_proofs() -> None:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent  # tests/verifier: this module; tests/: its support
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([LIBRARY, str(here.parent)])}
    done = subprocess.run([sys.executable, "-m", "hoare", "schema",
                           "test_decoding_runtime:Folded", "--dialect", "llama_cpp", "--json"],
                          cwd=here, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["enforced_by_schema"]["post_conditions[0]"] == \
        "proved: the schema and the types imply it"
    # the score's range (0..10) goes out as an enum, which llama.cpp's grammar enforces
    assert found["enforced_by_schema"]["post_conditions[1]"].startswith("proved")
    assert set(found["residual"]) == {"post_conditions[2]"}
    assert "pattern" not in json.dumps(found["schema"])
    bad = subprocess.run([sys.executable, "-m", "hoare", "schema", "test_decoding_runtime:Q"],
                         cwd=here, capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 2 and "is not a hoare contract" in bad.stderr


def test_a_schema_enforced_check_that_fails_is_a_provider_fault(tmp_path: object,
                                                                caplog: object) -> None:
    """provider-fault-counted: llama.cpp's grammar enforces the label's enum
    (``hoare schema --dialect llama_cpp``): an answer outside it is the provider's
    fault, counted in the stats store and said in ``hoare stats``; a residual check
    failing is not."""
    import logging
    import os
    import subprocess
    import sys
    from pathlib import Path

    import hoare
    from hoare.stats.query import query

    path = str(Path(str(tmp_path)) / "calls.db")
    out_of_enum = '{"label": "feature", "score": 3, "title": "T: x"}'
    # residual on llama.cpp (its grammar gets no pattern): not the provider's fault
    too_high = '{"label": "bug", "score": 3, "title": "no T: prefix"}'
    caplog.set_level(logging.WARNING, logger="hoare")  # type: ignore[attr-defined]
    hoare.configure(stats=path, label="llama")
    try:
        with OpenAIServer([GOOD, out_of_enum, GOOD, too_high, GOOD],
                          dialect="llama_cpp") as server:
            folded = Folded(engine=server.engine())
            folded(Q(text="warm-up"))  # steps down to llama.cpp's dialect
            assert folded(Q(text="x")).label == "bug"
            assert folded(Q(text="y")).label == "bug"
        assert hoare.flush_stats()
    finally:
        hoare.configure(stats=None, label=None)
    assert [r["provider_faults"] for r in query(path)] == [0, 1, 0]
    assert "a provider fault" in caplog.text  # type: ignore[attr-defined]
    shown = subprocess.run([sys.executable, "-m", "hoare", "stats", "--db", path, "--json"],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert json.loads(shown.stdout)["contracts"][0]["provider_faults"] == 1
