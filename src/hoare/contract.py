"""``@contract`` and ``Contract``: a class's ``forward`` becomes one kernel call.

The decorator reads the class once (``describe``) and prepares everything that
does not change between calls. A call binds its input, builds the kernel hooks
from the instance, and drives ``hoare.kernel.run_call`` with the instance's
engine. Per-call results (``contract_successful``, ``contract_result``, …) live
in a ``ContextVar`` of the instance: every thread and every asyncio task sees
its own latest call, never another's.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any, Literal, TypeVar, overload

from pydantic import ValidationError

from . import configuration
from .description import ContractDescription, PredicateSource, describe
from .engines.base import ONE_REQUEST, Engine, Options, Request, Response
from .engines.budget import Budget, BudgetedEngine, Spend
from .errors import ContractCallError, ContractDefinitionError, InvalidValue
from .json_text import extract_json
from .kernel import (
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
    run_async,
    run_call,
    run_sync,
)
from .models import TypeSpec, format_validation_error
from .prompts import render_messages, system_text

__all__ = ["Contract", "InvalidValue", "contract"]

logger = logging.getLogger("hoare")
C = TypeVar("C", bound=type)


class _Runtime:
    """What a contract class needs at call time, prepared once per class."""

    def __init__(self, description: ContractDescription,
                 handler: Callable[[Outcome], object] | None, options: Options) -> None:
        self.description = description
        self.config = description.config
        self.handler = handler
        self.options = options
        self.tracker = SuccessTracker()
        self.systems: dict[tuple[str, str], str] = {}
        self._preflight: Any = None
        self._preflight_ready = False

    # -- hooks that do not depend on the instance -------------------------------------
    def check_input(self, raw: object) -> object:
        spec = self.description.input
        if isinstance(raw, Response):  # a pre-remedy answer: JSON text
            return _validate_answer(spec, raw)
        try:
            return spec.validate(raw)
        except ValidationError as error:
            raise InvalidValue(f"the input is not a valid {spec.name}: "
                               f"{format_validation_error(error)}") from None

    def check_output(self, raw: object, used: object) -> object:
        if not isinstance(raw, Response):
            raise InvalidValue(f"the engine returned {type(raw).__name__}, not a Response")
        return _validate_answer(self.description.output, raw)

    def check_result(self, value: object) -> None:
        spec = self.description.output
        if not spec.is_instance(value):
            raise TypeError(f"{self.description.cls.__qualname__}.forward must return "
                            f"{spec.name}, got {type(value).__name__}: {value!r:.200}")

    def preflight_checker(self) -> Any:
        """The z3 pre-flight for this class, built on first use (None: not available)."""
        if not self._preflight_ready:
            checker = None
            if self.description.preflight and self.config.policy is not Policy.IGNORE:
                try:
                    from .verifier.preflight import Preflight
                    checker = Preflight.for_description(self.description)
                except Exception as error:  # never let the optimisation break a call
                    logger.warning("hoare: pre-flight disabled for %s: %s",
                                   self.description.name, error)
            self._preflight, self._preflight_ready = checker, True
        return self._preflight

    def system(self, prompt: str, task: str) -> str:
        key = (prompt, task)
        text = self.systems.get(key)
        if text is None:
            target = self.description.input if task == "repair_input" \
                else self.description.output
            text = self.systems[key] = system_text(prompt, target, task)
        return text


def _validate_answer(spec: TypeSpec, response: Response) -> object:
    """Parse an engine answer: extract the JSON (fences, prose), then validate."""
    text = response.text
    if not text.strip():
        raise InvalidValue("the answer was empty: reply with a JSON value")
    try:
        return spec.validate_json(extract_json(text))
    except ValidationError as error:
        problem = format_validation_error(error)
        reason = response.finish_reasons[0] if response.finish_reasons else None
        if reason == "length":
            problem = f"the answer was cut off (finish_reason=length): {problem}"
        raise InvalidValue(f"the answer is not a valid {spec.name}: {problem}") from None


def _predicate(source: PredicateSource, instance: object) -> Predicate:
    """A kernel predicate calling the user's function directly: a method gets the
    instance bound first; a condition without an input parameter gets no context."""
    check = partial(source.fn, instance) if source.is_method else source.fn
    return Predicate(source.id, check, source.message, source.family, source.policy,
                     source.takes_input)


class _Bound:
    """Hooks of one instance (predicates see ``self``), built on its first call."""

    __slots__ = ("handler", "hooks", "post", "pre", "preflight")

    def __init__(self, instance: Contract, runtime: _Runtime) -> None:
        description = runtime.description
        self.pre = tuple(_predicate(p, instance) for p in description.pre)
        self.post = tuple(_predicate(p, instance) for p in description.post)
        checker = runtime.preflight_checker()
        self.preflight: Callable[[object], PreflightResult] | None = None
        if checker is not None:
            self.preflight = lambda used: checker.check(instance, used)
        method = getattr(instance, "on_violation", None)
        self.handler = runtime.handler or method or _log_violation
        self.hooks: Hooks | None = None  # the hooks of a call without extra kwargs


def _log_violation(outcome: Outcome) -> None:
    """The default violation handler: one warning per failed call."""
    logger.warning("hoare: contract failed (%s):\n%s", outcome.policy.value, outcome.summary())


class _Call:
    """One call of one instance: its extra kwargs, its engine and budget meter, its
    effects, and (once known) its outcome. The instance's context variable points at
    the latest ``_Call`` of the current thread or task."""

    __slots__ = ("engine", "instance", "outcome", "rest", "runtime", "spend")

    def __init__(self, instance: Contract, runtime: _Runtime, rest: dict[str, Any]) -> None:
        self.instance = instance
        self.runtime = runtime
        self.rest = rest
        self.outcome: Outcome | None = None
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
        return self.runtime.description.forward(self.instance, used, **self.rest)

    def act(self, accepted: object) -> object:
        description = self.runtime.description
        assert description.act is not None and description.act_output is not None
        value = description.act(self.instance, accepted, **self.rest)
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

        def render() -> tuple[Any, ...]:
            system = runtime.system(_prompt_of(instance), task)
            return render_messages(system, effect.phase, spec_in.dump_json(effect.input),
                                   spec_in.name, effect.feedback, effect.previous,
                                   runtime.config.accumulate_errors)

        return Request(render=render, schema=target.schema, schema_name=target.name,
                       options=instance._hoare_options(), task=task, input=effect.input,
                       feedback=tuple(v.message for v in effect.feedback),
                       attempt=effect.attempt, contract=description.name)

    def perform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            time.sleep(effect.seconds)
            return None
        request = self.request(effect)
        if self.runtime.description.verbose:
            _log_request(self.runtime, request, effect)
        response = self.engine.complete(request)
        return Reply(response, _usage(response))

    async def aperform(self, effect: Effect) -> object:
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        request = self.request(effect)
        if self.runtime.description.verbose:
            _log_request(self.runtime, request, effect)
        response = await self.engine.acomplete(request)
        return Reply(response, _usage(response))


_ONE_REQUEST_USAGE = MappingProxyType(ONE_REQUEST.as_dict())


def _usage(response: Response) -> Mapping[str, int]:
    """The usage of an answer as the kernel sums it (the common case costs no dict)."""
    usage = response.usage
    return _ONE_REQUEST_USAGE if usage is ONE_REQUEST else usage.as_dict()


def _prompt_of(instance: object) -> str:
    prompt = getattr(instance, "prompt", None)
    if not isinstance(prompt, str):
        raise ContractDefinitionError(
            f"{type(instance).__qualname__}.prompt must be a string (a property or a class "
            f"attribute describing the task), got {prompt!r}")
    return prompt


def _log_request(runtime: _Runtime, request: Request, effect: Generate) -> None:
    if logger.isEnabledFor(logging.INFO):
        logger.info("hoare %s: %s attempt %d, feedback %s", runtime.description.name,
                    request.task, effect.attempt, list(request.feedback))
        if logger.isEnabledFor(logging.DEBUG):
            for message in request.messages:
                logger.debug("hoare %s: [%s] %s", runtime.description.name, message.role,
                             message.content)


def _log_outcome(runtime: _Runtime, outcome: Outcome) -> None:
    if not logger.isEnabledFor(logging.INFO):
        return
    name = runtime.description.name
    for phase, nanos in outcome.timings_ns.items():
        logger.info("hoare %s: phase %-9s %8.3f ms", name, phase, nanos / 1e6)
    if outcome.preflight is not None:
        logger.info("hoare %s: pre-flight %s %s", name, outcome.preflight.verdict.value,
                    outcome.preflight.reason)
    logger.info("hoare %s: %s after %d generation attempt(s), %d pre-remedies; %s", name,
                "success" if outcome.success else "FAILURE", outcome.generation_attempts,
                outcome.pre_remedies, outcome.summary())


class Contract:
    """Base class of contracted components. Subclass it, decorate with ``@contract``,
    and define ``prompt``, ``forward`` and optionally ``pre``, ``act``, ``post``.

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
            raise TypeError(f"engine must have complete() and acomplete(), got {engine!r}")
        self.__dict__["_hoare_engine_value"] = engine
        if budget is not None and not isinstance(budget, (Budget, Spend)):
            raise TypeError(f"budget must be a hoare.engines.Budget (a cap per call) or a "
                            f"Spend meter (shared), got {budget!r}")
        self.__dict__["_hoare_budget_value"] = budget

    # -- configuration -----------------------------------------------------------------
    def _hoare_engine(self) -> Engine:
        engine = self.__dict__.get("_hoare_engine_value")
        return engine if engine is not None else configuration.default_engine()

    def _hoare_options(self) -> Options:
        return self.__dict__.get("_hoare_options_value") or self.__hoare_runtime__.options

    def _hoare_state(self) -> contextvars.ContextVar[_Call | None]:
        state = self.__dict__.get("_hoare_state_var")
        if state is None:
            state = self.__dict__.setdefault(
                "_hoare_state_var",
                contextvars.ContextVar(f"hoare:{type(self).__qualname__}", default=None))
        return state

    def _hoare_bound(self) -> _Bound:
        bound = self.__dict__.get("_hoare_bound_value")
        if bound is None:
            bound = self.__dict__.setdefault("_hoare_bound_value",
                                             _Bound(self, self.__hoare_runtime__))
        return bound

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # replaced by @contract
        raise NotImplementedError(f"{type(self).__qualname__} must define forward()")

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        """The contracted call with asynchronous engine I/O and backoff sleeps."""
        call, run = _begin(self, args, kwargs)
        token = _CURRENT_CALL.set(call)
        try:
            outcome, value = await run_async(run, call.aperform)
        except ContractViolationError as error:
            _finish(call, error.outcome)
            raise
        finally:
            _CURRENT_CALL.reset(token)
        _finish(call, outcome)
        return value

    # -- per-call results (this thread / task's latest call) ----------------------------
    @property
    def contract_outcome(self) -> Outcome | None:
        """The kernel ``Outcome`` of the latest call in this thread or task."""
        call = self._hoare_state().get()
        return None if call is None else call.outcome

    @property
    def contract_successful(self) -> bool:
        outcome = self.contract_outcome
        return bool(outcome and outcome.success)

    @property
    def contract_result(self) -> Any:
        outcome = self.contract_outcome
        return None if outcome is None else outcome.result

    @property
    def contract_exception(self) -> BaseException | None:
        outcome = self.contract_outcome
        return None if outcome is None else outcome.exception

    def contract_perf_stats(self) -> dict[str, Any]:
        """Figures of the latest call in this thread or task: time per phase (ms),
        engine calls, remedies, backoff time, token usage summed over attempts, and
        what the call's budget meter spent (requests, tokens, cost), if it has one."""
        call = self._hoare_state().get()
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
    runtime = _runtime_of(instance)
    raw, rest = _bind(runtime.description, args, kwargs)
    call = _Call(instance, runtime, rest)
    instance._hoare_state().set(call)
    return call, run_call(raw, runtime.config, _hooks_for(call, instance._hoare_bound()))


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


