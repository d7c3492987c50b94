"""A full web pull writes its item pages into the store as they arrive (issue 11 §6): the pages are in the
pull's transaction while later ones are still on the wire, the pull holds a few pages in memory whatever
the library's size, and a pull that fails or is interrupted half-way still leaves the store as it was.

Everything runs against the fake Zotero server on 127.0.0.1 (tests/zotero_server.py), which also says
when each request arrived.
"""

from __future__ import annotations

import _thread
import math
import threading
import time
import weakref
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from factories import USER_ID, Web, config_for, rows, write_web_config
from zotero_server import FakeLibrary, Fault, ZoteroServer, synthetic_library

from zotsync.app.pull import pull
from zotsync.errors import SourceError
from zotsync.model import Item
from zotsync.net import parallel
from zotsync.sources.web import WebSource
from zotsync.store import Store

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


class Asked(Recorder):
    """A sink that notes, for each page handed over, how many requests the pull had asked for and not
    yet handed over by then, the page in hand included (each request gets its Future when asked for)."""

    def __init__(self, server: ZoteroServer, futures: type[Any]) -> None:
        super().__init__(server)
        self.futures = futures
        self.outstanding: list[int] = []

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        # Less the first item page and the first collections page, asked for before the pages stream.
        self.outstanding.append(self.futures.made - 2 - len(self.adds))
        super().add(items, trust_versions)


def futures_whose_replies(arrived: bool) -> type[Future[Any]]:
    """Futures for the pull's requests whose reply, whenever the pull looks, has always `arrived` (it
    waits for it: a store slower than the server) or never has (a server slower than the store)."""

    class Looked(Future[Any]):
        made = 0

        def __init__(self) -> None:
            super().__init__()
            type(self).made += 1

        def done(self) -> bool:
            if arrived:
                self.exception()  # returns once the reply (or its failure) is in
            return arrived

    return Looked


@pytest.mark.parametrize("arrived", [True, False], ids=["slow-store", "slow-server"])
def test_requests_run_ahead_of_the_store_only_while_it_waits_for_them(
    zotero_api, monkeypatch: pytest.MonkeyPatch, arrived: bool
) -> None:
    """A store slower than the server (the desktop's local API next door) keeps one request out, the
    one it waits for, not the eight that would only make the threads contend; a store that finds no
    reply waiting asks for one more each time, up to two per connection, so that a slow server keeps
    every connection busy. The two extremes are set, not timed: the pull is told whether a reply has
    arrived when it looks."""
    futures = futures_whose_replies(arrived)
    monkeypatch.setattr(parallel, "Future", futures)
    server = synthetic_server(zotero_api, 2 * ITEMS)
    sink = Asked(server, futures)
    changes = WebSource(config_for(server)).changes(None, sink)
    assert changes is not None and changes.complete and sink.keys == set(server.library.items)
    assert len(sink.outstanding) == math.ceil(2 * ITEMS / 100)
    if arrived:
        assert set(sink.outstanding) == {1}, sink.outstanding
    else:
        # Each round of replies asks for one more (60 pages: enough rounds to reach the most, however
        # many replies each round brings), never more than two per connection, and the last ones drain.
        most = 2 * WebSource.CONCURRENCY
        steps = [
            after - before for before, after in zip(sink.outstanding, sink.outstanding[1:], strict=False)
        ]
        assert sink.outstanding[0] == 2 and max(steps) <= 1, sink.outstanding
        assert max(sink.outstanding) == most and sink.outstanding[-1] == 1, sink.outstanding


class TrackedItem(Item):
    """An Item a weak reference can follow, to count the items still alive."""

    __slots__ = ("__weakref__",)


class CountingLanding:
    """The store's own landing, noting before each page it takes how many items of the pull are still
    alive anywhere: the pages on the wire or waiting, the page in hand, and whatever kept one."""

    def __init__(self, landing: Any, alive: weakref.WeakSet[Item]) -> None:
        self.landing, self.alive = landing, alive
        self.counts: list[int] = []

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        self.counts.append(len(self.alive))
        self.landing.add(items, trust_versions)

    def start_over(self) -> None:
        self.landing.start_over()


@pytest.mark.parametrize("latency", [0.0, 0.02], ids=["fast-server", "slow-server"])
def test_the_pull_holds_a_few_pages_whatever_the_library_size(
    tmp_path: Path, zotero_api, monkeypatch: pytest.MonkeyPatch, latency: float
) -> None:
    """The items alive while a first pull writes are a few pages' worth, whatever the library's size and
    however fast the server and the machine are: each item is counted, not the memory timed (the old
    pull held every item until the end)."""
    alive: weakref.WeakSet[Item] = weakref.WeakSet()
    from_api = Item.from_api.__func__  # type: ignore[attr-defined]

    def tracked(obj: Any) -> Item:
        item = from_api(TrackedItem, obj)
        alive.add(item)
        return item

    monkeypatch.setattr(Item, "from_api", tracked)
    # What may hold a page, at most, when the store takes one: the requests still running (2 per
    # connection, but the one in hand), the pages taken earlier in the same round of replies, the page in
    # hand, the first page (which the pull keeps), and each connection's last reply: 5 per connection.
    bound = 5 * WebSource.CONCURRENCY * 100
    assert bound < ITEMS  # so that a pull holding every item fails
    for n_items in (ITEMS, 2 * ITEMS):
        server = synthetic_server(zotero_api, n_items)
        server.latency = latency
        with Store(tmp_path / f"store-{n_items}.sqlite") as store:
            with store.landing("test", rewrite=True) as landing:
                counting = CountingLanding(landing, alive)
                changes = WebSource(config_for(server)).changes(None, counting)
                assert changes is not None and changes.complete
                landing.finish(changes)
            assert len(store.item_versions()) == n_items
        assert len(counting.counts) == math.ceil(n_items / 100)
        assert max(counting.counts) <= bound, counting.counts


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
    monkeypatch.setattr(WebSource, "LIMITS", replace(WebSource.LIMITS, retry_wait=60.0))  # 60-120 s backoff
    server = synthetic_server(zotero_api, ITEMS)
    server.inject(Fault.status_code(503), Fault.status_code(403))
    before = set(threading.enumerate())
    started = time.monotonic()
    with pytest.raises(SourceError, match="HTTP 403"):
        WebSource(config_for(server)).changes(None, Recorder(server))
    assert time.monotonic() - started < WebSource.LIMITS.retry_wait  # it did not wait for the retry
    # The request waiting to retry gives up: its thread ends long before the retry was due, having sent
    # nothing more.
    for thread in set(threading.enumerate()) - before:
        if thread.name.startswith("zotsync-request-"):
            thread.join(timeout=WebSource.LIMITS.retry_wait / 2)
            assert not thread.is_alive(), thread.name
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
