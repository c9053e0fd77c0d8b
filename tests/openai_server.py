"""A real OpenAI-compatible HTTP server for offline tests.

``OpenAIServer`` listens on 127.0.0.1 (a free port), answers
``POST /v1/chat/completions`` (and ``/chat/completions``) from a script, and
records every request it receives, so tests drive the real ``openai`` client
over real HTTP: status codes, headers, timeouts and all.

Script items, consumed one per request in order:

* ``str``: a completion with that text (one choice);
* ``list``/``tuple`` of ``str``: one choice per text (for ``n > 1``);
* ``dict``: a JSON body sent with status 200, as is;
* ``Reply(status, body, headers, delay)``, or a ``(status, headers, body)`` tuple
  whose body is a dict, a str or ``None``;
* a callable ``fn(body: dict) -> item``, for answers that depend on the request
  (e.g. as many choices as ``body["n"]`` asks for);
* ``raw_stream(*writes)``: server-sent events written as given (broken framing);
* ``stream(*pieces, interval=..., logprobs=[...])``: a streamed answer (server-sent
  events), one chunk per piece (with that piece's ``logprobs`` entry, if given);
  ``streamed`` records how many pieces were written before the client hung up (an
  early-stopped stream);
* ``completion(..., logprobs=[...], cached_tokens=k)``: with OpenAI's ``logprobs``
  (per choice, None or a list of ``(token, logprob, [(alternative, logprob), ...])``)
  and ``usage.prompt_tokens_details`` shapes.

For ``n`` completions, script a callable that reads the request::

    server.push(lambda body: completion(*[f"answer {i}" for i in range(body.get("n", 1))]))

When the script runs out the server answers ``default`` if given, else HTTP 500
"script exhausted" (a test that sends too much fails loudly).

``enforcement={keyword: action}`` (or ``{dialect: {keyword: action}}``, dialects
``json_schema``, ``openai_strict``, ``llama_cpp``) makes the server a decoder with
those capabilities: for a request carrying a schema, the scripted text (else the
text after ``nothing else: `` in the prompt, as ``hoare probe`` asks) is what the
model wants to say, and for each keyword in the schema the action says what the
decoder does: ``enforce`` (the answer is made to obey it), ``ignore`` (the wish goes
out as is), ``refuse`` (HTTP 400 naming ``response_format``), ``drop`` (the whole
schema is dropped: the wish goes out verbatim, text before the JSON included).
Keywords not in the table are ignored. So tests can tell "enforced" from "no error".

``reject_response_format=True`` (or a set of types such as ``{"json_schema"}``)
answers 400 to requests carrying such a ``response_format``, like servers
without structured output; those requests are recorded but consume no script
item.

Usage::

    from openai_server import OpenAIServer, completion, error

    def test_something():
        with OpenAIServer(['{"x": 1}', error(429, "slow down", retry_after=0)]) as server:
            engine = server.engine()          # an OpenAIEngine on this server, no real waits
            ...
            assert server.bodies[0]["messages"][0]["role"] == "system"

or with the ``openai_server`` fixture (import it into the test module)::

    from openai_server import openai_server  # noqa: F401

    def test_other(openai_server):
        openai_server.push('{"x": 1}')
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hoare.engines import OpenAIEngine, Options, TransportRetry

MODEL = "test-model"


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request the server received (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _words(text: str) -> int:
    return len(text.split())


def completion(*texts: str, finish_reason: str = "stop", model: str = MODEL,
               prompt_tokens: int | None = None, completion_tokens: int | None = None,
               delay: float = 0.0, logprobs: list[Any] | None = None,
               cached_tokens: int | None = None) -> Reply:
    """A 200 chat completion with one choice per text. Token counts default to word
    counts (prompt: filled in from the request when ``None``). ``logprobs``: per
    choice, None or a list of ``(token, logprob, [(alternative, logprob), ...])``,
    sent in OpenAI's ``choices[i].logprobs.content`` shape; ``cached_tokens``: sent as
    ``usage.prompt_tokens_details.cached_tokens``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": text},
             "finish_reason": finish_reason}
            for i, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": (completion_tokens if completion_tokens is not None
                                  else sum(_words(t) for t in texts)),
        },
    }
    if logprobs is not None:
        for choice, entry in zip(body["choices"], logprobs, strict=False):
            choice["logprobs"] = None if entry is None else _logprobs(entry)
    if cached_tokens is not None:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return Reply(200, body, {}, delay)


