"""A real HTTP server on 127.0.0.1 speaking the read side of the Zotero Web API v3, for tests and bench/.

Its state is loaded from the snapshot format (a JSON array of API objects, as in seeds/), so one dataset
serves the snapshot source and the web source. Tests mutate it the way Zotero does (each write bumps the
library version and stamps the touched objects with it; permanent deletions go to `/deleted`), inject
faults for the next requests, and read `server.requests` to assert request counts.

    with ZoteroServer(FakeLibrary.from_snapshot(objects), keys={"KEY": None}) as server:
        server.url                      # http://127.0.0.1:<random port>
        server.library.edit_item("ABCD2345", title="New")
        server.inject(Fault.status(429, retry_after=0.2), None, Fault.drop())
        server.after_request(2, lambda library: library.trash_item("ABCD2345"))
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import random
import socket
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from served import Served

KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's object keys: 8 of these
DEFAULT_LIMIT = 25  # the API's default page size
MAX_LIMIT = 100
MAX_KEYS = 50  # itemKey / collectionKey
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def is_collection(obj: Mapping[str, Any]) -> bool:
    data = obj.get("data", obj)
    return "name" in data and "parentCollection" in data


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeLibrary:
    """One Zotero library: items (trashed ones carry `data.deleted = 1`), collections, the deletion log."""

    def __init__(
        self,
        library_type: str = "user",
        library_id: str = "1",
        name: str = "test library",
        objects: Iterable[Mapping[str, Any]] = (),
        public: bool = False,
    ) -> None:
        self.library_type = library_type
        self.library_id = str(library_id)
        self.name = name
        self.public = public
        self.version = 0
        self.items: dict[str, dict[str, Any]] = {}
        self.collections: dict[str, dict[str, Any]] = {}
        # Permanently deleted keys with the library version of their deletion.
        self.deleted: dict[str, dict[str, int]] = {"items": {}, "collections": {}, "searches": {}}
        # Zotero's full-text index: attachment key → (the text's version, its JSON body as served).
        self.fulltext: dict[str, tuple[int, bytes]] = {}
        self.lock = threading.RLock()
        self._json: dict[str, bytes] = {}  # serialised objects: the server stays fast for the benchmark
        self.listings: dict[tuple[Any, ...], list[dict[str, Any]]] = {}  # sorted query results, per version
        self._random = random.Random(0)
        for obj in objects:
            obj = copy.deepcopy(dict(obj))
            target = self.collections if is_collection(obj) else self.items
            target[obj["data"]["key"]] = obj
            self.version = max(self.version, int(obj.get("version", obj["data"].get("version", 0))))

    @classmethod
    def from_snapshot(
        cls, source: Path | Iterable[Mapping[str, Any]], public: bool = False, **overrides: Any
    ) -> FakeLibrary:
        """A library holding a snapshot file's (or list's) objects; its type and id come from the objects'
        `library` field unless given."""
        objects = json.loads(Path(source).read_text("utf-8")) if isinstance(source, Path) else list(source)
        library = next((o["library"] for o in objects if isinstance(o.get("library"), dict)), {})
        settings = {
            "library_type": str(library.get("type", "user")),
            "library_id": str(library.get("id", "1")),
            "name": str(library.get("name", "test library")),
            **overrides,
        }
        return cls(objects=objects, public=public, **settings)

    @property
    def prefix(self) -> str:
        return f"{self.library_type}s/{self.library_id}"

    def snapshot(self) -> list[dict[str, Any]]:
        """The library in the snapshot format (what `SnapshotSource` reads)."""
        with self.lock:
            return copy.deepcopy([*self.collections.values(), *self.items.values()])

    def json_of(self, obj: Mapping[str, Any]) -> bytes:
        key = obj["data"]["key"]
        cached = self._json.get(key)
        if cached is None:
            text = json.dumps(obj, ensure_ascii=False)
            try:
                cached = text.encode()
            except UnicodeEncodeError:  # a lone surrogate (half an emoji): escaped, as zotero.org sends it
                cached = json.dumps(obj).encode()
            self._json[key] = cached
        return cached

    # -- writes: each is one Zotero write, bumping the library version once -------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[int]:
        """One write: yields the new library version; stamp everything you touch with it."""
        with self.lock:
            self.version += 1
            try:
                yield self.version
            finally:
                self.listings.clear()

    def _stamp(self, obj: dict[str, Any], version: int) -> None:
        obj["version"] = obj["data"]["version"] = version
        if "dateModified" in obj["data"] or not is_collection(obj):
            obj["data"]["dateModified"] = _now()
        self._json.pop(obj["data"]["key"], None)

    def new_key(self) -> str:
        while True:
            key = "".join(self._random.choice(KEY_ALPHABET) for _ in range(8))
            if key not in self.items and key not in self.collections:
                return key

    def edit_item(self, key: str, **fields: Any) -> None:
        with self.write() as version:
            obj = self.items[key]
            obj["data"].update(fields)
            self._stamp(obj, version)

    def edit_item_locally(self, key: str, **fields: Any) -> None:
        """An edit made in Zotero desktop and not yet synced: the content changes, the version does not
        (what the desktop's local API then serves)."""
        with self.lock:
            self.items[key]["data"].update(fields)
            self._json.pop(key, None)
            self.listings.clear()

    def add_item(
        self,
        title: str = "",
        item_type: str = "journalArticle",
        *,
        key: str | None = None,
        parent: str | None = None,
        collections: Iterable[str] = (),
        **fields: Any,
    ) -> str:
        key = key or self.new_key()
        data: dict[str, Any] = {"key": key, "version": 0, "itemType": item_type}
        if parent:
            data["parentItem"] = parent
        if item_type == "note":
            data["note"] = fields.pop("note", f"<p>{title}</p>")
        else:
            data["title"] = title
        if item_type not in ("note", "attachment"):
            data["creators"] = fields.pop("creators", [])
        data.update(fields)
        data.setdefault("tags", [])
        if not parent:
            data["collections"] = list(collections)
        data.setdefault("relations", {})
        data.setdefault("dateAdded", _now())
        with self.write() as version:
            obj = self._item_object(data)
            self.items[key] = obj
            self.deleted["items"].pop(key, None)
            self._stamp(obj, version)
        return key

    def trash_item(self, key: str) -> None:
        with self.write() as version:
            obj = self.items[key]
            obj["data"]["deleted"] = 1
            self._stamp(obj, version)

    def restore_item(self, key: str) -> None:
        with self.write() as version:
            obj = self.items[key]
            obj["data"].pop("deleted", None)
            self._stamp(obj, version)

    def delete_item(self, key: str) -> None:
        """Delete permanently, children too, as Zotero does."""
        with self.write() as version:
            doomed = [key, *(k for k, o in self.items.items() if o["data"].get("parentItem") == key)]
            for gone in doomed:
                del self.items[gone]
                self.fulltext.pop(gone, None)
                self._json.pop(gone, None)
                self.deleted["items"][gone] = version

    def set_fulltext(self, key: str, content: str, **counts: int) -> None:
        """Zotero indexed (or re-indexed) attachment `key`'s text: one write, as a client's upload is.
        `counts`: indexedPages and totalPages, or indexedChars and totalChars."""
        with self.write() as version:
            body = {"content": content, **counts}
            self.fulltext[key] = (version, json.dumps(body, ensure_ascii=False).encode())

    def set_fulltexts(self, texts: Mapping[str, bytes]) -> None:
        """Many attachments' text bodies (JSON, as served) in one write: a benchmark's library."""
        with self.write() as version:
            self.fulltext.update({key: (version, body) for key, body in texts.items()})

    def move_item(self, key: str, collections: Iterable[str]) -> None:
        with self.write() as version:
            obj = self.items[key]
            obj["data"]["collections"] = list(collections)
            self._stamp(obj, version)

    def add_collection(self, name: str, parent: str | None = None, *, key: str | None = None) -> str:
        key = key or self.new_key()
        with self.write() as version:
            obj = self._collection_object(
                {"key": key, "version": 0, "name": name, "parentCollection": parent or False, "relations": {}}
            )
            self.collections[key] = obj
            self.deleted["collections"].pop(key, None)
            self._stamp(obj, version)
        return key

    def rename_collection(self, key: str, name: str) -> None:
        with self.write() as version:
            obj = self.collections[key]
            obj["data"]["name"] = name
            self._stamp(obj, version)

    def move_collection(self, key: str, parent: str | None) -> None:
        with self.write() as version:
            obj = self.collections[key]
            obj["data"]["parentCollection"] = parent or False
            self._stamp(obj, version)

    def delete_collection(
        self, key: str, *, touch_items: bool = True, log_subcollections: bool = True
    ) -> None:
        """Delete a collection with its subcollections. Zotero logs each of them in /deleted and updates
        the items that were in them (their `collections` change); the flags turn either off, to check
        that the client copes with the minimal report too."""
        with self.write() as version:
            doomed, frontier = {key}, [key]
            while frontier:
                children = [
                    k for k, c in self.collections.items() if c["data"].get("parentCollection") in frontier
                ]
                frontier = [k for k in children if k not in doomed]
                doomed.update(frontier)
            for gone in doomed:
                del self.collections[gone]
                self._json.pop(gone, None)
                if log_subcollections or gone == key:
                    self.deleted["collections"][gone] = version
            if touch_items:
                for obj in self.items.values():
                    members = obj["data"].get("collections") or []
                    if set(members) & doomed:
                        obj["data"]["collections"] = [c for c in members if c not in doomed]
                        self._stamp(obj, version)

    def touch(self) -> None:
        """A write that changes nothing we read (a setting, a saved search): only the version moves."""
        with self.write():
            pass

    # -- API objects ----------------------------------------------------------------------------
    def _library_json(self) -> dict[str, Any]:
        return {
            "type": self.library_type,
            "id": int(self.library_id) if self.library_id.isdigit() else self.library_id,
            "name": self.name,
            "links": {"alternate": {"href": f"https://www.zotero.org/{self.name}", "type": "text/html"}},
        }

    def _item_object(self, data: dict[str, Any]) -> dict[str, Any]:
        key = data["key"]
        links: dict[str, Any] = {
            "self": {"href": f"https://api.zotero.org/{self.prefix}/items/{key}", "type": "application/json"},
            "alternate": {"href": f"https://www.zotero.org/{self.name}/items/{key}", "type": "text/html"},
        }
        if data.get("parentItem"):
            links["up"] = {
                "href": f"https://api.zotero.org/{self.prefix}/items/{data['parentItem']}",
                "type": "application/json",
            }
        meta: dict[str, Any] = {}
        creators = data.get("creators") or []
        if creators:
            first = creators[0]
            meta["creatorSummary"] = first.get("lastName") or first.get("name", "")
        if data.get("date"):
            meta["parsedDate"] = str(data["date"])[:10]
        if not data.get("parentItem") and data.get("itemType") not in ("note", "attachment"):
            meta["numChildren"] = 0
        return {
            "key": key,
            "version": data["version"],
            "library": self._library_json(),
            "links": links,
            "meta": meta,
            "data": data,
        }

    def _collection_object(self, data: dict[str, Any]) -> dict[str, Any]:
        key = data["key"]
        return {
            "key": key,
            "version": data["version"],
            "library": self._library_json(),
            "links": {
                "self": {
                    "href": f"https://api.zotero.org/{self.prefix}/collections/{key}",
                    "type": "application/json",
                },
                "alternate": {
                    "href": f"https://www.zotero.org/{self.name}/collections/{key}",
                    "type": "text/html",
                },
            },
            "meta": {"numCollections": 0, "numItems": 0},
            "data": data,
        }


# -- faults -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Fault:
    """What goes wrong with one request. `None` in the queue lets a request through untouched."""

    kind: str  # status | drop | truncate | delay | headers | drip | gzip_bomb
    status: int = 503
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    interval: float = 0.0
    body: str = ""

    @classmethod
    def status_code(cls, status: int, retry_after: float | None = None) -> Fault:
        headers = {"Retry-After": _seconds(retry_after)} if retry_after is not None else {}
        return cls("status", status=status, headers=headers)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without answering."""
        return cls("drop")

    @classmethod
    def truncate(cls) -> Fault:
        """Answer normally but send half the body under a Content-Length for all of it, then hang up."""
        return cls("truncate")

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Answer normally after `seconds` (longer than the client's timeout, to time it out)."""
        return cls("delay", seconds=seconds)

    @classmethod
    def backoff(cls, seconds: float | str) -> Fault:
        """Answer normally with a `Backoff: seconds` header."""
        return cls.with_headers(Backoff=seconds if isinstance(seconds, str) else _seconds(seconds))

    @classmethod
    def with_headers(cls, **headers: str) -> Fault:
        """Answer normally, with these headers added or replaced (underscores become dashes)."""
        return cls("headers", headers={k.replace("_", "-"): v for k, v in headers.items()})

    @classmethod
    def error_body(cls, status: int, body: str) -> Fault:
        """Answer `status` with this text as the body (a server echoing what it was sent)."""
        return cls("status", status=status, body=body)

    @classmethod
    def drip(cls, interval: float, seconds: float = 5.0) -> Fault:
        """Answer normally, but send the body one byte every `interval` seconds; hang up after `seconds`
        (so the server stops by itself whatever the client does)."""
        return cls("drip", seconds=seconds, interval=interval)

    @classmethod
    def gzip_bomb(cls) -> Fault:
        """Answer 200 with about 1 MB of gzip that expands to 1 GiB."""
        return cls("gzip_bomb")


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@functools.cache
def gzip_bomb() -> bytes:
    """About 1 MB of gzip expanding to 1 GiB of zeros: eight members of 128 MiB each (a gzip stream may
    hold several), built once per process."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(2**20)
    member = b"".join([*(packer.compress(zeros) for _ in range(128)), packer.flush()])
    return member * 8


@dataclass(frozen=True, slots=True)
class Recorded:
    index: int  # 1-based, in arrival order
    at: float  # the server's clock on arrival
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    status: int = 0  # 0: no answer (dropped)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


# -- the server -------------------------------------------------------------------------------------
class _RealTime:
    monotonic = staticmethod(time.monotonic)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)


class ZoteroServer(Served):
    """`keys` maps each valid API key to the library prefixes it may read ("users/1", "groups/2"), or to
    None for all of them. `clock` stamps the requests and times a dripping body: a test's fake clock
    makes those instant (a `delay` and `latency` stay real: they stand for a slow network)."""

    _name = "zotero-server"

    clock: Any = _RealTime()

    def __init__(
        self,
        *libraries: FakeLibrary,
        keys: Mapping[str, Iterable[str] | None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.libraries = {lib.prefix: lib for lib in libraries}
        self.keys = {k: (None if v is None else set(v)) for k, v in (keys or {}).items()}
        # Keys without notes access: the API leaves notes out of their listings, and /keys/current
        # names no "notes" among what they may do.
        self.keys_without_notes: set[str] = set()
        # Keys that may not read the library's files (nor its full text): 403 on the full-text endpoints.
        self.keys_without_files: set[str] = set()
        self.requests: list[Recorded] = []
        self.faults: deque[Fault | None] = deque()
        self.total_results = True  # False: behave like a mirror that omits Total-Results
        self.latency = 0.0  # seconds to wait before each answer: a network round trip, for bench/
        # Hostile and special modes, for the fault tests:
        self.extra_headers: dict[str, str] = {}  # added to (or replacing) the headers of every answer
        self.endless = False  # item listings: always a full page of made-up items, no Total-Results
        self.bodies: dict[str, bytes] = {}  # path → the body to send instead of the real one
        self.repeat_key = False  # listings: each page's first object sent again in place of its last
        # The Zotero desktop's local API: /api/users/0/… for the first user library, no key, no /deleted,
        # nothing in /deleted; "off" answers 403 as Zotero does while the setting is unchecked.
        self.local: bool | str = False
        self._hooks: list[tuple[int, Callable[[FakeLibrary], None]]] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True

    @property
    def library(self) -> FakeLibrary:
        return next(iter(self.libraries.values()))

    def inject(self, *faults: Fault | None) -> None:
        """Faults for the next requests, one each, in arrival order."""
        with self._lock:
            self.faults.extend(faults)

    def after_request(
        self, n: int, action: Callable[[FakeLibrary], None], library: str | None = None
    ) -> None:
        """Run `action` on the library once the next `n` requests have arrived, before the one after them
        is answered: the library changes in the middle of a client's run."""
        target = self.libraries[library] if library else self.library
        with self._lock:
            self._hooks.append((len(self.requests) + n, lambda _lib: action(target)))

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self._hooks.clear()

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    # called by the handler
    def _arrive(
        self, method: str, path: str, params: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, Fault | None]:
        with self._lock:
            index = len(self.requests) + 1
            due = [hook for hook in self._hooks if hook[0] < index]
            self._hooks = [hook for hook in self._hooks if hook[0] >= index]
            fault = self.faults.popleft() if self.faults else None
            self.requests.append(Recorded(index, self.clock.monotonic(), method, path, params, headers))
        for _, action in due:
            action(self.library)
        return index, fault

    def _answered(self, index: int, status: int) -> None:
        with self._lock:
            old = self.requests[index - 1]
            self.requests[index - 1] = Recorded(
                old.index, old.at, old.method, old.path, old.params, old.headers, status
            )


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-answer (a timeout or a refused body) is part of the tests


@dataclass(slots=True)
class _Answer:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def _handler_for(server: ZoteroServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real API
        disable_nagle_algorithm = True  # headers and body go out in two writes: no delayed-ACK stalls
        server_version = "FakeZotero/3"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            headers = dict(self.headers.items())
            index, fault = server._arrive("GET", parts.path, params, headers)
            if fault and fault.kind == "drop":
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if server.latency:
                time.sleep(server.latency)
            if fault and fault.kind == "delay":
                time.sleep(fault.seconds)
            if fault and fault.kind == "status":
                body = (fault.body or _reason(fault.status)).encode()
                answer = _Answer(fault.status, body, dict(fault.headers), "text/plain")
            elif fault and fault.kind == "gzip_bomb":
                answer = _Answer(200, gzip_bomb(), {"Last-Modified-Version": str(server.library.version)})
                answer.headers["Content-Encoding"] = "gzip"
            else:
                try:
                    answer = _route(server, parts.path, params, headers)
                except _HTTPError as exc:
                    answer = _Answer(exc.status, exc.message.encode(), content_type="text/plain")
                answer.headers.update(server.extra_headers)
                if parts.path in server.bodies and answer.status == 200:
                    answer.body = server.bodies[parts.path]
                if fault and fault.kind == "headers":
                    answer.headers.update(fault.headers)
            server._answered(index, answer.status)
            if fault and fault.kind == "drip":
                self._drip(answer, fault.interval, fault.seconds)
                return
            self._send(answer, truncate=bool(fault and fault.kind == "truncate"))

        def _drip(self, answer: _Answer, interval: float, seconds: float) -> None:
            ends = server.clock.monotonic() + seconds
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.flush()
                for byte in answer.body:
                    if server.clock.monotonic() > ends:
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    server.clock.sleep(interval)
            except OSError:
                pass
            self.close_connection = True

        def _send(self, answer: _Answer, truncate: bool) -> None:
            try:
                self.send_response(answer.status)
                self.send_header("Zotero-API-Version", "3")
                self.send_header("Zotero-Schema-Version", "30")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if answer.status == 304:
                    self.end_headers()
                    return
                self.send_header("Content-Type", f"{answer.content_type}; charset=utf-8")
                length = len(answer.body)
                self.send_header("Content-Length", str(length * 2 + 100 if truncate else length))
                self.end_headers()
                self.wfile.write(answer.body[: length // 2] if truncate else answer.body)
                self.wfile.flush()
                if truncate:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                self.close_connection = True  # the client gave up (a timeout test): nothing to do

    return Handler


_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not found",
    429: "Too Many Requests",
    500: "An error occurred",
    503: "Service Unavailable",
}


def _reason(status: int) -> str:
    return _REASONS.get(status, "Error")


class _HTTPError(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message or _reason(status)


def _api_key(headers: Mapping[str, str], params: Mapping[str, str]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    if "zotero-api-key" in lowered:
        return lowered["zotero-api-key"]
    auth = lowered.get("authorization", "")
    if auth.startswith("Bearer "):
        return auth[len("Bearer ") :]
    return params.get("key")


def _route(server: ZoteroServer, path: str, params: dict[str, str], headers: dict[str, str]) -> _Answer:
    if server.local:
        return _local_route(server, path, params, headers)
    key = _api_key(headers, params)
    if key is not None and key not in server.keys:
        raise _HTTPError(403, "Invalid key")
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["keys"] and len(parts) == 2:
        return _key_info(server, key if parts[1] == "current" else parts[1])
    if len(parts) < 3 or parts[0] not in ("users", "groups"):
        raise _HTTPError(404)
    library = server.libraries.get(f"{parts[0]}/{parts[1]}")
    if library is None:
        raise _HTTPError(404)
    allowed = server.keys.get(key) if key is not None else set()
    if not (library.public or allowed is None or library.prefix in allowed):
        raise _HTTPError(403)
    with library.lock:
        notes = key not in server.keys_without_notes
        if "fulltext" in (*parts[2:3], *parts[4:5]) and key in server.keys_without_files:
            raise _HTTPError(403, "Forbidden")
        return _library_route(server, library, parts[2:], params, headers, path, notes=notes)


def _local_route(server: ZoteroServer, path: str, params: dict[str, str], headers: dict[str, str]) -> _Answer:
    """The desktop's local API: read-only, no key, "My Library" as users/0, no /deleted."""
    if server.local == "off":
        raise _HTTPError(403, "Local API is not enabled")
    parts = [p for p in path.split("/") if p]
    if parts[:1] != ["api"] or len(parts) < 4:
        raise _HTTPError(404)
    prefix = f"{parts[1]}/{parts[2]}"
    if prefix == "users/0":
        prefix = next((p for p in server.libraries if p.startswith("users/")), prefix)
    library = server.libraries.get(prefix)
    if library is None or parts[3] == "deleted":
        raise _HTTPError(404)
    with library.lock:
        return _library_route(server, library, parts[3:], params, headers, "/".join(["", *parts]))


def _key_info(server: ZoteroServer, key: str | None) -> _Answer:
    if key is None or key not in server.keys:
        raise _HTTPError(403, "Invalid key")
    allowed = server.keys[key]
    users = [p for p in server.libraries if p.startswith("users/") and (allowed is None or p in allowed)]
    groups = [p for p in server.libraries if p.startswith("groups/") and (allowed is None or p in allowed)]
    access: dict[str, Any] = {}
    if users:
        access["user"] = {"library": True, "files": True}
        if key not in server.keys_without_notes:
            access["user"]["notes"] = True
    if groups:
        access["groups"] = {p.split("/")[1]: {"library": True, "write": False} for p in groups}
    user_id = int(users[0].split("/")[1]) if users else 0
    body = {"key": key, "userID": user_id, "username": "tester", "displayName": "", "access": access}
    return _Answer(200, json.dumps(body).encode())


def _library_route(
    server: ZoteroServer,
    library: FakeLibrary,
    rest: list[str],
    params: dict[str, str],
    headers: dict[str, str],
    path: str,
    *,
    notes: bool = True,
) -> _Answer:
    version_headers = {"Last-Modified-Version": str(library.version)}
    since_header = next((v for k, v in headers.items() if k.lower() == "if-modified-since-version"), None)
    single = len(rest) == 2 and rest[1] not in ("top", "trash")
    if since_header is not None and not single:
        if not since_header.isdigit():
            raise _HTTPError(400, "Invalid If-Modified-Since-Version value")
        if library.version <= int(since_header):
            return _Answer(304, headers=version_headers)
    since = _int_param(params, "since")
    if rest == ["deleted"]:
        if since is None:
            raise _HTTPError(400, "'since' parameter must be provided")
        body = {
            kind: sorted(k for k, v in library.deleted.get(kind, {}).items() if v > since)
            for kind in ("collections", "items", "searches")
        } | {"tags": [], "settings": []}
        return _Answer(200, json.dumps(body).encode(), version_headers)
    if rest == ["fulltext"]:
        if since is None:
            raise _HTTPError(400, "'since' parameter must be provided")
        body = {k: v for k, (v, _) in sorted(library.fulltext.items()) if v > since}
        return _Answer(200, json.dumps(body).encode(), version_headers)
    if len(rest) == 3 and rest[0] == "items" and rest[2] == "fulltext":
        text = library.fulltext.get(rest[1]) if rest[1] in library.items else None
        if text is None:
            raise _HTTPError(404, "Not found")
        return _Answer(200, text[1], {"Last-Modified-Version": str(text[0])})
    if rest == ["items"] and server.endless:
        return _endless_page(library, params)
    if rest[0] == "items":
        if single:
            return _single(library, library.items, rest[1])
        if len(rest) > 2 or (len(rest) == 2 and rest[1] not in ("top", "trash")):
            raise _HTTPError(404)
        scope = rest[1] if len(rest) == 2 else ""
        return _listing(
            server,
            path,
            library,
            lambda: _select_items(library, scope, params, since, notes),
            params,
            "dateModified",
            notes,
        )
    if rest[0] == "collections":
        if single:
            return _single(library, library.collections, rest[1])
        if len(rest) > 2 or (len(rest) == 2 and rest[1] != "top"):
            raise _HTTPError(404)

        def select() -> list[dict[str, Any]]:
            objects = list(library.collections.values())
            if len(rest) == 2:
                objects = [o for o in objects if not o["data"].get("parentCollection")]
            if since is not None:
                objects = [o for o in objects if o["version"] > since]
            return _filter_keys(objects, params.get("collectionKey"))

        return _listing(server, path, library, select, params, "dateModified")
    raise _HTTPError(404)


def _endless_page(library: FakeLibrary, params: dict[str, str]) -> _Answer:
    """A full page of made-up items wherever the client starts, and no Total-Results: a listing that never
    ends unless the client bounds it."""
    start = _int_param(params, "start") or 0
    limit = min(MAX_LIMIT, _int_param(params, "limit") or DEFAULT_LIMIT)
    objects = []
    for n in range(start, start + limit):
        key = "".join(KEY_ALPHABET[(n // len(KEY_ALPHABET) ** i) % len(KEY_ALPHABET)] for i in range(8))
        data = {"key": key, "version": library.version, "itemType": "book", "title": f"Endless {n}"}
        objects.append(json.dumps(library._item_object(data)).encode())
    return _Answer(200, b"[" + b",".join(objects) + b"]", {"Last-Modified-Version": str(library.version)})


def _single(library: FakeLibrary, objects: Mapping[str, dict[str, Any]], key: str) -> _Answer:
    obj = objects.get(key)
    if obj is None:
        raise _HTTPError(404)
    return _Answer(200, library.json_of(obj), {"Last-Modified-Version": str(obj["version"])})


def _int_param(params: Mapping[str, str], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not value.isdigit():
        raise _HTTPError(400, f"Invalid '{name}' value")
    return int(value)


def _filter_keys(objects: list[dict[str, Any]], keys: str | None) -> list[dict[str, Any]]:
    if keys is None:
        return objects
    wanted = {k for k in keys.split(",") if k}
    if len(wanted) > MAX_KEYS:
        raise _HTTPError(400, f"Cannot specify more than {MAX_KEYS} keys")
    return [o for o in objects if o["data"]["key"] in wanted]


def _select_items(
    library: FakeLibrary, scope: str, params: dict[str, str], since: int | None, notes: bool = True
) -> list[dict[str, Any]]:
    objects = list(library.items.values())
    if not notes:
        objects = [o for o in objects if o["data"].get("itemType") != "note"]
    if scope == "top":
        objects = [o for o in objects if not o["data"].get("parentItem")]
    if scope == "trash":
        objects = [o for o in objects if o["data"].get("deleted")]
    elif params.get("includeTrashed") not in ("1", "true"):
        objects = [o for o in objects if not o["data"].get("deleted")]
    if since is not None:
        objects = [o for o in objects if o["version"] > since]
    return _filter_keys(objects, params.get("itemKey"))


_SORTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "dateAdded": lambda o: o["data"].get("dateAdded", ""),
    "dateModified": lambda o: (o["data"].get("dateModified", ""), o["version"]),
    "title": lambda o: str(o["data"].get("title", o["data"].get("name", ""))).casefold(),
    "itemType": lambda o: o["data"].get("itemType", ""),
    "version": lambda o: o["version"],
}


def _listing(
    server: ZoteroServer,
    path: str,
    library: FakeLibrary,
    select: Callable[[], list[dict[str, Any]]],
    params: dict[str, str],
    default_sort: str,
    notes: bool = True,
) -> _Answer:
    headers = {"Last-Modified-Version": str(library.version)}
    fmt = params.get("format", "json")
    if fmt not in ("json", "versions", "keys"):
        raise _HTTPError(400, f"Invalid 'format' value '{fmt}'")
    sort = params.get("sort", default_sort)
    if sort not in _SORTS:
        raise _HTTPError(400, f"Invalid 'sort' value '{sort}'")
    descending = params.get("direction", "desc" if sort.startswith("date") else "asc") == "desc"
    # Every page of one query shares its sorted listing, as an index would: without this a full read
    # costs O(N) per page, O(N²) in all, and the benchmark would measure the fake server.
    query = tuple(sorted((k, v) for k, v in params.items() if k not in ("start", "limit", "format", "key")))
    cache_key = (path, library.version, query, notes)
    objects = library.listings.get(cache_key)
    if objects is None:
        objects = select()
        # The key breaks ties so that pages never overlap while the library stands still.
        objects.sort(key=lambda o: o["data"]["key"])
        objects.sort(key=_SORTS[sort], reverse=descending)
        library.listings[cache_key] = objects
    total = len(objects)
    start = _int_param(params, "start") or 0
    limit = _int_param(params, "limit")
    if fmt != "json" and limit is None:
        page = objects[start:]  # versions and keys list everything unless asked for a page
    else:
        limit = min(MAX_LIMIT, limit or DEFAULT_LIMIT)
        page = objects[start : start + limit]
        if server.repeat_key and len(page) > 1:  # a faulty mirror
            page = [page[0], *page[:-1]]
        headers["Link"] = _links(server.url + path, library, params, start, limit, total)
    if server.total_results:
        headers["Total-Results"] = str(total)
    if fmt == "versions":
        body = json.dumps({o["data"]["key"]: o["version"] for o in page}).encode()
    elif fmt == "keys":
        return _Answer(200, "".join(o["data"]["key"] + "\n" for o in page).encode(), headers, "text/plain")
    else:
        body = b"[" + b",".join(library.json_of(o) for o in page) + b"]"
    return _Answer(200, body, headers)


def _links(
    base: str, library: FakeLibrary, params: dict[str, str], start: int, limit: int, total: int
) -> str:
    def url(at: int) -> str:
        query = {k: v for k, v in params.items() if k != "start"}
        if at:
            query["start"] = str(at)
        return f"{base}?{urlencode(query)}"

    links = [f'<{url(0)}>; rel="first"']
    if start > 0:
        links.append(f'<{url(max(0, start - limit))}>; rel="prev"')
    if start + limit < total:
        links.append(f'<{url(start + limit)}>; rel="next"')
    last = max(0, (total - 1) // limit * limit)
    links.append(f'<{url(last)}>; rel="last"')
    links.append(f'<https://www.zotero.org/{library.name}/items>; rel="alternate"')
    return ", ".join(links)


# -- synthetic libraries ------------------------------------------------------------------------------
_TEXT = (
    "tensor compiler kernel fusion scheduling megakernel inference attention sparse pipeline warp memory "
    "layout tile autotuning graph dataflow quantization distributed serving latency throughput"
)
_WORDS = tuple(_TEXT.split())
_VENUES = ("OSDI", "SOSP", "ASPLOS", "MLSys", "ISCA", "CGO", "PLDI", "EuroSys")


def synthetic_library(
    n_items: int,
    n_collections: int | None = None,
    *,
    seed: int = 0,
    library_type: str = "user",
    library_id: str = "1",
    children: int | None = None,
) -> list[dict[str, Any]]:
    """A snapshot of `n_items` items in all: three quarters regular items, the rest child notes and PDF
    attachments (so about a third of the regular items have a child), a few in the trash, filed in
    nested collections (three levels); or, with `children`, that many of the items are children.
    Deterministic for a seed."""
    rng = random.Random(seed)
    library = FakeLibrary(library_type, library_id, "synthetic")
    library._random = random.Random(seed + 1)
    n_collections = max(3, n_items // 100) if n_collections is None else n_collections
    collection_keys: list[str] = []
    version = 0
    for i in range(n_collections):
        version += 1
        parent = rng.choice(collection_keys[: max(1, i // 2)]) if collection_keys and i % 3 else None
        key = library.new_key()
        obj = library._collection_object(
            {
                "key": key,
                "version": version,
                "name": f"{rng.choice(_WORDS).title()} {i}",
                "parentCollection": parent or False,
                "relations": {},
            }
        )
        library.collections[key] = obj
        collection_keys.append(key)
    n_regular = n_items - (n_items // 4 if children is None else children)
    regular: list[str] = []
    for i in range(n_regular):
        version += 1
        key = library.new_key()
        words = rng.sample(_WORDS, 5)
        item_type = rng.choice(("conferencePaper", "journalArticle", "preprint", "book"))
        venue_field = {"conferencePaper": "proceedingsTitle", "journalArticle": "publicationTitle"}.get(
            item_type, "publisher"
        )
        data: dict[str, Any] = {
            "key": key,
            "version": version,
            "itemType": item_type,
            "title": " ".join(words).capitalize() + f" ({i})",
            "creators": [
                {"creatorType": "author", "firstName": rng.choice("ABCDEFG") + ".", "lastName": w.title()}
                for w in rng.sample(_WORDS, rng.randint(1, 4))
            ],
            "abstractNote": " ".join(rng.choices(_WORDS, k=30)),
            venue_field: f"{rng.choice(_VENUES)} '{rng.randint(10, 25)}",
            "date": str(rng.randint(2012, 2025)),
            "DOI": f"10.1000/synthetic.{i}" if rng.random() < 0.6 else "",
            "url": f"https://example.org/paper/{i}",
            "tags": [{"tag": w} for w in rng.sample(_WORDS, rng.randint(0, 3))]
            + ([{"tag": "auto", "type": 1}] if rng.random() < 0.2 else []),
            "collections": rng.sample(collection_keys, min(len(collection_keys), rng.choice((0, 1, 1, 2)))),
            "relations": {},
            "dateAdded": (EPOCH + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "dateModified": (EPOCH + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if rng.random() < 0.01:
            data["deleted"] = 1
        library.items[key] = library._item_object(data)
        regular.append(key)
    for i, parent in enumerate(rng.sample(regular, min(len(regular), n_items - n_regular))):
        version += 1
        key = library.new_key()
        stamp = (EPOCH + timedelta(minutes=n_regular + i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if i % 2:
            data = {
                "key": key,
                "version": version,
                "itemType": "note",
                "parentItem": parent,
                "note": f"<p>{' '.join(rng.choices(_WORDS, k=20))}</p>",
                "tags": [],
                "relations": {},
                "dateAdded": stamp,
                "dateModified": stamp,
            }
        else:
            data = {
                "key": key,
                "version": version,
                "itemType": "attachment",
                "parentItem": parent,
                "linkMode": "imported_file",
                "title": "Full Text PDF",
                "contentType": "application/pdf",
                "filename": f"paper-{i}.pdf",
                "charset": "",
                "md5": f"{rng.getrandbits(128):032x}",
                "mtime": 1700000000000 + i,
                "tags": [],
                "relations": {},
                "dateAdded": stamp,
                "dateModified": stamp,
            }
        library.items[key] = library._item_object(data)
    return library.snapshot()


def main(argv: list[str] | None = None) -> int:
    """Serve a snapshot as a Zotero Web API on 127.0.0.1 until Ctrl-C, to try the web source by hand:

    python3 tests/zotero_server.py [SNAPSHOT] [--port 8085] [--key KEY]
    """
    import argparse

    parser = argparse.ArgumentParser(description="Serve a snapshot as a Zotero Web API on 127.0.0.1.")
    default = Path(__file__).resolve().parent.parent / "seeds" / "zotero-library.json"
    parser.add_argument("snapshot", nargs="?", type=Path, default=default, help="a snapshot file (JSON)")
    parser.add_argument("--port", type=int, default=8085, help="0: any free port")
    parser.add_argument("--key", help="the API key it accepts; without one the library is public")
    args = parser.parse_args(argv)
    library = FakeLibrary.from_snapshot(args.snapshot, public=args.key is None)
    try:
        server = ZoteroServer(library, keys={args.key: None} if args.key else {}, port=args.port)
    except OSError as exc:  # the port is taken, most likely: one line, not a traceback
        print(
            f"zotero_server.py: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
            "--port 0 takes any free port",
            file=sys.stderr,
        )
        return 1
    with server:
        print(f"serving {library.prefix} (library version {library.version}) at {server.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
