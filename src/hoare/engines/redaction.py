"""Keep credentials out of reprs, logs and error messages.

A ``base_url`` may carry a password (``http://user:secret@host/v1``) and a server
may echo the API key in an error. ``split_credentials`` takes the user info out
of a URL (the engine sends it as HTTP basic auth instead, so no client log line
or exception ever sees it); a ``Redactor`` replaces every known secret, in any
of its URL encodings, by ``***`` in text the engine shows.
"""

from __future__ import annotations

import urllib.parse

MASK = "***"
_MIN_SECRET = 4  # shorter strings are too common in ordinary text to mask


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user info, and ``(user, password)`` if it had any."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return clean, (user, password)


class Redactor:
    """Masks the given secrets (and their URL-quoted forms) in any text."""

    def __init__(self, *secrets: str | None) -> None:
        found: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                found.update({secret, urllib.parse.quote(secret, safe=""),
                              urllib.parse.quote_plus(secret)})
        self._secrets = sorted(found, key=len, reverse=True)  # longest first

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def leaks(self, text: str) -> bool:
        return any(secret in text for secret in self._secrets)
