"""Every public entry point of hoare, and how the harness drives it.

An entry point is a name in the ``__all__`` of a public module (``MODULES``) or a
``hoare`` CLI subcommand (``cli:NAME``). ``REGISTRY`` maps each to an ``Entry``: its
kind, the value families (``generators``) it is driven with, and a driver
``drive(value, workdir)`` that puts the hostile value where the entry point takes
outside input (an argument, a model's answer, a server number, a callback, a path).
Adding an entry point is one line; ``tests/test_hostile_registry.py`` fails, naming
it, when a public name or subcommand has no line here.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODULES = ("hoare", "hoare.engines", "hoare.queries", "hoare.agents",
           "hoare.compat.symbolicai", "hoare.verifier", "hoare.telemetry")

Driver = Callable[[object, Path], object]


@dataclass(frozen=True)
class Entry:
    """How one entry point is driven. ``families``: the value families of
    ``generators`` (text, number, object, callback, path) it receives; none for a
    constant (its value is data, not a callable)."""

    kind: str
    drive: Driver | None
    families: tuple[str, ...] = ("text", "number", "object", "callback")


# --- building blocks --------------------------------------------------------------

def _engine_answering(value: object) -> Any:
    """A FunctionEngine whose model answers ``value``: a text as is, a number as every
    usage count of a Response, anything else (an object, a callback) as the answer."""
    from hoare.engines import FunctionEngine, Response, Usage

    if isinstance(value, str):
        return FunctionEngine(lambda request: value)
    if callable(value):
        return FunctionEngine(value)  # type: ignore[arg-type]
    if value is None or isinstance(value, (int, float, list)):
        usage = Usage(value, value, value, value)  # type: ignore[arg-type]
        return FunctionEngine(lambda request: Response(('{"v": 1}',), ("stop",), usage))
    return FunctionEngine(lambda request: value)  # type: ignore[arg-type,return-value]


def _request(text: object = "hi") -> Any:
    from hoare.engines import Message, Request

    return Request(messages=(Message("user", text),))  # type: ignore[arg-type]


def _contract_class(value: object, decorator: Any = None) -> Any:
    """A contract whose pre- and post-condition are ``value`` when it is a callback,
    whose model answers ``value`` otherwise."""
    from pydantic import Field

    import hoare

    decorator = decorator or hoare.contract

    class In(hoare.LLMDataModel):
        text: str = ""

    class Out(hoare.LLMDataModel):
        v: int = Field(ge=0, le=10)

    callback = value if callable(value) and not isinstance(value, type) else None

    @decorator(remedy_retry_params={"tries": 2, "delay": 0})
    class Hostile(hoare.Contract):
        prompt = "answer"

        def pre(self, i: In) -> bool:
            return callback(i) if callback else True  # type: ignore[no-any-return]

        def post(self, o: Out, i: In) -> bool:
            return callback(o, i) if callback else o.v >= 0  # type: ignore[no-any-return]

        def forward(self, i: In) -> Out:
            return self.contract_result if self.contract_successful else Out(v=0)

    return Hostile, In


def drive_contract(value: object, _: Path, decorator: Any = None) -> object:
    """A contracted call: hostile answers, usage numbers and predicates, then a hostile
    object as the input itself (a type violation whose message must not crash)."""
    cls, make_in = _contract_class(value, decorator)
    engine = _engine_answering(value if not callable(value) else '{"v": 1}')
    instance = cls(engine=engine)
    instance(make_in(text="x"))
    if isinstance(value, str) and len(value) < 2_000_000:
        instance(make_in(text=value))
    if not callable(value) or isinstance(value, type):
        instance(value)
    if isinstance(value, str) and len(value) > 1_000_000:
        return None  # the async path reads the same answer: the sync one judged it
    return asyncio.run(instance.acall(make_in(text="y")))


def drive_symbolicai(value: object, workdir: Path) -> object:
    from hoare.compat import symbolicai

    return drive_contract(value, workdir, symbolicai.contract)


def drive_first(fn: Callable[..., object]) -> Driver:
    """The entry point called with the hostile value as its only argument."""
    return lambda value, _: fn(value)


def drive_keywords(fn: Callable[..., object], *names: str, **fixed: object) -> Driver:
    """The entry point called once per keyword, that keyword hostile."""
    def drive(value: object, _: Path) -> object:
        for name in names:
            with _documented():
                fn(**{**fixed, name: value})
        return None
    return drive


class _Documented(Exception):
    pass


@contextlib.contextmanager
def _documented() -> Any:
    """Inside a multi-call driver: a documented error of one call does not stop the
    next; anything else escapes to the runner, which judges it."""
    from hoare.errors import HoareError

    from .properties import is_documented

    try:
        yield
    except (HoareError, TypeError, ValueError) as error:
        if not is_documented(error):
            raise


def drive_error_class(cls: type[BaseException]) -> Driver:
    """An exception made from hostile arguments has a text that never raises and
    survives pickling (the property of tests/test_errors.py, for hostile texts)."""
    def drive(value: object, _: Path) -> object:
        import pickle

        from hoare.errors import safe_text

        try:
            error = cls(value)
        except TypeError:
            return None  # a constructor with required arguments of its own
        safe_text(error)
        if isinstance(value, str):
            with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):
                pickle.loads(pickle.dumps(error))
        return None
    return drive


def drive_engine_call(make: Callable[[object], Any]) -> Driver:
    def drive(value: object, _: Path) -> object:
        engine = make(value)
        engine.complete(_request())
        return asyncio.run(engine.acomplete(_request()))
    return drive


# Where a server's reply carries a hostile value: place -> (streamed?, the answer with
# "__HOSTILE__"). A streamed one is its only chunk, before [DONE] (a finish reason after it
# would hide a hostile one).
_OK = {"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}
_DELTA = {"index": 0, "finish_reason": "stop", "delta": {"content": "ok"}}
REPLY_PLACES: dict[str, tuple[bool, Any]] = {
    "content": (False, {"choices": [{**_OK, "message": {"content": "__HOSTILE__"}}]}),
    "usage": (False, {"choices": [_OK], "usage": "__HOSTILE__"}),
    "usage_counts": (False, {"choices": [_OK], "usage": {"prompt_tokens": "__HOSTILE__",
                                                         "completion_tokens": "__HOSTILE__"}}),
    "finish_reason": (False, {"choices": [{**_OK, "finish_reason": "__HOSTILE__"}]}),
    "model": (False, {"model": "__HOSTILE__", "choices": [_OK]}),
    "stream_chunk": (True, "__HOSTILE__"),
    "stream_choice": (True, {"choices": ["__HOSTILE__"]}),
    "stream_content": (True, {"choices": [{**_DELTA, "delta": {"content": "__HOSTILE__"}}]}),
    "stream_finish": (True, {"choices": [{**_DELTA, "finish_reason": "__HOSTILE__"}]}),
    "stream_model": (True, {"model": "__HOSTILE__", "choices": [_DELTA]}),
    "stream_usage": (True, {"choices": [_DELTA], "usage": "__HOSTILE__"}),
}


def _wire(value: object) -> bytes | None:
    """``value`` as a server writes it in JSON (bytes raw inside a string: invalid UTF-8
    on the wire), or None when it cannot cross the wire (an object, a callback)."""
    if isinstance(value, bytes):
        return b'"' + value + b'"'
    if value is None or isinstance(value, str | int | float | list):
        return json.dumps(value).encode("utf-8", "surrogatepass")
    return None


def _check_reply(place: str, value: object, response: Any) -> None:
    """A ``Response`` whose fields have their types; a usage that is not an object of
    counts charged as more than nothing."""
    from hoare.engines import Response

    counts = response.usage.as_dict() if isinstance(response, Response) else {}
    if not (isinstance(response, Response)
            and all(isinstance(t, str) for t in response.texts)
            and all(f is None or isinstance(f, str) for f in response.finish_reasons)
            and isinstance(response.model, str)
            and all(type(n) is int and n >= 0 for n in counts.values())):
        raise AssertionError(f"{place}: a Response with fields of the wrong type: "
                             f"{response!r:.300}")
    if place.endswith("usage") and value is not None and counts["input_tokens"] == 0:
        raise AssertionError(f"{place}: usage={value!r:.60} was counted as free")


def drive_openai_reply(value: object, _: Path) -> object:
    """``OpenAIEngine`` on a real server on 127.0.0.1 (the real ``openai`` client), sync
    and async, whose reply holds the hostile value at each of ``REPLY_PLACES``: an
    answer whose fields have their types, or a documented error."""
    from openai_server import OpenAIServer, Reply, raw_stream

    from hoare.engines import Message, Request

    wired = _wire(value)
    if wired is None:
        return None
    with OpenAIServer() as server:
        engine = server.engine(max_retries=0)
        for place, (streamed, answer) in REPLY_PLACES.items():
            body = json.dumps(answer).encode().replace(b'"__HOSTILE__"', wired)
            for mode in ("sync", "async"):
                server.push(raw_stream(b"data: " + body + b"\n\n", b"data: [DONE]\n\n")
                            if streamed else Reply(200, body))
                request = Request(messages=(Message("user", "hi"),),
                                  watch=(lambda text: None) if streamed else None)
                with _documented():
                    _check_reply(place, value, engine.complete(request) if mode == "sync"
                                 else asyncio.run(engine.acomplete(request)))
    return None


def drive_parser(parser: Callable[[], Any]) -> Driver:
    def drive(value: object, _: Path) -> object:
        from hoare.queries import Answer

        return parser().parse(Answer(value))  # type: ignore[arg-type]
    return drive


def drive_query(fn_name: str) -> Driver:
    """A query entry point with the hostile value as the query, then with a real query
    whose model answers the hostile value."""
    def drive(value: object, _: Path) -> object:
        import hoare.queries as queries

        fn = getattr(queries, fn_name)
        engine = _engine_answering(value)
        with _documented():
            _consume(fn(value, engine))
        return _consume(fn(_a_query(), engine))
    return drive


def _a_query() -> Any:
    from hoare.queries import Query

    class Pick(Query[int]):  # type: ignore[misc]
        """Pick a number."""

        n: int = 1

        def parser(self) -> Any:
            from hoare.queries import structured
            return structured

    return Pick()


def _consume(result: object) -> object:
    if hasattr(result, "__aiter__"):
        async def take_all() -> list[object]:
            return [item async for item in result]  # type: ignore[attr-defined]
        return asyncio.run(take_all())
    if asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


def drive_cli(*arguments: str) -> Driver:
    """``hoare SUBCOMMAND ...``, the hostile value as text argument or path ({} in the
    arguments); an exit status, never an exception; a --json output is strict JSON."""
    def drive(value: object, workdir: Path) -> object:
        from hoare.cli import parser as cli

        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        if isinstance(value, str) and ("\x00" in value or len(value) > 100_000):
            value = value.replace("\x00", "")[:100_000]  # argv cannot carry NUL or 10 MB
        argv = [a.replace("{}", str(value)) if isinstance(value, (str, Path)) else a
                for a in arguments]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
        if status not in (0, 1, 2, 3):
            raise AssertionError(f"exit status {status!r}")
        from .properties import strict_json, well_formed_xml
        if status != 2 and out.getvalue().strip() and \
                ("--json" in argv or "sarif" in argv or "json" in argv):
            strict_json(out.getvalue())
        if "--junit" in argv and status != 2:
            written = Path(argv[argv.index("--junit") + 1])
            if written.is_file():
                well_formed_xml(written.read_text(encoding="utf-8"))
        return status
    return drive


def drive_path(fn: Callable[[Path], object]) -> Driver:
    return lambda value, _: fn(value)  # type: ignore[arg-type]


def _not_callable(_: object, __: Path) -> object:
    return None


# --- the registry -----------------------------------------------------------------

def _build() -> dict[str, Entry]:
    import hoare
    import hoare.agents as agents
    import hoare.engines as engines
    import hoare.queries as queries
    import hoare.telemetry as telemetry
    import hoare.verifier as verifier
    from hoare.compat import symbolicai

    everything = ("text", "number", "object", "callback")
    data = ("text", "number", "object")
    entries: dict[str, Entry] = {}

    def add(name: str, kind: str, drive: Driver | None,
            families: tuple[str, ...] = everything) -> None:
        entries[name] = Entry(kind, drive, families)

    # Exceptions: every error class of every public module.
    for module_name, module in (("hoare", hoare), ("hoare.engines", engines),
                                ("hoare.queries", queries), ("hoare.agents", agents),
                                ("hoare.verifier", verifier)):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                add(f"{module_name}:{name}", "error", drive_error_class(value), data)

    # hoare
    add("hoare:contract", "contract", drive_contract)
    add("hoare:Contract", "contract", drive_contract)
    add("hoare:Pre", "contract", drive_first(hoare.Pre))
    add("hoare:Post", "contract", drive_first(hoare.Post))
    add("hoare:Policy", "value", drive_first(hoare.Policy), data)
    add("hoare:Pipeline", "contract", drive_first(hoare.Pipeline))
    add("hoare:Field", "value", drive_first(hoare.Field), data)
    add("hoare:LLMDataModel", "value", lambda v, _: hoare.LLMDataModel.model_validate(v), data)
    add("hoare:Outcome", "value", drive_first(hoare.Outcome), data)
    add("hoare:Report", "verifier", drive_first(hoare.Report), data)
    add("hoare:configure", "store",
        drive_keywords(hoare.configure, "engine", "cache_size", "stats", "label",
                       "stats_retention_days", "preflight"), (*everything, "path"))
    add("hoare:flush_stats", "store", drive_first(hoare.flush_stats), ("number", "object"))
    add("hoare:verify", "verifier", drive_first(hoare.verify), (*data, "path"))
    add("hoare:__version__", "constant", None, ())

    # hoare.engines
    add("hoare.engines:FunctionEngine", "engine", drive_engine_call(_engine_answering))
    add("hoare.engines:Engine", "engine", lambda v, _: isinstance(v, engines.Engine), data)
    keywords = drive_keywords(engines.OpenAIEngine, "model", "base_url", "api_key",
                              "timeout", model="m", base_url="http://127.0.0.1:9/v1",
                              api_key="k")
    add("hoare.engines:OpenAIEngine", "engine",
        lambda v, w: (keywords(v, w), drive_openai_reply(v, w)), data)
    add("hoare.engines:CachedEngine", "engine",
        lambda v, _: engines.CachedEngine(_engine_answering('{"v": 1}'), v)
        .complete(_request()), (*data, "path"))
    add("hoare.engines:CacheMode", "value", drive_first(engines.CacheMode), data)
    add("hoare.engines:BudgetedEngine", "engine",
        drive_engine_call(lambda v: engines.BudgetedEngine(
            _engine_answering(v), engines.Budget(max_requests=3, max_input_tokens=10**6))))
    add("hoare.engines:Budget", "engine",
        drive_keywords(engines.Budget, "max_requests", "max_input_tokens",
                       "max_output_tokens", "max_cost"), data)
    add("hoare.engines:Spend", "engine", drive_first(engines.Spend), data)
    add("hoare.engines:Price", "engine", drive_keywords(
        engines.Price, "input_per_million", "output_per_million",
        "cached_input_per_million", input_per_million=1.0, output_per_million=1.0), data)
    add("hoare.engines:Usage", "engine", drive_keywords(
        engines.Usage, "requests", "input_tokens", "output_tokens", "cached_input_tokens"),
        data)
    add("hoare.engines:Options", "engine", drive_keywords(
        engines.Options, "model", "temperature", "max_tokens", "n", "seed", "timeout"), data)
    add("hoare.engines:Message", "engine", lambda v, _: engines.Message("user", v), data)
    add("hoare.engines:Request", "engine", lambda v, _: _request(v).messages, data)
    add("hoare.engines:Response", "engine", drive_first(engines.Response), data)
    add("hoare.engines:ToolCall", "engine", lambda v, _: engines.ToolCall("1", "f", v), data)
    add("hoare.engines:Failure", "engine", lambda v, _: engines.Failure("timeout", v), data)
    add("hoare.engines:TransportRetry", "engine", drive_keywords(
        engines.TransportRetry, "max_retries", "base_delay", "max_delay", "jitter",
        "max_elapsed"), data)

    # hoare.queries
    for name in ("get_text", "last_code_block", "trim"):
        add(f"hoare.queries:{name}", "parser",
            drive_parser(lambda name=name: getattr(queries, name)), data)
    add("hoare.queries:structured", "parser",
        lambda v, _: queries.structured.make(int), data)
    for name in ("json_as", "yaml_as", "structured_as", "final_tool_call_as"):
        add(f"hoare.queries:{name}", "parser",
            drive_parser(lambda name=name: getattr(queries, name)(dict[str, int])), data)
    add("hoare.queries:Parser", "parser", drive_parser(lambda: queries.Parser(
        lambda answer: json.loads(answer.text))), data)
    add("hoare.queries:GenericParser", "parser", drive_first(
        lambda v: queries.GenericParser(v, "d").for_type(int)))
    add("hoare.queries:response_with", "parser", drive_first(queries.response_with), data)
    add("hoare.queries:Answer", "parser", drive_first(queries.Answer), data)
    add("hoare.queries:FinalAnswer", "parser", drive_first(queries.FinalAnswer), data)
    add("hoare.queries:ToolRequests", "parser", drive_first(queries.ToolRequests), data)
    add("hoare.queries:Response", "parser", lambda v, _: queries.Response(
        queries.Answer("x"), v), data)
    add("hoare.queries:Mode", "parser", drive_first(queries.Mode), data)
    add("hoare.queries:Classification", "query", lambda v, _: queries.Classification(
        v, {v: 1.0}) if not isinstance(v, (list, bytes)) else None, data)
    add("hoare.queries:distribution_of", "query", lambda v, _: queries.distribution_of(
        ["a", "b"], [("a", v), ("b", 0.0)]), data)
    for name in ("few_shot", "afew_shot", "outcome_of", "classify"):
        add(f"hoare.queries:{name}", "query", drive_query(name))
    add("hoare.queries:Query", "query", drive_first(queries.Query))
    add("hoare.queries:Example", "query", lambda v, _: queries.Example("q", {"a": v}), data)
    add("hoare.queries:DummyModel", "query", drive_first(queries.DummyModel),
        (*data, "path"))
    add("hoare.queries:FailingModel", "query",
        drive_engine_call(lambda v: queries.FailingModel()), ("object",))
    add("hoare.queries:load_demonstrations", "query", drive_first(queries.load_demonstrations),
        (*data, "path"))
    add("hoare.queries:add_template_folder", "query", drive_first(queries.add_template_folder),
        (*data, "path"))
    add("hoare.queries:most_similar", "query", drive_first(queries.most_similar), data)
    add("hoare.queries:take", "query", drive_first(queries.take), data)
    add("hoare.queries:with_tags", "query", drive_first(queries.with_tags), data)
    add("hoare.queries:budget_entry", "query", drive_first(queries.budget_entry), data)
    add("hoare.queries:budget_from_limits", "query",
        lambda v, _: queries.budget_from_limits({"num_requests": v}), data)
    add("hoare.queries:QueryBudget", "query",
        lambda v, _: queries.QueryBudget({"num_requests": v}), data)
    add("hoare.queries:ModelPricing", "query",
        lambda v, _: queries.ModelPricing(v, v, v), data)  # type: ignore[arg-type]
    add("hoare.queries:pricing_for", "query", drive_first(queries.pricing_for), data)
    add("hoare.queries:standard_model", "query",
        lambda v, _: queries.standard_model(v, base_url="http://127.0.0.1:9/v1",
                                            api_key="k"), data)
    add("hoare.queries:StandardModel", "query", drive_first(queries.StandardModel), data)
    add("hoare.queries:Solution", "query", drive_first(queries.Solution), data)
    add("hoare.queries:WrappedParseError", "parser", lambda v, _: str(
        queries.WrappedParseError(queries.ParseError(v))), data)
    add("hoare.queries:FeedbackMessage", "query", lambda v, _: queries.FeedbackMessage(
        "feedback", description=v), data)
    add("hoare.queries:OracleMessage", "query", lambda v, _: queries.OracleMessage(
        "oracle", v), data)
    add("hoare.queries:ToolResult", "query", lambda v, _: queries.ToolResult(
        "tool", engines.ToolCall("1", "f", "{}"), v), data)
    for name in ("closest", "diverse"):
        add(f"hoare.queries:{name}", "query", drive_embedding_selector(name))
    add("hoare.queries:openai_embedder", "query", lambda v, _: queries.openai_embedder(
        _engine_answering(v))(["a", "b"]))
    add("hoare.queries:final_tool_call", "parser",
        lambda v, _: queries.final_tool_call.for_type(v), data)
    add("hoare.queries:first_word", "parser",
        lambda v, _: queries.first_word.for_type(str).parse(queries.Answer(v)), data)
    add("hoare.queries:first_word_as", "parser",
        drive_parser(lambda: queries.first_word_as(int)), data)
    add("hoare.queries:AnswerPrefix", "constant", None, ())
    add("hoare.queries:AnswerPrefixElement", "constant", None, ())
    add("hoare.queries:KNOWN_PRICING", "constant", None, ())
    add("hoare.queries:SCHEMA_PATH", "constant", None, ())

    # hoare.agents
    add("hoare.agents:ContractAgent", "agent", drive_agent)
    # an async tool's call is a coroutine, awaited as its caller would
    add("hoare.agents:tool", "agent", lambda v, _: _consume(agents.tool(v)(1))
        if callable(v) else agents.tool(v))
    add("hoare.agents:Tool", "agent", lambda v, _: _consume(agents.Tool(v)(x=1))
        if callable(v) else agents.Tool(v))
    add("hoare.agents:ToolChain", "agent", lambda v, _: agents.ToolChain(v, feed={}))
    add("hoare.agents:pre", "agent", lambda v, _: agents.pre(v)(lambda x: x)(1))
    add("hoare.agents:post", "agent", lambda v, _: agents.post(v)(lambda x: x)(1))
    add("hoare.agents:PreCondition", "agent", drive_first(agents.PreCondition))
    add("hoare.agents:PostCondition", "agent", drive_first(agents.PostCondition))
    add("hoare.agents:contract_assert", "agent", drive_first(agents.contract_assert))
    add("hoare.agents:contract_context", "agent", drive_context)
    add("hoare.agents:current_context", "agent", lambda v, _: agents.current_context(), ())
    add("hoare.agents:ContractContext", "agent", lambda v, _: agents.ContractContext(
        handler=v).handle_violation(agents.ContractViolation(
            "pre", "here", "p", "m")) if callable(v) else agents.ContractContext(v))
    add("hoare.agents:ContractViolation", "agent", lambda v, _: str(
        agents.ContractViolation("pre", "here", "p", v)), data)
    add("hoare.agents:ContractSpec", "agent", drive_first(agents.ContractSpec), data)
    add("hoare.agents:ContractPolicy", "value", drive_first(agents.ContractPolicy), data)
    add("hoare.agents:EventType", "value", drive_first(agents.EventType), data)
    add("hoare.agents:AgentEvent", "agent", lambda v, _: agents.AgentEvent(
        agents.EventType.ANSWER, v), data)
    add("hoare.agents:AgentResult", "agent", lambda v, _: agents.AgentResult(
        v, [], True), data)
    add("hoare.agents:IterationState", "agent", drive_first(agents.IterationState), data)
    add("hoare.agents:ViolationHandler", "constant", None, ())

    # hoare.compat.symbolicai
    add("hoare.compat.symbolicai:contract", "contract", drive_symbolicai)
    add("hoare.compat.symbolicai:Expression", "contract", drive_symbolicai)
    add("hoare.compat.symbolicai:LLMDataModel", "value",
        lambda v, _: symbolicai.LLMDataModel.model_validate(v), data)
    add("hoare.compat.symbolicai:Const", "value", drive_first(symbolicai.Const), data)
    add("hoare.compat.symbolicai:CustomConstraint", "value",
        drive_first(symbolicai.CustomConstraint), data)
    add("hoare.compat.symbolicai:LengthConstraint", "value", drive_keywords(
        symbolicai.LengthConstraint, "field_name", "min_length", "max_length"), data)
    add("hoare.compat.symbolicai:build_dynamic_llm_datamodel", "value",
        drive_first(symbolicai.build_dynamic_llm_datamodel), data)

    # hoare.verifier
    add("hoare.verifier:verify", "verifier", drive_first(verifier.verify), (*data, "path"))
    add("hoare.verifier:discover", "verifier", lambda v, _: verifier.discover([v]),
        (*data, "path"))
    add("hoare.verifier:verify_found", "verifier", drive_first(verifier.verify_found), data)
    add("hoare.verifier:Preflight", "verifier", drive_first(verifier.Preflight), data)
    add("hoare.verifier:SolverOptions", "verifier", drive_keywords(
        verifier.SolverOptions, "timeout_ms", "rlimit", "seed"), data)
    add("hoare.verifier:CheckResult", "verifier", lambda v, _: verifier.CheckResult(
        "k", "pass", v), data)
    add("hoare.verifier:ContractReport", "verifier", drive_first(verifier.ContractReport),
        data)
    add("hoare.verifier:Report", "verifier", drive_first(verifier.Report), data)

    # hoare.telemetry
    add("hoare.telemetry:instrument", "telemetry", drive_instrument, ("object",))
    add("hoare.telemetry:instrumented", "telemetry", lambda v, _: telemetry.instrumented(), ())
    add("hoare.telemetry:uninstrument", "telemetry",
        lambda v, _: telemetry.uninstrument(), ())

    # the CLI
    path_and_text = ("text", "path")
    add("cli:verify", "cli", drive_cli("verify", "{}", "--json", "--no-cache", "-j", "1"),
        path_and_text)
    add("cli:verify -o", "cli", drive_cli("verify", "hoare.engines", "--json", "-o", "{}",
                                          "--no-cache", "-j", "1"), ("path",))
    add("cli:verify --format sarif", "cli", drive_cli(
        "verify", "{}", "--format", "sarif", "--no-cache", "-j", "1"), ("text",))
    add("cli:compare --junit", "cli", drive_cli(
        "compare", "--db", ":memory:", "--baseline", "{}", "--candidate", "b",
        "--junit", "out.xml"), ("text",))
    add("cli:stats", "cli", drive_cli("stats", "--db", "{}", "--json"), path_and_text)
    add("cli:stats --since", "cli", drive_cli("stats", "--db", ":memory:", "--since", "{}"),
        ("text",))
    add("cli:schema", "cli", drive_cli("schema", "{}", "--json"), ("text",))
    add("cli:probe", "cli", drive_cli("probe", "http://127.0.0.1:9/v1", "--model", "{}",
                                      "--trials", "1", "--json"), ("text",))
    add("cli:eval", "cli", drive_eval, path_and_text)
    add("cli:compare", "cli", drive_cli("compare", "--db", "{}", "--baseline", "a",
                                        "--candidate", "b", "--json"), path_and_text)
    add("cli:compare --max-drop", "cli", drive_cli(
        "compare", "--db", ":memory:", "--baseline", "a", "--candidate", "b",
        "--max-drop", "{}"), ("text",))
    return entries


EVAL_TARGET = """
import json
from hoare import Contract, LLMDataModel, contract
from hoare.engines import FunctionEngine

