"""Engine configuration at construction, and secrets as configured.

A base URL no HTTP client can use (another scheme, no host, a port out of range, not a
URL at all) is an ``EngineConfigError`` when the engine is built, from the argument
or from ``OPENAI_BASE_URL``, never a connection failure retried with backoff. An API
key is masked in every spelling it can take in text (as configured, stripped of
surrounding whitespace, URL-quoted, escaped by ``repr``/JSON) and sent stripped.
Every exception class of ``hoare.engines`` survives a pickle round trip.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import pickle
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, error

from hoare.engines import Message, OpenAIEngine, Options, Request, TransportRetry
from hoare.engines.openai_config import EngineConfigError
from hoare.engines.redaction import MASK, Redactor
from hoare.errors import HoareError


def req() -> Request:
    return Request(messages=(Message("user", "hi"),))


# -- base URLs --------------------------------------------------------------------------------

BAD_URLS = [
    "not a url", "ftp://example.com/v1", "http://127.0.0.1:99999/v1", "http://:8000/v1",
    "http:///v1", "127.0.0.1:8000/v1", "localhost", "file:///etc/passwd", "http://[::1/v1",
    "http://127.0.0.1:0/v1", "http://u:pw@host:70000/v1", "https://host:-1/v1",
    " http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1\n", "http://ho st/v1",
    "javascript:alert(1)", "//host/v1", "http://host:port/v1",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_base_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(EngineConfigError) as raised:
        OpenAIEngine("m", base_url=url, api_key="k")
    assert "base_url" in str(raised.value)
    assert isinstance(raised.value, HoareError)


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_openai_base_url_is_a_configuration_error(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(EngineConfigError, match="OPENAI_BASE_URL"):
        OpenAIEngine("m", api_key="k")


@given(st.text(alphabet=st.characters(max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
               max_size=40))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_as_base_url_is_accepted_only_if_usable(text: str) -> None:
    """Whatever the text, construction either refuses it with EngineConfigError or keeps
    an http(s) URL with a host and a valid port; nothing else escapes."""
    import urllib.parse

    try:
        engine = OpenAIEngine("m", base_url=text or "x", api_key="k")
    except EngineConfigError:
        return
    parts = urllib.parse.urlsplit(engine.base_url)
    assert parts.scheme.lower() in ("http", "https")
    assert parts.hostname
    assert parts.port is None or 1 <= parts.port <= 65535


def test_the_password_of_a_bad_url_is_not_quoted() -> None:
    with pytest.raises(EngineConfigError) as raised:
        OpenAIEngine("m", base_url="ftp://user:hunter2-secret@host/v1", api_key="k")
    assert "hunter2-secret" not in str(raised.value)


def test_good_urls_still_work() -> None:
    for url in ("http://127.0.0.1:8000/v1", "https://api.example.com/v1", "HTTP://host/v1",
                "http://[::1]:8080/v1", "http://user:pw@host:1/v1", "https://host:65535"):
        OpenAIEngine("m", base_url=url, api_key="k")


def test_a_bad_url_is_not_retried_with_backoff() -> None:
    """Before: ftp:// was a ConnectionFailed after max_retries sends and their waits."""
    sleeps: list[float] = []
    with pytest.raises(EngineConfigError):
        engine = OpenAIEngine("m", base_url="ftp://127.0.0.1:1/v1", api_key="k",
                              transport=TransportRetry(max_retries=3, sleep=sleeps.append))
        engine.complete(req())
    assert sleeps == []


# -- API keys ---------------------------------------------------------------------------------

WHITESPACE = st.sampled_from(["\n", "\r\n", " ", "\t", "  \n", "\n\n", "\x0b", "\x0c"])
KEYS = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=40)


def _echo_all_spellings(key: str) -> str:
    return (f"raw {key} repr {key!r} json {json.dumps(key)} bytes "
            f"{key.encode()!r} header {('Bearer ' + key).encode()!r} double {repr(key)!r}")


