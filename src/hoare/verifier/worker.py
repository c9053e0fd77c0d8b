"""A ``hoare verify`` worker as a plain subprocess: ``python -m hoare.verifier.worker``.

Used where forking is not safe (the calling process runs threads) or not available:
unlike ``multiprocessing``'s spawn, it never re-imports the caller's ``__main__``.
Protocol: one JSON request per line on stdin (``{"unit": ..., "options": ...,
"overrides": ...}``), one JSON result per line on the original stdout; anything the
verified modules print goes to stderr, so it cannot corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["decode_unit", "encode_unit", "main"]


def encode_unit(unit: Any) -> dict[str, Any]:
    return {"target": unit.target, "path": str(unit.path), "module": unit.module,
            "only": unit.only}


def decode_unit(data: dict[str, Any]) -> Any:
    from .targets import Unit

    return Unit(data["target"], Path(data["path"]), data.get("module"), data.get("only"))


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # prints of the verified modules go to stderr
    sys.stdout = sys.stderr
    from .solver import SolverOptions
    from .units import _safe_run

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        result = _safe_run(decode_unit(request["unit"]), SolverOptions(**request["options"]),
                           request.get("overrides") or None)
        protocol.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
        protocol.flush()
    # Done: exit now. A verified module may have started threads that would keep a
    # normal interpreter exit waiting (a server's background thread, a timer).
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
