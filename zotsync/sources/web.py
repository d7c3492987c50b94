"""The Zotero Web API v3 as a source: version-based incremental sync at the protocol's floor.

The only module that imports pyzotero (and its HTTP client, httpx2). pyzotero holds the library, the
key and the HTTP client; the requests themselves go through `zot.client` with `zot.default_headers()`,
because pyzotero's own calls sleep and retry on their own, add parameters, and cannot send a
conditional request, which would break the request budget:

- unchanged library: 1 request (`If-Modified-Since-Version` → 304);
- k changed items: 1 (versions, conditional) + 1 (collection versions) + ⌈k/50⌉ itemKey batches, or
  ⌈k/100⌉ pages of `since=` when that is fewer, + changed collections likewise + 1 (`/deleted`);
- first or full sync: ⌈items/100⌉ + ⌈collections/100⌉ pages and nothing else.

Every response's `Last-Modified-Version` must equal the first one; if the library moves during a pull
the pull starts over (bounded), so the store only ever sees a consistent snapshot of one version.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import math
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from queue import SimpleQueue
from typing import Any
from urllib.parse import urlencode, urlsplit

import click
import httpx2
import tenacity
from pyzotero import Zotero

from ..config import DEFAULT_DEADLINE, SourceConfig
from ..errors import SourceError
from ..gcpause import bulk_phase
from ..model import Collection, InvalidObject, Item, sane_version
from ..secrets import excerpt, redact, register
from ..store import Changes
from .base import Sink

log = logging.getLogger("zotsync.web")

BATCH = 50  # the API's limit for itemKey / collectionKey
PAGE = 100  # the API's limit for `limit`

_Convert = Callable[[Mapping[str, Any]], Item | Collection]


class _Transient(Exception):
    """A failure worth retrying: 429, 5xx, a dropped connection, a timeout, a truncated body."""

    def __init__(self, reason: str, retry_after: float | None = None, unreachable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.unreachable = unreachable  # no connection could be made at all
        self.attempts = 1  # set by the retry policy as it goes


class _GivenUp(Exception):
    """The pull was given up while this request ran: it ends here (the caller has the failure that counts)."""


class _LibraryMoved(Exception):
    """The library changed during the run (`Last-Modified-Version` moved, or objects appeared or vanished
    between listing and fetching): what we hold may mix two versions."""


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    version: int | None  # Last-Modified-Version
    total: int | None  # Total-Results
    body: Any  # parsed JSON (None for a 304, and for a listing once converted: its JSON is dropped)
    objects: tuple[Any, ...] = ()  # a listing's objects as model objects, converted as the page arrived

    @property
    def count(self) -> int:
        """How many objects the listing's page held (one model object each)."""
        return len(self.objects)


_Job = tuple[Future[_Reply], Callable[[], _Reply]]  # a call `_run` hands a request thread, and its future


