"""`Store.load_page` reads only the page's fields, and the page it gives is the page a full load gives."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from conftest import SEEDS
from factories import api_item, api_pdf, back_to_schema_6, edit, read, write_json
from zotero_server import synthetic_library

from zotsync import formats
from zotsync.app.pull import pull
from zotsync.catalogue import load_catalogue
from zotsync.export import Page, render_page
from zotsync.reconcile import Options, reconcile
from zotsync.reconcile.venue import load_venue_table
from zotsync.sources import SnapshotSource
from zotsync.store import MIGRATIONS, PAGE_FIELDS, Store


def pages(store: Store, catalogue_path: Path) -> tuple[list[str], list[str]]:
    catalogue = load_catalogue(catalogue_path)
    options = Options(read_tags=("read",), archive_link="a/{key}", venues=load_venue_table())
    rendered = []
    # The full load (no stored facts), the lean one, and the lean one without creators (export's).
    for library in (store.load(), store.load_page(), store.load_page(creators=False)):
        page = Page(catalogue.title, catalogue.description, reconcile(catalogue, library, options).placements)
        rendered.append([render_page(fmt, page) for fmt in ("md", "csv")])
    assert rendered[2] == rendered[1]
    # A CSV shows none of Zotero's links: rows built without them (nor the attachments they read) give
    # the same file, as `export` builds it.
    linkless = replace(options, zotero_links=False)
    rows = reconcile(catalogue, store.load_page(creators=False, attachments=False), linkless).placements
    assert not formats.get("csv").needs & formats.Needs.ZOTERO_LINKS
    assert render_page("csv", Page("", "", rows)) == rendered[1][1]
    return rendered[0], rendered[1]


def test_the_lean_page_is_the_full_page_for_the_demo(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
        full, lean = pages(store, SEEDS / "catalog.yaml")
    assert lean == full


def test_the_lean_page_is_the_full_page_for_a_large_synthetic_library(tmp_path: Path) -> None:
    objects = synthetic_library(3000, seed=4)
    regular = [o["data"] for o in objects if "parentItem" not in o["data"] and "name" not in o["data"]]
    for n, data in enumerate(regular[:300]):  # exercise every page field the synthetic data lacks
        data["extra"] = f"Read_Status: {'read' if n % 2 else 'new'}\narXiv: 2501.{n:05d}"
        data["ISBN"] = "978-0-13-235088-4" if n == 7 else ""
        data["conferenceName"] = "Programming Language Design and Implementation" if n % 3 == 0 else ""
    catalogue = tmp_path / "catalog.yaml"
    entries = [f'      - title: "{d["title"]}"' for d in regular[:200:3]] + [
        f'      - {{title: "working title {n}", arxiv: "2501.{n:05d}"}}' for n in range(1, 300, 7)
    ]
    catalogue.write_text("categories:\n  - name: A\n    entries:\n" + "\n".join(entries) + "\n", "utf-8")
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(path), store)
        full, lean = pages(store, catalogue)
    assert lean == full
    assert "✅" in lean[0] and "'" in lean[1]  # read statuses and abbreviated venues made it through


def test_the_lean_load_leaves_abstracts_and_notes_in_the_store(tmp_path: Path) -> None:
    objects = [
        api_item("ITEM2222", "A paper", abstractNote="long " * 200, date="2021", extra="DOI: 10.1/x"),
        api_pdf("PDFF2222", "ITEM2222"),
        {
            "key": "NQTE2222",
            "version": 1,
            "data": {
                "key": "NQTE2222",
                "version": 1,
                "itemType": "note",
                "parentItem": "ITEM2222",
                "note": "<p>private</p>",
            },
        },
    ]
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(write_json(tmp_path / "lib.json", objects)), store)
        lean = {i.key: i for i in store.load_page().items}
        full = {i.key: i for i in store.load().items}
    assert set(lean["ITEM2222"].fields) <= set(PAGE_FIELDS)
    assert "abstractNote" not in lean["ITEM2222"].fields and "NQTE2222" not in lean  # no note is read
    assert lean["ITEM2222"].doi == "10.1/x" and lean["ITEM2222"].year == "2021"
    assert lean["PDFF2222"].is_pdf
    assert full["ITEM2222"].fields["abstractNote"] == "long " * 200  # the full objects stay readable
    assert full["NQTE2222"].get("note") == "<p>private</p>"
    assert {k: v for k, v in full["ITEM2222"].fields.items() if k in PAGE_FIELDS} == dict(
        lean["ITEM2222"].fields
    )


def test_an_older_store_gets_its_page_fields_on_opening(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
    # Back to the schema-2 store an older zotsync wrote: no side table, no triggers.
    back_to_schema_6(path)
    db = sqlite3.connect(path)
    for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE item_page")
    db.execute("DELETE FROM sync_state WHERE name = 'content_generation'")
    db.execute("DELETE FROM schema_migrations WHERE version > 2")
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.schema_version >= 3
        lean = {i.key: i.fields for i in store.load_page().items}
        full = {i.key: i.fields for i in store.load().items if i.item_type not in ("note", "annotation")}
    assert lean.keys() == full.keys()
    assert all(lean[k] == {f: v for f, v in full[k].items() if f in PAGE_FIELDS} for k in full)


def test_a_schema_4_store_gets_its_page_rows_with_tags_and_memberships_in_order(tmp_path: Path) -> None:
    """Migration 6 rebuilds `item_page` as whole rows and 7 moves tags and memberships into the items'
    rows; each item's tags and collections keep the order of `item_tags` and `item_collections` (read
    here with plain SQL), also where it is not sorted, and the two tables are gone."""
    path = tmp_path / "s.sqlite"
    objects = [
        {"key": key, "version": 1, "data": {"key": key, "version": 1, "name": key, "parentCollection": False}}
        for key in ("CQLLZZZZ", "CQLLAAAA", "CQLLMMMM")
    ] + [
        api_item(
            "ITEM7777",
            "One",
            tags=["zeta", "alpha", {"tag": "mid", "type": 1}],
            collections=["CQLLZZZZ", "CQLLAAAA"],
        ),
        api_item("ITEM2222", "Two", tags=["b", "a"], collections=["CQLLMMMM", "GQNEGQNE", "CQLLAAAA"]),
        api_item("ITEM3333", "Three"),
    ]
    with Store(path) as store:
        pull(SnapshotSource(write_json(tmp_path / "lib.json", objects)), store)
    # Back to the schema-4 store an older zotsync wrote: `item_page` held the page fields only, and tags
    # and memberships had tables of their own.
    back_to_schema_6(path)
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER IF EXISTS item_page_update")
    db.execute("DROP TABLE item_page")
    db.execute("CREATE TABLE item_page (key TEXT PRIMARY KEY, fields TEXT NOT NULL)")
    db.execute("DELETE FROM schema_migrations WHERE version > 4")
    db.commit()
    tags = {
        key: [(tag, kind) for _, tag, kind in rows]
        for key, rows in groupby(
            db.execute("SELECT item_key, tag, type FROM item_tags ORDER BY item_key, position"), itemgetter(0)
        )
    }
    memberships = {
        key: [c for _, c in rows]
        for key, rows in groupby(
            db.execute("SELECT item_key, collection_key FROM item_collections ORDER BY item_key, position"),
            itemgetter(0),
        )
    }
    db.close()
    assert tags["ITEM7777"] == [("zeta", 0), ("alpha", 0), ("mid", 1)]  # the order Zotero gave, unsorted
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        lean = {i.key: i for i in store.load_page().items}
        full = {i.key: i for i in store.load().items}
        snapshot = {i.key: i for i in store.full_library().items}
    tables = {name for (name,) in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert not tables & {"item_tags", "item_collections"}
    assert snapshot["ITEM2222"].collections == tuple(memberships["ITEM2222"])  # a snapshot keeps them all
    assert {k: [(t.name, t.type) for t in i.tags] for k, i in lean.items() if i.tags} == tags
    assert lean["ITEM2222"].collections == (
        "CQLLMMMM",
        "CQLLAAAA",
    )  # a collection the store lacks is left out
    assert memberships["ITEM2222"] == ["CQLLMMMM", "GQNEGQNE", "CQLLAAAA"]
    assert lean["ITEM3333"].tags == () and lean["ITEM3333"].collections == ()
    assert [(i.key, i.title, i.creators, i.tags, i.collections) for i in lean.values()] == [
        (i.key, i.title, i.creators, i.tags, i.collections) for i in full.values()
    ]


def test_the_page_fields_follow_every_kind_of_write(tmp_path: Path) -> None:
    """Kept by triggers: an update in place (not only delete + insert) refreshes them too."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        pull(
            SnapshotSource(write_json(tmp_path / "lib.json", [api_item("ITEM2222", "T", date="2020")])), store
        )
    db = sqlite3.connect(path)
    fields = json.loads(db.execute("SELECT fields FROM items").fetchone()[0])
    people = [["editor", "Hopper", "Grace", ""]]  # creator_type, last_name, first_name, name
    db.execute(
        "UPDATE items SET fields = ?, title = 'Retitled', creators = ?",
        (json.dumps({**fields, "date": "1999"}), json.dumps(people)),
    )
    db.commit()
    db.close()
    with Store(path) as store:
        (item,) = store.load_page().items
        assert (item.year, item.title, item.creators) == ("1999", "Retitled", store.load().items[0].creators)
        assert [c.display for c in item.creators] == ["Hopper, Grace"]


