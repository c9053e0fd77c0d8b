"""Prompting policies on the kernel: ``query.run``, ``few_shot`` and their async twins.

Every answer goes through the kernel (``hoare.kernel.run_call``): the query's
pre-conditions, the parser (a ``ParseError`` is a type violation), the
post-conditions, the remedy loop (the failure is fed back as a repair message)
and the statistics. The policy only decides which messages a ``Generate``
effect sends and where its answer comes from:

* ``num_completions=n`` asks for n samples in one request. The kernel takes
  them one by one as successive candidates (best-of-n as a remedy strategy):
  the first that satisfies the contract wins; a new request is sent only once
  the batch is used up, with the last failure's repair message. Statistics
  count samples, not only requests.
* ``iterative_mode=True`` keeps one conversation: each failed answer is
  followed by a repair message, each accepted one by a "more" message asking
  for a different answer (templates ``<Query>.repair.jinja``/``.more.jinja``).
* ``few_shot`` is a stream: each accepted answer is yielded as a ``Solution``
  with the spending so far. It ends when ``max_requests`` requests were sent,
  when the budget refuses a request, or when the engine fails for good; with
  neither ``max_requests`` nor a budget it runs as long as it is consumed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter

from hoare.contracts import configuration
from hoare.declaration.models import TypeSpec
from hoare.engines.base import Message, Options, Request, Response, ToolCall, Usage, innermost
from hoare.engines.budget import Budget, BudgetedEngine, Spend
from hoare.errors import FatalEngineError, RetryableEngineError, UsageError
from hoare.kernel import (
    ContractConfig,
    ContractViolationError,
    Effect,
    Generate,
    Hooks,
    Outcome,
    Phase,
    Policy,
    PreflightResult,
    Reply,
    RetryPolicy,
    Sleep,
    Violation,
    run_async,
    run_call,
    run_sync,
)
from hoare.queries.best_of_n import choose, stored_rates
from hoare.queries.chats import prefix_messages
from hoare.queries.demonstrations import Example, Selector, examples_for, load_demonstrations
from hoare.queries.parsers import Answer, Parser, WrappedParseError, tool_spec
from hoare.queries.query import Query, QueryRuntime, fallback_of, runtime_of
from hoare.queries.templates import has_prefix, render, split_roles

__all__ = ["RequestsSpent", "Solution", "afew_shot", "arun_query", "few_shot", "outcome_of",
           "run_query"]

T = TypeVar("T")
logger = logging.getLogger("hoare.queries")


class RequestsSpent(FatalEngineError):
    """The policy's ``max_requests`` were all sent; no further request is made."""


@dataclass(frozen=True)
class Solution(Generic[T]):
    """An accepted answer of a stream: its ``value``, the ``budget`` spent so far by the
    stream (Delphyne's keys: ``num_requests``, ``num_completions``, ``input_tokens``,
    ``output_tokens``, ``price`` when the model's pricing is known), the number of
    answers the kernel examined for it (``attempts``) and its kernel ``outcome``."""

    value: T
    budget: dict[str, float]
    attempts: int
    outcome: Outcome
    strategy: str = "fixed"
    """How the samples were asked for: ``"fixed"`` (``num_completions`` as given), or
    what ``num_completions="auto"`` chose: ``"best_of_n"`` or ``"sequential"``."""


@dataclass(frozen=True)
class _Settings:
    params: Mapping[str, Any]
    mode: str | None
    temperature: float | None
    max_tokens: int | None
    num_completions: int  # 0: "auto" (decided when the session starts)
    max_requests: int | None
    iterative: bool
    tries: int
    examples: tuple[Example, ...]
    auto_examples: bool
    near_miss: str | None
    no_wrap_parse_errors: bool = False


