"""One ``ContractAgent`` shared by many threads, its engine failing at random, its tool's
``@pre``/``@post``/``contract_assert`` failing on some inputs: each run answers its own
task, the counters equal what the runs saw, and the stats store holds exactly one record
per run and per tool call. Before: a run that an engine's error ended was not recorded
at all. Runs in a child process (a crash or a hang fails the test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from library_under_test import LIBRARY

SHARED = textwrap.dedent(r'''
    import collections, faulthandler, json, random, sqlite3, sys, threading
    faulthandler.enable()
    faulthandler.dump_traceback_later(240, exit=True)
    sys.setswitchinterval(1e-5)
    import hoare
    from hoare.agents import ContractAgent, ContractPolicy, contract_assert, post, pre, tool
    from hoare.engines import FunctionEngine
    from hoare.engines.base import EngineError

    hoare.configure(stats=sys.argv[1], label="agents")
    random.seed(int(sys.argv[2]))

    @tool
    @pre(lambda args: not args["text"].endswith("3"), "no 3")
    @post(lambda r: "7" not in r, "no 7")
    def echo(text: str) -> str:
        """Echo."""
        contract_assert(not text.endswith("5"), f"not ok: {text}")
        return text

    def answer(request):
        messages = request.messages
        task = next(m.content for m in messages if m.role == "user")
        name = task.split("Task: ", 1)[1].strip()
        if random.random() < 0.08:
            raise EngineError("flaky")
        if len(messages) <= 2:
            return json.dumps({"tool": "echo", "args": {"text": name}})
        return json.dumps({"answer": name})

    seen = []
    agent = ContractAgent(FunctionEngine(answer), agent_type="constrained", tools=[echo],
                          policy=ContractPolicy.OBSERVE, violation_handler=seen.append,
                          max_iterations=4)
    lock = threading.Lock()
    ids = iter(range(10**9))
    runs, raised, errors = {}, [], []

    def work():
        try:
            for _ in range(25):
                with lock:
                    k = next(ids)
                try:
                    result = agent.run(f"t{k}")
                except EngineError:
                    with lock:
                        raised.append(k)
                    continue
                assert result.success and result.answer == f"t{k}", (result.answer, k)
                with lock:
                    runs[k] = result
        except BaseException as error:
            errors.append(repr(error))

    threads = [threading.Thread(target=work) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    observations = sum(1 for r in runs.values() for e in r.events
                       if e.type.value == "observation")
    ((calls, successes, violations),) = [
        (s["calls"], s["successes"], s["violations"]) for s in agent.tool_stats().values()]
    assert hoare.flush_stats()
    with sqlite3.connect(sys.argv[1]) as connection:
        stored = {kind: [count, ok] for kind, count, ok in connection.execute(
            "SELECT kind, count(*), sum(success) FROM calls GROUP BY kind")}
    print(json.dumps({"errors": errors, "runs": len(runs), "raised": len(raised),
                      "observations": observations, "tool": [calls, successes, violations],
                      "handler": len(seen), "checks": agent.get_contract_stats(),
                      "stored": stored}))
''')


def test_one_agent_shared_by_threads_counts_and_records_every_run(tmp_path: Path) -> None:
    for seed in range(2):
        path = tmp_path / f"agents{seed}.db"
        done = subprocess.run([sys.executable, "-c", SHARED, str(path), str(seed)],
                              capture_output=True, text=True, timeout=600,
                              env={"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")})
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["errors"] == []
        assert found["runs"] + found["raised"] == 12 * 25 and found["raised"] > 0
        calls, successes, violations = found["tool"]
        # every run that answered made one tool call; a run ended by the engine's error
        # may have made one before it
        assert found["runs"] <= calls <= found["runs"] + found["raised"]
        assert violations == found["handler"] == found["checks"]["violations"]
        assert found["stored"]["tool"] == [calls, successes]
        # one record per run: the answered ones succeeded, the raised ones failed
        assert found["stored"]["agent"] == [found["runs"] + found["raised"], found["runs"]]
