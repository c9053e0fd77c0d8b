"""The workload on the hoare side: the contract classes, the instant engines, the floor.

No ``from __future__ import annotations`` (not needed; keeps the module shaped like
the SymbolicAI side).
"""

from collections.abc import Callable

import workload

from hoare import Contract, Field, LLMDataModel, Post, Pre, contract
from hoare.engines import FunctionEngine, Request

Ticket, Triage = workload.build_models(LLMDataModel, Field)
TICKET = Ticket(**workload.TICKET)
IMPOSSIBLE = Ticket(**workload.IMPOSSIBLE_TICKET)
FALLBACK = Triage(**workload.BEST_EFFORT)

# hoare's defaults are SymbolicAI's documented ones (tries=5, backoff=2, ...); the
# benchmark only zeroes the delays, as on the SymbolicAI side.
RETRY = {"tries": 5, "delay": 0, "jitter": 0}


def _quiet(outcome: object) -> None:
    """Violation handler of the benchmark: failures are counted, not logged."""


def make_contract(*, preflight: bool, reads_input: bool = False) -> type:
    """The benchmark contract: 3 declared pre-conditions, 4 declared post-conditions
    (the fourth reads the input when ``reads_input``)."""
    posts = workload.POST_READS_INPUT if reads_input else workload.POST

    class TriageTicket(Contract):
        prompt = workload.PROMPT
        pre_conditions = tuple(Pre(fn, message) for fn, message in workload.PRE)
        post_conditions = tuple(Post(fn, message) for fn, message in posts)

        def forward(self, ticket: Ticket) -> Triage:
            if self.contract_successful:
                return self.contract_result
            return FALLBACK

    TriageTicket.__qualname__ = TriageTicket.__name__ = (
        f"TriageTicket_{'reads' if reads_input else 'plain'}_{'pf' if preflight else 'nopf'}")
    return contract(preflight=preflight, remedy_retry_params=RETRY,
                    on_violation=_quiet)(TriageTicket)


PLAIN_OFF = make_contract(preflight=False)
PLAIN_ON = make_contract(preflight=True)
READS_OFF = make_contract(preflight=False, reads_input=True)
READS_ON = make_contract(preflight=True, reads_input=True)


def prompt_chars(request: Request) -> int:
    """Characters of the chat messages a real engine would send for ``request``."""
    return sum(len(message.content) for message in request.messages)


def instant(answer: str = workload.VALID_JSON) -> FunctionEngine:
    """The instant engine: returns ``answer`` without looking at the request."""
    return FunctionEngine(lambda request: answer)


def instant_rendering(answer: str = workload.VALID_JSON) -> FunctionEngine:
    """An instant engine that renders the messages first, as a real engine does."""

    def fn(request: Request) -> str:
        request.messages  # noqa: B018  (renders the chat messages)
        return answer

    return FunctionEngine(fn)


class Recorder:
    """A scripted engine function: answers in order, counts calls and prompt characters."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.chars: list[int] = []
        self.texts: list[str] = []
        self.feedback: list[tuple[str, ...]] = []

    def __call__(self, request: Request) -> str:
        self.chars.append(prompt_chars(request))
        self.feedback.append(request.feedback)
        self.texts.append("\n".join(message.content for message in request.messages))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    @property
    def calls(self) -> int:
        return len(self.chars)


# -- the floor: the same work, hand-written, no framework --------------------------------

def floor_engine(ticket: object) -> str:
    return workload.VALID_JSON


pre_text_not_blank = workload.pre_text_not_blank
pre_free_tier_short = workload.pre_free_tier_short
pre_tags_bounded = workload.pre_tags_bounded
post_urgent_needs_human = workload.post_urgent_needs_human
post_low_confidence_to_human = workload.post_low_confidence_to_human
post_few_tags = workload.post_few_tags
post_positive_not_urgent = workload.post_positive_not_urgent
validate_json = Triage.model_validate_json


def floor(ticket: object, engine: Callable[[object], str] = floor_engine) -> object:
    """What a careful programmer writes without a framework: check the input, call the
    model, parse and validate its JSON, check the output."""
    if not pre_text_not_blank(ticket):
        raise ValueError("the ticket text must not be blank")
    if not pre_free_tier_short(ticket):
        raise ValueError("free-tier tickets are at most 1000 characters")
    if not pre_tags_bounded(ticket):
        raise ValueError("at most 8 tags may be requested")
    output = validate_json(engine(ticket))
    if not post_urgent_needs_human(output):
        raise ValueError("priority-1 tickets must go to a human")
    if not post_low_confidence_to_human(output):
        raise ValueError("a triage with confidence below 0.5 must go to a human")
    if not post_few_tags(output):
        raise ValueError("at most 5 tags")
    if not post_positive_not_urgent(output):
        raise ValueError("a positive ticket is not urgent (priority 3 or more)")
    return output


def kernel_alone() -> Callable[[object], object]:
    """The floor's work driven by hoare's kernel alone, with no library around it: the
    same 7 checks as kernel predicates, the engine's text validated as the output,
    ``forward`` returning the result, and the outcome counted by a ``SuccessTracker``
    (as every contract call's is). What no library change can take below: the kernel
    is the trusted core, and issue 31 leaves it unchanged."""
    from hoare.kernel import (
        ContractConfig,
        Hooks,
        Predicate,
        RetryPolicy,
        SuccessTracker,
        run_call,
        run_sync,
    )

    def predicates(checks: tuple[tuple[Callable[[object], bool], str], ...],
                   phase: str) -> tuple[Predicate, ...]:
        return tuple(Predicate(f"{phase}{i}", fn, message, f"{phase}{i}", uses_context=False)
                     for i, (fn, message) in enumerate(checks))

    hooks = Hooks(
        check_input=lambda raw: raw,
        check_output=lambda raw, used: validate_json(raw),
        forward=lambda used, outcome: outcome.result,
        pre_conditions=predicates(workload.PRE, "pre"),
        post_conditions=predicates(workload.POST, "post"))
    config = ContractConfig(retry=RetryPolicy(tries=5, delay=0, jitter=0))
    tracker = SuccessTracker()

    def perform(effect: object) -> object:
        return floor_engine(getattr(effect, "input", None))

    def call(ticket: object) -> object:
        outcome, value = run_sync(run_call(ticket, config, hooks), perform)
        tracker.record(outcome)
        return value

    return call
