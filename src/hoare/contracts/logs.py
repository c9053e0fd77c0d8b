"""What the library logs about calls: the default violation handler
(``log_violation``: one warning per failed call, repeats collapsed by
``RepeatedWarnings``) and ``verbose=True``'s trace of requests, answers and outcomes on
the ``hoare.verbose`` logger. Neither quotes values the user did not ask to see: a
violation is described by its kind, an answer is redacted of the call's secrets."""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from collections.abc import Callable

from hoare.declaration.models import redact, secret_values
from hoare.engines.base import Request, Response
from hoare.forking import hold_across_fork
from hoare.kernel import Generate, Outcome, Phase, Violation, ViolationKind

logger = logging.getLogger("hoare")


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
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)
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


def log_violation(outcome: Outcome, contract: str = "") -> None:
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


NOT_VALID = "the input is not a valid "


def _describe_without_values(violation: Violation) -> str:
    where = violation.phase.value
    if violation.predicate is not None:
        where += f":{violation.predicate}"
    if violation.kind is ViolationKind.PREDICATE and violation.error_type is None:
        what = violation.message  # the author's message or source expression
    elif violation.phase is Phase.INPUT and violation.message.startswith(NOT_VALID):
        # the library's own words up to the field details, which may quote the value
        what = (violation.message.split(": ", 1)[0] + "; pass the contract input as that "
                "type (the field details are in contract_exception)")
    elif violation.error_type is not None:
        what = f"raised {violation.error_type}"
    else:
        what = "rejected (details in the outcome)"
    return f"[{where} attempt {violation.attempt}] {violation.kind.value}: {what}"


_VERBOSE_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _VERBOSE_LOCK)  # free in a forked child


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


def log_request(name: str, request: Request, effect: Generate) -> None:
    """The request, message by message, as the engine is sent it."""
    log = _verbose_log()
    log.info("hoare %s: %s attempt %d, feedback %s", name, request.task, effect.attempt,
             list(request.feedback))
    for message in request.messages:
        log.info("hoare %s: [%s] %s", name, message.role, message.content)


def log_answer(name: str, response: object, request: Request) -> None:
    """The engine's answer, with the call's ``SecretStr`` values redacted (a model may
    echo one it was never shown, or a rule-based engine may quote the raw input). A
    foreign answer whose ``text`` or ``__str__`` raises is logged by its type."""
    try:
        text = str(response.text if isinstance(response, Response)
                   else getattr(response, "text", response))
    except Exception:
        text = f"<a {type(response).__name__} whose text cannot be read>"
    secrets = secret_values(getattr(request, "input", None))
    _verbose_log().info("hoare %s: [answer] %s", name,
                        redact(text, secrets) if secrets else text)


def log_outcome(name: str, outcome: Outcome) -> None:
    """The call's phases, pre-flight verdict and result, once it is recorded."""
    log = _verbose_log()
    for phase, nanos in outcome.timings_ns.items():
        log.info("hoare %s: phase %-9s %8.3f ms", name, phase, nanos / 1e6)
    if outcome.preflight is not None:
        log.info("hoare %s: pre-flight %s %s", name, outcome.preflight.verdict.value,
                 outcome.preflight.reason)
    log.info("hoare %s: %s after %d generation attempt(s), %d pre-remedies; %s", name,
             "success" if outcome.success else "FAILURE", outcome.generation_attempts,
             outcome.pre_remedies, outcome.summary())
