"""zotsync/secrets.py: a registered secret is masked in every form it can be printed in, by `redact` and by
the logging filter every handler (terminal, --log-file) carries."""

from __future__ import annotations

import json
import logging
import sys
from urllib.parse import quote, quote_plus

from zotsync.secrets import RedactFilter, excerpt, redact, register

# Characters that print differently when escaped, quoted or percent-encoded, unlike a real Zotero key.
ODD = "Od9K3y+w/th=odd&chars%ü"


def test_every_form_of_a_registered_secret_is_masked() -> None:
    register(f"  {ODD}\r\n")  # as read from a CRLF environment file
    forms = {
        "raw": ODD,
        "with its whitespace": f"  {ODD}\r\n",
        "escaped": f"  {ODD}\r\n".encode("unicode_escape").decode(),
        "repr": repr(f"Bearer {ODD}\n"),
        "repr of bytes": repr(f"Bearer {ODD}\n".encode()),
        "json": json.dumps({"key": ODD}),
        "percent-encoded": f"https://api.zotero.org/users/1/items?key={quote(ODD, safe='')}",
        "form-encoded": f"key={quote_plus(ODD)}",
    }
    for name, form in forms.items():
        masked = redact(f"Illegal header value {form} (attempt 2)")
        assert "Od9K3y" not in masked, name
        assert "***" in masked and masked.startswith("Illegal header value "), name


def test_the_log_filter_masks_arguments_and_tracebacks(caplog) -> None:
    register("L0gK3yL0gK3yL0gK3yL0gK3y")
    handler = logging.StreamHandler()
    handler.addFilter(RedactFilter())
    record = logging.LogRecord(
        "zotsync", logging.ERROR, __file__, 1, "sent %r", ("L0gK3yL0gK3yL0gK3yL0gK3y",), None
    )
    try:
        raise ValueError("header b'Bearer L0gK3yL0gK3yL0gK3yL0gK3y\\n'")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert handler.filter(record)
    text = logging.Formatter().format(record)
    assert "L0gK3y" not in text and "sent '***'" in text and "ValueError" in text


def test_an_excerpt_is_masked_before_it_is_cut_and_stays_on_one_line() -> None:
    register("Cu7K3yCu7K3yCu7K3yCu7K3y")
    body = "x" * 70 + "Cu7K3yCu7K3yCu7K3yCu7K3y\n\x1b[2Jforged line\u202e"
    shown = excerpt(body)
    assert "Cu7K3y" not in shown and "\n" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert len(shown) <= 80
