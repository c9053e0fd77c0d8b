"""``hoare.agents``' contract API with cyllama's names: ``@pre``/``@post`` (both
predicate styles, order, policies, raising predicates, above or below ``@tool``),
``ContractViolation``/``ContractTermination``, ``contract_assert`` bound per thread and
per task, ``tool`` with a pydantic-built parameter schema."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from library_under_test import LIBRARY

from hoare.agents import (
    ContractContext,
    ContractPolicy,
    ContractSpec,
    ContractTermination,
    ContractViolation,
    PostCondition,
    PreCondition,
    Tool,
    contract_assert,
    contract_context,
    post,
    pre,
    tool,
)
from hoare.kernel import Policy

ROOT = Path(__file__).resolve().parents[2]


@pre(lambda args: args["count"] > 0, "count must be positive")
@pre(lambda args: args["count"] <= 100, "count must not exceed 100")
def fetch(count: int) -> str:
    return f"fetched {count}"


@pre(lambda x, y: y != 0, "no division by zero")
@post(lambda r, args: r * args["y"] == args["x"], "exact")
def divide(x: int, y: int) -> int:
    return x // y


@tool
@pre(lambda args: len(args["query"]) > 0, "a query")
@post(lambda r: len(r) <= 20, "short results")
def search(query: str, limit: int = 5) -> str:
    """Search the catalogue.

    More text that is not the description."""
    return ("result for " + query)[: 10 * limit]


def test_policy_is_the_kernels() -> None:
    assert ContractPolicy is Policy
    assert [p.value for p in ContractPolicy] == ["ignore", "observe", "enforce",
                                                 "quick_enforce"]


def test_enforce_outside_an_agent_raises_with_a_readable_violation() -> None:
    assert fetch(5) == "fetched 5"
    with pytest.raises(ContractTermination) as caught:
        fetch(0)
    violation = caught.value.violation
    assert (violation.kind, violation.location, violation.message) == \
        ("pre", "fetch", "count must be positive")
    # the lambda's source, as cyllama shows it (issue 32 item 9)
    assert violation.predicate == "lambda args: args['count'] > 0"
    assert violation.context == {"args": {"count": 0}}
    assert violation.policy is ContractPolicy.ENFORCE
    assert "[pre]" in str(violation) and "fetch" in str(violation)
    assert "count must be positive" in str(caught.value)


def test_conditions_are_checked_in_the_order_written() -> None:
    spec = fetch._contracts  # type: ignore[attr-defined]
    assert isinstance(spec, ContractSpec)
    assert [c.message for c in spec.preconditions] == ["count must be positive",
                                                       "count must not exceed 100"]
    with pytest.raises(ContractTermination) as caught:
        fetch(1000)
    assert caught.value.violation.message == "count must not exceed 100"


def test_both_predicate_styles_and_result_with_args() -> None:
    assert divide(6, 3) == 2
    with pytest.raises(ContractTermination, match="no division by zero"):
        divide(6, 0)
    with pytest.raises(ContractTermination, match="exact"):
        divide(7, 2)
    (precondition,) = divide._contracts.preconditions  # type: ignore[attr-defined]
    assert precondition.by_name == ("x", "y")  # icontract style, by parameter name
    (postcondition,) = divide._contracts.postconditions  # type: ignore[attr-defined]
    assert postcondition.needs_args


def test_a_parameter_named_args_is_the_function_s_own() -> None:
    @pre(lambda args: args > 0, "positive")
    def takes_args(args: int) -> int:
        return args

    assert takes_args(3) == 3
    with pytest.raises(ContractTermination):
        takes_args(0)


def test_observe_logs_and_continues_ignore_skips(caplog: pytest.LogCaptureFixture) -> None:
    @pre(lambda args: args["n"] > 0, "positive", policy=ContractPolicy.OBSERVE)
    def watched(n: int) -> int:
        return n * 2

    calls: list[int] = []

    @pre(lambda args: calls.append(1) or False, "never checked", policy=ContractPolicy.IGNORE)
    def ignored(n: int) -> int:
        return n

    with caplog.at_level(logging.WARNING, logger="hoare.agents"):
        assert watched(-1) == -2
    assert "Contract violation [pre] at watched: positive" in caplog.text
    assert ignored(1) == 1 and calls == []  # an ignored predicate is not even evaluated


def test_a_raising_predicate_is_a_violation() -> None:
    @post(lambda r: r["missing"], "has the key")
    def make() -> dict[str, int]:
        return {}

    with pytest.raises(ContractTermination, match="has the key"):
        make()
    assert PreCondition(lambda a: 1 / 0, "m").check({}) is False
    assert PostCondition(lambda r: r.nope, "m").check(1) is False


def test_tool_schema_description_and_contracts_either_side() -> None:
    assert isinstance(search, Tool) and search.name == "search"
    assert search.description == "Search the catalogue."
    props = search.parameters["properties"]
    assert props["query"]["type"] == "string" and props["limit"]["default"] == 5
    assert search.parameters["required"] == ["query"]
    assert search("kettle") == "result for kettle"
    with pytest.raises(ContractTermination, match="a query"):
        search("")
    with pytest.raises(ContractTermination, match="short results"):
        search("a very long query indeed", limit=10)

    @pre(lambda args: args["a"] < 10, "small a")
    @tool
    def above(a: int) -> int:
        return a

    assert isinstance(above, Tool) and above(3) == 3
    assert [c.message for c in above._contracts.preconditions] == ["small a"]
    with pytest.raises(ContractTermination):
        above(30)


def test_contract_assert_outside_and_inside_a_context() -> None:
    with pytest.raises(ContractTermination, match="must hold"):
        contract_assert(False, "must hold")
    contract_assert(True, "fine")
    seen: list[ContractViolation] = []
    with contract_context(ContractContext(ContractPolicy.OBSERVE, seen.append, "my_tool")):
        contract_assert(False, "observed only")
        assert fetch(0) == "fetched 0"  # the context's policy governs the tool too
    assert [(v.kind, v.location, v.message) for v in seen] == [
        ("assert", "my_tool", "observed only"), ("pre", "fetch", "count must be positive")]
    with contract_context(ContractContext(ContractPolicy.ENFORCE, seen.append, "t")):
        with pytest.raises(ContractTermination):
            contract_assert(False, "enforced")
    assert seen[-1].message == "enforced"  # the handler ran before the termination
    quick: list[ContractViolation] = []
    with contract_context(ContractContext(ContractPolicy.QUICK_ENFORCE, quick.append, "t")):
        with pytest.raises(ContractTermination):
            contract_assert(False, "quick")
    assert quick == []  # quick_enforce calls no handler


def test_handle_violation_without_a_handler_applies_the_policy() -> None:
    violation = ContractViolation("pre", "t", "p", "m", policy=ContractPolicy.OBSERVE)
    assert ContractContext(ContractPolicy.OBSERVE).handle_violation(violation) is True
    violation.policy = ContractPolicy.ENFORCE
    with pytest.raises(ContractTermination):
        ContractContext().handle_violation(violation)
    assert ContractViolation("assert", "agent", "", "m").context == {}


CONCURRENT = r'''
import asyncio, json, threading
from hoare.agents import ContractContext, ContractPolicy, contract_assert, contract_context

def checked(name, seen, n):
    with contract_context(ContractContext(ContractPolicy.OBSERVE, seen.append, name)):
        for i in range(n):
            contract_assert(i % 2 == 0, f"odd {i}")

results = {}
def run_thread(name):
    seen = []
    checked(name, seen, 200)
    results[name] = sorted({v.location for v in seen}), len(seen)

threads = [threading.Thread(target=run_thread, args=(f"t{i}",)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()

async def task(name):
    seen = []
    with contract_context(ContractContext(ContractPolicy.OBSERVE, seen.append, name)):
        for i in range(50):
            await asyncio.sleep(0)
            contract_assert(i % 2 == 0, f"odd {i}")
    results[name] = sorted({v.location for v in seen}), len(seen)

async def main():
    await asyncio.gather(*(task(f"a{i}") for i in range(8)))
asyncio.run(main())
print(json.dumps(results))
'''


def test_contract_assert_contexts_never_cross_threads_or_tasks() -> None:
    done = subprocess.run([sys.executable, "-c", CONCURRENT], capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": LIBRARY, "PATH": ""})
    assert done.returncode == 0, done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    assert len(results) == 16
    for name, (locations, count) in results.items():
        assert locations == [name]  # every violation went to its own caller's context
        assert count == (100 if name.startswith("t") else 25)


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    readme = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
                if "fetch_items" in b]
    exec(compile(block, "docs/agents.md", "exec"), {"__name__": "readme_agents"})
    assert capsys.readouterr().out.startswith(
        "Contract violation [pre] at fetch_items: count must be positive")
