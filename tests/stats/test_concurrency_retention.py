"""``configure(stats_retention_days=...)`` while other threads call a contract: the
store every later call records into carries the retention configured last. Before, a
call could read the old retention, lose the race to ``configure()`` and hand the store
the stale value (3-6 of 300 configures lost). In a child process, so a hang or a crash
fails the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from library_under_test import LIBRARY

RACE = textwrap.dedent(r'''
    import json, sys, threading, time
    sys.setswitchinterval(1e-6)  # provoke the interleaving
    import hoare
    from hoare import Contract, LLMDataModel, contract
    from hoare.engines import FunctionEngine
    from hoare.contracts.configuration import stats_store

    class Q(LLMDataModel):
        text: str

    @contract()
    class Echo(Contract):
        prompt = "Echo."
        def forward(self, q: Q) -> Q:
            return self.contract_result

    hoare.configure(stats=sys.argv[1])
    echo = Echo(engine=FunctionEngine(lambda r: '{"text": "x"}'))
    stop = False
    def work():
        while not stop:
            echo(Q(text="x"))
    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    stale = []
    for n in range(300):
        days = float(n + 1)
        hoare.configure(stats_retention_days=days)
        time.sleep(0.002)  # calls race the configure
        found = stats_store().retention_days
        if found != days:
            stale.append((days, found))
    stop = True
    for thread in threads:
        thread.join()
    print(json.dumps(stale))
''')


def test_a_configured_retention_is_never_lost_to_a_racing_call(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", RACE, str(tmp_path / "s.db")],
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
