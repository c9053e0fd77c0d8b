"""Example selection by embeddings (issue 32, item 6): ``closest`` and ``diverse``
(maximal marginal relevance) with a deterministic fake embedder and with the loopback
server's ``/v1/embeddings`` through ``OpenAIEngine``; every vector checked."""

from __future__ import annotations

import hashlib
import math
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, Reply, embeddings_reply

from hoare.engines import OpenAIEngine
from hoare.engines.base import Response, Usage
from hoare.engines.testing import DummyEngine
from hoare.queries import Example, Query, few_shot, load_demonstrations
from hoare.queries.embeddings import (
    EmbeddingError,
    checked_vectors,
    closest,
    diverse,
    openai_embedder,
)

TOPICS = ("cat", "dog", "car", "bus")


def fake_embed(texts: list[str]) -> list[list[float]]:
    """Deterministic: one axis per topic word the text contains, plus a small hash part
    (so different texts never share a vector)."""
    vectors = []
    for text in texts:
        digest = hashlib.sha256(text.encode()).digest()
        vectors.append([float(text.count(t)) for t in TOPICS]
                       + [digest[0] / 2550.0])
    return vectors


@dataclass
class Describe(Query[str]):
    """Describe."""

    subject: str


def _examples(*subjects: str) -> list[Example]:
    return load_demonstrations([{"query": "Describe", "args": {"subject": s},
                                 "answer_text": f"about {s}"} for s in subjects])


def test_closest_picks_the_nearest_examples_in_order() -> None:
    examples = _examples("car car", "cat cat", "dog", "cat")
    chosen = closest(2, fake_embed)(Describe("cat"), examples)
    assert [e.args["subject"] for e in chosen] == ["cat", "cat cat"]


def test_diverse_trades_relevance_for_novelty() -> None:
    examples = _examples("cat", "cat cat", "cat dog", "bus")
    near = closest(2, fake_embed)(Describe("cat"), examples)
    mmr = diverse(2, fake_embed, relevance=0.3)(Describe("cat"), examples)
    assert [e.args["subject"] for e in near] == ["cat", "cat cat"]
    assert mmr[0].args["subject"] == "cat"
    assert mmr[1].args["subject"] != "cat cat"  # a duplicate direction is penalised
    assert diverse(4, fake_embed, relevance=1.0)(Describe("cat"), examples) == \
        closest(4, fake_embed)(Describe("cat"), examples)


def test_selectors_in_few_shot_and_each_text_embedded_once() -> None:
    seen: list[str] = []

    def counting(texts: list[str]) -> list[list[float]]:
        seen.extend(texts)
        return fake_embed(texts)

    examples = _examples("dog", "cat", "bus")
    engine = DummyEngine(Response(texts=("ok",), usage=Usage(1, 1, 1)))
    selector = closest(1, counting)
    for _ in range(3):
        list(few_shot(Describe("cat"), engine, examples=examples,
                      select_examples=[selector], max_requests=1))
    contents = [m.content for m in engine.requests[0].messages]
    assert "about cat" in contents and "about dog" not in contents
    assert len(seen) == len(set(seen)) == 3  # 3 examples (the query reads as "cat"), once each


@pytest.mark.parametrize("vectors,what", [
    ("abc", "list of vectors"),
    (None, "list of vectors"),
    ([[1.0]], "1 vector"),
    ([[1.0], [1.0, 2.0]], "one length"),
    ([[1.0], []], "0 numbers"),
    ([[1.0], [float("nan")]], "not a finite number"),
    ([[1.0], [float("inf")]], "not a finite number"),
    ([[1.0], [True]], "bool"),
    ([[1.0], ["1"]], "str"),
    ([[1.0], "ab"], "not a list of numbers"),
    ([[1.0], [None]], "NoneType"),
])
def test_bad_vectors_are_named(vectors: Any, what: str) -> None:
    with pytest.raises(EmbeddingError, match=what):
        closest(1, lambda texts: vectors)(Describe("cat"), _examples("dog"))


class Hostile(float):
    def __float__(self) -> float:
        raise RuntimeError("no")


def test_foreign_numbers_that_raise_are_embedding_errors() -> None:
    with pytest.raises(EmbeddingError, match="cannot be read"):
        checked_vectors([[Hostile(1.0)]], ["t"])


