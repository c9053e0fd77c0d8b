"""Scenario 6: concurrency. The engine sleeps 20 ms (``time.sleep`` in threads,
``asyncio.sleep`` for ``acall``), then answers with a triage whose summary is the
ticket's text, so that every result can be checked against its own input (a call
that returned another call's result is counted as wrong).

One contract instance is shared by all workers. Threads: 1, 4 and 16 workers, each
making the same number of calls; async: 256 concurrent ``acall``s gathered at once.
Ideal wall time = calls x 20 ms / workers; reported: actual / ideal (1.0 = no
overhead at all) and throughput. Each figure is the median of several runs after
a warm-up run.
"""

import asyncio
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import workload

from hoare.engines import FunctionEngine, Request
from scenarios import Context, Report
from scenarios.contracts import PLAIN_ON, Ticket

SLEEP_S = 0.020
THREADS = (1, 4, 16)
ASYNC_CALLS = 256


def _answer(request: Request) -> str:
    return json.dumps({**workload.VALID, "summary": request.input.text})


def _sync_fn(request: Request) -> str:
    time.sleep(SLEEP_S)
    return _answer(request)


async def _async_fn(request: Request) -> str:
    await asyncio.sleep(SLEEP_S)
    return _answer(request)


def _ticket(i: int) -> object:
    return Ticket(**{**workload.TICKET, "text": f"ticket number {i}: charged twice"})


def _thread_run(instance: object, pool: ThreadPoolExecutor, workers: int, per_worker: int
                ) -> tuple[float, int]:
    tickets = [[_ticket(w * 1000 + i) for i in range(per_worker)] for w in range(workers)]

    def work(batch: list) -> int:
        wrong = 0
        for ticket in batch:
            result = instance(ticket)
            if not (instance.contract_successful
                    and result.summary == ticket.text):
                wrong += 1
        return wrong

    start = time.perf_counter_ns()
    wrong = sum(pool.map(work, tickets))
    return (time.perf_counter_ns() - start) / 1e6, wrong


async def _async_run(instance: object, calls: int) -> tuple[float, int]:
    tickets = [_ticket(i) for i in range(calls)]

    async def one(ticket: object) -> bool:
        result = await instance.acall(ticket)
        return bool(instance.contract_successful
                    and result.summary == ticket.text)

    start = time.perf_counter_ns()
    oks = await asyncio.gather(*(one(t) for t in tickets))
    return (time.perf_counter_ns() - start) / 1e6, calls - sum(oks)


def _figure(times_ms: list[float], calls: int, workers: int, wrong: int) -> dict:
    ideal = calls * SLEEP_S * 1e3 / workers
    median = statistics.median(times_ms)
    return {
        "calls": calls, "workers": workers, "runs": len(times_ms),
        "wall_ms": {"median": round(median, 2), "min": round(min(times_ms), 2),
                    "max": round(max(times_ms), 2)},
        "ideal_ms": round(ideal, 2),
        "actual_over_ideal": round(median / ideal, 3),
        "throughput_per_s": round(calls / (median / 1e3), 1),
        "ideal_throughput_per_s": round(workers / SLEEP_S, 1),
        "wrong_results": wrong,
    }


def run(ctx: Context) -> Report:
    report = Report("6_concurrency", "Concurrency: one instance, engine sleeping 20 ms")
    per_worker = 5 if ctx.quick else 12
    runs = 3 if ctx.quick else 7
    sync_instance = PLAIN_ON(engine=FunctionEngine(_sync_fn))
    for workers in THREADS:
        with ThreadPoolExecutor(workers) as pool:
            _thread_run(sync_instance, pool, workers, 2)  # warm-up (threads, caches)
            times, wrong = [], 0
            for _ in range(runs):
                elapsed, bad = _thread_run(sync_instance, pool, workers, per_worker)
                times.append(elapsed)
                wrong += bad
        figure = _figure(times, workers * per_worker, workers, wrong)
        report.figures[f"threads_{workers}"] = figure
        report.row(f"{workers} thread(s), {figure['calls']} calls: wall (ideal)",
                   f"{figure['wall_ms']['median']:.1f} ms ({figure['ideal_ms']:.0f} ms), "
                   f"{figure['throughput_per_s']:.0f} calls/s")
        report.row("  actual/ideal, wrong results",
                   f"{figure['actual_over_ideal']:.3f}, {wrong}", "wrong = 0", wrong == 0)
        report.goal(f"no wrong results, {workers} threads", wrong, "0", wrong == 0)

    async_instance = PLAIN_ON(engine=FunctionEngine(_async_fn))

    async def all_runs() -> tuple[list[float], int]:
        await _async_run(async_instance, 16)  # warm-up
        times, wrong = [], 0
        for _ in range(runs):
            elapsed, bad = await _async_run(async_instance, ASYNC_CALLS)
            times.append(elapsed)
            wrong += bad
        return times, wrong

    times, wrong = asyncio.run(all_runs())
    figure = _figure(times, ASYNC_CALLS, ASYNC_CALLS, wrong)
    report.figures[f"async_{ASYNC_CALLS}"] = figure
    report.row(f"{ASYNC_CALLS} concurrent acall: wall (ideal)",
               f"{figure['wall_ms']['median']:.1f} ms ({figure['ideal_ms']:.0f} ms), "
               f"{figure['throughput_per_s']:.0f} calls/s")
    report.row("  actual/ideal, wrong results", f"{figure['actual_over_ideal']:.3f}, {wrong}",
               "wrong = 0", wrong == 0)
    # One event loop runs every call's contract code on one thread: past the 20 ms of
    # sleeping, the wall time is the CPU time of 256 calls, serialised.
    implied = (figure["wall_ms"]["median"] - SLEEP_S * 1e3) / ASYNC_CALLS * 1e3
    figure["implied_cpu_us_per_call"] = round(implied, 1)
    report.row("  (wall - 20 ms) / 256: contract CPU per async call", f"{implied:.1f} µs")
    report.goal(f"no wrong results, {ASYNC_CALLS} concurrent acall", wrong, "0", wrong == 0)
    report.ratios = {name: fig["actual_over_ideal"] for name, fig in report.figures.items()}
    report.notes.append(
        "actual/ideal includes the sleep's own overshoot (time.sleep/asyncio.sleep wake "
        "a little late) and, for threads, the GIL held by contract code between sleeps")
    return report