def test_tags_and_memberships_edited_by_hand_show_on_the_page_and_keep_its_facts(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        library = write_json(tmp_path / "lib.json", [api_item("ITEM2222", "T", tags=["a"])])
        pull(SnapshotSource(library), store)
    edit(path, """UPDATE items SET tags = '[["hand",0]]', collections = '["CQLL7777"]'""")
    with Store(path) as store:
        library = store.load_page()
        (item,) = library.items
        assert item.tags == (("hand", 0),) and item.key in library.facts  # no fact reads the tags
        assert store.full_library().items[0].collections == ("CQLL7777",)


def test_page_rows_go_with_their_items(tmp_path: Path) -> None:
    """A trigger, not a foreign key, ties a page row to its item: a removed item, a store refilled from
    another source and a hand-edited key leave no page row behind."""
    path = tmp_path / "s.sqlite"
    first = write_json(tmp_path / "a.json", [api_item("ITEM7777", "One"), api_item("ITEM2222", "Two")])
    with Store(path) as store:
        pull(SnapshotSource(first), store)
        pull(SnapshotSource(write_json(first, [api_item("ITEM7777", "One")])), store)

    def page_keys() -> list[str]:
        return [key for (key,) in read(path, "SELECT key FROM item_page ORDER BY key")]

    assert page_keys() == ["ITEM7777"]
    with Store(path) as store:  # another source replaces the store's content
        pull(SnapshotSource(write_json(tmp_path / "b.json", [api_item("ITEM3333", "Three")])), store)
    assert page_keys() == ["ITEM3333"]
    db = sqlite3.connect(path)
    db.execute("UPDATE items SET key = 'ITEM4444'")
    db.commit()
    db.close()
    assert page_keys() == ["ITEM4444"]
    with Store(path) as store:
        assert [i.key for i in store.load_page().items] == ["ITEM4444"]
