"""``[tool.hoare]`` in ``pyproject.toml``: a project's defaults for ``hoare verify``.

    [tool.hoare]
    targets = ["src/myapp/contracts"]   # what `hoare verify` checks with no target given
    strict = true                       # unknown fails too
    timeout_ms = 5000                   # per z3 query (alias: timeout)
    rlimit = 10000000                   # deterministic z3 resource limit per query
    jobs = "auto"                       # worker processes (an integer or "auto")
    import_timeout = 60                 # seconds a file's import may take (then an error)
    exclude = ["tests/fixtures/*"]      # glob patterns, on names and project-relative paths
    format = "table"                    # table | json | sarif | junit
    cache = true                        # the verdict cache (false: like --no-cache)
    cache_dir = ".hoare_cache"
    stats = ".hoare/stats.db"           # the library's stats store (not used by verify)
    stats_retention_days = 90           # calls older than this are deleted from it

    [tool.hoare.ignore]                 # check id = reason (a reason is required)
    "myapp.rules:Refund.predicate_vacuous[post]" = "kept as documentation of intent"

    [tool.hoare.overrides."myapp.rules:Heavy"]
    timeout_ms = 30000                  # per-contract limits

Precedence: built-in defaults, then this table, then command-line flags. An unknown
key is an error naming it (a typo must not silently change what is verified).
A check id is ``module:Class.kind`` (every check of that kind) or
``module:Class.kind[predicate]``; ``module:Class`` alone ignores the whole contract.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoare.errors import UsageError

__all__ = ["SOLVER_LIMIT_MAX", "ConfigError", "ProjectConfig", "find_pyproject", "load",
           "seconds_argument", "solver_limit_argument"]

FORMATS = ("table", "json", "sarif", "junit")
_KEYS = {"targets", "strict", "timeout_ms", "timeout", "rlimit", "jobs", "exclude", "format",
         "cache", "cache_dir", "ignore", "overrides", "import_timeout",
         "stats", "stats_retention_days",
         "server_capabilities"}  # read by the library, not by verify
_OVERRIDE_KEYS = {"timeout_ms", "timeout", "rlimit"}


class ConfigError(UsageError):
    """``[tool.hoare]`` is malformed (the CLI exits 2, naming the key)."""


@dataclass
class ProjectConfig:
    """The ``[tool.hoare]`` settings; None: not set there."""

    path: Path | None = None
    targets: list[str] | None = None
    strict: bool | None = None
    timeout_ms: int | None = None
    rlimit: int | None = None
    jobs: int | None = None  # 0: auto
    exclude: list[str] = field(default_factory=list)
    format: str | None = None
    cache: bool | None = None
    cache_dir: Path | None = None
    ignore: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, dict[str, int]] = field(default_factory=dict)
    import_timeout: float | None = None  # seconds

    @property
    def root(self) -> Path:
        """The project root: the directory of the ``pyproject.toml``, else the cwd."""
        return self.path.parent if self.path is not None else Path.cwd()


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` (the cwd) upwards."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(path: Path | None) -> ProjectConfig:
    """The ``[tool.hoare]`` table of ``path`` (an empty config when absent)."""
    if path is None:
        return ProjectConfig()
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:  # TOML is UTF-8
        raise ConfigError(f"{path}: not valid TOML: {error}") from error
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: [tool] must be a table, got {tool!r}")
    table = tool.get("hoare")
    config = ProjectConfig(path=path)
    if table is None:
        return config
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.hoare] must be a table")
    where = f"{path}: [tool.hoare]"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known keys: "
                          f"{', '.join(sorted(_KEYS))})")
    if "timeout" in table and "timeout_ms" in table:
        raise ConfigError(f"{where}: give timeout_ms or its alias timeout, not both")
    config.targets = _strings(table, "targets", where)
    config.strict = _boolean(table, "strict", where)
    config.timeout_ms = _positive(table, "timeout_ms", where) or \
        _positive(table, "timeout", where)
    config.rlimit = _positive(table, "rlimit", where)
    config.jobs = _jobs(table.get("jobs"), where)
    config.import_timeout = _seconds(table, "import_timeout", where)
    config.exclude = _strings(table, "exclude", where) or []
    config.format = table.get("format")
    if config.format is not None and config.format not in FORMATS:
        raise ConfigError(f"{where}: format must be one of {', '.join(FORMATS)}, got "
                          f"{config.format!r}")
    config.cache = _boolean(table, "cache", where)
    if "cache_dir" in table:
        if not isinstance(table["cache_dir"], str) or not table["cache_dir"]:
            raise ConfigError(f"{where}: cache_dir must be a path (a string)")
        config.cache_dir = config.root / table["cache_dir"]
    config.ignore = _ignore(table.get("ignore"), where)
    config.overrides = _overrides(table.get("overrides"), where)
    return config


def _strings(table: dict[str, Any], key: str, where: str) -> list[str] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, got {value!r}")
    return list(value)


def _boolean(table: dict[str, Any], key: str, where: str) -> bool | None:
    value = table.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {value!r}")
    return value


# z3 takes timeout and rlimit as unsigned 32-bit integers: a larger one wraps silently
# (2**32 + 1 ms would be a 1 ms limit), so it is refused, not passed on
SOLVER_LIMIT_MAX = 2**32 - 1


def _positive(table: dict[str, Any], key: str, where: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 0 < value <= SOLVER_LIMIT_MAX:
        raise ConfigError(f"{where}: {key} must be a positive integer up to "
                          f"{SOLVER_LIMIT_MAX}, got {value!r}")
    return value


def _seconds(table: dict[str, Any], key: str, where: str) -> float | None:
    """A positive number of seconds (an integer or a float) a wait can take: at most
    ``threading.TIMEOUT_MAX`` (a longer one overflows the wait)."""
    import threading

    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 < value <= threading.TIMEOUT_MAX:
        raise ConfigError(f"{where}: {key} must be a positive number of seconds up to "
                          f"{threading.TIMEOUT_MAX:g}, got {value!r}")
    return float(value)


def seconds_argument(text: str) -> float:
    """``--import-timeout``: a positive number of seconds up to
    ``threading.TIMEOUT_MAX`` (argparse type)."""
    import argparse
    import math
    import threading

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds up to "
                                         f"{threading.TIMEOUT_MAX:g}, got {text!r}")
    return value


def solver_limit_argument(text: str) -> int:
    """``--timeout-ms``, ``--rlimit``: a positive integer z3 takes as it is, at most
    ``SOLVER_LIMIT_MAX`` (argparse type)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= SOLVER_LIMIT_MAX:
        raise argparse.ArgumentTypeError(f"expected a positive integer up to "
                                         f"{SOLVER_LIMIT_MAX}, got {text!r}")
    return value


