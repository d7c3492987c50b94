"""zotsync/secrets.py: a registered secret is masked in every form it can be printed in, by `redact` and by
the logging filter every handler (terminal, --log-file) carries."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

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


# -- a password in source.base_url (basic auth in front of a mirror) -----------------------------------
PASSWORD = "pa:ss@w%rd-Qz7"  # percent-encoded in the URL; its `:`, `@` and `%` print differently encoded


@pytest.mark.parametrize("given_as", ["config", "ZOTERO_API_BASE"])
def test_a_password_in_the_base_url_is_masked_in_errors_and_the_log(
    tmp_path: Path, zotero_api, run, fake_time, monkeypatch, given_as: str
) -> None:
    from test_web_source import small_library, write_web_config

    library = small_library()
    library.public = True  # the key would not pass: basic auth takes the Authorization header
    server = zotero_api(library)
    address = server.url.removeprefix("http://")
    with_password = f"http://reader:{quote(PASSWORD, safe='')}@{address}"
    log = tmp_path / "zotsync.log"

    def pull(library_id: str) -> tuple[int, str]:
        if given_as == "config":
            config = write_web_config(tmp_path, with_password, api_key=None, library_id=library_id)
        else:
            config = write_web_config(tmp_path, "https://api.zotero.org", api_key=None, library_id=library_id)
            monkeypatch.setenv("ZOTERO_API_BASE", with_password)
        result = run("--config", str(config), "--log-file", str(log), "pull")
        return result.code, result.out + result.err

    code, shown = pull("1234567")
    assert code == 0, shown  # the password reaches the server: the mirror is read
    store = (tmp_path / "store.sqlite").read_bytes()
    code, not_found = pull("999")  # the 404 line names the server
    server.stop()
    unreachable_code, unreachable = pull("1234567")  # so does "cannot reach"
    assert (code, unreachable_code) == (1, 1)
    assert f"no library users/999 at http://***@{address}" in not_found
    assert f"cannot reach http://***@{address}" in unreachable
    written = shown + not_found + unreachable + log.read_text(encoding="utf-8")
    assert "ERROR HTTP 404" in written and "ERROR Zotero API: cannot reach" in written
    for form in (PASSWORD, quote(PASSWORD, safe=""), "w%rd-Qz7", "w%25rd-Qz7"):
        assert form not in written, form
        assert form.encode() not in store, form  # nor kept in the store's record of the source


def test_a_short_url_password_is_masked_with_its_user() -> None:
    from zotsync.secrets import register_url

    register_url("https://me:pw1@mirror.example/zotero")
    assert (
        redact("cannot reach https://me:pw1@mirror.example/zotero")
        == "cannot reach https://***@mirror.example/zotero"
    )
    assert redact("a pw1 on its own is no key") == "a pw1 on its own is no key"  # too short to mask alone