class WebSource:
    """A user or group library on api.zotero.org (or any server speaking its protocol), or, in local mode,
    the Zotero desktop's local API (http://localhost:23119/api/, Zotero 7+)."""

    # Defaults a test (or a patient user) may override per instance or on the class.
    MAX_ATTEMPTS = 5  # per request, including the first
    CONNECT_ATTEMPTS = 3  # while the host has never answered: an unreachable host is said so quickly
    RETRY_WAIT = 1.0  # base of the exponential backoff, seconds; also the jitter's range
    RETRY_WAIT_MAX = 60.0
    MAX_SERVER_WAIT = 300.0  # a server asking for a longer pause (Backoff, Retry-After) fails the run at once
    MAX_RESTARTS = 3  # when the library keeps changing under us
    TIMEOUT = 30.0  # for connecting and for each read
    REQUEST_DEADLINE = 120.0  # for one whole response, body included: a dripping body cannot stall a pull
    MAX_BODY = 64 * 2**20  # bytes of one decompressed response
    MAX_OBJECTS = 1_000_000  # of one listing (the largest real libraries hold ~100,000): bounds its pages
    CONCURRENCY = 4  # the API's documented maximum of concurrent requests

    def __init__(
        self,
        config: SourceConfig,
        progress: bool = False,
        *,
        retry_wait: float | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        self.config = config
        self.progress = progress
        self.local = config.local_api
        self.retry_wait = self.RETRY_WAIT if retry_wait is None else retry_wait
        self.max_attempts = self.MAX_ATTEMPTS if max_attempts is None else max_attempts
        self.concurrency = max(1, min(self.CONCURRENCY if concurrency is None else concurrency, 4))
        self.timeout = self.TIMEOUT if timeout is None else timeout
        self.deadline = deadline
        self.requests = 0  # HTTP requests sent, retries included: tests and the benchmark check budgets
        self._lock = threading.Lock()
        # Each request thread's `given_up`: an Event of the run of requests it serves (see `_run`).
        self._thread = threading.local()
        self._not_before = 0.0  # monotonic time before which no request may start (Backoff, Retry-After)
        self._ends = math.inf  # monotonic time by which the pull must be done
        self._answered = False  # whether the host ever answered: a host that never did is not retried long
        register(config.api_key)  # belt and braces: whatever this source logs is masked, CLI or not
        base_url = config.base_url.rstrip("/")
        client = httpx2.Client(
            # A proxy from the environment must not capture a loopback test server or mirror.
            trust_env=not _is_loopback(base_url),
            follow_redirects=True,
            timeout=self.timeout,
            limits=httpx2.Limits(max_connections=self.concurrency),
        )
        if self.local:
            # pyzotero's local=True: the API under /api, "My Library" as users/0, no key, read-only.
            self._zot = Zotero(0, "user", None, local=True, client=client)
            library = "users/0" if config.library_type == "user" else f"groups/{config.library_id}"
            self._prefix = f"/api/{library}"
        else:
            # An empty key reads a public library; pyzotero then sends no Authorization header.
            self._zot = Zotero(config.library_id, config.library_type, config.api_key or None, client=client)
            self._prefix = f"/{config.library_type}s/{config.library_id}"
        self._zot.endpoint = base_url
        self._base_url = base_url

    @property
    def id(self) -> str:
        kind = "local-api" if self.local else "web"
        return f"{kind}:{self._base_url}/{self._library}"

    @property
    def _library(self) -> str:
        return self._prefix.removeprefix("/api").lstrip("/")

    def close(self) -> None:
        client = self._zot.client
        if client is not None:
            client.close()

    def __enter__(self) -> WebSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the sync algorithm ---------------------------------------------------------------------
    def changes(self, since: int | None, sink: Sink | None = None) -> Changes | None:
        """A full read hands its item pages to `sink` as they arrive (see `_full`); without one it
        returns them in `Changes.items` like every other read."""
        self._ends = time.monotonic() + self.deadline
        if self.local:
            since = None  # the local API's `since` misses unsynced edits and it has no /deleted: read it all
        elif since is not None and sane_version(since) is None:
            log.warning("the store holds library version %s, which is no version: reading everything", since)
            since = None
        collected = _Collected() if sink is None else None
        with bulk_phase():
            changes = self._changes_since(since, sink or collected)
        if collected is not None and changes is not None and changes.complete:
            changes = replace(changes, items=tuple(collected.items.values()))
        return changes

    def _changes_since(self, since: int | None, sink: Sink) -> Changes | None:
        for restart in range(self.MAX_RESTARTS + 1):
            try:
                return self._full(sink) if since is None else self._incremental(since, sink)
            except _LibraryMoved as moved:
                sink.start_over()
                if restart == self.MAX_RESTARTS:
                    raise SourceError(
                        f"Zotero API: the library kept changing during the pull ({restart + 1} tries); "
                        "try again later"
                    ) from None
                pause = self.retry_wait * 2**restart
                log.debug("%s; starting over in %.1f s", moved, pause)
                self._pause(pause)
        raise AssertionError("unreachable")

    def _full(self, sink: Sink) -> Changes:
        """Every item (trash included) and collection, in pages of 100: the store drops the rest. Each
        item page goes to `sink` as it arrives, in this thread, while the next pages are on their way
        (the store writes it into the pull's transaction and the page's objects can go)."""
        items_path, collections_path = f"{self._prefix}/items", f"{self._prefix}/collections"
        first_items, first_collections = self._run(
            [
                lambda: self._get(items_path, _item_page(0), convert=Item.from_api),
                lambda: self._get(collections_path, _collection_page(0), convert=Collection.from_api),
            ]
        )
        version = self._version_of(first_items)
        items = _Arrivals(version, self.local)
        trusted = not self.local  # the local API's versions stay put on local edits: compare content
        collection_replies = [first_collections]
        # Total-Results tells how many pages follow, so they can all be asked for at once.
        collection_calls = self._page_calls(
            collections_path, _collection_page, first_collections, Collection.from_api
        )
        item_calls = self._page_calls(items_path, _item_page, first_items, Item.from_api)

        def arrived(index: int, reply: _Reply) -> None:
            if 0 < index <= len(collection_calls):
                collection_replies.append(reply)
            else:
                sink.add(items.take(reply), trusted)

        total = (first_items.total or 0) + (first_collections.total or 0)
        with self._progress(total, "Fetching the Zotero library") as advance:
            advance(first_collections.count)
            # The first item page goes through the same loop, so it is written while the next pages
            # are already on their way.
            self._run([lambda: first_items, *collection_calls, *item_calls], advance, arrived)
            # A server without Total-Results (some mirrors): page on until a short page.
            if first_items.total is None:
                for reply in self._follow(items_path, _item_page, first_items, Item.from_api):
                    sink.add(items.take(reply), trusted)
            if first_collections.total is None:
                collection_replies += self._follow(
                    collections_path, _collection_page, first_collections, Collection.from_api
                )
        items.close(count=first_items.total)
        collections = _objects(collection_replies, version, count=first_collections.total, local=self.local)
        if self.local and first_items.version is None:
            version = max(items.newest, *(c.version for c in collections), 0)
        log.debug(
            "full read: %d items, %d collections at version %d",
            len(items.keys),
            len(collections),
            version,
        )
        example = first_items.objects[0] if first_items.objects else None
        return self._changes(version, (), collections, complete=True, example=example)

    def _version_of(self, reply: _Reply) -> int:
        if reply.version is None:
            if self.local:
                return 0  # the local API need not say; the objects' own versions stand in
            raise SourceError("Zotero API: a response lacks the Last-Modified-Version header")
        return reply.version

    def _page_calls(
        self, path: str, params: Callable[[int], dict[str, Any]], first: _Reply, convert: _Convert
    ) -> list[Callable[[], _Reply]]:
        starts = range(PAGE, first.total or 0, PAGE)
        return [lambda s=s: self._get(path, params(s), convert=convert) for s in starts]

    def _follow(
        self, path: str, params: Callable[[int], dict[str, Any]], first: _Reply, convert: _Convert
    ) -> Iterator[_Reply]:
        last, start = first, PAGE
        while last.count >= PAGE:
            if start >= self.MAX_OBJECTS:
                raise SourceError(
                    f"Zotero API: GET {path} still returns full pages after {self.MAX_OBJECTS} objects, "
                    "more than a Zotero library holds, and no Total-Results; refusing to page on"
                )
            last = self._get(path, params(start), convert=convert)
            yield last
            start += PAGE

    def _incremental(self, since: int, sink: Sink) -> Changes | None:
        items_path, collections_path = f"{self._prefix}/items", f"{self._prefix}/collections"
        # One conditional request answers "anything new?" and, if so, lists the changed items.
        first = self._get(
            items_path,
            {"since": since, "format": "versions", "includeTrashed": 1},
            if_modified_since=since,
        )
        version = since if first.status == 304 and first.version is None else self._version_of(first)
        if version < since:
            # The library is older than the store (restored from a backup, or the store holds a bogus
            # version): an incremental read cannot say what changed, a full one can.
            log.warning(
                "the library is at version %d, older than the stored %d: reading everything", version, since
            )
            return self._full(sink)
        if first.status == 304:
            log.debug("library unchanged since version %d", since)
            return None
        item_versions = _versions(first.body, self.MAX_OBJECTS)
        with self._progress(len(item_versions), "Fetching changed Zotero items") as advance:
            collection_versions_reply, deleted_reply, *item_replies = self._run(
                [
                    lambda: self._get(collections_path, {"since": since, "format": "versions"}),
                    lambda: self._get(f"{self._prefix}/deleted", {"since": since}),
                    *self._fetch_calls(
                        items_path, item_versions, since, "itemKey", {"includeTrashed": 1}, Item.from_api
                    ),
                ],
                advance,
            )
        collection_versions = _versions(collection_versions_reply.body, self.MAX_OBJECTS)
        collection_replies = self._run(
            self._fetch_calls(
                collections_path, collection_versions, since, "collectionKey", {}, Collection.from_api
            )
        )
        for reply in (collection_versions_reply, deleted_reply, *item_replies, *collection_replies):
            _check(version, reply)
        items = _objects(item_replies, version, keys=item_versions)
        collections = _objects(collection_replies, version, keys=collection_versions)
        deleted_items, deleted_collections = _deleted(deleted_reply.body)
        log.debug(
            "since %d: %d items, %d collections changed; %d items, %d collections deleted; now version %d",
            since,
            len(items),
            len(collections),
            len(deleted_items),
            len(deleted_collections),
            version,
        )
        return self._changes(
            version,
            items,
            collections,
            deleted_items=deleted_items,
            deleted_collections=deleted_collections,
        )

    def _fetch_calls(
        self,
        path: str,
        versions: Mapping[str, int],
        since: int,
        key_param: str,
        extra: dict[str, Any],
        convert: _Convert,
    ) -> list[Callable[[], _Reply]]:
        """The changed objects, by key in batches of 50 or by `since=` in pages of 100, whichever is
        fewer requests (pages win from 51 objects on; for a handful, asking by key is exact)."""
        keys = sorted(versions)
        if not keys:
            return []
        if _pages(len(keys)) < math.ceil(len(keys) / BATCH):
            return [
                lambda s=s: self._get(
                    path,
                    {"since": since, **extra, "format": "json", "limit": PAGE, "start": s, **_STABLE_ORDER},
                    convert=convert,
                )
                for s in range(0, len(keys), PAGE)
            ]
        return [
            lambda chunk=keys[i : i + BATCH]: self._get(
                path, {key_param: ",".join(chunk), **extra, "format": "json", "limit": BATCH}, convert=convert
            )
            for i in range(0, len(keys), BATCH)
        ]

    def _changes(
        self,
        version: int,
        items: Sequence[Item],
        collections: Sequence[Collection],
        *,
        complete: bool = False,
        example: Item | None = None,
        deleted_items: frozenset[str] = frozenset(),
        deleted_collections: frozenset[str] = frozenset(),
    ) -> Changes:
        # The local API names "My Library" users/0; its objects (`example`: one of them) carry the
        # library's real id.
        library = (example or next(iter(items), None)) if self.local else None
        return Changes(
            library_version=version,
            items=tuple(items),
            collections=tuple(collections),
            deleted_items=deleted_items,
            deleted_collections=deleted_collections,
            complete=complete,
            library_type=library.library_type if library else self.config.library_type,
            library_id=library.library_id if library else self.config.library_id,
            # The local API's versions stay put on local edits until Zotero syncs: compare content.
            trust_versions=not self.local,
        )

    # -- running requests -----------------------------------------------------------------------
    def _run(
        self,
        calls: Sequence[Callable[[], _Reply]],
        advance: Callable[[int], None] | None = None,
        each: Callable[[int, _Reply], None] | None = None,
    ) -> list[_Reply]:
        """Run the calls at most `concurrency` at a time; the replies in call order, or, with `each`,
        handed to `each(index, reply)` in this thread as they arrive and not kept: then only a few calls
        run ahead of what `each` took, so memory holds a few pages whatever the library's size. The
        first failure (or one of `each`, or Ctrl-C) is raised at once, and the requests still running
        give up at their next step."""
        results: dict[int, _Reply] = {}
        take = each or results.__setitem__
        if len(calls) <= 1 or self.concurrency == 1:
            for index, call in enumerate(calls):
                reply = call()
                take(index, reply)
                if advance:
                    advance(reply.count)
            return [results[index] for index in sorted(results)]
        queue = iter(enumerate(calls))
        running: dict[Future[_Reply], int] = {}
        jobs: SimpleQueue[_Job | None] = SimpleQueue()
        # Daemon threads, not a ThreadPoolExecutor, which joins its threads at exit: a request stalled on
        # the network must not keep a failed or interrupted run alive for its read timeout.
        # Set when this run is given up (a failure, Ctrl-C): its requests still running stop at their next
        # step instead of retrying or sleeping on. One per run, so that a later pull never revives them.
        given_up = threading.Event()
        workers = [
            threading.Thread(
                target=self._work, args=(jobs, given_up), name=f"zotsync-request-{n}", daemon=True
            )
            for n in range(min(self.concurrency, len(calls)))
        ]
        for worker in workers:
            worker.start()
        # Requests ahead of what `each` took: one at first, one more each time `each` finds no reply
        # waiting, up to two per connection (then a reply waiting for `each` leaves no connection idle).
        # Against a server that answers faster than the store writes (the desktop's local API) a few
        # suffice, and more would only make the threads contend for the interpreter: 0.15 s of CPU at
        # 28k items. Against zotero.org all connections are busy within a few round trips.
        ahead, most = 1, 2 * self.concurrency

        def submit() -> None:
            while len(running) < ahead and (call := next(queue, None)):
                future: Future[_Reply] = Future()
                running[future] = call[0]
                jobs.put((future, call[1]))

        try:
            submit()
            while running:
                done = {future for future in running if future.done()}
                if not done:
                    if ahead < most:
                        ahead += 1
                        submit()
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=running.__getitem__):
                    index = running.pop(future)
                    take(index, future.result())
                    if advance:
                        advance(future.result().count)
                    submit()
        except _LibraryMoved:
            raise  # the pull starts over once the requests still running are done, as after the last page
        except BaseException:
            given_up.set()  # what still runs ends at its next step, and nothing waits for it
            raise
        finally:
            for _ in workers:
                jobs.put(None)
            if not given_up.is_set():
                for worker in workers:
                    worker.join()
        return [results[index] for index in sorted(results)]

    def _work(self, jobs: SimpleQueue[_Job | None], given_up: threading.Event) -> None:
        """A request thread of one run: each call it is given, until it is given None."""
        self._thread.given_up = given_up
        while (job := jobs.get()) is not None:
            future, call = job
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)

    def _given_up(self) -> threading.Event | None:
        """In a request thread, the Event set when its run is given up; None in any other thread."""
        return getattr(self._thread, "given_up", None)

    def _check_given_up(self) -> None:
        """In a request thread whose run was given up: end the request here."""
        given_up = self._given_up()
        if given_up is not None and given_up.is_set():
            raise _GivenUp()

    def _get(
        self,
        path: str,
        params: Mapping[str, Any],
        if_modified_since: int | None = None,
        convert: _Convert | None = None,
    ) -> _Reply:
        """One GET with retries; a listing's objects are converted here, in the worker thread, so that
        turning one page into model objects overlaps with waiting for the next, and its JSON is dropped."""
        retrying = tenacity.Retrying(
            stop=self._stop,
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(_Transient),
            sleep=self._pause,
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            reply = retrying(self._attempt, path, params, if_modified_since)
        except _Transient as exc:
            attempts = f"after {exc.attempts} attempts" if exc.attempts > 1 else "at the first attempt"
            if self._never_reached(exc):
                raise SourceError(self._unreachable(exc.reason, attempts)) from None
            raise SourceError(f"Zotero API: {exc.reason} for GET {path} {attempts}") from None
        if convert is None:
            return reply
        return replace(reply, body=None, objects=_converted(reply, convert))

    def _unreachable(self, reason: str, attempts: str) -> str:
        if self.local:
            return (
                f"Zotero is not running (nothing answers at {self._base_url}: {reason}): start Zotero 7 or "
                "later, or read its database instead (source.path: …/zotero.sqlite)"
            )
        return (
            f"Zotero API: cannot reach {self._base_url} ({reason}) {attempts}: check the network and "
            "source.base_url"
        )

    def _never_reached(self, exc: BaseException | None) -> bool:
        """A failure to connect to a host that has not answered once in this run: down or mistyped."""
        return isinstance(exc, _Transient) and exc.unreachable and not self._answered

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient):
            exc.attempts = state.attempt_number
            if self._never_reached(exc):
                return state.attempt_number >= min(self.CONNECT_ATTEMPTS, self.max_attempts)
        return state.attempt_number >= self.max_attempts

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it gave one, else exponential backoff with jitter (short while
        the host has never answered: it is likely down or mistyped, not busy)."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        base = self.retry_wait / 4 if self._never_reached(exc) else self.retry_wait
        backoff = tenacity.wait_exponential_jitter(multiplier=base, max=self.RETRY_WAIT_MAX, jitter=base)
        return float(backoff(state))

    def _pause(self, seconds: float) -> None:
        """Sleep, unless that would pass the pull's deadline: then fail now rather than later."""
        if time.monotonic() + seconds > self._ends:
            raise self._deadline_error()
        if seconds <= 0:
            return
        given_up = self._given_up()
        if given_up is None:
            time.sleep(seconds)  # Ctrl-C ends a sleep on every platform; on Windows, not a lock's wait
        elif given_up.wait(seconds):  # a request thread: its run may be given up meanwhile
            raise _GivenUp()

    def _deadline_error(self) -> SourceError:
        return SourceError(
            f"Zotero API: the pull did not finish within its deadline of {self.deadline:g} s "
            "(sync.deadline); nothing was stored, try again later"
        )

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        # Debug, not info: a failure must end in one line on stderr, and a success needs no commentary.
        log.debug(
            "Zotero API: %s; retrying in %.2f s (attempt %d of %d)",
            exc.reason if isinstance(exc, _Transient) else exc,
            pause,
            state.attempt_number + 1,
            self.max_attempts,
        )

    def _attempt(self, path: str, params: Mapping[str, Any], if_modified_since: int | None) -> _Reply:
        self._check_given_up()
        self._pace()
        started = time.monotonic()
        left = self._ends - started
        if left <= 0:
            raise self._deadline_error()
        ends = min(self._ends, started + self.REQUEST_DEADLINE)
        headers = self._zot.default_headers() | {"Accept-Encoding": "gzip, deflate"}
        if if_modified_since is not None:
            headers["If-Modified-Since-Version"] = str(if_modified_since)
        shown = f"{path}?{urlencode(params)}" if params else path  # never the headers: they hold the key
        with self._lock:
            self.requests += 1
        client = self._zot.client
        assert client is not None
        read = min(self.timeout, left)
        timeout = httpx2.Timeout(read, connect=min(read, 10.0))
        try:
            with client.stream(
                "GET", self._base_url + path, params=dict(params), headers=headers, timeout=timeout
            ) as response:
                self._answered = True
                return self._answer(response, path, shown, started, ends, if_modified_since)
        except httpx2.ConnectTimeout:
            log.debug("GET %s: connecting timed out", shown)
            raise _Transient("connecting timed out", unreachable=True) from None
        except httpx2.TimeoutException:
            log.debug("GET %s timed out", shown)
            raise _Transient("the request timed out") from None
        except httpx2.ConnectError as exc:
            log.debug("GET %s: cannot connect: %s", shown, _describe(exc))
            raise _Transient(f"ConnectError: {_describe(exc)}", unreachable=True) from None
        except httpx2.LocalProtocolError:
            # The request itself could not be sent, e.g. a header value h11 refuses. Its message quotes
            # the header, which may be the key: never show it.
            raise SourceError(
                f"Zotero API: GET {path} could not be sent (an invalid request header; check source.api_key)"
            ) from None
        except httpx2.TransportError as exc:
            # Refused, reset or dropped connections and truncated bodies (RemoteProtocolError).
            log.debug("GET %s failed: %s", shown, type(exc).__name__)
            raise _Transient(f"connection failed ({type(exc).__name__}: {_describe(exc)})") from None

    def _answer(
        self,
        response: httpx2.Response,
        path: str,
        shown: str,
        started: float,
        ends: float,
        if_modified_since: int | None,
    ) -> _Reply:
        status = response.status_code
        version = _version_header(response.headers)
        log.debug(
            "GET %s → %d, library version %s, %.0f ms",
            shown,
            status,
            version,
            (time.monotonic() - started) * 1000,
        )
        backoff = _wait_header(response.headers, "Backoff")
        if backoff:
            self._hold(backoff, "Backoff")  # the server is busy: slow down before the next request
        if status == 304 and if_modified_since is not None:
            return _Reply(status, version, None, None)
        if status != 200:
            # Read (a little of) an error's body too, so that the connection stays usable.
            body = self._read(response, path, ends, limit=64 * 1024, quiet=True)
        if status == 429 or status >= 500:
            retry_after = _wait_header(response.headers, "Retry-After")
            reason = f"HTTP {status}" + (f" {response.reason_phrase}" if response.reason_phrase else "")
            if retry_after is not None:
                self._hold(retry_after, "Retry-After")
            raise _Transient(reason, retry_after)
        if status in (401, 403):
            raise SourceError(self._forbidden(status))
        if status == 404:
            raise SourceError(self._not_found())
        if status != 200:
            text = excerpt(body.decode("utf-8", "replace"))
            raise SourceError(
                f"HTTP {status} from the Zotero API for GET {path}" + (f": {text}" if text else "")
            )
        total = _total_header(response.headers, self.MAX_OBJECTS)
        content = self._read(response, path, ends)
        try:
            body = json.loads(content)
        except RecursionError:  # nesting deeper than any API object: not worth a retry
            raise SourceError(
                f"Zotero API: the response to GET {path} is nested too deeply to be read"
            ) from None
        except ValueError:
            raise _Transient("a malformed JSON body") from None
        return _Reply(status, version, total, body)

    def _forbidden(self, status: int) -> str:
        if self.local:
            return (
                f"HTTP {status} from the Zotero desktop's local API at {self._base_url}: it is switched off; "
                'in Zotero, enable Settings → Advanced → "Allow other applications on this computer to '
                'communicate with Zotero"'
            )
        if not self.config.api_key:
            return (
                f"HTTP {status} and no API key set: export ZOTERO_API_KEY=…, or under cron set "
                "source.api_key in the config (a public library needs none)"
            )
        return f"HTTP {status} from the Zotero API: the API key is wrong or lacks access to {self._library}"

    def _not_found(self) -> str:
        if self.local:
            return (
                f"HTTP 404 from {self._base_url}{self._prefix}: no such library in this Zotero, or a Zotero "
                "without the local API (it came with Zotero 7)"
            )
        return (
            f"HTTP 404 from the Zotero API: no library {self._library} at {self._base_url} "
            "(check source.library_type and source.library_id)"
        )

    def _read(
        self, response: httpx2.Response, path: str, ends: float, limit: int | None = None, quiet: bool = False
    ) -> bytes:
        """The body, decompressed as it streams in: at most `MAX_BODY` bytes and until `ends` (a body that
        drips in, or expands a thousandfold, fails this request rather than the machine)."""
        limit = self.MAX_BODY if limit is None else limit
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            raise SourceError(
                f"Zotero API: GET {path} answered in an encoding zotsync did not ask for "
                f"({excerpt(encoding, 20)})"
            )
        inflater = _Inflater() if encoding not in ("identity", "") else None
        parts, size = [], 0
        try:
            for raw in response.iter_raw():
                self._check_given_up()
                now = time.monotonic()
                if now > self._ends:
                    raise self._deadline_error()
                if now > ends:
                    raise _Transient(f"the response took longer than {self.REQUEST_DEADLINE:g} s to arrive")
                data = inflater.feed(raw, limit - size) if inflater else raw
                size += len(data)
                if size > limit:
                    if quiet:
                        parts.append(data[: limit - size])
                        break
                    raise SourceError(
                        f"Zotero API: the response to GET {path} is larger than {limit // 2**20} MB "
                        "(decompressed); refusing it"
                    )
                parts.append(data)
        except zlib.error:
            raise _Transient("a malformed compressed body") from None
        return b"".join(parts)

    def _pace(self) -> None:
        with self._lock:
            pause = self._not_before - time.monotonic()
        if pause > 0:
            self._pause(pause)

    def _hold(self, seconds: float, header: str) -> None:
        """No request before `seconds` from now; a wait longer than we would ever sit through fails now,
        saying when to try again (a cron run that sleeps for a day keeps the lock for a day)."""
        if seconds > self.MAX_SERVER_WAIT:
            raise SourceError(_too_long(seconds, header, self.MAX_SERVER_WAIT))
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    @contextlib.contextmanager
    def _progress(self, total: int, label: str) -> Iterator[Callable[[int], None]]:
        """A bar on stderr only when asked for (not -q), on a terminal, and for more than one page."""
        if not (self.progress and total > PAGE and sys.stderr.isatty()):
            yield lambda _n: None
            return
        with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
            yield bar.update


