"""FunctionEngine: sync and async functions from sync and async callers."""

from __future__ import annotations

import asyncio

import pytest

from hoare.engines import Engine, FunctionEngine, Message, Request, Response, Usage


def req(text: str = "hi") -> Request:
    return Request(messages=(Message("user", text),))


def echo(request: Request) -> str:
    return request.messages[-1].content.upper()


async def aecho(request: Request) -> str:
    await asyncio.sleep(0)
    return request.messages[-1].content[::-1]


def test_sync_function_from_both_sides() -> None:
    engine = FunctionEngine(echo, model="rules")
    response = engine.complete(req("abc"))
    assert response == Response(("ABC",), ("stop",), Usage(requests=1), "rules")
    assert asyncio.run(engine.acomplete(req("xyz"))).text == "XYZ"
    assert isinstance(engine, Engine)


def test_async_function_from_both_sides() -> None:
    engine = FunctionEngine(aecho)
    assert engine.complete(req("abc")).text == "cba"
    assert asyncio.run(engine.acomplete(req("xyz"))).text == "zyx"


def test_async_function_called_synchronously_inside_a_running_loop() -> None:
    engine = FunctionEngine(aecho)

    async def caller() -> str:
        return engine.complete(req("loop")).text  # sync call from async code

    assert asyncio.run(caller()) == "pool"


def test_sync_function_returning_an_awaitable() -> None:
    engine = FunctionEngine(lambda request: aecho(request))
    assert engine.complete(req("ab")).text == "ba"
    assert asyncio.run(engine.acomplete(req("cd"))).text == "dc"


def test_response_answers_pass_through() -> None:
    answer = Response(("a", "b"), ("stop", "length"), Usage(1, 5, 6), "m")
    engine = FunctionEngine(lambda request: answer)
    assert engine.complete(req()) is answer


@pytest.mark.parametrize("bad", [None, 42, {"x": 1}, ["a"]])
def test_wrong_return_type_is_a_clear_error(bad: object) -> None:
    def fn(request: Request) -> object:
        return bad

    engine = FunctionEngine(fn)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as caught:
        engine.complete(req())
    message = str(caught.value)
    assert "must return str or Response" in message
    assert type(bad).__name__ in message
    assert "fn" in message
    with pytest.raises(TypeError, match="must return str or Response"):
        asyncio.run(engine.acomplete(req()))


def test_non_callable_is_rejected() -> None:
    with pytest.raises(TypeError, match="callable"):
        FunctionEngine("not a function")  # type: ignore[arg-type]


def test_exceptions_from_the_function_propagate() -> None:
    def fail(request: Request) -> str:
        raise RuntimeError("rule engine down")

    with pytest.raises(RuntimeError, match="rule engine down"):
        FunctionEngine(fail).complete(req())


@pytest.mark.parametrize("texts", ['{"x": 1}', b"abc", [1], ("a", 2), None, 5])
def test_a_response_whose_texts_are_not_strings_is_an_engine_answer_error(texts: object) -> None:
    """Before: Response(texts="abc") was three completions, "a", "b" and "c"."""
    from hoare.engines import EngineAnswerError

    engine = FunctionEngine(lambda request: Response(texts=texts))  # type: ignore[arg-type]
    with pytest.raises(EngineAnswerError, match="texts"):
        engine.complete(Request(messages=(Message("user", "hi"),)))
    with pytest.raises(EngineAnswerError, match="texts"):
        asyncio.run(engine.acomplete(Request(messages=(Message("user", "hi"),))))


def test_a_response_with_a_list_of_texts_is_taken_as_a_tuple() -> None:
    engine = FunctionEngine(lambda request: Response(texts=["a", "b"]))  # type: ignore[arg-type]
    assert engine.complete(Request(messages=(Message("user", "hi"),))).texts == ("a", "b")
