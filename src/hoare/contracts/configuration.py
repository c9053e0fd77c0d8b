"""The default engine, resolved when a contract is called (never at import).

Order: the engine given to the contract instance; else ``hoare.configure(engine=...)``;
else, when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set, an ``OpenAIEngine``
built from the environment; else ``EngineNotConfigured`` says how to set one.
"""

from __future__ import annotations

import enum
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

from hoare.engines.base import Engine
from hoare.errors import EngineNotConfigured, shown
from hoare.forking import hold_across_fork
from hoare.kernel import PreflightResult, Verdict

if TYPE_CHECKING:
    from hoare.stats.store import StatsStore

__all__ = ["SHADOW_REFUSAL", "EngineNotConfigured", "cache_size", "check_preflight",
           "configure", "default_engine", "label", "preflight_hook", "preflight_mode",
           "stats_store", "stats_target"]

DEFAULT_CACHE_SIZE = 256


_lock = threading.Lock()
hold_across_fork(sys.modules[__name__], _lock)  # free in a forked child (hoare.forking)
_configured: Engine | None = None
_from_environment: Engine | None = None
_cache_size = DEFAULT_CACHE_SIZE


class _Keep(enum.Enum):
    """A keyword ``configure`` was not given (kept as it is), or a setting not read yet:
    an enum member, so that a type checker narrows ``value is _KEEP``."""

    KEEP = "keep"


_KEEP: Final = _Keep.KEEP
_stats: str | _Keep | None = _KEEP  # _KEEP: not set, read $HOARE_STATS on first use
_label: str | None = None
_retention: float | _Keep | None = _KEEP  # days; _KEEP: read the environment first
_preflight: bool | str | _Keep = _KEEP  # True, False, "shadow"; _KEEP: [tool.hoare]


def configure(*, engine: Engine | _Keep | None = _KEEP, cache_size: int | None = None,
              stats: str | os.PathLike[str] | _Keep | None = _KEEP,
              label: str | _Keep | None = _KEEP,
              stats_retention_days: float | _Keep | None = _KEEP,
              preflight: bool | str | _Keep | None = _KEEP) -> None:
    """Set (or, with ``None``, clear) the engine used by contracts created without one;
    ``cache_size`` bounds each per-contract cache keyed by per-call values (the system
    prompts of a ``prompt`` property), for contracts decorated afterwards. ``stats``:
    the store every contracted call is recorded in, a SQLite file or a SQLAlchemy URL
    (``None``: none; default ``$HOARE_STATS``, else ``[tool.hoare] stats``, else
    none); ``label``: the run label of those records (default
    ``$HOARE_LABEL``, else ``"default"``); ``stats_retention_days``: calls older than
    that are deleted from the store, when it opens and every hour (default
    ``$HOARE_STATS_RETENTION_DAYS``, else ``[tool.hoare] stats_retention_days``, else
    kept forever). ``preflight``: the z3 pre-flight of contracts whose decorator does
    not choose (``True``: refuse an input no output can pass; ``"shadow"``: run it,
    never refuse, log and count what it would have refused; ``False``: off; ``None``:
    back to ``[tool.hoare] preflight``, else True), read when an instance is first
    called. A keyword left out keeps its setting."""
    global _configured, _cache_size, _stats, _label, _retention, _store, _preflight
    if preflight is not _KEEP and preflight is not None:
        check_preflight(preflight, "configure(preflight=...)")
    # type(): a foreign value's __class__ (and a Protocol's attribute reads) may raise
    if stats is not _KEEP and stats is not None and \
            not issubclass(type(stats), (str, os.PathLike)):
        raise TypeError(f"stats must be a path (or None), got {shown(stats)}")
    if label is not _KEEP and label is not None and not issubclass(type(label), str):
        raise TypeError(f"label must be a string (or None), got {shown(label)}")
    if engine is not _KEEP and engine is not None and not _is_engine(engine):
        raise TypeError(f"engine must have complete() and acomplete(), got {shown(engine)}")
    if stats_retention_days is not _KEEP and stats_retention_days is not None:
        _check_days(stats_retention_days, "stats_retention_days")
    if cache_size is not None:
        exact = int.__index__(cache_size) if issubclass(type(cache_size), int) \
            and type(cache_size) is not bool else None  # a subclass's __lt__ is foreign
        if exact is None or exact < 1:
            raise ValueError(f"cache_size must be an integer >= 1, got {shown(cache_size)}")
        cache_size = exact
    with _lock:
        if engine is not _KEEP:
            _configured = engine
        if cache_size is not None:
            _cache_size = cache_size
        if stats is not _KEEP:
            _stats = None if stats is None else os.fspath(stats)
        if label is not _KEEP:
            _label = label
        if preflight is not _KEEP:
            _preflight = _KEEP if preflight is None else preflight
        if stats_retention_days is not _KEEP:
            _retention = stats_retention_days
            _store = (_KEEP, None)  # the next call hands the store its retention


