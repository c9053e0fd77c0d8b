"""The SymbolicAI side of the benchmark, run with ``bench/.venv-symai/bin/python``.

It never imports hoare. ``bench/run.py`` starts it as a worker and talks JSON lines
over stdin/stdout (one request, one answer), so that its timed batches interleave
with hoare's batches in the parent process. ``--standalone`` runs the same
measurements on its own and prints one JSON document.

How the LLM is replaced (no patching): ``StandInEngine`` is a
``symai.backend.base.Engine`` subclass whose ``id()`` is ``"neurosymbolic"``,
registered with
``EngineRepository.register("neurosymbolic", engine, allow_engine_override=True)``.
Every symai ``Function``/``Expression`` call, including the contract's type and
semantic remedies, then reaches it through symai's normal query path
(``_process_query`` -> ``engine.prepare(argument)`` -> ``engine(argument)``).

* ``prepare`` in mode ``"render"`` builds the messages exactly as symai's own
  ``OpenAIEngine.prepare`` does for text input (``render_chat_system_prompt``
  for the system message, ``str(argument.prop.processed_input)`` for the user
  message); in mode ``"minimal"`` it builds nothing (the cheapest possible engine).
* ``forward`` returns the next scripted answer at once, with no token accounting.

No ``from __future__ import annotations``: SymbolicAI's contracts break on it.
"""

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# symai keeps its configuration in <venv>/.symai when that directory exists; the
# harness creates it so that importing symai never writes to ~/.symai.
(Path(sys.prefix) / ".symai").mkdir(exist_ok=True)

import measure  # noqa: E402
import workload  # noqa: E402
from pydantic import Field  # noqa: E402
from symai import Expression  # noqa: E402
from symai.backend.base import Engine  # noqa: E402
from symai.backend.engines.neurosymbolic._prompts import render_chat_system_prompt  # noqa: E402
from symai.functional import EngineRepository  # noqa: E402
from symai.models import LLMDataModel  # noqa: E402
from symai.strategy import contract  # noqa: E402

Ticket, Triage = workload.build_models(LLMDataModel, Field)

# SymbolicAI's code defaults (2.2.0) are tries=8, delay=0.015, backoff=1.25, jitter=0,
# max_delay=0.25 and post_remedy=False; its documentation says tries=5, delay=0.5,
# max_delay=15, jitter=0.1, backoff=2 and post_remedy=True. The benchmark passes the
# documented tries=5 and post_remedy=True explicitly (as hoare's defaults are the
# documented ones), with every delay set to zero on both sides: no time is measured
# in the remedy scenarios, and zero delays keep them fast. ``graceful`` must be given
# (symai raises KeyError without it).
RETRY_PARAMS = {"tries": 5, "delay": 0.0, "max_delay": 0.0, "jitter": 0.0, "backoff": 1.0,
                "graceful": False}
CONTRACT_FLAGS = {"pre_remedy": False, "post_remedy": True, "accumulate_errors": False}


class StandInEngine(Engine):
    """An instant LLM: scripted answers, and a log of the messages it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "minimal"
        self.answers: list[str] = [workload.VALID_JSON]
        self.fixed = True  # True: always answer answers[0]; False: pop answers in order
        self.calls = 0
        self.prompts: list[list[dict]] = []
        self.record = False

    def id(self) -> str:
        return "neurosymbolic"

    def script(self, answers: list[str], *, fixed: bool, mode: str, record: bool) -> None:
        self.answers, self.fixed, self.mode, self.record = list(answers), fixed, mode, record
        self.calls = 0
        self.prompts = []

    def prepare(self, argument):
        if self.mode == "minimal":
            argument.prop.prepared_input = None
            return
        # As symai's OpenAIEngine.prepare (2.2.0) for text input, minus vision and
        # self-prompting (unused here).
        if argument.prop.raw_input:
            value = argument.prop.processed_input
            if isinstance(value, list):
                prepared = value
            elif isinstance(value, dict):
                prepared = [value]
            else:
                prepared = [{"role": "user", "content": str(value)}]
        else:
            system = render_chat_system_prompt(argument)
            prepared = [{"role": "system", "content": system},
                        {"role": "user", "content": str(argument.prop.processed_input)}]
        argument.prop.prepared_input = prepared

    def forward(self, argument):
        self.calls += 1
        if self.record:
            self.prompts.append(argument.prop.prepared_input)
        answer = self.answers[0] if self.fixed else self.answers.pop(0)
        return [answer], {}


ENGINE = StandInEngine()
EngineRepository.register("neurosymbolic", ENGINE, allow_engine_override=True)


def make_contract(posts: tuple) -> type:
    """The benchmark contract in SymbolicAI's form: one ``pre`` and one ``post`` method
    running the same predicates as hoare's declared conditions."""

    @contract(remedy_retry_params=dict(RETRY_PARAMS), **CONTRACT_FLAGS)
    class TriageTicket(Expression):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ticket = None  # symai's post only sees the output: keep the input here

        @property
        def prompt(self) -> str:
            return workload.PROMPT

        def pre(self, input: Ticket) -> bool:
            failed = workload.failing_messages(workload.PRE, input)
            if failed:
                raise ValueError("\n".join(failed))
            self.ticket = input
            return True

        def post(self, output: Triage) -> bool:
            failed = workload.failing_messages(posts, output, self.ticket)
            if failed:
                raise ValueError("\n".join(failed))
            return True

        def forward(self, input: Ticket, **kwargs) -> Triage:
            if self.contract_successful and self.contract_result is not None:
                return self.contract_result
            return Triage(**workload.BEST_EFFORT)

    return TriageTicket


