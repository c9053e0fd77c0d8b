"""Does ``examples="auto"`` help a small model? (``make bench-queries``)

The same llama.cpp server and SmolLM2-135M-Instruct as ``run.py``. Four queries
(``hoare.queries``), ten deterministic inputs each, asked with no example, with the
verifier's example (``examples="auto"``) and with the example and a near miss of one
post-condition. Two decodings: ``json_object`` (JSON mode without a schema: the format
is the model's to get right) and ``json_object_schema`` (llama.cpp's grammar from the
answer type's schema: the format is enforced, only the content can go wrong).
Reported per setting: a valid answer type on the first answer, P_succ at the first
attempt and after remedy (3 tries). Sampling at temperature 0.7 with a fixed seed.

Not part of ``make test``. Results: ``bench/real_model/queries_results.json``.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import MODEL_FILE, SERVER_PACKAGE, ensure_server, start_server  # noqa: E402
from tasks import NOTES, REVIEWS, TEXTS  # noqa: E402

from hoare import Post  # noqa: E402
from hoare.engines import OpenAIEngine, Options  # noqa: E402
from hoare.kernel import Phase, ViolationKind  # noqa: E402
from hoare.queries import Query, outcome_of  # noqa: E402

RESULTS = HERE / "queries_results.json"
SETTINGS = (("none", None), ("auto", "auto"), ("auto+near miss", "near"))
DECODINGS = ("json_object", "json_object_schema")


@dataclass
class ReplyTitle(Query[str]):
    """Write a reply title for the text."""
    text: str
    post_conditions = [Post(lambda t: t.startswith("Re: "), "starts with 'Re: '", id="prefix"),
                       Post(lambda t: len(t) <= 40, "at most 40 characters", id="length")]


@dataclass
class AddUp(Query[int]):
    """Add the two numbers a and b."""
    a: int
    b: int
    post_conditions = [Post(lambda n, q: n == q.a + q.b, "the answer is a + b", id="sum"),
                       Post(lambda n: n >= 0, "not negative", id="sign")]


@dataclass
class Keywords(Query[list[str]]):
    """Give 1 to 3 lowercase keywords for the note."""
    note: str
    post_conditions = [Post(lambda t: 1 <= len(t) <= 3, "1 to 3 keywords", id="count"),
                       Post(lambda t: all(k == k.lower() and k.strip() for k in t),
                            "lowercase, not blank", id="case")]


@dataclass
class Stars(Query[int]):
    """Rate the review from 1 to 5 stars."""
    review: str
    post_conditions = [Post(lambda n: 1 <= n <= 5, "from 1 to 5", id="range")]


TASKS: list[tuple[str, list[Query[Any]], str]] = [
    ("title", [ReplyTitle(t) for t in TEXTS], "prefix"),
    ("sum", [AddUp(3 + 7 * i, 11 + 5 * i) for i in range(10)], "sum"),
    ("keywords", [Keywords(n) for n in NOTES], "case"),
    ("stars", [Stars(r) for r in REVIEWS], "range"),
]


def run(url: str, inputs: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for decoding in DECODINGS:
        for name, queries, miss in TASKS:
            for label, examples in SETTINGS:
                engine = OpenAIEngine("smollm2", base_url=url, structured=decoding,  # type: ignore[arg-type]
                                      default_options=Options(temperature=0.7, seed=7,
                                                              max_tokens=64, timeout=60))
                rows = []
                for query in queries[:inputs]:
                    policy: dict[str, Any] = {"tries": 3}
                    if examples is not None:
                        policy["examples"] = "auto"
                    if examples == "near":
                        policy["near_miss"] = miss
                    outcome = outcome_of(query, engine, **policy)
                    posts = [a for a in outcome.attempts if a.phase is Phase.POST]
                    first = posts[0] if posts else None
                    rows.append({
                        "success": outcome.success,
                        "first": bool(first is not None and not first.violations),
                        "typed": bool(first is not None and not any(
                            v.kind is ViolationKind.TYPE for v in first.violations)),
                        "calls": len(posts)})
                summary = {
                    "inputs": len(rows),
                    "first_answer_valid_type": sum(r["typed"] for r in rows) / len(rows),
                    "p_succ_first_attempt": sum(r["first"] for r in rows) / len(rows),
                    "p_succ_after_remedy": sum(r["success"] for r in rows) / len(rows),
                    "calls_per_input": sum(r["calls"] for r in rows) / len(rows)}
                print(f"[bench-queries] {decoding:<18} {name:<8} {label:<14} "
                      + json.dumps({k: round(v, 2) for k, v in summary.items()}), flush=True)
                figures[f"{decoding}/{name}/{label}"] = summary
    return figures


def main() -> int:
    ready = ensure_server()
    if isinstance(ready, str):
        print(f"[bench-queries] SKIPPED: the llama.cpp server could not be built: {ready}")
        return 0
    started = start_server(*ready)
    if isinstance(started, str):
        print(f"[bench-queries] SKIPPED: the llama.cpp server did not start: {started}")
        return 0
    process, url = started
    try:
        began = time.monotonic()
        figures = run(url, 10)
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(table(figures))
    RESULTS.write_text(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                   "machine": platform.machine(), "server": SERVER_PACKAGE,
                                   "model": MODEL_FILE,
                                   "seconds": round(time.monotonic() - began, 1),
                                   "figures": figures, "table": table(figures)},
                                  indent=2) + "\n")
    return 0


def table(figures: dict[str, Any]) -> str:
    lines = ["| decoding | examples | valid type, 1st answer | P_succ 1st attempt | "
             "P_succ after remedy | calls per input |", "|---|---|---|---|---|---|"]
    for decoding in DECODINGS:
        for label, _ in SETTINGS:
            rows = [f for key, f in figures.items()
                    if key.startswith(decoding + "/") and key.endswith("/" + label)]
            if rows:
                lines.append(
                    f"| {decoding} | {label} | "
                    f"{statistics.mean(f['first_answer_valid_type'] for f in rows):.0%} | "
                    f"{statistics.mean(f['p_succ_first_attempt'] for f in rows):.0%} | "
                    f"{statistics.mean(f['p_succ_after_remedy'] for f in rows):.0%} | "
                    f"{statistics.mean(f['calls_per_input'] for f in rows):.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
