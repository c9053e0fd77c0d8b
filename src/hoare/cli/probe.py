"""``hoare probe``: measure which JSON Schema keywords a server's structured-output
decoder enforces, and write the capability table ``OpenAIEngine(structured='auto')``
reads."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hoare.cli.output import json_text, terminal_safe

__all__ = ["probe_command"]


def probe_command(args: argparse.Namespace) -> int:
    """Run ``hoare probe``: measure and write a server's capability table (2: the server
    or the file failed)."""
    from hoare.engines import capabilities

    model = args.model or os.environ.get("HOARE_MODEL") or "default"
    try:
        table = capabilities.probe(args.base_url, model, trials=args.trials)
        path = Path(args.out) if args.out else capabilities.cache_path(args.base_url)
        capabilities.save(table, path)
    except (capabilities.CapabilityError, OSError, ValueError) as error:
        print(f"hoare probe: error: {terminal_safe(str(error))[:500]}", file=sys.stderr)
        return 2
    if args.json:
        print(json_text(table.as_dict()))
    else:
        for dialect, keywords in table.dialects.items():
            print(f"{dialect}: " + ", ".join(f"{k} {v}" for k, v in keywords.items()))
    print(f"hoare probe: written to {path}", file=sys.stderr)
    return 0