def _logprobs(entry: Iterable[Any]) -> dict[str, Any]:
    """OpenAI's ``logprobs`` object for ``(token, logprob, [(alternative, logprob), ...])``
    items."""
    return {"content": [
        {"token": token, "logprob": value, "bytes": None,
         "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top]}
        for token, value, top in entry]}


@dataclass(frozen=True)
class Streamed:
    """The body of a streamed answer (``stream(...)``)."""

    pieces: tuple[str, ...]
    interval: float = 0.0
    prompt_tokens: int = 10
    logprobs: tuple[Any, ...] | None = None  # per piece: (token, logprob, top) or None
    refusal: str | None = None  # sent as ``delta.refusal`` pieces after the content
    finish_reason: str = "stop"


def stream(*pieces: str, interval: float = 0.0, prompt_tokens: Any = 10,
           logprobs: list[Any] | None = None, refusal: str | None = None,
           finish_reason: str = "stop") -> Reply:
    """A streamed chat completion (server-sent events): one chunk per piece (a token),
    ``interval`` seconds apart, then a final chunk with the usage. ``logprobs``: per
    piece, None or ``(token, logprob, [(alternative, logprob), ...])``, sent as that
    chunk's ``choices[0].logprobs``. The server records in ``streamed`` how many pieces it
    wrote before the client hung up."""
    return Reply(200, Streamed(tuple(pieces), interval, prompt_tokens,
                               None if logprobs is None else tuple(logprobs), refusal,
                               finish_reason))


@dataclass(frozen=True)
class RawEvents:
    """A body of server-sent events written as given, one write (and flush) per item:
    for framing a well-behaved server never sends (broken events, a multi-byte character
    split across writes, no ``[DONE]``, data after it)."""

    writes: tuple[bytes, ...]


def raw_stream(*writes: bytes) -> Reply:
    """A 200 ``text/event-stream`` answer whose body is ``writes``, as they are."""
    return Reply(200, RawEvents(tuple(writes)))


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def tool_calls(*calls: tuple[str, str], content: str | None = None) -> Reply:
    """A 200 chat completion whose one choice asks for tool calls: ``(name, arguments
    JSON text)`` each, with ids ``call_0``, ``call_1``, …"""
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": content,
            "tool_calls": [{"id": f"call_{i}", "type": "function",
                            "function": {"name": name, "arguments": arguments}}
                           for i, (name, arguments) in enumerate(calls)]}}],
        "usage": {"prompt_tokens": None, "completion_tokens": 1},
    }
    return Reply(200, body, {}, 0.0)


def responses_reply(text: str | None = None, *, calls: Iterable[tuple[str, str]] = (),
                    reasoning: Iterable[str] = (), input_tokens: Any = 5,
                    output_tokens: Any = 3, status: str = "completed",
                    model: str = MODEL) -> Reply:
    """A 200 answer of the Responses API (``POST /v1/responses``): reasoning items
    (``rs_<i>``, their encrypted content as given), a message with ``text``, and
    function calls ``(name, arguments JSON)`` with call ids ``call_0``, ``call_1``, …"""
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": secret}
        for i, secret in enumerate(reasoning)]
    if text is not None:
        output.append({"type": "message", "id": "msg_0", "role": "assistant",
                       "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    output.extend({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}",
                   "name": name, "arguments": arguments, "status": "completed"}
                  for i, (name, arguments) in enumerate(calls))
    body = {"id": "resp_0", "object": "response", "created_at": 0, "model": model,
            "status": status, "output": output,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "total_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}
    return Reply(200, body, {}, 0.0)


def embeddings_reply(*vectors: Any, model: str = MODEL) -> Reply:
    """A 200 answer of ``POST /v1/embeddings``: one ``data`` item per vector, in order."""
    return Reply(200, {"object": "list", "model": model,
                       "data": [{"object": "embedding", "index": i, "embedding": v}
                                for i, v in enumerate(vectors)],
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}}, {}, 0.0)


