"""Reading a streamed chat completion as it arrives, stopped when the request's watch
says so (``Request.watch``: ``hoare.contracts.early_stop``).

The answer read is checked as a non-streamed one is (``openai_answer``): the usage
through ``checked_usage``, a refusal or a filtered answer with no text raised as
``ModelRefusal`` / ``ContentFiltered``. A stream is read in linear time: each piece is
handed to the watch's ``feed`` once.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

from hoare.engines.base import (
    ContentFiltered,
    EngineAnswerError,
    ModelRefusal,
    Request,
    Response,
    TokenLogprob,
    Usage,
)
from hoare.engines.openai_answer import (
    MODEL,
    OBJECT_KINDS,
    attribute,
    checked_usage,
    dialect_of,
    excerpt,
    fields,
    read_tokens,
)

# the fields of a chunk, a choice and a delta, read at once from the client's models
_CHUNK = operator.attrgetter("usage", "model", "choices")
_CHOICE = operator.attrgetter("index", "delta", "finish_reason", "logprobs")
_DELTA = operator.attrgetter("content", "refusal")


def should_stream(request: Request, params: Mapping[str, Any]) -> bool:
    """Stream when the request watches its answer, for one completion without tools."""
    return request.watch is not None and "n" not in params and "tools" not in params


def streaming_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**params, "stream": True, "stream_options": {"include_usage": True}}


class StreamReading:
    """The answer of one stream so far, and the watch's verdict (with the log-probabilities
    of the tokens read, when the request asked for them)."""

    def __init__(self, request: Request, where: str = "the server") -> None:
        self.watch = request.watch
        self.where = where
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
        token: each piece is handed to the watch's ``feed`` once (no join per chunk).
        Every field is checked (``EngineAnswerError`` names the one that is wrong): the
        ``openai`` client builds its chunks without validating them. The common chunk
        (the client's objects, one choice of index 0 with a text piece and nothing
        else) is checked here in full; any other goes to ``_add_checked``."""
        piece: Any = None
        kinds = OBJECT_KINDS
        if kinds.get(type(chunk)) == MODEL:
            try:  # reading only: a field absent or foreign goes to the checked reading
                usage, model, choices = _CHUNK(chunk)
                choice = choices[0] if type(choices) is list and len(choices) == 1 \
                    and usage is None else None
                if choice is not None and kinds.get(type(choice)) == MODEL:
                    index, delta, finish, logprobs = _CHOICE(choice)
                    if type(index) is int and index == 0 and finish is None \
                            and logprobs is None and kinds.get(type(delta)) == MODEL:
                        piece, refused = _DELTA(delta)
                        if refused is not None:
                            piece = None
            except Exception:
                piece = None
        if type(piece) is str:
            if type(model) is str and model:
                self.model = model
            if piece:
                self.parts.append(piece)
                self.chunks += 1
                if self.finish is None and self.watch is not None:
                    feed = self.feed
                    reason = feed(piece) if feed is not None else \
                        self.watch("".join(self.parts))
                    if reason:
                        self.stopped = reason
                        return True
            return False
        return self._add_checked(chunk)

    def _add_checked(self, chunk: Any) -> bool:
        """``add`` for any chunk, every field checked."""
        read: tuple[Any, ...] | None = None
        if OBJECT_KINDS.get(type(chunk)) == MODEL:  # the client's model: its attributes
            try:
                read = _CHUNK(chunk)
            except Exception:  # a field absent: read one by one below
                pass
        if read is None:
            read = fields(chunk, "usage", "model", "choices")
            if read is None:
                raise self._malformed("a chunk that is not an object", chunk)
        usage, model, choices = read
        if usage is not None:
            self.usage = usage  # any type: ``checked_usage`` reads it
        if type(model) is str and model:
            self.model = model
        if type(choices) is not list and choices is not None \
                and not isinstance(choices, (list, tuple)):  # the client's list first: no union
            raise self._malformed("choices that are not a list", choices)
        reason = None
        for position, choice in enumerate(choices or ()):
            read = None
            if OBJECT_KINDS.get(type(choice)) == MODEL:
                try:
                    read = _CHOICE(choice)
                except Exception:
                    pass
            if read is None:
                read = fields(choice, "index", "delta", "finish_reason", "logprobs")
                if read is None:
                    raise self._malformed("a choice that is not an object", choice)
            index, delta, finish, logprobs = read
            if type(index) is not int or index < 0:
                index = position  # as a non-streamed answer's choices are read
            if index != 0:
                continue
            piece = refused = None
            if delta is not None:
                read = None
                if OBJECT_KINDS.get(type(delta)) == MODEL:
                    try:
                        read = _DELTA(delta)
                    except Exception:
                        pass
                if read is None:
                    read = fields(delta, "content", "refusal")
                    if read is None:
                        raise self._malformed("a delta that is not an object", delta)
                piece, refused = read
                if piece is not None and type(piece) is not str:
                    piece = self._text(piece, "content")
                if refused is not None:
                    refused = self._text(refused, "refusal")
                    if refused:
                        self.refusal.append(refused)
            if logprobs is not None and self.tokens is not None:
                content = attribute(logprobs, "content")
                if content:
                    tokens = read_tokens(content)
                    if tokens is None:
                        self.tokens = None
                    else:
                        self.tokens.extend(tokens)
            if finish is not None:
                finish = self._text(finish, "finish_reason")
                if finish:
                    self.finish = finish
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

    def _text(self, value: Any, name: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise self._malformed(f"{name} that is not text", value)

    def _malformed(self, what: str, value: Any) -> EngineAnswerError:
        return EngineAnswerError(f"{self.where} streamed {what} (after {self.chunks} "
                                 f"chunk(s) of text): {excerpt(value)}")

    @property
    def complete(self) -> bool:
        """Whether the answer was read to its end: a finish reason came, or the watch
        stopped it. A stream that ended without either was cut short (no ``[DONE]``, a
        connection closed mid-answer): its text is not the answer."""
        return self.finish is not None or self.stopped is not None

    def spent(self, params: Mapping[str, Any], where: str = "the server") -> Usage:
        """What the stream read so far cost: the usage the server reported (checked), else
        (cancelled, or broken before its usage came) the chunks read, one token each, and
        an upper bound of the input (a token is at least one UTF-8 byte)."""
        if self.usage is None or self.stopped is not None:
            return Usage(1, self.bound, self.chunks)
        max_tokens = params.get("max_tokens", params.get("max_completion_tokens"))
        read = sum(len(part.encode("utf-8", "surrogatepass"))
                   for part in (*self.parts, *self.refusal))
        output_bound = (max_tokens if isinstance(max_tokens, int) and max_tokens > 0
                        else max(read, self.chunks))
        return checked_usage(self.usage, self.bound, output_bound, where)

    def response(self, params: Mapping[str, Any], where: str = "the server",
                 redact: Callable[[str], str] = str) -> Response:
        """The answer read, checked as a non-streamed one is (``parse_completion``): the
        usage through ``checked_usage``, a refusal or a filtered answer with no text
        raised as ``ModelRefusal`` / ``ContentFiltered`` with its usage."""
        text = "".join(self.parts)
        spent = self.spent(params, where)
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
