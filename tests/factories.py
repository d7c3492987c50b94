"""What tests share: Zotero Web API JSON objects (the snapshot format), page rows, stores rolled back to
older schemas, a fake clock, the web tests' library, configs and store readers, enrichment's demo papers,
the note-page tests' projects, the renderers a page is read with, and BibTeX read back."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metadata_server import MetadataServer, Paper
from zotero_server import FakeLibrary, ZoteroServer

from zotsync.app.pull import pull
from zotsync.config import SourceConfig
from zotsync.model import Library, Placement
from zotsync.sources.snapshot import SnapshotSource
from zotsync.store import PAGE_FIELDS, Store

if TYPE_CHECKING:
    import bibtexparser
    import pytest

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


def api_annotation(key: str, attachment: str, text: str, sort_index: str, **fields: str) -> dict[str, Any]:
    """A highlight in the PDF `attachment`, as the Web API gives it (`fields` override)."""
    data = {
        "annotationType": "highlight",
        "annotationText": text,
        "annotationComment": "",
        "annotationColor": "#ffd400",
        "annotationPageLabel": "1",
        "annotationSortIndex": sort_index,
        "annotationPosition": "{}",
        **fields,
    }
    return api_child(key, attachment, "annotation", title="", **data)


def pip_install(package: Path, target: Path) -> None:
    """`pip install` a package (a folder or a wheel) into `target`, with no registry and no dependency
    (the test extras bring setuptools to build a folder)."""
    offline = ["--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", *offline, "--target", str(target), str(package)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def mkdocs_build(folder: Path, site: Path, timeout: float = 600) -> Path:
    """`mkdocs build --strict` of the site whose mkdocs.yml is in `folder`, into `site`, as a Pages
    workflow builds it; the build must pass."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return site


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


# What each migration after 8 made, in order: going back drops it (a table, `INDEX name`, or
# `COLUMN table.name`). Migration 13's search tables are the first search's since, dropped all the same.
_MADE_AFTER_8: dict[int, tuple[str, ...]] = {
    9: ("export_files",),
    10: ("derived",),
    11: ("feed_entries",),
    13: ("search_papers", "search_curated", "search_index", "search_short", "INDEX items_children"),
    14: ("note_changes", "INDEX item_page_children", "COLUMN export_files.made_from"),
    17: ("fulltext_index", "fulltext"),
    18: ("paper_vectors", "vector_matrix"),
    19: ("kept_reports",),
}


def back_to_schema_8(path: Path) -> None:
    """Turn the store at `path` back into a schema-8 store: without the tables migrations 9 on made."""
    back_to_schema(path, 8)


def back_to_schema(path: Path, schema: int) -> None:
    """Turn the store at `path` back into the store of `schema` (8 or later): without the tables and
    indexes the later migrations made, and without their numbers."""
    made = [name for number, names in _MADE_AFTER_8.items() if number > schema for name in names]
    edit(
        path,
        *(_drop(each) for each in reversed(made)),
        f"DELETE FROM schema_migrations WHERE version > {schema}",
    )


def _drop(made: str) -> str:
    kind, _, name = made.rpartition(" ")
    if kind == "COLUMN":
        table, column = name.split(".")
        return f"ALTER TABLE {table} DROP COLUMN {column}"
    return f"DROP {kind or 'TABLE'} IF EXISTS {name}"


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


