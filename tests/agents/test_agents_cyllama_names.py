"""cyllama's names where its spec says so (issue 32 items 7-9): the agent's contracts as
normalized lists, ``ContractContext.handle_violation`` applying the context's policy and
handler (a check's own policy winning, and recorded on the violation), and a violation's
``predicate`` as cyllama shows it: a lambda's source, ``lambda ...`` included, or a
function's name."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoare.agents import (
    ContractAgent,
    ContractContext,
    ContractPolicy,
    ContractTermination,
    ContractViolation,
    EventType,
    contract_assert,
    pre,
    tool,
)
from hoare.agents.conditions import PostCondition, PreCondition
from hoare.engines.testing import ScriptedEngine
from hoare.errors import ContractDefinitionError


# -- item 7: the agent's contracts as normalized lists ------------------------------------
def test_the_agents_contracts_are_normalized_lists() -> None:
    def one(value: Any) -> bool:
        return True

    def two(value: Any) -> bool:
        return True

    bare = ContractAgent(ScriptedEngine())
    assert (bare.task_preconditions, bare.answer_postconditions,
            bare.iteration_invariants) == ([], [], [])
    single = ContractAgent(ScriptedEngine(), task_precondition=one, answer_postcondition=two,
                           iteration_invariant=one)
    assert (single.task_preconditions, single.answer_postconditions,
            single.iteration_invariants) == ([one], [two], [one])
    plural = ContractAgent(ScriptedEngine(), task_preconditions=(one, two),
                           answer_postconditions=iter([two]), iteration_invariants=[])
    assert (plural.task_preconditions, plural.answer_postconditions,
            plural.iteration_invariants) == ([one, two], [two], [])
    assert all(type(hooks) is list for hooks in (plural.task_preconditions,
                                                 plural.answer_postconditions))


@pytest.mark.parametrize("name", ["task_preconditions", "answer_postconditions",
                                  "iteration_invariants"])
def test_a_contract_that_is_not_callable_is_refused_naming_it(name: str) -> None:
    with pytest.raises(ContractDefinitionError, match=rf"{name}\[1\].*callable.*str"):
        ContractAgent(ScriptedEngine(), **{name: [lambda v: True, "len(v) > 0"]})
    with pytest.raises(ValueError, match="not both"):
        ContractAgent(ScriptedEngine(), **{name[:-1]: lambda v: True, name: [lambda v: True]})


def test_an_empty_list_is_no_constraint_and_every_listed_check_runs() -> None:
    seen: list[str] = []
    agent = ContractAgent(ScriptedEngine('{"answer": "x"}'), agent_type="constrained",
                          policy=ContractPolicy.OBSERVE, violation_handler=lambda v: None,
                          task_preconditions=[lambda t: seen.append("a") or True,
                                              lambda t: seen.append("b") or False])
    result = agent.run("t")
    assert result.success and seen == ["a", "b"]
    (violation,) = [e.metadata["violation"] for e in result.events
                    if e.type is EventType.CONTRACT_VIOLATION]
    assert violation.kind == "task_pre" and violation.context["index"] == 1


# -- item 8: handle_violation applies the context's policy and handler ---------------------
POLICIES = list(ContractPolicy)


@given(st.sampled_from(POLICIES), st.sampled_from(POLICIES),
       st.sampled_from([None, "records", "raises"]))
def test_handle_violation_applies_the_contexts_policy_and_handler(
        context_policy: ContractPolicy, violation_policy: ContractPolicy,
        handler_kind: str | None) -> None:
    called: list[ContractViolation] = []

    def records(violation: ContractViolation) -> None:
        called.append(violation)

    def raises(violation: ContractViolation) -> None:
        called.append(violation)
        raise RuntimeError("the handler broke")

    handler = {None: None, "records": records, "raises": raises}[handler_kind]
    context = ContractContext(context_policy, handler, "here")
    violation = ContractViolation("pre", "here", "p", "m", {}, violation_policy)
    if context_policy in (ContractPolicy.ENFORCE, ContractPolicy.QUICK_ENFORCE):
        with pytest.raises(ContractTermination) as stopped:
            context.handle_violation(violation)
        assert stopped.value.violation is violation
        chained = context_policy is ContractPolicy.ENFORCE and handler_kind == "raises"
        assert isinstance(stopped.value.__cause__, RuntimeError) is chained
    else:
        assert context.handle_violation(violation) is True
    handler_called = handler is not None and context_policy in (ContractPolicy.OBSERVE,
                                                                ContractPolicy.ENFORCE)
    assert called == ([violation] if handler_called else [])
    assert violation.policy is context_policy  # the policy it was handled under


def test_a_checks_own_policy_wins_and_is_recorded() -> None:
    context = ContractContext(ContractPolicy.ENFORCE, None, "here")
    violation = ContractViolation("pre", "here", "p", "m")
    assert context.handle_violation(violation, ContractPolicy.OBSERVE) is True
    assert violation.policy is ContractPolicy.OBSERVE
    assert ContractViolation("pre", "x", "p", "m").policy is ContractPolicy.ENFORCE


def test_in_an_agent_a_conditions_and_an_asserts_own_policy_are_the_ones_applied() -> None:
    handled: list[ContractViolation] = []

    @tool
    @pre(lambda n: n > 0, "positive", policy=ContractPolicy.OBSERVE)
    def observed(n: int) -> int:
        """Observed pre-condition, under an enforcing agent."""
        return n

    @tool
    def quick(n: int) -> int:
        """An assert that stops at once, under an observing agent."""
        contract_assert(n > 0, "positive", policy=ContractPolicy.QUICK_ENFORCE)
        return n

    enforcing = ContractAgent(ScriptedEngine('{"tool": "observed", "args": {"n": 0}}',
                                      '{"answer": "done"}'), tools=[observed],
                              agent_type="constrained", violation_handler=handled.append)
    assert enforcing.run("t").success  # the pre-condition's OBSERVE, not the agent's
    assert [v.policy for v in handled] == [ContractPolicy.OBSERVE]
    observing = ContractAgent(ScriptedEngine('{"tool": "quick", "args": {"n": 0}}',
                                      '{"answer": "never"}'), tools=[quick],
                              agent_type="constrained", policy=ContractPolicy.OBSERVE,
                              violation_handler=handled.append)
    result = observing.run("t")
    assert not result.success and len(handled) == 1  # QUICK_ENFORCE: no handler
    assert result.events[-1].metadata["violation"].policy is ContractPolicy.QUICK_ENFORCE


# -- item 9: the predicate as cyllama shows it ---------------------------------------------
def is_positive(args: dict[str, Any]) -> bool:
    return bool(args["n"] > 0)


class _Check:
    def __call__(self, args: dict[str, Any]) -> bool:
        return True


def test_a_lambdas_predicate_is_its_source_and_a_functions_its_name() -> None:
    first, second = lambda args: args["n"] > 0, lambda args: args["n"] < 9  # one line
    multi = (lambda args:  # noqa: E731 (a lambda is what is tested)
             args["n"] > 0
             and args["n"] % 2 == 0)
    same_line = [lambda x: x > 1, lambda y: y > 2]
    same_names = [lambda x: x > 1, lambda x: x > 2]  # told apart by their positions
    nested = lambda x: (lambda y: y)(x) > 0  # noqa: E731 (a lambda is what is tested)
    assert PreCondition(first).predicate_str == "lambda args: args['n'] > 0"
    assert PreCondition(second).predicate_str == "lambda args: args['n'] < 9"
    assert PreCondition(multi).predicate_str == \
        "lambda args: args['n'] > 0 and args['n'] % 2 == 0"
    assert [PostCondition(f).predicate_str for f in same_line] == \
        ["lambda x: x > 1", "lambda y: y > 2"]
    assert [PostCondition(f).predicate_str for f in same_names] == \
        ["lambda x: x > 1", "lambda x: x > 2"]
    assert PreCondition(nested).predicate_str == "lambda x: (lambda y: y)(x) > 0"
    assert PreCondition(is_positive).predicate_str == "is_positive"
    assert PreCondition(_Check()).predicate_str == "_Check"
    assert PreCondition(functools.partial(is_positive)).predicate_str == "partial"


def test_a_lambda_without_source_falls_back_to_its_name() -> None:
    namespace: dict[str, Any] = {}
    exec("made = lambda args: args['n'] > 0", namespace)  # as in a REPL: no source
    assert PreCondition(namespace["made"]).predicate_str == "<lambda>"


def test_the_violation_carries_the_predicate_text() -> None:
    @pre(lambda args: args["n"] > 0, "positive")
    def work(n: int) -> int:
        return n

    @pre(is_positive)
    def named(n: int) -> int:
        return n

    with pytest.raises(ContractTermination) as stopped:
        work(0)
    assert stopped.value.violation.predicate == "lambda args: args['n'] > 0"
    with pytest.raises(ContractTermination) as stopped:
        named(0)
    assert stopped.value.violation.predicate == "is_positive"
    agent = ContractAgent(ScriptedEngine('{"answer": "x"}'), agent_type="constrained",
                          answer_postcondition=lambda answer: len(answer) > 3)
    result = agent.run("t")
    assert result.events[-1].metadata["violation"].predicate == \
        "lambda answer: len(answer) > 3"


def test_the_documented_context_policy_example_runs(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    """The agents documentation's context-policy example (README.md, or docs/agents.md
    where the README links to it) prints what its comments say."""
    import linecache
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = [p for p in (root / "README.md", root / "docs" / "agents.md") if p.exists()]
    blocks = [(page.name, block) for page in pages
              for block in re.findall(r"```python\n(.*?)```",
                                      page.read_text(encoding="utf-8"), re.S)
              if "ContractContext(" in block and "hoare.agents" in block]
    assert blocks, "no documented ContractContext example"
    for name, block in blocks:
        filename = f"<documented {name}>"  # its source readable, as from a file
        linecache.cache[filename] = (len(block), None, block.splitlines(True), filename)
        exec(compile(block, filename, "exec"), {"__name__": "documented_agents"})
        assert capsys.readouterr().out.splitlines() == [
            "lambda args: args['b'] != 0 OBSERVE", "undefined",
            "Contract violation [assert] at by hand: checked by hand", "ENFORCE"]
