"""The ``OpenAIEngine``'s configuration: defaults, the options merge and the checks of
its server URL and API key.

Kept apart from the engine (and free of the ``openai`` client) so that a configuration
error (``EngineConfigError``) and the defaults can be named without paying for that
import. Secrets: a URL is shown with its user info masked and a key is never quoted.
"""

from __future__ import annotations

import re
import urllib.parse

from hoare.engines.base import Options
from hoare.errors import FatalEngineError

DEFAULT_TIMEOUT = 60.0
"""Seconds allowed for one whole send when no ``Options.timeout`` is set (the ``openai``
client's own default, 600 s, hides a dead server for ten minutes)."""

WATCHDOG_GRACE = 1.0  # seconds past the deadline before the watchdog ends a send

PLACEHOLDER_API_KEY = "sk-no-key-required"
"""Sent to a server given by ``base_url`` when no key is configured: local servers
(vLLM, llama.cpp, Ollama) ignore it, and the ``openai`` client insists on one."""


class EngineConfigError(FatalEngineError, ValueError):
    """The engine cannot be set up as asked (no model, no key); raised at construction."""



def _masked_url(url: str) -> str:
    """``url`` for an error message: its user info (a password) masked, escaped, cut short."""
    shown = re.sub(r"//[^/?#]*@", "//***@", url)
    shown = repr(shown if len(shown) <= 200 else shown[:200] + "…")
    return shown


def check_base_url(url: str, source: str) -> None:
    """Refuse a base URL no HTTP client can use (not a URL, another scheme, no host, a
    port out of range): a configuration error at construction, never a connection
    failure retried with backoff at the first call."""
    problem = ""
    if not isinstance(url, str):
        problem = f"expected a string, got {type(url).__name__}"
    elif url != url.strip() or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        problem = "it contains whitespace or control characters"
    else:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as error:
            problem = f"it is not a URL ({error})"
        else:
            if parts.scheme.lower() not in ("http", "https"):
                problem = (f"the scheme must be http or https, not {parts.scheme!r}"
                           if parts.scheme else "it has no scheme (http:// or https://)")
            elif not parts.hostname:
                problem = "it names no host"
            elif port is not None and not 1 <= port <= 65535:
                problem = f"port {port} is outside 1..65535"
    if problem:
        shown = _masked_url(url) if isinstance(url, str) else type(url).__name__
        raise EngineConfigError(f"OpenAIEngine: {source}={shown} is not a usable server URL: "
                                f"{problem}. Expected e.g. 'http://127.0.0.1:8000/v1'.")


def checked_api_key(key: str | None, source: str) -> str | None:
    """The key to send: the configured one without surrounding whitespace (a key read from
    a file keeps its newline, which no HTTP header may carry). A key with characters an
    HTTP header cannot carry is a configuration error; the message never quotes it."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise EngineConfigError(f"OpenAIEngine: {source} must be a string, got "
                                f"{type(key).__name__}")
    stripped = key.strip()
    if not stripped:
        return None
    bad = next((c for c in stripped if not 0x20 <= ord(c) < 0x7F), None)
    if bad is not None:
        raise EngineConfigError(f"OpenAIEngine: {source} holds a character an HTTP header "
                                f"cannot carry (U+{ord(bad):04X}); check how the key was "
                                "copied (the key is not shown).")
    return stripped


def merge_options(default: Options, given: Options) -> Options:
    """``given`` over ``default``, field by field (``None``/``n=1`` mean "not set")."""
    return Options(
        model=given.model if given.model is not None else default.model,
        temperature=given.temperature if given.temperature is not None else default.temperature,
        max_tokens=given.max_tokens if given.max_tokens is not None else default.max_tokens,
        n=given.n if given.n != 1 else default.n,
        seed=given.seed if given.seed is not None else default.seed,
        timeout=given.timeout if given.timeout is not None else default.timeout,
        extra_body={**(default.extra_body or {}), **(given.extra_body or {})} or None,
        logprobs=given.logprobs if given.logprobs is not None else default.logprobs,
        top_logprobs=(given.top_logprobs if given.top_logprobs is not None
                      else default.top_logprobs),
    )

