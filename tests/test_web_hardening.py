"""The web source against a hostile or broken server (issue 7 §2, §3, §6; issue 10 §4): every run ends in
bounded time and memory with one line, the store exactly as before, and no key is ever printed.

Each test drives the real CLI (or the source) against the fake server on 127.0.0.1 in one of its hostile
modes: a body dripping in, a gzip bomb, an absurd Total-Results, endless full pages, a huge Backoff,
versions that are no versions, malformed objects, a server echoing the key.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ZOTERO_API_KEY
from factories import USER_ID, Web, by_key, closed_port, config_for, rows, small_library, write_web_config
from hypothesis import given, settings
from hypothesis import strategies as st
from zotero_server import Fault

from zotsync.errors import SourceError
from zotsync.sources.snapshot import SnapshotSource
from zotsync.sources.web import WebSource
from zotsync.store import Store


@pytest.fixture
def web(tmp_path: Path, zotero_api, run, fake_time) -> Web:
    server = zotero_api(small_library())
    return Web(server, tmp_path, write_web_config(tmp_path, server.url), run)


@pytest.fixture
def synced(web: Web) -> Web:
    """A synced project whose library has changed since: the next pull has work to do."""
    assert web.pull().code == 0
    web.library.edit_item("TRMSAAAA", title="changed")
    web.server.reset()
    return web


def fails_cleanly(web: Web, tmp_path: Path, *, within: float = 30.0, flags: tuple[str, ...] = ()) -> str:
    """Pull once: exit 1, one line on stderr, the store file byte-identical; the line is returned."""
    store_bytes = web.store_path.read_bytes() if web.store_path.exists() else None
    store_rows = rows(web.store_path, tmp_path) if web.store_path.exists() else None
    started = time.monotonic()
    result = web.run(*flags, "--config", str(web.config), "pull")
    elapsed = time.monotonic() - started
    assert result.code == 1, result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("zotsync: error: ")
    assert elapsed < within, f"took {elapsed:.1f} s"
    if store_bytes is None:
        assert not web.store_path.exists() or Store(web.store_path).library_version is None
    else:
        assert web.store_path.read_bytes() == store_bytes
        assert rows(web.store_path, tmp_path) == store_rows
    return lines[0]


def recovers(web: Web) -> None:
    """With the server healthy again, the next pull lands the library as it is."""
    web.server.reset()
    web.server.extra_headers.clear()
    web.server.endless = False
    result = web.run("-q", "--config", str(web.config), "pull")
    assert result.code == 0, result.err
    assert web.store_version() == web.library.version
    assert by_key(web.load())["TRMSAAAA"].title == web.library.items["TRMSAAAA"]["data"]["title"]


def set_deadline(web: Web, seconds: float) -> None:
    web.config.write_text(web.config.read_text("utf-8") + f"sync:\n  deadline: {seconds}\n", "utf-8")


# -- §3 an unattended run always ends --------------------------------------------------------------------
def test_a_dripping_body_fails_the_request_at_its_total_read_deadline(
    synced: Web, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One byte every 0.05 s never trips the per-read timeout; only a total deadline ends it.
    monkeypatch.setattr(WebSource, "LIMITS", replace(WebSource.LIMITS, request_deadline=0.4))
    synced.server.inject(*[Fault.drip(0.05, seconds=3)] * 5)
    line = fails_cleanly(synced, tmp_path, within=10)
    assert "the response took longer than 0.4 s to arrive" in line and "after 5 attempts" in line
    recovers(synced)


def test_sync_deadline_ends_a_pull_that_would_go_on(synced: Web, tmp_path: Path) -> None:
    set_deadline(synced, 1.5)
    synced.server.inject(*[Fault.drip(0.1, seconds=4)] * 20)
    line = fails_cleanly(synced, tmp_path, within=6)
    assert line == (
        "zotsync: error: Zotero API: the pull did not finish within its deadline of 1.5 s (sync.deadline); "
        "nothing was stored, try again later"
    )
    recovers(synced)


@pytest.mark.parametrize(
    ("fault", "asked"),
    [
        (Fault.backoff(100000), "100000 s (Backoff)"),
        (Fault.backoff("inf"), "without end (Backoff)"),
        (Fault.backoff("1e400"), "without end (Backoff)"),
        (Fault.status_code(429, retry_after=100000), "100000 s (Retry-After)"),
    ],
    ids=["backoff", "backoff-inf", "backoff-1e400", "retry-after"],
)
def test_a_server_asking_for_a_long_wait_fails_at_once_saying_when(
    synced: Web, tmp_path: Path, fault: Fault, asked: str
) -> None:
    synced.server.inject(fault)
    line = fails_cleanly(synced, tmp_path, within=5)
    assert f"the server asks to wait {asked}, longer than zotsync waits (300 s); nothing was stored" in line
    if "100000" in asked:
        assert "try again after 20" in line and line.endswith(" UTC")
    else:
        assert line.endswith("try again later")
    assert len(synced.server.requests) == 1
    recovers(synced)


def test_a_gzip_bomb_is_refused_without_eating_memory(synced: Web, tmp_path: Path) -> None:
    synced.server.inject(Fault.gzip_bomb())
    tracemalloc.start()
    try:
        line = fails_cleanly(synced, tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert line.endswith("is larger than 64 MB (decompressed); refusing it")
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MB"  # the cap plus its pieces, not 1 GiB
    recovers(synced)


def test_an_absurd_total_results_is_refused_before_paging(web: Web, tmp_path: Path) -> None:
    web.server.extra_headers["Total-Results"] = "100000000000"
    line = fails_cleanly(web, tmp_path)
    assert "Total-Results '100000000000', not a count of up to 1000000 objects" in line
    assert len(web.server.requests) <= 2  # the first page of each listing at most: nothing queued after
    web.server.extra_headers.clear()
    assert web.pull().code == 0


def test_endless_full_pages_stop_at_a_hard_bound(
    web: Web, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WebSource, "MAX_OBJECTS", 1000)  # the same bound as 1,000,000, sooner
    web.server.endless = True
    web.server.total_results = False
    line = fails_cleanly(web, tmp_path)
    assert f"GET /users/{USER_ID}/items still returns full pages after 1000 objects" in line
    assert len([r for r in web.server.requests if r.path.endswith("/items")]) == 10


# -- §2 secrets never printed ----------------------------------------------------------------------------
def test_an_error_body_is_masked_before_it_is_cut(synced: Web, tmp_path: Path) -> None:
    # The key sits where a 200-character cut used to leave only its first half, which no mask matched.
    echo = "Invalid request: " + "x" * 180 + ZOTERO_API_KEY + " was not accepted\nsecond line"
    synced.server.inject(Fault.error_body(400, echo))
    line = fails_cleanly(synced, tmp_path)
    assert line.startswith(f"zotsync: error: HTTP 400 from the Zotero API for GET /users/{USER_ID}/items: ")
    assert ZOTERO_API_KEY[:6] not in line and len(line) < 200 and "second line" not in line
    synced.server.inject(Fault.error_body(400, echo))
    verbose = synced.run("-v", "--config", str(synced.config), "pull")  # with the traceback and the log
    assert verbose.code == 1 and ZOTERO_API_KEY[:6] not in verbose.err


def test_a_key_with_a_trailing_newline_is_stripped_and_works(
    tmp_path: Path, zotero_api, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url, api_key=None)
    body = config.read_text("utf-8").replace("source:\n", f"source:\n  api_key: |\n    {ZOTERO_API_KEY}\n", 1)
    config.write_text(body, "utf-8")  # a YAML block scalar: the key ends in "\n"
    result = run("-v", "--config", str(config), "pull")
    assert result.code == 0, result.err
    assert {r.header("Authorization") for r in server.requests} == {f"Bearer {ZOTERO_API_KEY}"}
    # A CRLF EnvironmentFile leaves "\r" on the variable.
    monkeypatch.setenv("ZOTERO_API_KEY", f" {ZOTERO_API_KEY}\r")
    server.reset()
    result = run("-v", "--config", str(config), "pull", "--full")
    assert result.code == 0, result.err
    assert {r.header("Authorization") for r in server.requests} == {f"Bearer {ZOTERO_API_KEY}"}
    assert ZOTERO_API_KEY not in result.err + result.out


@pytest.mark.parametrize(
    "key", ["Tz8xQ4vN2m Lr7KpW3sYd9HcB", "Tz8xQ4vN2m\nLr7KpW3sYd9HcB", "Tz8xQ4vN2m\x1bLr7KpW"]
)
def test_a_key_with_inner_whitespace_or_controls_is_a_config_error_that_hides_it(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    config = write_web_config(tmp_path, "http://127.0.0.1:9")
    monkeypatch.setenv("ZOTERO_API_KEY", key)
    result = run("--config", str(config), "pull")
    assert result.code == 2
    [line] = result.err.splitlines()
    assert "the API key ('source.api_key' or ZOTERO_API_KEY) holds whitespace or control characters" in line
    verbose = run("-v", "--config", str(config), "pull")
    assert verbose.code == 2
    for text in (line, verbose.err):
        assert "Tz8xQ4" not in text and "Lr7Kp" not in text


def test_a_header_the_client_cannot_send_never_shows_the_key(
    zotero_api, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the CLI's redaction: a key that reaches the source unstripped fails once, key unshown
    (it used to print `Illegal header value b'Bearer <key>\\n'`, once per retry)."""
    server = zotero_api(small_library())
    key = "Hd7rK3yHd7rK3yHd7rK3yHd7"
    source = WebSource(config_for(server, key=key + "\n"), retry_wait=0.001)
    with caplog.at_level(logging.DEBUG, logger="zotsync"), pytest.raises(SourceError) as failure:
        source.changes(None)
    assert str(failure.value) in {
        f"Zotero API: GET /users/{USER_ID}/{listing} could not be sent (an invalid request header; "
        "check source.api_key)"
        for listing in ("items", "collections")
    }
    assert key not in caplog.text and "Bearer" not in caplog.text
    assert server.requests == []


