"""Log-probabilities, n completions and cached input tokens through the real ``openai``
client and the loopback server (what ``hoare.queries.classify`` and ``few_shot`` read)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from openai_server import OpenAIServer, completion

from hoare.engines import CachedEngine, Options
from hoare.engines.base import Message, Request, TokenLogprob, Usage


def _request(**options: object) -> Request:
    return Request(messages=(Message("user", "Sentiment?"),), options=Options(**options))  # type: ignore[arg-type]


LOGPROBS = [[("pos", math.log(0.7), [("pos", math.log(0.7)), ("neg", math.log(0.2))]),
             ("itive", -0.01, [])]]


def test_logprobs_are_asked_for_and_parsed_sync_and_async() -> None:
    with OpenAIServer([completion("positive", logprobs=LOGPROBS),
                       completion("positive", logprobs=LOGPROBS)]) as server:
        engine = server.engine()
        response = engine.complete(_request(logprobs=True, top_logprobs=5))
        assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 5
        (tokens,) = response.logprobs
        assert tokens is not None and tokens[0] == TokenLogprob(
            "pos", math.log(0.7), (("pos", math.log(0.7)), ("neg", math.log(0.2))))
        assert tokens[1].token == "itive" and tokens[1].top == ()
        again = asyncio.run(engine.acomplete(_request(logprobs=True)))
        assert again.logprobs == response.logprobs
        assert "top_logprobs" not in server.bodies[1]


def test_not_asked_means_not_sent_and_none_given_means_none() -> None:
    with OpenAIServer(["plain", completion("x")]) as server:
        engine = server.engine()
        response = engine.complete(_request())
        assert "logprobs" not in server.bodies[0] and response.logprobs == ()
        asked = engine.complete(_request(logprobs=True, top_logprobs=3))
        assert asked.logprobs == (None,)  # the server ignored the request: no crash


def test_n_completions_each_with_their_logprobs() -> None:
    script = [completion("a", "b", "c", logprobs=[[("a", -0.1, [])], None,
                                                   [("c", -2.0, [])]])]
    with OpenAIServer(script) as server:
        response = server.engine().complete(_request(n=3, logprobs=True))
        assert server.bodies[0]["n"] == 3
        assert response.texts == ("a", "b", "c")
        assert response.logprobs[1] is None and response.logprobs[2][0].logprob == -2.0


def test_cached_input_tokens_are_read_and_kept_out_of_the_plain_usage_dict() -> None:
    with OpenAIServer([completion("x", prompt_tokens=100, cached_tokens=64),
                       completion("y", prompt_tokens=10)]) as server:
        engine = server.engine()
        cached = engine.complete(_request()).usage
        assert (cached.input_tokens, cached.cached_input_tokens) == (100, 64)
        assert cached.as_dict()["cached_input_tokens"] == 64
        plain = engine.complete(_request()).usage
        assert plain.cached_input_tokens == 0
        assert set(plain.as_dict()) == {"requests", "input_tokens", "output_tokens"}
        assert (cached + plain).cached_input_tokens == 64
    assert Usage(1, 2, 3).as_dict() == {"requests": 1, "input_tokens": 2, "output_tokens": 3}


def test_a_cache_replays_logprobs_and_cached_tokens(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    with OpenAIServer([completion("positive", logprobs=LOGPROBS, prompt_tokens=50,
                                  cached_tokens=32)]) as server:
        recorded = CachedEngine(server.engine(), path, mode="create").complete(
            _request(logprobs=True, top_logprobs=2))
    replayed = CachedEngine(None, path, mode="replay").complete(  # type: ignore[arg-type]
        _request(logprobs=True, top_logprobs=2))
    assert replayed.cached and replayed.logprobs == recorded.logprobs
    assert replayed.usage.cached_input_tokens == 32
