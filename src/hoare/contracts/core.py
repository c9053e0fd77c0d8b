"""``@contract`` and ``Contract``: a class's ``forward`` becomes one kernel call.

The decorator reads the class once (``describe``) and prepares everything that
does not change between calls. A call binds its input, builds the kernel hooks
from the instance, and drives ``hoare.kernel.run_call`` with the instance's
engine. Per-call results (``contract_successful``, ``contract_result``, …) are
per thread and asyncio task: every one sees its own latest call, never another's.
The caller's context holds only an empty ``_Slot`` per instance; the state it
names lives in the instance (``_Latest``), so a context never keeps an instance,
its input or its output alive.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import copy
import inspect
import logging
import sys
import threading
import time
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar, overload

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from hoare import telemetry as _telemetry
from hoare.contracts import configuration
from hoare.contracts.prompts import DEFAULT_FEEDBACK_CHARS, LRUCache, render_messages, system_text
from hoare.declaration.description import ContractDescription, PredicateSource, describe
from hoare.declaration.models import (
    TypeSpec,
    format_validation_error,
    read_answer,
    redact,
    safe_repr,
    secret_values,
)
from hoare.engines.base import ONE_REQUEST, Engine, Options, Request, Response, Usage, innermost
from hoare.engines.budget import Budget, BudgetedEngine, Spend
from hoare.errors import (
    ContractCallError,
    ContractDefinitionError,
    IdenticalResend,
    InvalidValue,
    SecretRedacted,
    StoppedEarly,
    safe_text,
)
from hoare.kernel import (
    ContractConfig,
    ContractViolationError,
    Effect,
    Generate,
    Hooks,
    Outcome,
    Phase,
    Policy,
    Predicate,
    PreflightResult,
    Reply,
    RetryPolicy,
    Sleep,
    SuccessTracker,
    Violation,
    ViolationKind,
    run_async,
    run_call,
    run_sync,
)
from hoare.stats.perf import PerfStats

__all__ = ["Contract", "InvalidValue", "contract"]

logger = logging.getLogger("hoare")
C = TypeVar("C", bound=type)
In = TypeVar("In")  # a contract's input type, for static type checkers only
Out = TypeVar("Out")  # its output type


class _Runtime:
    """What a contract class needs at call time, prepared once per class."""

    def __init__(self, description: ContractDescription,
                 handler: Callable[[Outcome], object] | None, options: Options,
                 feedback_chars: int = DEFAULT_FEEDBACK_CHARS,
                 resend: Literal["vary", "stop"] = "vary", stream: bool = False) -> None:
        self.description = description
        self.stream = stream
        self._stop_plan: Any = None  # hoare.contracts.early_stop.Plan, built at the first stream
        self._stop_planned = False
        self._complete_answers = [0, 0]  # complete streamed answers, their output tokens
        self.config = description.config
        self.handler = handler
        self.options = options
        self.feedback_chars = feedback_chars
        self.resend = resend
        self.tracker = SuccessTracker()
        self.log_violation = partial(_log_violation, contract=description.name)
        # keyed by the prompt, which a property may change per call: bounded (LRU)
        self.systems: LRUCache[tuple[str, str], str] = LRUCache(configuration.cache_size())
        self.sources = {(Phase(p.phase), p.id): p for p in (*description.pre, *description.post)}
        self._preflight: Any = None
        self._decoding: dict[str, Any] | None = None
        self._decoding_lock = threading.Lock()
        self._enforced: dict[str, frozenset[str]] = {}
        self._preflight_ready = False
        self.preflight_choice: bool | str | None = None  # the decorator's; None: configured
        self._definition_hash: str | None = None
        # the call plan (decided once per class): the flat input models whose instances
        # may skip the secret walk (``_call_secrets``), whether an act phase runs
        self.flat_input = _flat_model(description.input)
        self.flat_used_input = _flat_model(description.used_input)
        self.has_act = description.act is not None

    def definition_hash(self) -> str:
        """A hash of the contract's definition (its class's source, else its shape), so
        that stored statistics of an edited contract are told apart."""
        found = self._definition_hash
        if found is None:
            import hashlib

            try:
                text = inspect.getsource(self.description.cls)
            except (OSError, TypeError):
                d = self.description
                text = repr((d.name, d.input.name, d.output.name,
                             [(p.id, p.message) for p in (*d.pre, *d.post)]))
            found = self._definition_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
        return found

    # -- hooks that do not depend on the instance -------------------------------------
    def check_input(self, raw: object) -> object:
        spec = self.description.input
        if isinstance(raw, Response):  # a pre-remedy answer: JSON text
            return _validate_answer(spec, raw)
        try:
            return spec.validate(raw)
        except ValidationError as error:
            raise InvalidValue(f"{_NOT_VALID}{spec.name}: "
                               f"{format_validation_error(error)}. Pass the contract input as "
                               f"type {spec.name} (or a value pydantic validates as it)") from None

    def check_output(self, raw: object, used: object) -> object:
        if not isinstance(raw, Response):
            raise InvalidValue(f"the engine returned {type(raw).__name__}, not a Response")
        if raw.stopped_early is not None:
            raise StoppedEarly(f"the answer was stopped early: {raw.stopped_early}")
        if self.stream and isinstance(raw.text, str) and self.stop_plan() is not None:
            from hoare.contracts.early_stop import repeated_top_level_key

            repeated = repeated_top_level_key(raw.text)
            if repeated is not None:  # early stop judged its first value (§8.10)
                raise InvalidValue(f"the answer gives the key {repeated!r} twice: give each "
                                   "field once")
        return _validate_answer(self.description.output, raw)

    def stop_plan(self) -> Any:
        """What early stopping checks for this contract (None: it cannot be sound)."""
        if not self._stop_planned:
            from hoare.contracts.early_stop import plan_for

            self._stop_plan, self._stop_planned = plan_for(self.description), True
        return self._stop_plan

    def tokens_saved(self, response: Response, request: Request) -> int:
        """An estimate of the output tokens a stopped stream did not read: the mean of
        this contract's complete streamed answers (else ``max_tokens``) minus those read."""
        with self._decoding_lock:
            count, tokens = self._complete_answers
            if response.stopped_early is None:
                self._complete_answers = [count + 1, tokens + response.usage.output_tokens]
                return 0
        typical = tokens / count if count else request.options.max_tokens
        return max(0, round((typical or 0) - response.usage.output_tokens))

    def check_result(self, value: object) -> None:
        spec = self.description.output
        if not spec.is_instance(value):
            raise TypeError(f"{self.description.cls.__qualname__}.forward must return "
                            f"{spec.name}, got {type(value).__name__}: "
                            f"{safe_repr(value)[:200]}")

    def decoding_schema(self) -> dict[str, Any] | None:
        """The schema generation requests carry (``@contract(decoding=...)``), compiled
        once: with ``"schema"``, the post-conditions that JSON Schema can say and z3
        proves implied are folded in; a contract whose posts are ignored, or that cannot
        be compiled (said once, at WARNING), gets its type's schema."""
        mode = self.description.decoding
        if mode == "none":
            return None
        if mode == "types" or self.config.policy is Policy.IGNORE \
                or not self.description.post:
            return self.description.output.schema
        found = self._decoding
        if found is None:
            with self._decoding_lock:
                found = self._decoding
                if found is None:
                    found = self._decoding = self._compile_decoding()
        return found

    def enforced(self, dialect: str) -> frozenset[str]:
        """The post-conditions the schema sent to ``dialect``'s decoder is proved to
        enforce (``hoare schema``), compiled once per dialect; none when it cannot be."""
        found = self._enforced.get(dialect)
        if found is None:
            with self._decoding_lock:
                found = self._enforced.get(dialect)
                if found is None:
                    try:
                        from hoare.verifier.runtime.decoding import compile_contract

                        found = frozenset(compile_contract(self.description, dialect).enforced)
                    except Exception:
                        found = frozenset()
                    self._enforced[dialect] = found
        return found

    def provider_faults(self, outcome: Outcome) -> int:
        """Failed post-conditions that the schema the provider decoded with enforces
        (a provider that did not honour its schema, not a model failure)."""
        if self.description.decoding != "schema":
            return 0
        count = 0
        for attempt in outcome.attempts:
            dialect = getattr(attempt.raw, "decoding", None)
            if attempt.phase is not Phase.POST or dialect is None:
                continue
            failed = [v.predicate for v in attempt.violations
                      if v.kind is ViolationKind.PREDICATE]
            if failed:
                enforced = self.enforced(dialect)
                faults = [name for name in failed if name in enforced]
                if faults:
                    REPEATED.warn(logger, self.description.name, "provider fault",
                                  "hoare: %s: the provider's answer fails %s, which the "
                                  "schema it decoded with (%s) enforces: a provider fault",
                                  self.description.name, ", ".join(map(str, faults)),
                                  dialect)
                count += len(faults)
        return count

    def _compile_decoding(self) -> dict[str, Any]:
        try:
            from hoare.verifier.runtime.decoding import compile_contract, has_candidates

            if not has_candidates(self.description):
                return self.description.output.schema
            return compile_contract(self.description, "json_schema").schema
        except Exception as error:  # never let the optimisation break a call
            logger.warning("hoare: %s: decoding='schema' could not fold the post-conditions "
                           "(%s); sending the output type's schema", self.description.name,
                           safe_text(error, 300))
            return self.description.output.schema

    def preflight_checker(self) -> Any:
        """The z3 pre-flight for this class, built on first use (None: not available)."""
        if not self._preflight_ready:
            checker = None
            if self.description.preflight and self.config.policy is not Policy.IGNORE:
                try:
                    from hoare.verifier.runtime.preflight import Preflight
                    checker = Preflight.for_description(self.description)
                except Exception as error:  # never let the optimisation break a call
                    logger.warning("hoare: pre-flight disabled for %s: %s",
                                   self.description.name, safe_text(error, 500))
            self._preflight, self._preflight_ready = checker, True
        return self._preflight

    def system(self, prompt: str, task: str) -> str:
        target = self.description.input if task == "repair_input" else self.description.output
        return self.systems.get_or_build((prompt, task), lambda: system_text(
            prompt, target, task, source=self.description.input))

    def shown(self, violation: Violation, secrets: frozenset[str]) -> Violation:
        """The violation as the model may see it: with ``feedback="messages"`` a raised
        predicate's text only when its author wrote it (a ``Pre``/``Post`` message or a
        literal ``raise`` text), else the predicate's message; secrets redacted."""
        message = violation.message
        if (self.description.feedback == "messages" and violation.error_type is not None
                and violation.kind is ViolationKind.PREDICATE):
            source = self.sources.get((violation.phase, violation.predicate or ""))
            if source is None:
                message = "a check failed"
            elif message not in source.author_texts:
                message = source.message
        if secrets:
            message = redact(message, secrets)
        return violation if message == violation.message else replace(violation,
                                                                       message=message)


