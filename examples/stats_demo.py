"""Success statistics that last, offline: 60 calls of one contract, recorded in a SQLite
file, then `hoare stats` on it.

The engine is a seeded stand-in for a model that sometimes answers out of range or
with the wrong label, so the remedies and the per-family rates have something to show.

Run: ``python examples/stats_demo.py [calls.db]`` (default: a temporary file)
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

import hoare
from hoare import Contract, Field, LLMDataModel, Post, contract
from hoare.engines import FunctionEngine, Request


class Ticket(LLMDataModel):
    text: str = Field(description="a customer's message")


class Triage(LLMDataModel):
    label: Literal["bug", "question", "praise"]
    urgency: int = Field(ge=1, le=5)


@contract(remedy_retry_params={"tries": 3, "delay": 0, "jitter": 0})
class TriageTicket(Contract[Ticket, Triage]):
    prompt = "Label the ticket and rate its urgency from 1 to 5."
    post_conditions = (
        Post(lambda t: t.urgency <= 3 or t.label == "bug", "only bugs are urgent"),
        Post(lambda t: t.label != "praise" or t.urgency == 1, "praise is never urgent"),
    )

    def forward(self, ticket: Ticket) -> Triage:
        if self.contract_successful:
            return self.contract_result
        return Triage(label="question", urgency=1)


def flaky_model(seed: int, off_rules: float = 0.3) -> FunctionEngine:
    """Answers a random label, and a random urgency ``off_rules`` of the time (else 1),
    so some answers break the contract's rules."""
    rng = random.Random(seed)

    def answer(request: Request) -> str:
        label = rng.choice(["bug", "question", "praise"])
        urgency = rng.choice([1, 2, 3, 4, 5]) if rng.random() < off_rules else 1
        return json.dumps({"label": label, "urgency": urgency})

    return FunctionEngine(answer)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else Path(tempfile.mkdtemp()) / "calls.db"
    hoare.configure(stats=path, label="seeded-stand-in")
    triage = TriageTicket(engine=flaky_model(seed=7))
    for index in range(60):
        triage(Ticket(text=f"message {index}"))
    hoare.flush_stats()
    return subprocess.call([sys.executable, "-m", "hoare.cli", "stats", "--db", str(path)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
