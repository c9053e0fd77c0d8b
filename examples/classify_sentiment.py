"""``classify`` over a ``Literal`` answer: the answer and a probability for each label,
read from the first answer token's log-probabilities.

Offline (the default) the engine is a stand-in that answers as an
OpenAI-compatible server does when asked for ``logprobs``/``top_logprobs``:
fixed log-probabilities per review, so the output is reproducible. ``--live``
asks a real model (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``HOARE_MODEL``); its
server must support logprobs.

Run: ``python examples/classify_sentiment.py`` (offline) or ``--live``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Literal

from hoare import Post
from hoare.engines import Engine
from hoare.engines.base import Request, Response, TokenLogprob, Usage
from hoare.queries import Query, classify, standard_model

Label = Literal["positive", "negative", "neutral"]


@dataclass
class Sentiment(Query[Label]):
    """Classify the sentiment of the customer review. Answer with one word."""

    review: str

    post_conditions = [Post(lambda label, q: label != "neutral" or "!" not in q.review,
                            "a review with an exclamation mark is not neutral: pick a side")]


# the offline stand-in: what a server returns for the first token of each review
_FIRST_TOKEN = {
    "The kettle boils fast and looks great.": [("positive", 0.92), ("neutral", 0.06),
                                               ("negative", 0.02)],
    "It broke after two days.": [("negative", 0.81), ("neutral", 0.15), ("positive", 0.04)],
}


class OfflineLogprobs:
    """An engine answering the most likely label with its top alternatives."""

    model = "offline-logprobs"

    def complete(self, request: Request) -> Response:
        review = getattr(request.input, "review", "")
        choices = _FIRST_TOKEN.get(review, [("neutral", 0.5), ("positive", 0.25),
                                            ("negative", 0.25)])
        top = tuple((token, math.log(p)) for token, p in choices)
        first = TokenLogprob(top[0][0], top[0][1], top)
        return Response(texts=(choices[0][0],), finish_reasons=("stop",),
                        usage=Usage(requests=1, input_tokens=40, output_tokens=1),
                        model=self.model, logprobs=((first,),))

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a != "--live"]
    if unknown:
        print(f"usage: python examples/classify_sentiment.py [--live]  (unknown: "
              f"{unknown[0]})", file=sys.stderr)
        return 2
    live = "--live" in argv
    engine: Engine = standard_model(os.environ.get("HOARE_MODEL", "gpt-4o-mini")) if live \
        else OfflineLogprobs()
    for review in _FIRST_TOKEN:
        result = classify(Sentiment(review), engine)
        shown = ", ".join(f"{label} {p:.2f}" for label, p in result.distribution.items())
        print(f"{review!r}: {result.value}  ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
