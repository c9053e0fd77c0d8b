"""Scenario 2: the same contract in SymbolicAI, same models and predicates, same
instant answer; its timed batches (in the SymbolicAI worker process) interleave with
hoare's (in this process), round by round.

Two pairs are compared:
* minimal engines: hoare's ``FunctionEngine`` returning a constant (no prompt is
  rendered: hoare renders lazily) vs SymbolicAI's stand-in with a no-op ``prepare``;
* rendering engines: both build the chat messages a real engine would send (hoare:
  ``request.messages``; SymbolicAI: its ``OpenAIEngine.prepare`` logic, i.e.
  ``render_chat_system_prompt``), then answer at once.
"""

import measure

from scenarios import Context, Report, strip_raw, us
from scenarios.contracts import PLAIN_ON, TICKET, instant, instant_rendering


def _pair(answer: dict) -> tuple[float, float]:
    return answer["ns_per_call"], answer["cpu_ns_per_call"]


def run(ctx: Context) -> Report:
    report = Report("2_symai_overhead", "Overhead per call, happy path (SymbolicAI vs hoare)")
    worker = ctx.symai
    if worker is None:
        return report.skip(f"SymbolicAI not measured: {ctx.symai_skip_reason}")
    report.figures["symbolicai_version"] = worker.info["symbolicai"]
    report.figures["symbolicai_contract"] = {**worker.info["contract_flags"],
                                             "remedy_retry_params": worker.info["retry_params"]}
    for mode in ("minimal", "render"):
        check = worker.request("check", mode=mode)
        if not check["ok"] or check["engine_calls"] != 1:
            return report.skip(f"SymbolicAI stand-in check failed ({mode}): {check}")
    hoare_min = PLAIN_ON(engine=instant())
    hoare_render = PLAIN_ON(engine=instant_rendering())
    for instance in (hoare_min, hoare_render):
        instance(TICKET)
        assert instance.contract_successful

    variants = {
        "hoare_minimal": lambda n: measure.time_batch(lambda: hoare_min(TICKET), n),
        "symai_minimal": lambda n: _pair(worker.request("happy", mode="minimal", n=n)),
        "hoare_rendering": lambda n: measure.time_batch(lambda: hoare_render(TICKET), n),
        "symai_rendering": lambda n: _pair(worker.request("happy", mode="render", n=n)),
    }
    results = measure.interleaved(variants, rounds=ctx.rounds(31), target_ns=ctx.target_ns)
    report.figures["per_call_us"] = strip_raw(results)
    for kind in ("minimal", "rendering"):
        ratio = measure.paired_ratio(results, f"symai_{kind}", f"hoare_{kind}")
        report.ratios[f"symai_{kind}/hoare_{kind}"] = {k: round(v, 3) for k, v in ratio.items()}
        report.row(f"hoare, {kind} engine", us(results[f"hoare_{kind}"]))
        report.row(f"SymbolicAI {worker.info['symbolicai']}, {kind} stand-in",
                   us(results[f"symai_{kind}"]))
        faster = ratio["ratio"] > 1
        report.goal(f"hoare faster than SymbolicAI ({kind} engines)", round(ratio["ratio"], 2),
                    "symai/hoare > 1", faster)
        report.row(f"  ratio symai/hoare ({kind})",
                   f"{ratio['ratio']:.1f}x (rounds {ratio['paired_min']:.1f}–"
                   f"{ratio['paired_max']:.1f})", "> 1", faster)
    report.notes.append(
        "SymbolicAI contract flags: pre_remedy=False, post_remedy=True (passed explicitly: "
        "its code default is False, its docs say True); retry params do not matter on the "
        "happy path (no retry happens)")
    return report