@given(key=KEYS, before=WHITESPACE, after=WHITESPACE)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
def test_a_key_with_surrounding_whitespace_is_never_quoted(
        key: str, before: str, after: str, caplog: pytest.LogCaptureFixture) -> None:
    """Before: a key read with its newline failed as an illegal header value, retried as a
    connection error, and the violation and the default log quoted it escaped."""
    configured = before.lstrip("\n\r") + "sk-" + key + after
    caplog.clear()
    with caplog.at_level(logging.DEBUG), OpenAIServer(
            [error(401, "invalid key: " + _echo_all_spellings(configured))]) as server:
        engine = server.engine(api_key=configured, max_retries=1)
        with pytest.raises(HoareError) as raised:
            engine.complete(req())
        shown = [str(raised.value), repr(raised.value), repr(engine),
                 *(r.getMessage() for r in caplog.records)]
        sent = server.received[0].headers["authorization"]
    assert sent == "Bearer sk-" + key  # sent stripped: a header cannot carry the newline
    for text in shown:
        assert "sk-" + key not in text, text
        assert key not in text, text
    assert MASK in str(raised.value)


@pytest.mark.parametrize("key", ["sk-abc\x00def-secret", "sk-abc\ndef-secret", "sk-é-secret-key"])
def test_a_key_no_header_can_carry_is_a_configuration_error(key: str) -> None:
    with pytest.raises(EngineConfigError) as raised:
        OpenAIEngine("m", base_url="http://127.0.0.1:1/v1", api_key=key)
    assert "secret" not in str(raised.value)


def test_a_key_from_the_environment_is_stripped_and_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-secret-42\n")
    with OpenAIServer([error(401, "bad key 'sk-from-env-secret-42\\n'")]) as server:
        engine = OpenAIEngine("test-model", base_url=server.url,
                              transport=TransportRetry(max_retries=0),
                              default_options=Options(timeout=5.0))
        with pytest.raises(HoareError) as raised:
            engine.complete(req())
        assert server.received[0].headers["authorization"] == "Bearer sk-from-env-secret-42"
    assert "sk-from-env-secret-42" not in str(raised.value)


@given(st.text(min_size=4, max_size=30), st.sampled_from(["", "\n", " ", "\t\n"]))
@settings(max_examples=200)
def test_redactor_masks_every_spelling(secret: str, pad: str) -> None:
    if not secret.strip() or len(secret.strip()) < 4:
        return
    configured = secret + pad
    redact = Redactor(configured)
    for text in (configured, secret.strip(), repr(configured), json.dumps(configured),
                 repr(configured.encode("utf-8", "surrogatepass")), repr(repr(configured))):
        assert not redact.leaks(redact(text)), text
        assert secret.strip() not in redact(text) or secret.strip() in MASK


# -- pickling ---------------------------------------------------------------------------------

def _engine_exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in ("base", "budget", "cache", "cache_files", "cache_format", "deadline",
                 "function", "openai_answer", "openai_config", "openai_engine",
                 "openai_request", "openai_responses", "openai_sending", "openai_stream",
                 "redaction", "transport"):
        module = importlib.import_module(f"hoare.engines.{name}")
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("hoare"):
                found[value.__qualname__] = value
    return sorted(found.values(), key=lambda c: c.__qualname__)


