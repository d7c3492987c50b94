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
import json
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode, urlsplit

import click
import httpx2
import tenacity
from pyzotero import Zotero

from ..config import SourceConfig
from ..errors import SourceError
from ..model import Collection, Item
from ..store import Changes

log = logging.getLogger("zotsync.web")

BATCH = 50  # the API's limit for itemKey / collectionKey
PAGE = 100  # the API's limit for `limit`

_Convert = Callable[[Mapping[str, Any]], Item | Collection]


class _Transient(Exception):
    """A failure worth retrying: 429, 5xx, a dropped connection, a timeout, a truncated body."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class _LibraryMoved(Exception):
    """The library changed during the run (`Last-Modified-Version` moved, or objects appeared or vanished
    between listing and fetching): what we hold may mix two versions."""


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    version: int | None  # Last-Modified-Version
    total: int | None  # Total-Results
    body: Any  # parsed JSON (None for a 304)
    objects: tuple[Any, ...] = ()  # a listing's objects as model objects, converted as the page arrived


class WebSource:
    """A user or group library on api.zotero.org (or any server speaking its protocol)."""

    # Defaults a test (or a patient user) may override per instance or on the class.
    MAX_ATTEMPTS = 5  # per request, including the first
    RETRY_WAIT = 1.0  # base of the exponential backoff, seconds; also the jitter's range
    RETRY_WAIT_MAX = 60.0
    MAX_RETRY_AFTER = 300.0  # a server asking for a longer pause gets a clear error instead of a hang
    MAX_RESTARTS = 3  # when the library keeps changing under us
    TIMEOUT = 30.0
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
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.progress = progress
        self.retry_wait = self.RETRY_WAIT if retry_wait is None else retry_wait
        self.max_attempts = self.MAX_ATTEMPTS if max_attempts is None else max_attempts
        self.concurrency = max(1, min(self.CONCURRENCY if concurrency is None else concurrency, 4))
        self.requests = 0  # HTTP requests sent, retries included: tests and the benchmark check budgets
        self._sleep = sleep
        self._lock = threading.Lock()
        self._not_before = 0.0  # monotonic time before which no request may start (Backoff, Retry-After)
        base_url = config.base_url.rstrip("/")
        client = httpx2.Client(
            # A proxy from the environment must not capture a loopback test server or mirror.
            trust_env=not _is_loopback(base_url),
            follow_redirects=True,
            timeout=self.TIMEOUT if timeout is None else timeout,
            limits=httpx2.Limits(max_connections=self.concurrency),
        )
        # An empty key reads a public library; pyzotero then sends no Authorization header.
        self._zot = Zotero(config.library_id, config.library_type, config.api_key or None, client=client)
        self._zot.endpoint = base_url
        self._prefix = f"/{config.library_type}s/{config.library_id}"
        self._base_url = base_url

    @property
    def id(self) -> str:
        return f"web:{self._base_url}/{self.config.library_type}s/{self.config.library_id}"

    def close(self) -> None:
        client = self._zot.client
        if client is not None:
            client.close()

    def __enter__(self) -> WebSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the sync algorithm ---------------------------------------------------------------------
    def changes(self, since: int | None) -> Changes | None:
        for restart in range(self.MAX_RESTARTS + 1):
            try:
                return self._full() if since is None else self._incremental(since)
            except _LibraryMoved as moved:
                if restart == self.MAX_RESTARTS:
                    raise SourceError(
                        f"Zotero API: the library kept changing during the pull ({restart + 1} tries); "
                        "try again later"
                    ) from None
                pause = self.retry_wait * 2**restart
                log.debug("%s; starting over in %.1f s", moved, pause)
                self._sleep(pause)
        raise AssertionError("unreachable")

    def _full(self) -> Changes:
        """Every item (trash included) and collection, in pages of 100: the store drops the rest."""
        items_path, collections_path = f"{self._prefix}/items", f"{self._prefix}/collections"
        first_items, first_collections = self._run(
            [
                lambda: self._get(items_path, _item_page(0), convert=Item.from_api),
                lambda: self._get(collections_path, _collection_page(0), convert=Collection.from_api),
            ]
        )
        version = _version_of(first_items)
        # Total-Results tells how many pages follow, so they can all be asked for at once.
        item_calls = self._page_calls(items_path, _item_page, first_items, Item.from_api)
        collection_calls = self._page_calls(
            collections_path, _collection_page, first_collections, Collection.from_api
        )
        total = (first_items.total or 0) + (first_collections.total or 0)
        with self._progress(total, "Fetching the Zotero library") as advance:
            advance(_count(first_items) + _count(first_collections))
            replies = self._run([*item_calls, *collection_calls], advance)
            item_replies = [first_items, *replies[: len(item_calls)]]
            collection_replies = [first_collections, *replies[len(item_calls) :]]
            # A server without Total-Results (some mirrors): page on until a short page.
            if first_items.total is None:
                item_replies += self._follow(items_path, _item_page, first_items, Item.from_api)
            if first_collections.total is None:
                collection_replies += self._follow(
                    collections_path, _collection_page, first_collections, Collection.from_api
                )
        for reply in (*item_replies, *collection_replies):
            _check(version, reply)
        items = _objects(item_replies, version, count=first_items.total)
        collections = _objects(collection_replies, version, count=first_collections.total)
        log.debug("full read: %d items, %d collections at version %d", len(items), len(collections), version)
        return self._changes(version, items, collections, complete=True)

    def _page_calls(
        self, path: str, params: Callable[[int], dict[str, Any]], first: _Reply, convert: _Convert
    ) -> list[Callable[[], _Reply]]:
        starts = range(PAGE, first.total or 0, PAGE)
        return [lambda s=s: self._get(path, params(s), convert=convert) for s in starts]

    def _follow(
        self, path: str, params: Callable[[int], dict[str, Any]], first: _Reply, convert: _Convert
    ) -> list[_Reply]:
        replies, last, start = [], first, PAGE
        while _count(last) >= PAGE:
            last = self._get(path, params(start), convert=convert)
            replies.append(last)
            start += PAGE
        return replies

    def _incremental(self, since: int) -> Changes | None:
        items_path, collections_path = f"{self._prefix}/items", f"{self._prefix}/collections"
        # One conditional request answers "anything new?" and, if so, lists the changed items.
        first = self._get(
            items_path,
            {"since": since, "format": "versions", "includeTrashed": 1},
            if_modified_since=since,
        )
        if first.status == 304:
            log.debug("library unchanged since version %d", since)
            return None
        version = _version_of(first)
        item_versions = _versions(first.body)
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
        collection_versions = _versions(collection_versions_reply.body)
        collection_replies = self._run(
            self._fetch_calls(
                collections_path, collection_versions, since, "collectionKey", {}, Collection.from_api
            )
        )
        for reply in (collection_versions_reply, deleted_reply, *item_replies, *collection_replies):
            _check(version, reply)
        items = _objects(item_replies, version, keys=item_versions)
        collections = _objects(collection_replies, version, keys=collection_versions)
        deleted = deleted_reply.body
        if not isinstance(deleted, dict):
            raise SourceError("Zotero API: a /deleted response is not a JSON object")
        log.debug(
            "since %d: %d items, %d collections changed; %d items, %d collections deleted; now version %d",
            since,
            len(items),
            len(collections),
            len(deleted.get("items", ())),
            len(deleted.get("collections", ())),
            version,
        )
        return self._changes(
            version,
            items,
            collections,
            deleted_items=frozenset(map(str, deleted.get("items", ()))),
            deleted_collections=frozenset(map(str, deleted.get("collections", ()))),
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
        deleted_items: frozenset[str] = frozenset(),
        deleted_collections: frozenset[str] = frozenset(),
    ) -> Changes:
        return Changes(
            library_version=version,
            items=tuple(items),
            collections=tuple(collections),
            deleted_items=deleted_items,
            deleted_collections=deleted_collections,
            complete=complete,
            library_type=self.config.library_type,
            library_id=self.config.library_id,
        )

    # -- running requests -----------------------------------------------------------------------
    def _run(
        self, calls: Sequence[Callable[[], _Reply]], advance: Callable[[int], None] | None = None
    ) -> list[_Reply]:
        """Run the calls at most `concurrency` at a time; results in call order; the first failure
        cancels what has not started and is raised once the running ones finish."""
        if len(calls) <= 1 or self.concurrency == 1:
            replies = []
            for call in calls:
                replies.append(call())
                if advance:
                    advance(_count(replies[-1]))
            return replies
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(calls))) as pool:
            futures = [pool.submit(call) for call in calls]
            pending: set[Future[_Reply]] = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    failure = future.exception()
                    if failure is not None:
                        for other in pending:
                            other.cancel()
                        raise failure
                    if advance:
                        advance(_count(future.result()))
            return [future.result() for future in futures]

    def _get(
        self,
        path: str,
        params: Mapping[str, Any],
        if_modified_since: int | None = None,
        convert: _Convert | None = None,
    ) -> _Reply:
        """One GET with retries; a listing's objects are converted here, in the worker thread, so that
        turning one page into model objects overlaps with waiting for the next."""
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(_Transient),
            sleep=self._sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            reply = retrying(self._attempt, path, params, if_modified_since)
        except _Transient as exc:
            raise SourceError(
                f"Zotero API: {exc.reason} for GET {path} after {self.max_attempts} attempts"
            ) from None
        return replace(reply, objects=_converted(reply, convert)) if convert else reply

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it gave one, else exponential backoff with jitter."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        backoff = tenacity.wait_exponential_jitter(
            multiplier=self.retry_wait, max=self.RETRY_WAIT_MAX, jitter=self.retry_wait
        )
        return float(backoff(state))

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
        self._pace()
        headers = self._zot.default_headers()
        if if_modified_since is not None:
            headers["If-Modified-Since-Version"] = str(if_modified_since)
        shown = f"{path}?{urlencode(params)}" if params else path  # never the headers: they hold the key
        with self._lock:
            self.requests += 1
        started = time.monotonic()
        client = self._zot.client
        assert client is not None
        try:
            response = client.get(self._base_url + path, params=dict(params), headers=headers)
        except httpx2.TimeoutException:
            log.debug("GET %s timed out", shown)
            raise _Transient("the request timed out") from None
        except httpx2.TransportError as exc:
            # Refused, reset or dropped connections and truncated bodies (RemoteProtocolError).
            log.debug("GET %s failed: %s", shown, type(exc).__name__)
            raise _Transient(f"connection failed ({type(exc).__name__}: {_first_line(exc)})") from None
        status = response.status_code
        version = _int_header(response.headers, "Last-Modified-Version")
        log.debug(
            "GET %s → %d, library version %s, %.0f ms",
            shown,
            status,
            version,
            (time.monotonic() - started) * 1000,
        )
        backoff = _float_header(response.headers, "Backoff")
        if backoff:
            self._hold(backoff)  # the server is busy: slow down before the next request, whoever sends it
        if status == 304 and if_modified_since is not None:
            return _Reply(status, version, None, None)
        if status == 429 or status >= 500:
            retry_after = _float_header(response.headers, "Retry-After")
            reason = f"HTTP {status}" + (f" {response.reason_phrase}" if response.reason_phrase else "")
            if retry_after is not None:
                if retry_after > self.MAX_RETRY_AFTER:
                    raise SourceError(
                        f"Zotero API: {reason} for GET {path}, asked to wait {retry_after:.0f} s; "
                        "try again later"
                    )
                self._hold(retry_after)
            raise _Transient(reason, retry_after)
        if status in (401, 403):
            raise SourceError(
                f"HTTP {status} from the Zotero API: the API key is wrong or lacks access to "
                f"{self._prefix.lstrip('/')}"
            )
        if status == 404:
            raise SourceError(
                f"HTTP 404 from the Zotero API: no library {self._prefix.lstrip('/')} at {self._base_url} "
                "(check source.library_type and source.library_id)"
            )
        if status != 200:
            raise SourceError(
                f"HTTP {status} from the Zotero API for GET {path}: {_first_line(response.text)[:200]}"
            )
        try:
            body = json.loads(response.content)
        except ValueError:
            raise _Transient("a malformed JSON body") from None
        return _Reply(status, version, _int_header(response.headers, "Total-Results"), body)

    def _pace(self) -> None:
        with self._lock:
            pause = self._not_before - time.monotonic()
        if pause > 0:
            self._sleep(pause)

    def _hold(self, seconds: float) -> None:
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


def _count(reply: _Reply) -> int:
    return len(reply.body) if isinstance(reply.body, list) else 0


def _converted(reply: _Reply, convert: _Convert) -> tuple[Any, ...]:
    if not isinstance(reply.body, list) or not all(isinstance(o, dict) for o in reply.body):
        raise SourceError("Zotero API: a listing is not a JSON array of objects")
    try:
        return tuple(map(convert, reply.body))
    except (KeyError, TypeError, ValueError) as exc:
        raise SourceError(f"Zotero API: an object lacks a valid {exc} field") from None


def _version_of(reply: _Reply) -> int:
    if reply.version is None:
        raise SourceError("Zotero API: a response lacks the Last-Modified-Version header")
    return reply.version


def _check(version: int, reply: _Reply) -> None:
    if reply.version is not None and reply.version != version:
        raise _LibraryMoved(f"the library moved from version {version} to {reply.version} during the pull")


def _versions(body: Any) -> dict[str, int]:
    if not isinstance(body, dict):
        raise SourceError("Zotero API: a format=versions response is not a JSON object")
    try:
        return {str(key): int(value) for key, value in body.items()}
    except (TypeError, ValueError):
        raise SourceError("Zotero API: a format=versions response holds a non-numeric version") from None


def _objects(
    replies: Sequence[_Reply], version: int, keys: Mapping[str, int] | None = None, count: int | None = None
) -> list[Any]:
    """The replies' model objects, checked to form one consistent snapshot: nothing newer than the library
    version, and exactly the keys (or the count) the listing promised."""
    objects = list({o.key: o for r in replies for o in r.objects}.values())
    newest = max((o.version for o in objects), default=0)
    if newest > version:
        raise _LibraryMoved(f"an object at version {newest} arrived in a pull of version {version}")
    if keys is not None and {o.key for o in objects} != set(keys):
        raise _LibraryMoved(f"objects appeared or vanished while fetching version {version}")
    if count is not None and len(objects) != count:
        raise _LibraryMoved(f"the object count changed while fetching version {version}")
    return objects


def _int_header(headers: httpx2.Headers, name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float_header(headers: httpx2.Headers, name: str) -> float | None:
    value = headers.get(name)
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date in Retry-After: fall back to our own backoff


def _first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else ""


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
