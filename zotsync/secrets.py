"""Secrets seen in this run, and their removal from anything zotsync prints or logs.

Whatever reaches the terminal or a log file passes through `redact` (the CLI's last line, the
`RedactFilter` on every handler), so an API key that slipped into an exception or a log record (belt and
braces: none should) is still not shown — in any of the forms a key takes in text: as typed, escaped
(`\\n`-style, as in a repr or JSON), quoted by repr, or percent-encoded in a URL.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from urllib.parse import quote, quote_plus, unquote, urlsplit

from .text import one_line

MASK = "***"
EXCERPT = 80  # characters of a server's body shown in a message at most
# A Zotero API key is 24 letters and digits. A shorter value is not a real key, and masking it would eat
# ordinary words: ZOTERO_API_KEY=key or =wrong would turn "the API key is wrong" into nonsense.
MIN_SECRET = 8

_lock = threading.Lock()
_forms: list[str] = []  # every form of every secret, longest first (a longer form may hold a shorter one)


def register(secret: str | None, shortest: int = MIN_SECRET) -> None:
    """Remember a secret for this run: from now on `redact` masks it, with and without its surrounding
    whitespace, in every form it can be printed in. A value shorter than `shortest` is no real key
    and is not masked."""
    if not secret or len(secret.strip()) < max(shortest, 1):
        return
    found = set()
    for value in {secret, secret.strip()}:  # neither is empty: the stripped one has MIN_SECRET characters
        escaped = value.encode("unicode_escape").decode("ascii")
        found |= {
            value,
            escaped,
            repr(value)[1:-1],
            repr(value.encode("utf-8"))[2:-1],
            json.dumps(value)[1:-1],
            quote(value, safe=""),
            quote_plus(value, safe=""),
        }
    with _lock:
        _forms[:] = sorted(set(_forms) | found, key=len, reverse=True)


def register_url(url: str | None) -> None:
    """Remember the password of a URL's `user:password@` (a `source.base_url` behind basic auth): as
    written and percent-decoded, the `user:password` pair whatever its length (its colon keeps it from
    matching ordinary words), and the pair as an `Authorization: Basic` header carries it."""
    try:
        parts = urlsplit(url or "")
        user, password = parts.username, parts.password
    except ValueError:  # not a URL (a bad port): the config check says so, and nothing is in it to mask
        return
    if not password:
        return
    for name, secret in {(user or "", password), (unquote(user or ""), unquote(password))}:
        register(secret)
        register(f"{name}:{secret}", shortest=1)
        register(base64.b64encode(f"{name}:{secret}".encode()).decode("ascii"))


def redact(text: str) -> str:
    for form in _forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """A short one-line excerpt of untrusted text (a server's error body), secrets masked before the cut
    so that a cut cannot leave part of a key that no longer matches the mask."""
    masked = redact(text)
    line = " ".join("".join(c if c.isprintable() else " " for c in masked).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


class RedactFilter(logging.Filter):
    """Masks secrets in a record's final text; add it to every handler that writes somewhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = redact(one_line(record.getMessage()))  # one line, no terminal control in it
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.msg, record.args = message, ()
        return True
