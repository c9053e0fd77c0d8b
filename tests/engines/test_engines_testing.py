"""The test engines of ``hoare.engines.testing``: scripted, dummy and failing."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from hoare.engines import Options
from hoare.engines.base import ONE_REQUEST, Message, Request, Response, Usage
from hoare.engines.testing import DummyEngine, FailingEngine, ScriptedEngine, as_json
from hoare.errors import EngineError, FatalEngineError, RetryableEngineError


def req(text: str = "hi", *, timeout: float | None = None) -> Request:
    return Request(messages=(Message("user", text),), options=Options(timeout=timeout))


class Point(BaseModel):
    x: int


# -- ScriptedEngine ---------------------------------------------------------------------------

def test_scripted_answers_in_order_and_records_every_request() -> None:
    engine = ScriptedEngine("one", {"a": 1}, [1, 2], Point(x=3))
    answers = [engine.complete(req(str(i))).text for i in range(4)]
    assert answers == ["one", '{"a": 1}', "[1, 2]", '{"x":3}']
    assert [r.messages[0].content for r in engine.requests] == ["0", "1", "2", "3"]
    assert engine.calls == 4 and engine.remaining == 0 and engine.exhausted == 0


def test_scripted_push_chains_and_a_response_is_returned_as_it_is() -> None:
    given = Response(("t",), ("length",), Usage(1, 5, 2), "m-1")
    engine = ScriptedEngine().push("a").push(given)
    assert engine.complete(req()).text == "a"
    assert engine.complete(req()) == given


def test_scripted_text_is_one_completion_of_one_request() -> None:
    response = ScriptedEngine("x").complete(req())
    assert response.texts == ("x",) and response.finish_reasons == ("stop",)
    assert response.usage == ONE_REQUEST and response.model == "function"
    assert ScriptedEngine("x", model="m").complete(req()).model == "m"


def test_scripted_exception_is_raised_in_its_turn() -> None:
    error = RetryableEngineError("flaky")
    engine = ScriptedEngine(error, "after")
    with pytest.raises(RetryableEngineError) as raised:
        engine.complete(req())
    assert raised.value is error
    assert engine.complete(req()).text == "after"


def test_scripted_empty_script_is_fatal_and_counted() -> None:
    engine = ScriptedEngine("only", name="my_engine")
    engine.complete(req())
    with pytest.raises(FatalEngineError, match=r"my_engine: no scripted answer left for "
                                               r"request 2 \(push more with my_engine.push"):
        engine.complete(req())
    assert engine.exhausted == 1 and engine.calls == 2


def test_scripted_async_shares_the_script() -> None:
    engine = ScriptedEngine("a", "b")

    async def both() -> list[str]:
        return [(await engine.acomplete(req())).text for _ in range(2)]

    assert asyncio.run(both()) == ["a", "b"]


def test_scripted_honours_the_request_timeout_as_function_engine_does() -> None:
    answer = ScriptedEngine("fast").complete(req(timeout=5.0))
    assert answer.text == "fast"


# -- DummyEngine ------------------------------------------------------------------------------

def test_dummy_gives_the_same_answer_every_time() -> None:
    engine = DummyEngine('{"n": 1}')
    assert [engine.complete(req()).text for _ in range(3)] == ['{"n": 1}'] * 3
    assert engine.calls == 3 and engine.model == "dummy"
    assert engine.complete(req()).usage == ONE_REQUEST


def test_dummy_returns_a_given_response_async_too() -> None:
    given = Response(("ok",), ("stop",), Usage(1, 10, 4), "m")
    engine = DummyEngine(given, model="m")
    assert engine.complete(req()) is given
    assert asyncio.run(engine.acomplete(req())) is given
    assert engine.calls == 2


def test_dummy_records_requests_from_many_threads() -> None:
    engine = DummyEngine("x")
    threads = [threading.Thread(target=lambda: [engine.complete(req()) for _ in range(50)])
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert engine.calls == 200 and len(engine.requests) == 200


# -- FailingEngine ----------------------------------------------------------------------------

def test_failing_raises_the_given_instance_every_time() -> None:
    error = FatalEngineError("down")
    engine = FailingEngine(error)
    for _ in range(2):
        with pytest.raises(FatalEngineError) as raised:
            engine.complete(req())
        assert raised.value is error
    assert engine.calls == 2


def test_failing_instantiates_a_class_with_a_message_naming_the_call() -> None:
    engine = FailingEngine(ValueError)
    with pytest.raises(ValueError, match="request 1 fails"):
        engine.complete(req())
    with pytest.raises(ValueError, match="request 2 fails"):
        asyncio.run(engine.acomplete(req()))


def test_failing_defaults_to_an_engine_error() -> None:
    with pytest.raises(EngineError):
        FailingEngine().complete(req())


# -- all three --------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [ScriptedEngine("a"), DummyEngine("a"), FailingEngine()],
                         ids=["scripted", "dummy", "failing"])
def test_each_is_an_engine_with_a_model_and_a_repr(
        engine: ScriptedEngine | DummyEngine | FailingEngine) -> None:
    assert callable(engine.complete) and callable(engine.acomplete)
    assert isinstance(engine.model, str) and engine.model
    assert type(engine).__name__ in repr(engine)
    assert engine.requests == [] and engine.calls == 0


def test_as_json_reads_models_and_plain_values() -> None:
    assert as_json(Point(x=1)) == '{"x":1}'
    assert as_json({"a": [1]}) == '{"a": [1]}'


def test_not_exported_by_hoare_engines() -> None:
    import hoare.engines

    for name in ("ScriptedEngine", "DummyEngine", "FailingEngine"):
        assert name not in hoare.engines.__all__


def test_the_pytest_plugin_re_exports_the_scripted_engine() -> None:
    from hoare import pytest_plugin

    assert pytest_plugin.ScriptedEngine is ScriptedEngine