def error(status: int, message: str, *, retry_after: float | None = None,
          retry_after_ms: float | None = None, headers: Mapping[str, str] | None = None,
          delay: float = 0.0, type: str = "error") -> Reply:
    """An OpenAI-style error body with ``status`` (and optional retry headers)."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = str(retry_after)
    if retry_after_ms is not None:
        all_headers["retry-after-ms"] = str(retry_after_ms)
    body = {"error": {"message": message, "type": type, "param": None, "code": None}}
    return Reply(status, body, all_headers, delay)


def _as_reply(item: Any, body: dict[str, Any]) -> Reply:
    if callable(item) and not isinstance(item, Reply):
        item = item(body)
    if isinstance(item, Reply):
        reply = item
    elif isinstance(item, str):
        reply = completion(item)
    elif isinstance(item, list | tuple) and len(item) == 3 and isinstance(item[0], int):
        status, headers, payload = item
        reply = Reply(status, payload, headers or {})
    elif isinstance(item, list | tuple):
        reply = completion(*item)
    elif isinstance(item, dict):
        reply = Reply(200, item)
    else:
        raise TypeError(f"unusable script item {item!r}")
    if (reply.status == 200 and isinstance(reply.body, dict)
            and isinstance(reply.body.get("usage"), dict)
            and reply.body["usage"].get("prompt_tokens") is None):
        prompt = sum(_words(str(m.get("content", ""))) for m in body.get("messages", ()))
        usage = dict(reply.body["usage"], prompt_tokens=prompt)
        reply = Reply(reply.status, dict(reply.body, usage=usage), reply.headers, reply.delay)
    return reply


_SCHEMA_KEYWORDS = ("enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                    "minLength", "maxLength", "pattern", "minItems", "maxItems", "anyOf")


def _decode(table: Mapping[str, Any], fmt: dict[str, Any], body: dict[str, Any],
            scripted: Any) -> Reply | None:
    """What a decoder with ``table``'s capabilities answers (None: no schema sent)."""
    if fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):
        dialect, schema = "llama_cpp", fmt["schema"]
    elif fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        inner = fmt["json_schema"]
        dialect = "openai_strict" if inner.get("strict") is True else "json_schema"
        schema = inner.get("schema")
    else:
        return None
    actions = table.get(dialect, table) if isinstance(table.get(dialect), Mapping) \
        else table
    used = {"type"} | _keywords_in(schema)
    for keyword in sorted(used):
        if actions.get(keyword) == "refuse":
            return error(400, f"response_format: keyword {keyword!r} is not supported",
                         type="invalid_request_error")
    wish = scripted if isinstance(scripted, str) else _asked(body)
    if any(actions.get(k) == "drop" for k in used):
        return completion(wish)
    start = wish.find("{")
    try:
        value = json.loads(wish[start:]) if start >= 0 else None
    except ValueError:
        value = None
    enforce = {k for k in used if actions.get(k) == "enforce"}
    return completion(json.dumps(_conform(schema, value, enforce, schema)))


