"""What happens around a call. ``begin`` binds the input, makes the call its
instance's latest and creates the kernel call; ``finish`` settles it exactly once: the
call's secrets redacted from its outcome and error, the underlying exception attached,
then recorded (success tracker, timings, the stats store, the telemetry span), and an
enclosing call of the same instance made the latest again (spec/pipeline.md §8.2,
§8.3)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from hoare import telemetry as _telemetry
from hoare.contracts import configuration
from hoare.contracts.call import Call, prompt_of
from hoare.contracts.current import current_act, current_forward
from hoare.contracts.driver import with_spent
from hoare.contracts.latest import Done, Slot
from hoare.contracts.logs import log_outcome
from hoare.contracts.runtime import Runtime, call_secrets, runtime_of
from hoare.declaration.description import ContractDescription
from hoare.declaration.models import redact, secret_values
from hoare.engines.base import Response
from hoare.errors import ContractCallError
from hoare.kernel import ContractViolationError, Hooks, Outcome, Violation, run_call
from hoare.stats.records import RecordedAs, RecordFields, outcome_record, settled

if TYPE_CHECKING:
    from hoare.contracts.base import Contract
    from hoare.contracts.binding import Bound


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


def begin(instance: Contract[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> tuple[Call, Any]:
    """Bind the input, make the call the instance's latest, and create the kernel call.
    Runs on every call: the common case (one positional input, no extra kwargs, the
    instance's shared hooks) takes no detour through a helper."""
    started = time.perf_counter_ns()
    runtime: Runtime | None = getattr(instance, "__hoare_runtime__", None)
    if runtime is None:
        runtime = runtime_of(instance)  # raises: not decorated
    if len(args) == 1:  # what _bind returns for one positional argument
        raw, rest = args[0], kwargs
    else:
        raw, rest = _bind(runtime.description, args, kwargs)
    if type(getattr(instance, "prompt", None)) is not str:
        prompt_of(instance)  # a missing prompt is a definition error, not an engine failure
    call = Call(instance, runtime, rest)
    # the secrets of the caller's object, which the input check replaces by a validated
    # copy; none to add for exactly the flat input model: its copy holds the same
    # atomic values, or the input is refused
    if type(raw) is not runtime.flat_input:
        call.input_secrets = call_secrets(raw, runtime.flat_input)
    call.started_ns = started
    state = instance.__dict__  # the instance's call state, made at its first call
    bound = state.get("_hoare_bound_value") or instance._hoare_bound()
    hooks = bound.hooks
    if rest or hooks is None:
        hooks = _hooks_for(call, bound)
    run = run_call(raw, runtime.config, hooks)
    latest = state.get("_hoare_latest_value") or instance._hoare_latest()
    current = latest.var.get()
    if current is not None:
        previous = latest.calls.get(current.key)
        if isinstance(previous, Call) and previous.running:  # a call nested in one of ours
            call.previous = previous
    if _telemetry.tracer is not None:  # made current: finish always follows
        call.telemetry = _telemetry.start_call(runtime.description.name)
    slot = call.slot = Slot(latest.forget)
    latest.calls[slot.key] = call
    latest.var.set(slot)  # last: nothing below can fail, so finish always follows
    return call, run


def _hooks_for(call: Call, bound: Bound) -> Hooks:
    if call.rest:
        return call.hooks(bound)
    # Without extra kwargs the hooks differ between calls only by the call object, so the
    # instance keeps one Hooks whose forward/act look the call up in a context variable
    # (set by the caller, reset after the call, so nested contract calls stay apart).
    if bound.hooks is None:
        bound.hooks = Hooks(
            call.runtime.check_input, call.runtime.check_output, current_forward, bound.pre,
            bound.post, current_act if call.runtime.description.act is not None else None,
            bound.preflight, call.runtime.check_result, bound.handler)
    return bound.hooks


def finish(call: Call, outcome: Outcome | None, raised: BaseException | None) -> None:
    """Record the call exactly once, on its own contract, and restore an enclosing
    call of the same instance as the instance's latest (spec/pipeline.md §8.2, §8.3).

    A call that raised counts as a failed call: ``forward`` (or a contract it called)
    raised, or its value failed the result check. A ``ContractViolationError`` that
    did not come out of ``forward`` is this call's own, carrying its outcome."""
    call.running = False
    kernels = True  # call.outcome is the kernel's: without what the engine's errors cost
    if raised is None:
        call.outcome = outcome
    elif isinstance(raised, ContractViolationError) and raised is not call.forward_error:
        call.outcome = raised.outcome  # this call's own failure (or its result check)
    else:  # forward (or something it called) raised; call.outcome is what forward got,
        kernels = False  # with what the engine's errors cost (``current_forward``)
    if call.error_usage is not None and kernels:  # an engine error said what it cost
        _add_error_usage(call, raised)
    recorded = call.outcome
    if recorded is not None and recorded.violations:
        _redact_secrets(call, raised)
        recorded = call.outcome
    if raised is not None or (recorded is not None and recorded.exception is not None):
        _attach_original(call, raised)  # else: no ContractViolationError to attach it to
    runtime, instance = call.runtime, call.instance
    state = instance.__dict__
    record: RecordFields | None = None  # built only for a store or a span that reads it
    if recorded is not None:
        if raised is not None:
            recorded = settled(recorded, raised)
        runtime.tracker.record(recorded)
        elapsed_ns = time.perf_counter_ns() - call.started_ns  # the record's latency too
        perf = state.get("_hoare_perf_value") or instance._hoare_perf()
        perf.record(recorded.clock_marks, elapsed_ns, runtime.has_act)
        # a provider fault is logged whether or not a store counts it (docs/decoding.md)
        faults = 0 if recorded.success and len(recorded.attempts) <= 1 else \
            runtime.provider_faults(recorded)
        store = configuration.stats_store()
        if store is not None or call.telemetry is not None:
            record = _call_record(call, recorded, elapsed_ns, faults)
            if store is not None and record is not None:
                store.record(record)
        if runtime.description.verbose:
            log_outcome(runtime.description.name, recorded)
    if call.telemetry is not None:
        _end_span(call, record, raised)
    latest = state.get("_hoare_latest_value") or instance._hoare_latest()
    # what the contract_* properties read, held by the instance: not the call (its engine
    # and kwargs), and never by a context (which would keep the instance alive)
    slot = call.slot
    if slot is not None:
        latest.calls[slot.key] = Done(call.outcome, call.spend)
    previous = call.previous
    if previous is not None and previous.running:
        latest.var.set(previous.slot)


def _end_span(call: Call, record: RecordFields | None, raised: BaseException | None
              ) -> None:
    """Close the call's OpenTelemetry span (``hoare.telemetry``) from the call's record
    (the one the stats store is given; None: no outcome); never raises."""
    handle, call.telemetry = call.telemetry, None
    if handle is None:  # not instrumented (``finish`` looks first)
        return
    try:
        _telemetry.finish_call(handle, record, raised, call.engine)
    except Exception:  # tracing must never fail a call
        logging.getLogger("hoare.telemetry").debug("span not closed", exc_info=True)


def _call_record(call: Call, outcome: Outcome, elapsed_ns: int, provider_faults: int
                 ) -> RecordFields | None:
    """The call's one record, as ``call_record`` builds it, for the stats store
    (``hoare.configure(stats=...)``) and the span; None (logged) when it cannot be
    built: recording never fails a call."""
    try:
        engine = call.engine
        bound = call.instance._hoare_bound()
        fixed = bound.recorded_as
        if fixed is None or fixed[0] is not engine:  # per engine: its names, computed once
            runtime = call.runtime
            fixed = bound.recorded_as = (engine, RecordedAs.of(
                runtime.description.name, runtime.definition_hash(), engine,
                _family_messages(runtime.description)))
        spend = call.spend
        cost = None
        if spend is not None:
            spent = spend.spent()
            cost = spent.get("cost") if isinstance(spent, dict) else None
        # positional: call_record's keywords cost more than building the record
        return outcome_record("contract", fixed[1], configuration.label(), elapsed_ns,
                              outcome, cost, provider_faults, configuration.SHADOW_REFUSAL)
    except Exception:  # recording must never fail a call
        logging.getLogger("hoare.stats").debug("not recorded", exc_info=True)
        return None


def _family_messages(description: ContractDescription) -> tuple[tuple[str, str], ...]:
    """``(family, label)`` of the contract's predicates for the stats store: a family
    of one predicate is labelled with its message, a shared one keeps its name."""
    messages: dict[str, list[str]] = {}
    for source in (*description.pre, *description.post):
        messages.setdefault(source.family, []).append(source.message)
    return tuple((family, texts[0] if len(set(texts)) == 1 and texts[0] else family)
                 for family, texts in messages.items())


def _attach_original(call: Call, raised: BaseException | None) -> None:
    """Give the call's ``ContractViolationError`` (raised, or ``contract_exception``) the
    underlying exception a predicate, ``act`` or the engine raised, as ``.original`` and
    ``__cause__`` (SymbolicAI's ``contract_exception`` is that exception itself; here it
    stays a ``ContractViolationError``, spec §3.7, and carries it)."""
    original = call.last_error
    outcome = call.outcome
    for error in (raised, None if outcome is None else outcome.exception):
        if isinstance(error, ContractViolationError) and not hasattr(error, "original"):
            vars(error)["original"] = original  # the kernel's class declares no such field
            if original is not None and error.__cause__ is None:
                error.__cause__ = original


def _add_error_usage(call: Call, raised: BaseException | None) -> None:
    """Add what the engine's errors cost (``Call.failed`` summed it) to the call's outcome
    usage: the kernel sums answers only, and a refusal or a filtered answer was paid for.
    A new outcome (the kernel's untouched); the errors that carried the old one now carry
    it, so ``contract_outcome``, the raised error, the stats record and the span agree."""
    outcome, spent = call.outcome, call.error_usage
    if outcome is not None and spent is not None:
        call.outcome = with_spent(outcome, spent, raised, outcome.exception)


def _redact_secrets(call: Call, raised: BaseException | None) -> None:
    """Remove the call's ``SecretStr`` values from its outcome's texts and from the
    ``ContractViolationError`` it raises (an answer may echo a secret, and a type
    check quotes the answer)."""
    outcome = call.outcome
    if outcome is None:
        return
    secrets = secret_values(outcome.original_input, outcome.input_used, outcome.result)
    if call.input_secrets:
        secrets |= call.input_secrets
    if not secrets:
        return

    def clean(violations: tuple[Violation, ...]) -> tuple[Violation, ...]:
        return tuple(v if redact(v.message, secrets) == v.message
                     else replace(v, message=redact(v.message, secrets)) for v in violations)

    def clean_raw(raw: object) -> object:  # the answer itself: it may echo a secret
        # by real type: an engine's raw answer may be a foreign object (its __class__)
        if issubclass(type(raw), Response):
            answer = cast("Response", raw)
            texts = tuple(redact(t, secrets) if issubclass(type(t), str) else t
                          for t in answer.texts)
            return raw if texts == answer.texts else replace(answer, texts=texts)
        return redact(cast("str", raw), secrets) if issubclass(type(raw), str) else raw

    attempts = tuple(a._replace(raw=clean_raw(a.raw), feedback=clean(a.feedback),
                                violations=clean(a.violations)) for a in outcome.attempts)
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
