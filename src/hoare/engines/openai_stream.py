"""Reading a streamed chat completion as it arrives, stopped when the request's watch
says so (``Request.watch``: ``hoare.contracts.early_stop``).

The answer read is checked as a non-streamed one is (``openai_answer``): the usage
through ``checked_usage``, a refusal or a filtered answer with no text raised as
``ModelRefusal`` / ``ContentFiltered``. A stream is read in linear time: each piece is
handed to the watch's ``feed`` once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from hoare.engines.base import ContentFiltered, ModelRefusal, Request, Response, TokenLogprob, Usage
from hoare.engines.openai_answer import checked_usage, dialect_of, excerpt, read_tokens


def should_stream(request: Request, params: Mapping[str, Any]) -> bool:
    """Stream when the request watches its answer, for one completion without tools."""
    return request.watch is not None and "n" not in params and "tools" not in params


def streaming_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**params, "stream": True, "stream_options": {"include_usage": True}}


class StreamReading:
    """The answer of one stream so far, and the watch's verdict (with the log-probabilities
    of the tokens read, when the request asked for them)."""

    def __init__(self, request: Request) -> None:
        self.watch = request.watch
        self.parts: list[str] = []
        self.refusal: list[str] = []  # ``delta.refusal`` pieces: the model declined
        self.tokens: list[TokenLogprob] | None = []  # None: a malformed chunk spoiled them
        self.chunks = 0
        self.finish: str | None = None
        self.usage: Any = None
        self.model = ""
        self.stopped: str | None = None
        self.bound = sum(8 + len(m.content.encode("utf-8", "surrogatepass"))
                         for m in request.messages)
        # the watch's ``feed`` (``hoare.contracts.early_stop``): given each piece once, so a
        # stream is read in linear time; a plain watch is called with the text so far (joined)
        try:  # looked up on the class: a foreign watch's __getattr__ is not called
            feed = getattr(type(self.watch), "feed", None)
        except Exception:
            feed = None
        self.feed: Callable[[str], str | None] | None = (
            functools.partial(feed, self.watch) if callable(feed) else None)

    def add(self, chunk: Any) -> bool:
        """Take one chunk; True: stop reading (the watch gave a reason). Called once per
        token: each piece is handed to the watch's ``feed`` once (no join per chunk)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        model = getattr(chunk, "model", None)
        if model:
            self.model = model
        reason = None
        for choice in getattr(chunk, "choices", None) or ():
            if (choice.index or 0) != 0:
                continue
            delta = choice.delta
            piece = getattr(delta, "content", None) if delta else None
            refused = getattr(delta, "refusal", None) if delta else None
            if isinstance(refused, str) and refused:
                self.refusal.append(refused)
            logprobs = getattr(choice, "logprobs", None)
            content = getattr(logprobs, "content", None) if logprobs is not None else None
            if content and self.tokens is not None:
                tokens = read_tokens(content)
                if tokens is None:
                    self.tokens = None
                else:
                    self.tokens.extend(tokens)
            if choice.finish_reason:
                self.finish = choice.finish_reason
            if piece:
                self.parts.append(piece)
                self.chunks += 1
                # a complete answer (its finish reason came) is judged in full, not here
                if reason is None and self.finish is None and self.watch is not None:
                    feed = self.feed
                    reason = feed(piece) if feed is not None else \
                        self.watch("".join(self.parts))
        if reason:
            self.stopped = reason
            return True
        return False

    def response(self, params: Mapping[str, Any], where: str = "the server",
                 redact: Callable[[str], str] = str) -> Response:
        """The answer read, checked as a non-streamed one is (``parse_completion``): the
        usage through ``checked_usage``, a refusal or a filtered answer with no text
        raised as ``ModelRefusal`` / ``ContentFiltered`` with its usage."""
        text = "".join(self.parts)
        usage = self.usage
        if usage is not None and self.stopped is None:
            max_tokens = params.get("max_tokens", params.get("max_completion_tokens"))
            read = len(text.encode("utf-8", "surrogatepass")) + sum(
                len(r.encode("utf-8", "surrogatepass")) for r in self.refusal)
            output_bound = (max_tokens if isinstance(max_tokens, int) and max_tokens > 0
                            else max(read, self.chunks))
            spent = checked_usage(usage, self.bound, output_bound, where)
        else:  # cancelled: the server never sent its usage. Output: the chunks read (one
            # token each); input: an upper bound (a token is at least one UTF-8 byte)
            spent = Usage(1, self.bound, self.chunks)
        if not text and self.stopped is None:
            if self.refusal:
                refusal = redact("".join(self.refusal))
                raise ModelRefusal(f"{where}: the model refused to answer: "
                                   f"{excerpt(refusal, 300)}", refusal=refusal, usage=spent)
            if self.finish == "content_filter":
                raise ContentFiltered(f"{where}: the answer was withheld by the server's "
                                      "content filter (finish_reason=content_filter, no text)",
                                      usage=spent)
        return Response(texts=(text,),
                        finish_reasons=("stopped_early" if self.stopped else self.finish,),
                        usage=spent, model=self.model or str(params["model"]),
                        decoding=dialect_of(params.get("response_format")),
                        stopped_early=self.stopped,
                        logprobs=((tuple(self.tokens) if self.tokens else None,)
                                  if params.get("logprobs") else ()))
