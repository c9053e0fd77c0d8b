"""Keep credentials out of reprs, logs and error messages.

A ``base_url`` may carry a password (``http://user:secret@host/v1``) and a server
may echo the API key in an error. ``split_credentials`` takes the user info out
of a URL (the engine sends it as HTTP basic auth instead, so no client log line
or exception ever sees it); a ``Redactor`` replaces every known secret, in any
of its URL encodings and escapings, as configured and stripped of surrounding
whitespace, by ``***`` in text the engine shows.
"""

from __future__ import annotations

import json
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


def _spellings(secret: str) -> set[str]:
    """The ways ``secret`` can appear in text: as is, URL-quoted, and escaped as ``repr``
    of a str or of its bytes and as JSON would (an exception quoting a header value
    ``b'Bearer key\\n'`` shows the key escaped), once or twice over."""
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    for _ in range(2):
        for form in list(forms):
            forms.add(repr(form)[1:-1])
            forms.add(json.dumps(form)[1:-1])
            forms.add(repr(form.encode("utf-8", "surrogatepass"))[2:-1])
    return {form for form in forms if form}


class Redactor:
    """Masks the given secrets (and their URL-quoted forms) in any text."""

    def __init__(self, *secrets: str | None) -> None:
        found: set[str] = set()
        for given in secrets:
            if not isinstance(given, str):
                continue
            for secret in {given, given.strip()}:
                if len(secret) >= _MIN_SECRET:
                    found.update(_spellings(secret))
        self._secrets = sorted(found, key=len, reverse=True)  # longest first

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def leaks(self, text: str) -> bool:
        return any(secret in text for secret in self._secrets)
