"""Run one case through ``hoare verify`` and the run-time pre-flight, then look for
a contradiction in real Python.

Values are built as the library meets them: outputs from JSON text
(``model_validate_json``, as an engine's answer), inputs from Python objects
(``model_validate``, the constructor, ``model_construct()`` with unchecked values,
subclass instances of str and int) as the contract's input check hands them to user
code (``TypeSpec.validate``, which validates every instance again). The
predicates run for real under the kernel's semantics (spec §3.2: a raise or a
falsy non-None result fails). A contradiction is a value real Python gives that
a verdict excludes:

* ``pre_satisfiable``/``post_satisfiable``/``predicate_vacuous`` ``fail``: a
  passing value; ``predicate_vacuous`` ``warn``: a failing value;
* any ``pass`` resting on a witness: the witness does not validate through
  pydantic or does not pass the real predicates;
* ``post_total`` ``pass``: an input passing the pre-conditions with no passing
  output (only claimed when the output domain was enumerated exhaustively);
  ``warn``: its counterexample input has a passing output;
* the pre-flight: ``unsatisfiable`` for an input with a passing output;
  ``satisfiable`` for one with none (enumerated exhaustively);
* the decoding schema (``decoding.py``, a third of the cases): a text it admits failing
  a predicate it calls enforced, or an accepted output it turns away.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hoare.declaration.models import type_spec

from .cases import Case, load, unload
from .decoding import check_decoding
from .models import Model, Pool

__all__ = ["CaseResult", "Contradiction", "run_case"]

INPUT_DRAWS = 60
OUTPUT_DRAWS = 250
RUNNABLE_CAP = 12  # inputs passing the pre-conditions that the search pairs with outputs
PREFLIGHT_CAP = 8  # inputs the pre-flight is asked about
ENUMERATION_CAP = 3000
DECODING_SHARE = 0.35  # cases whose decoding schema is compiled and replayed


@dataclass(frozen=True)
class Contradiction:
    where: str  # "post_satisfiable fail", "preflight unsatisfiable", ...
    detail: str
    value: str  # the refuting value, as text

    @property
    def kind(self) -> str:
        return self.where.split("[")[0]


@dataclass
class CaseResult:
    seed: int
    statuses: Counter[str] = field(default_factory=Counter)  # "kind:status"
    contradictions: list[Contradiction] = field(default_factory=list)
    covered: Counter[str] = field(default_factory=Counter)
    skipped: str | None = None  # why the case was not run (a model pydantic rejects)
    source: str = ""


_INSTANCE: list[object] = []  # the contract instance a case's method predicates run on


class _Int(int):
    """An int subclass, as a caller may pass one (pydantic decides what it becomes)."""


class _Str(str):
    """A str subclass, as a caller may pass one."""


def passes(source: Any, value: object, used: object = None) -> bool:
    """The kernel's semantics: a raise or a falsy non-None result fails."""
    args = [value, used] if source.takes_input else [value]
    if source.is_method:
        args.insert(0, _INSTANCE[0] if _INSTANCE else None)
    try:
        result = source.fn(*args)
        return result is None or bool(result)
    except Exception:
        return False


def _raises_attribute_error(source: Any, value: object, used: object = None) -> bool:
    args = [value, used] if source.takes_input else [value]
    if source.is_method:
        args.insert(0, _INSTANCE[0] if _INSTANCE else None)
    try:
        source.fn(*args)
    except AttributeError:
        return True
    except Exception:
        return False
    return False


def _pythonize(rng: random.Random, raw: Any) -> Any:
    """The same value as a caller may build it in Python: subclasses where allowed."""
    if isinstance(raw, dict):
        return {k: _pythonize(rng, v) for k, v in raw.items()}
    if isinstance(raw, list):
        items = [_pythonize(rng, v) for v in raw]
        return tuple(items) if rng.random() < 0.2 else items
    if type(raw) is str and rng.random() < 0.2:
        return _Str(raw)
    if type(raw) is int and rng.random() < 0.2:
        return _Int(raw)
    return raw


def _build_input(model: type[BaseModel], raw: Any, rng: random.Random) -> BaseModel | None:
    """An input as a caller builds it (validated, constructed, or ``model_construct()``
    with the raw values, which pydantic does not check), as the contract's input check
    (``TypeSpec.validate``) hands it to user code; None when that check refuses it."""
    try:
        if isinstance(raw, dict) and rng.random() < 0.2:
            built: Any = model.model_construct(**_pythonize(rng, raw))
        elif isinstance(raw, dict) and rng.random() < 0.3:
            built = model(**_pythonize(rng, raw))
        else:
            built = model.model_validate(_pythonize(rng, raw))
        checked: BaseModel = type_spec(model).validate(built)
        return checked
    except Exception:
        return None


