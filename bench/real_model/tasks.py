"""Seven small tasks for the real-model bench: a contract each, deterministic inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hoare import Contract, Field, LLMDataModel, Post, contract


class Ticket(LLMDataModel):
    text: str = Field(description="a customer's message")


class Triage(LLMDataModel):
    label: Literal["bug", "question", "praise"]
    urgency: int = Field(ge=1, le=5, description="1 (low) to 5 (urgent)")


class Article(LLMDataModel):
    body: str = Field(description="a short news text")


class Title(LLMDataModel):
    title: str = Field(description="a reply title starting with 'Re: '")


class Review(LLMDataModel):
    text: str = Field(description="a product review")


class Rating(LLMDataModel):
    sentiment: Literal["positive", "negative", "neutral"]
    stars: int = Field(ge=1, le=5)


class Sum(LLMDataModel):
    a: int
    b: int


class Total(LLMDataModel):
    total: int = Field(description="a + b")


class Note(LLMDataModel):
    text: str = Field(description="a short note to tag")


class Tags(LLMDataModel):
    tags: list[str] = Field(description="1 to 3 lowercase keywords")


def _triage(decoding: Any, stream: bool = False) -> type[Contract[Ticket, Triage]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class TriageTicket(Contract[Ticket, Triage]):
        prompt = ("Label the customer's message as bug, question or praise, and rate its "
                  "urgency from 1 to 5. Only bugs may have an urgency above 3.")
        post_conditions = [Post(lambda t: t.urgency <= 3 or t.label == "bug",
                                "only bugs are urgent")]

        def forward(self, ticket: Ticket) -> Triage:
            return self.contract_result if self.contract_successful else \
                Triage(label="question", urgency=1)

    return TriageTicket


def _title(decoding: Any, stream: bool = False) -> type[Contract[Article, Title]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class ReplyTitle(Contract[Article, Title]):
        prompt = "Write a reply title for the text: it starts with 'Re: ', at most 40 characters."
        post_conditions = [Post(lambda t: t.title.startswith("Re: ") and len(t.title) <= 40,
                                "starts with 'Re: ', at most 40 characters")]

        def forward(self, article: Article) -> Title:
            return self.contract_result if self.contract_successful else Title(title="Re: -")

    return ReplyTitle


def _rating(decoding: Any, stream: bool = False) -> type[Contract[Review, Rating]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class RateReview(Contract[Review, Rating]):
        prompt = ("Give the review's sentiment and 1 to 5 stars: positive reviews get 4 or 5 "
                  "stars, and only they.")
        post_conditions = [Post(lambda r: (r.sentiment == "positive") == (r.stars >= 4),
                                "positive reviews get 4 or 5 stars, and only they")]

        def forward(self, review: Review) -> Rating:
            return self.contract_result if self.contract_successful else \
                Rating(sentiment="neutral", stars=3)

    return RateReview


def _sentiment(decoding: Any, stream: bool = False) -> type[Contract[Review, Rating]]:
    """The issue-34 task: an equivalence over finite fields only (a Literal and an int
    range), which ``decoding="schema"`` now sends as an anyOf of branches (positive with
    4-5 stars, negative with 1-2, neutral with 3) and llama.cpp's grammar enforces."""
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class ReviewSentiment(Contract[Review, Rating]):
        prompt = ("Give the review's sentiment and 1 to 5 stars: positive reviews get 4 or "
                  "5 stars, negative ones 1 or 2, neutral ones 3.")
        post_conditions = [Post(lambda r: r.stars >= 4 if r.sentiment == "positive" else
                                r.stars <= 2 if r.sentiment == "negative" else r.stars == 3,
                                "stars match the sentiment")]

        def forward(self, review: Review) -> Rating:
            return self.contract_result if self.contract_successful else \
                Rating(sentiment="neutral", stars=3)

    return ReviewSentiment


