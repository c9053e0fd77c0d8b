"""Scenario 3: the cost of remedies. A scripted engine answers ``k`` bad answers
(k = 1, 2, 4), then valid ones; a bad answer either breaks a post-condition
("at most 5 tags": 6 tags) or is malformed JSON (cut off). Per framework: engine
calls until success, prompt characters sent over all calls, and the characters of
the first corrective prompt (the second call). These are counts, deterministic for
a given version of each framework; no time is measured.

Goals: hoare makes exactly k+1 engine calls, and sends fewer prompt characters
than SymbolicAI in total.
"""

import workload

from hoare.engines import FunctionEngine
from scenarios import Context, Report
from scenarios.contracts import PLAIN_ON, TICKET, Recorder

KS = (1, 2, 4)
KINDS = ("post", "malformed")
names_error = workload.names_error


def hoare_remedy(k: int, kind: str) -> dict:
    recorder = Recorder(workload.scripted_answers(k, kind))
    instance = PLAIN_ON(engine=FunctionEngine(recorder))
    result = instance(TICKET)
    outcome = instance.contract_outcome
    return {
        "success": bool(instance.contract_successful and result.model_dump() == workload.VALID),
        "engine_calls": recorder.calls,
        "generation_attempts": outcome.generation_attempts,
        "prompt_chars_per_call": recorder.chars,
        "total_prompt_chars": sum(recorder.chars),
        "corrective_prompt_chars": recorder.chars[1] if recorder.calls > 1 else 0,
        "first_retry_shows_error": recorder.calls > 1 and names_error(kind, recorder.texts[1]),
        "first_retry_feedback": list(recorder.feedback[1]) if recorder.calls > 1 else [],
    }


def run(ctx: Context) -> Report:
    report = Report("3_remedy", "Remedy cost: engine calls and prompt characters until success")
    worker = ctx.symai
    hoare: dict[str, dict] = {}
    symai: dict[str, dict] = {}
    for kind in KINDS:
        for k in KS:
            key = f"{kind}_k{k}"
            hoare[key] = hoare_remedy(k, kind)
            if worker is not None:
                symai[key] = worker.request("remedy", k=k, kind=kind)
                symai[key].pop("ok", None)
    report.figures["hoare"] = hoare
    report.figures["symai"] = symai if worker is not None else None
    if worker is None:
        report.partial(f"SymbolicAI not measured: {ctx.symai_skip_reason}")
    else:
        report.figures["symai_retry_params"] = worker.info["retry_params"]
    for kind in KINDS:
        for k in KS:
            key = f"{kind}_k{k}"
            h = hoare[key]
            calls_ok = h["success"] and h["engine_calls"] == k + 1
            report.goal(f"hoare engine calls = k+1 ({key})", h["engine_calls"], str(k + 1),
                        calls_ok)
            label = "post violation" if kind == "post" else "malformed JSON"
            report.row(f"{label}, k={k}: hoare calls / total chars / corrective",
                       f"{h['engine_calls']} / {h['total_prompt_chars']} / "
                       f"{h['corrective_prompt_chars']}", f"calls = {k + 1}", calls_ok)
            if worker is None:
                continue
            s = symai[key]
            fewer = h["total_prompt_chars"] < s["total_prompt_chars"]
            ratio = s["total_prompt_chars"] / max(h["total_prompt_chars"], 1)
            report.ratios[f"{key}: symai/hoare total prompt chars"] = round(ratio, 2)
            report.goal(f"hoare sends fewer prompt characters than SymbolicAI ({key})",
                        h["total_prompt_chars"], f"< {s['total_prompt_chars']}", fewer)
            report.row(f"{label}, k={k}: SymbolicAI calls / total chars / corrective",
                       f"{s['engine_calls']} / {s['total_prompt_chars']} / "
                       f"{s['corrective_prompt_chars']}"
                       + ("" if s["success"] else " (FAILED)"),
                       f"chars > hoare's ({ratio:.1f}x)", fewer)
    for kind in KINDS:
        first = hoare[f"{kind}_k1"]
        report.row(f"hoare: first corrective prompt names the error ({kind})",
                   ("yes" if first["first_retry_shows_error"] else "NO") + ": "
                   + " | ".join(first["first_retry_feedback"])[:110])
    if worker is not None:
        for kind in KINDS:
            shows = symai[f"{kind}_k1"]["first_retry_shows_error"]
            report.row(f"SymbolicAI: first retry prompt names the error ({kind})",
                       "yes" if shows else "NO (a fresh zero-shot prompt, no error shown)")
    report.notes.append(
        "prompt characters = the characters of every chat message content sent to the "
        "engine (system + user), as rendered by each framework for a real engine; "
        "hoare: FunctionEngine reads request.messages; SymbolicAI: the stand-in's "
        "prepare() renders like its OpenAIEngine")
    return report
