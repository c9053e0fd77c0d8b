"""``Options(extra_body=...)``: server-specific fields reach the request body as they
are, merged over the engine's defaults, without subclassing the engine."""

from __future__ import annotations

from openai_server import OpenAIServer, completion

from hoare.engines import Message, Options, Request


def _request(**options: object) -> Request:
    return Request(messages=(Message("user", "hi"),), options=Options(**options))  # type: ignore[arg-type]


def test_extra_body_fields_reach_the_server_merged_over_the_defaults() -> None:
    with OpenAIServer([completion("a"), completion("b")]) as server:
        engine = server.engine(default_options=Options(
            extra_body={"grammar": "root ::= \"a\"", "cache_prompt": True}))
        engine.complete(_request())
        engine.complete(_request(extra_body={"cache_prompt": False, "top_k": 5}))
        first, second = server.bodies
    assert first["grammar"] == 'root ::= "a"' and first["cache_prompt"] is True
    assert second["grammar"] == 'root ::= "a"'  # the default stays
    assert second["cache_prompt"] is False and second["top_k"] == 5  # the request's wins
    assert "extra_body" not in first  # sent as body fields, not as a nested key


def test_no_extra_body_sends_nothing_extra() -> None:
    with OpenAIServer([completion("a")]) as server:
        server.engine().complete(_request())
        (body,) = server.bodies
    assert set(body) <= {"model", "messages", "response_format", "temperature", "seed",
                         "max_tokens", "max_completion_tokens", "n", "stream"}


def test_the_readme_server_recipes_build_engines() -> None:
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "engines.md"
    readme = page.read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "llama" in b]
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/engines.md", "exec"), namespace)  # builds engines, sends nothing
    from hoare.engines import OpenAIEngine

    for name, port in (("llama", 8080), ("ollama", 11434), ("vllm", 8000)):
        engine = namespace[name]
        assert isinstance(engine, OpenAIEngine)
        assert f"127.0.0.1:{port}" in str(engine.base_url)
