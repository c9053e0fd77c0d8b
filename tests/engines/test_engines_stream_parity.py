"""A streamed answer is checked as a non-streamed one is (issue 30: the engine boundary).

The streaming path (``@contract(stream=True)``, any request with a ``watch``) has a
reader of its own; it must say what the non-streamed parser says: a refusal is a
``ModelRefusal`` with its text, a content filter with no text is ``ContentFiltered``,
and usage that is not a token count is charged at an upper bound, never as 0 and never
as NaN. Each case runs sync and async through the loopback server and the real client.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai_server import OpenAIServer, stream

from hoare.engines import Budget, BudgetedEngine, Message, Request, Response
from hoare.engines.base import ContentFiltered, ModelRefusal


def _complete(engine: Any, request: Request, mode: str) -> Response:
    if mode == "sync":
        return engine.complete(request)  # type: ignore[no-any-return]
    return asyncio.run(engine.acomplete(request))  # type: ignore[no-any-return]


def _request() -> Request:
    return Request(messages=(Message("user", "hi"),), watch=lambda text: None)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streamed_refusal_is_a_refusal_with_its_text(mode: str) -> None:
    with OpenAIServer([stream(refusal="I can't help with that")]) as server:
        budgeted = BudgetedEngine(server.engine(), Budget(max_input_tokens=10**6))
        with pytest.raises(ModelRefusal) as caught:
            _complete(budgeted, _request(), mode)
    assert caught.value.refusal == "I can't help with that"
    assert "refused" in str(caught.value)
    assert budgeted.spent()["input_tokens"] == 10  # the refusal was paid for


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streamed_content_filter_with_no_text_is_named(mode: str) -> None:
    with OpenAIServer([stream(finish_reason="content_filter")]) as server:
        with pytest.raises(ContentFiltered):
            _complete(server.engine(), _request(), mode)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_streamed_text_with_a_filter_finish_is_still_the_answer(mode: str) -> None:
    """As in the non-streamed parser: a filter that left text is an answer, cut short."""
    with OpenAIServer([stream("a", "b", finish_reason="content_filter")]) as server:
        response = _complete(server.engine(), _request(), mode)
    assert response.texts == ("ab",) and response.finish_reasons == ("content_filter",)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -7, 10**20, "many", 2.5],
                         ids=repr)
def test_a_streamed_usage_that_is_not_a_count_is_charged_a_bound(bad: Any, mode: str) -> None:
    """Never under-charged: the non-streamed parser charges the request's bytes as the
    input bound; so does the stream (it counted 0 for NaN before)."""
    with OpenAIServer([stream("a", "b", prompt_tokens=bad)]) as server:
        budgeted = BudgetedEngine(server.engine(), Budget(max_input_tokens=10**6))
        response = _complete(budgeted, _request(), mode)
    assert response.texts == ("ab",)
    spent = budgeted.spent()
    assert type(spent["input_tokens"]) is int and spent["input_tokens"] > 0
    assert response.usage.input_tokens == spent["input_tokens"]