@pytest.mark.parametrize("cls", _engine_exception_classes(), ids=lambda c: c.__qualname__)
def test_every_engine_exception_survives_pickle(cls: type[BaseException]) -> None:
    from hoare.engines.transport import Failure, TransportError, transport_error

    if issubclass(cls, TransportError):
        kinds = {"RateLimited": "rate_limit", "EngineTimeout": "timeout",
                 "ConnectionFailed": "connection", "ServerError": "server",
                 "RequestRejected": "rejected"}
        failure = Failure(kinds.get(cls.__name__, "server"), "boom", 503, 1.0)  # type: ignore[arg-type]
        error: BaseException = cls("message é", failure=failure, attempts=3,  # type: ignore[call-arg]
                                   delays=(0.5, 1.0))
        if cls is TransportError:
            error = transport_error(failure, attempts=3, delays=(0.5, 1.0))
    else:
        error = cls("message é")
    error.unpicklable = lambda: None  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    if isinstance(error, TransportError):
        assert isinstance(copy, TransportError)
        assert (copy.attempts, copy.delays, copy.status, copy.kind) == (
            error.attempts, error.delays, error.status, error.kind)


# -- options --------------------------------------------------------------------------------

BAD_OPTIONS: list[dict[str, object]] = [
    {"timeout": float("nan")}, {"timeout": float("inf")}, {"timeout": -1.0}, {"timeout": 0},
    {"timeout": True}, {"timeout": "10"}, {"timeout": 10**30}, {"n": 0}, {"n": -2},
    {"n": 1.5}, {"n": True}, {"max_tokens": 0}, {"max_tokens": 2.0}, {"max_tokens": "5"},
    {"temperature": float("nan")}, {"temperature": "hot"}, {"seed": 1.5},
    {"top_logprobs": 21}, {"top_logprobs": -1}, {"logprobs": 1}, {"model": ""},
    {"model": 3}, {"extra_body": [("a", 1)]},
]


@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=repr)
def test_options_no_engine_can_use_are_refused_naming_the_field(bad: dict[str, object]) -> None:
    """Before: Options(timeout=nan) crashed a deadline with a raw ValueError at the call,
    timeout=inf with OverflowError; n=0 asked the server for nothing."""
    from hoare.engines.base import InvalidOptions
    from hoare.errors import UsageError

    with pytest.raises(InvalidOptions) as raised:
        Options(**bad)  # type: ignore[arg-type]
    name = next(iter(bad))
    assert f"{name}=" in str(raised.value)
    assert isinstance(raised.value, UsageError) and isinstance(raised.value, ValueError)


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10**8))
def test_any_timeout_is_usable_or_refused(timeout: float) -> None:
    from hoare.engines.base import InvalidOptions

    try:
        options = Options(timeout=timeout)
    except InvalidOptions:
        return
    assert options.timeout is not None and 0 < options.timeout <= 10**7
    import threading

    threading.Event().wait(min(options.timeout, 1e-6))  # a deadline can use it


@pytest.mark.parametrize("wrapper", ["budget", "cache"])
@pytest.mark.parametrize("not_an_engine", [None, "gpt-4o", 42, object(), {"complete": 1}],
                         ids=["None", "str", "int", "object", "dict"])
def test_a_wrapper_refuses_what_is_not_an_engine_at_construction(
        wrapper: str, not_an_engine: object, tmp_path: object) -> None:
    """Before: BudgetedEngine("gpt-4o", ...) was accepted and failed at the first call with
    an AttributeError; CachedEngine(42, path) likewise."""
    from hoare.engines import Budget, BudgetedEngine, CachedEngine

    if wrapper == "cache" and not_an_engine is None:
        return  # None is replay mode's "no engine" (tested in test_engines_cache.py)
    with pytest.raises(TypeError, match="engine"):
        if wrapper == "budget":
            BudgetedEngine(not_an_engine, Budget(max_requests=1))  # type: ignore[arg-type]
        else:
            CachedEngine(not_an_engine, f"{tmp_path}/c.json")  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [None, 5, {"max_requests": 1}, "Budget(1)"], ids=repr)
def test_a_budgeted_engine_refuses_what_is_not_a_budget(budget: object) -> None:
    from hoare.engines import BudgetedEngine, FunctionEngine

    with pytest.raises(TypeError, match="Budget"):
        BudgetedEngine(FunctionEngine(lambda r: "x"), budget)  # type: ignore[arg-type]