# -- a library the size and shape of a real one, for the published page ----------------------------------
KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
REALISTIC_LIBRARY = {
    "type": "user",
    "id": 7654321,
    "name": "a-researcher",
    "links": {"alternate": {"href": "https://www.zotero.org/a-researcher", "type": "text/html"}},
}
# Titles from the wild that must stay text: links, HTML, attribute lists, pipes, line breaks, emoji
# shortcodes, bidi overrides, a table-breaking newline.
HOSTILE_TITLES = (
    "[click me](javascript:alert(1)) and a *bold* claim",
    '<img src=x onerror="window.__pwned=1"> Image Tricks for GPUs',
    "<script>window.__pwned=1</script>Scripted Kernels",
    'Evil Attributes {: onclick="window.__pwned=1" } in Markdown',
    "Pipes | in | Titles and\nLine Breaks",
    ":smile: Emoji :rocket: Shortcodes and ==marks==",
    "Bidi \u202etxet desrever\u202c Overrides",
    "Entities &lt;b&gt; &#x3C;script&#x3E; and &colon; colons",
)
# Proceedings titles as Zotero's translators write them: the long venues that wrap in a narrow column.
LONG_VENUES = (
    "Proceedings of the 28th ACM International Conference on Architectural Support for Programming "
    "Languages and Operating Systems, Volume 3",
    "Proceedings of the 42nd ACM SIGPLAN International Conference on Programming Language Design and "
    "Implementation",
    "2022 IEEE/ACM International Symposium on Code Generation and Optimization (CGO)",
    "Proceedings of the 17th USENIX Symposium on Operating Systems Design and Implementation",
    "ACM Transactions on Architecture and Code Optimization",
    "IEEE Transactions on Parallel and Distributed Systems",
    "arXiv",
    "",
)
TOPIC_TAGS = (
    "gpu",
    "compiler",
    "llm",
    "megakernel",
    "kernel fusion",
    "scheduling",
    "autotuning",
    "sparse",
    "distributed",
    "dataflow",
    "mlir",
    "tvm",
    "triton",
    "cuda",
    "memory",
    "quantization",
    "attention",
)
AUTOMATIC_TAGS = (
    "Computer Science - Machine Learning",
    "Computer Science - Programming Languages",
    "Computer Science - Distributed, Parallel, and Cluster Computing",
    "Computer Science - Performance",
    "Computer Science - Hardware Architecture",
    "Computer Science - Artificial Intelligence",
)
WORDS = (
    "Tensor",
    "Compiler",
    "Kernel",
    "Fusion",
    "Scheduling",
    "GPU",
    "Sparse",
    "Dataflow",
    "Graph",
    "Optimization",
    "Automatic",
    "Efficient",
    "Scalable",
    "Memory",
    "Pipeline",
    "Warp",
    "Tile",
    "Layout",
    "Inference",
    "Training",
    "Attention",
    "Megakernel",
    "Runtime",
    "Operator",
    "Polyhedral",
    "Search",
    "Learning",
    "Hardware",
    "Accelerator",
    "Superoptimizer",
    "Program",
    "Synthesis",
    "Language",
)


@dataclass
class RealisticLibrary:
    """A snapshot (the API's objects) and a catalogue curating a dozen of its papers."""

    objects: list[dict[str, Any]]
    catalogue: str
    papers: int
    curated_keys: tuple[str, ...]
    hostile_keys: tuple[str, ...]


