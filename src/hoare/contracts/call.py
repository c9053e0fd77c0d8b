"""One contract call (``Call``): one call of one instance, with its extra kwargs,
engine and budget meter. The kernel's ``run_sync``/``run_async`` hand each effect to
the one driver (``contracts.driver.Front.perform``/``aperform``); a ``Call`` supplies
its steps: the request (prompt, schema, feedback, early stop), varied when a re-send
would repeat an earlier one unchanged, and the ``Reply`` the kernel gets."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from hoare.contracts.binding import bind_predicate
from hoare.contracts.current import current_forward
from hoare.contracts.driver import Front, Send, spent_by
from hoare.contracts.logs import log_answer, log_request
from hoare.contracts.prompts import render_messages
from hoare.contracts.runtime import call_secrets
from hoare.declaration.description import PredicateSource
from hoare.declaration.models import (
    format_validation_error,
    redact,
    safe_repr,
    secret_values,
)
from hoare.engines.base import (
    ONE_REQUEST,
    Request,
    Response,
    Usage,
    innermost,
    rendered_request,
)
from hoare.engines.budget import Budget, BudgetedEngine, Spend
from hoare.errors import (
    ContractDefinitionError,
    IdenticalResend,
    InvalidValue,
    SecretRedacted,
    safe_text,
)
from hoare.kernel import Generate, Hooks, Outcome, Phase, Reply

if TYPE_CHECKING:
    from hoare.contracts.base import Contract
    from hoare.contracts.binding import Bound
    from hoare.contracts.latest import Slot
    from hoare.contracts.runtime import Runtime

logger = logging.getLogger("hoare")

_PRE = Phase.PRE
"""A module constant: on CPython 3.11 ``Phase.PRE`` goes through ``EnumType.__getattr__``'s
slow attribute path (about 0.1 µs), and ``request`` runs for every engine call."""

RESEND_TEMPERATURE = 0.7
"""The least temperature of a re-send that would otherwise repeat a request unchanged."""


class Call(Front):
    """One call of one instance: its extra kwargs, its engine and budget meter, its
    effects, and (once known) its outcome. The instance's context variable points at
    the latest ``Call`` of the current thread or task."""

    __slots__ = ("engine", "error_usage", "forward_error", "input_secrets", "instance",
                 "last_error", "outcome", "previous",
                 "rest", "running", "runtime", "sent", "slot", "spend", "started_ns",
                 "telemetry", "varied")

    def __init__(self, instance: Contract[Any, Any], runtime: Runtime,
                 rest: dict[str, Any]) -> None:
        self.instance = instance
        self.runtime = runtime
        self.rest = rest
        self.outcome: Outcome | None = None
        self.forward_error: BaseException | None = None  # what the user's forward raised
        # the latest exception a predicate, act or the engine raised in this call: what
        # contract_exception carries as .original / __cause__ (SymbolicAI code reads it)
        self.last_error: BaseException | None = None
        # what the engine's errors said their requests cost (a refusal, a filtered
        # answer): the kernel sums answers only; ``finish`` adds it to the outcome
        self.error_usage: Usage | None = None
        self.running = True
        self.started_ns = 0  # perf_counter_ns() when the call began (``begin``)
        # the secrets of the caller's own input object (``begin``): the input check
        # returns a validated copy, which may have dropped some (a subclass's field)
        self.input_secrets: frozenset[str] = frozenset()
        self.telemetry: tuple[Any, Any] | None = None  # its span, when instrumented
        self.sent: set[tuple[object, ...]] | None = None  # what its requests quoted
        self.varied = False  # the current request was varied (``vary``)
        self.previous: Call | None = None  # the call of this instance this one is inside
        self.slot: Slot | None = None  # what the caller's context holds (``Latest``)
        state = instance.__dict__
        engine = state.get("_hoare_engine_value")
        if engine is None:
            engine = instance._hoare_engine()  # the configured default
        budget = state.get("_hoare_budget_value")
        self.spend: Spend | None = None
        if budget is not None:  # one meter per call, or the caller's shared meter
            self.spend = budget.call_meter() if isinstance(budget, Budget) else budget
            engine = BudgetedEngine(engine, self.spend)
        self.engine = engine

    def hooks(self, bound: Bound) -> Hooks:
        runtime = self.runtime
        return Hooks(
            runtime.check_input, runtime.check_output, current_forward, bound.pre, bound.post,
            self.act if runtime.description.act is not None else None, bound.preflight,
            runtime.check_result, bound.handler)

    def act(self, accepted: object) -> object:
        description = self.runtime.description
        assert description.act is not None and description.act_output is not None
        try:
            value = description.act(self.instance, accepted, **self.rest)
        except Exception as error:
            secrets = secret_values(accepted)
            text = safe_text(error) if secrets else ""
            if secrets and redact(text, secrets) != text:
                self.last_error = SecretRedacted(type(error).__name__, redact(text, secrets))
                raise self.last_error from None
            self.last_error = error
            raise
        if not description.act_output.is_instance(value):
            raise TypeError(f"{description.cls.__qualname__}.act must return "
                            f"{description.act_output.name}, got {type(value).__name__}")
        try:  # validated again, as a contract's input is: what the verifier assumes
            return description.act_output.validate(value)
        except ValidationError as error:
            raise InvalidValue(f"{description.cls.__qualname__}.act returned a value that "
                               f"is not a valid {description.act_output.name}: "
                               f"{format_validation_error(error)}") from None

    def request(self, effect: Generate) -> Request:
        runtime, instance = self.runtime, self.instance
        description = runtime.description
        repair = effect.phase is _PRE
        task: Literal["generate", "repair_input"] = "repair_input" if repair else "generate"
        spec_in = description.input if repair else runtime.used_input
        target = description.input if repair else description.output

        flat = runtime.flat_input if repair else runtime.flat_used_input
        feedback = effect.feedback
        # the input's secrets (and the caller's own input's), for what quotes them: the
        # feedback, and the messages when rendered (lazily: an engine that never reads
        # them never needs them)
        secrets = self.quoted_secrets(effect.input, flat) if feedback else None
        if feedback and (secrets or description.feedback == "messages"):
            feedback = tuple(runtime.shown(v, secrets or frozenset()) for v in feedback)

        def render() -> tuple[Any, ...]:
            secrets_in = secrets if secrets is not None else \
                self.quoted_secrets(effect.input, flat)
            system = runtime.system(prompt_of(instance), task)
            messages = render_messages(system, effect.phase, spec_in.dump_json(effect.input),
                                       spec_in.name, feedback, effect.previous,
                                       runtime.config.accumulate_errors, runtime.feedback_chars)
            if secrets_in:  # e.g. a secret echoed back in the previous answer
                messages = tuple(replace(m, content=redact(m.content, secrets_in))
                                 for m in messages)
            return messages

        schema = target.schema if repair else runtime.decoding_schema()
        watch = None
        if runtime.stream and not repair:
            plan = runtime.stop_plan()
            if plan is not None:
                from hoare.contracts.early_stop import EarlyStop

                watch = EarlyStop(plan, self._early_check(effect.input))
        return rendered_request(
            render, schema, target.name if repair else runtime.output_name,
            instance.__dict__.get("_hoare_options_value") or runtime.options, task,
            effect.input,
            tuple(v.message for v in feedback) if feedback else (), effect.attempt,
            description.name, watch)

    def quoted_secrets(self, value: object, flat: type | None) -> frozenset[str]:
        """The secrets a request quoting ``value`` must redact: ``value``'s and the
        caller's own input's (no union when the latter has none)."""
        secrets = call_secrets(value, flat)
        return secrets | self.input_secrets if self.input_secrets else secrets

    def _early_check(self, used: object) -> Callable[[PredicateSource, object], bool]:
        """A post-condition called on a streamed answer's complete fields, as the kernel
        calls it (spec §3.2: it fails by raising or returning a falsy non-None value)."""
        instance = self.instance

        def passes(source: PredicateSource, partial: object) -> bool:
            check = bind_predicate(source, instance)
            try:
                verdict = check.check(partial, used) if check.uses_context \
                    else check.check(partial)
            except Exception:
                return False
            return verdict is None or bool(verdict)
        return passes

    def repeated(self, effect: Generate) -> bool:
        """Would this request repeat one this call already sent, byte for byte? Within a
        call the prompt and input are fixed, so a request is decided by its stage, the
        errors it quotes and the answer it quotes: a model that repeats its answer gets
        the same request again, and at temperature 0 the same answer (a fixed point that
        costs a call per try and fixes nothing)."""
        if effect.attempt == 1:  # quotes nothing: no later attempt can repeat it
            return False
        previous = effect.previous
        shown = previous.texts if isinstance(previous, Response) else safe_repr(previous)
        key = (effect.phase, tuple(v.message for v in effect.feedback), shown)
        sent = self.sent
        if sent is None:
            self.sent = {key}
            return False
        if key in sent:
            return True
        sent.add(key)
        return False

    def vary(self, request: Request, effect: Generate) -> Request:
        """The re-send changed (``resend="vary"``): another seed, and a temperature of at
        least ``RESEND_TEMPERATURE`` (never above 1), so the answer can differ; or, with
        ``resend="stop"``, no re-send at all: the stage ends here, saying why."""
        if self.runtime.resend == "stop":
            raise IdenticalResend(
                f"attempt {effect.attempt} would resend an earlier request unchanged (the "
                f"model repeated its answer), and the same answer would come back: "
                f"stopped (@contract(resend='stop'))")
        options = request.options
        base = options.temperature
        if base is None:
            defaults = getattr(innermost(self.engine), "default_options", None)
            base = getattr(defaults, "temperature", None)
        temperature = None if base is None else min(1.0, max(base, RESEND_TEMPERATURE))
        seed = (options.seed or 0) + 7919 * effect.attempt
        logger.info("hoare: %s attempt %d would repeat an earlier request: sent with seed %d"
                    "%s", self.runtime.description.name, effect.attempt, seed,
                    "" if temperature is None else f" and temperature {temperature:g}")
        request.options = replace(options, seed=seed) if temperature is None \
            else replace(options, seed=seed, temperature=temperature)
        return request  # made for this attempt alone: changed in place

    # -- the one driver's steps (``Front.perform``/``aperform``) -------------------------
    def step(self, effect: Generate | Send) -> object:
        """The request for ``effect``, varied when it would repeat an earlier one."""
        if not isinstance(effect, Generate):
            raise TypeError(f"a contract call performs Generate, not {type(effect).__name__}")
        request = self.request(effect)
        if effect.attempt != 1 and self.repeated(effect):  # attempt 1 repeats nothing
            request = self.vary(request, effect)
            self.varied = True
        elif self.varied:
            self.varied = False
        description = self.runtime.description
        if description.verbose:
            log_request(description.name, request, effect)
        return request

    def received(self, response: object, request: Request) -> object:
        description = self.runtime.description
        if description.verbose:
            log_answer(description.name, response, request)
        if type(response) is Response and response.usage is ONE_REQUEST \
                and not self.varied and request.watch is None:  # the common reply
            return _reply((response, _ONE_REQUEST_USAGE))
        return self._reply(response, request)

    def failed(self, error: Exception) -> None:
        self.last_error = error
        spent = spent_by(error)
        if spent is not None:
            previous = self.error_usage
            self.error_usage = spent if previous is None else previous + spent

    def _reply(self, response: object, request: Request) -> Reply:
        """Any other reply than ``received``'s common one."""
        if not self.varied and request.watch is None:  # usage as the answer says
            return _reply((response, _usage(response)))
        usage = _usage(response)
        extra: dict[str, int] = {}
        if self.varied:  # counted in the outcome's usage: outcome.usage["varied_resends"]
            extra["varied_resends"] = 1
        if request.watch is not None and isinstance(response, Response):
            saved = self.runtime.tokens_saved(response, request)
            if response.stopped_early is not None:
                extra["stopped_early"] = 1
                extra["output_tokens_saved"] = saved
        return Reply(response, {**usage, **extra} if extra else usage)


_ONE_REQUEST_USAGE = MappingProxyType(ONE_REQUEST.as_dict())
_reply = Reply._make  # the namedtuple's own constructor from a pair, without __new__'s frame


def _usage(response: object) -> Mapping[str, int]:
    """The usage of an answer as the kernel sums it (the common case costs no dict). A
    malformed answer counts as one request; ``check_output`` then says what was wrong."""
    usage = response.usage if isinstance(response, Response) else None
    if usage is ONE_REQUEST or not isinstance(usage, Usage):
        return _ONE_REQUEST_USAGE
    return usage.as_dict()


def prompt_of(instance: object) -> str:
    prompt = getattr(instance, "prompt", None)
    if not isinstance(prompt, str):
        raise ContractDefinitionError(
            f"{type(instance).__qualname__}.prompt must be a string (a property or a class "
            f"attribute describing the task), got {safe_repr(prompt)[:200]}")
    return prompt
