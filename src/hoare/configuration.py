"""The default engine, resolved when a contract is called (never at import).

Order: the engine given to the contract instance; else ``hoare.configure(engine=...)``;
else, when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set, an ``OpenAIEngine``
built from the environment; else ``EngineNotConfigured`` says how to set one.
"""

from __future__ import annotations

import os
import threading

from .engines.base import Engine
from .errors import EngineNotConfigured

__all__ = ["EngineNotConfigured", "cache_size", "configure", "default_engine"]

DEFAULT_CACHE_SIZE = 256


_lock = threading.Lock()
_configured: Engine | None = None
_from_environment: Engine | None = None
_cache_size = DEFAULT_CACHE_SIZE
_KEEP: object = object()


def configure(*, engine: Engine | object | None = _KEEP, cache_size: int | None = None) -> None:
    """Set (or, with ``None``, clear) the engine used by contracts created without one;
    ``cache_size`` bounds each per-contract cache keyed by per-call values (the system
    prompts of a ``prompt`` property), for contracts decorated afterwards."""
    global _configured, _cache_size
    if engine is not _KEEP and engine is not None and not isinstance(engine, Engine):
        raise TypeError(f"engine must have complete() and acomplete(), got {engine!r}")
    if cache_size is not None and (isinstance(cache_size, bool)
                                   or not isinstance(cache_size, int) or cache_size < 1):
        raise ValueError(f"cache_size must be an integer >= 1, got {cache_size!r}")
    with _lock:
        if engine is not _KEEP:
            _configured = engine  # type: ignore[assignment]
        if cache_size is not None:
            _cache_size = cache_size


def cache_size() -> int:
    """The size of the bounded caches of contracts decorated from now on."""
    return _cache_size


def default_engine() -> Engine:
    """The configured engine, or one built from OPENAI_* environment variables."""
    global _from_environment
    engine = _configured
    if engine is not None:
        return engine
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        with _lock:
            if _from_environment is None:
                from .engines.openai_engine import OpenAIEngine

                _from_environment = OpenAIEngine()
            return _from_environment
    raise EngineNotConfigured(
        "no engine configured: pass engine=... when creating the contract "
        "(e.g. engine=FunctionEngine(fn) or OpenAIEngine(model=...)), call "
        "hoare.configure(engine=...), or set OPENAI_API_KEY (with HOARE_MODEL and, for a "
        "local server, OPENAI_BASE_URL)")
