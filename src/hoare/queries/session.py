"""One policy run of a query (``Session``): it renders the prompt once, keeps the
conversation and the samples of the last request, sends each ``Generate`` effect of the
kernel through the (metered) engine, and supplies the kernel's hooks: the input check,
the parser as the output check, the fallback, the z3 pre-flight. Its requests go out
through the one driver (``contracts.driver.Front.perform``/``aperform``). It also
counts what the run spent and records each call for its query class and in the stats
store.

The policies (``policies.py``: ``query.run``, ``few_shot``, ``outcome_of``) and
``classify`` each drive one session through the kernel; they differ only in how many
calls they make and what they return.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Literal

from hoare import telemetry
from hoare.contracts import configuration
from hoare.contracts.driver import Front, Send, spent_by, with_spent
from hoare.engines.base import Message, Options, Request, Response, Usage
from hoare.errors import FatalEngineError, RetryableEngineError, UsageError
from hoare.kernel import (
    ContractConfig,
    Generate,
    Hooks,
    Outcome,
    Policy,
    PreflightResult,
    Reply,
    RetryPolicy,
    Violation,
)
from hoare.queries.answers import Answer, WrappedParseError
from hoare.queries.best_of_n import choose, stored_rates
from hoare.queries.messages import assistant_messages, instance_messages, value_schema
from hoare.queries.parsers import Parser, tool_spec
from hoare.queries.query import Query, QueryRuntime, fallback_of, init_fields, runtime_of
from hoare.queries.settings import RequestsSpent, Settings, metered, token_caps
from hoare.queries.templates import render
from hoare.stats.records import RecordedAs, call_record

if TYPE_CHECKING:
    from hoare.declaration.models import TypeSpec

__all__ = ["Session"]

logger = logging.getLogger("hoare.queries")


class Session(Front):
    """One policy run: the prompt, the conversation, the pending samples, the counters.
    Used by one thread or task at a time (a generator's consumer)."""

    def __init__(self, query: Query[Any], engine: Any, budget: Any, settings: Settings,
                 *, for_run: bool) -> None:
        if engine is None or not callable(getattr(engine, "complete", None)):
            raise UsageError(f"{type(query).__name__}.run needs an engine (an object with "
                             f"complete/acomplete, e.g. hoare.queries.standard_model(...) or "
                             f"DummyModel(...)), got {engine!r}")
        self.runtime: QueryRuntime = runtime_of(type(query))
        try:  # prompts show the fields as validated (the kernel checks them again)
            query = self.runtime.validate(query)
            valid = True
        except Exception:
            valid = False  # the kernel reports the input's type violation, sends nothing
        self.query = query
        self.settings = settings
        self.parser: Parser[Any] = query.parser_for(settings.mode)
        self.engine, self.meter = metered(engine, budget)
        self.model = engine
        self.for_run = for_run
        self.history: list[Message] = []
        self.pending: deque[Answer] = deque()
        self.last_accepted: Answer | None = None
        self.requests = self.samples = 0
        self.usage = Usage()
        # what the engine's errors cost (a refusal, a filtered answer) since the last
        # kernel call was recorded: the kernel sums answers only (``record`` adds it)
        self.error_usage: Usage | None = None
        self.exhausted = self.fatal = False
        self.hint = ""  # an extra line of the format (classify: the possible answers)
        self._base: tuple[Message, ...] | None = None
        self.schema = self.parser.structured.schema if self.parser.structured else None
        self.tools = tuple(tool_spec(t) for t in self.parser.tools)
        self.tool_choice: Literal["required"] | None = \
            "required" if self.tools and self.parser.force_tool else None
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
        caps = token_caps(budget)
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
                lines.append(f"The JSON schema of {where}:\n{value_schema(shown)}")
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
            messages.extend(instance_messages(instance, self._context(number)))
            messages.extend(assistant_messages(example.text(), example.calls(),
                                       "(recorded in the example)"))
        messages.extend(instance_messages(self.query, self._context(None)))
        return tuple(messages)

    def _repair(self, feedback: tuple[Violation, ...]) -> str:
        error = "\n".join(f"- {v.message}" for v in feedback)
        return render(self.query, "repair", {**self._context(None), "error": error,
                                             "errors": [v.message for v in feedback]})

    def _messages(self, effect: Generate) -> tuple[Message, ...]:
        previous = effect.previous if isinstance(effect.previous, Answer) else None
        if not self.settings.iterative:
            if previous is not None and effect.feedback:
                return (*self.base, *assistant_messages(previous.text, previous.tool_calls),
                        Message("user", self._repair(effect.feedback)))
            return self.base
        if previous is not None and effect.feedback:
            self.history += [*assistant_messages(previous.text, previous.tool_calls),
                             Message("user", self._repair(effect.feedback))]
        elif self.last_accepted is not None:
            self.history += [*assistant_messages(self.last_accepted.text,
                                         self.last_accepted.tool_calls),
                             Message("user", render(self.query, "more", self._context(None)))]
        self.last_accepted = None
        return (*self.base, *self.history)

    # -- the one driver's steps (``contracts.driver.Front``) ------------------------------
    def step(self, effect: Generate | Send) -> object:
        if not isinstance(effect, Generate):
            raise TypeError(f"a query performs Generate, not {type(effect).__name__}")
        return self.next_step(effect)

    def next_step(self, effect: Generate) -> Reply | Request:
        """A pending sample of the last request, else the request to send."""
        if self.pending:
            return Reply(self.pending.popleft())
        limit = self.settings.max_requests
        if limit is not None and self.requests >= limit:
            self.exhausted = True
            raise RequestsSpent(f"max_requests={limit} requests were sent")
        try:
            options = Options(temperature=self.settings.temperature,
                              max_tokens=self.settings.max_tokens,
                              n=self.settings.num_completions)
        except Exception as error:  # not the engine's: no retry or later call can succeed
            self.fatal = True
            raise FatalEngineError(f"the request cannot be built: {error}") from error
        return Request(messages=self._messages(effect), schema=self.schema,
                       schema_name=self.runtime.output.model.__name__, options=options,
                       input=self.query, feedback=tuple(v.message for v in effect.feedback),
                       attempt=effect.attempt, contract=self.runtime.description.name,
                       tools=self.tools, tool_choice=self.tool_choice)

    def received(self, response: object, request: Request) -> Reply:
        """The first sample of the answer; the others wait in ``pending``."""
        if not isinstance(response, Response):
            raise RetryableEngineError(f"the engine answered a {type(response).__name__}, "
                                       f"not a Response")
        self.requests += 1
        self.usage = self.usage + response.usage
        if not response.texts and not response.tool_calls:  # paid for: counted as an error's
            previous = self.error_usage
            self.error_usage = response.usage if previous is None \
                else previous + response.usage
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

    def failed(self, error: Exception) -> None:
        if isinstance(error, FatalEngineError):
            self.fatal = True
        spent = spent_by(error)
        if spent is not None:  # a paid request: counted as an answer's is
            self.requests += spent.requests
            self.usage = self.usage + spent
            previous = self.error_usage
            self.error_usage = spent if previous is None else previous + spent

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
                spent = self.error_usage  # the fallback sees what the call cost
                return self.fallback(outcome if spent is None else with_spent(outcome, spent))
            return _FAILED

        bounded = answers_bounded(self.parser, self.runtime.output)
        return Hooks(check_input, check_output, forward, self.runtime.pre, self.runtime.post,
                     preflight=_preflight(self.runtime) if bounded else None)

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

    def record(self, outcome: Outcome, started_ns: int, span: tuple[Any, Any] | None = None,
               raised: BaseException | None = None) -> Outcome:
        """Count the call for this query class (P_succ) and, with the one record that
        ``call_record`` builds, in the stats store and on the call's span (when either
        is there); never raises. Returns the outcome with what the engine's errors cost
        added to its usage (``raised`` then carries that outcome)."""
        spent, self.error_usage = self.error_usage, None
        if spent is not None:
            outcome = with_spent(outcome, spent, raised, outcome.exception)
        self.runtime.tracker.record(outcome)
        self.runtime.rates.record(outcome)
        # configuration returns the configured StatsStore (typed object there: it is
        # imported only once a store is configured)
        store = configuration.stats_store()
        record = None
        if store is not None or span is not None:
            try:
                recorded_as = RecordedAs.of(self.runtime.description.name,
                                            _definition_hash(self.runtime), self.model)
                record = call_record(
                    "query", recorded_as, configuration.label(),
                    time.perf_counter_ns() - started_ns, outcome,
                    cost=self.spent().get("price"))
                if store is not None:
                    store.record(record)
            except Exception:  # recording never fails a query
                logging.getLogger("hoare.stats").debug("query not recorded", exc_info=True)
        if span is not None:
            telemetry.finish_call(span, record, raised, self.model)
        return outcome


_FAILED = object()


def _definition_hash(runtime: QueryRuntime) -> str:
    """A short hash of the query class's source (its name when the source cannot be
    read), so a changed definition is told apart; read once per class (the source is
    read from disk: milliseconds), kept on its runtime."""
    found = runtime.__dict__.get("definition_hash")
    if isinstance(found, str):
        return found
    try:
        text = inspect.getsource(runtime.cls)
    except (OSError, TypeError):
        text = runtime.description.name
    found = runtime.__dict__["definition_hash"] = hashlib.sha256(
        text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return found


def answers_bounded(parser: Parser[Any], output: TypeSpec) -> bool:
    """Is every value ``parser`` returns a value of ``output`` as validated from JSON
    text, the domain the pre-flight models? A user's parse function, ``map`` or YAML's
    Python objects may return values outside it: a refusal there could be false."""
    answers = parser.answers
    if answers is None:
        return False
    try:
        return answers is output or bool(answers.annotation == output.annotation)
    except Exception:  # an annotation whose == raises: not known to be the same
        return False


def _preflight(runtime: QueryRuntime) -> Any:
    """The z3 pre-flight of the query's post-conditions for this instance (None when it
    cannot be built): a query no answer can satisfy costs no request."""
    checker = runtime.__dict__.get("_preflight", False)
    if checker is False:
        checker = None
        if runtime.description.post:
            try:
                from hoare.verifier.runtime import Preflight

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
        fields = init_fields(used)
        result: PreflightResult = checker.check(None, model.model_construct(**fields))
        return result
    # on, off or shadow as for a contract: configure(preflight=...), else [tool.hoare]
    return configuration.preflight_hook(None, runtime.description.name, check)


def _auto_examples(session: Session) -> list[str]:
    from hoare.queries.auto_examples import auto_example_lines

    return auto_example_lines(session.query, session.runtime, session.settings.near_miss)
