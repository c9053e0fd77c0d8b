"""`hoare compare` as a deploy gate, offline: the same contract run under two labels
(a baseline model and a candidate that more often answers out of the rules), recorded
in one stats store, then compared with a plot of the two confidence sequences.

The engines are seeded stand-ins for two models (examples/stats_demo.py's), so the
output is the same on every machine.

Run: ``python examples/compare_demo.py [calls.db [plot.png]]`` (default: temporary
files). Exits with `hoare compare`'s status: 1 here, the candidate is shown worse.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from stats_demo import Ticket, TriageTicket, flaky_model

import hoare


def main(argv: list[str]) -> int:
    folder = Path(tempfile.mkdtemp())
    path = Path(argv[0]) if argv else folder / "calls.db"
    plot = argv[1] if len(argv) > 1 else str(folder / "compare.png")
    for label, engine in (("baseline", flaky_model(seed=7)),
                          ("candidate", flaky_model(seed=8, off_rules=1.0))):
        hoare.configure(stats=path, label=label)
        triage = TriageTicket(engine=engine)
        for index in range(1000):
            triage(Ticket(text=f"message {index}"))
    hoare.flush_stats()
    return subprocess.call([sys.executable, "-m", "hoare.cli", "compare", "--db", str(path),
                            "--baseline", "baseline", "--candidate", "candidate",
                            "--max-drop", "0.02", "--plot", plot])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