def _current_forward(used: object, outcome: Outcome) -> object:
    return _CURRENT_CALL.get().forward(used, outcome)


def _current_act(accepted: object) -> object:
    return _CURRENT_CALL.get().act(accepted)


def _finish(call: _Call, outcome: Outcome | None) -> None:
    if outcome is not None:
        call.outcome = outcome
        call.runtime.tracker.record(outcome)
        if call.runtime.description.verbose:
            _log_outcome(call.runtime, outcome)


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
        except ContractViolationError as error:
            _finish(call, error.outcome)
            raise
        finally:
            _CURRENT_CALL.reset(token)
        _finish(call, outcome)
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
    policy: Policy | str = ..., preflight: bool = ...,
    on_violation: Callable[[Outcome], object] | None = ..., options: Options | None = ...,
) -> Callable[[C], C]: ...


def contract(
    cls: Any = None, /, *, pre_remedy: bool = False, post_remedy: bool = True,
    accumulate_errors: bool = False, verbose: bool = False,
    remedy_retry_params: dict[str, Any] | None = None, policy: Policy | str = Policy.OBSERVE,
    preflight: bool = True, on_violation: Callable[[Outcome], object] | None = None,
    options: Options | None = None,
) -> Any:
    """Turn a ``Contract`` subclass into a contracted component (spec/pipeline.md).

    Parameters mirror SymbolicAI's ``@contract``; ``policy`` chooses what a failed
    contract does (``"observe"``: fall back to ``forward``; ``"enforce"``: handler,
    then raise; ``"quick_enforce"``: raise at once; ``"ignore"``: check types only);
    ``preflight`` asks z3, before the first generation, whether any output can pass.
    """
    config = ContractConfig(
        pre_remedy=pre_remedy, post_remedy=post_remedy, accumulate_errors=accumulate_errors,
        policy=Policy.parse(policy),
        retry=RetryPolicy.from_mapping(remedy_retry_params or {}))
    if on_violation is not None and not callable(on_violation):
        raise TypeError(f"on_violation must be callable(outcome), got {on_violation!r}")

    def decorate(target: C) -> C:
        if not (isinstance(target, type) and issubclass(target, Contract)):
            raise ContractDefinitionError(
                f"@contract decorates a subclass of hoare.Contract, got {target!r}")
        original = _user_forward(target)
        if inspect.iscoroutinefunction(original):
            raise ContractDefinitionError(
                f"{target.__qualname__}.forward must be a plain def; call `await "
                f"instance.acall(...)` for asynchronous engine I/O")
        description = describe(target, config, preflight=preflight, verbose=verbose,
                               forward=original)
        target.__hoare__ = description
        target.__hoare_runtime__ = _Runtime(description, on_violation, options or Options())
        target.forward = _wrap_forward(target, original)
        if verbose and not logger.hasHandlers():  # verbose asks to see the log: show it
            logger.addHandler(logging.StreamHandler())
            logger.setLevel(logging.INFO)
        return target

    if cls is not None:
        return decorate(cls)
    return decorate
