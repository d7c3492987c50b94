"""The SQLite store and `pull` from a snapshot: idempotence, exact change tracking, atomicity."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SEEDS
from factories import api_collection, api_item, api_pdf, edit, read, write_json

from zotsync.app.pull import pull
from zotsync.errors import StoreError
from zotsync.model import Changes, Collection, Item, Tag
from zotsync.sources import SnapshotSource
from zotsync.store import MIGRATIONS, Store, schema


def seed_objects() -> list[dict]:
    return json.loads((SEEDS / "zotero-library.json").read_text(encoding="utf-8"))


def snapshot_rows(store: Store) -> dict[str, tuple]:
    return {
        i.key: (i.version, i.title, i.deleted, i.tags, i.collections, i.parent_key)
        for i in store.load().items
    }


def test_migrations_are_recorded_and_reopening_is_harmless(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
    rows = read(path, "SELECT version, name FROM schema_migrations ORDER BY version")
    # each migration once, by name, in order; the numbers an older zotsync counts stay whole, the retired
    # migration's included
    ran = [step.__name__ for step in MIGRATIONS]
    assert [name for _, name in rows] == sorted([*ran, *schema.RETIRED], key=schema.NUMBERED.__getitem__)
    assert [number for number, _ in rows] == list(range(1, len(rows) + 1))


def test_a_store_from_before_the_names_gets_them_and_runs_nothing_it_had(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
        items = snapshot_rows(store)
    named = read(path, "SELECT version, name FROM schema_migrations ORDER BY version")
    # as the zotsync before the names left it: numbers alone, up to 14
    edit(
        path,
        "DELETE FROM schema_migrations WHERE version > 14",
        "ALTER TABLE schema_migrations DROP COLUMN name",
    )
    had = read(path, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        assert snapshot_rows(store) == items
    assert read(path, "SELECT version, name FROM schema_migrations ORDER BY version") == named
    # no migration it had ran again: their records are the ones it had
    assert read(path, "SELECT version, applied_at FROM schema_migrations WHERE version <= 14") == had


def test_a_migration_runs_its_own_frozen_code_never_today_s_codec() -> None:
    """A published migration must do what it did: what it needs of the row codec, which later versions
    change, it holds a copy of (the end of an upgrade, `settle`, is where today's codec belongs)."""
    from zotsync.store import codec

    own = {  # the codec's functions, classes and constants
        name
        for name, value in vars(codec).items()
        if getattr(value, "__module__", None) == codec.__name__ or name.lstrip("_").isupper()
    }
    for step in MIGRATIONS:
        assert not set(step.__code__.co_names) & own, step.__name__


def page_size(path: Path) -> int:
    return read(path, "PRAGMA page_size")[0][0]


def test_a_new_store_has_8_kib_pages_and_an_older_one_keeps_its_own(tmp_path: Path) -> None:
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    with Store(new) as store:
        pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
    assert page_size(new) == 8192
    Store(old).close()
    db = sqlite3.connect(old, isolation_level=None)  # as the zotsync before made it: 4 KiB pages
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("PRAGMA page_size = 4096")
    db.execute("VACUUM")
    db.close()
    assert page_size(old) == 4096
    with Store(old) as store:
        pull(SnapshotSource(SEEDS / "zotero-library.json"), store)
    assert page_size(old) == 4096
    with Store(old, readonly=True) as older, Store(new, readonly=True) as newer:
        assert snapshot_rows(older) == snapshot_rows(newer)


def test_a_store_from_a_newer_zotsync_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'future')")
    with pytest.raises(StoreError, match="newer zotsync"):
        Store(path)


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_text("not a database" * 100)
    with pytest.raises(StoreError, match=r"is not a zotsync store \(it is not an SQLite database\)"):
        Store(path)
    assert path.read_text() == "not a database" * 100


def test_pulling_twice_is_idempotent(tmp_path: Path) -> None:
    source = SnapshotSource(SEEDS / "zotero-library.json")
    with Store(tmp_path / "s.sqlite") as store:
        first = pull(source, store)
        rows = snapshot_rows(store)
        second = pull(source, store)
        assert (first.result.items_added, first.to_version) == (101, 480)
        assert not second.result.changed
        assert snapshot_rows(store) == rows


def test_a_changed_snapshot_is_reflected_exactly(tmp_path: Path) -> None:
    objects = seed_objects()
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(path), store)
        items = [o for o in objects if "name" not in o["data"] and "parentItem" not in o["data"]]
        edited, removed, trashed = items[0], items[1], items[2]
        edited["data"]["title"] = "Retitled"
        edited["data"]["tags"] = [{"tag": "new"}]
        edited["version"] = edited["data"]["version"] = 481
        trashed["data"]["deleted"] = 1
        trashed["version"] = trashed["data"]["version"] = 482
        objects.remove(removed)  # a hand-edited snapshot need not bump any version for a removal
        objects.append(api_item("NEWW2222", "Brand new", version=483))
        write_json(path, objects)
        report = pull(SnapshotSource(path), store)
        rows = snapshot_rows(store)
    r = report.result
    assert (r.items_added, r.items_updated, r.items_removed) == (1, 2, 1)
    assert rows[edited["key"]][1:4] == ("Retitled", False, (Tag("new"),))
    assert rows[trashed["key"]][2] is True
    assert removed["key"] not in rows and "NEWW2222" in rows
    assert report.to_version == 483