def realistic_library(papers: int = 1000, seed: int = 21) -> RealisticLibrary:
    """A library like a researcher's after a few years: an Inbox and nested topic collections, a tenth of
    the papers unfiled, workflow tags (`to-curate`, `read`, `unread`) beside topic and automatic tags (up
    to 17 on one paper), long proceedings titles, DOIs, arXiv ids and URLs (and papers with none), PDFs,
    child notes, and hostile titles. The catalogue curates 12 papers in three categories of its own and
    names two collections as categories, as the demo's catalogue does."""
    import random

    rng = random.Random(seed)
    used: set[str] = set()

    def key() -> str:
        while True:
            made = "".join(rng.choice(KEY_ALPHABET) for _ in range(8))
            if made not in used:
                used.add(made)
                return made

    def obj(data: dict[str, Any]) -> dict[str, Any]:
        return {
            "key": data["key"],
            "version": data["version"],
            "library": REALISTIC_LIBRARY,
            "links": {
                "alternate": {"href": f"https://www.zotero.org/a-researcher/items/{data['key']}"},
            },
            "meta": {},
            "data": data,
        }

    objects: list[dict[str, Any]] = []
    collections: dict[str, str] = {}  # path → key

    def collection(path: str) -> str:
        parent, _, name = path.rpartition(" / ")
        made = key()
        data = {
            "key": made,
            "version": 1,
            "name": name,
            "parentCollection": collections[parent] if parent else False,
            "relations": {},
        }
        objects.append(
            {"key": made, "version": 1, "library": REALISTIC_LIBRARY, "links": {}, "meta": {}, "data": data}
        )
        collections[path] = made
        return made

    for path in (
        "Inbox",
        "GPU",
        "GPU / Compilers",
        "GPU / Compilers / Polyhedral",
        "GPU / Kernels",
        "GPU / Kernels / Attention",
        "LLM",
        "LLM / Inference",
        "LLM / Serving",
        "Systems",
        "Systems / Distributed",
        "Hardware",
        "Hardware / Accelerators",
        "Reading group",
        "Teaching",
        "Old",
        "Old / Archive",
    ):
        collection(path)
    filed = [p for p in collections if p != "Inbox"]
    hostile_keys: list[str] = []
    paper_keys: list[str] = []
    for n in range(papers):
        item_key = key()
        paper_keys.append(item_key)
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        roll = rng.random()
        where = (
            []
            if roll < 0.1
            else [collections["Inbox"]]
            if roll < 0.35
            else rng.sample([collections[p] for p in filed], rng.choice((1, 1, 1, 2)))
        )
        if n % 97 == 5 and len(hostile_keys) < len(HOSTILE_TITLES):
            title = HOSTILE_TITLES[len(hostile_keys)]
            hostile_keys.append(item_key)
            where = [collections["GPU / Kernels / Attention"]]  # a category the catalogue names
        tags: list[dict[str, Any]] = [{"tag": t} for t in rng.sample(TOPIC_TAGS, rng.randint(0, 4))]
        if rng.random() < 0.3 and item_key not in hostile_keys:  # hostile titles stay on a curated page
            tags.append({"tag": "to-curate"})
        status_roll = rng.random()
        if status_roll < 0.12:
            tags.append({"tag": "read"})
        elif status_roll < 0.3:
            tags.append({"tag": "unread"})
        if n % 50 == 7:  # the paper with every tag: 17 in one cell before
            tags = [{"tag": t} for t in TOPIC_TAGS[:11]] + [{"tag": t, "type": 1} for t in AUTOMATIC_TAGS]
        elif rng.random() < 0.3:
            tags += [{"tag": t, "type": 1} for t in rng.sample(AUTOMATIC_TAGS, rng.randint(1, 3))]
        venue = rng.choice(LONG_VENUES)
        year = str(rng.randint(2012, 2026))
        link_roll = rng.random()
        doi = f"10.1145/{3000000 + n}" if link_roll < 0.35 else ""
        arxiv = f"{int(year[2:]):02d}{rng.randint(1, 12):02d}.{rng.randint(10000, 99999)}"
        data: dict[str, Any] = {
            "key": item_key,
            "version": rng.randint(1, 5000),
            "itemType": "conferencePaper" if venue.startswith(("Proceedings", "20")) else "journalArticle",
            "title": title,
            "creators": [
                {
                    "creatorType": "author",
                    "firstName": rng.choice(("Ada", "Wei", "Maria", "Ravi", "Li")),
                    "lastName": rng.choice(("Lovelace", "Zhang", "García", "Patel", "Müller", "O'Neil")),
                }
                for _ in range(rng.randint(1, 9))
            ],
            "tags": tags,
            "collections": where,
            "relations": {},
            "date": year,
            "DOI": doi,
            "url": f"https://example.org/papers/{n}" if 0.35 <= link_roll < 0.55 else "",
            "dateAdded": f"{year}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T08:00:00Z",
            "dateModified": "2026-01-01T00:00:00Z",
        }
        if data["itemType"] == "conferencePaper":
            data["proceedingsTitle"] = venue
        else:
            data["publicationTitle"] = venue
        if 0.55 <= link_roll < 0.75:  # arXiv's own export: the id, no URL, no DOI
            data["archiveID"] = f"arXiv:{arxiv}"
            data["extra"] = f"arXiv:{arxiv}"
        objects.append(obj(data))
        if rng.random() < 0.6:
            pdf = key()
            objects.append(
                obj(
                    {
                        "key": pdf,
                        "version": 1,
                        "itemType": "attachment",
                        "parentItem": item_key,
                        "title": "Full Text PDF",
                        "contentType": "application/pdf",
                        "linkMode": "imported_file",
                        "tags": [],
                        "relations": {},
                        "dateAdded": data["dateAdded"],
                        "dateModified": data["dateAdded"],
                    }
                )
            )
        if rng.random() < 0.15:
            note = key()
            objects.append(
                obj(
                    {
                        "key": note,
                        "version": 1,
                        "itemType": "note",
                        "parentItem": item_key,
                        "note": f"<p>What I took from <b>{title[:40]}</b>: the tiling.</p>",
                        "tags": [],
                        "relations": {},
                        "dateAdded": data["dateAdded"],
                        "dateModified": data["dateAdded"],
                    }
                )
            )
    by_key = {o["key"]: o["data"] for o in objects}
    curated = [k for k in paper_keys if k not in hostile_keys][:12]
    categories = (
        ("Compilers I keep coming back to", curated[:5]),
        ("Kernels", curated[5:9]),
        ("LLM serving", curated[9:12]),
    )
    lines = [
        "title: A real reading list",
        "description: Papers on GPU compilers, kernels and serving.",
        "categories:",
    ]
    for index, (name, keys) in enumerate(categories):
        lines += [f"  - name: {json.dumps(name)}", "    entries:"]
        for position, curated_key in enumerate(keys):
            lines += [
                f"      - title: {json.dumps(by_key[curated_key]['title'])}",
                f"        zotero_key: {curated_key}",
                f"        status: {'read' if (index + position) % 2 == 0 else 'unread'}",
                f"        why: {json.dumps(f'Why paper {position + 1} of {name} matters to me')}",
            ]
    # Collections the catalogue names, to fix their place and show their items (as the demo's do).
    lines += [
        "  - name: GPU / Kernels / Attention",
        "    entries: []",
        "  - name: Hardware / Accelerators",
        "    entries: []",
        "",
    ]
    return RealisticLibrary(objects, "\n".join(lines), papers, tuple(curated), tuple(hostile_keys))


