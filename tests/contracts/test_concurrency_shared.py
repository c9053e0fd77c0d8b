"""One contract instance shared by 16 threads and by tasks on several event loops at
once (``__call__`` and ``acall`` mixed, a sync call inside a loop too), with
predicates that raise, an engine that fails at random, remedies with backoff, and
calls nested in ``forward`` and in a predicate (the same instance and another);
``configure()`` changed meanwhile. Checked against what each call saw: every thread's
and task's ``contract_*`` describe its own latest call, ``contract_stats()`` (calls,
successes, each family's passes and trials) and ``contract_perf_stats()`` counts equal
the calls made, the stats store holds exactly one record per call, nothing hangs and
the instance is collected after use. Each scenario runs in a child process with a
GIL switch interval of 1 µs (to provoke races) and a watchdog (a hang fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from library_under_test import LIBRARY

COMMON = textwrap.dedent(r'''
    import asyncio, collections, faulthandler, gc, json, random, sqlite3, sys, threading
    import weakref
    faulthandler.enable()
    faulthandler.dump_traceback_later(400, exit=True)
    sys.setswitchinterval(1e-6)
    import hoare
    from hoare import Contract, LLMDataModel, Post, Pre, contract
    from hoare.engines import FunctionEngine
    from hoare.engines.base import EngineError

    DB, SEED = sys.argv[1], int(sys.argv[2])
    random.seed(SEED)
    hoare.configure(stats=DB, label="shared")

    class In(LLMDataModel):
        id: int
        mode: int
        depth: int = 0

    class Out(LLMDataModel):
        id: int
        v: int

    def pre_raises(i):
        if i.mode == 1:
            raise ValueError("pre boom")
        return True

    def post_raises(o, i):
        if i.mode == 2 and o.v == 0:
            raise KeyError("post boom")
        return True

    HOLDER = {}
    NESTED = collections.Counter()  # calls made inside calls, by where

    @contract()
    class Other(Contract):
        prompt = "other"

        def forward(self, i: In) -> Out:
            return self.contract_result

    def calls_another(o, i):  # a predicate calling another contract
        if i.depth > 0:
            other = HOLDER["other"]
            got = other(In(id=-i.id, mode=0))
            assert got.id == -i.id and other.contract_result.id == -i.id
            with attempts_lock:
                NESTED["other"] += 1
        return True

    @contract(remedy_retry_params={"tries": 2, "delay": 0.0005, "jitter": 0})
    class Echo(Contract):
        prompt = "echo"
        pre_conditions = [Pre(pre_raises, "pre")]
        post_conditions = [Post(lambda o, i: o.id == i.id, "same id"),
                           Post(post_raises, "raises"), Post(lambda o, i: o.v > 0, "positive"),
                           Post(calls_another, "nested")]

        def forward(self, i: In) -> Out:
            if i.depth > 0:  # the same instance, nested in its own forward
                inner = self(In(id=i.id + 10**8, mode=0))  # passes every family at once
                assert inner.id == i.id + 10**8
                with attempts_lock:
                    NESTED["self"] += 1
            if self.contract_successful:
                result = self.contract_result
                assert result.id == i.id, ("forward reads another call", result.id, i.id)
                return result
            return Out(id=i.id, v=-1)

    attempts = collections.Counter()
    attempts_lock = threading.Lock()

    def answer(request):
        x = request.input
        with attempts_lock:
            attempts[x.id] += 1
            n = attempts[x.id]
        if x.mode == 3 and random.random() < 0.5:
            raise EngineError("random engine failure")
        v = 0 if (x.mode in (2, 4) and n == 1) else abs(x.id) + 1
        return json.dumps({"id": x.id, "v": v})

    echo = Echo(engine=FunctionEngine(answer))
    HOLDER["other"] = Other(engine=FunctionEngine(answer))
    outcomes, errors = [], []
    lock = threading.Lock()
    counter = iter(range(1, 10**8))

    def fresh():
        with lock:
            k = next(counter)
        return In(id=k, mode=random.randrange(5), depth=int(random.random() < 0.2))

    def check(x, out):
        """What this thread or task reads is its own latest call's."""
        outcome = echo.contract_outcome
        used = outcome.input_used
        assert used is None or used.id == x.id, ("another call's outcome", used, x.id)
        if echo.contract_successful:
            assert echo.contract_result.id == x.id, ("another's result", x.id)
            assert echo.contract_exception is None
        assert out.id == x.id
        with lock:
            outcomes.append(outcome)

    def thread_worker(barrier, calls):
        barrier.wait()
        try:
            for _ in range(calls):
                x = fresh()
                check(x, echo(x))
        except BaseException:
            import traceback
            errors.append(traceback.format_exc())

    async def task_worker(calls):
        for _ in range(calls):
            x = fresh()
            out = echo(x) if random.random() < 0.2 else await echo.acall(x)
            check(x, out)
            await asyncio.sleep(0)

    def loop_worker(barrier, tasks, calls):
        barrier.wait()

        async def main():
            await asyncio.gather(*(task_worker(calls) for _ in range(tasks)))

        try:
            asyncio.run(main())
        except BaseException:
            import traceback
            errors.append(traceback.format_exc())

    def run_all(threads, loops, tasks, calls, meanwhile=None):
        barrier = threading.Barrier(threads + loops + 1)
        workers = [threading.Thread(target=thread_worker, args=(barrier, calls))
                   for _ in range(threads)]
        workers += [threading.Thread(target=loop_worker, args=(barrier, tasks, calls))
                    for _ in range(loops)]
        for worker in workers:
            worker.start()
        barrier.wait()
        if meanwhile is not None:
            meanwhile(workers)
        for worker in workers:
            worker.join(300)
        assert not any(w.is_alive() for w in workers), "a worker hangs"
        return (threads + loops * tasks) * calls

    def figures(made):
        """What the counters say, and what the calls saw (``outcomes``, ``NESTED``)."""
        stats, other = Echo.contract_stats(), Other.contract_stats()
        families = collections.defaultdict(lambda: [0, 0])
        for outcome in outcomes:
            for family, passed in outcome.trials:
                families[family][0] += passed
                families[family][1] += 1
        for family in families:  # a nested call of the same instance passes each once
            families[family][0] += NESTED["self"]
            families[family][1] += NESTED["self"]
        perf = echo.contract_perf_stats()
        flushed = hoare.flush_stats(timeout=120)
        with sqlite3.connect(DB) as connection:
            stored = connection.execute("SELECT count(*), sum(success) FROM calls").fetchone()
        return {"errors": errors[:3], "made": made, "seen": len(outcomes),
                "nested": NESTED["self"], "nested_other": NESTED["other"],
                "successes": sum(o.success for o in outcomes),
                "stats": [stats["calls"], stats["successes"]],
                "other": [other["calls"], other["successes"]],
                "families": {f: [d["passes"], d["trials"]]
                             for f, d in stats["families"].items()},
                "families_seen": dict(families),
                "perf": {k: v["count"] for k, v in perf.items()
                         if isinstance(v, dict) and "count" in v and k != "act_execution"},
                "flushed": flushed, "stored": list(stored)}
