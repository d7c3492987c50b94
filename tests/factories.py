"""What tests share: Zotero Web API JSON objects (the snapshot format), page rows, stores rolled back to
older schemas, a fake clock, and the web tests' library, configs and store readers."""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from zotero_server import FakeLibrary, ZoteroServer

from zotsync.app.pull import pull
from zotsync.config import SourceConfig
from zotsync.model import Library, Placement
from zotsync.sources.snapshot import SnapshotSource
from zotsync.store import PAGE_FIELDS, Store

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = {"type": "user", "id": 4242, "name": "tests", "links": {}}
_versions = itertools.count(1)


def api_item(key: str, title: str, item_type: str = "journalArticle", **data: Any) -> dict[str, Any]:
    version = data.pop("version", next(_versions))
    body = {
        "key": key,
        "version": version,
        "itemType": item_type,
        "title": title,
        "creators": data.pop(
            "creators", [{"creatorType": "author", "firstName": "Ada", "lastName": "Lovelace"}]
        ),
        "tags": [{"tag": t} if isinstance(t, str) else t for t in data.pop("tags", [])],
        "collections": data.pop("collections", []),
        "relations": {},
        "dateAdded": "2024-01-01T00:00:00Z",
        "dateModified": "2024-01-01T00:00:00Z",
        **data,
    }
    return {"key": key, "version": version, "library": LIBRARY, "links": {}, "meta": {}, "data": body}


def api_child(key: str, parent: str, item_type: str = "attachment", **data: Any) -> dict[str, Any]:
    obj = api_item(key, data.pop("title", "Full Text PDF"), item_type, creators=[], parentItem=parent, **data)
    del obj["data"]["collections"]
    return obj


def api_pdf(key: str, parent: str, **data: Any) -> dict[str, Any]:
    return api_child(key, parent, contentType="application/pdf", linkMode="imported_file", **data)


def api_collection(
    key: str, name: str, parent: str | None = None, version: int | None = None
) -> dict[str, Any]:
    version = version or next(_versions)
    data = {
        "key": key,
        "version": version,
        "name": name,
        "parentCollection": parent or False,
        "relations": {},
    }
    return {"key": key, "version": version, "library": LIBRARY, "links": {}, "meta": {}, "data": data}