def _jobs(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if value == "auto":
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: jobs must be a positive integer or \"auto\", got "
                          f"{value!r}")
    return value


def _ignore(value: Any, where: str) -> dict[str, str]:
    """``{check id: reason}`` from a table or a list of ``{check, reason}`` tables."""
    if value is None:
        return {}
    entries: list[tuple[Any, Any]]
    if isinstance(value, dict):
        entries = list(value.items())
    elif isinstance(value, list):
        entries = []
        for item in value:
            if isinstance(item, str):
                raise ConfigError(f"{where}: ignore entry {item!r} needs a reason: write "
                                  f"{{check = {item!r}, reason = \"why\"}} or a "
                                  f"[tool.hoare.ignore] table")
            if not isinstance(item, dict) or set(item) != {"check", "reason"}:
                raise ConfigError(f"{where}: each ignore entry must be {{check = \"...\", "
                                  f"reason = \"...\"}}, got {item!r}")
            entries.append((item["check"], item["reason"]))
    else:
        raise ConfigError(f"{where}: ignore must be a table or a list, got {value!r}")
    out: dict[str, str] = {}
    for check, reason in entries:
        if not isinstance(check, str) or ":" not in check:
            raise ConfigError(f"{where}: ignore: {check!r} is not a check id "
                              f"(module:Class.kind[predicate])")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{where}: ignore {check!r} needs a reason (a non-empty "
                              f"string)")
        out[check] = reason.strip()
    return out


def _overrides(value: Any, where: str) -> dict[str, dict[str, int]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: overrides must be a table of contract names")
    out: dict[str, dict[str, int]] = {}
    for name, settings in value.items():
        if not isinstance(settings, dict):
            raise ConfigError(f"{where}: overrides.{name} must be a table")
        unknown = sorted(set(settings) - _OVERRIDE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: overrides.{name}: unknown key {unknown[0]!r} "
                              f"(known keys: {', '.join(sorted(_OVERRIDE_KEYS))})")
        inner = f"{where}: overrides.{name}"
        limits: dict[str, int] = {}
        timeout = _positive(settings, "timeout_ms", inner) or \
            _positive(settings, "timeout", inner)
        if timeout:
            limits["timeout_ms"] = timeout
        rlimit = _positive(settings, "rlimit", inner)
        if rlimit:
            limits["rlimit"] = rlimit
        out[name] = limits
    return out


def matches(check_id: str, pattern: str) -> bool:
    """Does an ignore ``pattern`` cover ``check_id`` (``module:Class.kind[pred]``)?"""
    return check_id == pattern or check_id.startswith(pattern + "[") or \
        check_id.startswith(pattern + ".")
