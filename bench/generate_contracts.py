"""Generate N contract modules for the ``hoare verify`` scaling benchmark.

    python bench/generate_contracts.py OUT_DIR [-n 200] [--seed 0] [--broken 0.1]

Writes ``contract_0000.py`` … (one ``@contract`` class per module, with its own
input/output models) and ``manifest.json``: the verdicts each contract must get
(``pre_satisfiable``, ``post_satisfiable``, one ``predicate_vacuous`` per
predicate, in declaration order, and ``post_total``: ``"pass"``, or null where the
verifier reports no such check, see ``_expected_total``). ``mismatches`` compares a
``hoare verify --format json`` report with it: a missing or extra check, or an extra
contract, is a mismatch. The contracts vary in field types (int, float,
str with lengths and patterns, Literal, Enum, Optional, lists) and predicates
(declarative ``Pre``/``Post`` lambdas, methods with guards, ``self`` attributes,
post-conditions reading the input). Most are sound; a fraction (``--broken``)
carries one deliberate defect: a pre-condition contradicting a bound, a
post-condition no output can meet, or a predicate the types make vacuous.
Every predicate is within what the verifier translates, so verdicts are exact.
Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["expected_checks", "generate", "mismatches"]


@dataclass
class _Contract:
    index: int
    rng: random.Random
    imports: set[str] = field(default_factory=set)
    models: list[str] = field(default_factory=list)
    pre: list[str] = field(default_factory=list)  # Pre(...) source
    post: list[str] = field(default_factory=list)  # Post(...) source
    methods: list[str] = field(default_factory=list)
    init: str | None = None
    expected_vacuous: list[str] = field(default_factory=list)
    expected_pre: str = "pass"
    expected_post: str = "pass"
    post_reads_input: bool = False  # a Post lambda reading the input was chosen
    output_has_float: bool = False
    defect: str | None = None
    has_pre_method: bool = False
    has_post_method: bool = False

    @property
    def name(self) -> str:
        return f"Task{self.index:04d}"


def _input_model(c: _Contract) -> tuple[str, dict[str, tuple[int, int] | str]]:
    """The input model source and, per field, what the predicates may use."""
    r = c.rng
    lines = [f"class Input{c.index:04d}(LLMDataModel):"]
    fields: dict[str, tuple[int, int] | str] = {}
    a = r.randint(0, 5)
    b = a + r.randint(10, 40)
    lines.append(f"    count: int = Field(ge={a}, le={b})")
    fields["count"] = (a, b)
    m = r.randint(1, 3)
    big = m + r.randint(8, 40)
    lines.append(f"    name: str = Field(min_length={m}, max_length={big})")
    fields["name"] = (m, big)
    extras = r.sample(["ratio", "kind", "tags", "code", "level", "note"], k=r.randint(1, 3))
    for extra in extras:
        if extra == "ratio":
            lines.append("    ratio: float = Field(ge=0.0, le=1.0)")
        elif extra == "kind":
            lines.append('    kind: Literal["a", "b", "c"]')
            c.imports.add("Literal")
        elif extra == "tags":
            lines.append(f"    tags: list[str] = Field(default_factory=list, "
                         f"max_length={r.randint(2, 5)})")
        elif extra == "code":
            lines.append('    code: str = Field(pattern=r"^[A-Z]{2}-[0-9]{3}$")')
        elif extra == "level":
            lines.append("    level: Level")
            c.imports.add("enum")
        elif extra == "note":
            lines.append("    note: str | None = None")
        fields[extra] = "yes"
    return "\n".join(lines), fields


def _output_model(c: _Contract) -> tuple[str, dict[str, tuple[int, int] | str]]:
    r = c.rng
    lines = [f"class Output{c.index:04d}(LLMDataModel):"]
    lo = r.randint(0, 3)
    hi = lo + r.randint(10, 30)
    lines.append(f"    score: int = Field(ge={lo}, le={hi})")
    fields: dict[str, tuple[int, int] | str] = {"score": (lo, hi)}
    lines.append(f"    summary: str = Field(min_length=1, max_length={r.randint(40, 200)})")
    fields["summary"] = "yes"
    for extra in r.sample(["confidence", "labels", "verdict"], k=r.randint(1, 3)):
        if extra == "confidence":
            lines.append("    confidence: float = Field(ge=0.0, le=1.0)")
            c.output_has_float = True
        elif extra == "labels":
            lines.append("    labels: list[str] = Field(default_factory=list, max_length=3)")
        elif extra == "verdict":
            lines.append('    verdict: Literal["yes", "no", "unsure"]')
            c.imports.add("Literal")
        fields[extra] = "yes"
    return "\n".join(lines), fields


def _pre_conditions(c: _Contract, fields: dict[str, tuple[int, int] | str]) -> None:
    r = c.rng
    a, b = fields["count"]  # type: ignore[misc]
    mid = r.randint(a, b - 5)
    options = [f'Pre(lambda x: x.count > {mid}, "count above {mid}")']
    m, big = fields["name"]  # type: ignore[misc]
    k = r.randint(m + 1, big)
    options.append(f'Pre(lambda x: len(x.name) >= {k}, "a name of {k} characters")')
    options.append('Pre(lambda x: x.name.strip() != "", "the name is not blank")')
    if "ratio" in fields:
        options.append('Pre(lambda x: x.ratio < 0.5, "a ratio below one half")')
    if "kind" in fields:
        options.append('Pre(lambda x: x.kind != "c", "kind c is not handled")')
    if "tags" in fields:
        options.append('Pre(lambda x: all(t.strip() for t in x.tags), "no blank tag")')
    if "code" in fields:
        options.append('Pre(lambda x: x.code.startswith("A"), "an A code")')
    if "level" in fields:
        options.append('Pre(lambda x: x.level is not Level.LOW, "not a low level")')
    if "note" in fields:
        options.append('Pre(lambda x: x.note is None or len(x.note) < 20, "a short note")')
    chosen = r.sample(options, k=min(len(options), r.randint(1, 3)))
    c.pre.extend(chosen)
    c.expected_vacuous.extend("pass" for _ in chosen)
    if r.random() < 0.3:
        c.has_pre_method = True
        c.methods.append(
            "    def pre(self, input):\n"
            "        if input.count % 7 == 3:\n"
            '            raise ValueError("count must not be 3 modulo 7")\n'
            "        return True\n")
        c.expected_vacuous.insert(0, "pass")  # method predicates come first


def _post_conditions(c: _Contract, inputs: dict[str, tuple[int, int] | str],
                     fields: dict[str, tuple[int, int] | str]) -> None:
    r = c.rng
    lo, hi = fields["score"]  # type: ignore[misc]
    a, b = inputs["count"]  # type: ignore[misc]
    threshold = lo + (hi - lo) // 3
    options = [f'Post(lambda o: o.score >= {threshold}, "a score of at least {threshold}")',
               'Post(lambda o: o.summary.strip() != "", "a summary that is not blank")']
    # every count admits a score (count + slack >= threshold), yet the bound can fail
    # (count + slack < hi for the smallest count)
    slack = max(threshold - a, hi - b + 1, 1)
    options.append(f'Post(lambda o, x: o.score <= x.count + {slack}, '
                   f'"a score within the count plus {slack}")')
    if "confidence" in fields:
        options.append('Post(lambda o: o.confidence >= 0.25, "some confidence")')
        if "verdict" in fields:
            options.append('Post(lambda o: o.verdict != "unsure" or o.confidence < 0.5, '
                           '"unsure only with low confidence")')
    if "labels" in fields:
        options.append('Post(lambda o: all(label in ("x", "y", "z") for label in o.labels), '
                       '"known labels")')
    chosen = r.sample(options, k=min(len(options), r.randint(1, 3)))
    c.post.extend(chosen)
    c.post_reads_input = any("lambda o, x" in p for p in chosen)
    vacuous = ["pass" for _ in chosen]
    if r.random() < 0.4:
        c.has_post_method = True
        maximum = lo + 2 * (hi - lo) // 3
        c.init = (f"    def __init__(self, max_score: int = {maximum}, **options):\n"
                  "        super().__init__(**options)\n"
                  "        self.max_score = max_score\n")
        c.methods.append(
            "    def post(self, output, input):\n"
            "        if output.score > self.max_score:\n"
            '            raise ValueError(f"score {output.score} above {self.max_score}")\n'
            "        if len(output.summary) > 10 * len(input.name) + 100:\n"
            '            raise ValueError("summary too long for the name")\n'
            "        return True\n")
        vacuous.insert(0, "pass")
    c.expected_vacuous.extend(vacuous)


def _defect(c: _Contract, inputs: dict[str, tuple[int, int] | str],
            outputs: dict[str, tuple[int, int] | str]) -> None:
    r = c.rng
    kind = r.choice(["pre", "post", "vacuous"])
    c.defect = kind
    if kind == "pre":
        _a, b = inputs["count"]  # type: ignore[misc]
        c.pre.append(f'Pre(lambda x: x.count > {b}, "a count above {b}")')
        c.expected_vacuous.insert(len(c.pre) - 1 + int(c.has_pre_method), "fail")
        c.expected_pre = "fail"
        c.expected_post = "fail"
    elif kind == "post":
        lo, _hi = outputs["score"]  # type: ignore[misc]
        c.post.append(f'Post(lambda o: o.score < {lo}, "a score below {lo}")')
        c.expected_vacuous.append("fail")
        c.expected_post = "fail"
    else:
        lo, _hi = outputs["score"]  # type: ignore[misc]
        c.post.append(f'Post(lambda o: o.score >= {lo}, "a score of at least {lo}")')
        c.expected_vacuous.append("warn")


def _expected_total(c: _Contract) -> str | None:
    """``post_total``'s verdict, or None where the verifier reports no such check.

    Every generated post-condition admits an output for every valid input (the slack
    of ``_post_conditions``), so the truth is always "pass"; the verifier reports it
    only when it can decide it exactly (``verifier/checks/contracts.py``,
    ``check_total``): not when the post-conditions do not read the input
    (``post_satisfiable`` decides it), not when ``post_satisfiable`` did not pass,
    not over a float output (reals are a superset of the doubles), and not with the
    ``post`` method (its string lengths defeat the quantifier elimination).
    """
    if c.expected_post != "pass" or c.output_has_float or c.has_post_method:
        return None
    return "pass" if c.post_reads_input else None


def _render(c: _Contract, input_src: str, output_src: str) -> str:
    header = ['"""Generated by bench/generate_contracts.py: do not edit."""', ""]
    header.append("from __future__ import annotations")
    header.append("")
    if "enum" in c.imports:
        header.append("import enum")
    if "Literal" in c.imports:
        header.append("from typing import Literal")
    if "enum" in c.imports or "Literal" in c.imports:
        header.append("")
    header.append("from hoare import Contract, Field, LLMDataModel, Post, Pre, contract")
    header.append("")
    body = []
    if "enum" in c.imports:
        body.append('class Level(enum.Enum):\n    LOW = "low"\n    MID = "mid"\n'
                    '    HIGH = "high"\n')
    body.append(input_src + "\n")
    body.append(output_src + "\n")
    cls = ["@contract()", f"class {c.name}(Contract):",
           f'    prompt = "Generated task {c.index}."']
    if c.pre:
        cls.append("    pre_conditions = (\n" + "".join(f"        {p},\n" for p in c.pre)
                   + "    )")
    if c.post:
        cls.append("    post_conditions = (\n" + "".join(f"        {p},\n" for p in c.post)
                   + "    )")
    cls.append("")
    if c.init:
        cls.append(c.init)
    for method in c.methods:
        cls.append(method)
    cls.append(f"    def forward(self, input: Input{c.index:04d}) -> Output{c.index:04d}:\n"
               "        return self.contract_result\n")
    return "\n".join(header) + "\n\n" + "\n\n".join(body) + "\n\n" + "\n".join(cls)


def generate(directory: str | Path, count: int, *, seed: int = 0, broken: float = 0.1
             ) -> dict[str, dict[str, object]]:
    """Write ``count`` contract modules and ``manifest.json`` into ``directory``;
    return the manifest (``module:Class`` → expected verdicts)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    manifest: dict[str, dict[str, object]] = {}
    for index in range(count):
        c = _Contract(index, random.Random(rng.getrandbits(64)))
        input_src, inputs = _input_model(c)
        output_src, outputs = _output_model(c)
        _pre_conditions(c, inputs)
        _post_conditions(c, inputs, outputs)
        if c.rng.random() < broken:
            _defect(c, inputs, outputs)
        stem = f"contract_{index:04d}"
        (out / f"{stem}.py").write_text(_render(c, input_src, output_src))
        manifest[f"{stem}:{c.name}"] = {
            "pre_satisfiable": c.expected_pre,
            "post_satisfiable": c.expected_post,
            "predicate_vacuous": c.expected_vacuous,
            "post_total": _expected_total(c),
            "defect": c.defect,
        }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def expected_checks(entry: dict[str, object]) -> dict[str, list[str]]:
    """The statuses each check kind must have, in order, for one manifest entry."""
    vacuous = entry["predicate_vacuous"]
    expected: dict[str, list[str]] = {
        "pre_satisfiable": [str(entry["pre_satisfiable"])],
        "post_satisfiable": [str(entry["post_satisfiable"])],
        "predicate_vacuous": [str(v) for v in vacuous] if isinstance(vacuous, list) else [],
    }
    if entry.get("post_total") is not None:
        expected["post_total"] = [str(entry["post_total"])]
    return {kind: statuses for kind, statuses in expected.items() if statuses}