def snapshot_project(
    folder: Path,
    objects: list[dict[str, Any]],
    catalogue: str = "categories: []\n",
    exports: str = "exports",
    settings: str = "",
) -> Path:
    """A project reading `objects` from a snapshot: zotsync.yaml (with `settings` appended under
    `exports:`, indented as its keys), catalog.yaml holding `catalogue` (dedented) and the snapshot in
    `folder`; the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text(textwrap.dedent(catalogue), encoding="utf-8")
    config = folder / "zotsync.yaml"
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        f"exports:\n  dir: {exports}\n{settings}",
        encoding="utf-8",
    )
    return config


def write_realistic_project(
    folder: Path, library: RealisticLibrary, exports: str = "exports", settings: str = ""
) -> Path:
    """`snapshot_project` of the realistic library and its catalogue."""
    return snapshot_project(folder, library.objects, library.catalogue, exports, settings)


# The settings of a page others read (docs/publishing.md), and the MkDocs Material site around it.
PUBLISHED_SETTINGS = """\
  scope: curated
  exclude_collections: [Inbox, Unfiled]
  exclude_tags: [to-curate]
  zotero_links: none
  tags_page: true
  archive_link: "tags.md#{key}"
  venue_length: 40
  sortable: true
"""
SITE_CONFIG = """\
site_name: A real reading list
theme:
  name: material
  features: [toc.integrate]
markdown_extensions:
  - tables
  - toc:
      permalink: true
extra_javascript:
  - reading-list/assets/tablesort.min.js
  - reading-list/assets/tablesort.number.min.js
  - reading-list/assets/tablesort-init.js
validation:
  omitted_files: warn
  absolute_links: warn
  unrecognized_links: warn
  anchors: warn
