"""Engines: the generation step C of {P} C {Q}."""

from .base import (
    BudgetExceeded,
    CacheMiss,
    Engine,
    EngineError,
    Message,
    Options,
    Request,
    Response,
    Usage,
)
from .function import FunctionEngine

__all__ = [
    "BudgetExceeded", "CacheMiss", "Engine", "EngineError", "FunctionEngine", "Message",
    "Options", "Request", "Response", "Usage",
]