HAPPY = make_contract(workload.POST)
READS_INPUT = make_contract(workload.POST_READS_INPUT)
TICKET = Ticket(**workload.TICKET)
IMPOSSIBLE = Ticket(**workload.IMPOSSIBLE_TICKET)
_instances: dict[str, object] = {}


def _prompt_chars(messages: list[dict] | None) -> int:
    if not messages:
        return 0
    total = 0
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list):
            total += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        else:
            total += len(str(content))
    return total


# -- commands -------------------------------------------------------------------------------

def cmd_info() -> dict:
    from importlib.metadata import version

    return {"symbolicai": version("symbolicai"), "pydantic": version("pydantic"),
            "python": sys.version.split()[0], "retry_params": RETRY_PARAMS,
            "contract_flags": CONTRACT_FLAGS}


def cmd_check(mode: str) -> dict:
    """One happy-path call, checked: the stand-in is reached and the result is right."""
    ENGINE.script([workload.VALID_JSON], fixed=True, mode=mode, record=True)
    instance = HAPPY()
    result = instance(TICKET)
    ok = bool(instance.contract_successful and result.model_dump() == workload.VALID)
    return {"ok": ok, "engine_calls": ENGINE.calls,
            "prompt_chars": [_prompt_chars(p) for p in ENGINE.prompts]}


def cmd_happy(mode: str, n: int) -> dict:
    """Mean ns per happy-path call over ``n`` calls of one instance."""
    ENGINE.script([workload.VALID_JSON], fixed=True, mode=mode, record=False)
    instance = _instances.get("happy")
    if instance is None:
        instance = _instances["happy"] = HAPPY()
    wall, cpu = measure.time_batch(lambda: instance(TICKET), n)
    if not instance.contract_successful:
        raise RuntimeError(f"symai happy path failed: {instance.contract_exception!r}")
    # symai appends one timing record per call to the instance: start afresh
    # now and then so that memory does not grow over a long run.
    if len(instance._contract_timing) > 50000:
        _instances.pop("happy")
    return {"ns_per_call": wall, "cpu_ns_per_call": cpu}


def cmd_remedy(k: int, kind: str) -> dict:
    """First ``k`` answers bad (post violation or malformed JSON), then valid ones."""
    ENGINE.script(workload.scripted_answers(k, kind), fixed=False, mode="render", record=True)
    instance = HAPPY()
    result = instance(TICKET)
    chars = [_prompt_chars(p) for p in ENGINE.prompts]
    retry_texts = ["\n".join(str(m.get("content", "")) for m in messages or [])
                   for messages in ENGINE.prompts[1:]]
    return {
        "success": bool(instance.contract_successful and result.model_dump() == workload.VALID),
        "engine_calls": ENGINE.calls,
        "prompt_chars_per_call": chars,
        "total_prompt_chars": sum(chars),
        "corrective_prompt_chars": chars[1] if len(chars) > 1 else 0,
        "first_retry_shows_error": bool(retry_texts) and workload.names_error(kind, retry_texts[0]),
        "exception": None if instance.contract_exception is None
        else type(instance.contract_exception).__name__,
    }


def cmd_impossible() -> dict:
    """An input no output can satisfy; the stand-in gives its best answer every time."""
    ENGINE.script([workload.BEST_EFFORT_JSON], fixed=True, mode="render", record=True)
    instance = READS_INPUT()
    instance(IMPOSSIBLE)
    chars = [_prompt_chars(p) for p in ENGINE.prompts]
    return {"engine_calls": ENGINE.calls, "success": bool(instance.contract_successful),
            "total_prompt_chars": sum(chars)}


COMMANDS = {
    "info": lambda r: cmd_info(),
    "check": lambda r: cmd_check(r["mode"]),
    "happy": lambda r: cmd_happy(r["mode"], int(r["n"])),
    "remedy": lambda r: cmd_remedy(int(r["k"]), r["kind"]),
    "impossible": lambda r: cmd_impossible(),
}


def serve() -> None:
    """JSON lines: one request per line in, one answer per line out. symai may print;
    that goes to stderr, the protocol keeps the real stdout to itself."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("cmd") == "quit":
            break
        try:
            answer = {"ok": True, **COMMANDS[request["cmd"]](request)}
        except Exception as error:  # report, keep serving
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(answer) + "\n")


def _pair(answer: dict) -> tuple[float, float]:
    return answer["ns_per_call"], answer["cpu_ns_per_call"]


def standalone(quick: bool) -> dict:
    rounds = 5 if quick else 15
    result: dict = {"info": cmd_info()}
    for mode in ("minimal", "render"):
        result[f"check_{mode}"] = cmd_check(mode)
    variants = {mode: (lambda n, m=mode: _pair(cmd_happy(m, n))) for mode in ("minimal", "render")}
    timings = measure.interleaved(variants, rounds=rounds, target_ns=20e6 if quick else 60e6)
    result["happy_us"] = {name: {k: v for k, v in stats.items() if not k.startswith("raw_")}
                          for name, stats in timings.items()}
    result["remedy"] = {f"{kind}_k{k}": cmd_remedy(k, kind)
                        for kind in ("post", "malformed") for k in (1, 2, 4)}
    result["impossible"] = cmd_impossible()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--standalone", action="store_true",
                        help="measure on its own and print one JSON document")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.standalone:
        out = sys.stdout
        sys.stdout = sys.stderr
        out.write(json.dumps(standalone(args.quick), indent=2) + "\n")
    else:
        serve()


if __name__ == "__main__":
    main()