# -- §6 the client does not trust the server blindly -----------------------------------------------------
@pytest.mark.parametrize("value", [str(10**30), str(2**70), "1e400", "-1", "12abc"])
def test_a_library_version_that_is_no_version_is_refused(synced: Web, tmp_path: Path, value: str) -> None:
    synced.server.extra_headers["Last-Modified-Version"] = value
    line = fails_cleanly(synced, tmp_path)
    assert f"the server sent Last-Modified-Version '{value}', which is not a library version" in line
    recovers(synced)
    # ...and the store did not freeze: a later edit still arrives.
    synced.library.edit_item("TRMSAAAA", title="edited again")
    recovers(synced)


def test_a_store_holding_a_bogus_version_recovers_with_a_full_read(synced: Web) -> None:
    with sqlite3.connect(synced.store_path) as db:  # what an older zotsync stored from a hostile reply
        db.execute("UPDATE sync_state SET value = ? WHERE name = 'library_version'", (str(10**30),))
    result = synced.pull()
    assert result.code == 0, result.err
    assert "reading everything" in result.err
    assert [r.params.get("format") for r in synced.server.requests] == ["json", "json"]  # a full read
    assert synced.store_version() == synced.library.version
    assert by_key(synced.load())["TRMSAAAA"].title == "changed"


