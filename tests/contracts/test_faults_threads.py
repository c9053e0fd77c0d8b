"""One contract instance with pre-flight on, shared by many threads and event loops, and
`hoare.verify` called from several threads at once: no crash, no wrong verdict, no hang.

z3's context is not thread-safe; before `hoare/verifier/solve/lock.py` this scenario ended
in a segmentation fault in `Z3_dec_ref` or `Z3_solver_check_assumptions`. Each case runs
in a child process (with faulthandler), so a crash fails the test instead of the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NIGHTLY = bool(os.environ.get("HOARE_NIGHTLY"))

SCRIPT = textwrap.dedent('''
    import asyncio, faulthandler, json, sys, threading
    faulthandler.enable()
    from pydantic import Field
    from hoare import Contract, LLMDataModel, Post, contract, verify
    from hoare.engines import FunctionEngine

    class In(LLMDataModel):
        lo: int = Field(ge=0, le=1000)
        hi: int = Field(ge=0, le=1000)
        tag: str = Field(max_length=8)

    class Out(LLMDataModel):
        v: int = Field(ge=0, le=1000)
        s: str = Field(max_length=10)

    @contract(remedy_retry_params={"tries": 1, "delay": 0})
    class Pick(Contract):
        prompt = "pick a value in range, tagged"
        post_conditions = [Post(lambda o, i: i.lo <= o.v <= i.hi, "in range"),
                           Post(lambda o, i: o.s.startswith(i.tag), "tagged")]

        def forward(self, i: In) -> Out:
            return self.contract_result if self.contract_successful else Out(v=0, s="")

    engine_calls = []

    def answer(request):
        engine_calls.append(1)
        return json.dumps({"v": request.input.lo, "s": request.input.tag})

    pick = Pick(engine=FunctionEngine(answer))
    THREADS, LOOPS, CALLS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    errors = []

    def case(t, k):
        lo = (t * 37 + k * 11) % 900 + 1
        possible = (t + k) % 3 != 0
        return In(lo=lo, hi=lo + 5 if possible else lo - 1, tag=f"t{t}k{k % 5}"), possible

    def judge(x, possible, out, outcome, successful):
        kinds = [v.kind.value for v in outcome.violations]
        if possible:
            assert successful and out.v == x.lo and out.s == x.tag, ("refused", x, kinds)
            assert outcome.input_used == x, "another call's input"
        else:  # no output can be in [lo, lo - 1]: refused before any engine call
            assert not successful and kinds == ["unsatisfiable"], ("not refused", x, kinds)

    def thread_worker(t, barrier):
        barrier.wait()
        try:
            for k in range(CALLS):
                x, possible = case(t, k)
                out = pick(x)
                judge(x, possible, out, pick.contract_outcome, pick.contract_successful)
        except BaseException as error:
            errors.append(repr(error))

    def loop_worker(t, barrier):
        barrier.wait()

        async def one(k):
            x, possible = case(t, k)
            out = await pick.acall(x)
            judge(x, possible, out, pick.contract_outcome, pick.contract_successful)

        async def main():
            await asyncio.gather(*(one(k) for k in range(CALLS)))

        try:
            asyncio.run(main())
        except BaseException as error:
            errors.append(repr(error))

    def verify_worker(reports, barrier):
        barrier.wait()
        try:
            reports.append(verify(Pick).render().rsplit(" in ", 1)[0])
        except BaseException as error:
            errors.append("verify: " + repr(error))

    reports = []
    barrier = threading.Barrier(THREADS + LOOPS + 4)
    workers = [threading.Thread(target=thread_worker, args=(t, barrier)) for t in range(THREADS)]
    workers += [threading.Thread(target=loop_worker, args=(THREADS + t, barrier))
                for t in range(LOOPS)]
    workers += [threading.Thread(target=verify_worker, args=(reports, barrier)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    alive = [w for w in workers if w.is_alive()]
    assert not alive, f"{len(alive)} workers hang"
    assert len(set(reports)) == 1, "verify from several threads gave different reports"
    expected_calls = sum(case(t, k)[1] for t in range(THREADS + LOOPS) for k in range(CALLS))
    assert len(engine_calls) == expected_calls, (len(engine_calls), expected_calls)
    print("errors", len(errors), errors[:3])
    sys.exit(1 if errors else 0)
''')


@pytest.mark.parametrize("round_", range(3 if NIGHTLY else 1))
def test_shared_instance_under_threads_event_loops_and_concurrent_verify(
        tmp_path: Path, round_: int) -> None:
    script = tmp_path / "shared_instance.py"
    script.write_text(SCRIPT, encoding="utf-8")
    threads, loops, calls = (32, 8, 40) if NIGHTLY else (16, 4, 12)
    done = subprocess.run(
        [sys.executable, str(script), str(threads), str(loops), str(calls)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode != -11, f"segmentation fault:\n{tail}"
    assert done.returncode == 0, tail
    assert "errors 0" in done.stdout, tail


def test_z3_objects_dropped_by_other_threads_are_released_under_the_lock() -> None:
    """A z3 term freed by a thread while another holds the lock is queued, not freed
    concurrently, and released when the holder lets go."""
    import threading

    import z3

    from hoare.verifier.solve.lock import Z3_LOCK

    with Z3_LOCK:
        term = z3.Int("dropped_elsewhere") + 1
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with Z3_LOCK:
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(30)
    before = len(Z3_LOCK.pending)
    del term  # another thread holds the lock: the release is queued
    assert len(Z3_LOCK.pending) == before + 1
    release.set()
    thread.join(30)
    assert Z3_LOCK.pending == []  # the holder released it on the way out
