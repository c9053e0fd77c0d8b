"""Delphyne's query layer on hoare's kernel: typed queries, parsers, few-shot prompting,
n completions, iterative repair, classification with logprobs, models and budgets.

    from dataclasses import dataclass
    from hoare.queries import Query, few_shot, classify, DummyModel
"""

from hoare.queries.answers import (
    Answer,
    FinalAnswer,
    ParseError,
    Response,
    ToolRequests,
    WrappedParseError,
)
from hoare.queries.chats import (
    AnswerPrefix,
    AnswerPrefixElement,
    FeedbackMessage,
    OracleMessage,
    ToolResult,
)
from hoare.queries.classify import Classification, NoLogprobs, classify, distribution_of
from hoare.queries.demonstrations import (
    SCHEMA_PATH,
    DemonstrationError,
    DummyModel,
    Example,
    FailingModel,
    NoDemonstration,
    load_demonstrations,
    most_similar,
    take,
    with_tags,
)
from hoare.queries.embeddings import EmbeddingError, closest, diverse, openai_embedder
from hoare.queries.parsers import (
    GenericParser,
    Parser,
    final_tool_call,
    final_tool_call_as,
    first_word,
    first_word_as,
    get_text,
    json_as,
    last_code_block,
    response_with,
    structured,
    structured_as,
    trim,
    yaml_as,
)
from hoare.queries.policies import Solution, afew_shot, few_shot, outcome_of
from hoare.queries.pricing import (
    KNOWN_PRICING,
    ModelPricing,
    QueryBudget,
    StandardModel,
    budget_entry,
    budget_from_limits,
    pricing_for,
    standard_model,
)
from hoare.queries.query import Mode, Query
from hoare.queries.settings import RequestsSpent
from hoare.queries.templates import add_template_folder

__all__ = [
    "KNOWN_PRICING",
    "SCHEMA_PATH",
    "Answer",
    "AnswerPrefix",
    "AnswerPrefixElement",
    "Classification",
    "DemonstrationError",
    "DummyModel",
    "EmbeddingError",
    "Example",
    "FailingModel",
    "FeedbackMessage",
    "FinalAnswer",
    "GenericParser",
    "Mode",
    "ModelPricing",
    "NoDemonstration",
    "NoLogprobs",
    "OracleMessage",
    "ParseError",
    "Parser",
    "Query",
    "QueryBudget",
    "RequestsSpent",
    "Response",
    "Solution",
    "StandardModel",
    "ToolRequests",
    "ToolResult",
    "WrappedParseError",
    "add_template_folder",
    "afew_shot",
    "budget_entry",
    "budget_from_limits",
    "classify",
    "closest",
    "distribution_of",
    "diverse",
    "few_shot",
    "final_tool_call",
    "final_tool_call_as",
    "first_word",
    "first_word_as",
    "get_text",
    "json_as",
    "last_code_block",
    "load_demonstrations",
    "most_similar",
    "openai_embedder",
    "outcome_of",
    "pricing_for",
    "response_with",
    "standard_model",
    "structured",
    "structured_as",
    "take",
    "trim",
    "with_tags",
    "yaml_as",
]