def _settings(query: Query[Any], *, params: Mapping[str, Any] | None = None,
              examples: Any = None, select_examples: Sequence[Selector] = (),
              mode: str | None = None, temperature: float | None = None,
              max_tokens: int | None = None, num_completions: int | str = 1,
              max_requests: int | None = None, iterative_mode: bool = False, tries: int = 3,
              near_miss: str | None = None, no_wrap_parse_errors: bool = False) -> _Settings:
    auto_n = num_completions == "auto"
    if not auto_n and (not isinstance(num_completions, int) or isinstance(num_completions, bool)
                       or num_completions < 1):
        raise UsageError(f"num_completions must be an integer >= 1 or 'auto', got "
                         f"{num_completions!r}")
    if iterative_mode and num_completions != 1:
        raise UsageError("iterative_mode keeps one conversation: it needs num_completions=1")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise UsageError(f"max_requests must be an integer >= 1 or None, got {max_requests!r}")
    if not isinstance(no_wrap_parse_errors, bool):
        raise UsageError(f"no_wrap_parse_errors must be True or False, got "
                         f"{no_wrap_parse_errors!r}")
    if not isinstance(tries, int) or isinstance(tries, bool) or tries < 1:
        raise UsageError(f"tries must be an integer >= 1, got {tries!r}")
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(f"params must be a mapping, got {type(params).__name__}")
    if not isinstance(query, Query):
        raise UsageError(f"the query must be a hoare.queries.Query instance, got "
                         f"{type(query).__name__}")
    query.mode_settings(mode)  # an unknown mode is an error now, not at the first answer
    auto = isinstance(examples, str) and examples == "auto"
    if near_miss is not None and not auto:
        raise UsageError("near_miss= names a post-condition of an examples='auto' near miss; "
                         "pass examples='auto' too")
    chosen: list[Example] = []
    if examples is not None and not auto:
        if isinstance(examples, (str, Path)) or isinstance(examples, (list, tuple)):
            loaded = load_demonstrations(examples)
        else:
            raise UsageError(f"examples must be a file, a list of entries or 'auto', got "
                             f"{type(examples).__name__}")
        chosen = examples_for(query, loaded, mode, select_examples)
    mode_settings = query.mode_settings(mode)
    return _Settings(dict(params or {}), mode,
                     temperature if temperature is not None else mode_settings.temperature,
                     max_tokens if max_tokens is not None else mode_settings.max_tokens,
                     0 if auto_n else int(num_completions), max_requests, iterative_mode,
                     tries, tuple(chosen), auto, near_miss, no_wrap_parse_errors)


def _metered(engine: Any, budget: Any) -> tuple[Any, Any]:
    """The engine behind the budget's meters, and the object whose ``spent()`` reports."""
    if budget is None:
        return engine, None
    if isinstance(budget, (Budget, Spend)):
        wrapped = BudgetedEngine(engine, budget)
        return wrapped, wrapped
    from hoare.queries.pricing import QueryBudget, budget_from_limits

    if isinstance(budget, Mapping):
        budget = budget_from_limits(budget)
    if isinstance(budget, QueryBudget):
        return budget.engine(engine, model_class=getattr(engine, "model_class", None),
                             pricing=getattr(engine, "pricing", None)), budget
    raise UsageError(f"budget must be a mapping of Delphyne budget keys, a QueryBudget, a "
                     f"hoare Budget or a Spend, got {type(budget).__name__}")


