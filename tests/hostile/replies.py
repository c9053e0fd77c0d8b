"""Hostile replies of an OpenAI-compatible server, as hypothesis strategies: a well-formed
answer (a chat completion, a stream of chunks, a Responses API answer) with one or more of
its fields, at any path, replaced by a value of the wrong type, a number that is not a
count, or removed; and streams whose framing is broken (no ``[DONE]``, data after it, a
multi-byte character split across writes, events that are not JSON objects).

``tests/engines/test_hostile_replies.py`` sends them through a real server on 127.0.0.1
and the real ``openai`` client, sync and async.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from .generators import outside_numbers

MISSING = object()  # a mutation that removes the field

# Any JSON value a server may send where another belongs (NaN and infinities included:
# the client's parser reads them).
junk: st.SearchStrategy[Any] = st.recursive(
    st.one_of(outside_numbers().filter(lambda v: not isinstance(v, bytes)),
              st.text(max_size=8), st.sampled_from(["stop", "12", "", "\ud800", "[DONE]"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["text", "content", "index", "a"]),
                                            inner, max_size=3)),
    max_leaves=6)


def chat_completion(text: str = '{"v": 1}') -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2,
                      "prompt_tokens_details": {"cached_tokens": 1}}}


def chunks(*pieces: str) -> list[dict[str, Any]]:
    """A streamed answer's chunks: one per piece, then the finish reason, then the usage."""
    out: list[dict[str, Any]] = [
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None,
                      "logprobs": None}]} for piece in pieces]
    out.append({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out.append({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    return out


def responses_answer(text: str = '{"v": 1}') -> dict[str, Any]:
    return {"id": "r", "object": "response", "created_at": 0, "model": "m",
            "status": "completed",
            "output": [{"type": "message", "id": "m0", "role": "assistant",
                        "content": [{"type": "output_text", "text": text,
                                     "annotations": []}]}],
            "usage": {"input_tokens": 3, "output_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 1}}}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indexes) in a JSON value, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with the field at ``path`` set to ``new`` (removed: ``MISSING``)."""
    if not path:
        return None if new is MISSING else new
    out = copy.deepcopy(value)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if new is MISSING:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return out


@st.composite
def mutated(draw: st.DrawFn, template: Any, max_mutations: int = 2) -> Any:
    """``template`` with 1..``max_mutations`` fields, at paths drawn from every path it
    has, replaced by junk or removed."""
    value = template
    for _ in range(draw(st.integers(1, max_mutations))):
        path = draw(st.sampled_from(paths(value)))
        value = replaced(value, path, draw(st.one_of(junk, st.just(MISSING))))
    return value


def _event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode("utf-8", "surrogatepass") + b"\n\n"


DONE = b"data: [DONE]\n\n"


@st.composite
def event_stream(draw: st.DrawFn) -> tuple[bytes, ...]:
    """The writes of a streamed answer: its chunks, some mutated; its framing, perhaps
    broken (no ``[DONE]``, data after it, an event that is not JSON, the body split at
    any byte, through multi-byte characters)."""
    pieces = draw(st.lists(st.sampled_from(['{"v"', ": 1", "}", "é€", "\U0010ffff", " "]),
                           min_size=1, max_size=4))
    events = [draw(mutated(chunk)) if draw(st.booleans()) else chunk
              for chunk in chunks(*pieces)]
    body = b"".join(_event(e) for e in events)
    framing = draw(st.sampled_from(["done", "no_done", "after_done", "not_json",
                                    "truncated"]))
    if framing == "done":
        body += DONE
    elif framing == "after_done":
        body += DONE + _event(chunks("more")[0])
    elif framing == "not_json":
        body += b"data: {not json\n\n" + DONE
    elif framing == "truncated":
        body = body[:draw(st.integers(0, max(0, len(body) - 1)))]
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=4)))
    writes, start = [], 0
    for cut in cuts:
        writes.append(body[start:cut])
        start = cut
    writes.append(body[start:])
    return tuple(w for w in writes if w)
