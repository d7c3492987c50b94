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
import functools
import json
import logging
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import httpx2
from pyzotero import Zotero

from ..config import DEFAULT_DEADLINE, SourceConfig
from ..errors import SourceError
from ..gcpause import bulk_phase
from ..model import (
    Changes,
    Collection,
    FullText,
    InvalidObject,
    Item,
    library_url_of,
    may_hold_lone_surrogates,
    sane_version,
    without_lone_surrogates,
)
from ..net import Clock, HttpClient, Limits, Reply, RequestFailed, RequestPolicy, Transient, run_ahead
from ..net import progress as progress_bar
from ..net.transports import HttpxTransport
from ..secrets import excerpt, register, register_url
from .base import NoTextAccess, Sink, TextListing, warn_repaired

log = logging.getLogger("zotsync.web")

BATCH = 50  # the API's limit for itemKey / collectionKey
PAGE = 100  # the API's limit for `limit`

_Convert = Callable[[Mapping[str, Any]], Item | Collection]


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
    suspect: bool = False  # the body may hold lone surrogates (model.may_hold_lone_surrogates)

    @property
    def count(self) -> int:
        """How many objects the listing's page held (one model object each)."""
        return len(self.objects)


class WebSource:
    """A user or group library on api.zotero.org (or any server speaking its protocol), or, in local mode,
    the Zotero desktop's local API (http://localhost:23119/api/, Zotero 7+)."""

    # The Zotero API's rules (`net.Limits`); a test (or a patient user) may override them on the class.
    LIMITS = Limits()
    MAX_RESTARTS = 3  # when the library keeps changing under us
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
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.progress = progress
        self.local = config.local_api
        limits = self.LIMITS
        limits = replace(
            limits,
            retry_wait=limits.retry_wait if retry_wait is None else retry_wait,
            max_attempts=limits.max_attempts if max_attempts is None else max_attempts,
            timeout=limits.timeout if timeout is None else timeout,
        )
        self.concurrency = max(1, min(self.CONCURRENCY if concurrency is None else concurrency, 4))
        self.deadline = deadline
        self.policy = RequestPolicy(limits, clock)
        self._repaired: set[str] = set()  # keys of the objects whose text held lone surrogates, this pull
        self._lock = threading.Lock()
        self._library_url = ""  # the library's web page, as the first object fetched names it
        register(config.api_key)  # belt and braces: whatever this source logs is masked, CLI or not
        register_url(config.base_url)
        base_url = config.base_url.rstrip("/")
        client = httpx2.Client(
            # A proxy from the environment must not capture a loopback test server or mirror.
            trust_env=not _is_loopback(base_url),
            follow_redirects=True,
            timeout=limits.timeout,
            limits=httpx2.Limits(max_connections=self.concurrency),
        )
        self._http = HttpClient(HttpxTransport(client), self.policy)
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
    def requests(self) -> int:
        """HTTP requests sent, retries included: tests and the benchmark check budgets."""
        return self.policy.requests

    @requests.setter
    def requests(self, count: int) -> None:
        self.policy.requests = count

    @property
    def id(self) -> str:
        """Where the library comes from, as the store keeps it: never with a password of the URL's (a new
        password is the same library)."""
        kind = "local-api" if self.local else "web"
        return f"{kind}:{_without_credentials(self._base_url)}/{self._library}"

    @property
    def _library(self) -> str:
        return self._prefix.removeprefix("/api").lstrip("/")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> WebSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the sync algorithm ---------------------------------------------------------------------
    def changes(self, since: int | None, sink: Sink | None = None) -> Changes | None:
        """A full read hands its item pages to `sink` as they arrive (see `_full`); without one it
        returns them in `Changes.items` like every other read."""
        self.policy.start(self.deadline)
        if self.local:
            since = None  # the local API's `since` misses unsynced edits and it has no /deleted: read it all
        elif since is not None and sane_version(since) is None:
            log.warning("the store holds library version %s, which is no version: reading everything", since)
            since = None
        collected = _Collected()  # the items, for a caller that gave no sink
        self._repaired = set()
        try:
            with bulk_phase():
                changes = self._changes_since(since, collected if sink is None else sink)
        except RequestFailed as failure:
            raise self._failure(failure) from None
        warn_repaired(self._repaired)
        if sink is None and changes is not None and changes.complete:
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
                pause = self.policy.limits.retry_wait * 2**restart
                log.debug("%s; starting over in %.1f s", moved, pause)
                self.policy.pause(pause)
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
        if not items.notes and self._notes_hidden():
            log.warning(
                "the API key may not read notes, so the pull leaves this library's notes out and papers get "
                "no note pages from them: allow notes access for the key at https://www.zotero.org/settings/keys"
            )
        log.debug(
            "full read: %d items, %d collections at version %d",
            len(items.keys),
            len(collections),
            version,
        )
        example = first_items.objects[0] if first_items.objects else None
        return self._changes(version, (), collections, complete=True, example=example)

    def _notes_hidden(self) -> bool:
        """Whether the API key may not read the user library's notes: the API then leaves them out of
        every listing without a word. Asked (GET /keys/current, one request) only after a full read
        that brought no note; a library with notes needs no question. A failure means "not known"."""
        if self.local or not self.config.api_key or self.config.library_type != "user":
            return False  # a group's notes come with its library; no key, no question
        try:
            reply = self._get("/keys/current", {})
        except (SourceError, RequestFailed) as failure:
            log.debug("the API key's permissions are not known: %s", failure)
            return False
        access = reply.body.get("access") if isinstance(reply.body, dict) else None
        user = access.get("user") if isinstance(access, dict) else None
        # The API names only what a key may do: a key without notes access has no "notes" at all.
        return isinstance(user, dict) and user.get("library") is True and user.get("notes") is not True

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
        return [functools.partial(self._get, path, params(s), convert=convert) for s in starts]

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
                functools.partial(
                    self._get,
                    path,
                    {"since": since, **extra, "format": "json", "limit": PAGE, "start": s, **_STABLE_ORDER},
                    convert=convert,
                )
                for s in range(0, len(keys), PAGE)
            ]
        return [
            functools.partial(
                self._get,
                path,
                {key_param: ",".join(keys[i : i + BATCH]), **extra, "format": "json", "limit": BATCH},
                convert=convert,
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
            library_url="" if self.local else self._library_url,  # the local API's are no web pages
            # The local API's versions stay put on local edits until Zotero syncs: compare content.
            trust_versions=not self.local,
        )

    # -- the attachments' full text (Zotero's full-text index) -----------------------------------
    def text_listing(self, since: int | None) -> TextListing:
        """`GET /fulltext?since=`: the attachments whose text changed after library version `since` (all
        of them from 0), with their texts' versions. The local API's `since` is the synced version
        (unsynced texts would be missed): it is always asked from 0, and its listing is complete."""
        self.policy.start(self.deadline)
        start = 0 if self.local or since is None else since
        try:
            reply = self._http.get(
                self._base_url + f"{self._prefix}/fulltext",
                {"since": start},
                self._zot.default_headers() | {"Accept-Encoding": "gzip, deflate"},
                lambda answer: self._text_answer(answer, f"{self._prefix}/fulltext"),
                shown=f"{self._prefix}/fulltext",
            )
        except RequestFailed as failure:
            raise self._failure(failure) from None
        versions = _versions(reply.body, self.MAX_OBJECTS)
        return TextListing(
            {key: str(version) for key, version in versions.items()},
            complete=start == 0,
            # The local API's library version stays put while Zotero indexes PDFs unsynced: with none
            # to remember, every pull lists the texts again (a local request, and nothing is refetched).
            version=None if self.local else reply.version,
        )

    def fetch_texts(self, wanted: Mapping[str, str], each: Callable[[FullText], None]) -> None:
        """Each attachment's text (`GET /items/<key>/fulltext`), `concurrency` at a time through the
        request policy (Backoff, Retry-After, the body cap, the deadline), handed to `each` as it
        arrives; `wanted`: key → the stamp its listing gave. A 404 (no text after all) is a text of None."""
        calls = [functools.partial(self._fetch_text, key, stamp) for key, stamp in sorted(wanted.items())]
        try:
            with self._progress(len(calls), "Fetching the attachments' full text") as advance:
                run_ahead(
                    self.policy,
                    calls,
                    self.concurrency,
                    advance=advance,
                    each=lambda _index, text: each(text),
                )
        except RequestFailed as failure:
            raise self._failure(failure) from None

    def _fetch_text(self, key: str, stamp: str) -> FullText:
        path = f"{self._prefix}/items/{key}/fulltext"
        reply = self._http.get(
            self._base_url + path,
            {},
            self._zot.default_headers() | {"Accept-Encoding": "gzip, deflate"},
            lambda answer: self._text_answer(answer, path, missing_ok=True),
            shown=path,
        )
        return _full_text(key, stamp, reply.body)

    def _text_answer(self, reply: Reply, path: str, missing_ok: bool = False) -> _Reply:
        if reply.status in (401, 403) and not self.local:
            raise NoTextAccess(
                f"HTTP {reply.status} for the full text: the API key may not read this library's files and "
                "their text; the sync goes on without it (allow file access for the key at "
                "https://www.zotero.org/settings/keys, or set fulltext.enabled: false)"
            )
        if reply.status == 404 and missing_ok:
            return _Reply(404, None, None, None)
        return self._answer(reply, path, None)

    # -- running requests -----------------------------------------------------------------------
    def _run(
        self,
        calls: Sequence[Callable[[], _Reply]],
        advance: Callable[[int], None] | None = None,
        each: Callable[[int, _Reply], None] | None = None,
    ) -> list[_Reply]:
        """The calls at most `concurrency` at a time (`net.run_ahead`); a library that moved meanwhile
        lets the requests still running finish before the pull starts over."""
        return run_ahead(
            self.policy,
            calls,
            self.concurrency,
            size=_count,
            advance=advance,
            each=each,
            keep_running=(_LibraryMoved,),
        )

    def _get(
        self,
        path: str,
        params: Mapping[str, Any],
        if_modified_since: int | None = None,
        convert: _Convert | None = None,
    ) -> _Reply:
        """One GET with retries; a listing's objects are converted here, in the request thread, so that
        turning one page into model objects overlaps with waiting for the next, and its JSON is dropped."""
        headers = self._zot.default_headers() | {"Accept-Encoding": "gzip, deflate"}
        if if_modified_since is not None:
            headers["If-Modified-Since-Version"] = str(if_modified_since)
        reply = self._http.get(
            self._base_url + path,
            params,
            headers,
            lambda answer: self._answer(answer, path, if_modified_since),
            shown=path,
        )
        if convert is None:
            return reply
        objects, repaired = _converted(reply, convert)
        if not self._library_url and reply.body:
            self._library_url = library_url_of(reply.body[0])
        if repaired:
            with self._lock:
                self._repaired.update(repaired)
        return replace(reply, body=None, objects=objects)

    def _failure(self, failure: RequestFailed) -> SourceError:
        """A request that failed for good, in this source's words."""
        if failure.kind == "deadline":
            return SourceError(
                f"Zotero API: the pull did not finish within its deadline of {self.policy.deadline:g} s "
                "(sync.deadline); nothing was stored, try again later"
            )
        if failure.kind == "unreachable":
            if self.local:
                return SourceError(
                    f"Zotero is not running (nothing answers at {self._base_url}: {failure.reason}): start "
                    "Zotero 7 or later, or read its database instead (source.path: …/zotero.sqlite)"
                )
            return SourceError(
                f"Zotero API: cannot reach {self._base_url} ({failure.reason}) {failure.after}: check the "
                "network and source.base_url"
            )
        if failure.kind == "invalid":
            return SourceError(
                f"Zotero API: {failure.shown} could not be sent (an invalid request header; check "
                "source.api_key)"
            )
        return SourceError(f"Zotero API: {failure.reason}")

    def _answer(self, reply: Reply, path: str, if_modified_since: int | None) -> _Reply:
        """What a reply means in the Zotero API's protocol; raised errors are not retried, but a
        malformed JSON body is (`Transient`)."""
        status, headers = reply.status, reply.headers
        version = _version_header(headers)
        if status == 304 and if_modified_since is not None:
            return _Reply(status, version, None, None)
        if status in (401, 403):
            raise SourceError(self._forbidden(status))
        if status == 404:
            raise SourceError(self._not_found())
        if status != 200:
            text = excerpt(reply.body.decode("utf-8", "replace"))
            raise SourceError(
                f"HTTP {status} from the Zotero API for GET {path}" + (f": {text}" if text else "")
            )
        total = _total_header(headers, self.MAX_OBJECTS)
        try:
            body, suspect = _decoded(reply.body)
        except RecursionError:  # nesting deeper than any API object: not worth a retry
            raise SourceError(
                f"Zotero API: the response to GET {path} is nested too deeply to be read"
            ) from None
        except ValueError:
            raise Transient("a malformed JSON body") from None
        return _Reply(status, version, total, body, suspect=suspect)

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

    def _progress(self, total: int, label: str) -> contextlib.AbstractContextManager[Callable[[int], None]]:
        """A bar on stderr only when asked for (not -q), on a terminal, and for more than one page."""
        return progress_bar(total, label, self.progress, least=PAGE)


def _full_text(key: str, stamp: str, body: Any) -> FullText:
    """An attachment's text from its `/fulltext` answer (None: a 404, or no text in it)."""
    if not isinstance(body, dict) or not isinstance(body.get("content"), str):
        return FullText(key, stamp, None)

    def count(name: str) -> int | None:
        value = body.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return FullText(
        key,
        stamp,
        body["content"],
        count("indexedPages"),
        count("totalPages"),
        count("indexedChars"),
        count("totalChars"),
    )


def _count(reply: _Reply) -> int:
    return reply.count


_STABLE_ORDER = {"sort": "dateAdded", "direction": "asc"}  # new items land on the last page


def _item_page(start: int) -> dict[str, Any]:
    return {"includeTrashed": 1, "format": "json", "limit": PAGE, "start": start, **_STABLE_ORDER}


def _collection_page(start: int) -> dict[str, Any]:
    return {"format": "json", "limit": PAGE, "start": start}


@functools.cache
def _msgspec() -> tuple[Callable[[bytes], Any], type[Exception]]:
    """msgspec's decoder, imported when a page first needs it (up to 20 ms, which an unchanged sync's
    one 304 never needs)."""
    import msgspec

    return msgspec.json.Decoder().decode, msgspec.DecodeError


def _decoded(raw: bytes) -> tuple[Any, bool]:
    """A reply's JSON, and whether its text may hold lone surrogates. msgspec decodes the pages ~2 x
    faster than json (0.11 s of CPU instead of 0.25 s at 28k items) to the same objects; it refuses
    invalid UTF-8 and lone surrogates, so text it decodes needs no search for them. Whatever it refuses,
    json reads as before (a lone surrogate to repair) or refuses with json's own error."""
    decode, refused = _msgspec()
    try:
        return decode(raw), False
    except refused:
        return json.loads(raw), may_hold_lone_surrogates(raw)


def _pages(count: int) -> int:
    return max(1, math.ceil(count / PAGE))


def _converted(reply: _Reply, convert: _Convert) -> tuple[tuple[Any, ...], list[str]]:
    """A listing's model objects, and the keys of those whose text held lone surrogates."""
    if not isinstance(reply.body, list) or not all(isinstance(o, dict) for o in reply.body):
        raise SourceError("Zotero API: a listing is not a JSON array of objects")
    body, repaired = without_lone_surrogates(reply.body) if reply.suspect else (reply.body, [])
    try:
        return tuple(map(convert, body)), repaired
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
        self.notes = 0  # child and standalone notes among the items

    def take(self, reply: _Reply) -> tuple[Any, ...]:
        _check(self.version, reply)
        keys = [o.key for o in reply.objects]
        if len(set(keys)) < len(keys):
            # One query's page never holds a key twice, even while the library changes: the server
            # itself is wrong, and reading again would only fail the same way.
            twice = next(key for key, count in Counter(keys).items() if count > 1)
            kind = "collection" if isinstance(reply.objects[0], Collection) else "item"
            raise SourceError(
                f"Zotero API: one page of a listing holds the {kind} {twice} twice; the server is not "
                "serving its library correctly (a faulty mirror?), and reading again would not mend it"
            )
        newest = max((o.version for o in reply.objects), default=0)
        if newest > self.version and not self.local:
            raise _LibraryMoved(f"an object at version {newest} arrived in a pull of version {self.version}")
        self.newest = max(self.newest, newest)
        self.keys.update(o.key for o in reply.objects)
        self.notes += sum(getattr(o, "item_type", None) == "note" for o in reply.objects)
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


def _version_header(headers: Mapping[str, str]) -> int | None:
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


def _total_header(headers: Mapping[str, str], most: int) -> int | None:
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


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