def _build_output(model: type[BaseModel], raw: Any, texts: list[str] | None = None
                  ) -> BaseModel | None:
    try:
        text = json.dumps(raw)
    except (TypeError, ValueError):
        return None
    try:
        value = model.model_validate_json(text)
    except Exception:
        return None
    if texts is not None:
        texts.append(text)
    return value


def _unjson(value: Any) -> Any:
    """The verifier's JSON form back to Python floats ("nan" and "inf" strings)."""
    if isinstance(value, dict):
        return {k: _unjson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unjson(v) for v in value]
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def _validations(model: type[BaseModel], value: Any) -> list[BaseModel]:
    """Every way a reported example may reach user code, validated by pydantic."""
    out: list[BaseModel] = []
    attempts: list[Callable[[], BaseModel]] = [
        lambda: model.model_validate_json(json.dumps(value)),
        lambda: model.model_validate(value),
        lambda: model.model_validate_json(json.dumps(_unjson(value))),
        lambda: model.model_validate(_unjson(value)),
    ]
    for attempt in attempts:
        try:
            out.append(attempt())
        except Exception:
            continue
    return out


def _suggested(report_checks: Iterable[Any], role: str) -> list[Any]:
    """Values the z3 models suggested (witnesses and counterexamples) for ``role``."""
    found = []
    for check in report_checks:
        for example in (check.witness, check.counterexample):
            if isinstance(example, dict):
                if role in example and isinstance(example[role], dict):
                    found.append(_unjson(example[role]))
                elif "input" not in example and "output" not in example:
                    found.append(_unjson(example))
    return found


