"""Engines: the generation step C of {P} C {Q}.

``OpenAIEngine`` talks to any OpenAI-compatible server, ``FunctionEngine`` wraps a
function; ``CachedEngine`` records and replays answers, ``BudgetedEngine`` caps
spending. Transport failures are retried inside an engine (``TransportRetry``)
and surface as ``TransportError`` (a ``FatalEngineError``: it ends the contract's
stage, never spends its remedy attempts).
"""

from hoare.engines.base import (
    BudgetExceeded,
    CacheMiss,
    ContentFiltered,
    Engine,
    EngineAnswerError,
    EngineError,
    Message,
    ModelRefusal,
    Options,
    Request,
    Response,
    ToolCall,
    Usage,
)
from hoare.engines.budget import Budget, BudgetedEngine, MissingPrice, Price, Spend
from hoare.engines.cache import CacheConflict, CachedEngine, CacheMode
from hoare.engines.cache_format import CacheFileError
from hoare.engines.function import FunctionEngine
from hoare.engines.transport import (
    ConnectionFailed,
    EngineTimeout,
    Failure,
    RateLimited,
    RequestRejected,
    ServerError,
    TransportError,
    TransportRetry,
)

__all__ = [
    "Budget", "BudgetExceeded", "BudgetedEngine", "CacheConflict", "CacheFileError",
    "CacheMiss", "CacheMode", "CachedEngine", "ConnectionFailed", "ContentFiltered", "Engine",
    "EngineAnswerError", "EngineConfigError",
    "EngineError", "EngineTimeout", "Failure", "FunctionEngine", "Message", "MissingPrice",
    "ModelRefusal", "OpenAIEngine", "Options", "Price", "RateLimited", "Request",
    "RequestRejected", "Response",
    "ServerError", "Spend", "ToolCall", "TransportError", "TransportRetry", "Usage",
]


def __getattr__(name: str) -> object:
    """``OpenAIEngine`` on first use: importing ``openai`` costs ~0.4 s, which
    ``hoare verify`` (and any program that never builds that engine) does not pay."""
    if name == "OpenAIEngine":
        from hoare.engines.openai_engine import OpenAIEngine

        return OpenAIEngine
    if name == "EngineConfigError":
        from hoare.engines.openai_config import EngineConfigError

        return EngineConfigError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
