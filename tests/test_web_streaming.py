"""A full web pull writes its item pages into the store as they arrive (issue 11 §6): the pages are in the
pull's transaction while later ones are still on the wire, the pull holds a few pages in memory whatever
the library's size, and a pull that fails or is interrupted half-way still leaves the store as it was.

Everything runs against the fake Zotero server on 127.0.0.1 (tests/zotero_server.py), which also says
when each request arrived.
"""

from __future__ import annotations

import _thread
import math
import time
import tracemalloc
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from test_web_source import USER_ID, Web, config_for, rows, write_web_config
from zotero_server import FakeLibrary, Fault, ZoteroServer, synthetic_library

from zotsync.errors import SourceError
from zotsync.model import Item
from zotsync.sources.web import WebSource
from zotsync.store import Store
from zotsync.sync import pull

ITEMS = 3_000  # 30 item pages: many more than the connections and the pages that may run ahead


class Recorder:
    """A sink (zotsync.sources.base.Sink) that notes, for each hand-over, how many items it brought and
    how many requests the server had received by then."""

    def __init__(self, server: ZoteroServer) -> None:
        self.server = server
        self.adds: list[tuple[int, int]] = []
        self.keys: set[str] = set()

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        batch = list(items)
        self.adds.append((len(batch), len(self.server.requests)))
        self.keys.update(item.key for item in batch)

    def start_over(self) -> None:
        self.adds.clear()
        self.keys.clear()


class SlowStore(Recorder):
    """A sink that takes longer to write a page than the server takes to answer."""

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        super().add(items, trust_versions)
        time.sleep(0.02)


def most_ahead(recorder: Recorder) -> int:
    """The most requests the server had received beyond the item pages handed over (the first listing
    of collections among them)."""
    return max(seen - handed for handed, (_, seen) in enumerate(recorder.adds, start=1))


def synthetic_server(zotero_api, n_items: int) -> ZoteroServer:
    return zotero_api(FakeLibrary.from_snapshot(synthetic_library(n_items, 20, library_id=USER_ID)))


def test_item_pages_reach_the_store_while_later_pages_are_still_being_asked_for(zotero_api) -> None:
    server = synthetic_server(zotero_api, ITEMS)
    recorder = Recorder(server)
    source = WebSource(config_for(server))
    changes = source.changes(None, recorder)
    assert changes is not None and changes.complete and changes.items == ()
    assert recorder.keys == set(server.library.items)  # every item, each page once
    pages = math.ceil(ITEMS / 100)
    assert len(recorder.adds) == pages and all(n <= 100 for n, _ in recorder.adds)
    # The budget is today's: one request per page and nothing else.
    assert source.requests == len(server.requests) == pages + 1
    # Most pages were handed over (written, when the sink is the store) before the last one was asked for.
    before_the_last = sum(n for n, seen in recorder.adds if seen < len(server.requests))
    assert before_the_last >= ITEMS // 2


def test_requests_run_ahead_of_the_store_only_while_it_waits_for_them(zotero_api) -> None:
    """A store slower than the server (the desktop's local API next door) keeps one or two requests
    ahead, not the eight that would only make the threads contend; a slow server keeps every connection
    busy."""
    fast_server = synthetic_server(zotero_api, ITEMS)
    slow_store = SlowStore(fast_server)
    WebSource(config_for(fast_server)).changes(None, slow_store)
    slow_server = synthetic_server(zotero_api, ITEMS)
    slow_server.latency = 0.02
    fast_store = Recorder(slow_server)
    WebSource(config_for(slow_server)).changes(None, fast_store)
    assert len(slow_store.adds) == len(fast_store.adds) == math.ceil(ITEMS / 100)
    assert most_ahead(slow_store) <= 4, slow_store.adds  # 7 when eight ran ahead from the start
    assert most_ahead(fast_store) >= WebSource.CONCURRENCY, fast_store.adds


def test_the_pull_holds_a_few_pages_whatever_the_library_size(tmp_path: Path, zotero_api) -> None:
    """Python's peak memory during a first pull barely grows when the library doubles (3,000 → 6,000
    items: +0–30%, the keys it keeps to check the listing and how many of the pages ahead are waiting at
    the peak; the old pull held every item until the end and grew about +90%)."""

    def peak(n_items: int) -> int:
        server = synthetic_server(zotero_api, n_items)
        server.latency = 0.02  # a round trip longer than a page takes to write: the window fills early
        with Store(tmp_path / f"warm-{n_items}.sqlite") as store:
            pull(WebSource(config_for(server)), store)  # fills the fake server's own caches first
        tracemalloc.start()
        try:
            with Store(tmp_path / f"store-{n_items}.sqlite") as store:
                pull(WebSource(config_for(server)), store)
                assert len(store.item_versions()) == n_items
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(ITEMS), peak(2 * ITEMS)
    assert large < 1.5 * small, (small, large)


