"""SymbolicAI's multi-document QA contract, ported to hoare.

The contract is the reference's, unchanged in spirit; what differs:
* imports (``from hoare import ...``) and the base class (``Contract``, not ``Expression``);
* ``post`` takes the input actually used as a second parameter, instead of reading
  SymbolicAI's private ``self._current_input``;
* the engine: offline by default, a rule-based ``FunctionEngine`` that answers like a
  sloppy model on its first try (so the remedy loop shows up); with ``--live``, the
  configured OpenAI-compatible endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
  ``HOARE_MODEL``). Having a key in the environment never sends traffic by itself.

Run: ``python examples/multi_doc_qa.py`` (offline) or ``--live``.
"""

from __future__ import annotations

import json
import sys

from hoare import Contract, Field, LLMDataModel, contract
from hoare.engines import FunctionEngine, Request

# ── 1. Data models ──────────────────────────────────────────────────────────────


class Document(LLMDataModel):
    """Represents an entire document in the tiny in-memory corpus."""

    id: str = Field(description="Unique identifier of the document.")
    content: str = Field(description="The full raw text of the document.")


class DocSnippet(LLMDataModel):
    """Exact passage taken verbatim from a Document."""

    doc_id: str = Field(description="ID of the document the snippet comes from.")
    snippet: str = Field(description="A short excerpt supporting the answer.")


class MultiDocQAInput(LLMDataModel):
    query: str = Field(description="User question in plain English.")
    documents: list[Document] = Field(description="Corpus to search for answers.")
    max_snippets: int | None = Field(
        default=3, ge=1, le=10,
        description="Max number of snippets the agent may cite (defaults to 3).")


class IntermediateRetrieved(LLMDataModel):
    query: str = Field(description="The original question from the user.")
    top_docs: list[Document] = Field(description="Top-k most relevant documents.")
    selected_sentences: list[str] = Field(
        description="Sentences deemed most relevant to the query.")
    target_snippet_count: int = Field(
        description="Upper bound on evidence snippets (copied from input).")


class AnswerWithEvidence(LLMDataModel):
    answer: str = Field(description="Concise, stand-alone answer.")
    evidence: list[DocSnippet] = Field(description="Cited supporting passages.")
    coverage_score: float = Field(
        ge=0.0, le=1.0,
        description="LLM-estimated fraction of answer that is directly supported by the "
                    "evidence (0 = no support, 1 = fully supported).")


# ── 2. The contracted class ─────────────────────────────────────────────────────