"""


def write_site(folder: Path, library: RealisticLibrary, settings: str = PUBLISHED_SETTINGS) -> Path:
    """A repository as docs/publishing.md lays it out: the project (exports in docs/reading-list),
    mkdocs.yml and docs/index.md; the config's path."""
    config = write_realistic_project(folder, library, exports="docs/reading-list", settings=settings)
    (folder / "mkdocs.yml").write_text(SITE_CONFIG, encoding="utf-8")
    (folder / "docs").mkdir(exist_ok=True)
    by_tag = " · [by tag](reading-list/tags.md)" if "tags_page: true" in settings else ""
    (folder / "docs" / "index.md").write_text(
        f"# A real reading list\n\n[The list](reading-list/catalog.md){by_tag}\n", encoding="utf-8"
    )
    return config


# -- enrichment's tests -------------------------------------------------------------------------------


def with_enrichment(config: Path, endpoints: dict[str, str], **keys: Any) -> Path:
    """`config` (a file without an `enrich` section) with one: enabled, pointed at `endpoints`, and any
    other `enrich` keys given."""
    section = {"enabled": True, "endpoints": endpoints, **keys}
    lines = ["enrich:"] + [f"  {key}: {json.dumps(value)}" for key, value in section.items()]
    with config.open("a", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + "\n")
    return config


GOLDEN = Path(__file__).parent / "golden"

# The seven rows the seed page marks 来源待补全, as the fake services know them (made up for the tests,
# like the demo library itself: DBLP keys and the AffineGraph venue are invented).
DEMO_PAPERS = (
    Paper(
        "Ansor: Generating High-Performance Tensor Programs for Deep Learning",
        ("Lianmin Zheng", "Chengfan Jia"),
        "2020",
        "OSDI",
        dblp="conf/osdi/ZhengJSWYHMYZSGY20",
    ),
    Paper(
        "PET: Optimizing Tensor Programs with Partially Equivalent Transformations and Automated Corrections",
        ("Haojie Wang", "Jidong Zhai"),
        "2021",
        "OSDI",
        dblp="conf/osdi/WangZGMJXZ021",
    ),
    Paper(
        "EINNET: Optimizing Tensor Programs with Derivation-Based Transformations",
        ("Liyan Zheng", "Haojie Wang"),
        "2023",
        "OSDI",
        dblp="conf/osdi/ZhengWZHCYYMDSZ23",
    ),
    Paper(
        "PIT: Optimization of Dynamic Sparse Deep Learning Models via Permutation Invariant Transformation",
        ("Ningxin Zheng", "Huiqiang Jiang"),
        "2023",
        "SOSP",
        dblp="conf/sosp/ZhengJZHM00YZQY23",
        doi="10.1145/3600006.3613139",
    ),
    Paper(
        "Ladder: Enabling Efficient Low-Precision Deep Learning Computing through Hardware-aware Tensor "
        "Transformation",
        ("Lei Wang", "Lingxiao Ma"),
        "2024",
        "OSDI",
        dblp="conf/osdi/WangMCXLXYCZZ24",
    ),
    Paper(
        "Graphiler: A Compiler for Graph Neural Networks",
        ("Zhiqiang Xie", "Minjie Wang"),
        "2022",
        "MLSys",
        dblp="conf/mlsys/XieWYZW22",
    ),
    Paper(  # known to Crossref alone, by its proceedings title
        "AffineGraph: A Dataflow Graph Representation for Effective DNN Hardware-Aware Algorithms",
        ("Yuyue Wang", "Xiaoyang Zhang"),
        "2025",
        proceedings="Proceedings of the 30th ACM International Conference on Architectural Support for "
        "Programming Languages and Operating Systems",
        doi="10.1145/3669940.3707999",
        known_by=("crossref",),
    ),
)

ANSOR = "Ansor: Generating High-Performance Tensor Programs for Deep Learning"