def test_mismatched_lengths_across_calls_are_refused() -> None:
    sizes = iter([3, 4])

    def shifting(texts: list[str]) -> list[list[float]]:
        size = next(sizes)
        return [[1.0] * size for _ in texts]

    selector = closest(1, shifting)
    selector(Describe("a"), _examples("b"))
    with pytest.raises(EmbeddingError, match="earlier ones"):
        selector(Describe("c"), _examples("d"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64),
                         min_size=1, max_size=4), min_size=2, max_size=5),
       st.integers(1, 5))
def test_any_vectors_give_a_selection_or_a_named_error(vectors: list[list[float]],
                                                       k: int) -> None:
    examples = _examples(*(f"s{i}" for i in range(len(vectors) - 1)))
    ok = len({len(v) for v in vectors}) == 1 and all(math.isfinite(x)
                                                     for v in vectors for x in v)
    for select in (closest(k, lambda texts: vectors), diverse(k, lambda texts: vectors)):
        if not ok:
            with pytest.raises(EmbeddingError):
                select(Describe("q"), examples)
            continue
        chosen = select(Describe("q"), examples)
        assert len(chosen) == min(k, len(examples))
        assert len({id(e) for e in chosen}) == len(chosen)
        assert all(e in examples for e in chosen)


def test_k_and_relevance_are_checked() -> None:
    with pytest.raises(ValueError, match="k must be"):
        closest(-1, fake_embed)
    with pytest.raises(ValueError, match="relevance"):
        diverse(1, fake_embed, relevance=float("nan"))
    with pytest.raises(TypeError, match="callable"):
        closest(1, "not callable")  # type: ignore[arg-type]


def test_openai_embeddings_endpoint() -> None:
    def answer(body: dict[str, Any]) -> Reply:
        return embeddings_reply(*fake_embed(body["input"]))

    with OpenAIServer(default=answer) as server:
        engine = OpenAIEngine("text-embedding-3-small", base_url=server.url, api_key="k")
        embed = openai_embedder(engine)
        chosen = closest(1, embed)(Describe("dog"), _examples("cat", "dog dog", "bus"))
        (received,) = server.received
    assert received.path.rstrip("/") == "/v1/embeddings"
    assert received.body["model"] == "text-embedding-3-small"
    assert chosen[0].args["subject"] == "dog dog"


@pytest.mark.parametrize("reply,what", [
    (Reply(200, {"data": "x"}), "'data' list"),
    (Reply(200, {"data": [{"index": 5, "embedding": [1.0]}]}), "index"),
    (Reply(200, {"data": [{"index": 0, "embedding": [1.0]},
                          {"index": 0, "embedding": [1.0]}]}), "index"),
    (Reply(200, {"data": [{"index": 0, "embedding": ["x"]}]}), "str"),
    (Reply(200, "not json"), "JSON"),
    (Reply(500, {"error": {"message": "down"}}), "HTTP 500"),
])
def test_openai_embeddings_answers_are_checked(reply: Reply, what: str) -> None:
    with OpenAIServer(default=reply) as server:
        engine = OpenAIEngine("e", base_url=server.url, api_key="k")
        with pytest.raises(EmbeddingError, match=what):
            openai_embedder(engine)(["a"])


def test_one_selector_shared_by_many_threads() -> None:
    """In a child process, so a crash fails the test."""
    code = textwrap.dedent('''
        import threading
        from dataclasses import dataclass
        from hoare.queries import Query, load_demonstrations
        from hoare.queries.embeddings import closest, diverse

        @dataclass
        class Describe(Query[str]):
            """Describe."""
            subject: str

        def embed(texts):
            return [[float(len(t)), float(t.count("a")) + 1.0] for t in texts]

        examples = load_demonstrations([{"query": "Describe", "args": {"subject": "a" * i},
                                         "answer_text": "x"} for i in range(30)])
        selectors = [closest(3, embed), diverse(3, embed)]
        results, errors = [], []
        def work(i):
            try:
                for s in selectors:
                    results.append([e.args["subject"] for e in
                                    s(Describe("a" * (i % 7)), examples)])
            except BaseException as error:
                errors.append(error)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert not errors, errors
        assert len(results) == 32 and all(len(r) == 3 for r in results)
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_numpy_arrays_are_read() -> None:
    np = pytest.importorskip("numpy")
    assert checked_vectors(np.array([[1.0, 2.0]]), ["t"]) == [(1.0, 2.0)]
    with pytest.raises(EmbeddingError, match="finite"):
        checked_vectors(np.array([[1.0, np.nan]]), ["t"])


def test_the_embeddings_extra_is_declared() -> None:
    import tomllib
    from pathlib import Path

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    extras = data["project"]["optional-dependencies"]
    assert extras["embeddings"] == extras["queries"]
