"""Every exception hoare raises, in one tree.

Catch ``HoareError`` for anything hoare itself reports; catch a group to handle
one kind of failure::

    HoareError                        root (defined in the kernel)
    ├── UsageError                    the program is wrong: fix the code or the setup.
    │   │                             Never retried, never a contract violation.
    │   ├── ContractDefinitionError   (TypeError) a malformed contract class: at
    │   │                             decoration, or at its first call when only an
    │   │                             instance can tell (a missing ``prompt``)
    │   ├── ContractCallError         (TypeError) a contracted call with the wrong
    │   │                             arguments (no input, two positional inputs)
    │   ├── EngineNotConfigured       (RuntimeError) no engine given or configured
    │   ├── InvalidOptions            (ValueError) hoare.engines: a bad Options value
    │   ├── ConfigError               hoare.verifier.project.config: a bad [tool.hoare]
    │   ├── DiscoveryError            hoare.verifier.project.discovery: a target cannot be found
    │   ├── VerifyError               hoare.verifier.project.run: nothing was verified (exit 2)
    │   ├── ToolShapeError            hoare.verifier.checks.tools: a tool verify cannot describe
    │   └── EvalError                 hoare.stats.evaluation: a bad ``hoare eval`` data set
    ├── ContractViolationError        (kernel) a failed contract under ``enforce`` /
    │   │                             ``quick_enforce``; carries the ``Outcome``
    │   └── ResultTypeError           (TypeError) ``forward`` returned the wrong type
    ├── InvalidValue                  (ValueError) a value failed its type check; inside
    │   │                             a call it becomes a ``type`` violation
    │   └── StoppedEarly              a streamed answer cancelled once doomed
    │                                 (``@contract(stream=True)``): a ``type`` violation
    ├── SecretRedacted                replaces a hook's exception whose text quoted a
    │                                 ``SecretStr`` of the call (spec §8.4)
    ├── StoreError                    hoare.stats.schema: the stats store cannot be used
    ├── ContractTermination           hoare.agents: a violation under ENFORCE ends the run
    ├── HoareVerifyFailure            hoare.pytest_plugin: a ``hoare verify`` test failed
    ├── Unmodelled                    hoare.unmodelled: the verifier does not model
    │                                 something exactly (the verdict is ``unknown``);
    │                                 Opaque, Unsupported, SourceNotFound, … below it
    ├── WatchdogTimeout               (TimeoutError) hoare.engines.deadline: gave up waiting
    └── EngineError                   (kernel) one engine call failed
        ├── RetryableEngineError      another attempt may succeed (the stage retries)
        │   ├── EngineAnswerError     hoare.engines: a 2xx answer that is not a completion
        │   ├── ModelRefusal          hoare.engines: the model refused (its text, usage)
        │   └── ContentFiltered       hoare.engines: the server's filter withheld it
        └── FatalEngineError          (kernel) retrying cannot help: the stage ends
            ├── BudgetError           a budget forbids the request (spent, no price)
            └── IdenticalResend       a remedy would resend an earlier request
                                      unchanged (``@contract(resend="stop")``)

The kernel (``hoare.kernel``, standard library only) defines ``HoareError``,
``ContractViolationError``, ``ResultTypeError``, ``EngineError`` and
``FatalEngineError``; this module adds the library's groups as subclasses, so
dependencies point one way (library -> kernel). Concrete engine errors subclass
exactly one of ``RetryableEngineError`` / ``FatalEngineError`` / ``BudgetError``
(plus, where useful, one builtin such as ``ValueError``): no class here has more
than two bases.

Every error pickles (``HoareError.__reduce__``): its type, message and picklable
attributes cross a process boundary; an attribute that cannot be pickled is dropped.
Classes of other modules (engines, queries, the verifier) sit under these groups; the
test ``tests/test_errors.py`` fails when a public exception class is outside the tree.

Exceptions raised by user code (predicates, ``act``, ``forward``, handlers) are not
wrapped: they become violations or reach the caller unchanged (spec/pipeline.md).
"""

from __future__ import annotations

from hoare.kernel import (
    ContractViolationError,
    EngineError,
    FatalEngineError,
    HoareError,
    ResultTypeError,
    exception_text,
)

__all__ = [
    "BudgetError",
    "ContractCallError",
    "ContractDefinitionError",
    "ContractViolationError",
    "EngineError",
    "EngineNotConfigured",
    "FatalEngineError",
    "HoareError",
    "IdenticalResend",
    "InvalidValue",
    "ResultTypeError",
    "RetryableEngineError",
    "SecretRedacted",
    "StoppedEarly",
    "UsageError",
    "safe_text",
    "shown",
]


class UsageError(HoareError):
    """hoare is used wrongly; the message names the fix. Raised before any engine call,
    never retried and never recorded as a contract violation."""


class ContractDefinitionError(UsageError, TypeError):
    """A contract class is malformed (missing annotation, bad predicate, no prompt, …)."""

    # where the user fixes it, when known: a predicate's own file and line (``hoare
    # verify`` reports them)
    file: str | None = None
    line: int | None = None


class ContractCallError(UsageError, TypeError):
    """A contracted call got the wrong arguments (the input missing or given twice)."""


class EngineNotConfigured(UsageError, RuntimeError):
    """No engine was given and none is configured."""


class InvalidValue(HoareError, ValueError):
    """A value failed its type check; the message says what was wrong, field by field."""


class StoppedEarly(InvalidValue):
    """A streamed answer was cancelled as soon as a complete field or a post-condition on
    complete fields failed (``hoare.contracts.early_stop``): the attempt's ``type`` violation."""


class SecretRedacted(HoareError):
    """A predicate's or ``act``'s exception whose text quoted a ``SecretStr`` of the
    call: it replaces the original inside the call, with the secret redacted and the
    original type named (spec/pipeline.md §8.4)."""

    def __init__(self, original_type: str, text: str) -> None:
        super().__init__(f"{original_type}: {text}")
        self.original_type = original_type


class RetryableEngineError(EngineError):
    """An engine call failed in a way another *contract attempt* may fix (an answer with
    no choices): the stage goes on with its next attempt. Transport failures are not
    retryable here: the transport retries them itself (bounded, logged), and when its
    retries run out it raises ``TransportError``, a ``FatalEngineError``, so remedy
    attempts are never spent on a broken connection."""


class BudgetError(FatalEngineError):
    """A budget forbids the request (it would exceed the cap, or a price is missing);
    the request was not sent and the stage ends."""


class IdenticalResend(FatalEngineError):
    """A remedy attempt would resend an earlier request of its call unchanged
    (``@contract(resend="stop")``): not sent, and the stage ends, as retrying with the
    same request cannot help."""


def safe_text(error: BaseException, limit: int | None = None) -> str:
    """``str(error)`` that never raises: a foreign exception may break ``__str__``;
    then (or when it is empty) the text names its type. ``limit`` caps the length."""
    text = exception_text(error)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… [truncated: {limit} of {len(text)} characters shown]"
    return text


def shown(value: object, limit: int = 200) -> str:
    """``repr(value)`` for an error message about a bad argument, at most ``limit``
    characters. Never raises: the value may be a foreign object whose ``__repr__``
    raises or returns a ``str`` subclass with dunders of its own; then its type is
    named (read with ``type()``, never its ``__class__``)."""
    try:
        text = repr(value)
    except Exception:
        text = None
    if not isinstance(text, str):
        return f"a {type(value).__name__} object"
    text = str.__str__(text)
    return text if len(text) <= limit else text[:limit] + "…"