def test_a_library_older_than_the_store_is_read_in_full(synced: Web) -> None:
    assert synced.pull().code == 0
    stored = synced.store_version()
    # The library is restored from an older backup: a lower version, one item gone without a trace.
    library = synced.library
    library.version = 3
    del library.items["NFLDAAAA"]
    for obj in [*library.items.values(), *library.collections.values()]:
        obj["version"] = obj["data"]["version"] = min(obj["version"], 3)
    library._json.clear()
    library.listings.clear()
    result = synced.pull()
    assert result.code == 0, result.err
    assert f"the library is at version 3, older than the stored {stored}: reading everything" in result.err
    assert synced.store_version() == 3
    assert "NFLDAAAA" not in by_key(synced.load())


def _break(obj: dict, how: str) -> None:
    if how == "no data":
        del obj["data"]
    elif how == "collections as a string":
        obj["data"]["collections"] = "CMPLAAAA"
    elif how == "creators as a dict":
        obj["data"]["creators"] = {"lastName": "Lattner"}
    elif how == "a tag without tag":
        obj["data"]["tags"] = [{"name": "compiler"}]
    elif how == "version 1e400":
        obj["data"]["version"] = float("inf")


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("no data", "item MLRAAAAA: no 'data' object"),
        ("collections as a string", "item MLRAAAAA: 'collections' is not a list of collection keys"),
        ("creators as a dict", "item MLRAAAAA: 'creators' is not a list"),
        ("a tag without tag", "item MLRAAAAA: a tag has no 'tag' string"),
        ("version 1e400", "item MLRAAAAA: 'version' is not an integer from 0 to 2^53"),
    ],
)
def test_a_malformed_object_is_one_line_naming_it_and_the_field(
    web: Web, tmp_path: Path, how: str, message: str
) -> None:
    broken = copy.deepcopy(web.library.items["MLRAAAAA"])
    _break(broken, how)
    # Served as the API would send it (the server's own state stays readable to the server).
    web.library._json["MLRAAAAA"] = json.dumps(broken).replace("Infinity", "1e400").encode()
    line = fails_cleanly(web, tmp_path)
    assert line == f"zotsync: error: Zotero API: {message}"
    # The same object in a snapshot file gets the same line (one conversion serves both sources).
    objects = [broken if o.get("key") == "MLRAAAAA" else o for o in web.library.snapshot()]
    snapshot = tmp_path / "broken.json"
    snapshot.write_text(json.dumps(objects).replace("Infinity", "1e400"), "utf-8")
    with pytest.raises(SourceError) as failure:
        SnapshotSource(snapshot).changes(None)
    assert str(failure.value) == f"{snapshot}: {message}"


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "deleted",
            b'{"items": "NFLDAAAA", "collections": []}',
            "the 'items' of a /deleted response is not a list",
        ),
        (
            "deleted",
            b'{"items": [], "collections": {"A": 1}}',
            "the 'collections' of a /deleted response is not",
        ),
        ("items", b"[" * 100_000 + b"]" * 100_000, "is nested too deeply to be read"),
    ],
    ids=["deleted-items", "deleted-collections", "deep-json"],
)
def test_a_malformed_response_is_one_line_naming_the_cause(
    synced: Web, tmp_path: Path, path: str, body: bytes, message: str
) -> None:
    synced.server.bodies[f"/users/{USER_ID}/{path}"] = body
    line = fails_cleanly(synced, tmp_path)
    assert message in line and "unexpected" not in line
    synced.server.bodies.clear()
    recovers(synced)