_STABLE_ORDER = {"sort": "dateAdded", "direction": "asc"}  # new items land on the last page


def _item_page(start: int) -> dict[str, Any]:
    return {"includeTrashed": 1, "format": "json", "limit": PAGE, "start": start, **_STABLE_ORDER}


def _collection_page(start: int) -> dict[str, Any]:
    return {"format": "json", "limit": PAGE, "start": start}


def _pages(count: int) -> int:
    return max(1, math.ceil(count / PAGE))


def _converted(reply: _Reply, convert: _Convert) -> tuple[Any, ...]:
    if not isinstance(reply.body, list) or not all(isinstance(o, dict) for o in reply.body):
        raise SourceError("Zotero API: a listing is not a JSON array of objects")
    try:
        return tuple(map(convert, reply.body))
    except InvalidObject as exc:
        raise SourceError(f"Zotero API: {exc}") from None


def _check(version: int, reply: _Reply) -> None:
    if reply.version is not None and reply.version != version:
        raise _LibraryMoved(f"the library moved from version {version} to {reply.version} during the pull")


def _versions(body: Any, most: int) -> dict[str, int]:
    if not isinstance(body, dict):
        raise SourceError("Zotero API: a format=versions response is not a JSON object")
    if len(body) > most:
        raise SourceError(f"Zotero API: a format=versions response lists more than {most} objects")
    versions = {str(key): sane_version(value) for key, value in body.items()}
    if None in versions.values():
        raise SourceError(
            "Zotero API: a format=versions response holds a version that is not an integer from 0 to 2^53"
        )
    return versions  # type: ignore[return-value]