@contract(
    pre_remedy=True,
    post_remedy=True,
    accumulate_errors=True,
    verbose=False,
    remedy_retry_params=dict(tries=3, delay=0.4, max_delay=4.0, jitter=0.15, backoff=1.8,
                             graceful=False),
)
class MultiDocQAgent(Contract[MultiDocQAInput, AnswerWithEvidence]):
    """pre: sanity-check query & docs; act: retrieve relevant sentences; LLM: generate
    AnswerWithEvidence; post: semantic rules; forward: result or graceful fallback."""

    def __init__(self, min_coverage: float = 0.55, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.min_coverage = min_coverage  # threshold for `post`
        self.interaction_log: list[dict[str, object]] = []

    @property
    def prompt(self) -> str:
        return (
            "You are an expert research assistant.\n"
            "Given a QUESTION and a set of RELEVANT_SENTENCES, write a concise answer. "
            "Cite every passage you use exactly as `(Doc <ID>)`. "
            "Respond with a JSON object that fits the AnswerWithEvidence schema."
        )

    def pre(self, input: MultiDocQAInput) -> bool:
        if not input.query.strip():
            raise ValueError("The query must not be empty.")
        if not input.documents:
            raise ValueError("You must supply at least one document.")
        return True

    def act(self, input: MultiDocQAInput, **kwargs: object) -> IntermediateRetrieved:
        k = min(3, len(input.documents))
        query_terms = {t.lower() for t in input.query.split()}
        scored_docs = []
        for doc in input.documents:
            overlap = sum(t in query_terms for t in doc.content.lower().split())
            scored_docs.append((overlap, doc))
        scored_docs.sort(reverse=True, key=lambda x: x[0])
        top_docs = [doc for _, doc in scored_docs[:k]]
        selected_sentences: list[str] = []
        for doc in top_docs:
            sentences = [s.strip() for s in doc.content.split(".") if s.strip()]
            sentences.sort(reverse=True,
                           key=lambda s: sum(t in query_terms for t in s.lower().split()))
            selected_sentences.extend(sentences[:2])
        self.interaction_log.append({"query": input.query, "num_docs": len(input.documents),
                                     "top_doc_ids": [d.id for d in top_docs]})
        return IntermediateRetrieved(query=input.query, top_docs=top_docs,
                                     selected_sentences=selected_sentences,
                                     target_snippet_count=input.max_snippets or 3)

    def post(self, output: AnswerWithEvidence, input: IntermediateRetrieved) -> bool:
        if not output.answer.strip():
            raise ValueError("Answer text is empty.")
        if output.coverage_score < self.min_coverage:
            raise ValueError(f"Coverage score {output.coverage_score:.2f} "
                             f"is below the minimum {self.min_coverage:.2f}.")
        if output.coverage_score >= 0.8 and not output.evidence:
            raise ValueError("High coverage claims require at least one evidence snippet.")
        if output.evidence and len(output.evidence) > input.target_snippet_count:
            raise ValueError(f"Too many snippets ({len(output.evidence)}), "
                             f"maximum allowed is {input.target_snippet_count}.")
        return True

    def forward(self, input: MultiDocQAInput, **kwargs: object) -> AnswerWithEvidence:
        if self.contract_successful and self.contract_result:
            return self.contract_result
        first_doc = input.documents[0]
        first_sentence = first_doc.content.split(".")[0][:300]
        return AnswerWithEvidence(
            answer=("I'm not confident enough to answer precisely. "
                    "Please re-phrase the question or provide more documents."),
            evidence=[DocSnippet(doc_id=first_doc.id, snippet=first_sentence)],
            coverage_score=0.0)


# ── 3. An offline stand-in for the LLM ──────────────────────────────────────────


def rule_based_answerer(request: Request) -> str:
    """Extractive QA over the retrieved sentences. Like a sloppy model, its first try
    cites every sentence; it reads the contract's feedback to fix its answer."""
    retrieved = request.input
    assert isinstance(retrieved, IntermediateRetrieved)
    terms = {t.lower().strip("?.,") for t in retrieved.query.split()}
    ranked = sorted(retrieved.selected_sentences,
                    key=lambda s: -sum(w.lower().strip(".,") in terms for w in s.split()))
    limit = len(ranked)
    if any("Too many snippets" in message for message in request.feedback):
        limit = retrieved.target_snippet_count
    cited = ranked[:limit]
    evidence = []
    for sentence in cited:
        doc = next(d for d in retrieved.top_docs if sentence in d.content)
        evidence.append({"doc_id": doc.id, "snippet": sentence})
    answer = f"{cited[0]} (Doc {evidence[0]['doc_id']})." if cited else ""
    supported = sum(w.lower().strip(".,") in cited[0].lower() for w in answer.split()) \
        if cited else 0
    coverage = round(supported / max(1, len(answer.split())), 2)
    return "```json\n" + json.dumps({"answer": answer, "evidence": evidence,
                                     "coverage_score": coverage}) + "\n```"


DOCS = [
    Document(id="A1", content=(
        "Symbolic AI combines formal logic with modern machine learning. "
        "It allows transparent reasoning and explicit knowledge representation while "
        "still benefiting from statistical models.")),
    Document(id="B2", content=(
        "Vector databases store embeddings of documents. They let users quickly retrieve "
        "text that is semantically similar to a query vector, enabling high-quality "
        "semantic search.")),
    Document(id="C3", content=(
        "Hybrid search merges sparse keyword techniques and dense vector similarity, "
        "improving recall and precision, especially for domain-specific collections.")),
]


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a not in ("--live", "--online")]
    if unknown:
        print(f"usage: python examples/multi_doc_qa.py [--live]  (unknown: {unknown[0]})",
              file=sys.stderr)
        return 2
    live = "--live" in argv or "--online" in argv  # --online: the old spelling
    engine = None if live else FunctionEngine(rule_based_answerer)
    agent = MultiDocQAgent(min_coverage=0.6, engine=engine)
    question = "Why are vector databases useful for semantic search?"
    result = agent(input=MultiDocQAInput(query=question, documents=DOCS, max_snippets=2))
    print("\nAnswer:\n", result.answer)
    print("\nCoverage:", result.coverage_score)
    print("\nEvidence:")
    for ev in result.evidence:
        print(f" • (Doc {ev.doc_id}) {ev.snippet}")
    stats = agent.contract_perf_stats()  # SymbolicAI's aggregate, and the latest call's
    latest = stats["contract_outcome"]
    print(f"\ncontract satisfied: {agent.contract_successful} after "
          f"{latest['generation_attempts']} generation attempt(s); "
          f"{latest['total_ms']:.2f} ms in all; output validation "
          f"{stats['output_validation']['percentage']:.0f}% of the time")
    return 0 if agent.contract_successful else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