def test_deleting_a_collection_drops_its_subcollections_and_their_memberships(tmp_path: Path) -> None:
    objects = [
        api_collection("TQPP2222", "Top"),
        api_collection("SUBB2222", "Sub", "TQPP2222"),
        api_collection("KEEP2222", "Keep"),
        api_item("ITEM2222", "In sub", collections=["SUBB2222", "KEEP2222"]),
        api_pdf("PDFF2222", "ITEM2222"),
    ]
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        source = SnapshotSource(path)
        pull(source, store)
        # What an incremental source reports: only the parent in /deleted, yet its child goes too.
        store.apply(Changes(library_version=999, deleted_collections=frozenset({"TQPP2222"})), source.id)
        library = store.load()
    assert {c.key for c in library.collections} == {"KEEP2222"}
    assert {i.key: i.collections for i in library.items}["ITEM2222"] == ("KEEP2222",)


def test_another_library_replaces_the_store_content(tmp_path: Path) -> None:
    one = write_json(tmp_path / "one.json", [api_item("QNEE2222", "One")])
    two = write_json(tmp_path / "two.json", [api_item("TWQQ2222", "Two")])
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(one), store)
        pull(SnapshotSource(two), store)
        assert [i.key for i in store.load().items] == ["TWQQ2222"]


def test_a_failure_mid_pull_leaves_the_previous_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zotsync.store.landing as store_module

    objects = seed_objects()
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(path), store)
        before = (snapshot_rows(store), store.library_version)
        for obj in objects:
            obj["version"] = obj["data"]["version"] = obj["version"] + 1000
        write_json(path, objects)
        calls = 0
        real = store_module.item_record

        def fail_halfway(item):
            nonlocal calls
            calls += 1
            if calls == 30:
                raise OSError("disk full")
            return real(item)

        monkeypatch.setattr(store_module, "BATCH", 10)  # two batches are written when it fails
        monkeypatch.setattr(store_module, "item_record", fail_halfway)
        with pytest.raises(OSError):
            pull(SnapshotSource(path), store)
        assert (snapshot_rows(store), store.library_version) == before


