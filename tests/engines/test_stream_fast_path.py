"""The stream reader's common-chunk path (``StreamReading.add``) reads exactly what its
checked path (``_add_checked``) reads, on generated chunks built as the ``openai``
client builds them (unvalidated): same stop verdicts, text, model, finish reason,
refusal and errors."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

from hoare.engines.base import Message, Request
from hoare.engines.openai_stream import StreamReading

ODD = st.one_of(st.none(), st.integers(-2, 2), st.text(max_size=3), st.booleans(),
                st.floats(allow_nan=True), st.just({"x": 1}), st.just([1]))


def _delta() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda c, r: ChoiceDelta.model_construct(content=c, refusal=r),
                  st.one_of(st.text(max_size=4), ODD), st.one_of(st.none(), ODD)),
        ODD)


def _choice() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda i, d, f, lp: Choice.model_construct(
            index=i, delta=d, finish_reason=f, logprobs=lp),
            st.one_of(st.just(0), ODD), _delta(), st.one_of(st.none(), st.just("stop"), ODD),
            st.one_of(st.none(), ODD)),
        ODD)


CHUNKS = st.builds(
    lambda u, m, c: ChatCompletionChunk.model_construct(usage=u, model=m, choices=c),
    st.one_of(st.none(), ODD), st.one_of(st.just("m"), ODD),
    st.one_of(st.lists(_choice(), max_size=2), ODD))


def _run(chunks: list[Any], checked: bool, watch: Any) -> tuple[Any, ...]:
    reading = StreamReading(Request(messages=(Message("user", "x"),), watch=watch))
    stops: list[Any] = []
    for chunk in chunks:
        try:
            stops.append(reading._add_checked(chunk) if checked else reading.add(chunk))
        except Exception as error:
            stops.append((type(error).__name__, str(error)))
            break
    return (stops, reading.parts, reading.model, reading.finish, reading.refusal,
            reading.chunks, reading.stopped, reading.usage)


@settings(max_examples=400, deadline=None)
@given(st.lists(CHUNKS, max_size=6), st.sampled_from([None, 2, 5]))
def test_the_common_path_reads_as_the_checked_one(chunks: list[Any], stop_at: int | None
                                                  ) -> None:
    def watch(text: str) -> str | None:  # a plain watch: stops once the text is long
        return "long" if stop_at is not None and len(text) >= stop_at else None

    for each in (None, watch):
        assert _run(chunks, False, each) == _run(chunks, True, each)