def _values(model: Model, cls: type[BaseModel], rng: random.Random, pool: Pool, draws: int,
            suggested: list[Any], build: Callable[[Any], BaseModel | None]
            ) -> tuple[list[BaseModel], bool]:
    """Valid values of ``cls``; ``True`` when they are every value (enumerated)."""
    raws = model.finite_raws(ENUMERATION_CAP)
    exhaustive = raws is not None
    out: list[BaseModel] = []
    seen: set[str] = set()
    good: list[dict[str, Any]] = []

    def take(raw: Any) -> None:
        value = build(raw)
        if value is None:
            return
        if isinstance(raw, dict):
            good.append(raw)
        key = repr(value)
        if key not in seen:
            seen.add(key)
            out.append(value)

    for raw in [*suggested, *(raws or ())]:
        take(raw)
    if raws is not None:
        return out, exhaustive
    # Fields are drawn independently, so most drawn rows have some invalid field:
    # draw until enough are valid, then recombine the fields of valid rows.
    for _ in range(4 * draws):
        if len(out) >= draws // 2:
            break
        take(model.draw_raw(rng, pool))
    names = [n for n, _t in model.fields]
    for _ in range(draws // 2 if len(good) >= 2 else 0):
        row: dict[str, Any] = {}
        for name in names:
            donor = rng.choice(good)
            if name in donor:
                row[name] = donor[name]
        if names and rng.random() < 0.5:  # one field drawn afresh: new values near valid ones
            name, ftype = rng.choice(model.fields)
            row[name] = ftype.draw(rng, pool)
        take(row)
    return out, exhaustive


def _text(value: object) -> str:
    if isinstance(value, BaseModel):
        try:
            return f"{type(value).__name__}({value!r}) / json {value.model_dump_json()}"
        except Exception:
            return repr(value)
    return repr(value)


# z3's deterministic resource limit bounds each query; the wall-clock timeout is only
# a backstop, so a loaded machine gives the same verdicts (and the same definite share)
RLIMIT = 2_000_000
TIMEOUT_MS = 20_000


def run_case(case: Case, *, timeout_ms: int = TIMEOUT_MS, value_seed: int | None = None,
             preflight: bool = True) -> CaseResult:
    """Verify ``case``, ask the pre-flight, search real Python for a contradiction."""
    from hoare import verify

    result = CaseResult(case.seed, covered=Counter(case.covered))
    result.covered.update(f"model {f}" for f in case.features())
    source = case.render()
    result.source = source
    try:
        module = load(source)
    except Exception as error:  # pydantic refused the model: not a verifier case
        result.skipped = f"{type(error).__name__}: {str(error)[:200]}"
        return result
    try:
        _run(case, module, result, timeout_ms, value_seed, preflight, verify)
    finally:
        unload(module)
    return result


def _run(case: Case, module: Any, result: CaseResult, timeout_ms: int,
         value_seed: int | None, preflight: bool, verify: Any) -> None:
    rng = random.Random(case.seed if value_seed is None else value_seed)
    cls = module.Generated
    desc = cls.__hoare__
    _INSTANCE[:] = [cls()]
    pipeline = getattr(module, "PIPELINE", None)
    report = verify(cls if pipeline is None else pipeline, timeout_ms=timeout_ms,
                    rlimit=RLIMIT)
    # the first stage's checks (the second's are its own contract), then the hand-off
    checks = [*report.contracts[0].checks,
              *(c for p in report.pipelines for c in p.checks)]
    for check in checks:
        result.statuses[f"{check.kind}:{check.status}"] += 1
    pre, post = list(desc.pre), list(desc.post)
    inputs, _every_input = _values(case.inp, module.In, rng, case.pool, INPUT_DRAWS,
                                 _suggested(checks, "input"),
                                 lambda raw: _build_input(module.In, raw, rng))
    texts: list[str] = []  # the outputs' JSON texts, for the decoding schema's replay
    outputs, outputs_all = _values(case.out, module.Out, rng, case.pool, OUTPUT_DRAWS,
                                   _suggested(checks, "output"),
                                   lambda raw: _build_output(module.Out, raw, texts))
    runnable = [x for x in inputs if all(passes(p, x) for p in pre)]

    def post_ok(o: BaseModel, x: BaseModel) -> bool:
        return all(passes(p, o, x) for p in post)

    def contradiction(where: str, detail: str, value: str) -> None:
        result.contradictions.append(Contradiction(where, detail, value))

    by_id = {p.id: p for p in (*pre, *post)}
    for check in checks:
        where = f"{check.kind} {check.status}" + \
            (f"[{check.predicate}]" if check.predicate else "")
        if check.status == "unknown":
            continue
        if check.kind == "pre_satisfiable":
            if check.status == "pass":
                if not any(all(passes(p, x) for p in pre)
                           for x in _validations(module.In, check.witness)):
                    contradiction(where, "the witness does not replay", repr(check.witness))
            elif check.status == "fail" and runnable:
                contradiction(where, "an input passes every pre-condition",
                              _text(runnable[0]))
        elif check.kind == "post_satisfiable":
            if check.status == "pass":
                w = check.witness if isinstance(check.witness, dict) else {}
                ok = any(all(passes(p, x) for p in pre) and post_ok(o, x)
                         for x in _validations(module.In, w.get("input"))
                         for o in _validations(module.Out, w.get("output")))
                if not ok:
                    contradiction(where, "the witness does not replay", repr(check.witness))
            elif check.status == "fail":
                for x in runnable[:RUNNABLE_CAP]:
                    found = next((o for o in outputs if post_ok(o, x)), None)
                    if found is not None:
                        contradiction(where, "an input passing the pre-conditions has a "
                                      "passing output", f"input {_text(x)}; output "
                                      f"{_text(found)}")
                        break
        elif check.kind == "post_total":
            if check.status == "pass" and outputs_all:
                for x in runnable[:RUNNABLE_CAP]:
                    if not any(post_ok(o, x) for o in outputs):
                        contradiction(where, "an input passing the pre-conditions has no "
                                      "passing output (outputs enumerated)", _text(x))
                        break
            elif check.status == "warn":
                for x in _validations(module.In, check.counterexample):
                    found = next((o for o in outputs if post_ok(o, x)), None)
                    if found is not None:
                        contradiction(where, "the counterexample input has a passing "
                                      "output", f"input {_text(x)}; output {_text(found)}")
                        break
        elif check.kind == "composition":
            _composition(check, where, module, runnable, outputs, post_ok, contradiction)
        elif check.kind == "no_such_field" and check.status == "fail":
            # "raises AttributeError on every call": refuted when no call raises it (a
            # call raising something else first does not refute it alone)
            source = by_id.get(check.predicate or "")
            if source is not None:
                pairs = [(o, x) for o in outputs[:40] for x in (runnable or inputs)[:3]] \
                    if source.phase == "post" else [(x, None) for x in inputs]
                if pairs and not any(_raises_attribute_error(source, *pair)
                                     for pair in pairs):
                    contradiction(where, "no call raised AttributeError", _pair(pairs[0]))
        elif check.kind == "predicate_vacuous":
            source = by_id.get(check.predicate or "")
            if source is None:
                continue
            _vacuity(check, source, where, module, inputs, outputs, contradiction)
    if preflight:
        _preflight(desc, cls, runnable, outputs, outputs_all, post_ok, result, contradiction)
    if pipeline is None and random.Random(f"decoding {case.seed}").random() < DECODING_SHARE:
        status = check_decoding(desc, module.Out, texts, runnable, passes, contradiction)
        if status is not None:
            result.statuses[f"decoding:{status}"] += 1


def _vacuity(check: Any, source: Any, where: str, module: Any, inputs: list[BaseModel],
             outputs: list[BaseModel], contradiction: Callable[[str, str, str], None]) -> None:
    is_pre = source.phase == "pre"

    def pairs() -> Iterable[tuple[BaseModel, BaseModel | None]]:
        if is_pre:
            return ((x, None) for x in inputs)
        if not inputs:  # a post-condition is only ever run with a valid input
            return iter(())
        if source.takes_input:
            return ((o, x) for x in inputs[:RUNNABLE_CAP] for o in outputs)
        return ((o, None) for o in outputs)

    def examples(value: Any) -> list[tuple[BaseModel, BaseModel | None]]:
        if is_pre:
            return [(x, None) for x in _validations(module.In, value)]
        if source.takes_input:
            value = value if isinstance(value, dict) else {}
            return [(o, x) for x in _validations(module.In, value.get("input"))
                    for o in _validations(module.Out, value.get("output"))]
        return [(o, None) for o in _validations(module.Out, value)]

    if check.status == "fail":
        found = next(((v, u) for v, u in pairs() if passes(source, v, u)), None)
        if found is not None:
            contradiction(where, "the predicate passes on", _pair(found))
    elif check.status == "warn":
        found = next(((v, u) for v, u in pairs() if not passes(source, v, u)), None)
        if found is not None:
            contradiction(where, "the predicate fails on", _pair(found))
    elif check.status == "pass":
        if not any(passes(source, v, u) for v, u in examples(check.witness)):
            contradiction(where, "the witness does not replay (must pass)",
                          repr(check.witness))
        if not any(not passes(source, v, u) for v, u in examples(check.counterexample)):
            contradiction(where, "the counterexample does not replay (must fail)",
                          repr(check.counterexample))


def _composition(check: Any, where: str, module: Any, runnable: list[BaseModel],
                 outputs: list[BaseModel], post_ok: Callable[[BaseModel, BaseModel], bool],
                 contradiction: Callable[[str, str, str], None]) -> None:
    """``pass``: no output the first stage accepts is rejected by the second's type or
    pre-conditions; ``fail``: its counterexample is really rejected."""
    second = module.Second.__hoare__

    def rejected(o: BaseModel) -> bool:
        try:
            value = second.input.validate(o)
        except Exception:
            return True
        return not all(passes(p, value) for p in second.pre)

    if check.status == "pass":
        for x in runnable[:RUNNABLE_CAP]:
            found = next((o for o in outputs if post_ok(o, x) and rejected(o)), None)
            if found is not None:
                contradiction(where, "an output the first stage accepts is rejected by the "
                              "second", f"input {_text(x)}; output {_text(found)}")
                return
    elif check.status == "fail" and check.counterexample is not None:
        if not any(rejected(o) for o in _validations(module.Out, check.counterexample)):
            contradiction(where, "the counterexample is accepted by the second stage",
                          repr(check.counterexample))


def _pair(found: tuple[BaseModel, BaseModel | None]) -> str:
    value, used = found
    return _text(value) + ("" if used is None else f"; input {_text(used)}")


def _preflight(desc: Any, cls: Any, runnable: list[BaseModel], outputs: list[BaseModel],
               outputs_all: bool, post_ok: Callable[[BaseModel, BaseModel], bool],
               result: CaseResult, contradiction: Callable[[str, str, str], None]) -> None:
    """The pre-flight as ``contract.py`` calls it, on inputs passing the pre-conditions."""
    from hoare.kernel import Verdict
    from hoare.verifier.runtime.preflight import Preflight

    checker = Preflight.for_description(desc)
    if checker is None:
        result.statuses["preflight:none"] += 1
        return
    instance = cls()
    for x in runnable[:PREFLIGHT_CAP]:
        verdict = checker.check(instance, x).verdict
        result.statuses[f"preflight:{verdict.value}"] += 1
        if verdict is Verdict.UNSATISFIABLE:
            found = next((o for o in outputs if post_ok(o, x)), None)
            if found is not None:
                contradiction("preflight unsatisfiable", "an output passes for this input",
                              f"input {_text(x)}; output {_text(found)}")
                return
        elif verdict is Verdict.SATISFIABLE and outputs_all:
            if not any(post_ok(o, x) for o in outputs):
                contradiction("preflight satisfiable", "no output passes for this input "
                              "(outputs enumerated)", _text(x))
                return
