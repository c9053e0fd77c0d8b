"""How ``hoare stats``, ``compare`` and ``eval`` reach the stats store: which store
(``--db``, ``$HOARE_STATS``, ``[tool.hoare] stats``), how it is named in an error, where
the reader's warnings go, and ``--plot``.

Shared by the three commands that read recorded calls, so that each names a missing or
broken store the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

from hoare.cli.output import terminal_safe

__all__ = ["plot", "shown_db", "store_target", "warner"]


def store_target(given: str | None, command: str) -> str | None:
    """The store ``hoare stats``, ``compare`` and ``eval`` read: ``--db``, else
    ``$HOARE_STATS``, else ``[tool.hoare] stats`` (None, said on stderr, when none)."""
    from hoare.contracts import configuration

    target = given if given is not None else configuration.stats_target()
    if not target:
        print(f"hoare {command}: error: no stats store: give --db PATH_OR_URL, or set "
              f"HOARE_STATS or [tool.hoare] stats", file=sys.stderr)
        return None
    return target


def warner(command: str) -> Callable[[str], None]:
    """Where ``query`` says which rows it skipped or sanitized: stderr, one line each."""
    def warn(text: str) -> None:
        print(f"hoare {command}: warning: {terminal_safe(text)}", file=sys.stderr)
    return warn


def shown_db(target: str, given: str | None) -> str:
    """The store as an error names it, with where it came from (``--db``,
    ``$HOARE_STATS`` or ``[tool.hoare] stats``; a URL's password hidden)."""
    import os

    from hoare.stats.store import shown_target

    if given is not None:
        where = "--db"
    elif os.environ.get("HOARE_STATS") == target:
        where = "$HOARE_STATS"
    else:
        where = "the configured store"  # configure(stats=...) or [tool.hoare] stats
    return f"{where} {shown_target(target)}"


def plot(command: str, draw: Callable[[ModuleType], object], path: str) -> int:
    """Run ``draw`` with ``hoare.stats.plot``; 2 when matplotlib is missing or the file
    cannot be written, each said on stderr."""
    try:
        from hoare.stats import plot as stats_plot
    except ImportError as error:
        print(f"hoare {command}: error: --plot: {error}", file=sys.stderr)
        return 2
    try:
        draw(stats_plot)
    except (OSError, ValueError) as error:
        print(f"hoare {command}: error: --plot {path}: {error}", file=sys.stderr)
        return 2
    print(f"hoare {command}: plot written to {path}", file=sys.stderr)
    return 0
