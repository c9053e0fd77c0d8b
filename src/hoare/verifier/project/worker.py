"""A ``hoare verify`` worker as a plain subprocess: ``python -m hoare.verifier.project.worker``.

Used where forking is not safe (the calling process runs threads) or not available:
unlike ``multiprocessing``'s spawn, it never re-imports the caller's ``__main__``.
Protocol: ``READY`` on the original stdout once the worker's own imports are done;
one JSON request per line on the original stdin (``{"unit": ..., "options": ...,
"overrides": ...}``); on the original stdout, ``IMPORTED`` once the
unit is imported (the parent's import time bound stops there), then one JSON result
line. The verified modules see ``/dev/null`` as stdin and stderr as stdout, so they
can neither read the requests nor corrupt the results. JSON is written ASCII-only:
a file name that is not UTF-8 (surrogate escapes) travels intact.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["GC_THRESHOLD", "IMPORTED", "READY", "decode_unit", "encode_unit",
           "keep_freed_memory", "main", "tune_collector"]

READY = "ready"  # the worker's first line, once its own imports are done
IMPORTED = "imported"  # the worker's line once a unit's import is done


def encode_unit(unit: Any) -> dict[str, Any]:
    return {"target": unit.target, "path": str(unit.path), "module": unit.module,
            "only": unit.only, "problem": unit.problem}


def decode_unit(data: dict[str, Any]) -> Any:
    from hoare.verifier.project.targets import Unit

    return Unit(data["target"], Path(data["path"]), data.get("module"), data.get("only"),
                data.get("problem"))


# glibc's ``mallopt`` parameters, and the values a worker sets (see keep_freed_memory)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest accepted value on 64-bit
_TRIM_THRESHOLD = 64 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Keep the memory z3 frees for its next context (glibc only; whether set).

    Every unit is checked in a fresh z3 context (``solve/context.py``), and a context
    allocates some 16 MB. Depending on the heap's history, glibc serves that with
    ``mmap`` and unmaps it when the context is freed, so every unit paid ~4,000 page
    faults again: a quarter of a worker's CPU, or nothing, depending on which unit came
    first. Served from the heap and kept there (a fixed mmap threshold, a high trim
    threshold), a worker's memory stays at its peak and each context reuses it. A
    ``MALLOC_*`` or ``GLIBC_TUNABLES`` setting in the environment is left as it is."""
    if not sys.platform.startswith("linux") or "GLIBC_TUNABLES" in os.environ or \
            any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt to speak of)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


# gc's thresholds in a worker: the young generation collected every 10,000 net
# allocations (gc's default, 700, suits small programs), the older ones as by default
GC_THRESHOLD = (10_000, 20, 20)


def tune_collector() -> None:
    """The worker's own objects (pydantic, z3, hoare: the bulk of its heap) frozen out of
    every collection, and the young generation collected less often. A unit allocates
    many short-lived objects (z3 terms, validated samples), and with gc's defaults the
    collector took ~6% of a worker's CPU. Cyclic garbage is still collected (every
    10,000 allocations); a worker's peak memory measured the same."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", encoding="ascii")
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="surrogateescape")
    os.dup2(2, 1)  # prints of the verified modules go to stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # an input() at import time reads nothing, not the next request
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")
    keep_freed_memory()
    from hoare.verifier.project.units import import_problem, run_unit_safely
    from hoare.verifier.solve.solver import SolverOptions

    def send(message: object) -> None:
        protocol.write(json.dumps(message, ensure_ascii=True, default=str) + "\n")
        protocol.flush()

    # the checker's own imports (pydantic, z3) before READY: the parent's import time
    # bound then counts the user's module alone, not this process's start on a busy host
    import hoare.verifier.checks.contracts
    import hoare.verifier.checks.pipelines
    import hoare.verifier.checks.tools
    import hoare.verifier.translate.values  # noqa: F401  (loaded for the time they take)
    tune_collector()
    send(READY)

    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        unit = decode_unit(request["unit"])
        try:
            result = run_unit_safely(unit, SolverOptions(**request["options"]),
                               request.get("overrides") or None, lambda: send(IMPORTED))
        except BaseException as error:  # KeyboardInterrupt raised by the module itself
            text = f"import failed: {type(error).__name__}: {error}"
            result = {"contracts": [], "pipelines": [],
                      "errors": [import_problem(unit, error, text).to_json()]}
        send(result)
    # Done: exit now. A verified module may have started threads that would keep a
    # normal interpreter exit waiting (a server's background thread, a timer).
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