def enriched(project: Path, server: MetadataServer, **keys: object) -> str:
    keys.setdefault("deadline", 600)  # the demo's 38 items at the services' real paces: ~130 fake seconds
    return str(with_enrichment(project / "config" / "zotsync.yaml", server.endpoints(), **keys))


def demo_csv_rows(project: Path) -> list[dict[str, str]]:
    """The rows of a demo project's exports/catalog.csv, in order."""
    text = (project / "exports" / "catalog.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def answers(project: Path) -> dict[str, dict]:
    with Store(project / ".zotsync" / "zotsync.sqlite") as store:
        return {key: r.value for key, r in store.derived("enrich").items()}


def venue_of(project: Path, title: str) -> tuple[str, str]:
    (row,) = [(r["venue"], r["venue_source"]) for r in demo_csv_rows(project) if r["title"] == title][:1]
    return row


def one_warning(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("zotsync: enrichment")]
    assert len(lines) == 1, err
    return lines[0]


# -- note pages' tests (test_note_pages.py, test_note_bodies.py) ------------------------------------


# The catalogue of the note-page tests' projects (`source_project`)
CATALOGUE = """\
title: Notes test
categories:
  - name: Curated
    entries:
      - title: Curated Not Noted
        zotero_key: PAPERBBB
        noted: false
      - title: Curated With Its Own Note
        zotero_key: PAPERCCC
        links: {Paper: "https://c.example", Note: "https://my.notes/c"}
"""


def make_project(folder: Path, objects: list[dict], exports: str = "") -> Path:
    """A project reading `objects` from a snapshot; `exports`: more keys of `exports:`, each after a comma."""
    write_json(folder / "library.json", objects)
    return source_project(folder, "{type: snapshot, path: library.json}", exports)


def source_project(folder: Path, source: str, exports: str = "", catalogue: str = CATALOGUE) -> Path:
    """A project in `folder` that reads `source` (a `source:` mapping as YAML) and exports into out/."""
    from conftest import write_config  # here: conftest imports this module

    folder.mkdir(exist_ok=True)
    (folder / "catalog.yaml").write_text(catalogue, encoding="utf-8")
    return write_config(
        folder,
        f"source: {source}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        f"exports: {{dir: out, language: en{exports}}}\n",
    )


def sync(run, config: Path) -> str:
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    return result.err


def csv_rows(folder: Path) -> dict[str, dict[str, str]]:
    text = (folder / "out" / "catalog.csv").read_text(encoding="utf-8")
    return {row["zotero_key"]: row for row in csv.DictReader(io.StringIO(text))}


def note_pages(folder: Path) -> set[str]:
    return (
        {p.stem for p in (folder / "out" / "notes").glob("*.md")}
        if (folder / "out" / "notes").is_dir()
        else set()
    )


def edit_snapshot(folder: Path, change) -> None:
    path = folder / "library.json"
    objects = json.loads(path.read_text(encoding="utf-8"))
    objects = change(objects)
    path.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")


def edited_note(key: str, html: str):
    def change(objects: list[dict]) -> list[dict]:
        for obj in objects:
            if obj["key"] == key:
                obj["data"]["note"] = html
                obj["version"] = obj["data"]["version"] = obj["version"] + 1000
        return objects

    return change


# -- the renderers a page is read with (python-markdown as MkDocs Material, markdown-it) -------------

MATERIAL_EXTENSIONS = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    "toc",
    "tables",
    "pymdownx.arithmatex",
    "pymdownx.betterem",
    "pymdownx.caret",
    "pymdownx.critic",
    "pymdownx.details",
    "pymdownx.emoji",
    "pymdownx.highlight",
    "pymdownx.inlinehilite",
    "pymdownx.keys",
    "pymdownx.magiclink",
    "pymdownx.mark",
    "pymdownx.smartsymbols",
    "pymdownx.snippets",
    "pymdownx.superfences",
    "pymdownx.tabbed",
    "pymdownx.tasklist",
    "pymdownx.tilde",
]


