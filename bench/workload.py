"""The benchmark workload, shared word for word by hoare, SymbolicAI and the floor.

Imported by the hoare side (``.venv``) and by the SymbolicAI side
(``bench/.venv-symai``), so it depends on pydantic and the standard library only
and never imports hoare or symai. The models are built by ``build_models`` with
each framework's own ``LLMDataModel`` base class.

No ``from __future__ import annotations`` here: SymbolicAI reads annotations with
``inspect.signature`` and breaks on string annotations.

The contract: a support ticket (input) is triaged into an 8-field ``Triage``
(output). Three pre-conditions on the ticket, four post-conditions on the triage.
In the ``reads_input`` variant the fourth post-condition also reads the ticket
(``eta_hours <= sla_hours``), which is what makes an input impossible: with
``sla_hours == 0`` no output passes, since ``eta_hours >= 1``.
"""

import json
from typing import Any, Literal

PROMPT = (
    "Triage the support ticket: pick a category and a priority (1 = most urgent), "
    "estimate the hours to resolve it, summarise it in one sentence, tag it, and "
    "say whether a human must look at it."
)


def build_models(base: type, Field: Any) -> tuple[Any, Any]:
    """``(Ticket, Triage)`` as subclasses of ``base`` (each framework's LLMDataModel);
    ``Field`` is ``pydantic.Field``."""

    class Ticket(base):
        text: str = Field(min_length=1, max_length=4000, description="the customer's message")
        customer_tier: Literal["free", "pro", "enterprise"] = Field(
            description="the customer's plan")
        max_tags: int = Field(ge=1, le=10, description="how many tags may be assigned")
        sla_hours: int = Field(ge=0, le=720,
                               description="hours within which the ticket must be resolved")

    class Triage(base):
        category: Literal["billing", "bug", "account", "feature", "other"] = Field(
            description="what the ticket is about")
        priority: int = Field(ge=1, le=5, description="1 = most urgent, 5 = least")
        confidence: float = Field(ge=0.0, le=1.0, description="confidence in this triage")
        summary: str = Field(min_length=1, max_length=200, description="one-sentence summary")
        tags: list[str] = Field(max_length=10, description="short topical tags")
        needs_human: bool = Field(description="a human agent must handle the ticket")
        sentiment: str = Field(pattern="^(positive|negative|neutral)$",
                               description="the customer's sentiment")
        eta_hours: int = Field(ge=1, le=720, description="estimated hours to resolve")

    return Ticket, Triage


# -- predicates: plain functions, each one `return <expression>` ---------------------------

def pre_text_not_blank(t):
    return t.text.strip() != ""


def pre_free_tier_short(t):
    return t.customer_tier != "free" or len(t.text) <= 1000


def pre_tags_bounded(t):
    return t.max_tags <= 8


def post_urgent_needs_human(o):
    return o.priority != 1 or o.needs_human


def post_low_confidence_to_human(o):
    return o.confidence >= 0.5 or o.needs_human


def post_few_tags(o):
    return len(o.tags) <= 5


def post_positive_not_urgent(o):
    return o.sentiment != "positive" or o.priority >= 3


def post_within_sla(o, t):
    return o.eta_hours <= t.sla_hours


PRE = (
    (pre_text_not_blank, "the ticket text must not be blank"),
    (pre_free_tier_short, "free-tier tickets are at most 1000 characters"),
    (pre_tags_bounded, "at most 8 tags may be requested"),
)
POST = (
    (post_urgent_needs_human, "priority-1 tickets must go to a human"),
    (post_low_confidence_to_human, "a triage with confidence below 0.5 must go to a human"),
    (post_few_tags, "at most 5 tags"),
    (post_positive_not_urgent, "a positive ticket is not urgent (priority 3 or more)"),
)
# The reads-input variant: the fourth post-condition reads the ticket too.
POST_READS_INPUT = (*POST[:3], (post_within_sla, "the estimate must be within the SLA"))

TICKET = {
    "text": "I was charged twice for my March invoice, please refund one of the charges.",
    "customer_tier": "pro",
    "max_tags": 4,
    "sla_hours": 48,
}
IMPOSSIBLE_TICKET = {**TICKET, "sla_hours": 0}  # eta_hours >= 1 > 0: no triage passes

VALID = {
    "category": "billing",
    "priority": 2,
    "confidence": 0.9,
    "summary": "Customer was charged twice for the March invoice and wants a refund.",
    "tags": ["refund", "double-charge"],
    "needs_human": False,
    "sentiment": "negative",
    "eta_hours": 24,
}
# Type-valid but breaks "at most 5 tags" (and nothing else).
VIOLATES_POST = {**VALID, "tags": ["refund", "billing", "march", "invoice", "charge", "urgent"]}
# The best an engine can do for the impossible ticket: eta_hours at its minimum.
BEST_EFFORT = {**VALID, "eta_hours": 1}

VALID_JSON = json.dumps(VALID)
VIOLATES_POST_JSON = json.dumps(VIOLATES_POST)
MALFORMED_JSON = VALID_JSON[:-12]  # cut off: not parseable
BEST_EFFORT_JSON = json.dumps(BEST_EFFORT)


def scripted_answers(k: int, kind: str) -> list[str]:
    """``k`` bad answers (``kind``: "post" violates a post-condition, "malformed" is
    not JSON), then valid ones."""
    bad = {"post": VIOLATES_POST_JSON, "malformed": MALFORMED_JSON}[kind]
    return [bad] * k + [VALID_JSON] * 64


# What a corrective prompt must say for the model to know what to fix.
ERROR_MARKERS = {"post": ("at most 5 tags",),
                 "malformed": ("invalid json", "eof while parsing", "not valid json", "cut off")}


def names_error(kind: str, prompt_text: str) -> bool:
    """Does a corrective prompt name the problem of the rejected answer?"""
    return any(marker in prompt_text.lower() for marker in ERROR_MARKERS[kind])


def failing_messages(checks: tuple[Any, ...], value: object, used: object = None) -> list[str]:
    """The messages of the checks that ``value`` fails; a two-parameter post-condition
    also gets ``used``, the input (SymbolicAI's ``post`` uses this: every check runs,
    all failures are reported, as in hoare)."""
    return [message for fn, message in checks
            if not (fn(value, used) if fn.__code__.co_argcount >= 2 else fn(value))]