def _sum(decoding: Any, stream: bool = False) -> type[Contract[Sum, Total]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class AddUp(Contract[Sum, Total]):
        prompt = "Add the two numbers a and b."
        post_conditions = [Post(lambda t, s: t.total == s.a + s.b, "total is a + b")]

        def forward(self, numbers: Sum) -> Total:
            return self.contract_result if self.contract_successful else Total(total=0)

    return AddUp


def _tags(decoding: Any, stream: bool = False) -> type[Contract[Note, Tags]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class TagNote(Contract[Note, Tags]):
        prompt = "Give 1 to 3 lowercase keywords for the note."
        post_conditions = [
            Post(lambda t: 1 <= len(t.tags) <= 3, "1 to 3 tags"),
            Post(lambda t: all(tag == tag.lower() and tag.strip() for tag in t.tags),
                 "lowercase, not blank"),
        ]

        def forward(self, note: Note) -> Tags:
            return self.contract_result if self.contract_successful else Tags(tags=["note"])

    return TagNote


class Question(LLMDataModel):
    text: str = Field(description="a yes/no question")
    expected: Literal["yes", "no"] = Field(exclude=True)  # the key: never shown to the model


class Verdict(LLMDataModel):
    verdict: Literal["yes", "no"]
    reason: str = Field(description="why, in two or three sentences")


def _verdict(decoding: Any, stream: bool = False) -> type[Contract[Question, Verdict]]:
    @contract(decoding=decoding, stream=stream,
              remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
    class Answer(Contract[Question, Verdict]):
        prompt = "Answer the question with yes or no, then say why."
        post_conditions = [Post(lambda v, q: v.verdict == q.expected, "the right answer")]

        def forward(self, question: Question) -> Verdict:
            return self.contract_result if self.contract_successful else \
                Verdict(verdict="no", reason="-")

    return Answer


QUESTIONS = [("Is an apple a fruit?", "yes"), ("Is the sun a planet?", "no"),
             ("Do fish live in water?", "yes"), ("Is ice hot?", "no"),
             ("Is Paris in France?", "yes"), ("Can a cat fly?", "no"),
             ("Is two larger than one?", "yes"), ("Is the sea made of sand?", "no"),
             ("Do birds have feathers?", "yes"), ("Is a car an animal?", "no")]
MESSAGES = ["The app crashes when I open settings.", "How do I export my data?",
            "Love the new dark mode!", "Login fails with error 500 since today.",
            "Can I change my username?", "Great support, thanks a lot.",
            "The page is blank after the update.", "Where is the invoice for May?",
            "Sync deletes my notes!", "Nice work on the speed improvements."]
TEXTS = ["City council approves new bike lanes downtown.",
         "Local bakery wins national bread award.",
         "Storm closes schools across the region on Monday.",
         "Museum opens a new wing for modern art.",
         "Train line to the airport delayed until spring.",
         "Volunteers clean up the river banks this weekend.",
         "New library hours start next month.",
         "High school robotics team heads to finals.",
         "Farmers market moves to the main square.",
         "Power outage hits the east side for two hours."]
REVIEWS = ["Works perfectly, battery lasts for days.", "Broke after a week, very disappointed.",
           "It is okay, nothing special.", "Best purchase this year!",
           "Arrived late and the box was damaged.", "Does what it says.",
           "Terrible sound quality.", "Excellent value for the price.",
           "Average, I expected more.", "Fantastic build quality, highly recommend."]
NOTES = ["Buy milk and eggs after work.", "Call the dentist about the appointment.",
         "Prepare slides for the quarterly review.", "Water the plants on the balcony.",
         "Renew the car insurance before Friday.", "Book flights for the summer trip.",
         "Fix the leaking kitchen tap.", "Send the report to the finance team.",
         "Pick up the kids at four.", "Back up the laptop to the external drive."]


@dataclass(frozen=True)
class Task:
    name: str
    make: Callable[..., type[Contract[Any, Any]]]
    inputs: list[LLMDataModel]


TASKS = [
    Task("triage", _triage, [Ticket(text=t) for t in MESSAGES]),
    Task("title", _title, [Article(body=t) for t in TEXTS]),
    Task("rating", _rating, [Review(text=t) for t in REVIEWS]),
    Task("sentiment", _sentiment, [Review(text=t) for t in REVIEWS]),
    Task("sum", _sum, [Sum(a=3 + 7 * i, b=11 + 5 * i) for i in range(10)]),
    Task("tags", _tags, [Note(text=t) for t in NOTES]),
    # the field that decides comes first, a long one after it: what early stopping is for
    Task("verdict", _verdict, [Question(text=t, expected=e) for t, e in QUESTIONS]),
]