def emoji_config() -> dict[str, object]:
    """Material's twemoji index and SVG generator when mkdocs-material is installed, else pymdownx's."""
    try:
        from material.extensions import emoji as material_emoji
    except ImportError:
        from pymdownx import emoji as material_emoji  # type: ignore[no-redef]
    return {"emoji_index": material_emoji.twemoji, "emoji_generator": material_emoji.to_svg}


def python_markdown(text: str, folder: Path) -> str:
    """The page as an MkDocs Material site shows it (its documented extension set and options)."""
    import markdown  # imported here: a renderer is no cost to the tests that render nothing

    configs = {
        "toc": {"permalink": True},
        "pymdownx.arithmatex": {"generic": True},
        "pymdownx.emoji": emoji_config(),
        "pymdownx.highlight": {"anchor_linenums": True},
        "pymdownx.magiclink": {
            "normalize_issue_symbols": True,
            "repo_url_shorthand": True,
            "social_url_shorthand": True,
            "user": "zotsync",
            "repo": "zotsync",
        },
        "pymdownx.snippets": {"base_path": [str(folder)]},
        "pymdownx.tabbed": {"alternate_style": True},
        "pymdownx.tasklist": {"custom_checkbox": True},
    }
    return markdown.markdown(text, extensions=MATERIAL_EXTENSIONS, extension_configs=configs)


def markdown_it(text: str, folder: Path) -> str:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.validateLink = lambda url: True  # judge zotsync's output, not markdown-it's own safety net
    return parser.render(text)


# -- BibTeX read back -----------------------------------------------------------------------------------

# What LaTeX makes of the commands a value may hold for ASCII text: the test's own reading of LaTeX.
_LATEX_ASCII = {
    r"\textbackslash{}": "\\",
    r"\textbraceleft{}": "{",
    r"\textbraceright{}": "}",
    r"\textless{}": "<",
    r"\textgreater{}": ">",
    r"\textbar{}": "|",
    r"\^{}": "^",
    r"\~{}": "~",
    r"\$": "$",
    r"\&": "&",
    r"\%": "%",
    r"\#": "#",
    r"\_": "_",
}
_COMMAND = re.compile("|".join(re.escape(c) for c in sorted(_LATEX_ASCII, key=len, reverse=True)))


def as_text(value: str) -> str:
    """A BibTeX value as the text it typesets (ASCII commands decoded, grouping braces dropped)."""
    parts = _COMMAND.split(value)
    commands = _COMMAND.findall(value)
    out = parts[0].replace("{", "").replace("}", "")
    for command, part in zip(commands, parts[1:], strict=True):
        out += _LATEX_ASCII[command] + part.replace("{", "").replace("}", "")
    return out


def parse(text: str) -> bibtexparser.bibdatabase.BibDatabase:
    import bibtexparser
    from bibtexparser.bparser import BibTexParser

    parser = BibTexParser(common_strings=False, ignore_nonstandard_types=False)
    parser.homogenise_fields = False
    return bibtexparser.loads(text, parser=parser)


# -- the scholarly graph's tests (test_citations.py, bench/bench_citations.py) ---------------------------