class In(LLMDataModel):
    text: str = ""

class Out(LLMDataModel):
    n: int

ENGINE = FunctionEngine(lambda request: json.dumps({"n": len(request.input.text)}))

@contract(remedy_retry_params={"tries": 1, "delay": 0})
class C(Contract):
    prompt = "count"

    def forward(self, i: In) -> Out:
        return self.contract_result if self.contract_successful else Out(n=0)
"""


def drive_eval(value: object, workdir: Path) -> object:
    """``hoare eval`` of a real contract over a hostile dataset path or text (as the
    dataset's one line), recording into a fresh store."""
    (workdir / "hostile_eval_target.py").write_text(EVAL_TARGET, encoding="utf-8")
    dataset = value
    if not isinstance(value, Path):
        dataset = workdir / "data.jsonl"
        raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
        dataset.write_bytes(raw)
    run = drive_cli("eval", "hostile_eval_target:C", str(dataset), "--engine",
                    "hostile_eval_target:ENGINE", "--db", str(workdir / "s.sqlite"),
                    "--json")
    return run("", workdir)


def drive_embedding_selector(name: str) -> Driver:
    """A selector by embeddings whose embedder is the hostile callback, or answers
    vectors holding the hostile value (NaN, inf, text...)."""
    def drive(value: object, _: Path) -> object:
        import hoare.queries as queries

        def vectors(texts: list[str]) -> list[list[object]]:
            return [[value, 1.0] for _ in texts]
        embed = value if callable(value) else vectors
        examples = [queries.Example("q", {"a": i}) for i in range(3)]
        selector = getattr(queries, name)(2, embed)
        return selector(_a_query(), examples)
    return drive


def drive_agent(value: object, _: Path) -> object:
    """An agent whose model answers the hostile value, then one whose tool is it."""
    from hoare.agents import ContractAgent

    agent = ContractAgent(_engine_answering(value if not callable(value) else "done"),
                          tools=[value] if callable(value) else None, max_iterations=3)
    return agent.run("go")


def drive_context(value: object, _: Path) -> object:
    from hoare.agents import ContractContext, contract_context

    handler = value if callable(value) else None
    with contract_context(ContractContext(handler=handler)):  # type: ignore[arg-type]
        from hoare.agents import contract_assert
        contract_assert(False, "hostile")
    return None


def drive_instrument(value: object, _: Path) -> object:
    from hoare import telemetry

    try:
        telemetry.instrument(value)
    finally:
        telemetry.uninstrument()
    return None


_REGISTRY: dict[str, Entry] | None = None


def registry() -> dict[str, Entry]:
    """Built once per process (the drivers import the library)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _build()
    return _REGISTRY


def cli_subcommands() -> set[str]:
    """The subcommands ``hoare`` accepts, read from its parser."""
    import argparse

    from hoare.cli import parser as cli

    parser = cli.build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()