# -- issue 10 §4: errors that say what to do -------------------------------------------------------------
def test_403_with_no_key_set_says_so(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library())  # a private library
    result = run("--config", str(write_web_config(tmp_path, server.url, api_key=None)), "pull")
    assert result.code == 1
    assert result.err.splitlines() == [
        "zotsync: error: HTTP 403 and no API key set: export ZOTERO_API_KEY=…, or under cron set "
        "source.api_key in the config (a public library needs none)"
    ]


def test_an_unreachable_host_is_said_so_within_a_short_window(tmp_path: Path, run, fake_time) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    result = run("--config", str(write_web_config(tmp_path, url)), "pull")
    elapsed = sum(fake_time.waits)  # the backoffs between the attempts, in fake seconds
    assert result.code == 1
    [line] = result.err.splitlines()
    assert line.startswith(f"zotsync: error: Zotero API: cannot reach {url} (ConnectError: ")
    assert line.endswith("after 3 attempts: check the network and source.base_url")
    assert elapsed < 4, f"{elapsed:.1f} s"  # was 18 s of retries


def test_a_host_that_answered_once_keeps_the_full_retry_window(synced: Web) -> None:
    """Connection failures in the middle of a pull are retried as long as any other failure."""
    synced.server.inject(None, *[Fault.drop()] * 4)
    result = synced.run("-q", "--config", str(synced.config), "pull")
    assert result.code == 0, result.err


# -- issue 11 §6: a listing's JSON is dropped once its page is converted ---------------------------------
def test_a_converted_page_keeps_its_objects_not_its_json(zotero_api) -> None:
    from zotsync.model import Item
    from zotsync.sources.web import _item_page

    server = zotero_api(small_library())
    with WebSource(config_for(server)) as source:
        reply = source._get(f"/users/{USER_ID}/items", _item_page(0), convert=Item.from_api)
    assert reply.body is None  # the decoded JSON is garbage as soon as the page is converted
    assert reply.count == len(reply.objects) == len(server.library.items)
    assert {item.key for item in reply.objects} == set(server.library.items)


# -- the pages' decoder ------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json_values, st.booleans())
def test_a_page_decodes_to_what_json_reads_and_lone_surrogates_stay_suspect(value, ascii_only) -> None:
    """msgspec reads the pages where it can; the objects are json's, NaN and lone surrogates included
    (json reads those), and a page that may hold a lone surrogate is marked for repair as before."""
    from zotsync.model import may_hold_lone_surrogates
    from zotsync.sources.web import _decoded

    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    body, suspect = _decoded(raw)
    want = json.loads(raw)
    assert json.dumps(body) == json.dumps(want)  # NaN != NaN: compare the texts
    assert suspect == may_hold_lone_surrogates(raw) or not suspect
    if any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(want, ensure_ascii=False) if len(c) == 1):
        assert suspect


def test_a_malformed_page_is_still_json_s_error() -> None:
    from zotsync.sources.web import _decoded

    for raw in (b"[1] x", b"\xff", b"{"):
        with pytest.raises(ValueError):
            _decoded(raw)
