"""Run registry entries over hostile values in this (child) process, one JSON line per
case to the report file: ``{"entry", "value", "verdict", "detail"}``. A ``start``
line precedes each case, so a crash or a hang (``faulthandler`` ends the process after
``CASE_BOUND`` seconds) is named by the last one.

Usage: ``python -m hostile.runner REPORT ENTRY...`` (tests/ on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
import warnings
from pathlib import Path
from typing import Any

from hoare.errors import safe_text

from . import generators
from .properties import is_documented
from .registry import registry

CASE_BOUND = 120.0  # seconds: a hang detector, not a speed check


def judge(value_name: str, error: BaseException | None, fired: list[BaseException]) -> \
        tuple[str, str]:
    """The verdict of one case: ok, documented, propagated, user, or bad (why)."""
    interrupt = value_name.startswith("callback:raises_")
    if interrupt and fired:
        if error is fired[0]:
            return "propagated", type(error).__name__
        got = "returned normally" if error is None else f"raised {type(error).__name__}"
        return "bad", f"the callback's {type(fired[0]).__name__} did not propagate " \
                      f"unchanged: {got}"
    if error is None:
        return "ok", ""
    name = f"{type(error).__module__}.{type(error).__qualname__}"
    if isinstance(error, generators.HostileDunder):
        return "user", name
    if isinstance(error, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
        return "bad", f"{name} escaped but no callback raised it"
    if is_documented(error):
        try:
            text = str(error)
        except BaseException as failure:
            return "bad", f"{name} whose str() raised {type(failure).__name__}"
        return "documented", f"{name}: {text[:300]}"
    where = "".join(traceback.format_tb(error.__traceback__))[-2500:]
    return "bad", f"undocumented {name}: {safe_text(error, 300)}\n{where}"


def run_case(entry: Any, value_name: str, make: Any, folder: Path) -> tuple[str, str]:
    generators.FIRED.clear()
    caught: list[str] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda raised: caught.append(
        f"{raised.exc_type.__name__}: {raised.exc_value}")
    error: BaseException | None = None
    threads_before = {t for t in threading.enumerate() if not t.daemon}
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        value: object = None
        try:
            value = make(folder) if value_name.startswith("path:") else make()
            entry.drive(value, folder)
        except BaseException as raised:
            error = raised
        del value
        verdict, detail = judge(value_name, error, list(generators.FIRED))
        if value_name.startswith("callback:"):
            # what the error's frames held (a coroutine) is freed, warning, now: in this
            # case, not at some later entry's collection
            error = None
            gc.collect()
    sys.unraisablehook = old_hook
    never_awaited = [str(w.message) for w in recorded if "never awaited" in str(w.message)]
    never_awaited += [c for c in caught if "never awaited" in c]
    if never_awaited and verdict != "bad":
        verdict, detail = "bad", f"coroutine never awaited: {never_awaited[0]}"
    left = {t for t in threading.enumerate() if not t.daemon} - threads_before
    if left and verdict != "bad":
        verdict, detail = "bad", f"non-daemon threads left behind: {sorted(t.name for t in left)}"
    return verdict, detail


def main(report: str, names: list[str]) -> None:
    entries = registry()
    with open(report, "a", encoding="utf-8") as out:
        def write(**line: str) -> None:
            out.write(json.dumps(line, ensure_ascii=True) + "\n")
            out.flush()
        for name in names:
            entry = entries[name]
            if entry.drive is None:
                continue
            families = entry.families or ("none",)
            cases = list(generators.values(*families)) if entry.families else \
                [("none", lambda: None)]
            if "path" in families:
                cases += [(f"path:{p}", f) for p, f in generators.PATHS.items()]
            for value_name, make in cases:
                write(entry=name, value=value_name, verdict="start", detail="")
                faulthandler.dump_traceback_later(CASE_BOUND, exit=True)
                folder = Path(tempfile.mkdtemp(prefix="hostile-"))
                cwd = os.getcwd()
                os.chdir(folder)
                try:
                    verdict, detail = run_case(entry, value_name, make, folder)
                finally:
                    os.chdir(cwd)
                    faulthandler.cancel_dump_traceback_later()
                    for path in folder.rglob("*"):
                        try:
                            os.chmod(path, 0o700, follow_symlinks=False)
                        except (OSError, NotImplementedError):
                            pass
                    os.chmod(folder, 0o700)
                    shutil.rmtree(folder, ignore_errors=True)
                write(entry=name, value=value_name, verdict=verdict, detail=detail)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
