"""One z3 context per check (``hoare/verifier/solve/context.py``).

A verdict must not depend on what else the process did with z3 before: each check of a
contract, pipeline or tool chain, and each decoding compile, runs in a fresh context;
the run-time pre-flight keeps the main one. These tests show it:

* the verdicts of the fixture and example modules are the same in a new process, after
  a long history of other z3 work in the same process (decoding compiles in every
  dialect, pre-flight checks, other verifications), and in a second new process;
* the z3 sanitizer (``kernel_support/z3_sanitizer.py``) finds no term used while
  another context is active, over the verifier's own tests (a term built in one
  context and used in another is undefined behaviour in z3's C API, or a ``Context
  mismatch`` error the verifier would turn into a silent ``unknown``);
* threads compiling, verifying and calling contracts at once, in a child process so a
  crash fails the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import z3

from hoare.verifier.solve import context as z3_context
from hoare.verifier.solve.context import MAIN, fresh, per_context
from hoare.verifier.translate.regex import translate_pattern

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(str(p) for p in (ROOT / "tests" / "fixtures").rglob("*.py")) + [
    str(ROOT / "examples" / name) for name in
    ("make_sum.py", "classify_sentiment.py", "review_pipeline.py", "agent_tools.py")]


def test_terms_are_built_in_the_active_context_and_the_main_one_comes_back() -> None:
    before = z3.main_ctx()
    with fresh() as scope:
        x = z3.Int("x")
        assert x.ctx is scope.ctx and scope.ctx is not before
        assert z3_context.true().ctx is scope.ctx
        with MAIN:
            assert z3.Int("y").ctx is before
            assert z3_context.false().ctx is before
        assert z3.Int("z").ctx is scope.ctx
    assert z3.main_ctx() is before and z3.Int("w").ctx is before
    assert z3_context.active() is MAIN


def test_an_exception_inside_restores_the_context() -> None:
    before = z3.main_ctx()
    try:
        with fresh():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert z3.main_ctx() is before and z3_context.active() is MAIN


def test_cached_terms_are_per_context() -> None:
    calls: list[int] = []

    @per_context
    def letters(n: int) -> z3.ReRef:
        calls.append(n)
        return z3.Loop(z3.Range("a", "z"), n, n)

    with fresh() as a:
        first = letters(2)
        assert letters(2) is first and calls == [2]
        assert first.ctx is a.ctx
    with fresh() as b:
        second = letters(2)
        assert second.ctx is b.ctx and calls == [2, 2]
    with fresh() as c:  # the real caches: a regex translation of another context is never reused
        found = translate_pattern("^[a-z]+$")
        assert found.regex is not None and found.regex.ctx is c.ctx


_WORKLOAD = textwrap.dedent('''
    import json, sys

    import hoare
    from hoare.verifier.project.discovery import load
    from hoare.verifier.project.units import contracts_of
    from hoare.verifier.runtime.decoding import DIALECTS, compile_contract

    modules = json.loads(sys.argv[1])

    def verdicts():
        out = []
        for path in modules:
            report = hoare.verify(path)
            for contract in [*report.contracts, *report.pipelines]:
                for check in contract.checks:
                    out.append([contract.name, check.kind, check.status])
        return out

    first = verdicts()
    compiled = checked = 0
    if "--history" in sys.argv:
        from hoare.verifier.runtime.preflight import Preflight
        for path in modules:
            for module in load(path):
                for _name, cls in contracts_of(module)[0]:
                    desc = cls.__hoare__
                    for dialect in DIALECTS:
                        try:
                            compile_contract(desc, dialect)
                            compiled += 1
                        except Exception:
                            pass
                    checker = Preflight.for_description(desc)
                    if checker is not None:
                        try:
                            sample = desc.used_input.model.model_construct()
                            checker.check(None, sample)
                            checked += 1
                        except Exception:
                            pass
        again = verdicts()
    else:
        again = first
    print(json.dumps({"first": first, "again": again, "history": [compiled, checked]}))
''')


def _workload(*flags: str, seed: str = "0") -> dict[str, Any]:
    import os

    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run([sys.executable, "-c", _WORKLOAD, json.dumps(MODULES), *flags],
                            capture_output=True, text=True, timeout=1200, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def test_verdicts_do_not_depend_on_the_processs_z3_history() -> None:
    history = _workload("--history")
    assert len(history["first"]) > 40  # every fixture and example was checked
    assert {status for _n, _k, status in history["first"]} >= {"pass", "fail", "warn"}
    compiled, checked = history["history"]
    assert compiled >= 30 and checked >= 3, history["history"]
    assert history["again"] == history["first"]
    other = _workload(seed="12345")
    assert other["first"] == history["first"]


SANITIZED = ["test_verifier_strings.py", "test_verifier_regex.py", "test_verifier_semantics.py",
             "test_verifier_preflight.py", "test_decoding_schema.py", "test_verifier_handoff.py"]


def test_no_term_is_used_outside_the_context_it_was_built_in(tmp_path: Path) -> None:
    """The verifier's own tests, run under the z3 sanitizer (``kernel_support``)."""
    import os

    report = tmp_path / "sanitizer.json"
    env = {**os.environ, "HOARE_Z3_SANITIZER_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "kernel_support.z3_sanitizer", "-q",
         "-p", "no:cacheprovider",
         *(str(ROOT / "tests" / "verifier" / name) for name in SANITIZED)],
        capture_output=True, text=True, timeout=1500, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = json.loads(report.read_text())
    assert found == [], "\n\n".join(f"{count}x\n{stack}" for stack, count in found[:5])


