"""``@contract``: checks its arguments, reads the decorated class once
(``describe``), prepares its ``Runtime`` and replaces ``forward`` with the synchronous
driver (``begin``, the kernel's ``run_sync`` over ``Call.perform``, ``finish``)."""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, cast, overload

from hoare.contracts import configuration
from hoare.contracts.arguments import (
    checked_choice,
    checked_flag,
    checked_policy,
    checked_retry_params,
    checked_whole,
)
from hoare.contracts.base import Contract
from hoare.contracts.current import CURRENT_CALL
from hoare.contracts.lifecycle import begin, finish
from hoare.contracts.prompts import DEFAULT_FEEDBACK_CHARS
from hoare.contracts.runtime import Runtime
from hoare.declaration.description import describe
from hoare.engines.base import Options
from hoare.errors import ContractDefinitionError, shown
from hoare.kernel import ContractConfig, Outcome, Policy, RetryPolicy, run_sync

__all__ = ["contract"]

logger = logging.getLogger("hoare")
C = TypeVar("C", bound=type)


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


def _user_forward(cls: type) -> Callable[..., Any]:
    """The user's own forward: defined on ``cls`` or inherited (a subclass of a
    contract may re-decorate it with another configuration)."""
    for klass in cls.__mro__:
        if klass is Contract:
            break
        candidate = klass.__dict__.get("forward")
        if candidate is not None:
            found: Callable[..., Any] = getattr(candidate, "__hoare_original__", candidate)
            return found
    raise ContractDefinitionError(
        f"{cls.__qualname__} must define forward(self, input, **kwargs) -> Output")


def _wrap_forward(cls: type, original: Callable[..., Any]) -> Callable[..., Any]:
    def forward(self: Contract[Any, Any], *args: Any, **kwargs: Any) -> Any:
        call, run = begin(self, args, kwargs)
        token = CURRENT_CALL.set(call)
        try:
            outcome, value = run_sync(run, call.perform)
        except BaseException as error:
            finish(call, None, error)
            raise
        finally:
            CURRENT_CALL.reset(token)
        finish(call, outcome, None)
        return value

    forward.__name__ = "forward"
    forward.__qualname__ = f"{cls.__qualname__}.forward"
    forward.__doc__ = original.__doc__
    vars(forward).update(__wrapped__=original, __hoare_original__=original)
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
    resend: Literal["vary", "stop"] = ..., stream: bool = ...,
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
    stream = checked_flag(stream, "stream")
    verbose = checked_flag(verbose, "verbose")
    if preflight is not None:
        configuration.check_preflight(preflight, "preflight")
    resend = cast("Literal['vary', 'stop']", checked_choice(
        resend, "resend", ("vary", "stop"), "'vary' (another seed and temperature) or 'stop'"))
    decoding = cast("Literal['schema', 'types', 'none']", checked_choice(
        decoding, "decoding", ("schema", "types", "none"),
        "'schema' (the type and the post-conditions folded in), 'types' or 'none'"))
    feedback = cast("Literal['errors', 'messages']", checked_choice(
        feedback, "feedback", ("errors", "messages"),
        "'errors' (exception texts reach the model) or 'messages' (only texts the author "
        "wrote)"))
    feedback_chars = checked_whole(feedback_chars, "feedback_chars", 1)
    retry_params = checked_retry_params(remedy_retry_params)
    if "dynamic_engine" in retry_params:
        raise ContractDefinitionError(
            "remedy_retry_params={'dynamic_engine': ...} (SymbolicAI's per-attempt engine "
            "selection) is not supported: pass engine=... to the contract, or an engine "
            "that chooses per attempt, e.g. FunctionEngine(lambda request: (strong if "
            "request.attempt > 1 else fast).complete(request).text)")
    config = ContractConfig(
        pre_remedy=checked_flag(pre_remedy, "pre_remedy"),
        post_remedy=checked_flag(post_remedy, "post_remedy"),
        accumulate_errors=checked_flag(accumulate_errors, "accumulate_errors"),
        policy=checked_policy(policy),
        retry=RetryPolicy.from_mapping(_no_wait_means_no_jitter(retry_params)))
    if on_violation is not None and not callable(on_violation):
        raise TypeError(f"on_violation must be callable(outcome), got {shown(on_violation)}")
    if options is not None and not issubclass(type(options), Options):
        raise TypeError(f"options must be hoare.engines.Options, got {shown(options)}")

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
        target.__hoare_runtime__ = Runtime(description, on_violation,
                                            Options() if options is None else options,
                                            feedback_chars, resend, stream)
        target.__hoare_runtime__.preflight_choice = preflight
        wrapped = _wrap_forward(target, original)
        target.forward = wrapped  # type: ignore[method-assign]  # replacing forward is the point
        if verbose and not logger.hasHandlers():  # verbose asks to see the log: show it
            logger.addHandler(logging.StreamHandler())
            logger.setLevel(logging.INFO)
        return target

    if cls is not None:  # bare @contract: the frame that applied it called contract()
        return decorate(cls, sys._getframe(1))
    return decorate


def _no_wait_means_no_jitter(params: dict[str, Any]) -> dict[str, Any]:
    """``{"delay": 0}`` asks for no wait: without an explicit ``jitter`` the kernel's
    default (up to 0.1 s per remedy) would still sleep, so it is 0 too. The kernel's
    defaults (spec §4.3) are unchanged. ``params`` is ``checked_retry_params``': a
    ``delay`` there is an exact finite number."""
    if params.get("delay") == 0 and "jitter" not in params:
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