# What the fake OpenAlex knows of the demo's papers, made up for the tests: their counts, open copies, a
# retraction, and the works they cite. W9001–W9003 are works the library lacks.
TVM = Paper(
    "TVM: An Automated End-to-End Optimizing Compiler for Deep Learning",
    ("Tianqi Chen", "Thierry Moreau"),
    "2018",
    "OSDI",
    doi="10.5555/3291168.3291211",
    openalex="W9001",
    cited_by=1500,
    known_by=("openalex",),
)
HALIDE = Paper(
    "Halide: A Language and Compiler for Optimizing Parallelism, Locality, and Recomputation",
    ("Jonathan Ragan-Kelley",),
    "2013",
    "PLDI",
    doi="10.1145/2491956.2462176",
    openalex="W9002",
    cited_by=900,
    known_by=("openalex",),
)
CUTLASS = Paper("CUTLASS notes", ("Andrew Kerr",), "2019", "GitHub", openalex="W9003", known_by=("openalex",))
GRAPH_PAPERS = (
    Paper(  # Zotero's DOI is upper case; OpenAlex answers it lower case with its https://doi.org/ prefix
        "The Deep Learning Compiler: A Comprehensive Survey",
        ("Mingzhen Li",),
        "2021",
        "TPDS",
        doi="10.1109/TPDS.2020.3030548",
        openalex="W3092",
        cited_by=412,
        references=("W9001", "W9002", "W9003", "W3101"),
        oa_url="https://arxiv.org/pdf/2002.03794",
        known_by=("openalex",),
    ),
    Paper(  # retracted (in this made-up world)
        "MLIR: Scaling Compiler Infrastructure for Domain Specific Computation",
        ("Chris Lattner",),
        "2021",
        "CGO",
        doi="10.1109/CGO51591.2021.9370308",
        openalex="W3101",
        cited_by=97,
        references=("W9001", "W9002"),
        retracted=True,
        known_by=("openalex",),
    ),
    Paper(  # a work with no references
        "TIRAMISU: A Polyhedral Compiler for Expressing Fast and Portable Code",
        ("Riyadh Baghdadi",),
        "2019",
        "CGO",
        doi="10.1109/CGO.2019.8661197",
        openalex="W2903",
        cited_by=250,
        known_by=("openalex",),
    ),
    Paper(  # no DOI in Zotero: found by its title
        "Rammer: Enabling Holistic Deep Learning Compiler Optimizations with rTasks",
        ("Lingxiao Ma",),
        "2020",
        "OSDI",
        openalex="W3040",
        cited_by=120,
        references=("W9001", "W9002", "W3092"),
        known_by=("openalex",),
    ),
    Paper(  # the trap: nearly the title of the library's ROLLER, another paper by other authors
        "ROLLER: Fast and Efficient Tensor Compilation for Deep Learning Accelerators on Edge",
        ("Somebody Else",),
        "2022",
        "Other",
        openalex="W4000",
        cited_by=7777,
        known_by=("openalex",),
    ),
    TVM,
    HALIDE,
    CUTLASS,
)


def with_citations(project: Path, server: MetadataServer, **keys: Any) -> str:
    """The demo's config with the scholarly graph on (enrichment's lookups off) against `server`."""
    keys = {"enabled": False, "citations": True, "deadline": 600, **keys}
    keys["endpoints"] = {"openalex": server.endpoints()["openalex"]}
    section = ["enrich:"] + [f"  {key}: {json.dumps(value)}" for key, value in keys.items()]
    config = project / "config" / "zotsync.yaml"
    with config.open("a", encoding="utf-8") as stream:
        stream.write("\n".join(section) + "\n")
    return str(config)


def count_merges(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """A list that grows by one for each page merge `module` makes (reconcile and render happen only
    after one): a reused page, report or unchanged sync makes none."""
    calls: list[int] = []
    merge = module.merge

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return merge(*args, **kwargs)

    monkeypatch.setattr(module, "merge", counting)
    return calls


def sync_reading_no_library(run: Any, config: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`sync --json` with the processors' `Job.library` failing the test if called: what a sync reports
    when nothing was due and no processor read the library."""
    from zotsync import processing

    def unread(job: processing.Job) -> None:
        raise AssertionError("the library was read although nothing was due")

    with monkeypatch.context() as patched:
        patched.setattr(processing.Job, "library", unread)
        result = run("--config", config, "sync", "--json")
    assert result.code == 0
    return json.loads(result.out)


# axe-core's WCAG 2.1 A/AA rules and its best practices, run in an open page (after axe's own source)
AXE_RUN = (
    "async () => (await axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa',"
    " 'best-practice']})).violations.map(v => ({id: v.id, nodes: v.nodes.map(n => n.html)}))"
)


def axe_violations(page: Any, axe_source: str) -> list[dict[str, Any]]:
    """What axe-core finds wrong in a Playwright page: a list of rule ids and the elements that break them."""
    page.evaluate(axe_source)
    violations: list[dict[str, Any]] = page.evaluate(AXE_RUN)
    return violations
