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

__all__ = ["EngineNotConfigured", "configure", "default_engine"]


_lock = threading.Lock()
_configured: Engine | None = None
_from_environment: Engine | None = None


def configure(*, engine: Engine | None) -> None:
    """Set (or, with ``None``, clear) the engine used by contracts created without one."""
    global _configured
    if engine is not None and not isinstance(engine, Engine):
        raise TypeError(f"engine must have complete() and acomplete(), got {engine!r}")
    with _lock:
        _configured = engine


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
