"""Held-out pre-flight probes (issue 29): a query's answers are what its parser returns.

The pre-flight models a query's answer as its type ``T`` validated from JSON text. A
parser that returns something else (a user's ``Parser(fn)``, ``.map``, YAML's Python
objects) gave a false refusal: ``Query[Annotated[int, Field(le=10)]]`` read by
``Parser(lambda a: int(a.text))`` was refused at zero requests for ``n > 20``, though
the answer ``25`` parses and passes. The class: a refusal over a domain the values do
not come from. A parser now says which type bounds its values (``Parser.answers``),
kept only by the steps that narrow (``validate``); the pre-flight runs only for those.

A second class, the same place: a query's pre-flight ignored the pre-flight mode, so
``configure(preflight="shadow")`` or ``False`` (and ``[tool.hoare] preflight``) still
refused. It now takes the contract's hook (``configuration.preflight_hook``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

import hoare.contracts.configuration as configuration
from hoare import Post, configure
from hoare.engines import FunctionEngine
from hoare.engines.base import Request
from hoare.errors import ContractViolationError
from hoare.kernel import ViolationKind
from hoare.queries import Query
from hoare.queries.parsers import Parser, first_word_as, get_text, json_as, structured_as

Small = Annotated[int, Field(le=10)]


class Counting:
    """An engine answering ``text``, counting its requests."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests = 0
        self.engine = FunctionEngine(self.answer)

    def answer(self, request: Request) -> str:
        self.requests += 1
        return self.text


def above(parser: Any) -> Any:
    @dataclass
    class Above(Query[Small]):
        """Pick a number above x."""
        x: int
        __parser__ = parser
        post_conditions = [Post(lambda n, q: n > q.x, "above x")]
    return Above


UNBOUNDED = {
    "a user's function": Parser(lambda answer: int(answer.text.strip())),
    "get_text.map(int)": get_text.map(int),
    "structured_as(T).map": structured_as(Small).map(lambda n: n * 10),
    "json_as(int)": json_as(int),  # another type than the answer's
}


@pytest.mark.parametrize("name", list(UNBOUNDED))
def test_a_parser_whose_values_t_does_not_bound_is_never_refused(name: str) -> None:
    """Failed before for each: refused at zero requests (the answer type's le=10)."""
    parser = UNBOUNDED[name]
    answer = Counting("3" if name == "structured_as(T).map" else "25")
    assert above(parser)(20).run(answer.engine) in (25, 30)
    assert answer.requests == 1


@given(x=st.integers(-(2 ** 70), 2 ** 70), offset=st.integers(1, 2 ** 70))
@settings(max_examples=60, deadline=None)
def test_generated_answers_of_a_users_parser_are_never_refused(x: int, offset: int) -> None:
    """Whatever the input, an answer the parser reads and the post-condition accepts is
    reached: the pre-flight never refuses a parser the answer type does not bound."""
    answer = Counting(str(x + offset))
    assert above(UNBOUNDED["a user's function"])(x).run(answer.engine) == x + offset
    assert answer.requests == 1


BOUNDED = {
    "structured (default)": None,
    "structured_as(T)": structured_as(Small),
    "json_as(T)": json_as(Small),
    "structured_as(T).validate": structured_as(Small).validate(lambda n: None),
}


@pytest.mark.parametrize("name", list(BOUNDED))
def test_a_parser_bounded_by_the_answer_type_is_still_refused(name: str) -> None:
    parser = BOUNDED[name]
    query = above(parser) if parser is not None else above(None)
    answer = Counting("25")
    with pytest.raises(ContractViolationError) as raised:
        query(20).run(answer.engine)
    outcome = raised.value.outcome
    assert answer.requests == 0 and outcome is not None
    assert outcome.violations[0].kind is ViolationKind.UNSATISFIABLE
    assert query(5).run(Counting("7").engine) == 7


def test_first_word_is_bounded_by_its_literal() -> None:
    @dataclass
    class Pick(Query[Literal["yes", "no"]]):
        """Answer."""
        wanted: str
        __parser__ = first_word_as(Literal["yes", "no"])
        post_conditions = [Post(lambda a, q: a == q.wanted, "the wanted one")]

    assert Pick("yes").run(Counting("yes surely").engine) == "yes"
    answer = Counting("maybe")
    with pytest.raises(ContractViolationError) as raised:
        Pick("maybe").run(answer.engine)
    outcome = raised.value.outcome
    assert answer.requests == 0 and outcome is not None
    assert outcome.violations[0].kind is ViolationKind.UNSATISFIABLE


@pytest.mark.parametrize("mode", [False, "shadow"])
def test_a_query_follows_the_configured_preflight_mode(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Any, mode: Any) -> None:
    """Failed before: refused at zero requests whatever the mode."""
    monkeypatch.chdir(tmp_path)  # no [tool.hoare] above
    monkeypatch.setattr(configuration, "_shadow_logged", set())
    configure(preflight=mode)
    try:
        answer = Counting("25")
        with pytest.raises(ContractViolationError) as raised:
            above(None)(20).run(answer.engine, tries=1)
        outcome = raised.value.outcome
        assert answer.requests == 1 and outcome is not None
        assert all(v.kind is not ViolationKind.UNSATISFIABLE for v in outcome.violations)
    finally:
        configure(preflight=None)
    refused = Counting("25")
    with pytest.raises(ContractViolationError):
        above(None)(20).run(refused.engine, tries=1)
    assert refused.requests == 0  # on again


# -- the same class in static verify: ``hoare verify`` of a query with such a parser ----

@settings(max_examples=15, deadline=None)
@given(limit=st.integers(-(2**40), 2**40), parser=st.sampled_from(["int", "map"]))
def test_verify_never_fails_a_query_whose_parser_returns_other_values(
        limit: int, parser: str) -> None:
    """``hoare verify`` read a query's answers as ``T``; with ``Parser(int)`` (or a
    ``map``) the answer ``limit + 1`` parses and passes ``n > limit`` though ``T``
    says ``le=limit``: a false ``post_satisfiable``/``predicate_vacuous`` fail. Such a
    query's answer is now opaque to the verifier."""
    import hoare

    chosen = Parser(lambda a: int(a.text)) if parser == "int" else \
        get_text.map(lambda text: int(text))

    @dataclass
    class Unbounded(Query[Annotated[int, Field(le=limit)]]):
        """Give a number."""

        x: int
        __parser__ = chosen
        post_conditions = [Post(lambda n: n > limit, "above")]

    answer = Unbounded(1).parser_for().parse(_answer(str(limit + 1)))
    assert answer > limit  # the oracle: a parsed answer that passes
    statuses = {c.kind: c.status for c in hoare.verify(Unbounded).contracts[0].checks}
    assert statuses.get("post_satisfiable") != "fail"
    assert statuses.get("predicate_vacuous") != "fail"


def test_verify_still_fails_a_structured_query_no_answer_can_pass() -> None:
    import hoare

    @dataclass
    class Bounded(Query[Small]):
        """Give a number."""

        x: int
        post_conditions = [Post(lambda n: n > 10, "above")]

    statuses = {c.kind: c.status for c in hoare.verify(Bounded).contracts[0].checks}
    assert statuses["post_satisfiable"] == "fail"


def _answer(text: str) -> Any:
    from hoare.queries.answers import Answer

    return Answer(text, (), None, None)
