"""Real Zotero data, written by Zotero and zotero.org themselves, through zotsync's sources.

* Five real `zotero.sqlite` files (Zotero 5.0.60 … 9.0.6, userdata schema 102 … 125): the MIT and Unlicense
  ones live in tests/fixtures/zotero-sqlite/ (with their licences), the GPL ones are read from
  `../shared/fixtures/zotero-sqlite/` and skipped when it is absent. Each is pulled through the CLI into a
  store and compared with an independent reading written here in plain SQL (joins through `typeName`,
  `fieldName`, `creatorType`; not the local source's code); the data directory must be byte-identical
  afterwards.
* Real Web API responses of zotero.org's web-library test account (AGPL, so only read from
  `../shared/fixtures/zotero-web-library/`): pulled through the snapshot source and through the web source
  (the fake server), and compared with an independent reading of the JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ZOTERO_API_KEY, Run
from zotero_server import FakeLibrary

from zotsync.model import Library
from zotsync.store import Store

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "tests" / "fixtures" / "zotero-sqlite"
SHARED = ROOT.parent / "shared" / "fixtures"
CATALOG = ROOT / "seeds" / "catalog.yaml"
NOT_ENTRIES = ("note", "attachment", "annotation")


@dataclass(frozen=True)
class RealDatabase:
    file: str
    folder: Path
    schema: int
    zotero: str
    regular_items: int  # top-level regular items of the user library, trashed ones included
    collections: int  # live (not trashed) collections of the user library

    @property
    def path(self) -> Path:
        return self.folder / self.file


DATABASES = [
    RealDatabase("papis-zotero-5.0.60.sqlite", SHARED / "zotero-sqlite", 102, "5.0.60", 19, 3),
    RealDatabase("papis-zotero-6.0.26.sqlite", SHARED / "zotero-sqlite", 121, "6.0.26", 5, 0),
    RealDatabase("hsteinshiromoto-bibliography-6.0.20.sqlite", BUNDLED, 120, "6.0.20", 38, 1),
    RealDatabase("nagatashigueru-zoterodatabase-7.0.3.sqlite", BUNDLED, 123, "7.0.3", 5, 1),
    RealDatabase("tasmimmedha-hidms-9.0.6.sqlite", BUNDLED, 125, "9.0.6", 3, 18),
]


def available(database: RealDatabase) -> Any:
    return pytest.param(
        database,
        id=database.zotero,
        marks=pytest.mark.skipif(not database.path.exists(), reason=f"{database.path} is not present"),
    )


# -- an independent reading of a zotero.sqlite ------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    key: str
    item_type: str
    title: str
    doi: str
    date: str  # the user's text of the multipart date
    year: str  # from the multipart date's sortable part
    first_creator: tuple[str, str, str] | None  # (creatorType, lastName, firstName)
    tags: frozenset[tuple[str, int]]
    collections: frozenset[str]
    deleted: bool


def has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()


def zotero_reading(path: Path, library_id: int) -> tuple[dict[str, Expected], dict[str, str | None]]:
    """What the file holds for one library (its libraryID): every top-level regular item and every
    collection outside the trash with its parent's key."""
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        types = "itemTypesCombined" if has_table(db, "itemTypesCombined") else "itemTypes"
        fields = "fieldsCombined" if has_table(db, "fieldsCombined") else "fields"
        mappings = "baseFieldMappingsCombined" if has_table(db, "baseFieldMappingsCombined") else None
        mappings = mappings or "baseFieldMappings"
        trashed_collections = "deletedCollections" if has_table(db, "deletedCollections") else None

        def value(item_id: int, type_id: int, base: str) -> str:
            """The item's value of field `base`, or of its type's own field mapped onto `base`."""
            row = db.execute(
                f"SELECT v.value FROM itemData d JOIN itemDataValues v ON v.valueID = d.valueID"
                f" JOIN {fields} f ON f.fieldID = d.fieldID WHERE d.itemID = ? AND (f.fieldName = ?"
                f" OR f.fieldID IN (SELECT m.fieldID FROM {mappings} m JOIN {fields} b"
                f" ON b.fieldID = m.baseFieldID WHERE m.itemTypeID = ? AND b.fieldName = ?))",
                (item_id, base, type_id, base),
            ).fetchone()
            return str(row[0]) if row else ""

        gone: set[int] = set()
        if trashed_collections:
            gone = {
                cid
                for (cid,) in db.execute(
                    "WITH RECURSIVE gone(id) AS (SELECT collectionID FROM deletedCollections"
                    " UNION SELECT c.collectionID FROM collections c"
                    " JOIN gone ON c.parentCollectionID = gone.id)"
                    " SELECT id FROM gone"
                )
            }
        collections = {
            key: parent
            for cid, key, parent in db.execute(
                "SELECT c.collectionID, c.key, p.key FROM collections c"
                " LEFT JOIN collections p ON p.collectionID = c.parentCollectionID WHERE c.libraryID = ?",
                (library_id,),
            )
            if cid not in gone
        }
        items: dict[str, Expected] = {}
        for item_id, type_id, key, type_name in db.execute(
            f"SELECT i.itemID, i.itemTypeID, i.key, t.typeName FROM items i JOIN {types} t"
            f" ON t.itemTypeID = i.itemTypeID WHERE i.libraryID = ?",
            (library_id,),
        ).fetchall():
            if type_name in NOT_ENTRIES:
                continue
            stored_date = value(item_id, type_id, "date")
            multipart = re.match(r"(\d{4})-\d\d-\d\d (.*)$", stored_date, re.S)
            creator = db.execute(
                "SELECT ct.creatorType, c.lastName, c.firstName FROM itemCreators ic"
                " JOIN creators c ON c.creatorID = ic.creatorID"
                " JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID"
                " WHERE ic.itemID = ? ORDER BY ic.orderIndex LIMIT 1",
                (item_id,),
            ).fetchone()
            items[key] = Expected(
                key=key,
                item_type=type_name,
                title=value(item_id, type_id, "title"),
                doi=value(item_id, type_id, "DOI"),
                date=multipart.group(2) if multipart else stored_date,
                year=multipart.group(1) if multipart and multipart.group(1) != "0000" else "",
                first_creator=(creator[0], creator[1] or "", creator[2] or "") if creator else None,
                tags=frozenset(
                    (str(name), int(kind))
                    for name, kind in db.execute(
                        "SELECT t.name, it.type FROM itemTags it JOIN tags t ON t.tagID = it.tagID"
                        " WHERE it.itemID = ?",
                        (item_id,),
                    )
                ),
                collections=frozenset(
                    key
                    for cid, key in db.execute(
                        "SELECT c.collectionID, c.key FROM collectionItems ci"
                        " JOIN collections c ON c.collectionID = ci.collectionID WHERE ci.itemID = ?",
                        (item_id,),
                    )
                    if cid not in gone
                ),
                deleted=bool(
                    db.execute("SELECT 1 FROM deletedItems WHERE itemID = ?", (item_id,)).fetchone()
                ),
            )
    return items, collections