@pytest.mark.slow
def test_a_killed_process_leaves_a_consistent_store(tmp_path: Path) -> None:
    """SIGKILL in the middle of the write transaction: the next open sees the old state, not half."""
    objects = seed_objects()
    path = write_json(tmp_path / "lib.json", objects)
    db_path = tmp_path / "s.sqlite"
    with Store(db_path) as store:
        pull(SnapshotSource(path), store)
        before = (snapshot_rows(store), store.library_version)
    for obj in objects:
        obj["version"] = obj["data"]["version"] = obj["version"] + 1000
    write_json(path, objects)
    script = textwrap.dedent(f"""
        import os, signal
        import zotsync.store.landing as s
        from pathlib import Path
        from zotsync.store import Store
        from zotsync.sources import SnapshotSource
        from zotsync.app.pull import pull
        real, calls = s.item_record, [0]
        def convert(item):
            calls[0] += 1
            if calls[0] == 40:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(item)
        s.BATCH = 10  # three batches are written when it dies
        s.item_record = convert
        pull(SnapshotSource(Path({str(path)!r})), Store(Path({str(db_path)!r})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == -9
    with Store(db_path) as store:
        assert (snapshot_rows(store), store.library_version) == before
        assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_trashed_collection_leaves_and_its_restore_brings_its_items_back(tmp_path: Path) -> None:
    top = api_collection("TQPP2222", "Top", version=1)
    objects = [
        top,
        api_collection("SUBB2222", "Sub", "TQPP2222", version=1),
        api_item("ITEM2222", "In sub", collections=["SUBB2222"], version=1),
    ]
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(path), store)
        top["data"]["deleted"] = True
        top["version"] = top["data"]["version"] = 2
        write_json(path, objects)
        pull(SnapshotSource(path), store)
        trashed = store.load()
        top["data"]["deleted"] = False
        objects[1]["version"] = objects[1]["data"]["version"] = 3  # Zotero restores the subtree too
        top["version"] = top["data"]["version"] = 3
        write_json(path, objects)
        pull(SnapshotSource(path), store)
        restored = store.load()
    assert trashed.collections == () and trashed.items[0].collections == ()
    assert {c.key for c in restored.collections} == {"TQPP2222", "SUBB2222"}
    assert restored.items[0].collections == ("SUBB2222",)


def test_a_hand_edited_snapshot_needs_no_version_bump(tmp_path: Path) -> None:
    objects = [api_item("ITEM2222", "Original", version=5)]
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(path), store)
        objects[0]["data"]["title"] = "Edited by hand"
        write_json(path, objects)
        assert pull(SnapshotSource(path), store).result.items_updated == 1
        assert store.load().items[0].title == "Edited by hand"
        assert not pull(SnapshotSource(path), store).result.changed


def test_pull_full_rewrites_objects_a_trusted_version_would_skip(tmp_path: Path) -> None:
    def changes(title: str) -> Changes:
        return Changes(library_version=5, items=(Item.from_api(api_item("ITEM2222", title, version=5)),))

    with Store(tmp_path / "s.sqlite") as store:
        store.apply(changes("Original"), "web:x")
        assert not store.apply(changes("Fixed upstream, same version"), "web:x").changed
        assert store.load().items[0].title == "Original"
        assert store.apply(changes("Fixed upstream, same version"), "web:x", rewrite=True).items_updated == 1
        assert store.load().items[0].title == "Fixed upstream, same version"


def test_a_subcollection_moved_out_of_a_deleted_parent_in_the_same_pull_stays(tmp_path: Path) -> None:
    objects = [
        api_collection("TQPP2222", "Top"),
        api_collection("SUBB2222", "Sub", "TQPP2222"),
        api_collection("QTHR2222", "Other"),
    ]
    path = write_json(tmp_path / "lib.json", objects)
    with Store(tmp_path / "s.sqlite") as store:
        source = SnapshotSource(path)
        pull(source, store)
        moved = Collection.from_api(api_collection("SUBB2222", "Sub", "QTHR2222", version=900))
        changes = Changes(
            library_version=900, collections=(moved,), deleted_collections=frozenset({"TQPP2222"})
        )
        store.apply(changes, source.id)
        assert store.load().collection_paths() == {"QTHR2222": "Other", "SUBB2222": "Other / Sub"}


def test_every_table_of_a_new_store_is_one_the_mark_check_knows(tmp_path: Path) -> None:
    """A store from before the mark is told from another program's database by its tables: the list
    `schema.TABLES` must name every table a migration makes."""
    from zotsync.store.schema import TABLES

    path = tmp_path / "s.sqlite"
    Store(path).close()
    made = {
        name
        for (name,) in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert made <= TABLES


def test_the_rows_json_is_json_s_own_text_whatever_the_characters(tmp_path: Path) -> None:
    """The store's JSON columns are written by two encoders (msgspec where no float can be, json
    elsewhere); the text must be what `json.dumps(…, ensure_ascii=False)` writes, byte for byte, for
    every control character, characters beyond the basic plane and a float."""
    from zotsync.store.codec import LEAF_JSON

    odd = "".join(map(chr, range(32))) + '"\\/\x7f\u2028\u00e9\U0001f4dd'
    surrogate = "broken \ud800 text"  # msgspec refuses it; a source repairs it before the store sees it
    assert LEAF_JSON([[surrogate, odd]]) == json.dumps(
        [[surrogate, odd]], ensure_ascii=False, separators=(",", ":")
    )
    other = f"{odd} and more"

    def compact(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def stored(item: Item) -> tuple[str, ...]:
        path = tmp_path / f"{item.key}.sqlite"
        with Store(path) as store:
            store.apply(Changes(library_version=item.version, items=(item,)), "web:x")
        db = sqlite3.connect(path)
        query = "SELECT i.creators, i.tags, i.collections, p.fields, p.facts FROM items i JOIN item_page p"
        row = db.execute(query).fetchone()
        db.close()
        return tuple(row)

    fields = {"DOI": f"10.1/{odd}", "publicationTitle": other, "url": f"https://example.org/{odd}"}
    item = Item.from_api(
        api_item(
            "WDDC2222",
            f"Title {odd}",
            creators=[{"creatorType": "author", "firstName": odd, "lastName": other}],
            tags=[odd, {"tag": other, "type": 1}],
            collections=["CQLL2222"],
            version=7,
            **fields,
        )
    )
    creators, tags, memberships, page_fields, facts = stored(item)
    assert creators == compact([["author", other, odd, ""]])
    assert tags == compact([[odd, 0], [other, 1]])
    assert memberships == compact(["CQLL2222"])
    assert page_fields == compact({k: v for k, v in item.fields.items() if k in {*fields, "dateAdded"}})
    values = json.loads(facts)
    assert facts == compact(values) and values[4] == f"10.1/{odd}" and values[5].endswith(odd)

    # A field that is no string (Zotero never sends one) is kept as json writes it.
    with_float = Item.from_api(api_item("WFLT2222", "Float", extra=1e16, url=odd, version=8))
    page_fields = stored(with_float)[3]
    assert "1e+16" in page_fields
    assert page_fields == compact(
        {k: v for k, v in with_float.fields.items() if k in {"url", "extra", "dateAdded"}}
    )