def _deleted(body: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The keys of a /deleted response: lists of object keys, or the pull fails naming the field."""
    if not isinstance(body, dict):
        raise SourceError("Zotero API: a /deleted response is not a JSON object")
    keys = []
    for kind in ("items", "collections"):
        value = body.get(kind, [])
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise SourceError(f"Zotero API: the '{kind}' of a /deleted response is not a list of keys")
        keys.append(frozenset(value))
    return keys[0], keys[1]


def _objects(
    replies: Sequence[_Reply],
    version: int,
    keys: Mapping[str, int] | None = None,
    count: int | None = None,
    local: bool = False,
) -> list[Any]:
    """The replies' model objects, checked to form one consistent snapshot (see `_Arrivals`)."""
    arrivals = _Arrivals(version, local)
    objects = list({o.key: o for r in replies for o in arrivals.take(r)}.values())
    arrivals.close(keys, count)
    return objects


class _Arrivals:
    """A listing's objects checked page by page as they arrive, so that they need not be kept to be
    checked: every page of the library version and nothing newer; then (`close`) exactly the keys, or
    the count, the listing promised."""

    def __init__(self, version: int, local: bool) -> None:
        self.version = version
        self.local = local  # the local API's version header, if any, is only informative
        self.keys: set[str] = set()
        self.newest = 0

    def take(self, reply: _Reply) -> tuple[Any, ...]:
        _check(self.version, reply)
        newest = max((o.version for o in reply.objects), default=0)
        if newest > self.version and not self.local:
            raise _LibraryMoved(f"an object at version {newest} arrived in a pull of version {self.version}")
        self.newest = max(self.newest, newest)
        self.keys.update(o.key for o in reply.objects)
        return reply.objects

    def close(self, keys: Mapping[str, int] | None = None, count: int | None = None) -> None:
        if keys is not None and self.keys != set(keys):
            raise _LibraryMoved(f"objects appeared or vanished while fetching version {self.version}")
        if count is not None and len(self.keys) != count:
            raise _LibraryMoved(f"the object count changed while fetching version {self.version}")


class _Collected:
    """The sink of a caller that gave none: the items, kept (the last copy of a key wins)."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        self.items.update((item.key, item) for item in items)

    def start_over(self) -> None:
        self.items.clear()


def _version_header(headers: httpx2.Headers) -> int | None:
    """Last-Modified-Version, which is stored and sent back: a value that is no version (10^30, 1e400, -1)
    would freeze every later sync, so it fails the pull instead."""
    value = headers.get("Last-Modified-Version")
    if value is None:
        return None
    version = sane_version(value.strip())
    if version is None:
        raise SourceError(
            f"Zotero API: the server sent Last-Modified-Version {excerpt(value, 40)!r}, which is not a "
            "library version (an integer from 0 to 2^53); nothing was stored"
        )
    return version


def _total_header(headers: httpx2.Headers, most: int) -> int | None:
    value = headers.get("Total-Results")
    if value is None:
        return None
    total = sane_version(value.strip())
    if total is None or total > most:
        raise SourceError(
            f"Zotero API: the server reports Total-Results {excerpt(value, 40)!r}, not a count of up to "
            f"{most} objects (the largest Zotero libraries hold about 100,000); refusing to page through it"
        )
    return total


def _wait_header(headers: httpx2.Headers, name: str) -> float | None:
    """Backoff or Retry-After in seconds (Retry-After may be an HTTP date); None when absent or unreadable
    (then our own backoff applies). May be infinite: `Backoff: inf` is a wait without end."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return None if math.isnan(seconds) else max(0.0, seconds)


def _too_long(seconds: float, header: str, most: float) -> str:
    if seconds < 10 * 365 * 86400:
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        asked, retry = f"{seconds:.0f} s", f"after {until:%Y-%m-%d %H:%M} UTC"
    else:
        asked, retry = "without end", "later"
    return (
        f"Zotero API: the server asks to wait {asked} ({header}), longer than zotsync waits "
        f"({most:.0f} s); nothing was stored, try again {retry}"
    )


class _Inflater:
    """gzip or zlib data decompressed a piece at a time, never more than asked for (a bomb stays small)."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)  # | 32: either header

    def feed(self, data: bytes, room: int) -> bytes:
        """Up to `room` + 1 bytes out of `data` (one past `room` says the body is too large)."""
        out = []
        while data:
            chunk = self._z.decompress(data, max(room, 0) + 1)
            out.append(chunk)
            room -= len(chunk)
            if room < 0:
                break
            data = self._z.unconsumed_tail
            if self._z.eof:  # a gzip stream may hold several members, one after the other
                data, self._z = self._z.unused_data, zlib.decompressobj(zlib.MAX_WBITS | 32)
        return b"".join(out)


def _describe(exc: BaseException) -> str:
    """An exception's first line, secrets masked (a transport error may quote what was sent)."""
    text = str(exc).strip()
    return redact(text.splitlines()[0] if text else type(exc).__name__)


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
