"""Log-probabilities, n completions and cached input tokens through the real ``openai``
client and the loopback server (what ``hoare.queries.classify`` and ``few_shot`` read)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

from openai_server import OpenAIServer, completion, stream

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


def test_n_completions_from_a_callable_script_item_async() -> None:
    def answer(body: dict[str, object]) -> object:
        n = int(body["n"])  # type: ignore[call-overload]
        return completion(*[f"t{i}" for i in range(n)],
                          logprobs=[[(f"t{i}", -float(i), [("z", -9.0)])] for i in range(n)])

    with OpenAIServer([answer]) as server:
        response = asyncio.run(server.engine().acomplete(_request(n=3, logprobs=True)))
        assert server.bodies[0]["n"] == 3 and server.bodies[0]["logprobs"] is True
    assert response.texts == ("t0", "t1", "t2") and len(response.logprobs) == 3
    assert [lp[0] for lp in response.logprobs if lp is not None] == [
        TokenLogprob(f"t{i}", -float(i), (("z", -9.0),)) for i in range(3)]


def test_engine_default_options_ask_and_a_request_can_opt_out() -> None:
    with OpenAIServer([completion("x", logprobs=LOGPROBS), "y"]) as server:
        engine = server.engine(default_options=Options(timeout=10.0, logprobs=True,
                                                       top_logprobs=2))
        asked = engine.complete(_request())
        assert (server.bodies[0]["logprobs"], server.bodies[0]["top_logprobs"]) == (True, 2)
        assert asked.logprobs[0] is not None and asked.logprobs[0][0].token == "pos"
        declined = engine.complete(_request(logprobs=False))
        assert "logprobs" not in server.bodies[1] and "top_logprobs" not in server.bodies[1]
        assert declined.logprobs == ()


def _raw(choice_extra: dict[str, object], usage: dict[str, object] | None) -> dict[str, object]:
    body: dict[str, object] = {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop", **choice_extra}]}
    if usage is not None:
        body["usage"] = usage
    return body


def test_partial_or_odd_shapes_from_other_servers_do_not_crash() -> None:
    script = [
        _raw({"logprobs": {"content": None}},
             {"prompt_tokens": 3, "completion_tokens": 1, "prompt_tokens_details": None}),
        _raw({"logprobs": {"content": [{"token": "ok", "logprob": -0.5, "top_logprobs": None}]}},
             {"prompt_tokens": 3, "completion_tokens": 1,
              "prompt_tokens_details": {"cached_tokens": None}}),
        _raw({"logprobs": {"content": [{"token": "ok"}]}}, None),  # no logprob, no usage
        _raw({"logprobs": {"content": [{"token": "ok", "logprob": "-inf?"}]}},
             {"prompt_tokens": 3, "completion_tokens": 1, "prompt_tokens_details": {}}),
    ]
    with OpenAIServer(script) as server:
        engine = server.engine()
        first, second, third, fourth = (engine.complete(_request(logprobs=True))
                                        for _ in range(4))
    assert first.logprobs == (None,) and first.usage.cached_input_tokens == 0
    assert second.logprobs == ((TokenLogprob("ok", -0.5),),)
    assert second.usage == Usage(1, 3, 1)
    assert third.logprobs == (None,) and third.usage == Usage(1, 0, 0)
    assert fourth.logprobs == (None,) and fourth.usage.cached_input_tokens == 0


def test_a_streamed_answer_carries_the_logprobs_of_the_tokens_read() -> None:
    pieces = [("pos", -0.3, [("neg", -1.5)]), ("itive", -0.01, [])]
    stops: list[str] = []

    def watch(text: str) -> str | None:
        return "enough" if stops and text == "pos" else None

    def watched(**options: object) -> Request:
        return Request(messages=(Message("user", "Sentiment?"),),
                       options=Options(**options), watch=watch)  # type: ignore[arg-type]

    with OpenAIServer([stream("pos", "itive", logprobs=pieces), stream("pos", "itive"),
                       stream("pos", "itive", logprobs=pieces),
                       stream("pos", "itive", logprobs=pieces, interval=0.05)]) as server:
        engine = server.engine()
        full = engine.complete(watched(logprobs=True, top_logprobs=1))
        assert server.bodies[0]["stream"] is True and server.bodies[0]["logprobs"] is True
        assert full.text == "positive" and full.logprobs == (
            (TokenLogprob("pos", -0.3, (("neg", -1.5),)), TokenLogprob("itive", -0.01)),)
        assert engine.complete(watched(logprobs=True)).logprobs == (None,)  # none sent
        assert engine.complete(watched()).logprobs == ()  # not asked
        stops.append("on")
        stopped = engine.complete(watched(logprobs=True))
    assert stopped.stopped_early == "enough" and stopped.text == "pos"
    assert stopped.logprobs == ((TokenLogprob("pos", -0.3, (("neg", -1.5),)),),)


def test_a_cache_file_from_before_logprobs_still_replays(tmp_path: Path) -> None:
    from hoare.engines.cache import cache_key
    from hoare.engines.cache_format import FORMAT, VERSION, digest

    request = _request()
    key = cache_key(request)
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "entries": [{
        "key": digest(key)[:16], "index": 0, "request": key,
        "response": {"texts": ["old"], "finish_reasons": ["stop"], "model": "m",
                     "usage": {"requests": 1, "input_tokens": 5, "output_tokens": 1}}}]}))
    replayed = CachedEngine(None, path, mode="replay").complete(request)  # type: ignore[arg-type]
    assert replayed.text == "old" and replayed.logprobs == ()
    assert replayed.usage == Usage(1, 5, 1) and replayed.usage.cached_input_tokens == 0


def test_a_cache_records_n_completions_with_a_missing_entry_and_plain_answers_unchanged(
        tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    script = [completion("a", "b", logprobs=[[("a", -0.1, [("b", -2.5)])], None]), "plain"]
    with OpenAIServer(script) as server:
        recorder = CachedEngine(server.engine(), path, mode="create")
        recorded = recorder.complete(_request(n=2, logprobs=True))
        recorder.complete(_request())
    entries = json.loads(path.read_text())["entries"]
    plain = next(e["response"] for e in entries if e["response"]["texts"] == ["plain"])
    assert "logprobs" not in plain and "cached_input_tokens" not in plain["usage"]
    replayer = CachedEngine(None, path, mode="replay")  # type: ignore[arg-type]
    replayed = replayer.complete(_request(n=2, logprobs=True))
    assert replayed.logprobs == recorded.logprobs == (
        (TokenLogprob("a", -0.1, (("b", -2.5),)),), None)
    assert replayer.complete(_request()).logprobs == ()