def library_row(path: Path, kind: str, group_id: int | None = None) -> int:
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        if kind == "group":
            return db.execute("SELECT libraryID FROM groups WHERE groupID = ?", (group_id,)).fetchone()[0]
        return db.execute("SELECT libraryID FROM libraries WHERE type = 'user'").fetchone()[0]


# -- what zotsync stored ------------------------------------------------------------------------------------


def stored_reading(library: Library) -> tuple[dict[str, Expected], dict[str, str | None]]:
    """The same facts, from what the store holds after a pull."""
    live = {c.key for c in library.collections}
    items = {}
    for item in library.items:
        if item.parent_key or item.item_type in NOT_ENTRIES:
            continue
        first = item.creators[0] if item.creators else None
        items[item.key] = Expected(
            key=item.key,
            item_type=item.item_type,
            title=item.title,
            doi=item.get("DOI"),
            date=item.get("date"),
            year=item.year,
            first_creator=(first.creator_type, first.name or first.last_name, first.first_name)
            if first
            else None,
            tags=frozenset((t.name, t.type) for t in item.tags),
            collections=frozenset(c for c in item.collections if c in live),
            deleted=item.deleted,
        )
    return items, {c.key: c.parent_key for c in library.collections}


def tree_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file below `folder`, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_config(folder: Path, name: str, **source: Any) -> Path:
    lines = ["source:", *(f"  {key}: {json.dumps(value)}" for key, value in source.items())]
    lines += [
        f"catalog: {json.dumps(str(CATALOG))}",
        f"store: {json.dumps(str(folder / f'{name}.sqlite'))}",
        f"exports: {{dir: {json.dumps(str(folder / f'{name}-exports'))}}}",
        "",
    ]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def pulled(run: Callable[..., Run], config: Path, store: Path) -> Library:
    for _ in range(2):  # a first pull, then one that must find nothing new
        result = run("--config", str(config), "pull")
        assert result.code == 0, result.err
    assert "up to date" in result.err
    with Store(store) as opened:
        return opened.full_library()