def _is_engine(value: object) -> bool:
    try:
        return isinstance(value, Engine)
    except Exception:  # a foreign object's attribute raised: it is no engine
        return False


def _exact_number(value: object) -> float | None:
    """``value`` as a float when it is an int (not a bool) or a float, read without its
    own operators (a subclass's are foreign code); None otherwise, or for an int too
    large for a float."""
    kind = type(value)
    if issubclass(kind, float):
        return float.__float__(cast("float", value))
    if issubclass(kind, int) and kind is not bool:
        exact = int.__index__(cast("int", value))
        return float(exact) if abs(exact) < 10**300 else None
    return None


def _check_days(value: object, what: str) -> float:
    number = _exact_number(value)
    if number is None or not 0 < number < float("inf"):
        raise ValueError(f"{what} must be a number of days > 0, got {shown(value)}")
    return number


def _retention_days() -> float | None:
    """The configured retention, else ``$HOARE_STATS_RETENTION_DAYS``, else
    ``[tool.hoare] stats_retention_days`` (a bad value is warned about, not raised:
    it must not fail a call), else None."""
    global _retention
    if _retention is _KEEP:
        found: object = os.environ.get("HOARE_STATS_RETENTION_DAYS") or \
            _project_setting("stats_retention_days")
        try:
            _retention = None if found is None else _check_days(
                float(found) if isinstance(found, str) else found,
                "HOARE_STATS_RETENTION_DAYS / [tool.hoare] stats_retention_days")
        except ValueError as error:
            logging.getLogger("hoare.stats").warning("hoare stats: %s; calls are kept", error)
            _retention = None
    return _retention


# (path, its store): one read per call
_store: tuple[str | _Keep | None, StatsStore | None] = (_KEEP, None)


def stats_store() -> StatsStore | None:
    """The ``StatsStore`` calls are recorded in, or None (the default: no I/O). Called
    on every contracted call: the common case is one global read and a comparison."""
    global _stats, _store
    path = _stats
    cached_path, store = _store
    if path is cached_path and path is not _KEEP:
        return store
    if path is _KEEP:
        with _lock:
            if _stats is _KEEP:
                _stats = os.environ.get("HOARE_STATS") or _project_stats()
            path = _stats
    if path is None:
        _store = (None, None)
        return None
    from hoare.stats.store import open_store

    with _lock:  # the retention read and handed over at once: configure() cannot come
        store = open_store(str(path), _retention_days())  # between (a stale one would win)
        _store = (path, store)
    return store


SHADOW_REFUSAL = "shadow: would refuse: "  # the reason a shadowed refusal reaches the kernel
_shadow_logged: set[tuple[str, str]] = set()
_SHADOW_LOGGED_MAX = 4096


def check_preflight(value: object, what: str) -> bool | str:
    """``value`` if it is a pre-flight mode (True, False or "shadow"), else
    ``ValueError`` naming ``what``."""
    if value is True or value is False or (type(value) is str and value == "shadow"):
        return value
    raise ValueError(f"{what} must be True (refuse an input no output can pass), "
                     f"'shadow' (check, log, never refuse) or False, got {shown(value)}")


def preflight_mode(chosen: bool | str | None = None) -> bool | str:
    """The pre-flight mode of a contract: its decorator's choice, else
    ``configure(preflight=...)``, else ``[tool.hoare] preflight``, else True. A bad
    pyproject value is warned about once and ignored (it must not fail a call)."""
    global _preflight
    if chosen is not None:
        return chosen
    mode = _preflight
    if mode is _KEEP:
        found = _project_setting("preflight")
        try:
            mode = True if found is None else check_preflight(found,
                                                              "[tool.hoare] preflight")
        except ValueError as error:
            logging.getLogger("hoare").warning("hoare: %s; the pre-flight stays on", error)
            mode = True
        with _lock:
            if _preflight is _KEEP:
                _preflight = mode
            mode = _preflight
    return mode