class _Session:
    """One policy run: the prompt, the conversation, the pending samples, the counters.
    Used by one thread or task at a time (a generator's consumer)."""

    def __init__(self, query: Query[Any], engine: Any, budget: Any, settings: _Settings,
                 *, for_run: bool) -> None:
        if engine is None or not callable(getattr(engine, "complete", None)):
            raise UsageError(f"{type(query).__name__}.run needs an engine (an object with "
                             f"complete/acomplete, e.g. hoare.queries.standard_model(...) or "
                             f"DummyModel(...)), got {engine!r}")
        self.runtime: QueryRuntime = runtime_of(type(query))
        try:  # prompts show the fields as validated (the kernel checks them again)
            query = self.runtime.validate(query)  # type: ignore[assignment]
            valid = True
        except Exception:
            valid = False  # the kernel reports the input's type violation, sends nothing
        self.query = query
        self.settings = settings
        self.parser: Parser[Any] = query.parser_for(settings.mode)
        self.engine, self.meter = _metered(engine, budget)
        self.model = engine
        self.for_run = for_run
        self.history: list[Message] = []
        self.pending: deque[Answer] = deque()
        self.last_accepted: Answer | None = None
        self.requests = self.samples = 0
        self.usage = Usage()
        self.exhausted = self.fatal = False
        self.hint = ""  # an extra line of the format (classify: the possible answers)
        self._base: tuple[Message, ...] | None = None
        self.schema = self.parser.structured.schema if self.parser.structured else None
        self.tools = tuple(tool_spec(t) for t in self.parser.tools)
        self.tool_choice = "required" if self.tools and self.parser.force_tool else None
        fallback = fallback_of(query) if for_run else None
        self.fallback = fallback
        policy = Policy.OBSERVE if (fallback is not None or not for_run) else Policy.ENFORCE
        self.config = ContractConfig(policy=policy,
                                     retry=RetryPolicy(tries=settings.tries, delay=0.0,
                                                       jitter=0.0))
        if valid:  # a prompt that cannot be rendered (a template error, a missing extra)
            self.prepare()  # is the caller's error, raised here, not an engine failure
        self.strategy = "fixed"
        if settings.num_completions == 0:
            self._choose(budget)

    def _choose(self, budget: Any) -> None:
        """``num_completions="auto"``: best-of-n or sequential repair (``best_of_n``)."""
        caps = _token_caps(budget)
        if caps is None:
            raise UsageError("num_completions='auto' chooses within a token budget: pass "
                             "budget={'input_tokens': ..., 'output_tokens': ...} (or a "
                             "Budget with max_input_tokens/max_output_tokens)")
        prompt = sum(len(m.content.encode()) for m in (self._base or ())) / 4 + 16
        choice = choose(self.runtime.rates, max_input_tokens=caps[0],
                        max_output_tokens=caps[1], prompt_tokens=prompt,
                        max_tokens=self.settings.max_tokens, tries=self.settings.tries,
                        stored=stored_rates(self.runtime.description.name))
        self.settings = dataclasses.replace(self.settings, num_completions=choice.n)
        self.strategy = choice.strategy

    def prepare(self) -> None:
        """Render the prompts once before the first request, the repair and "more"
        templates included, so that their errors reach the caller."""
        self._base = self._base_messages()
        render(self.query, "repair", {**self._context(None), "error": "-", "errors": []})
        if self.settings.iterative:
            render(self.query, "more", self._context(None))

    # -- the prompt -----------------------------------------------------------------------
    def _context(self, example: int | None) -> dict[str, Any]:
        return {"params": self.settings.params, "format": self._format(),
                "mode": self.settings.mode, "available_modes": self.query.query_modes(),
                "example": example, "examples": len(self.settings.examples)}

    def _format(self) -> str:
        lines = []
        spec = self.parser.structured
        if spec is not None:
            lines.append(f"Answer with one JSON value of this JSON schema:\n{spec.schema_json}")
        else:
            shown = self.parser.shows or self.runtime.output
            if shown.annotation not in (Any, str):
                where = ("the arguments of a call to the tool "
                         f"{self.parser.tools[0].__name__}" if self.parser.force_tool
                         and self.parser.tools else "the answer")
                lines.append(f"The JSON schema of {where}:\n{_value_schema(shown)}")
        if self.hint:
            lines.append(self.hint)
        posts = [p.message for p in self.runtime.description.post]
        if posts:
            lines.append("The answer must satisfy:\n" + "\n".join(f"- {m}" for m in posts))
        if self.settings.auto_examples:
            lines.extend(_auto_examples(self))
        return "\n\n".join(lines)

    @property
    def base(self) -> tuple[Message, ...]:
        """The system prompt, the examples and the query, rendered at the first request."""
        if self._base is None:
            self._base = self._base_messages()
        return self._base

    def _base_messages(self) -> tuple[Message, ...]:
        messages = [Message("system", render(self.query, "system", self._context(None)))]
        cls = type(self.query)
        for number, example in enumerate(self.settings.examples, 1):
            instance = example.instance_of(cls)
            messages.extend(_instance_messages(instance, self._context(number)))
            messages.extend(_assistant(example.text(), example.calls(),
                                       "(recorded in the example)"))
        messages.extend(_instance_messages(self.query, self._context(None)))
        return tuple(messages)

    def _repair(self, feedback: tuple[Violation, ...]) -> str:
        error = "\n".join(f"- {v.message}" for v in feedback)
        return render(self.query, "repair", {**self._context(None), "error": error,
                                             "errors": [v.message for v in feedback]})

    def _messages(self, effect: Generate) -> tuple[Message, ...]:
        previous = effect.previous if isinstance(effect.previous, Answer) else None
        if not self.settings.iterative:
            if previous is not None and effect.feedback:
                return (*self.base, *_assistant(previous.text, previous.tool_calls),
                        Message("user", self._repair(effect.feedback)))
            return self.base
        if previous is not None and effect.feedback:
            self.history += [*_assistant(previous.text, previous.tool_calls),
                             Message("user", self._repair(effect.feedback))]
        elif self.last_accepted is not None:
            self.history += [*_assistant(self.last_accepted.text,
                                         self.last_accepted.tool_calls),
                             Message("user", render(self.query, "more", self._context(None)))]
        self.last_accepted = None
        return (*self.base, *self.history)

    # -- effects --------------------------------------------------------------------------
    def next_step(self, effect: Generate) -> Reply | Request:
        """A pending sample of the last request, else the request to send."""
        if self.pending:
            return Reply(self.pending.popleft())
        limit = self.settings.max_requests
        if limit is not None and self.requests >= limit:
            self.exhausted = True
            raise RequestsSpent(f"max_requests={limit} requests were sent")
        options = Options(temperature=self.settings.temperature,
                          max_tokens=self.settings.max_tokens, n=self.settings.num_completions)
        return Request(messages=self._messages(effect), schema=self.schema,
                       schema_name=self.runtime.output.model.__name__, options=options,
                       input=self.query, feedback=tuple(v.message for v in effect.feedback),
                       attempt=effect.attempt, contract=self.runtime.description.name,
                       tools=self.tools, tool_choice=self.tool_choice)

    def received(self, response: object) -> Reply:
        if not isinstance(response, Response):
            raise RetryableEngineError(f"the engine answered a {type(response).__name__}, "
                                       f"not a Response")
        self.requests += 1
        self.usage = self.usage + response.usage
        if not response.texts and not response.tool_calls:
            raise RetryableEngineError("the engine answered with no completion")
        texts = response.texts or ("",)
        reasons = response.finish_reasons
        answers = [Answer(text, response.tool_calls if i == 0 else (), self.settings.mode,
                          reasons[i] if i < len(reasons) else None)
                   for i, text in enumerate(texts)]
        self.samples += len(answers)
        self.pending.extend(answers[1:])
        usage = {"input_tokens": response.usage.input_tokens,
                 "output_tokens": response.usage.output_tokens, "samples": len(answers),
                 "requests": 1}
        return Reply(answers[0], usage)

    def failed(self, error: BaseException) -> None:
        if isinstance(error, FatalEngineError):
            self.fatal = True

    def perform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            time.sleep(effect.seconds)
            return None
        assert isinstance(effect, Generate)
        step = self.next_step(effect)
        if isinstance(step, Reply):
            return step
        try:
            return self.received(self.engine.complete(step))
        except Exception as error:
            self.failed(error)
            raise

    async def aperform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        assert isinstance(effect, Generate)
        step = self.next_step(effect)
        if isinstance(step, Reply):
            return step
        complete = getattr(self.engine, "acomplete", None)
        try:
            if complete is None:
                response = await asyncio.to_thread(self.engine.complete, step)
            else:
                response = await complete(step)
            return self.received(response)
        except Exception as error:
            self.failed(error)
            raise

    # -- the kernel's hooks ---------------------------------------------------------------
    def hooks(self) -> Hooks:
        check_input = self.runtime.validate

        unwrap = self.settings.no_wrap_parse_errors

        def check_output(raw: object, used: object) -> object:
            if not isinstance(raw, Answer):
                raise TypeError(f"expected an answer, got {type(raw).__name__}")
            value = self.parser.parse(raw)
            if unwrap and isinstance(value, WrappedParseError):
                raise value.error  # Delphyne's no_wrap_parse_errors: a failed attempt
            return value

        def forward(used: object, outcome: Outcome) -> object:
            if outcome.success:
                return outcome.result
            if self.fallback is not None:
                return self.fallback(outcome)
            return _FAILED

        return Hooks(check_input, check_output, forward, self.runtime.pre, self.runtime.post,
                     preflight=_preflight(self.runtime))

    def spent(self) -> dict[str, float]:
        if self.meter is not None:
            found = dict(self.meter.spent())
            if "num_requests" not in found:  # a hoare Budget's meter: its names, mapped once
                found = {"num_requests": found.get("requests", 0),
                         "input_tokens": found.get("input_tokens", 0),
                         "output_tokens": found.get("output_tokens", 0),
                         "price": found.get("cost", 0.0)}
            found["num_completions"] = found.get("num_completions", self.samples)
            return found
        spent: dict[str, float] = {
            "num_requests": self.requests, "num_completions": self.samples,
            "input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens}
        cached = getattr(self.usage, "cached_input_tokens", 0)
        if cached:
            spent["cached_input_tokens"] = cached
        pricing = getattr(self.model, "pricing", None)
        if pricing is not None:
            spent["price"] = pricing.as_price().cost(self.usage)
        return spent

    def record(self, outcome: Outcome, started_ns: int) -> None:
        """Count the call for this query class (P_succ) and in the stats store."""
        self.runtime.tracker.record(outcome)
        self.runtime.rates.record(outcome)
        store = configuration.stats_store()
        if store is None:
            return
        try:
            generations = sum(1 for a in outcome.attempts if a.phase is Phase.POST)
            inner = innermost(self.model)
            spent = self.spent()
            store.record((  # type: ignore[attr-defined]
                time.time(), self.runtime.description.name, _definition_hash(self.runtime),
                configuration.label(), outcome.success, outcome.success and generations <= 1,
                generations, max(0, generations - 1),
                None if outcome.preflight is None else outcome.preflight.verdict.value,
                outcome.usage.get("input_tokens"), outcome.usage.get("output_tokens"),
                spent.get("price"), (time.perf_counter_ns() - started_ns) / 1e6,
                type(inner).__name__, getattr(inner, "model", None), outcome.trials,
                "query", 0))
        except Exception:  # recording never fails a query
            logging.getLogger("hoare.stats").debug("query not recorded", exc_info=True)


_FAILED = object()


def _value_schema(spec: TypeSpec) -> str:
    """The JSON schema of the values themselves (not of a one-field wrapper model)."""
    schema = TypeAdapter(spec.annotation).json_schema() if spec.wrapped else spec.schema
    return json.dumps(schema, indent=2, sort_keys=True)


def _assistant(text: str, calls: Sequence[ToolCall],
               result: str = "(not run: see the message below)") -> list[Message]:
    """An answer repeated to the model: its text and tool calls, each call followed by a
    tool message (the chat protocol refuses calls left unanswered)."""
    return [Message("assistant", text, tuple(calls)),
            *(Message("tool", result, tool_call_id=call.id) for call in calls)]


def _instance_messages(query: object, context: dict[str, Any]) -> list[Message]:
    """The instance prompt (split at its ``!<assistant>``/``!<user>`` lines), then the
    query's chat prefix (``prefix: AnswerPrefix``) as messages."""
    text = render(query, "instance", context)
    messages = [Message(role, body) for role, body in split_roles(text)]  # type: ignore[arg-type]
    if has_prefix(type(query)):
        def feedback(element: object) -> str:
            return render(query, "feedback", {**context, "feedback": element})
        messages.extend(prefix_messages(getattr(query, "prefix", None) or (), feedback))
    return messages


def _definition_hash(runtime: QueryRuntime) -> str:
    import hashlib
    import inspect

    try:
        text = inspect.getsource(runtime.cls)
    except (OSError, TypeError):
        text = runtime.description.name
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _preflight(runtime: QueryRuntime) -> Any:
    """The z3 pre-flight of the query's post-conditions for this instance (None when it
    cannot be built): a query no answer can satisfy costs no request."""
    checker = runtime.__dict__.get("_preflight", False)
    if checker is False:
        checker = None
        if runtime.description.post:
            try:
                from hoare.verifier.runtime.preflight import Preflight

                checker = Preflight.for_description(
                    dataclasses.replace(runtime.description, preflight=True))
            except Exception as error:  # never let the optimisation break a query
                logger.debug("pre-flight unavailable for %s: %s",
                             runtime.description.name, error)
        runtime.__dict__["_preflight"] = checker
    if checker is None:
        return None

    model = runtime.input.model

    def check(used: object) -> PreflightResult:
        # the verifier models the query as its fields' model: the same values, unvalidated
        # again (they were validated once, into ``used``)
        fields = {f.name: getattr(used, f.name) for f in dataclasses.fields(used)  # type: ignore[arg-type]
                  if f.init}
        result: PreflightResult = checker.check(None, model.model_construct(**fields))
        return result
    return check


def _auto_examples(session: _Session) -> list[str]:
    from hoare.queries.auto_examples import auto_example_lines

    return auto_example_lines(session.query, session.runtime, session.settings.near_miss)


# -- the policies ----------------------------------------------------------------------

def _one_call(session: _Session) -> tuple[Outcome, object]:
    started = time.perf_counter_ns()
    try:
        outcome, value = run_sync(run_call(session.query, session.config, session.hooks()),
                                  session.perform)
    except ContractViolationError as error:
        if error.outcome is not None:
            session.record(error.outcome, started)
        raise
    session.record(outcome, started)
    return outcome, value


async def _one_acall(session: _Session) -> tuple[Outcome, object]:
    started = time.perf_counter_ns()
    try:
        outcome, value = await run_async(run_call(session.query, session.config,
                                                  session.hooks()), session.aperform)
    except ContractViolationError as error:
        if error.outcome is not None:
            session.record(error.outcome, started)
        raise
    session.record(outcome, started)
    return outcome, value


def _split(policy: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    budget = policy.pop("budget", None)
    return budget, policy


def run_query(query: Query[Any], engine: Any, **policy: Any) -> object:
    """``query.run``: one kernel call; its value, or the fallback's."""
    budget, options = _split(policy)
    session = _Session(query, engine, budget, _settings(query, **options), for_run=True)
    _, value = _one_call(session)
    return value


async def arun_query(query: Query[Any], engine: Any, **policy: Any) -> object:
    budget, options = _split(policy)
    session = _Session(query, engine, budget, _settings(query, **options), for_run=True)
    _, value = await _one_acall(session)
    return value


def outcome_of(query: Query[Any], engine: Any, **policy: Any) -> Outcome:
    """One kernel call of ``query`` and its ``Outcome`` (attempts, violations, usage),
    whether it succeeded or not: no fallback, nothing raised for a failed contract."""
    budget, options = _split(policy)
    session = _Session(query, engine, budget, _settings(query, **options), for_run=False)
    try:
        outcome, _ = _one_call(session)
    except ContractViolationError as error:  # a quick_enforce predicate
        if error.outcome is None:
            raise
        outcome = error.outcome
    return outcome


def few_shot(query: Query[T], engine: Any, *, params: Mapping[str, Any] | None = None,
             examples: Any = None, select_examples: Sequence[Selector] = (),
             mode: str | None = None, temperature: float | None = None,
             max_tokens: int | None = None, num_completions: int | str = 1,
             max_requests: int | None = None, iterative_mode: bool = False, tries: int = 3,
             budget: Any = None, near_miss: str | None = None,
             no_wrap_parse_errors: bool = False) -> Iterator[Solution[T]]:
    """Delphyne's few-shot policy on the kernel: a stream of accepted answers.

    The prompt is the system prompt, then each selected example (``examples``: a
    demonstration file or list, filtered by ``select_examples``; ``"auto"``: an
    answer found by the verifier's search, and a ``near_miss`` violating one named
    post-condition), then the query. ``tries`` bounds the answers the kernel
    examines for one solution (remedy); ``max_requests`` and ``budget`` (Delphyne's
    keys, a ``QueryBudget`` or a hoare ``Budget``) bound the stream.
    ``num_completions="auto"``: n samples per request or sequential repair, whichever
    this query's measured rates make likelier to succeed within the budget's token caps
    (``best_of_n``); each ``Solution`` says which (``strategy``).
    ``no_wrap_parse_errors=True``: a ``WrappedParseError`` the parser returns is a
    parse error of that answer (fed back, retried), not a value of the stream.
    """
    session = _Session(query, engine, budget, _settings(
        query, params=params, examples=examples, select_examples=select_examples, mode=mode,
        temperature=temperature, max_tokens=max_tokens, num_completions=num_completions,
        max_requests=max_requests, iterative_mode=iterative_mode, tries=tries,
        near_miss=near_miss, no_wrap_parse_errors=no_wrap_parse_errors), for_run=False)
    return _stream(session)


def _stream(session: _Session) -> Iterator[Solution[Any]]:
    while True:
        try:
            outcome, _ = _one_call(session)
        except ContractViolationError as error:  # a quick_enforce predicate
            if error.outcome is None:
                raise
            outcome = error.outcome
        if outcome.success:
            yield _solution(session, outcome)
            continue
        if session.exhausted or session.fatal or _refused(outcome):
            return


def _solution(session: _Session, outcome: Outcome) -> Solution[Any]:
    accepted = next((a.raw for a in reversed(outcome.attempts)
                     if a.phase is Phase.POST and not a.violations), None)
    session.last_accepted = accepted if isinstance(accepted, Answer) else None
    attempts = sum(1 for a in outcome.attempts if a.phase is Phase.POST)
    return Solution(outcome.result, session.spent(), attempts, outcome, session.strategy)


def _token_caps(budget: Any) -> tuple[float | None, float | None] | None:
    """(input, output) token caps of a budget (None: no such cap); None: no token cap."""
    if isinstance(budget, Budget):
        caps = (budget.max_input_tokens, budget.max_output_tokens)
    elif isinstance(budget, Spend):
        caps = (budget.budget.max_input_tokens, budget.budget.max_output_tokens)
    elif isinstance(budget, Mapping):
        caps = (budget.get("input_tokens"), budget.get("output_tokens"))
    else:
        return None
    return None if caps == (None, None) else caps


def _refused(outcome: Outcome) -> bool:
    """The input itself fails (a pre-condition, or no answer can pass): asking again
    cannot help."""
    return any(v.phase in (Phase.INPUT, Phase.PRE, Phase.PREFLIGHT)
               for v in outcome.violations)


async def afew_shot(query: Query[T], engine: Any, **policy: Any
                    ) -> AsyncIterator[Solution[T]]:
    """``few_shot`` for event loops (the engine's ``acomplete``)."""
    budget, options = _split(dict(policy))
    session = _Session(query, engine, budget, _settings(query, **options), for_run=False)
    while True:
        try:
            outcome, _ = await _one_acall(session)
        except ContractViolationError as error:
            if error.outcome is None:
                raise
            outcome = error.outcome
        if outcome.success:
            yield _solution(session, outcome)
            continue
        if session.exhausted or session.fatal or _refused(outcome):
            return