_THREADS = textwrap.dedent('''
    import threading, sys
    from pydantic import BaseModel, Field
    import hoare
    errors = []
    from hoare import Contract, Post, contract
    from hoare.engines import FunctionEngine
    from hoare.verifier.runtime.decoding import compile_contract

    class In(BaseModel):
        n: int = Field(ge=0, le=10)

    class Out(BaseModel):
        stars: int = Field(ge=0, le=100)
        label: str

    def answer(request):
        # decoding="schema" (the default) folds the post-condition into the schema sent
        label = request.schema["properties"]["label"]
        if label.get("enum") != ["bug", "question"]:
            errors.append(("schema", request.schema))
        return '{"stars": 3, "label": "bug"}'

    @contract()
    class Rate(Contract):
        prompt = "rate"
        post_conditions = [Post(lambda o: o.stars <= 5 and o.label in ("bug", "question"),
                                "a rating")]

        def forward(self, input: In) -> Out:
            if self.contract_successful:
                return self.contract_result
            return Out(stars=0, label="question")

    @contract()
    class Never(Contract):
        prompt = "never"
        post_conditions = [Post(lambda o: o.stars > 5 and o.stars < 3, "impossible")]

        def forward(self, input: In) -> Out:
            return Out(stars=0, label="question")

    shared = Rate(engine=FunctionEngine(answer))
    statuses = set()

    def call():
        for _ in range(15):
            out = shared(In(n=2))
            if out.stars != 3 or not shared.contract_successful:
                errors.append(("call", out))

    def check():
        for _ in range(6):
            report = hoare.verify(Never)
            statuses.add(tuple(c.status for c in report.contracts[0].checks))

    def compile():
        for _ in range(6):
            compiled = compile_contract(Rate.__hoare__, "llama_cpp")
            if compiled.schema["properties"]["label"].get("enum") != ["bug", "question"]:
                errors.append(("compile", compiled.schema))

    def guard(work):
        try:
            work()
        except BaseException as error:
            errors.append((work.__name__, repr(error)))

    threads = [threading.Thread(target=guard, args=(w,)) for w in (call, check, compile) * 3]
    for t in threads: t.start()
    for t in threads: t.join()
    print("errors", errors)
    print("statuses", sorted(statuses))
    sys.exit(1 if errors or len(statuses) != 1 else 0)
''')


def test_threads_compiling_verifying_and_calling_at_once(tmp_path: Path) -> None:
    script = tmp_path / "threads.py"  # a file: the predicates' source must be readable
    script.write_text(_THREADS)
    result = subprocess.run([sys.executable, str(script)], capture_output=True,
                            text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "fail" in result.stdout  # Never's post-condition is unsatisfiable, every time