def mismatches(manifest: dict[str, dict[str, object]], report: dict[str, object]
               ) -> list[str]:
    """Each way the ``hoare verify --format json`` report differs from the manifest:
    a contract missing, reported twice or not in the manifest, and a check kind whose
    statuses differ, is missing or is extra (none counts as a pass)."""
    contracts = report.get("contracts")
    found: dict[str, list[dict[str, object]]] = {}
    problems: list[str] = []
    for contract in contracts if isinstance(contracts, list) else []:
        name = str(contract.get("name"))
        if name in found:
            problems.append(f"{name}: reported twice")
        found[name] = list(contract.get("checks") or [])
    for name in sorted(set(found) - set(manifest)):
        problems.append(f"{name}: reported, not in the manifest")
    for name, entry in manifest.items():
        if name not in found:
            problems.append(f"{name}: not reported")
            continue
        actual: dict[str, list[str]] = {}
        for check in found[name]:
            actual.setdefault(str(check.get("kind")), []).append(str(check.get("status")))
        expected = expected_checks(entry)
        for kind in sorted(set(actual) | set(expected)):
            if actual.get(kind) != expected.get(kind):
                problems.append(f"{name}: {kind} {actual.get(kind, 'missing')}, expected "
                                f"{expected.get(kind, 'none')}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("-n", "--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken", type=float, default=0.1,
                        help="fraction of contracts with a deliberate defect")
    args = parser.parse_args(argv)
    manifest = generate(args.directory, args.count, seed=args.seed, broken=args.broken)
    defects = sum(1 for entry in manifest.values() if entry["defect"])
    print(f"wrote {len(manifest)} contracts ({defects} with a defect) to {args.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
