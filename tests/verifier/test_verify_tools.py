"""``hoare verify`` on agent tools and ``ToolChain``s: each tool's conditions are
checked like a contract's, a chain's links for composability; the rewritten conditions
agree with the tools' own (differential, on generated arguments); negative verdicts
replay for real and a refuted ``pass`` becomes ``unknown``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.agents import ToolChain, post, pre, tool
from hoare.verifier.checks import tools as tools_module
from hoare.verifier.checks.tools import check_chain, check_tool, tool_description
from hoare.verifier.solve.solver import SolverOptions

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = SolverOptions()
LIMIT = 10


@tool
@pre(lambda args: len(args["query"]) > 0, "a query")
@post(lambda r: len(r) > 0, "some text")
def search(query: str) -> str:
    """Search."""
    return "results for " + query


@tool
@pre(lambda text, limit: len(text) <= limit, "fits the limit")
@pre(lambda args: args.get("limit") <= LIMIT, "a limit of at most LIMIT")
def summarize(text: str, limit: int = 5) -> str:
    """Summarize."""
    return text[:limit]


@tool
@post(lambda r: r >= 1.0, "at least one")
def price() -> float:
    """A price."""
    return 2.0


@tool
@pre(lambda amount: amount > 0, "a positive amount")
def pay(amount: float) -> str:
    """Pay."""
    return f"paid {amount}"


@tool
@pre(lambda x: None, "returns None: fails, as PreCondition.check says")
@pre(lambda x: x == x or x > 1, "always")
@pre(lambda args: sorted(args) == ["x"], "the dict used whole")
def odd(x: int) -> int:
    """Odd conditions."""
    return x


@tool
@post(lambda r, args: r <= args["n"] * 2, "at most twice n")
def twice(n: int) -> int:
    """Twice n."""
    return n * 2


def _by_kind(report: Any) -> dict[tuple[str, str | None], str]:
    return {(c.kind, c.predicate): c.status for c in report.checks}


def test_a_tool_is_checked_like_a_contract() -> None:
    report = check_tool(search, "t", OPTIONS)
    assert report.name == "t:search"
    assert set(_by_kind(report).values()) == {"pass"}
    assert any("arguments of its parameters' types" in a for c in report.checks
               for a in c.assumptions)
    report = check_tool(twice, "t", OPTIONS)  # a post-condition reading the arguments
    assert _by_kind(report)[("predicate_vacuous", "postconditions[0]")] == "pass"
    (check,) = [c for c in report.checks if c.predicate == "postconditions[0]"]
    example = check.counterexample  # a result it rejects, with the arguments, for real
    assert not twice._contracts.postconditions[0].check(example["output"],
                                                         example["input"])


def test_none_fails_a_tool_condition_and_an_unrewritable_one_is_unknown() -> None:
    found = _by_kind(check_tool(odd, "t", OPTIONS))
    assert found[("pre_satisfiable", None)] == "fail"
    assert found[("predicate_vacuous", "preconditions[0]")] == "fail"
    assert found[("predicate_vacuous", "preconditions[1]")] == "warn"
    assert found[("predicate_vacuous", "preconditions[2]")] == "unknown"
    (check,) = [c for c in check_tool(odd, "t", OPTIONS).checks
                if c.predicate == "preconditions[2]"]
    assert "args used other than as args[\"name\"]" in check.message


def test_a_tool_without_a_return_annotation_is_unknown_and_says_why() -> None:
    @tool
    @pre(lambda x: x > 0, "positive")
    def bare(x: int):  # type: ignore[no-untyped-def]
        return x

    (check,) = check_tool(bare, "t", OPTIONS).checks
    assert check.status == "unknown" and "no return annotation" in check.message


@settings(max_examples=150, deadline=None)
@given(query=st.text(max_size=6), text=st.text(max_size=12),
       limit=st.integers(-3, 20), x=st.integers(-5, 5), n=st.integers(-50, 50),
       r=st.integers(-120, 120))
def test_rewritten_conditions_agree_with_the_tools_own(query: str, text: str, limit: int,
                                                       x: int, n: int, r: int) -> None:
    """Differential: each rewritten predicate on the arguments' model says what the
    tool's own ``PreCondition.check``/``PostCondition.check`` says on the dict."""
    cases = [(search, {"query": query}, text), (summarize, {"text": text, "limit": limit},
                                                 text),
             (odd, {"x": x}, x), (twice, {"n": n}, r), (pay, {"amount": float(x)}, "s")]
    for item, arguments, result in cases:
        desc = tool_description(item, "t")
        model = desc.input.validate(arguments)
        spec = item._contracts
        for source, condition in zip(desc.pre, spec.preconditions, strict=True):
            assert bool(source.fn(model)) == condition.check(arguments), source.id
        for source, condition in zip(desc.post, spec.postconditions, strict=True):
            got = source.fn(result, model) if source.takes_input else source.fn(result)
            assert bool(got) == condition.check(result, arguments), source.id


def test_a_chain_that_composes_passes() -> None:
    report = check_chain(ToolChain(price, pay, feed={"pay": "amount"}), "t:paying", OPTIONS)
    (check,) = report.checks
    assert check.kind == "composition" and check.status == "pass", check


def test_a_chain_that_does_not_compose_fails_with_a_real_counterexample() -> None:
    chain = ToolChain(search, summarize, feed={"summarize": "text"})
    (check,) = check_chain(chain, "t:chain", OPTIONS).checks
    assert check.status == "fail", check
    found = check.counterexample
    result = found["result"]
    arguments = found["summarize arguments"]
    assert arguments["text"] == result
    assert search._contracts.postconditions[0].check(result, {"query": "q"})
    assert not all(c.check(arguments) for c in summarize._contracts.preconditions)


