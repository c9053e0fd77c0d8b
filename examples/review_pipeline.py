"""A two-stage review pipeline whose contracts ``hoare verify`` proves consistent.

Stage 1 (``ScoreReview``) reads a product review and scores it; stage 2
(``DraftResponse``) drafts the shop's answer. ``hoare verify examples/`` checks,
before any LLM call, that each stage's pre- and post-conditions can hold, that
no predicate is vacuous, and that every score stage 1 may return is one stage 2
accepts. At run time, the pre-flight stops a call that no answer could satisfy
(here: a scale whose minimum exceeds its maximum) without calling the engine.

Run: ``python examples/review_pipeline.py`` (offline: a rule-based engine).
"""

from __future__ import annotations

import json
import sys
from typing import Literal

from hoare import Contract, Field, LLMDataModel, Pipeline, Post, Pre, contract
from hoare.engines import FunctionEngine, Request


class Review(LLMDataModel):
    product: str = Field(min_length=1, max_length=80, description="The product reviewed.")
    text: str = Field(min_length=1, description="The customer's review.")
    min_score: int = Field(default=0, ge=0, le=10, description="The bottom of the scale.")
    max_score: int = Field(default=5, ge=1, le=10, description="The top of the scale.")


class ScoredReview(LLMDataModel):
    product: str = Field(min_length=1, max_length=80)
    score: int = Field(ge=0, le=10, description="The score, from min_score to max_score.")
    sentiment: Literal["negative", "neutral", "positive"]
    quote: str = Field(description="A short quote of the review supporting the score.")


class ShopResponse(LLMDataModel):
    text: str = Field(min_length=1, max_length=600)
    offer_refund: bool
    tone: Literal["apologetic", "grateful", "neutral"]


@contract(post_remedy=True)
class ScoreReview(Contract[Review, ScoredReview]):
    """Score a review on the requested scale, quoting the review."""

    prompt = "Score the customer review on the requested scale and quote it."
    pre_conditions = (Pre(lambda r: r.text.strip() != "", "the review is not blank"),)

    def post(self, output: ScoredReview, input: Review) -> bool:
        if not input.min_score <= output.score <= input.max_score:
            raise ValueError(f"the score must be between {input.min_score} and "
                             f"{input.max_score}")
        if output.sentiment == "positive" and output.score * 2 < input.max_score:
            raise ValueError("a positive review cannot have a low score")
        if output.quote not in input.text:
            raise ValueError("the quote must be copied from the review")
        return True

    def forward(self, input: Review) -> ScoredReview:
        if self.contract_successful:
            return self.contract_result
        return ScoredReview(product=input.product, score=0, sentiment="neutral", quote="")


@contract()
class DraftResponse(Contract[ScoredReview, ShopResponse]):
    """Answer the customer: apologise and offer a refund for bad scores."""

    prompt = "Write the shop's answer to the scored review."
    pre_conditions = (Pre(lambda s: s.sentiment != "positive" or s.score >= 1,
                          "a positive review scores at least 1"),)
    post_conditions = (
        Post(lambda r, s: not r.offer_refund or s.score <= 2, "refunds for low scores only"),
        Post(lambda r, s: r.tone != "grateful" or s.sentiment != "negative",
             "no gratitude for complaints"),
        Post(lambda r: not r.text.startswith(" "), "no leading space"),
    )

    def forward(self, input: ScoredReview) -> ShopResponse:
        if self.contract_successful:
            return self.contract_result
        return ShopResponse(text="Thank you for your review.", offer_refund=False,
                            tone="neutral")


review_pipeline = Pipeline(ScoreReview(), DraftResponse())


def rule_based(request: Request) -> str:
    """An offline stand-in for the LLM."""
    if request.task == "generate" and isinstance(request.input, Review):
        review = request.input
        bad = any(w in review.text.lower() for w in ("broke", "bad", "late"))
        score = max(review.min_score, 1) if bad else review.max_score
        quote = review.text.split(".")[0]
        return json.dumps({"product": review.product, "score": score,
                           "sentiment": "negative" if bad else "positive", "quote": quote})
    scored = request.input
    assert isinstance(scored, ScoredReview)
    low = scored.score <= 2
    return json.dumps({
        "text": ("We are sorry about your " if low else "Thank you for reviewing your ")
        + scored.product + ".",
        "offer_refund": low, "tone": "apologetic" if low else "grateful"})


def main() -> int:
    engine = FunctionEngine(rule_based)
    pipeline = Pipeline(ScoreReview(engine=engine), DraftResponse(engine=engine))
    answer = pipeline(Review(product="kettle", text="It broke after a week. Sad."))
    print("answer:", answer.model_dump())

    calls: list[Request] = []

    def counting_answer(request: Request) -> str:
        calls.append(request)
        return rule_based(request)

    counting = FunctionEngine(counting_answer)
    scorer = ScoreReview(engine=counting)
    # A valid Review, but no score lies between 7 and 3: the pre-flight proves it.
    scorer(Review(product="kettle", text="Fine.", min_score=7, max_score=3))
    outcome = scorer.contract_outcome
    assert outcome is not None and outcome.preflight is not None
    print(f"pre-flight: {outcome.preflight.verdict.value} ({outcome.preflight.reason}); "
          f"engine calls: {len(calls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