_NO_SECRETS: frozenset[str] = frozenset()
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})
"""Exact types whose values are never, nor hold, a ``SecretStr``/``SecretBytes``, a
model or a container: what ``secret_values`` has nothing to look into."""


def _atomic_annotation(annotation: object) -> bool:
    """Is every value pydantic validates for ``annotation`` of an exact atomic type (str,
    int, float, bool, None, bytes), so that a field typed so can never hold a secret?
    Only the exact atomic types, ``Literal`` of atomic values and unions/``Annotated``
    of those: a model (its instance may be a subclass adding a ``SecretStr``), ``Any``,
    ``object``, any other class or a container is not."""
    if annotation is None or annotation in _ATOMIC:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return all(type(arg) in _ATOMIC for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _atomic_annotation(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return all(_atomic_annotation(arg) for arg in typing.get_args(annotation))
    return False


def _flat_model(spec: TypeSpec) -> type | None:
    """The input model whose instances may skip the per-call secret walk, decided once
    per class: every field typed atomic (``_atomic_annotation``), no validator that
    could return another type, no default or factory that is not atomic, no
    ``model_post_init``. None when a field could hold a secret by its type. The types
    alone are not trusted at run time (pydantic passes an instance of the model as is,
    ``model_construct`` or mutated): ``_call_secrets`` still checks the values' types."""
    try:
        model = spec.model
        if spec.wrapped or not isinstance(model, type) or not issubclass(model, BaseModel):
            return None
        decorators = model.__pydantic_decorators__
        if model.model_config.get("extra") == "allow":
            return None  # extra fields hold values of any type
        if decorators.validators or decorators.field_validators \
                or decorators.root_validators or decorators.model_validators \
                or model.__pydantic_post_init__ is not None:
            return None
        for field in model.model_fields.values():
            if not _atomic_annotation(field.annotation) or field.default_factory is not None \
                    or (field.default is not PydanticUndefined
                        and type(field.default) not in _ATOMIC) \
                    or any(not isinstance(item, (annotated_types.BaseMetadata, FieldInfo))
                           for item in field.metadata):
                return None
        return model
    except Exception:  # an unusual model: walk its values on every call
        return None


def _call_secrets(value: object, flat: type | None) -> frozenset[str]:
    """The secrets in a call's input (``secret_values``), without the walk when the
    value is an instance of exactly the class's flat input model and every value it
    holds is of an exact atomic type (what the walk would skip one by one)."""
    if flat is not None and type(value) is flat and isinstance(value, BaseModel) \
            and not value.__pydantic_extra__ \
            and _ATOMIC.issuperset(map(type, value.__dict__.values())):
        return _NO_SECRETS
    return secret_values(value)


def _validate_answer(spec: TypeSpec, response: Response) -> object:
    """Parse an engine answer (``read_answer``): the first JSON value in it that
    validates; ``finish_reason=length`` is said when the answer was cut off."""
    text = response.text
    if not isinstance(text, str):
        raise InvalidValue(f"the answer was {type(text).__name__}, not text: reply with a "
                           "JSON value")
    return read_answer(spec, text, response.finish_reasons[0] if response.finish_reasons
                       else None)


def _predicate(source: PredicateSource, instance: object) -> Predicate:
    """A kernel predicate calling the user's function: a method gets the instance
    bound first; a condition without an input parameter gets no context."""
    fn = partial(source.fn, instance) if source.is_method else source.fn
    return Predicate(source.id, _synchronous(fn, source.id, 2 if source.takes_input else 1),
                     source.message, source.family, source.policy, source.takes_input)


def _synchronous(fn: Callable[..., object], name: str, arity: int) -> Callable[..., object]:
    """``fn`` whose awaitable verdicts fail instead of counting as true: an ``async def``
    predicate is refused at decoration, but a plain function may still return a
    coroutine (a lambda calling an async function). One closure per arity: this runs
    for every predicate of every call."""

    if arity == 1:
        def check1(value: object) -> object:
            try:
                verdict = fn(value)
            except Exception as error:
                shown = _raised(error, (value,))
                if shown is error:
                    raise
                raise shown from None
            if verdict is True or verdict is False or verdict is None:
                return verdict
            return _verdict(verdict, name)
        return check1

    def check2(value: object, context: object) -> object:
        try:
            verdict = fn(value, context)
        except Exception as error:
            shown = _raised(error, (value, context))
            if shown is error:
                raise
            raise shown from None
        if verdict is True or verdict is False or verdict is None:
            return verdict
        return _verdict(verdict, name)
    return check2


def _raised(error: Exception, args: tuple[object, ...]) -> Exception:
    """What a predicate's exception becomes: recorded as the call's latest error (what
    ``contract_exception`` carries), its text redacted of the call's secrets."""
    shown: Exception = error
    secrets = secret_values(*args)
    if secrets:
        text = safe_text(error)
        if redact(text, secrets) != text:
            shown = SecretRedacted(type(error).__name__, redact(text, secrets))
    current = _CURRENT_CALL.get(None)
    if current is not None:
        current.last_error = shown  # never the unredacted original
    return shown


def _verdict(verdict: object, name: str) -> object:
    if inspect.isawaitable(verdict):
        close = getattr(verdict, "close", None)
        if callable(close):
            close()  # never awaited: close it so Python does not warn later
        raise TypeError(f"predicate {name} returned a {type(verdict).__name__}, not a "
                        f"truth value: predicates run synchronously (plain def)")
    return verdict


class _Bound:
    """Hooks of one instance (predicates see ``self``), built on its first call."""

    __slots__ = ("handler", "hooks", "post", "pre", "preflight", "recorded_as")

    def __init__(self, instance: Contract, runtime: _Runtime) -> None:
        description = runtime.description
        self.pre = tuple(_predicate(p, instance) for p in description.pre)
        self.post = tuple(_predicate(p, instance) for p in description.post)
        checker = runtime.preflight_checker()
        self.preflight: Callable[[object], PreflightResult] | None = None
        if checker is not None:  # on, off or shadow: decorator, configure, [tool.hoare]
            self.preflight = configuration.preflight_hook(
                runtime.preflight_choice, description.name,
                lambda used: checker.check(instance, used))
        method = getattr(instance, "on_violation", None)
        self.handler = runtime.handler or method or runtime.log_violation
        self.hooks: Hooks | None = None  # the hooks of a call without extra kwargs
        # (engine, name, definition hash, engine class, model, family messages) of its
        # stats records
        self.recorded_as: tuple[Any, str, str, str, str | None,
                                tuple[tuple[str, str], ...]] | None = None


class RepeatedWarnings:
    """Collapses a warning that repeats (a contract failing on every item of a batch):
    per contract and kind of message, the first is logged, then at most one per
    ``window`` seconds, preceded by how many like it were held back since; what is
    still held back at exit is summed up then. Thread-safe; counts, never drops, calls
    (the statistics count every failure)."""

    def __init__(self, window: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 keys: int = 1024) -> None:
        self.window = window
        self._clock = clock
        self._keys = keys
        self._lock = threading.Lock()
        # (contract, kind) -> [when the latest shown one was logged, held back since]
        self._seen: dict[tuple[str, str], list[float]] = {}

    def warn(self, log: logging.Logger, contract: str, kind: str, text: str,
             *args: object) -> None:
        """Log ``text % args`` at WARNING unless one like it was logged less than a
        window ago (then count it)."""
        key = (contract, kind)
        now = self._clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.window:
                entry[1] += 1
                return
            held, since = (0, now) if entry is None else (int(entry[1]), entry[0])
            self._seen.pop(key, None)  # re-inserted last: the oldest key goes first
            self._seen[key] = [now, 0]
            evicted = next(iter(self._seen.items())) if len(self._seen) > self._keys \
                else None
            if evicted is not None:
                del self._seen[evicted[0]]
        if evicted is not None and evicted[1][1]:
            self._held_back(log, *evicted[0], int(evicted[1][1]), now - evicted[1][0])
        if held:
            self._held_back(log, contract, kind, held, now - since)
        log.warning(text, *args)

    def flush(self, log: logging.Logger) -> None:
        """Log what is held back (at exit, or when a caller wants the summary now)."""
        now = self._clock()
        with self._lock:
            held = [(key, int(entry[1]), now - entry[0]) for key, entry in self._seen.items()
                    if entry[1]]
            for key, _, _ in held:
                self._seen[key][1] = 0
        for key, count, elapsed in held:
            self._held_back(log, *key, count, elapsed)

    @staticmethod
    def _held_back(log: logging.Logger, contract: str, kind: str, count: int,
                   elapsed: float) -> None:
        span = "minute" if 0 <= elapsed <= 60 else f"{elapsed / 60:.0f} minutes"
        log.warning("hoare: %s: … and %d more like it in the last %s, not shown (%s)",
                    contract, count, span, kind)


REPEATED = RepeatedWarnings()
"""The library's per-call warnings, collapsed (``RepeatedWarnings``)."""
atexit.register(REPEATED.flush, logger)


def _log_violation(outcome: Outcome, contract: str = "") -> None:
    """The default violation handler: a warning per failed call, repeats collapsed
    (``REPEATED``). It never quotes values (inputs, answers, exception texts may hold
    personal data): a predicate's own message is shown, anything else only by kind
    (the outcome has the details)."""
    policy = outcome.policy.value
    # the same failure again is a repeat; a failure of another kind is shown
    kind = f"contract failed ({policy}): " + ", ".join(sorted({
        f"{v.phase.value}:{v.predicate or ''}:{v.kind.value}" for v in outcome.violations}))
    REPEATED.warn(logger, contract, kind,
                  "hoare: contract failed (%s)%s:\n%s", policy,
                  f" in {contract}" if contract else "",
                  "\n".join(_describe_without_values(v) for v in outcome.violations))


_NOT_VALID = "the input is not a valid "


def _describe_without_values(violation: Violation) -> str:
    where = violation.phase.value
    if violation.predicate is not None:
        where += f":{violation.predicate}"
    if violation.kind is ViolationKind.PREDICATE and violation.error_type is None:
        what = violation.message  # the author's message or source expression
    elif violation.phase is Phase.INPUT and violation.message.startswith(_NOT_VALID):
        # the library's own words up to the field details, which may quote the value
        what = (violation.message.split(": ", 1)[0] + "; pass the contract input as that "
                "type (the field details are in contract_exception)")
    elif violation.error_type is not None:
        what = f"raised {violation.error_type}"
    else:
        what = "rejected (details in the outcome)"
    return f"[{where} attempt {violation.attempt}] {violation.kind.value}: {what}"


class _Call:
    """One call of one instance: its extra kwargs, its engine and budget meter, its
    effects, and (once known) its outcome. The instance's context variable points at
    the latest ``_Call`` of the current thread or task."""

    __slots__ = ("engine", "forward_error", "instance", "last_error", "outcome", "previous",
                 "rest", "running", "runtime", "sent", "slot", "spend", "started_ns",
                 "telemetry")

    def __init__(self, instance: Contract, runtime: _Runtime, rest: dict[str, Any]) -> None:
        self.instance = instance
        self.runtime = runtime
        self.rest = rest
        self.outcome: Outcome | None = None
        self.forward_error: BaseException | None = None  # what the user's forward raised
        # the latest exception a predicate, act or the engine raised in this call: what
        # contract_exception carries as .original / __cause__ (SymbolicAI code reads it)
        self.last_error: BaseException | None = None
        self.running = True
        self.started_ns = 0  # perf_counter_ns() when the call began (``_begin``)
        self.telemetry: tuple[Any, Any] | None = None  # its span, when instrumented
        self.sent: set[tuple[object, ...]] | None = None  # what its requests quoted
        self.previous: _Call | None = None  # the call of this instance this one is inside
        self.slot: _Slot | None = None  # what the caller's context holds (``_Latest``)
        engine = instance._hoare_engine()
        budget = instance.__dict__.get("_hoare_budget_value")
        self.spend: Spend | None = None
        if budget is not None:  # one meter per call, or the caller's shared meter
            self.spend = budget.meter() if isinstance(budget, Budget) else budget
            engine = BudgetedEngine(engine, self.spend)
        self.engine = engine

    def hooks(self, bound: _Bound) -> Hooks:
        runtime = self.runtime
        return Hooks(
            runtime.check_input, runtime.check_output, self.forward, bound.pre, bound.post,
            self.act if runtime.description.act is not None else None, bound.preflight,
            runtime.check_result, bound.handler)

    def forward(self, used: object, outcome: Outcome) -> object:
        self.outcome = outcome
        try:
            return self.runtime.description.forward(self.instance, used, **self.rest)
        except BaseException as error:  # remembered so the call is recorded as failed
            self.forward_error = error
            raise

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
        return value

    def request(self, effect: Generate) -> Request:
        runtime, instance = self.runtime, self.instance
        description = runtime.description
        repair = effect.phase is Phase.PRE
        task: Literal["generate", "repair_input"] = "repair_input" if repair else "generate"
        spec_in = description.input if repair else description.used_input
        target = description.input if repair else description.output

        secrets = _call_secrets(effect.input,
                                runtime.flat_input if repair else runtime.flat_used_input)
        feedback = effect.feedback
        if feedback and (secrets or description.feedback == "messages"):
            feedback = tuple(runtime.shown(v, secrets) for v in feedback)

        def render() -> tuple[Any, ...]:
            system = runtime.system(_prompt_of(instance), task)
            messages = render_messages(system, effect.phase, spec_in.dump_json(effect.input),
                                       spec_in.name, feedback, effect.previous,
                                       runtime.config.accumulate_errors, runtime.feedback_chars)
            if secrets:  # e.g. a secret echoed back in the previous answer
                messages = tuple(replace(m, content=redact(m.content, secrets))
                                 for m in messages)
            return messages

        schema = target.schema if repair else runtime.decoding_schema()
        watch = None
        if runtime.stream and not repair:
            plan = runtime.stop_plan()
            if plan is not None:
                from hoare.contracts.early_stop import EarlyStop

                watch = EarlyStop(plan, self._early_check(effect.input))
        return Request(render=render, schema=schema, schema_name=target.name,
                       options=instance._hoare_options(), task=task, input=effect.input,
                       feedback=tuple(v.message for v in feedback) if feedback else (),
                       attempt=effect.attempt, contract=description.name, watch=watch)

    def _early_check(self, used: object) -> Callable[[PredicateSource, object], bool]:
        """A post-condition called on a streamed answer's complete fields, as the kernel
        calls it (spec §3.2: it fails by raising or returning a falsy non-None value)."""
        instance = self.instance

        def passes(source: PredicateSource, partial: object) -> bool:
            check = _predicate(source, instance)
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
        request.options = replace(options, seed=seed, **(
            {} if temperature is None else {"temperature": temperature}))
        return request  # made for this attempt alone: changed in place

    def perform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            time.sleep(effect.seconds)
            return None
        request = self.request(effect)
        varied = self.repeated(effect)
        if varied:
            request = self.vary(request, effect)
        if self.runtime.description.verbose:
            _log_request(self.runtime, request, effect)
        span = None if self.telemetry is None else \
            _telemetry.start_engine(self.engine, effect.attempt)
        try:
            response = self.engine.complete(request)
        except Exception as error:
            self.last_error = error
            if span is not None:
                _telemetry.finish_engine(span, None, error)
            raise
        except BaseException as error:  # an interrupt or a cancellation: the span ends too
            if span is not None:
                _telemetry.finish_engine(span, None, error)
            raise
        if span is not None:
            _telemetry.finish_engine(span, response, None)
        if self.runtime.description.verbose:
            _log_answer(self.runtime, response, request)
        return self._reply(response, request, varied)

    async def aperform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        request = self.request(effect)
        varied = self.repeated(effect)
        if varied:
            request = self.vary(request, effect)
        if self.runtime.description.verbose:
            _log_request(self.runtime, request, effect)
        span = None if self.telemetry is None else \
            _telemetry.start_engine(self.engine, effect.attempt)
        try:
            response = await self.engine.acomplete(request)
        except Exception as error:
            self.last_error = error
            if span is not None:
                _telemetry.finish_engine(span, None, error)
            raise
        except BaseException as error:  # an interrupt or a cancellation: the span ends too
            if span is not None:
                _telemetry.finish_engine(span, None, error)
            raise
        if span is not None:
            _telemetry.finish_engine(span, response, None)
        if self.runtime.description.verbose:
            _log_answer(self.runtime, response, request)
        return self._reply(response, request, varied)


    def _reply(self, response: Response, request: Request, varied: bool) -> Reply:
        usage = _usage(response)
        extra: dict[str, int] = {}
        if varied:  # counted in the outcome's usage: outcome.usage["varied_resends"]
            extra["varied_resends"] = 1
        if request.watch is not None and isinstance(response, Response):
            saved = self.runtime.tokens_saved(response, request)
            if response.stopped_early is not None:
                extra["stopped_early"] = 1
                extra["output_tokens_saved"] = saved
        return Reply(response, {**usage, **extra} if extra else usage)


_ONE_REQUEST_USAGE = MappingProxyType(ONE_REQUEST.as_dict())


def _usage(response: Response) -> Mapping[str, int]:
    """The usage of an answer as the kernel sums it (the common case costs no dict). A
    malformed answer counts as one request; ``check_output`` then says what was wrong."""
    usage = getattr(response, "usage", None)
    if usage is ONE_REQUEST or not isinstance(usage, Usage):
        return _ONE_REQUEST_USAGE
    return usage.as_dict()


def _prompt_of(instance: object) -> str:
    prompt = getattr(instance, "prompt", None)
    if not isinstance(prompt, str):
        raise ContractDefinitionError(
            f"{type(instance).__qualname__}.prompt must be a string (a property or a class "
            f"attribute describing the task), got {safe_repr(prompt)[:200]}")
    return prompt


def _check_prompt(cls: type) -> None:
    """A contract needs a ``prompt``: a string class attribute, a property (or other
    descriptor), or one its ``__init__`` sets (then checked at the first call)."""
    static = inspect.getattr_static(cls, "prompt", None)
    if static is None:
        if inspect.getattr_static(cls, "__init__") is Contract.__dict__["__init__"]:
            raise ContractDefinitionError(
                f"{cls.__qualname__} has no prompt: add `prompt = \"<the task>\"` (or a "
                f"prompt property, or set self.prompt in __init__)")
        return
    if not isinstance(static, str) and not hasattr(type(static), "__get__"):
        raise ContractDefinitionError(
            f"{cls.__qualname__}.prompt must be a string (or a property returning one), got "
            f"{type(static).__name__}")


_VERBOSE_LOCK = threading.Lock()


def _verbose_log() -> logging.Logger:
    """``hoare.verbose``: what ``verbose=True`` prints, at INFO, to stderr by default
    (as SymbolicAI's ``verbose`` does). A handler is added only when no handler would
    receive the records, so an application's own logging set-up is left alone."""
    log = logging.getLogger("hoare.verbose")
    if log.level == logging.NOTSET or log.level > logging.INFO:
        with _VERBOSE_LOCK:
            if not log.hasHandlers():
                handler = logging.StreamHandler()  # stderr
                handler.setFormatter(logging.Formatter("%(message)s"))
                log.addHandler(handler)
            if log.level == logging.NOTSET or log.level > logging.INFO:
                log.setLevel(logging.INFO)
    return log


def _log_request(runtime: _Runtime, request: Request, effect: Generate) -> None:
    log = _verbose_log()
    name = runtime.description.name
    log.info("hoare %s: %s attempt %d, feedback %s", name, request.task, effect.attempt,
             list(request.feedback))
    for message in request.messages:
        log.info("hoare %s: [%s] %s", name, message.role, message.content)


def _log_answer(runtime: _Runtime, response: Response, request: Request) -> None:
    """The engine's answer, with the call's ``SecretStr`` values redacted (a model may
    echo one it was never shown, or a rule-based engine may quote the raw input)."""
    text = str(getattr(response, "text", response))
    secrets = secret_values(getattr(request, "input", None))
    _verbose_log().info("hoare %s: [answer] %s", runtime.description.name,
                        redact(text, secrets) if secrets else text)


def _log_outcome(runtime: _Runtime, outcome: Outcome) -> None:
    log = _verbose_log()
    name = runtime.description.name
    for phase, nanos in outcome.timings_ns.items():
        log.info("hoare %s: phase %-9s %8.3f ms", name, phase, nanos / 1e6)
    if outcome.preflight is not None:
        log.info("hoare %s: pre-flight %s %s", name, outcome.preflight.verdict.value,
                 outcome.preflight.reason)
    log.info("hoare %s: %s after %d generation attempt(s), %d pre-remedies; %s", name,
             "success" if outcome.success else "FAILURE", outcome.generation_attempts,
             outcome.pre_remedies, outcome.summary())


class Contract(Generic[In, Out]):
    """Base class of contracted components. Subclass it, decorate with ``@contract``,
    and define ``prompt``, ``forward`` and optionally ``pre``, ``act``, ``post``.

    ``Contract[MyInput, MyOutput]`` tells a type checker the call's input and output
    types (``contract_result`` is then a ``MyOutput`` and ``forward`` may return it
    without a cast); plain ``Contract`` works as well, untyped. The types the
    contract validates always come from the annotations of ``forward``.

    ``engine`` (else the configured default) answers generation requests;
    keyword options (``model``, ``temperature``, ``max_tokens``, ``seed``,
    ``timeout``) are passed to it with every request.
    """

    __hoare__: ContractDescription
    __hoare_runtime__: _Runtime

    def __init__(self, *args: Any, engine: Engine | None = None,
                 budget: Budget | Spend | None = None, **options: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__qualname__}: unexpected positional arguments "
                            f"{args!r} for Contract.__init__ (it takes engine= and options)")
        try:
            self.__dict__["_hoare_options_value"] = Options(**options) if options else None
        except TypeError:
            valid = ", ".join(Options.__slots__)
            raise TypeError(f"{type(self).__qualname__}: unknown option(s) "
                            f"{sorted(options)}; valid options are {valid}") from None
        if engine is not None and not isinstance(engine, Engine):
            raise TypeError(f"engine must have complete() and acomplete(), got "
                            f"{safe_repr(engine)[:200]}")
        self.__dict__["_hoare_engine_value"] = engine
        if budget is not None and not isinstance(budget, (Budget, Spend)):
            raise TypeError(f"budget must be a hoare.engines.Budget (a cap per call) or a "
                            f"Spend meter (shared), got {safe_repr(budget)[:200]}")
        self.__dict__["_hoare_budget_value"] = budget

    # -- copies --------------------------------------------------------------------------
    def __getstate__(self) -> object:
        """What ``copy.copy``, ``copy.deepcopy`` and ``pickle`` take: the user's
        attributes and the configuration (engine, options, budget), not this instance's
        call state (latest calls, predicates bound to it, timings): a copy starts those
        afresh, so its predicates read the copy's own attributes."""
        state = super().__getstate__()
        if isinstance(state, tuple):  # (__dict__, slot values) of a subclass with slots
            return (_without_call_state(state[0]), *state[1:])
        return _without_call_state(state)

    def __deepcopy__(self, memo: dict[int, Any]) -> Contract:
        """A deep copy of the user's attributes that shares the engine and the budget: a
        client (its connection pool, its locks) and a budget meter are resources."""
        for name in ("_hoare_engine_value", "_hoare_budget_value"):
            shared = self.__dict__.get(name)
            if shared is not None:
                memo.setdefault(id(shared), shared)
        reduced = self.__reduce_ex__(4)
        if isinstance(reduced, str):  # a subclass's own __reduce_ex__ naming a global
            return self
        clone = reduced[0](*copy.deepcopy(reduced[1], memo))
        memo[id(self)] = clone
        state = reduced[2] if len(reduced) > 2 else None
        if state is not None:
            state = copy.deepcopy(state, memo)
            setstate = getattr(clone, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                slots: Mapping[str, Any] | None = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state:
                    clone.__dict__.update(state)
                for name, value in (slots or {}).items():
                    setattr(clone, name, value)
        return clone  # type: ignore[no-any-return]

    # -- configuration -----------------------------------------------------------------
    def _hoare_engine(self) -> Engine:
        engine = self.__dict__.get("_hoare_engine_value")
        return engine if engine is not None else configuration.default_engine()

    def _hoare_options(self) -> Options:
        return self.__dict__.get("_hoare_options_value") or self.__hoare_runtime__.options

    def _hoare_latest(self) -> _Latest:
        latest = self.__dict__.get("_hoare_latest_value")
        if latest is None:
            # another thread's may win: the loser gives its variable back when collected
            latest = self.__dict__.setdefault("_hoare_latest_value", _Latest())
        return latest  # type: ignore[no-any-return]

    def _hoare_bound(self) -> _Bound:
        bound = self.__dict__.get("_hoare_bound_value")
        if bound is None:
            bound = self.__dict__.setdefault("_hoare_bound_value",
                                             _Bound(self, self.__hoare_runtime__))
        return bound

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Out:
        return self.forward(*args, **kwargs)  # type: ignore[no-any-return]

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # replaced by @contract
        raise NotImplementedError(f"{type(self).__qualname__} must define forward()")

    async def acall(self, *args: Any, **kwargs: Any) -> Out:
        """The contracted call with asynchronous engine I/O and backoff sleeps."""
        call, run = _begin(self, args, kwargs)
        token = _CURRENT_CALL.set(call)
        try:
            outcome, value = await run_async(run, call.aperform)
        except BaseException as error:
            _finish(call, None, error)
            raise
        finally:
            _CURRENT_CALL.reset(token)
        _finish(call, outcome, None)
        return value

    # -- per-call results (this thread / task's latest call) ----------------------------
    @property
    def contract_outcome(self) -> Outcome | None:
        """The kernel ``Outcome`` of the latest call in this thread or task."""
        call = self._hoare_latest().get()
        return None if call is None else call.outcome

    @property
    def contract_successful(self) -> bool:
        outcome = self.contract_outcome
        return bool(outcome and outcome.success)

    @property
    def contract_result(self) -> Out:
        """The validated output of the latest call in this thread or task. ``None`` when
        that call failed (check ``contract_successful`` first, as ``forward`` does):
        typed as the output so that ``forward`` can return it without a cast."""
        outcome = self.contract_outcome
        return None if outcome is None else outcome.result  # type: ignore[return-value]

    @property
    def contract_exception(self) -> BaseException | None:
        outcome = self.contract_outcome
        return None if outcome is None else outcome.exception

    def contract_perf_stats(self) -> dict[str, Any]:
        """SymbolicAI's aggregate over every call of this instance: for
        ``input_validation``, ``act_execution``, ``output_validation``,
        ``forward_execution``, ``overhead`` and ``contract_execution`` (the whole
        call, which the others add up to; ``total_execution`` is the same), the
        ``count``, ``total``, ``mean``, ``std``, ``min``, ``max`` (seconds) and
        ``percentage`` of the total time. Under
        ``contract_outcome``, the latest call in this thread or task: time per phase
        (ms), engine calls, remedies, backoff time, token usage summed over attempts,
        and what the call's budget meter spent (requests, tokens, cost), if any."""
        return {**self._hoare_perf().as_dict(), "contract_outcome": self._latest_figures()}

    def _hoare_perf(self) -> PerfStats:
        stats = self.__dict__.get("_hoare_perf_value")
        if stats is None:
            stats = self.__dict__.setdefault("_hoare_perf_value", PerfStats())
        return stats  # type: ignore[no-any-return]

    def _latest_figures(self) -> dict[str, Any]:
        call = self._hoare_latest().get()
        outcome = None if call is None else call.outcome
        if call is None or outcome is None:
            return {}
        phases = {phase: nanos / 1e6 for phase, nanos in outcome.timings_ns.items()}
        return {
            "success": outcome.success,
            "phases_ms": phases,
            "total_ms": sum(phases.values()),
            "generation_attempts": outcome.generation_attempts,
            "pre_remedies": outcome.pre_remedies,
            "post_remedies": outcome.post_remedies,
            "backoff_s": sum(outcome.delays),
            "usage": dict(outcome.usage),
            "spend": None if call.spend is None else call.spend.spent(),
        }

    @classmethod
    def contract_stats(cls) -> dict[str, Any]:
        """Success statistics of this contract class over every call so far (spec §7)."""
        return _runtime_of(cls).tracker.snapshot().as_dict()


_CALL_STATE = frozenset({"_hoare_latest_value", "_hoare_bound_value", "_hoare_perf_value"})
"""An instance's own call state (``Contract.__getstate__``): never copied."""


def _without_call_state(state: object) -> object:
    if isinstance(state, dict) and not _CALL_STATE.isdisjoint(state):
        return {name: value for name, value in state.items() if name not in _CALL_STATE}
    return state


def _runtime_of(target: object) -> _Runtime:
    runtime = getattr(target, "__hoare_runtime__", None)
    if runtime is None:
        name = target.__qualname__ if isinstance(target, type) else type(target).__qualname__
        raise ContractDefinitionError(f"{name} is not decorated with @contract")
    return runtime  # type: ignore[no-any-return]


def _bind(description: ContractDescription, args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> tuple[object, dict[str, Any]]:
    """The canonical input: first positional argument, else the forward parameter's
    name, else ``input=``; every other keyword is forwarded untouched."""
    if args:
        if len(args) > 1:
            raise ContractCallError(f"{description.cls.__qualname__}: pass one positional argument "
                            f"(the contract input) and everything else by keyword")
        return args[0], kwargs
    rest = dict(kwargs)
    for name in (description.input_param, "input"):
        if name in rest:
            return rest.pop(name), rest
    raise ContractCallError(f"{description.cls.__qualname__}: missing the contract input; pass it "
                    f"as the first argument or as {description.input_param}=...")


def _begin(instance: Contract, args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> tuple[_Call, Any]:
    """Bind the input, make the call the instance's latest, and create the kernel call."""
    started = time.perf_counter_ns()
    runtime = _runtime_of(instance)
    raw, rest = _bind(runtime.description, args, kwargs)
    _prompt_of(instance)  # a missing prompt is a definition error, not an engine failure
    call = _Call(instance, runtime, rest)
    call.started_ns = started
    run = run_call(raw, runtime.config, _hooks_for(call, instance._hoare_bound()))
    latest = instance._hoare_latest()
    previous = latest.get()
    if isinstance(previous, _Call) and previous.running:  # a call nested in one of ours
        call.previous = previous
    if _telemetry.tracer is not None:  # made current: _finish always follows
        call.telemetry = _telemetry.start_call(runtime.description.name)
    slot = call.slot = _Slot(latest.forget)
    latest.calls[slot.key] = call
    latest.var.set(slot)  # last: nothing below can fail, so _finish always follows
    return call, run


def _hooks_for(call: _Call, bound: _Bound) -> Hooks:
    if call.rest:
        return call.hooks(bound)
    # Without extra kwargs the hooks differ between calls only by the call object, so the
    # instance keeps one Hooks whose forward/act look the call up in a context variable
    # (set by the caller, reset after the call, so nested contract calls stay apart).
    if bound.hooks is None:
        bound.hooks = Hooks(
            call.runtime.check_input, call.runtime.check_output, _current_forward, bound.pre,
            bound.post, _current_act if call.runtime.description.act is not None else None,
            bound.preflight, call.runtime.check_result, bound.handler)
    return bound.hooks


_CURRENT_CALL: contextvars.ContextVar[_Call] = contextvars.ContextVar("hoare:call")

RESEND_TEMPERATURE = 0.7
"""The least temperature of a re-send that would otherwise repeat a request unchanged."""



def _current_forward(used: object, outcome: Outcome) -> object:
    return _CURRENT_CALL.get().forward(used, outcome)


def _current_act(accepted: object) -> object:
    return _CURRENT_CALL.get().act(accepted)


def _finish(call: _Call, outcome: Outcome | None, raised: BaseException | None) -> None:
    """Record the call exactly once, on its own contract, and restore an enclosing
    call of the same instance as the instance's latest (spec/pipeline.md §8.2, §8.3).

    A call that raised counts as a failed call: ``forward`` (or a contract it called)
    raised, or its value failed the result check. A ``ContractViolationError`` that
    did not come out of ``forward`` is this call's own, carrying its outcome."""
    call.running = False
    if raised is None:
        call.outcome = outcome
    elif isinstance(raised, ContractViolationError) and raised is not call.forward_error:
        call.outcome = raised.outcome  # this call's own failure (or its result check)
    # else: forward (or something it called) raised; call.outcome is what forward got
    if call.outcome is not None and call.outcome.violations:
        _redact_secrets(call, raised)
    _attach_original(call, raised)
    recorded = call.outcome
    if recorded is not None:
        if raised is not None and recorded.success:  # forward did not return a checked value
            recorded = recorded._replace(success=False)
        call.runtime.tracker.record(recorded)
        elapsed_ns = time.perf_counter_ns() - call.started_ns
        call.instance._hoare_perf().record(recorded.clock_marks, elapsed_ns,
                                           call.runtime.has_act)
        faults = 0 if recorded.success and len(recorded.attempts) <= 1 else \
            call.runtime.provider_faults(recorded)
        store = configuration.stats_store()
        if store is not None:
            _store_call(store, call, recorded, elapsed_ns, faults)
        if call.runtime.description.verbose:
            _log_outcome(call.runtime, recorded)
    if call.telemetry is not None:
        _end_span(call, recorded, raised)
    latest = call.instance._hoare_latest()
    # what the contract_* properties read, held by the instance: not the call (its engine
    # and kwargs), and never by a context (which would keep the instance alive)
    slot = call.slot
    if slot is not None:
        latest.calls[slot.key] = _Done(call.outcome, call.spend)
    previous = call.previous
    if previous is not None and previous.running:
        latest.var.set(previous.slot)


def _end_span(call: _Call, outcome: Outcome | None, raised: BaseException | None) -> None:
    """Close the call's OpenTelemetry span (``hoare.telemetry``); never raises."""
    handle, call.telemetry = call.telemetry, None
    try:
        generations = remedies = 0
        if outcome is not None:
            phases = [a.phase for a in outcome.attempts]
            generations = phases.count(Phase.POST)
            remedies = phases.count(Phase.PRE) + max(0, generations - 1)
        _telemetry.finish_call(handle, outcome, raised, generations, remedies,  # type: ignore[arg-type]
                               configuration.label(), call.engine)
    except Exception:  # tracing must never fail a call
        logging.getLogger("hoare.telemetry").debug("span not closed", exc_info=True)


def _store_call(store: Any, call: _Call, outcome: Outcome, elapsed_ns: int,
                provider_faults: int = 0) -> None:
    """Queue the call's record for the stats store (``hoare.configure(stats=...)``):
    a plain tuple of ``CallRecord``'s fields, values only; never raises."""
    try:
        runtime = call.runtime
        engine = call.engine
        bound = call.instance._hoare_bound()
        fixed = bound.recorded_as
        if fixed is None or fixed[0] is not engine:  # per engine: name, hash, engine, model
            inner = innermost(engine)
            fixed = bound.recorded_as = (
                engine, runtime.description.name, runtime.definition_hash(),
                type(inner).__name__, getattr(inner, "model", None),
                _family_messages(runtime.description))
        generations = remedies = 0
        for attempt in outcome.attempts:
            if attempt.phase is Phase.POST:
                generations += 1
            elif attempt.phase is Phase.PRE:
                remedies += 1
        if generations > 1:
            remedies += generations - 1
        spent = call.spend.spent() if call.spend is not None else None
        usage = outcome.usage
        preflight = outcome.preflight
        store.record((
            time.time(), fixed[1], fixed[2], configuration.label(), outcome.success,
            outcome.success and generations <= 1, generations, remedies,
            None if preflight is None else preflight.verdict.value,
            usage.get("input_tokens"), usage.get("output_tokens"),
            spent.get("cost") if isinstance(spent, dict) else None, elapsed_ns / 1e6,
            fixed[3], fixed[4], outcome.trials, "contract", provider_faults,
            int(preflight is not None
                and preflight.reason.startswith(configuration.SHADOW_REFUSAL)), fixed[5]))
    except Exception:  # recording must never fail a call
        logging.getLogger("hoare.stats").debug("not recorded", exc_info=True)


class _Slot:
    """The identity of one call, all a caller's context holds for an instance. Its state
    is in the instance's ``_Latest.calls`` under ``key``, a weak reference to the slot:
    it goes when the instance goes, or when no context holds the slot any more (the
    context's next call of the instance replaced it, or the thread ended)."""

    __slots__ = ("__weakref__", "key")

    def __init__(self, forget: Callable[[weakref.ref[_Slot]], None]) -> None:
        self.key = weakref.ref(self, forget)


_FREE_VARIABLES: list[contextvars.ContextVar[_Slot | None]] = []
"""Context variables of collected instances, reused by new ones: a context keeps one
entry per variable (an empty slot at most), so a thread calling many short-lived
instances holds as many entries as instances were ever alive at once, not one per
instance ever called."""


class _Latest:
    """An instance's latest call in each thread or task: ``var`` holds the slot of the
    current context's latest call, ``calls`` what that call left (``_Call`` while it
    runs, then ``_Done``)."""

    __slots__ = ("__weakref__", "calls", "forget", "var")

    def __init__(self) -> None:
        try:
            self.var = _FREE_VARIABLES.pop()
        except IndexError:
            self.var = contextvars.ContextVar("hoare:latest", default=None)
        self.calls: dict[weakref.ref[_Slot], _Call | _Done] = {}
        # a slot's weakref callback: refers to this object weakly, so a slot a context
        # still holds never keeps the instance's calls (or the instance) alive
        self.forget = partial(_forget_slot, weakref.ref(self))

    def get(self) -> _Call | _Done | None:
        slot = self.var.get()
        return None if slot is None else self.calls.get(slot.key)

    def __del__(self, _free: Callable[[Any], None] = _FREE_VARIABLES.append) -> None:
        try:
            _free(self.var)  # the instance is gone: its stale slots name nothing any more
        except Exception:  # at interpreter exit
            pass


def _forget_slot(latest: weakref.ref[_Latest], key: weakref.ref[_Slot]) -> None:
    """No context holds the slot any more: drop what it named."""
    found = latest()
    if found is not None:
        found.calls.pop(key, None)


def _family_messages(description: ContractDescription) -> tuple[tuple[str, str], ...]:
    """``(family, label)`` of the contract's predicates for the stats store: a family
    of one predicate is labelled with its message, a shared one keeps its name."""
    messages: dict[str, list[str]] = {}
    for source in (*description.pre, *description.post):
        messages.setdefault(source.family, []).append(source.message)
    return tuple((family, texts[0] if len(set(texts)) == 1 and texts[0] else family)
                 for family, texts in messages.items())


class _Done:
    """A finished call as its instance's latest: its outcome and budget meter only, not
    the call's engine or kwargs."""

    __slots__ = ("outcome", "spend")
    running = False

    def __init__(self, outcome: Outcome | None, spend: Spend | None) -> None:
        self.outcome = outcome
        self.spend = spend


def _attach_original(call: _Call, raised: BaseException | None) -> None:
    """Give the call's ``ContractViolationError`` (raised, or ``contract_exception``) the
    underlying exception a predicate, ``act`` or the engine raised, as ``.original`` and
    ``__cause__`` (SymbolicAI's ``contract_exception`` is that exception itself; here it
    stays a ``ContractViolationError``, spec §3.7, and carries it)."""
    original = call.last_error
    outcome = call.outcome
    for error in (raised, None if outcome is None else outcome.exception):
        if isinstance(error, ContractViolationError) and not hasattr(error, "original"):
            error.original = original  # type: ignore[attr-defined]
            if original is not None and error.__cause__ is None:
                error.__cause__ = original


def _redact_secrets(call: _Call, raised: BaseException | None) -> None:
    """Remove the call's ``SecretStr`` values from its outcome's texts and from the
    ``ContractViolationError`` it raises (an answer may echo a secret, and a type
    check quotes the answer)."""
    outcome = call.outcome
    if outcome is None:
        return
    secrets = secret_values(outcome.original_input, outcome.input_used, outcome.result)
    if not secrets:
        return

    def clean(violations: tuple[Violation, ...]) -> tuple[Violation, ...]:
        return tuple(v if redact(v.message, secrets) == v.message
                     else replace(v, message=redact(v.message, secrets)) for v in violations)

    attempts = tuple(a._replace(feedback=clean(a.feedback), violations=clean(a.violations))
                     for a in outcome.attempts)
    handler_error = outcome.handler_error
    call.outcome = outcome._replace(
        violations=clean(outcome.violations), attempts=attempts,
        handler_error=None if handler_error is None else redact(handler_error, secrets))
    for error in (raised, outcome.exception):  # the raised error, contract_exception
        if isinstance(error, ContractViolationError):
            error.args = tuple(redact(a, secrets) if isinstance(a, str) else a
                               for a in error.args)
            if error.outcome is outcome:
                error.outcome = call.outcome
            elif error.outcome is not None:
                error.outcome = error.outcome._replace(violations=clean(error.outcome.violations))


def _user_forward(cls: type) -> Callable[..., Any]:
    """The user's own forward: defined on ``cls`` or inherited (a subclass of a
    contract may re-decorate it with another configuration)."""
    for klass in cls.__mro__:
        if klass is Contract:
            break
        candidate = klass.__dict__.get("forward")
        if candidate is not None:
            return getattr(candidate, "__hoare_original__", candidate)  # type: ignore[no-any-return]
    raise ContractDefinitionError(
        f"{cls.__qualname__} must define forward(self, input, **kwargs) -> Output")


def _wrap_forward(cls: type, original: Callable[..., Any]) -> Callable[..., Any]:
    def forward(self: Contract, *args: Any, **kwargs: Any) -> Any:
        call, run = _begin(self, args, kwargs)
        token = _CURRENT_CALL.set(call)
        try:
            outcome, value = run_sync(run, call.perform)
        except BaseException as error:
            _finish(call, None, error)
            raise
        finally:
            _CURRENT_CALL.reset(token)
        _finish(call, outcome, None)
        return value

    forward.__name__ = "forward"
    forward.__qualname__ = f"{cls.__qualname__}.forward"
    forward.__doc__ = original.__doc__
    forward.__wrapped__ = original  # type: ignore[attr-defined]
    forward.__hoare_original__ = original  # type: ignore[attr-defined]
    return forward


@overload
def contract(cls: C, /) -> C: ...
@overload
def contract(
    *, pre_remedy: bool = ..., post_remedy: bool = ..., accumulate_errors: bool = ...,
    verbose: bool = ..., remedy_retry_params: dict[str, Any] | None = ...,
    policy: Policy | str = ..., preflight: bool | Literal["shadow"] | None = ...,
    on_violation: Callable[[Outcome], object] | None = ..., options: Options | None = ...,
    feedback: Literal["errors", "messages"] = ..., feedback_chars: int = ...,
) -> Callable[[C], C]: ...


def contract(
    cls: Any = None, /, *, pre_remedy: bool = False, post_remedy: bool = True,
    accumulate_errors: bool = False, verbose: bool = False,
    remedy_retry_params: dict[str, Any] | None = None, policy: Policy | str = Policy.OBSERVE,
    preflight: bool | Literal["shadow"] | None = None,
    on_violation: Callable[[Outcome], object] | None = None,
    options: Options | None = None, feedback: Literal["errors", "messages"] = "errors",
    feedback_chars: int = DEFAULT_FEEDBACK_CHARS,
    decoding: Literal["schema", "types", "none"] = "schema",
    resend: Literal["vary", "stop"] = "vary",
    stream: bool = False,
) -> Any:
    """Turn a ``Contract`` subclass into a contracted component (spec/pipeline.md).

    Parameters mirror SymbolicAI's ``@contract``; ``policy`` chooses what a failed
    contract does (``"observe"``: fall back to ``forward``; ``"enforce"``: handler,
    then raise; ``"quick_enforce"``: raise at once; ``"ignore"``: check types only);
    ``preflight`` asks z3, before the first generation, whether any output can pass:
    True refuses an input none can, ``"shadow"`` only logs and counts it, False skips
    the check (default: ``configure(preflight=...)``, else ``[tool.hoare] preflight``,
    else True).
    ``feedback`` chooses what corrective prompts quote of a predicate that raised:
    ``"errors"`` its exception text, ``"messages"`` only texts the author wrote.
    ``feedback_chars`` caps the rejected answer and the errors block of a corrective
    prompt (each), saying so in the prompt when it cuts. ``decoding`` chooses the schema
    the engine is asked to decode against: ``"schema"`` (the default) the output type's
    with the post-conditions JSON Schema can express folded in (each proved implied by
    them with z3, in a z3 context of its own, at the first call that has one to fold;
    see ``hoare schema``), ``"types"`` the output type's alone, ``"none"`` no schema. ``resend``:
    what a remedy attempt does when its request would repeat an earlier one unchanged
    (the model repeated its answer): ``"vary"`` sends it with another seed and a
    temperature of at least 0.7 (counted in ``outcome.usage["varied_resends"]``),
    ``"stop"`` ends the stage there, with the reason in the outcome. ``stream=True``
    streams each answer and stops it as soon as a complete field or a post-condition
    reading only complete fields fails (``hoare.contracts.early_stop``), counted in
    ``outcome.usage["stopped_early"]`` with an estimate of the output tokens saved.
    """
    if not isinstance(stream, bool):
        raise ValueError(f"stream must be True or False, got {stream!r}")
    if preflight is not None:
        configuration.check_preflight(preflight, "preflight")
    if resend not in ("vary", "stop"):
        raise ValueError(f"resend must be 'vary' (another seed and temperature) or 'stop', "
                         f"got {resend!r}")
    if decoding not in ("schema", "types", "none"):
        raise ValueError(f"decoding must be 'schema' (the type and the post-conditions "
                         f"folded in), 'types' or 'none', got {decoding!r}")
    if feedback not in ("errors", "messages"):
        raise ValueError(f"feedback must be 'errors' (exception texts reach the model) or "
                         f"'messages' (only texts the author wrote), got {feedback!r}")
    if isinstance(feedback_chars, bool) or not isinstance(feedback_chars, int) \
            or feedback_chars < 1:
        raise ValueError(f"feedback_chars must be an integer >= 1, got {feedback_chars!r}")
    if remedy_retry_params and "dynamic_engine" in remedy_retry_params:
        raise ContractDefinitionError(
            "remedy_retry_params={'dynamic_engine': ...} (SymbolicAI's per-attempt engine "
            "selection) is not supported: pass engine=... to the contract, or an engine "
            "that chooses per attempt, e.g. FunctionEngine(lambda request: (strong if "
            "request.attempt > 1 else fast).complete(request).text)")
    config = ContractConfig(
        pre_remedy=pre_remedy, post_remedy=post_remedy, accumulate_errors=accumulate_errors,
        policy=Policy.parse(policy),
        retry=RetryPolicy.from_mapping(_no_wait_means_no_jitter(remedy_retry_params or {})))
    if on_violation is not None and not callable(on_violation):
        raise TypeError(f"on_violation must be callable(outcome), got {on_violation!r}")

    def decorate(target: C, caller: Any = None) -> C:
        # the frame that applied the decorator: for @contract(...), our caller
        defined_in = _defining_namespace(caller or sys._getframe(1), target)
        if not (isinstance(target, type) and issubclass(target, Contract)):
            raise ContractDefinitionError(
                f"@contract decorates a subclass of hoare.Contract, got {target!r}")
        original = _user_forward(target)
        if inspect.iscoroutinefunction(original):
            raise ContractDefinitionError(
                f"{target.__qualname__}.forward must be a plain def; call `await "
                f"instance.acall(...)` for asynchronous engine I/O")
        _check_prompt(target)
        description = describe(target, config, preflight=preflight is not False,
                               verbose=verbose,
                               forward=original, feedback=feedback, decoding=decoding,
                               localns=defined_in)
        target.__hoare__ = description
        target.__hoare_runtime__ = _Runtime(description, on_violation, options or Options(),
                                            feedback_chars, resend, stream)
        target.__hoare_runtime__.preflight_choice = preflight
        target.forward = _wrap_forward(target, original)
        if verbose and not logger.hasHandlers():  # verbose asks to see the log: show it
            logger.addHandler(logging.StreamHandler())
            logger.setLevel(logging.INFO)
        return target

    if cls is not None:  # bare @contract: the frame that applied it called contract()
        return decorate(cls, sys._getframe(1))
    return decorate


def _no_wait_means_no_jitter(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``{"delay": 0}`` asks for no wait: without an explicit ``jitter`` the kernel's
    default (up to 0.1 s per remedy) would still sleep, so it is 0 too. The kernel's
    defaults (spec §4.3) are unchanged."""
    delay = params.get("delay") if isinstance(params, Mapping) else None
    if isinstance(delay, (int, float)) and not isinstance(delay, bool) and delay == 0 \
            and "jitter" not in params:
        return {**params, "jitter": 0.0}
    return params


def _defining_namespace(frame: Any, target: object) -> Mapping[str, Any]:
    """The local names of the function (or class body) ``target`` was defined in, so
    that its annotations may name that scope's local classes, as Python's own scoping
    would; empty when ``frame`` is not that scope (a module, or a decorator applied
    elsewhere, whose locals must not shadow the module's names)."""
    qualname = getattr(target, "__qualname__", "")
    scope = qualname.rpartition(".")[0].removesuffix(".<locals>")
    if not scope or frame is None or frame.f_code.co_qualname != scope:
        return {}
    return dict(frame.f_locals)
