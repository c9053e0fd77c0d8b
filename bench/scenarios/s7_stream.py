"""Scenario 7: a streamed answer read in linear time (issue 31 item 4). A JSON answer of
256 KiB, 1 MiB and 4 MiB (a ``Doc``: a title, paragraphs, a note) streamed in 64-byte
chunks under ``@contract(stream=True)`` (so early stop watches every chunk).

Two figures per size. **hoare's reader alone**: ``StreamReading.add`` (the engine's
stream reader, early stop included) fed the same chunks as the real ``openai`` client's
``ChatCompletionChunk`` objects, built beforehand; CPU time of the reading thread.
**Whole call**: the contract called through the loopback server (``tests/openai_server``,
real HTTP and server-sent events) with the real ``openai`` client; CPU time of the
calling thread, so the server's thread is not counted, but the ``openai`` client's
parsing of every event is (one run per size: the server sends about a thousand events
a second). The reader's figure is the median of 7 runs (3 with ``--quick``).
"""

import json
import statistics
import sys
import time

from scenarios import ROOT, Context, Report

sys.path.insert(0, str(ROOT / "tests"))

from openai.types.chat import ChatCompletionChunk
from openai_server import OpenAIServer, stream

from hoare import Contract, LLMDataModel, Post, contract
from hoare.contracts.early_stop import EarlyStop, plan_for
from hoare.engines.base import Message, Options, Request
from hoare.engines.openai_stream import StreamReading

CHUNK = 64
SIZES = {"256 KiB": 256 * 1024, "1 MiB": 1024 * 1024, "4 MiB": 4 * 1024 * 1024}
GOAL_MS_PER_MIB = 50.0
GOAL_GROWTH = 4.6  # t(4 MiB) / t(1 MiB): linear is 4


class Q(LLMDataModel):
    text: str


class Doc(LLMDataModel):
    title: str
    paragraphs: list[str]
    note: str


@contract(stream=True, remedy_retry_params={"tries": 1, "delay": 0, "jitter": 0})
class Write(Contract[Q, Doc]):
    prompt = "Write the document."
    post_conditions = [Post(lambda d: len(d.title) < 100, "a short title"),
                       Post(lambda d: d.note != "", "a note")]

    def forward(self, q: Q) -> Doc:
        return self.contract_result


def answer(size: int) -> str:
    """A valid ``Doc`` of about ``size`` bytes (ASCII: one byte per character)."""
    paragraph = "Lorem ipsum dolor sit amet, consectetur {adipiscing} [elit] \"sed\". " * 2
    count = max(1, size // (len(paragraph) + 6))
    return json.dumps({"title": "A long document", "paragraphs": [paragraph] * count,
                       "note": "the end"})


def pieces(text: str) -> list[str]:
    return [text[at:at + CHUNK] for at in range(0, len(text), CHUNK)]


def _chunks(parts: list[str]) -> list[ChatCompletionChunk]:
    return [ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]})
        for part in parts]


def reader_ms(chunks: list[ChatCompletionChunk], watch: object) -> float:
    """CPU ms of hoare's stream reader (early stop included) over ``chunks``."""
    reading = StreamReading(Request(messages=(Message("user", "x"),), watch=watch))
    start = time.thread_time_ns()
    for chunk in chunks:
        if reading.add(chunk):
            raise AssertionError(f"stopped early: {reading.stopped}")
    reading.response({"model": "m"})
    return (time.thread_time_ns() - start) / 1e6


def call_ms(parts: list[str], server: OpenAIServer) -> float:
    """CPU ms of the calling thread for one whole streamed contract call."""
    server.push(stream(*parts))
    contracted = Write(engine=server.engine(default_options=Options(timeout=600.0)))
    start = time.thread_time_ns()
    contracted(Q(text="x"))
    spent = (time.thread_time_ns() - start) / 1e6
    if not contracted.contract_successful:
        raise AssertionError(contracted.contract_outcome.attempts[0].violations)
    return spent


def run(ctx: Context) -> Report:
    report = Report("7_stream", "A streamed answer read in linear time (64-byte chunks)")
    plan = plan_for(Write.__hoare__)
    rounds = ctx.rounds(7, 3)
    reader: dict[str, float] = {}
    whole: dict[str, float] = {}
    with OpenAIServer() as server:
        for label, size in SIZES.items():
            text = answer(size)
            parts = pieces(text)
            chunks = _chunks(parts)
            times = [reader_ms(chunks, EarlyStop(plan, lambda s, v: bool(s.fn(v))))
                     for _ in range(rounds)]
            reader[label] = statistics.median(times)
            report.figures[label] = {"bytes": len(text), "chunks": len(parts),
                                     "reader_cpu_ms": [round(t, 2) for t in times]}
            report.row(f"{label} ({len(parts)} chunks): hoare's reader",
                       f"{reader[label]:.1f} ms ({min(times):.1f}–{max(times):.1f}) cpu")
            if ctx.quick and size > SIZES["256 KiB"]:
                continue  # the server's pace (a thousand events a second) sets the time
            # one whole call per size: the loopback server sends about a thousand events a
            # second (it shares the process and its GIL with the client)
            spent = whole[label] = call_ms(parts, server)
            report.figures[label]["whole_call_cpu_ms"] = round(spent, 1)
            report.row("  whole call, calling thread (openai client included)",
                       f"{spent:.0f} ms cpu")
    per_mib = reader["1 MiB"]
    met = per_mib <= GOAL_MS_PER_MIB
    report.row("hoare's reader, 1 MiB", f"{per_mib:.1f} ms", f"<= {GOAL_MS_PER_MIB:.0f} ms",
               met)
    report.goal("stream reader <= 50 ms CPU per MiB", round(per_mib, 2),
                f"<= {GOAL_MS_PER_MIB} ms", met)
    growth = reader["4 MiB"] / reader["1 MiB"]
    small = reader["1 MiB"] / reader["256 KiB"]
    met = growth <= GOAL_GROWTH
    report.row("growth t(4 MiB)/t(1 MiB), t(1 MiB)/t(256 KiB)",
               f"{growth:.2f}, {small:.2f}", f"<= {GOAL_GROWTH} (linear: 4)", met)
    report.goal("stream reader linear: t(4 MiB)/t(1 MiB)", round(growth, 2),
                f"<= {GOAL_GROWTH}", met)
    if "4 MiB" in whole:
        ratio = report.ratios["whole_call_growth_4MiB_over_1MiB"] = round(
            whole["4 MiB"] / whole["1 MiB"], 2)
        report.row("whole call growth t(4 MiB)/t(1 MiB)", f"{ratio:.2f}")
    return report
