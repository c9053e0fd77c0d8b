"""Example selection by embeddings: the closest examples, or a diverse set of close ones
(maximal marginal relevance), next to the word-overlap ``most_similar``.

An *embedder* is any ``embed(texts) -> vectors`` callable (one vector of finite floats
per text, all of one length), or ``openai_embedder(engine)`` for an OpenAI-compatible
``/embeddings`` endpoint through an ``OpenAIEngine``. Every vector is checked before use:
an embedder that returns the wrong count, ragged or empty vectors, NaN/inf, booleans or
objects that are not numbers is an ``EmbeddingError`` naming the text and the position.
A query (and an example) is embedded as the YAML of its fields, as the instance prompt
shows them by default. Example vectors are computed once per selector and text (a
lock-guarded cache: one selector serves many threads).

Ships as the ``embeddings`` extra, which needs nothing beyond ``hoare[queries]``: the
vectors come from the user's callable or from the ``openai`` client hoare already
uses; the arithmetic is plain Python.
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
import threading
from collections.abc import Callable, Sequence
from typing import Any

from hoare.errors import HoareError
from hoare.forking import hold_across_fork
from hoare.queries.demonstrations import Example, Selector
from hoare.queries.templates import fields_of

__all__ = ["Embedder", "EmbeddingError", "checked_vectors", "closest", "diverse",
           "openai_embedder"]

Embedder = Callable[[list[str]], Any]
MAX_DIMENSIONS = 1 << 16


class EmbeddingError(HoareError, ValueError):
    """An embedder's answer (or an embeddings endpoint's) is not one vector of finite
    numbers per text, all of one length; the message says what and where."""


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise EmbeddingError(f"{where} is a {type(value).__name__}, not a number")
    try:
        number = float(value)
    except Exception as error:  # a foreign number may raise from any dunder
        raise EmbeddingError(f"{where} cannot be read as a float: "
                             f"{type(error).__name__}") from None
    if not math.isfinite(number):
        raise EmbeddingError(f"{where} is {number!r}, not a finite number")
    return number


def _listed(value: object, where: str) -> object:
    """``value.tolist()`` for an array that is not a ``Sequence`` (numpy), else ``value``."""
    if isinstance(value, Sequence):
        return value
    tolist = getattr(value, "tolist", None)
    if not callable(tolist):
        return value
    try:
        return tolist()
    except Exception as error:
        raise EmbeddingError(f"{where}: tolist() failed: {type(error).__name__}") from None


def checked_vectors(vectors: object, texts: Sequence[str], source: str = "the embedder"
                    ) -> list[tuple[float, ...]]:
    """``vectors`` as tuples of floats, one per text, all of one length, every number
    finite; anything else is an ``EmbeddingError`` naming it. An array with ``tolist``
    (numpy's) is read as its list."""
    vectors = _listed(vectors, source)
    if isinstance(vectors, str | bytes) or not isinstance(vectors, Sequence):
        raise EmbeddingError(f"{source} must return a list of vectors, got "
                             f"{type(vectors).__name__}")
    try:
        count = len(vectors)
    except Exception as error:
        raise EmbeddingError(f"{source}'s answer has no length: "
                             f"{type(error).__name__}") from None
    if count != len(texts):
        raise EmbeddingError(f"{source} returned {count} vector(s) for {len(texts)} "
                             f"text(s): one vector per text is needed")
    checked: list[tuple[float, ...]] = []
    for index in range(count):
        where = f"{source}'s vector {index} (for text {json.dumps(texts[index][:60])})"
        vector = _listed(vectors[index], where)
        if isinstance(vector, str | bytes) or not isinstance(vector, Sequence):
            raise EmbeddingError(f"{where} is a {type(vector).__name__}, not a list of "
                                 f"numbers")
        size = len(vector)
        if not 1 <= size <= MAX_DIMENSIONS:
            raise EmbeddingError(f"{where} has {size} numbers: expected 1 to "
                                 f"{MAX_DIMENSIONS}")
        if checked and size != len(checked[0]):
            raise EmbeddingError(f"{where} has {size} numbers, vector 0 has "
                                 f"{len(checked[0])}: all vectors must have one length")
        checked.append(tuple(_number(vector[i], f"{where}[{i}]") for i in range(size)))
    return checked


def _unit(vector: tuple[float, ...]) -> tuple[float, ...]:
    """``vector`` scaled to length 1 (a zero vector stays zero: similar to nothing).
    Scaled by the largest magnitude first, so squares of huge or tiny floats neither
    overflow nor vanish."""
    largest = max(abs(x) for x in vector)
    if largest == 0.0:
        return vector
    scaled = [x / largest for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in scaled))
    return tuple(x / norm for x in scaled)


def _cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def _text(fields: object) -> str:
    from hoare.queries.templates import yaml_text

    try:
        return yaml_text(fields)
    except ImportError:
        return json.dumps(fields, sort_keys=True, default=str)