def preflight_hook(chosen: bool | str | None, name: str,
                   check: Callable[[object], PreflightResult]
                   ) -> Callable[[object], PreflightResult] | None:
    """The pre-flight hook the kernel gets for a contract (None: off). In shadow mode
    a refusal reaches the kernel as UNKNOWN, its reason prefixed ``SHADOW_REFUSAL``
    (the kernel goes on to generate), logged once per contract and reason."""
    mode = preflight_mode(chosen)
    if mode is False:
        return None
    if mode is True:
        return check

    def shadow(used: object) -> PreflightResult:
        result = check(used)
        if result.verdict is not Verdict.UNSATISFIABLE:
            return result
        key = (name, result.reason)
        if key not in _shadow_logged:
            with _lock:
                first = key not in _shadow_logged and len(_shadow_logged) < _SHADOW_LOGGED_MAX
                if first:
                    _shadow_logged.add(key)
            if first:
                logging.getLogger("hoare").warning(
                    "hoare %s: the pre-flight would refuse this input (shadow mode: "
                    "called anyway): %s", name, result.reason)
        return PreflightResult(Verdict.UNKNOWN, SHADOW_REFUSAL + result.reason)

    return shadow


def stats_target() -> str | None:
    """Where calls are recorded (``configure(stats=...)``, else ``$HOARE_STATS``, else
    ``[tool.hoare] stats``), without opening the store: ``hoare stats``, ``compare``
    and ``eval`` read it when ``--db`` is not given."""
    path = _stats
    if path is _KEEP:
        path = os.environ.get("HOARE_STATS") or _project_stats()
    return None if path is None else str(path)


def _project_setting(key: str) -> object:
    """``[tool.hoare] <key>`` of the nearest pyproject.toml (None when absent or the
    file cannot be read, which is warned about: it must not fail a call)."""
    import tomllib

    from hoare.verifier.project import find_pyproject

    try:
        found = find_pyproject()
        if found is None or not found.is_file():  # a FIFO would block the reader
            return None
        with found.open("rb") as handle:
            table: object = tomllib.load(handle)
        for part in ("tool", "hoare"):  # a file may give ``tool = 1``: not a table
            table = table.get(part, {}) if isinstance(table, dict) else {}
        value = table.get(key) if isinstance(table, dict) else None
    except (OSError, ValueError, RecursionError) as error:  # not UTF-8, not TOML, deep
        logging.getLogger("hoare.stats").warning(
            "hoare stats: cannot read [tool.hoare] %s: %s", key,
            " ".join(str(error).split())[:300])
        return None
    if key == "stats" and isinstance(value, str) and value and "://" not in value:
        return str(found.parent / value)  # relative to the pyproject.toml
    return value


def _project_stats() -> str | None:
    """``[tool.hoare] stats``: a path (from the pyproject.toml's directory) or a URL."""
    value = _project_setting("stats")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        logging.getLogger("hoare.stats").warning(
            "hoare stats: [tool.hoare] stats must be a path or a URL, got %r; calls are "
            "not recorded", value)
        return None
    return value


_env_label: str | None = None


def label() -> str:
    """The run label of recorded calls (``configure(label=...)``, else ``$HOARE_LABEL``
    as it was at the first recorded call, else ``"default"``)."""
    global _env_label
    if _label:
        return _label
    if _env_label is None:
        _env_label = os.environ.get("HOARE_LABEL") or "default"
    return _env_label


def _forget_store() -> None:
    """In a forked child: look the store up again (the child opens its own)."""
    global _store
    _store = (_KEEP, None)


os.register_at_fork(after_in_child=_forget_store)


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
                from hoare.engines.openai_engine import OpenAIEngine

                _from_environment = OpenAIEngine()
            return _from_environment
    raise EngineNotConfigured(
        "no engine configured: pass engine=... when creating the contract "
        "(e.g. engine=FunctionEngine(fn) or OpenAIEngine(model=...)), call "
        "hoare.configure(engine=...), or set OPENAI_API_KEY (with HOARE_MODEL and, for a "
        "local server, OPENAI_BASE_URL)")