def test_a_link_between_different_types_is_unknown() -> None:
    (check,) = check_chain(ToolChain(price, summarize, feed={"summarize": "text"}), "t:c",
                           OPTIONS).checks
    assert check.status == "unknown" and "only the same annotation" in check.message


def test_a_refuted_composition_pass_becomes_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A translator bug that hides every failure of B's conditions: z3 finds no
    counterexample, the concrete search over the samples does."""
    real = tools_module.translate

    def never_fails(*args: Any, **kwargs: Any) -> Any:
        translation = real(*args, **kwargs)
        if translation.opaque is None:
            translation.cases.clear()
        return translation

    monkeypatch.setattr(tools_module, "translate", never_fails)
    (check,) = check_chain(ToolChain(search, summarize, feed={"summarize": "text"}),
                           "t:chain", OPTIONS).checks
    assert check.status == "unknown" and "refutes" in check.message, check


def test_chain_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="at least two"):
        ToolChain(search, feed={})
    with pytest.raises(ValueError, match="must name the parameter of 'summarize'"):
        ToolChain(search, summarize, feed={})
    with pytest.raises(ValueError, match="has no parameter 'body'"):
        ToolChain(search, summarize, feed={"summarize": "body"})
    with pytest.raises(ValueError, match="not tools after the first"):
        ToolChain(search, summarize, feed={"summarize": "text", "search": "query"})


MODULE = '''
from hoare.agents import ContractAgent, ToolChain, post, pre, tool
from hoare.engines import FunctionEngine
from helpers import shared


@tool
@post(lambda r: len(r) > 0, "some text")
def fetch(url: str) -> str:
    return "page " + url


@pre(lambda text: len(text.strip()) > 0 or len(text) > 0, "some text")
def count_words(text: str) -> int:
    return len(text.split())


@tool
def plain(x: int) -> int:
    return x


agent = ContractAgent(FunctionEngine(lambda r: "done"), tools=[fetch, plain, shared])
CHAIN = ToolChain(fetch, count_words, feed={"count_words": "text"})
'''

HELPERS = '''
from hoare.agents import pre, tool


@tool
@pre(lambda n: n > 0, "positive")
def shared(n: int) -> int:
    return n
'''


def _verify(project: Path, *targets: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "hoare.cli", "verify", *targets,
                           "--format", "json", "--no-cache", "-j", "1"],
                          capture_output=True, text=True, cwd=project, timeout=300,
                          env={"PYTHONPATH": f"{ROOT / 'src'}:{project}", "PATH": ""})
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_hoare_verify_finds_a_module_s_tools_and_chains(tmp_path: Path) -> None:
    (tmp_path / "agentic.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPERS))
    status, report = _verify(tmp_path, "agentic.py")
    names = [c["name"] for c in report["contracts"]]
    assert names == ["agentic:fetch", "agentic:count_words"]  # no contracts: plain;
    # shared is helpers' own, checked there
    (chain,) = report["pipelines"]
    assert chain["name"] == "agentic:CHAIN"
    (link,) = chain["checks"]
    assert link["status"] == "pass" and status == 0, link
    assert link["location"]["file"].endswith("agentic.py")
    _, only = _verify(tmp_path, "agentic.py:count_words")
    assert [c["name"] for c in only["contracts"]] == ["agentic:count_words"]
    assert only["pipelines"] == []


def test_conditions_are_built_as_code_objects_never_by_eval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``eval``/``exec`` of generated text: a rewritten condition is a compiled AST
    (and the unrewritable ones plain closures), whose source the translator still
    reads, so the verdicts are the same."""
    used: list[object] = []

    def refuse(*arguments: object, **keywords: object) -> object:
        used.append(arguments)
        raise AssertionError("tools.py evaluated generated text")

    monkeypatch.setattr(tools_module, "eval", refuse, raising=False)
    monkeypatch.setattr(tools_module, "exec", refuse, raising=False)
    for item in (search, summarize, price, pay, odd, twice):
        desc = tool_description(item, "t")
        assert all(callable(s.fn) for s in (*desc.pre, *desc.post))
    found = _by_kind(check_tool(odd, "t", OPTIONS))
    assert found[("predicate_vacuous", "preconditions[1]")] == "warn"  # source read
    assert found[("predicate_vacuous", "preconditions[2]")] == "unknown"
    assert set(_by_kind(check_tool(search, "t", OPTIONS)).values()) == {"pass"}
    assert used == []


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.sampled_from(["value", "used", "value_", "bool", "x", "args"]),
                      min_size=0, max_size=3, unique=True),
       bound=st.integers(-20, 20), probe=st.integers(-40, 40))
def test_a_compiled_condition_reads_its_scope_not_a_text(names: list[str], bound: int,
                                                         probe: int) -> None:
    """``function_of`` over generated scopes: globals and closure values are read from
    the scope given, whatever their names (names the rewrite itself uses included)."""
    import ast

    scope: dict[str, object] = {name: bound for name in names if name != "bool"}
    scope["LIMIT_"] = bound
    node = ast.parse("lambda v: v <= LIMIT_", mode="eval").body
    assert isinstance(node, ast.Lambda)
    fn = tools_module.function_of(node, "<generated test condition>", scope)
    assert fn(probe) == (probe <= bound)
    scope["LIMIT_"] = bound - 1  # a live namespace, as a module's globals are
    assert fn(probe) == (probe <= bound - 1)