def data_directory(tmp_path: Path, database: RealDatabase) -> Path:
    """A copy of the file as a data directory's zotero.sqlite, beside a storage folder."""
    folder = tmp_path / "Zotero"
    (folder / "storage").mkdir(parents=True)
    shutil.copyfile(database.path, folder / "zotero.sqlite")
    (folder / "zotero.sqlite").chmod(0o644)
    return folder


# -- the five databases -------------------------------------------------------------------------------------


@pytest.mark.parametrize("database", [available(d) for d in DATABASES])
def test_a_real_database_reads_exactly(tmp_path: Path, run, database: RealDatabase) -> None:
    folder = data_directory(tmp_path, database)
    path = folder / "zotero.sqlite"
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        schema = db.execute("SELECT version FROM version WHERE schema = 'userdata'").fetchone()[0]
    assert schema == database.schema
    before = tree_digest(folder)

    config = write_config(tmp_path, "user", type="local", path=str(folder))
    library = pulled(run, config, tmp_path / "user.sqlite")
    want_items, want_collections = zotero_reading(path, library_row(path, "user"))
    got_items, got_collections = stored_reading(library)

    assert len(want_items) == database.regular_items and len(want_collections) == database.collections
    assert sorted(got_items) == sorted(want_items)
    for key, want in want_items.items():
        assert got_items[key] == want, key
    assert got_collections == want_collections
    # the reading above is not vacuous: the fields it compares are filled in these files
    assert sum(bool(e.title) for e in want_items.values()) > len(want_items) / 2
    assert any(e.year for e in want_items.values())

    status = json.loads(run("--config", str(config), "status", "--format", "json").out)["library"]
    assert (status["type"], status["source"]) == ("user", str(path))
    assert status["items"] == sum(not e.deleted for e in want_items.values())
    assert status["trashed"] == sum(e.deleted for e in want_items.values())

    assert tree_digest(folder) == before  # byte-identical, and no -journal, -wal or -shm left behind


HIDMS = next(d for d in DATABASES if d.zotero == "9.0.6")


@pytest.mark.skipif(not HIDMS.path.exists(), reason="the 9.0.6 database is not present")
def test_the_real_group_library(tmp_path: Path, run) -> None:
    folder = data_directory(tmp_path, HIDMS)
    path = folder / "zotero.sqlite"
    before = tree_digest(folder)
    config = write_config(
        tmp_path, "group", type="local", path=str(folder), library_type="group", library_id="6627688"
    )
    library = pulled(run, config, tmp_path / "group.sqlite")
    want_items, want_collections = zotero_reading(path, library_row(path, "group", 6627688))
    assert stored_reading(library) == (want_items, want_collections)
    assert (library.library_type, library.library_id) == ("group", "6627688")
    # the group's own rows: none of the user library's 7 items or 30 collections came along
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        in_group = db.execute("SELECT count(*) FROM items WHERE libraryID = 2").fetchone()[0]
    assert len(library.items) == in_group
    status = run("--config", str(config), "status").out.splitlines()[0]
    assert status.startswith(f'library: group 6627688 "HIDMS" from {path}, version ')

    wrong = write_config(
        tmp_path, "wrong", type="local", path=str(folder), library_type="group", library_id="2"
    )
    result = run("--config", str(wrong), "pull")
    assert (result.code, result.err.splitlines()) == (
        2,
        [f'zotsync: error: {path} has no group 2; its groups: 6627688 "HIDMS"'],
    )
    assert tree_digest(folder) == before


# -- the real Web API responses ------------------------------------------------------------------------------

WEB_LIBRARY = SHARED / "zotero-web-library"
needs_web_library = pytest.mark.skipif(
    not (WEB_LIBRARY / "test-user-get-items-golden.json").exists(), reason=f"{WEB_LIBRARY} is not present"
)