''')

SHARED = COMMON + textwrap.dedent(r'''
    made = run_all(16, 3, 4, 25)
    found = figures(made)
    outcomes.clear()
    reference = weakref.ref(echo)
    del echo
    HOLDER.clear()
    gc.collect()
    found["collected"] = reference() is None
    print(json.dumps(found))
''')


def _run(script: str, path: Path, seed: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", script, str(path), str(seed)],
                          capture_output=True, text=True, timeout=900,
                          env={"PYTHONPATH": LIBRARY, "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _exact(found: dict[str, Any], made: int) -> None:
    """Every counter equals the calls made, as their callers saw them."""
    assert found["errors"] == [], found["errors"]
    assert found["made"] == found["seen"] == made
    calls = made + found["nested"]  # the top-level calls and those nested in forward
    assert found["stats"] == [calls, found["successes"] + found["nested"]]
    assert found["families"] == found["families_seen"]
    assert found["other"] == [found["nested_other"]] * 2
    assert found["perf"] == dict.fromkeys(found["perf"], calls) and len(found["perf"]) == 6
    assert found["flushed"]
    assert found["stored"] == [calls + found["nested_other"],
                               found["stats"][1] + found["other"][1]]


def test_one_instance_shared_by_threads_and_event_loops(tmp_path: Path) -> None:
    found = _run(SHARED, tmp_path / "shared.db", 1)
    _exact(found, (16 + 3 * 4) * 25)
    assert found["nested"] > 0 and found["nested_other"] > 0
    assert found["collected"]  # nothing kept the instance once its calls returned


CONFIGURED_MEANWHILE = COMMON + textwrap.dedent(r'''
    import time
    OTHER_DB = DB + ".other"
    engines = [echo.__dict__["_hoare_engine_value"], FunctionEngine(answer, model="two")]
    echo.__dict__["_hoare_engine_value"] = None  # the configured engine, read per call
    hoare.configure(engine=engines[0])

    def meanwhile(workers):
        n = 0
        while any(w.is_alive() for w in workers):
            n += 1
            kind = random.randrange(6)
            if kind == 0:
                hoare.configure(stats=OTHER_DB if n % 2 else DB)
            elif kind == 1:
                hoare.configure(label=f"label{n % 3}")
            elif kind == 2:
                hoare.configure(preflight=random.choice([True, False, "shadow", None]))
            elif kind == 3:
                hoare.configure(engine=random.choice(engines))
            elif kind == 4:
                hoare.configure(stats_retention_days=random.choice([None, 1.0, 30]))
            else:
                hoare.configure(cache_size=random.randrange(1, 10))
            time.sleep(0.0005)
        hoare.configure(stats=DB)

    made = run_all(8, 2, 3, 20, meanwhile)
    found = figures(made)
    with sqlite3.connect(OTHER_DB) as connection:
        other = connection.execute("SELECT count(*), sum(success) FROM calls").fetchone()
    found["stored"] = [found["stored"][0] + other[0],
                       (found["stored"][1] or 0) + (other[1] or 0)]
    print(json.dumps(found))
''')


def test_configure_called_while_threads_and_loops_call(tmp_path: Path) -> None:
    """``configure()`` (the store, the label, the pre-flight, the engine, the retention,
    the cache size) changed all the while: every call is recorded once, in one of the
    two stores, and counted once."""
    found = _run(CONFIGURED_MEANWHILE, tmp_path / "configured.db", 2)
    _exact(found, (8 + 2 * 3) * 20)