def _keywords_in(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= _keywords_in(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in _SCHEMA_KEYWORDS:
                found.add(key)
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    found |= _keywords_in(sub)
            elif key not in ("enum", "const", "default"):
                found |= _keywords_in(value)
    return found


def _asked(body: dict[str, Any]) -> str:
    """The text the prompt asks for after ``nothing else: `` (``hoare probe``'s form)."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and "nothing else: " in content:
            return content.split("nothing else: ", 1)[1]
    return "{}"


def _conform(schema: Any, value: Any, enforce: set[str], root: Any) -> Any:
    """``value`` made to obey the ``enforce``d keywords of ``schema`` (a test decoder:
    the shapes hoare's schemas and probes use)."""
    import re

    if not isinstance(schema, dict):
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = root.get("$defs", {}).get(ref[len("#/$defs/"):], {})
    if "anyOf" in schema and "anyOf" in enforce:
        import jsonschema

        for branch in schema["anyOf"]:
            try:
                jsonschema.validate(value, {**branch, "$defs": root.get("$defs", {})})
                return value
            except jsonschema.ValidationError:
                continue
        return _conform(schema["anyOf"][0], value, enforce, root)
    kind = schema.get("type")
    if "type" in enforce:
        if kind == "object" and not isinstance(value, dict):
            value = {}
        elif kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            value = 0
        elif kind == "string" and not isinstance(value, str):
            value = ""
        elif kind == "array" and not isinstance(value, list):
            value = []
        elif kind == "boolean" and not isinstance(value, bool):
            value = False
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        value = {k: _conform(sub, value.get(k), enforce, root)
                 for k, sub in schema["properties"].items()
                 if k in value or k in schema.get("required", ())}
    if "enum" in enforce and isinstance(schema.get("enum"), list) and schema["enum"] \
            and value not in schema["enum"]:
        value = schema["enum"][0]
    if isinstance(value, int) and not isinstance(value, bool):
        if "minimum" in enforce and isinstance(schema.get("minimum"), int):
            value = max(value, schema["minimum"])
        if "maximum" in enforce and isinstance(schema.get("maximum"), int):
            value = min(value, schema["maximum"])
        if "exclusiveMinimum" in enforce and isinstance(schema.get("exclusiveMinimum"), int):
            value = max(value, schema["exclusiveMinimum"] + 1)
        if "exclusiveMaximum" in enforce and isinstance(schema.get("exclusiveMaximum"), int):
            value = min(value, schema["exclusiveMaximum"] - 1)
    if isinstance(value, str):
        if "pattern" in enforce and isinstance(schema.get("pattern"), str) \
                and not re.search(schema["pattern"], value):
            value = "0"
        if "minLength" in enforce and isinstance(schema.get("minLength"), int):
            value = value.ljust(schema["minLength"], "x")
        if "maxLength" in enforce and isinstance(schema.get("maxLength"), int):
            value = value[:schema["maxLength"]]
    if isinstance(value, list):
        if "minItems" in enforce and isinstance(schema.get("minItems"), int):
            value = value + ["x"] * (schema["minItems"] - len(value))
        if "maxItems" in enforce and isinstance(schema.get("maxItems"), int):
            value = value[:schema["maxItems"]]
    return value


def _forget_formats(url: str) -> None:
    """A new server on a port an earlier one used: engines start from json_schema
    (``structured="auto"`` remembers per base URL what a server rejected)."""
    from hoare.engines.openai_request import forget_learned_format

    forget_learned_format(url)


class OpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1; a context manager."""

    def __init__(self, script: Iterable[Any] = (), *, default: Any = None,
                 reject_response_format: bool | Collection[str] = False,
                 dialect: str | None = None,
                 enforcement: Mapping[str, Any] | None = None) -> None:
        self.script: list[Any] = list(script)
        self.enforcement = enforcement
        self.default = default
        # dialect="llama_cpp": like llama.cpp's server, HTTP 500 naming response_format.type
        # for json_schema, and {"type": "json_object", "schema": ...} accepted
        self.dialect = dialect
        if reject_response_format is True:
            self.rejected_formats: Collection[str] = {"json_schema", "json_object"}
        else:
            self.rejected_formats = set(reject_response_format or ())
        self.received: list[Received] = []
        self.streamed: list[int] = []  # per streamed answer: pieces written before hang-up
        self._lock = threading.Lock()
        self._streams_ended = threading.Condition(self._lock)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script -------------------------------------------------------------------------

    def push(self, *items: Any) -> None:
        """Append answers to the script."""
        with self._lock:
            self.script.extend(items)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        with self._lock:
            return [r.body for r in self.received]

    @property
    def remaining(self) -> int:
        """Script items not yet served."""
        with self._lock:
            return len(self.script)

    def _next(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.received.append(Received(path, headers, body))
            fmt = body.get("response_format")
            if self.dialect == "llama_cpp" and isinstance(fmt, dict) \
                    and fmt.get("type") not in ("json_object", "text"):
                return error(500, "Unsupported param: response_format.type must be one of "
                                  "'text' or 'json_object'", type="server_error")
            if isinstance(fmt, dict) and fmt.get("type") in self.rejected_formats:
                return error(400, f"response_format type '{fmt.get('type')}' is not supported "
                                  "by this server", type="invalid_request_error")
            if self.enforcement is not None and isinstance(fmt, dict):
                decoded = _decode(self.enforcement, fmt, body,
                                  self.script[0] if self.script else None)
                if decoded is not None:
                    if decoded.status == 200 and self.script:
                        self.script.pop(0)  # the model's wish, now decoded
                    return decoded
            if self.script:
                item = self.script.pop(0)
            elif self.default is not None:
                item = self.default
            else:
                return error(500, "test server script exhausted: the test sent more requests "
                                  "than it scripted")
        return _as_reply(item, body)

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to give a client, ``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("OpenAIServer is not running: use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the headers and the body are two writes; with Nagle's algorithm
            # the body waits for the client's delayed ACK of the headers (about 40 ms)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions",
                                                 "/v1/responses", "/v1/embeddings"):
                    self._send(error(404, f"no route {self.path}"))
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(error(400, "body is not JSON"))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._send(server._next(self.path, headers, body))

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if isinstance(reply.body, Streamed):
                    self._stream(reply.body)
                    return
                if isinstance(reply.body, RawEvents):
                    self._raw_events(reply.body)
                    return
                if reply.body is None:
                    data = b""
                elif isinstance(reply.body, str | bytes):
                    data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                else:
                    data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _raw_events(self, events: RawEvents) -> None:
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for write in events.writes:
                        self.wfile.write(write)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    self.close_connection = True

            def _stream(self, streamed: Streamed) -> None:
                """Server-sent events, one chunk per piece, ``interval`` apart; counts in
                ``server.streamed`` the pieces written before the client hung up."""
                written = 0
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.end_headers()
                    for index, piece in enumerate(streamed.pieces):
                        if index:
                            time.sleep(streamed.interval)
                        choice: dict[str, Any] = {"index": 0, "delta": {"content": piece},
                                                  "finish_reason": None}
                        if streamed.logprobs is not None and index < len(streamed.logprobs):
                            entry = streamed.logprobs[index]
                            choice["logprobs"] = None if entry is None else _logprobs([entry])
                        self.wfile.write(_event({
                            "id": "chatcmpl-test", "object": "chat.completion.chunk",
                            "created": 0, "model": MODEL, "choices": [choice]}))
                        self.wfile.flush()
                        written += 1
                    if streamed.refusal is not None:  # a refusal streams as its own deltas
                        for part in (streamed.refusal[:3], streamed.refusal[3:]):
                            self.wfile.write(_event({
                                "id": "chatcmpl-test", "object": "chat.completion.chunk",
                                "created": 0, "model": MODEL,
                                "choices": [{"index": 0, "delta": {"refusal": part},
                                             "finish_reason": None}]}))
                    self.wfile.write(_event({
                        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                        "model": MODEL, "choices": [{"index": 0, "delta": {},
                                                     "finish_reason": streamed.finish_reason}],
                        "usage": {"prompt_tokens": streamed.prompt_tokens,
                                  "completion_tokens": len(streamed.pieces)}}))
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client cancelled the stream
                finally:
                    with server._streams_ended:
                        server.streamed.append(written)
                        server._streams_ended.notify_all()
                    self.close_connection = True

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        # serve_forever polls for shutdown() every poll_interval seconds (0.5 by default):
        # stop() would wait up to that long, in every test that starts a server
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.02,),
                                         name="openai-test-server", daemon=True)
        self._thread.start()
        _forget_formats(self.url)
        return self

    def streams_written(self, count: int = 1, timeout: float = 10.0) -> list[int]:
        """``streamed`` once ``count`` streamed answers have ended on the server's side.
        The client may return (it read ``[DONE]``, or it hung up) before the handler's
        thread has counted what it wrote: read the counts through this, not directly."""
        with self._streams_ended:
            if not self._streams_ended.wait_for(lambda: len(self.streamed) >= count,
                                                timeout):
                raise AssertionError(f"{len(self.streamed)} of {count} streams ended "
                                     f"within {timeout} s")
            return list(self.streamed)

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- convenience --------------------------------------------------------------------

    def engine(self, *, max_retries: int = 4, sleeps: list[float] | None = None,
               **kwargs: Any) -> OpenAIEngine:
        """An ``OpenAIEngine`` on this server whose transport retries never really wait
        (the waits are appended to ``sleeps`` when given). ``kwargs`` go to the engine."""
        waits = sleeps if sleeps is not None else []

        async def asleep(seconds: float) -> None:
            waits.append(seconds)

        kwargs.setdefault("transport", TransportRetry(max_retries=max_retries, sleep=waits.append,
                                                      asleep=asleep))
        kwargs.setdefault("api_key", "test-key")
        kwargs.setdefault("default_options", Options(timeout=10.0))
        return OpenAIEngine(kwargs.pop("model", MODEL), base_url=self.url, **kwargs)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running ``OpenAIServer`` with an empty script (``push`` answers onto it)."""
    with OpenAIServer() as server:
        yield server


ScriptItem = str | list[str] | dict[str, Any] | Reply | Callable[[dict[str, Any]], Any]


# -- a raw-socket server for transport faults ---------------------------------------------

@dataclass(frozen=True)
class Fault:
    """One scripted connection of a ``FaultServer``.

    ``kind``: ``"reply"`` (status, headers, body), ``"reset"`` (read the request, then
    abort the connection with a TCP RST), ``"cut"`` (announce ``body`` but send only half
    of it, then close), ``"trickle"`` (send the headers, then ``body`` one byte every
    ``interval`` seconds), ``"trickle_head"`` (the status line and headers too arrive one
    byte per ``interval``), ``"silence"`` (read the request and never answer).
    """

    kind: str
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    interval: float = 0.5


def ok(text: str = "ok", **kwargs: Any) -> Fault:
    """A 200 completion with ``text``."""
    return Fault("reply", 200, json.dumps(completion(text, **kwargs).body).encode())


def status(code: int, message: str, *, retry_after: str | None = None) -> Fault:
    """An OpenAI-style error with ``code`` (and a raw ``Retry-After`` header)."""
    body = json.dumps({"error": {"message": message, "type": "error"}}).encode()
    return Fault("reply", code, body, {"retry-after": retry_after} if retry_after else {})


def trickle(text: str = "ok", *, interval: float = 0.5, padding: int = 0) -> Fault:
    """A 200 completion whose body (padded with spaces) arrives one byte per ``interval``."""
    body = json.dumps(completion(text).body).encode() + b" " * padding
    return Fault("trickle", 200, body, interval=interval)


class FaultServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 written on raw sockets, so it can misbehave
    in ways ``http.server`` cannot: reset, cut a body short, trickle it, stay silent.

    Each connection serves one request (``Connection: close``) with the next ``Fault`` of
    the script (then ``default``; without one, HTTP 500 "script exhausted"). ``requests``
    holds the raw request heads and bodies received, in order."""

    def __init__(self, script: Iterable[Fault] = (), *, default: Fault | None = None) -> None:
        self._script = list(script)
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[tuple[str, bytes]] = []
        self._stop = threading.Event()
        self._sockets: list[Any] = []
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(body or b"{}") for _, body in self.requests]

    def push(self, *faults: Fault) -> None:
        with self._lock:
            self._script.extend(faults)

    def _next(self) -> Fault:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        return self._default or status(500, "script exhausted")

    def start(self) -> FaultServer:
        import socket

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        self._listener = listener
        thread = threading.Thread(target=self._accept, daemon=True, name="FaultServer")
        thread.start()
        self._threads.append(thread)
        _forget_formats(self.url)
        return self

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                continue
            with self._lock:
                self._sockets.append(connection)
            worker = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            worker.start()

    def _read_request(self, connection: Any) -> bool:
        connection.settimeout(5.0)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = connection.recv(65536)
            if not chunk:
                return False
            body += chunk
        with self._lock:
            self.requests.append((head.decode("latin-1"), body))
        return True

    def _serve(self, connection: Any) -> None:
        import socket
        import struct

        try:
            if not self._read_request(connection):
                return
            fault = self._next()
            if fault.kind == "reset":
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
                return
            if fault.kind == "silence":
                self._stop.wait()
                return
            headers = {"content-type": "application/json", "connection": "close",
                       "content-length": str(len(fault.body)), **fault.headers}
            head = f"HTTP/1.1 {fault.status} X\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            if fault.kind == "trickle_head":
                for byte in head.encode("latin-1") + fault.body:
                    if self._stop.wait(fault.interval):
                        return
                    connection.sendall(bytes([byte]))
                return
            connection.sendall(head.encode("latin-1"))
            if fault.kind == "cut":
                connection.sendall(fault.body[: len(fault.body) // 2])
            elif fault.kind == "trickle":
                for i in range(len(fault.body)):
                    if self._stop.wait(fault.interval):
                        return
                    connection.sendall(fault.body[i:i + 1])
            else:
                connection.sendall(fault.body)
        except OSError:
            pass
        finally:
            connection.close()

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for connection in sockets:
            try:
                connection.close()
            except OSError:
                pass

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