def web_library_objects() -> list[dict[str, Any]]:
    """Every object of the captured responses (the newest version of each), and the 9 collections of
    the saved state wrapped as API objects, as the fixture's README says."""
    objects: dict[str, dict[str, Any]] = {}
    for response in sorted(WEB_LIBRARY.glob("test-user-*.json")):
        for obj in json.loads(response.read_text("utf-8")):
            if obj["key"] not in objects or obj["version"] > objects[obj["key"]]["version"]:
                objects[obj["key"]] = obj
    state = json.loads((WEB_LIBRARY / "state-desktop-test-user-library-view.json").read_text("utf-8"))
    for data in state["libraries"]["u1"]["dataObjects"].values():
        if "name" in data and "parentCollection" in data:
            library = {"type": "user", "id": 1}
            objects[data["key"]] = {
                "key": data["key"],
                "version": data["version"],
                "library": library,
                "data": data,
            }
    return list(objects.values())


def json_reading(objects: list[dict[str, Any]]) -> tuple[dict[str, Expected], dict[str, str | None]]:
    """The same facts, read from the JSON by hand."""
    collections = {o["key"]: o["data"] for o in objects if "parentCollection" in o["data"]}

    def trashed(key: str) -> bool:
        data = collections[key]
        return bool(data.get("deleted")) or bool(
            data["parentCollection"] and trashed(data["parentCollection"])
        )

    live = {key: data["parentCollection"] or None for key, data in collections.items() if not trashed(key)}
    items = {}
    for obj in objects:
        data = obj["data"]
        if "parentCollection" in data or data.get("parentItem") or data["itemType"] in NOT_ENTRIES:
            continue
        first = data["creators"][0] if data.get("creators") else None
        year = re.search(r"\b(\d{4})\b", data.get("date", ""))
        items[obj["key"]] = Expected(
            key=obj["key"],
            item_type=data["itemType"],
            title=data.get("title", ""),
            doi=data.get("DOI", ""),
            date=data.get("date", ""),
            year=year.group(1) if year else "",
            first_creator=(
                first["creatorType"],
                first.get("name") or first.get("lastName", ""),
                first.get("firstName", ""),
            )
            if first
            else None,
            tags=frozenset((t["tag"], int(t.get("type", 0))) for t in data.get("tags", ())),
            collections=frozenset(c for c in data.get("collections", ()) if c in live),
            deleted=bool(data.get("deleted")),
        )
    return items, live


def check_web_library(library: Library, objects: list[dict[str, Any]]) -> None:
    want_items, want_collections = json_reading(objects)
    got_items, got_collections = stored_reading(library)
    assert sorted(got_items) == sorted(want_items)
    for key, want in want_items.items():
        assert got_items[key] == want, key
    assert got_collections == want_collections
    # children: every note, attachment and annotation under its parent, with its own fields
    children = {o["key"]: o["data"] for o in objects if o["data"].get("parentItem")}
    stored = {i.key: i for i in library.items}
    assert {k: stored[k].parent_key for k in children} == {k: d["parentItem"] for k, d in children.items()}
    for key, data in children.items():
        for name in ("note", "annotationText", "annotationComment", "contentType", "filename"):
            assert stored[key].fields.get(name) == data.get(name), (key, name)
    assert len(library.items) == sum("itemType" in o["data"] for o in objects)


@needs_web_library
def test_the_real_web_library_through_the_snapshot_source(tmp_path: Path, run) -> None:
    objects = web_library_objects()
    assert len(objects) == 58 + 9
    assert len({o["data"]["itemType"] for o in objects if "itemType" in o["data"]}) >= 10
    snapshot = tmp_path / "web-library.json"
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    library = pulled(
        run, write_config(tmp_path, "snap", type="snapshot", path=str(snapshot)), tmp_path / "snap.sqlite"
    )
    check_web_library(library, objects)
    assert "Trashed Collection" not in {c.name for c in library.collections}
    assert any(i.item_type == "annotation" for i in library.items)


@needs_web_library
def test_the_real_web_library_through_the_web_source(tmp_path: Path, run, zotero_api) -> None:
    objects = web_library_objects()
    server = zotero_api(FakeLibrary(objects=objects, library_id="1", name="zotero-test"))
    config = write_config(
        tmp_path,
        "web",
        type="web",
        library_type="user",
        library_id="1",
        api_key=ZOTERO_API_KEY,
        base_url=server.url,
    )
    library = pulled(run, config, tmp_path / "web.sqlite")
    check_web_library(library, objects)
    assert (library.library_type, library.library_id) == ("user", "1")