class _Vectors:
    """Unit vectors of texts by one embedder, each text embedded once (thread-safe)."""

    def __init__(self, embed: Embedder) -> None:
        if not callable(embed):
            raise TypeError(f"an embedder must be callable (texts -> vectors), got "
                            f"{type(embed).__name__}")
        self.embed = embed
        self.known: dict[str, tuple[float, ...]] = {}
        self.lock = threading.Lock()
        hold_across_fork(self, self.lock)  # free in a forked child

    def of(self, texts: list[str]) -> list[tuple[float, ...]]:
        with self.lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        if missing:
            answer = self.embed(list(missing))
            if inspect.isawaitable(answer):  # an async embedder: nothing here awaits it
                close = getattr(answer, "close", None)
                if callable(close):
                    close()
                raise TypeError("the embedder is async; selectors call it synchronously: "
                                "pass a plain function (texts -> vectors)")
            found = checked_vectors(answer, missing)
            with self.lock:
                sizes = {len(v) for v in self.known.values()}
                if sizes and len(found[0]) not in sizes:
                    raise EmbeddingError(f"the embedder returned vectors of "
                                         f"{len(found[0])} numbers, earlier ones had "
                                         f"{sizes.pop()}")
                for text, vector in zip(missing, found, strict=True):
                    self.known.setdefault(text, _unit(vector))
        with self.lock:
            return [self.known[t] for t in texts]


def _scored(vectors: _Vectors, query: object, examples: list[Example]
            ) -> tuple[list[float], list[tuple[float, ...]]]:
    texts = [_text(fields_of(query)), *(_text(e.args) for e in examples)]
    found = vectors.of(texts)
    mine, theirs = found[0], found[1:]
    return [_cosine(mine, v) for v in theirs], theirs


def _check_k(k: object, name: str) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"{name}({k!r}): k must be a whole number >= 0")
    return k


def closest(k: int, embed: Embedder) -> Selector:
    """The ``k`` examples whose fields' embedding is closest (cosine) to the query's;
    ties keep file order."""
    _check_k(k, "closest")
    vectors = _Vectors(embed)

    def select(query: object, examples: list[Example]) -> list[Example]:
        if not examples or k == 0:
            return []
        scores, _ = _scored(vectors, query, examples)
        ranked = sorted(range(len(examples)), key=lambda i: (-scores[i], i))
        return [examples[i] for i in ranked[:k]]
    return select


def diverse(k: int, embed: Embedder, *, relevance: float = 0.5) -> Selector:
    """Maximal marginal relevance: ``k`` examples chosen one at a time, each maximising
    ``relevance * sim(query, e) - (1 - relevance) * max sim(e, chosen)`` (close to the
    query, unlike those already chosen); ties keep file order."""
    _check_k(k, "diverse")
    if isinstance(relevance, bool) or not isinstance(relevance, int | float) \
            or not 0.0 <= relevance <= 1.0:
        raise ValueError(f"diverse(relevance={relevance!r}): expected a number in 0..1")
    vectors = _Vectors(embed)

    def select(query: object, examples: list[Example]) -> list[Example]:
        if not examples or k == 0:
            return []
        scores, found = _scored(vectors, query, examples)
        chosen: list[int] = []
        left = list(range(len(examples)))
        while left and len(chosen) < k:
            def gain(i: int) -> tuple[float, int]:
                overlap = max((_cosine(found[i], found[j]) for j in chosen), default=0.0)
                return (-(relevance * scores[i] - (1 - relevance) * overlap), i)
            best = min(left, key=gain)
            chosen.append(best)
            left.remove(best)
        return [examples[i] for i in chosen]
    return select


def openai_embedder(engine: Any, model: str | None = None, *,
                    timeout: float = 60.0) -> Embedder:
    """An embedder calling the ``/embeddings`` endpoint of an ``OpenAIEngine``'s server
    (``model``: the engine's by default). The server's JSON is read and checked here:
    a missing ``data``, an ``index`` out of place, a vector that is not finite numbers
    is an ``EmbeddingError``; an HTTP failure is one too, naming the status."""
    from hoare.engines.base import innermost
    from hoare.engines.openai_engine import OpenAIEngine

    inner = getattr(engine, "inner", engine)
    inner = innermost(inner) if not isinstance(inner, OpenAIEngine) else inner
    if not isinstance(inner, OpenAIEngine):
        raise TypeError(f"openai_embedder needs an OpenAIEngine (or a standard_model), got "
                        f"{type(engine).__name__}")
    name = model or inner.model

    def embed(texts: list[str]) -> list[tuple[float, ...]]:
        import openai

        source = f"the embeddings endpoint at {inner.base_url}"
        try:
            raw = inner.client.embeddings.with_raw_response.create(
                model=name, input=texts, encoding_format="float", timeout=timeout)
            body = json.loads(raw.http_response.content)
        except openai.APIStatusError as error:
            raise EmbeddingError(f"{source} answered HTTP {error.status_code}") from None
        except openai.APIError as error:
            raise EmbeddingError(f"{source} failed: {type(error).__name__}") from None
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
            raise EmbeddingError(f"{source} did not answer JSON") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{source} answered without a 'data' list")
        vectors: list[object] = [None] * len(data)
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) \
                    or not 0 <= index < len(data) or vectors[index] is not None:
                raise EmbeddingError(f"{source}: data[{position}] has no valid 'index' "
                                     f"(expected each of 0..{len(data) - 1} once)")
            vectors[index] = item.get("embedding")
        return checked_vectors(vectors, texts, source)
    return embed