def write_json(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(objects, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def placement(**fields: object) -> Placement:
    base: dict[str, object] = dict(
        category="Cat",
        status="unread",
        title="T",
        venue="",
        year="",
        why="",
        authors=(),
        doi="",
        url="",
        noted=False,
        links=(),
        zotero_key="",
        tags=(),
        collections=(),
        curated_title="T",
    )
    return Placement(**{**base, **fields})  # type: ignore[arg-type]


# A store back at schema 7, as the zotsync before migration 8 left it: each creator an object naming its
# fields (the text json.dumps makes of it), an index on `parent_key`, and update triggers that turned
# those objects into the page row's arrays.
_AS_SCHEMA_7 = (
    "CREATE INDEX items_parent ON items (parent_key)",
    f"""CREATE TRIGGER item_page_update
    AFTER UPDATE OF key, version, item_type, parent_key, title, deleted, creators, fields ON items BEGIN
        UPDATE item_page SET version = new.version, item_type = new.item_type, parent_key = new.parent_key,
            title = new.title, deleted = new.deleted, creators = (
                SELECT json_group_array(json_array(json_extract(value, '$.creator_type'),
                    json_extract(value, '$.last_name'), json_extract(value, '$.first_name'),
                    json_extract(value, '$.name')))
                FROM json_each(new.creators)
            ),
            tags = new.tags, collections = new.collections,
            fields = json_patch('{{}}', json_object({
        ", ".join(f"'{f}', json_extract(new.fields, '$.{f}')" for f in PAGE_FIELDS)
    })), facts = NULL, key = new.key
        WHERE key = old.key;
    END""",
    """CREATE TRIGGER item_page_lists AFTER UPDATE OF tags, collections ON items BEGIN
        UPDATE item_page SET tags = new.tags, collections = new.collections WHERE key = new.key;
    END""",
    "DELETE FROM schema_migrations WHERE version > 7",
)
_CREATOR_NAMES = ("creator_type", "last_name", "first_name", "name")


# The tables each migration after 8 made, in order: going back drops them.
_MADE_AFTER_8 = {9: "export_files", 10: "derived", 11: "note_changes"}


def back_to_schema_8(path: Path) -> None:
    """Turn the store at `path` back into a schema-8 store: without the tables migrations 9 on made."""
    edit(
        path,
        *(f"DROP TABLE IF EXISTS {table}" for table in _MADE_AFTER_8.values()),
        "DROP INDEX IF EXISTS item_page_children",  # migration 11's
        "DELETE FROM schema_migrations WHERE version > 8",
    )


def back_to_schema_7(path: Path) -> None:
    """Turn the store at `path` back into the schema-7 store the previous zotsync wrote."""
    back_to_schema_8(path)
    db = sqlite3.connect(path)
    listed = db.execute("SELECT key, creators FROM items WHERE creators != '[]'").fetchall()
    db.execute("DROP TRIGGER item_page_update")  # it would follow the rewrite below
    db.execute("DROP TRIGGER item_page_lists")
    objects = [[dict(zip(_CREATOR_NAMES, c, strict=True)) for c in json.loads(text)] for _, text in listed]
    db.executemany(
        "UPDATE items SET creators = ? WHERE key = ?",
        [(json.dumps(o, ensure_ascii=False), key) for o, (key, _) in zip(objects, listed, strict=True)],
    )
    for statement in _AS_SCHEMA_7:
        db.execute(statement)
    db.commit()
    db.close()


# A store back at schema 6, as the zotsync before migration 7 left it: tags and memberships in tables of
# their own, one row per tag or membership in the item's order (json_each keeps the array order). Its
# trigger for updates, which migration 7 drops and makes anew, is left out.
_AS_SCHEMA_6 = (
    "DROP TRIGGER item_page_update",
    "DROP TRIGGER item_page_lists",
    """CREATE TABLE item_tags (
        item_key TEXT NOT NULL REFERENCES items (key) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        tag TEXT NOT NULL,
        type INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (item_key, position)
    )""",
    "CREATE INDEX item_tags_tag ON item_tags (tag)",
    """CREATE TABLE item_collections (
        item_key TEXT NOT NULL REFERENCES items (key) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        collection_key TEXT NOT NULL,
        PRIMARY KEY (item_key, position)
    )""",
    "CREATE INDEX item_collections_collection ON item_collections (collection_key)",
    """INSERT INTO item_tags
        SELECT items.key, t.key, json_extract(t.value, '$[0]'), json_extract(t.value, '$[1]')
        FROM items, json_each(items.tags) AS t""",
    """INSERT INTO item_collections
        SELECT items.key, c.key, c.value FROM items, json_each(items.collections) AS c""",
    "ALTER TABLE items DROP COLUMN tags",
    "ALTER TABLE items DROP COLUMN collections",
    "DELETE FROM schema_migrations WHERE version > 6",
)


def edit(path: Path, *statements: str) -> None:
    """Run `statements` on the SQLite file at `path` by hand, in one transaction, as a user's tool would."""
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def read(path: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    """The rows `query` finds in the SQLite file at `path`, read by hand with plain SQL."""
    db = sqlite3.connect(path)
    try:
        return db.execute(query, params).fetchall()
    finally:
        db.close()


def back_to_schema_6(path: Path) -> None:
    """Turn the store at `path` back into the schema-6 store the previous zotsync wrote."""
    back_to_schema_7(path)
    edit(path, *_AS_SCHEMA_6)


class FakeClock:
    """Time that passes only when something waits (zotsync.net.Clock): a retry's backoff, a server's
    Retry-After or a dripping body take no real time, and tests see exactly the waits they cause. Every
    wait moves it forward, also waits in parallel threads (which then add up, as they would on one
    thread)."""

    START = datetime(2026, 1, 1, tzinfo=UTC)

    def __init__(self) -> None:
        self._now = 0.0
        self._lock = threading.Lock()
        self.waits: list[float] = []  # every sleep asked for, in order

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def now(self) -> datetime:
        return self.START + timedelta(seconds=self.monotonic())

    def sleep(self, seconds: float, interrupt: threading.Event | None = None) -> bool:
        if interrupt is not None and interrupt.is_set():
            return True
        with self._lock:
            self._now += max(0.0, seconds)
            self.waits.append(seconds)
        time.sleep(0)  # let other threads run, as a real wait would
        return False


def config_of(project: Path) -> str:
    """The config of a `project` (the fixture: a copy of the bundled default), as --config takes it."""
    return str(project / "config" / "zotsync.yaml")


# -- the web source's tests ------------------------------------------------------------------------------
ZOTERO_API_KEY = "Tz8xQ4vN2mLr7KpW3sYd9HcB"  # a made-up key in the real keys' shape; must never be printed


@dataclass
class Run:
    code: int
    out: str
    err: str


USER_ID = "1234567"


def small_library(library_type: str = "user", library_id: str = USER_ID) -> FakeLibrary:
    """A library built by API writes, like a real one: nested collections, papers with a note and a PDF,
    one paper in two collections, one in the trash, one unfiled."""
    lib = FakeLibrary(library_type, library_id, "tester")
    gpu = lib.add_collection("GPU", key="GPUCAAAA")
    compilers = lib.add_collection("Compilers", parent=gpu, key="CMPLAAAA")
    lib.add_collection("Polyhedral", parent=compilers, key="PLYHAAAA")
    lib.add_collection("Inference", key="NFRNAAAA")
    lib.add_item(
        "MLIR: Scaling Compiler Infrastructure",
        "conferencePaper",
        key="MLRAAAAA",
        collections=["CMPLAAAA", "NFRNAAAA"],
        creators=[{"creatorType": "author", "firstName": "Chris", "lastName": "Lattner"}],
        proceedingsTitle="CGO",
        date="2021",
        DOI="10.1109/CGO51591.2021.9370308",
        tags=[{"tag": "compiler"}, {"tag": "auto", "type": 1}],
    )
    lib.add_item("MLIR note", "note", key="MLRNAAAA", parent="MLRAAAAA")
    lib.add_item(
        "Full Text PDF", "attachment", key="MLRPAAAA", parent="MLRAAAAA", contentType="application/pdf"
    )
    lib.add_item("TIRAMISU", "conferencePaper", key="TRMSAAAA", collections=["PLYHAAAA"], date="2019")
    lib.add_item("Unfiled preprint", "preprint", key="NFLDAAAA", date="2024")
    lib.add_item("An old draft", "journalArticle", key="DRFTAAAA", collections=["GPUCAAAA"])
    lib.trash_item("DRFTAAAA")
    return lib


@dataclass
class Web:
    """A temp project whose config points the web source at a fake server."""

    server: ZoteroServer
    folder: Path
    config: Path
    run: Callable[..., Run]

    @property
    def library(self) -> FakeLibrary:
        return self.server.library

    @property
    def store_path(self) -> Path:
        return self.folder / "store.sqlite"

    def pull(self, *args: str, flags: tuple[str, ...] = ("-q",)) -> Run:
        self.server.reset()
        return self.run(*flags, "--config", str(self.config), "pull", *args)

    def load(self) -> Library:
        with Store(self.store_path) as store:
            return store.load()

    def store_version(self) -> int | None:
        with Store(self.store_path) as store:
            return store.library_version


def write_web_config(
    folder: Path,
    base_url: str | None,
    *,
    library_type: str | None = "user",
    library_id: str | None = USER_ID,
    api_key: str | None = ZOTERO_API_KEY,
) -> Path:
    source = {"type": "web", "library_type": library_type, "library_id": library_id}
    source |= {"api_key": api_key, "base_url": base_url}
    lines = ["source:"] + [f"  {k}: {json.dumps(v)}" for k, v in source.items() if v is not None]
    lines += [f"catalog: {json.dumps(str(ROOT / 'seeds' / 'catalog.yaml'))}", "store: store.sqlite", ""]
    path = folder / "zotsync.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def config_for(
    server: ZoteroServer, library: FakeLibrary | None = None, key: str = ZOTERO_API_KEY
) -> SourceConfig:
    library = library or server.library
    return SourceConfig(
        type="web",
        library_type=library.library_type,
        library_id=library.library_id,
        api_key=key,
        base_url=server.url,
    )


def mirror_of(library: FakeLibrary, folder: Path) -> Library:
    """What a store holds after reading the library's current state through the snapshot source."""
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = folder / "snapshot.json"
    snapshot.write_text(json.dumps(library.snapshot()), encoding="utf-8")
    with Store(Path(":memory:")) as store:
        pull(SnapshotSource(snapshot), store)
        return store.load()


def assert_same_content(got: Library, want: Library) -> None:
    assert got.collections == want.collections
    assert got.items == want.items
    assert [dict(i.fields) for i in got.items] == [dict(i.fields) for i in want.items]
    assert (got.library_type, got.library_id) == (want.library_type, want.library_id)


def by_key(library: Library) -> dict[str, object]:
    return {**{i.key: i for i in library.items}, **{c.key: c for c in library.collections}}


def rows(path: Path, scratch: Path) -> list[str]:
    """The store's rows, read from a copy so that reading cannot touch the original."""
    copy = scratch / f"copy-{time.monotonic_ns()}.sqlite"
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as db:
        return list(db.iterdump())


def retry_gap(server: ZoteroServer, status: int) -> float:
    """Seconds between the first answer with `status` and the retry of that same request."""
    failed = next(r for r in server.requests if r.status == status)
    retry = next(
        r
        for r in server.requests
        if r.index > failed.index and (r.path, r.params) == (failed.path, failed.params)
    )
    return retry.at - failed.at


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again on leaving: nothing listens there