@pytest.fixture
def synced(tmp_path: Path, zotero_api, run, fake_time) -> Web:
    """A project holding a pulled library of 30 item pages, and a change the next pull would bring."""
    server = synthetic_server(zotero_api, ITEMS)
    web = Web(server, tmp_path, write_web_config(tmp_path, server.url), run)
    assert web.pull().code == 0
    web.library.edit_item(sorted(web.library.items)[0], title="changed")
    web.server.reset()
    return web


def full_pull_fails_cleanly(web: Web, tmp_path: Path) -> str:
    """`pull --full` exits 1 with one line, and the store file and its rows are as before; the line."""
    before = (web.store_path.read_bytes(), rows(web.store_path, tmp_path))
    result = web.run("--config", str(web.config), "pull", "--full")
    assert result.code == 1 and len(result.err.splitlines()) == 1, result.err
    assert (web.store_path.read_bytes(), rows(web.store_path, tmp_path)) == before
    return result.err.strip()


def test_a_full_pull_refused_on_its_last_page_leaves_the_store_as_it_was(synced: Web, tmp_path: Path) -> None:
    # The first 30 requests (29 item pages and the collections) land; the last page answers 403, which
    # is not retried.
    requests = math.ceil(ITEMS / 100) + 1
    synced.server.inject(*[None] * (requests - 1), Fault.status_code(403))
    line = full_pull_fails_cleanly(synced, tmp_path)
    assert "HTTP 403 from the Zotero API" in line
    assert len(synced.server.requests) == requests


def test_a_malformed_object_on_a_late_page_leaves_the_store_as_it_was(synced: Web, tmp_path: Path) -> None:
    def break_every_object(library: FakeLibrary) -> None:  # as served from the 21st request on
        library._json.update((key, b'{"key": "%s", "version": 1}' % key.encode()) for key in library.items)

    synced.server.after_request(20, break_every_object)
    line = full_pull_fails_cleanly(synced, tmp_path)
    assert line.startswith("zotsync: error: Zotero API: item ") and "no 'data' object" in line


def test_ctrl_c_half_way_through_a_pull_leaves_the_store_as_it_was(synced: Web, tmp_path: Path) -> None:
    before = (synced.store_path.read_bytes(), rows(synced.store_path, tmp_path))
    synced.server.after_request(20, lambda _lib: _thread.interrupt_main())
    with (
        Store(synced.store_path) as store,
        WebSource(config_for(synced.server)) as source,
        pytest.raises(KeyboardInterrupt),
    ):
        pull(source, store, full=True)
    assert len(synced.server.requests) < math.ceil(ITEMS / 100) + 1  # it stopped half-way
    assert (synced.store_path.read_bytes(), rows(synced.store_path, tmp_path)) == before


def test_a_failed_pull_stops_the_requests_still_retrying_instead_of_waiting_for_them(
    zotero_api, monkeypatch
) -> None:
    """One of the first two requests is refused (403, which no retry mends) while the other waits out its
    backoff after a 503: the pull fails at once, and the waiting request gives up rather than retry."""
    monkeypatch.setattr(
        WebSource, "LIMITS", replace(WebSource.LIMITS, retry_wait=3.0)
    )  # the backoff before the 503's retry: 3-6 s
    server = synthetic_server(zotero_api, ITEMS)
    server.inject(Fault.status_code(503), Fault.status_code(403))
    started = time.monotonic()
    with pytest.raises(SourceError, match="HTTP 403"):
        WebSource(config_for(server)).changes(None, Recorder(server))
    assert time.monotonic() - started < 2
    time.sleep(4)  # past the earliest retry
    assert [r.status for r in server.requests] == [503, 403]


def test_a_request_of_a_failed_pull_stays_given_up_when_the_source_pulls_again(zotero_api) -> None:
    """The failed pull's request still waiting on the network must not come back to life (retry, send)
    because the same source started another pull meanwhile."""
    server = synthetic_server(zotero_api, 250)
    server.inject(Fault.delay(3), Fault.status_code(403))  # one first request hangs past the 1 s timeout
    source = WebSource(config_for(server), timeout=1.0, retry_wait=0.05)
    with pytest.raises(SourceError, match="HTTP 403"):
        source.changes(None, Recorder(server))
    assert source.changes(None, Recorder(server)) is not None
    sent = len(server.requests)
    time.sleep(2.5)  # the hanging request times out after 1 s; its retry would be sent by now
    assert server.requests[sent:] == []
