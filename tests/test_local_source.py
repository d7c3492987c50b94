"""The local source against real zotero.sqlite files (built by tests/zotero_sqlite.py).

The demo library in seeds/ is rebuilt as a Zotero database and pulled through the CLI; the store must hold
what the snapshot source gives for the same library. The rest covers what a running Zotero does to the
file (exclusive lock, WAL), local edits, the trash, permanent deletions and the error paths.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import factories
import pytest
from zotero_sqlite import (
    FEED_LIBRARY,
    GROUP_ID,
    GROUP_LIBRARY,
    GROUP_NAME,
    ZOTERO_10,
    build,
    held,
    leave_hot_journal,
    leave_wal,
    load_snapshot,
)

from zotsync.cli import main
from zotsync.errors import ConfigError, SourceError
from zotsync.model import Creator, Item, Library, Tag
from zotsync.sources import local
from zotsync.sources.local import LocalSource
from zotsync.store import Store

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "seeds" / "zotero-library.json"
CATALOG = ROOT / "seeds" / "catalog.yaml"
FIXTURES = ROOT / "tests" / "fixtures" / "zotero-api"


# -- helpers ------------------------------------------------------------------------------------------


def api(key: str, title: str, item_type: str = "journalArticle", version: int = 1, **data: Any) -> dict:
    """An API item at version 1 unless told otherwise (the local reader derives versions from it)."""
    return factories.api_item(key, title, item_type, version=version, **data)


def api_collection(key: str, name: str, parent: str | None = None, version: int = 1) -> dict:
    return factories.api_collection(key, name, parent, version=version)


SMALL = [
    api_collection("CQLLAAAA", "Compilers"),
    api_collection("CQLLBBBB", "Kernels", parent="CQLLAAAA"),
    api(
        "ITEMAAAA",
        "Rammer",
        "conferencePaper",
        proceedingsTitle="OSDI",
        date="2020-11-04",
        collections=["CQLLAAAA"],
    ),
    api("ITEMBBBB", "Roller", collections=["CQLLBBBB"], publicationTitle="OSDI'22", DOI="10.1/roller"),
    api("ITEMCCCC", "Welder", date="2023"),
]


def read(path: Path) -> dict[str, Item]:
    changes = LocalSource(path).changes(None)
    assert changes.complete
    return {item.key: item for item in changes.items}


def write_config(folder: Path, source_path: Path, kind: str = "local", **source: str) -> Path:
    config = folder / f"zotsync-{kind}.yaml"
    more = "".join(f'\n              {key}: "{value}"' for key, value in source.items())
    config.write_text(
        textwrap.dedent(
            f"""\
            source:
              type: {kind}
              path: "{source_path}"{more}
            catalog: "{CATALOG}"
            store: "{folder / f"store-{kind}.sqlite"}"
            exports:
              dir: "{folder / f"exports-{kind}"}"
              formats: [md, csv]
            """
        ),
        encoding="utf-8",
    )
    return config


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pull(capsys: pytest.CaptureFixture[str], config: Path) -> str:
    code, _, err = cli(capsys, "--config", str(config), "pull")
    assert code == 0, err
    return err


def load(folder: Path, kind: str = "local") -> Library:
    with Store(folder / f"store-{kind}.sqlite") as store:
        return store.load()


def comparable(item: Item) -> tuple[Any, ...]:
    """Everything but the version (the local source's versions follow its own rule)."""
    return (
        item.key,
        item.item_type,
        item.title,
        item.creators,
        tuple(sorted(item.tags, key=lambda t: (t.name, t.type))),
        tuple(sorted(item.collections)),
        item.parent_key,
        item.deleted,
        dict(item.fields),
    )


def files_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "Zotero data"  # a space, as in "~/Library/Application Support/…"-style paths
    folder.mkdir()
    return folder


# -- the demo library ---------------------------------------------------------------------------------


def test_demo_library_pulls_the_same_as_the_snapshot(tmp_path: Path, data_dir: Path, capsys) -> None:
    build(data_dir / "zotero.sqlite", load_snapshot(SEED), seed=1)
    pull(capsys, write_config(tmp_path, SEED, "snapshot"))
    pull(capsys, write_config(tmp_path, data_dir))

    expected, got = load(tmp_path, "snapshot"), load(tmp_path)
    assert len(got.items) == len(expected.items) > 100
    assert [comparable(i) for i in got.items] == [comparable(i) for i in expected.items]
    assert [(c.key, c.name, c.parent_key) for c in got.collections] == [
        (c.key, c.name, c.parent_key) for c in expected.collections
    ]
    assert got.collection_paths() == expected.collection_paths()
    assert (
        (got.library_type, got.library_id)
        == (expected.library_type, expected.library_id)
        == ("user", "9876543")
    )
    # every kind of record the demo has came through, so the equality above is not vacuous
    assert {i.item_type for i in got.items} >= {"conferencePaper", "preprint", "attachment", "note", "thesis"}
    assert any(i.deleted for i in got.items)
    assert any(c.name for i in got.items for c in i.creators)
    assert any(t.type == 1 for i in got.items for t in i.tags)


def test_demo_library_exports_the_same_catalogue(tmp_path: Path, data_dir: Path, capsys) -> None:
    snapshot = load_snapshot(SEED)
    build(data_dir / "zotero.sqlite", snapshot, seed=2)
    # Neither the API nor zotero.sqlite orders an item's tags or collections; the local source sorts them
    # (tags by name, collections by key), so give the snapshot the same order to compare whole pages.
    for obj in snapshot:
        data = obj["data"]
        data.get("tags", []).sort(key=lambda t: (t["tag"].casefold(), t["tag"], t.get("type", 0)))
        data.get("collections", []).sort()
    ordered = tmp_path / "ordered-snapshot.json"
    ordered.write_text(json.dumps(snapshot, ensure_ascii=False), encoding="utf-8")
    outputs = {}
    for kind, path in (("snapshot", ordered), ("local", data_dir)):
        config = write_config(tmp_path, path, kind)
        code, _, err = cli(capsys, "--config", str(config), "sync")
        assert code == 0, err
        outputs[kind] = [
            (tmp_path / f"exports-{kind}" / f"catalog.{ext}").read_text("utf-8") for ext in ("md", "csv")
        ]
    assert outputs["local"] == outputs["snapshot"]


def test_unchanged_pull_rewrites_nothing(tmp_path: Path, data_dir: Path, capsys) -> None:
    build(data_dir / "zotero.sqlite", load_snapshot(SEED))
    config = write_config(tmp_path, data_dir)
    assert "items added" in pull(capsys, config)
    assert "up to date" in pull(capsys, config)


# -- a running Zotero ---------------------------------------------------------------------------------


def test_exclusively_locked_database_still_reads(data_dir: Path) -> None:
    path = data_dir / "zotero.sqlite"
    zdb = build(path, SMALL)
    with held(path) as zotero:
        zdb.edit_field("ITEMCCCC", "title", "Welder (revised)", at="2024-06-01 10:00:00", conn=zotero)
        naive = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # what a naive reader meets
            naive.execute("SELECT count(*) FROM items").fetchone()
        naive.close()
        items = read(data_dir)
    assert set(items) == {"ITEMAAAA", "ITEMBBBB", "ITEMCCCC"}
    assert items["ITEMCCCC"].title == "Welder (revised)"


def test_wal_database_reads_committed_wal_rows(data_dir: Path) -> None:
    path = data_dir / "zotero.sqlite"
    zdb = build(path, SMALL)

    def edit(conn: sqlite3.Connection) -> None:
        zdb.add_item(api("ITEMDDDD", "Only in the WAL")["data"], conn=conn)
        zdb.edit_field("ITEMAAAA", "title", "Rammer, edited", at="2024-06-01 10:00:00", conn=conn)

    leave_wal(path, edit)
    assert (data_dir / "zotero.sqlite-wal").stat().st_size > 0
    main_file_only = sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)
    assert main_file_only.execute("SELECT count(*) FROM items WHERE key = 'ITEMDDDD'").fetchone() == (0,)
    main_file_only.close()

    items = read(data_dir)
    assert items["ITEMDDDD"].title == "Only in the WAL"
    assert items["ITEMAAAA"].title == "Rammer, edited"


def test_wal_database_held_by_a_running_zotero(data_dir: Path) -> None:
    path = data_dir / "zotero.sqlite"
    zdb = build(path, SMALL)
    with held(path, wal=True) as zotero:
        zdb.add_item(api("ITEMDDDD", "Added while Zotero runs")["data"], conn=zotero)
        zdb.trash("ITEMBBBB", at="2024-06-01 10:00:00", conn=zotero)
        assert (data_dir / "zotero.sqlite-wal").stat().st_size > 0
        items = read(data_dir)
    assert items["ITEMDDDD"].title == "Added while Zotero runs"
    assert items["ITEMBBBB"].deleted


@pytest.mark.parametrize("mode", ["closed", "held", "wal", "held-wal", "hot-journal"])
def test_the_users_files_are_not_modified(tmp_path: Path, data_dir: Path, capsys, mode: str) -> None:
    path = data_dir / "zotero.sqlite"
    zdb = build(path, load_snapshot(SEED))
    (data_dir / "storage").mkdir()
    if mode == "wal":
        leave_wal(path, lambda c: zdb.edit_field("AS5BSQEA", "title", "x", at="2024-06-01 10:00:00", conn=c))
    if mode == "hot-journal":
        leave_hot_journal(path, "UPDATE itemDataValues SET value = value || ' (unsaved)'")
    config = write_config(tmp_path, data_dir)
    if mode.startswith("held"):
        with held(path, wal=mode == "held-wal") as zotero:
            zdb.edit_field("ZCSRWIWC", "title", "y", at="2024-06-01 10:00:00", conn=zotero)
            before = files_state(data_dir)
            pull(capsys, config)
            pull(capsys, config)
            after = files_state(data_dir)
    else:
        before = files_state(data_dir)
        pull(capsys, config)
        pull(capsys, config)
        after = files_state(data_dir)
    assert after.keys() == before.keys()  # no -journal, -shm or -wal created or removed
    assert after == before


def test_a_commit_in_progress_is_not_read_half_done(data_dir: Path) -> None:
    path = data_dir / "zotero.sqlite"
    build(path, load_snapshot(SEED))
    committed = {k: i.title for k, i in read(data_dir).items()}
    leave_hot_journal(
        path,
        "UPDATE itemDataValues SET value = value || ' (unsaved)'",
        "INSERT INTO settings VALUES ('padding', 'x', zeroblob(500000))",
    )
    # What a reader of the main file alone sees: uncommitted values, or pages that no longer fit together.
    torn = sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)
    try:
        seen: object = torn.execute(
            "SELECT count(*) FROM itemDataValues WHERE value LIKE '% (unsaved)'"
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        seen = str(exc)
    torn.close()
    assert seen != (0,)

    assert {k: i.title for k, i in read(data_dir).items()} == committed
    assert (data_dir / "zotero.sqlite-journal").exists()  # the user's journal is left for Zotero to replay


# -- changes between pulls ----------------------------------------------------------------------------


def test_a_local_edit_is_picked_up_by_the_next_pull(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", load_snapshot(SEED))
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    key = "AS5BSQEA"
    old = next(i for i in load(tmp_path).items if i.key == key)
    zdb.edit_field(key, "title", "MLIR, retitled locally", at="2024-06-01 10:00:00")

    report = pull(capsys, config)
    assert "0 items added, 1 updated, 0 removed" in report
    new = next(i for i in load(tmp_path).items if i.key == key)
    assert new.title == "MLIR, retitled locally"
    assert new.version != old.version
    assert "up to date" in pull(capsys, config)

    # a second edit of the same item, before Zotero syncs it, is seen too
    zdb.edit_field(key, "extra", "arXiv: 2002.11054", at="2024-06-01 10:00:05")
    assert "1 updated" in pull(capsys, config)
    assert next(i for i in load(tmp_path).items if i.key == key).get("extra") == "arXiv: 2002.11054"


def test_a_sync_by_zotero_is_picked_up(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    with zdb.connect() as db:  # what Zotero's sync writes for a change made on another computer
        zdb.set_value(db, zdb.item_id("ITEMBBBB", db), "title", "Roller (from the web)")
        db.execute("UPDATE items SET version = 42, synced = 1 WHERE key = 'ITEMBBBB'")
    assert "1 updated" in pull(capsys, config)
    item = next(i for i in load(tmp_path).items if i.key == "ITEMBBBB")
    assert (item.title, item.version) == ("Roller (from the web)", 42)


def test_a_library_that_never_syncs(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL, synced=False)
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    assert "up to date" in pull(capsys, config)
    zdb.edit_field("ITEMCCCC", "date", "2024", at="2024-06-01 10:00:00")
    assert "1 updated" in pull(capsys, config)
    assert next(i for i in load(tmp_path).items if i.key == "ITEMCCCC").year == "2024"


def test_a_permanent_deletion_vanishes(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", load_snapshot(SEED))
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    zdb.erase("ZCSRWIWC")
    assert "0 updated, 1 removed" in pull(capsys, config)
    assert "ZCSRWIWC" not in {i.key for i in load(tmp_path).items}


def test_trash_and_restore(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    zdb.trash("ITEMAAAA", at="2024-06-01 10:00:00")
    pull(capsys, config)
    assert next(i for i in load(tmp_path).items if i.key == "ITEMAAAA").deleted
    zdb.restore("ITEMAAAA", at="2024-06-01 10:00:09")
    pull(capsys, config)
    assert not next(i for i in load(tmp_path).items if i.key == "ITEMAAAA").deleted


def test_a_trashed_collection_is_gone_and_comes_back(tmp_path: Path, data_dir: Path, capsys) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    config = write_config(tmp_path, data_dir)
    pull(capsys, config)
    zdb.trash_collection("CQLLAAAA", at="2024-06-01 10:00:00")  # and with it its subcollection
    pull(capsys, config)
    library = load(tmp_path)
    assert library.collections == ()
    assert all(i.collections == () for i in library.items)
    # an edit of a member after the trashing, then the restore: the membership must still come back
    zdb.edit_field(
        "ITEMAAAA", "extra", "edited while its collection was in the trash", at="2024-06-01 10:00:05"
    )
    assert "1 updated" in pull(capsys, config)

    zdb.restore_collection("CQLLAAAA", at="2024-06-01 10:00:09")
    pull(capsys, config)
    library = load(tmp_path)
    assert library.collection_paths() == {"CQLLAAAA": "Compilers", "CQLLBBBB": "Compilers / Kernels"}
    by_key = {i.key: i for i in library.items}
    assert by_key["ITEMAAAA"].collections == ("CQLLAAAA",)
    assert by_key["ITEMBBBB"].collections == ("CQLLBBBB",)


# -- how values are read ------------------------------------------------------------------------------


def test_multipart_dates_give_the_users_text(data_dir: Path) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    with zdb.connect() as db:
        raw = dict(
            db.execute(
                "SELECT i.key, v.value FROM items i JOIN itemData d USING (itemID) JOIN itemDataValues v"
                " USING (valueID) JOIN fields f ON f.fieldID = d.fieldID WHERE f.fieldName = 'date'"
            )
        )
        zdb.set_value(db, zdb.item_id("ITEMBBBB", db), "date", "2017-03-00 March 2017")
    assert raw == {
        "ITEMAAAA": "2020-11-04 2020-11-04",
        "ITEMCCCC": "2023-00-00 2023",
    }  # as Zotero stores them
    items = read(data_dir)
    assert [items[k].get("date") for k in ("ITEMAAAA", "ITEMBBBB", "ITEMCCCC")] == [
        "2020-11-04",
        "March 2017",
        "2023",
    ]
    assert items["ITEMBBBB"].year == "2017"
    assert items["ITEMAAAA"].get("dateAdded") == "2024-01-01T00:00:00Z"


def test_single_field_creators(data_dir: Path) -> None:
    creators = [
        {"creatorType": "author", "name": "The Tensor Compiler Consortium"},
        {"creatorType": "editor", "firstName": "Grace", "lastName": "Hopper"},
    ]
    build(data_dir / "zotero.sqlite", [api("ITEMAAAA", "Report", "report", creators=creators)])
    item = read(data_dir)["ITEMAAAA"]
    assert item.creators == (
        Creator(creator_type="author", name="The Tensor Compiler Consortium"),
        Creator(creator_type="editor", last_name="Hopper", first_name="Grace"),
    )
    assert [c.display for c in item.creators] == ["The Tensor Compiler Consortium", "Hopper, Grace"]


def test_tags_keep_their_type(data_dir: Path) -> None:
    tags = [{"tag": "read"}, {"tag": "GPU", "type": 1}]
    build(data_dir / "zotero.sqlite", [api("ITEMAAAA", "Tagged", tags=tags)])
    assert read(data_dir)["ITEMAAAA"].tags == (Tag("GPU", 1), Tag("read", 0))


@pytest.mark.parametrize("combined", [True, False])
def test_shuffled_ids_are_joined_by_name(tmp_path: Path, combined: bool) -> None:
    snapshot = load_snapshot(SEED)
    reads = []
    type_ids = []
    for seed in (11, 12):
        path = tmp_path / f"seed{seed}" / "zotero.sqlite"
        zdb = build(path, snapshot, seed=seed, combined=combined)
        type_ids.append((zdb.type_ids["conferencePaper"], zdb.field_ids["proceedingsTitle"]))
        reads.append([comparable(i) for i in read(path).values()])
    assert type_ids[0] != type_ids[1]  # the two databases really number their types differently
    assert reads[0] == reads[1]
    paper = next(i for i in read(tmp_path / "seed11").values() if i.item_type == "conferencePaper")
    assert paper.get("proceedingsTitle") and "publicationTitle" not in paper.fields


def test_type_specific_names_through_base_field_mappings(data_dir: Path) -> None:
    objects = [
        api("ITEMAAAA", "Rammer", "conferencePaper", proceedingsTitle="OSDI"),
        api("ITEMBBBB", "", "case", caseName="Marbury v. Madison", court="SCOTUS"),
    ]
    zdb = build(data_dir / "zotero.sqlite", objects)
    with zdb.connect() as db:  # a value filed under the base field, as an old database may have it
        zdb.set_value(db, zdb.item_id("ITEMAAAA", db), "publicationTitle", "OSDI '20")
        db.execute(
            "DELETE FROM itemData WHERE itemID = ? AND fieldID = ?",
            (zdb.item_id("ITEMAAAA", db), zdb.field_ids["proceedingsTitle"]),
        )
    items = read(data_dir)
    assert items["ITEMAAAA"].get("proceedingsTitle") == "OSDI '20"
    assert "publicationTitle" not in items["ITEMAAAA"].fields
    assert items["ITEMAAAA"].venue_source == "OSDI '20"
    assert items["ITEMBBBB"].get("caseName") == "Marbury v. Madison"
    assert items["ITEMBBBB"].title == "Marbury v. Madison"  # what Zotero shows as the case's title


def test_children_attachments_and_notes(data_dir: Path) -> None:
    objects = [
        *SMALL,
        api(
            "ATTACHAA",
            "Full Text PDF",
            "attachment",
            parentItem="ITEMAAAA",
            linkMode="imported_file",
            contentType="application/pdf",
            charset="",
            filename="rammer.pdf",
            md5="abc",
            mtime=1690011059000,
            note="",
            url="",
            accessDate="",
            creators=[],
            collections=[],
        ),
        api(
            "ATTACHBB",
            "Linked",
            "attachment",
            parentItem="ITEMBBBB",
            linkMode="linked_file",
            contentType="application/pdf",
            charset="utf-8",
            path="attachments:papers/roller.pdf",
            note="my note",
            url="",
            accessDate="2023-07-22T07:30:56Z",
            creators=[],
            collections=[],
        ),
        api(
            "NQTEAAAA", "", "note", parentItem="ITEMAAAA", note="<p>Key idea</p>", creators=[], collections=[]
        ),
    ]
    for obj in objects[-3:]:
        obj["data"].pop("title", None) if obj["data"]["itemType"] == "note" else None
    zdb = build(data_dir / "zotero.sqlite", objects)
    zdb.add_annotation("ANNQTAAA", "ATTACHAA", "highlighted")
    items = read(data_dir)
    pdf, linked, note, annotation = (items[k] for k in ("ATTACHAA", "ATTACHBB", "NQTEAAAA", "ANNQTAAA"))
    assert (pdf.parent_key, pdf.is_pdf, pdf.get("linkMode"), pdf.get("filename")) == (
        "ITEMAAAA",
        True,
        "imported_file",
        "rammer.pdf",
    )
    assert (pdf.fields["md5"], pdf.fields["mtime"]) == ("abc", 1690011059000)
    assert (linked.get("linkMode"), linked.get("path"), linked.get("charset"), linked.get("note")) == (
        "linked_file",
        "attachments:papers/roller.pdf",
        "utf-8",
        "my note",
    )
    assert linked.get("accessDate") == "2023-07-22T07:30:56Z"
    assert (note.parent_key, note.get("note"), note.is_regular) == ("ITEMAAAA", "<p>Key idea</p>", False)
    assert (annotation.parent_key, annotation.get("annotationText")) == ("ATTACHAA", "highlighted")
    assert all(items[k].collections == () for k in ("ATTACHAA", "ATTACHBB", "NQTEAAAA"))


# -- group libraries and feeds ------------------------------------------------------------------------

GROUP_OBJECTS = [
    api_collection("GCQLAAAA", "Shared"),
    api_collection("GCQLBBBB", "Shared reading", parent="GCQLAAAA", version=7),
    api("GRQUPAAA", "In a group library", collections=["GCQLBBBB"], version=9),
    api("GRQUPBBB", "Trashed in the group", deleted=1, version=3),
]


def with_group_and_feed(data_dir: Path):
    """SMALL in the user library, GROUP_OBJECTS in group 4711, a feed item in the feed library."""
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    zdb.add(GROUP_OBJECTS, library=GROUP_LIBRARY)
    zdb.add_item(api("FEEDAAAA", "A feed entry")["data"], library=FEED_LIBRARY)
    return zdb


def test_the_user_library_is_my_library_only(data_dir: Path) -> None:
    with_group_and_feed(data_dir)
    changes = LocalSource(data_dir).changes(None)
    assert {i.key for i in changes.items} == {"ITEMAAAA", "ITEMBBBB", "ITEMCCCC"}
    assert {c.key for c in changes.collections} == {"CQLLAAAA", "CQLLBBBB"}
    assert (changes.library_type, changes.library_id) == ("user", str(factories.LIBRARY["id"]))
    # library_id is not needed for the user library, and ignored (it may hold the web source's id)
    assert LocalSource(data_dir, "user", "999").changes(None) == changes


def test_a_group_library_by_its_group_id(data_dir: Path) -> None:
    with_group_and_feed(data_dir)
    changes = LocalSource(data_dir, "group", str(GROUP_ID)).changes(None)
    items = {i.key: i for i in changes.items}
    assert set(items) == {"GRQUPAAA", "GRQUPBBB"}
    assert items["GRQUPAAA"].collections == ("GCQLBBBB",)
    assert items["GRQUPBBB"].deleted and not items["GRQUPAAA"].deleted
    assert [(c.key, c.parent_key) for c in changes.collections] == [
        ("GCQLAAAA", None),
        ("GCQLBBBB", "GCQLAAAA"),
    ]
    assert (changes.library_type, changes.library_id, changes.library_name) == ("group", "4711", GROUP_NAME)
    assert all((i.library_type, i.library_id) == ("group", "4711") for i in changes.items)
    assert changes.library_version == 9


def test_the_internal_library_id_does_not_name_a_group(data_dir: Path) -> None:
    with_group_and_feed(data_dir)
    with pytest.raises(ConfigError, match=rf'has no group {GROUP_LIBRARY}; its groups: 4711 "A group"'):
        LocalSource(data_dir, "group", str(GROUP_LIBRARY)).changes(None)


def test_an_unknown_group_is_a_config_error_listing_the_groups(tmp_path: Path, data_dir: Path, run) -> None:
    zdb = with_group_and_feed(data_dir)
    zdb.add_group(6627688, "HIDMS")
    config = write_config(tmp_path, data_dir, library_type="group", library_id="123")
    result = run("--config", str(config), "pull")
    assert result.code == 2
    assert result.err.splitlines() == [
        f'zotsync: error: {data_dir / "zotero.sqlite"} has no group 123; its groups: 4711 "A group", '
        '6627688 "HIDMS"'
    ]
    assert not (tmp_path / "store-local.sqlite").exists() or load(tmp_path).items == ()

    config = write_config(tmp_path, data_dir, library_type="group")
    result = run("--config", str(config), "pull")
    assert result.code == 2
    assert "needs source.library_id, the group's id" in result.err and "4711" in result.err


def test_a_database_without_groups_says_so(data_dir: Path) -> None:
    zdb = build(data_dir / "zotero.sqlite", SMALL)
    with zdb.connect() as db:
        db.execute("DELETE FROM groups")
        db.execute("DELETE FROM libraries WHERE type = 'group'")
    with pytest.raises(ConfigError, match="has no group 4711; it has no group libraries"):
        LocalSource(data_dir, "group", "4711").changes(None)


def test_feeds_are_never_read(data_dir: Path) -> None:
    zdb = with_group_and_feed(data_dir)
    with zdb.connect() as db:  # even a feed whose id equals a group's id is no group
        db.execute("INSERT INTO groups VALUES (5000, ?, 'not a group', '', 1)", (FEED_LIBRARY,))
    for source in (LocalSource(data_dir), LocalSource(data_dir, "group", str(GROUP_ID))):
        assert "FEEDAAAA" not in {i.key for i in source.changes(None).items}
    with pytest.raises(ConfigError, match="has no group 5000"):
        LocalSource(data_dir, "group", "5000").changes(None)


def test_switching_library_rebuilds_the_store_and_status_names_it(
    tmp_path: Path, data_dir: Path, run
) -> None:
    with_group_and_feed(data_dir)
    database = data_dir / "zotero.sqlite"
    user, group = LocalSource(data_dir), LocalSource(data_dir, "group", "4711")
    assert len({user.id, group.id, LocalSource(data_dir, "group", "4712").id}) == 3

    user_config = write_config(tmp_path, data_dir)
    assert run("--config", str(user_config), "pull").code == 0
    status = run("--config", str(user_config), "status").out.splitlines()[0]
    assert status.startswith(f"library: user 4242 from {database}, version ")

    group_config = write_config(tmp_path, data_dir, library_type="group", library_id="4711")
    # Every item of the user library would leave the page: the safety valve asks for --force.
    assert "would remove 3 of the 3 Zotero items" in run("--config", str(group_config), "pull").err
    assert run("--config", str(group_config), "pull", "--force").code == 0
    assert {i.key for i in load(tmp_path).items} == {"GRQUPAAA", "GRQUPBBB"}  # nothing of the user's left
    status = run("--config", str(group_config), "status")
    assert status.out.splitlines()[0].startswith(f'library: group 4711 "A group" from {database}, version 9,')
    report = json.loads(run("--config", str(group_config), "status", "--format", "json").out)["library"]
    assert (report["type"], report["id"], report["name"], report["source"]) == (
        "group",
        "4711",
        "A group",
        str(database),
    )
    assert (report["items"], report["trashed"], report["collections"]) == (1, 1, 2)


@pytest.mark.skipif(not (FIXTURES / "item_doc.json").exists(), reason="tests/fixtures/zotero-api not present")
def test_a_real_api_item_round_trips(data_dir: Path) -> None:
    obj = json.loads((FIXTURES / "item_doc.json").read_text("utf-8"))
    objects = obj if isinstance(obj, list) else [obj]
    build(data_dir / "zotero.sqlite", objects)
    expected = Item.from_api(objects[0])
    assert comparable(read(data_dir)[expected.key]) == comparable(expected)


# -- paths and errors ---------------------------------------------------------------------------------


def test_data_directory_or_file_name_the_same_library(data_dir: Path) -> None:
    build(data_dir / "zotero.sqlite", SMALL)
    assert LocalSource(data_dir).id == LocalSource(data_dir / "zotero.sqlite").id
    assert LocalSource(data_dir).id == f"local:{(data_dir / 'zotero.sqlite').resolve()}"


def test_missing_path_is_a_config_error(tmp_path: Path, capsys) -> None:
    for missing in (tmp_path / "nowhere", tmp_path):  # a path that does not exist; a folder without it
        code, _, err = cli(capsys, "--config", str(write_config(tmp_path, missing)), "pull")
        assert code == 2
        assert err.strip().splitlines() == [f"zotsync: error: no zotero.sqlite at {missing}"]
    with pytest.raises(ConfigError):
        LocalSource(tmp_path / "nowhere").changes(None)


@pytest.mark.parametrize("content", ["sqlite", "text"])
def test_not_a_zotero_database_is_a_source_error(
    tmp_path: Path, data_dir: Path, capsys, content: str
) -> None:
    path = data_dir / "zotero.sqlite"
    if content == "sqlite":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes (body TEXT)")
    else:
        path.write_text("not a database at all, just some text that is long enough " * 10)
    code, _, err = cli(capsys, "--config", str(write_config(tmp_path, path)), "pull")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("zotsync: error: ") and "not" in lines[0] and "Zotero database" in lines[0]


def test_an_unsupported_old_schema_says_so(data_dir: Path) -> None:
    path = data_dir / "zotero.sqlite"
    build(path, SMALL)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE items DROP COLUMN synced")
    with pytest.raises(SourceError, match=r"unsupported Zotero database .*Zotero 5"):
        read(data_dir)


def test_a_file_that_changes_while_read_is_read_again(data_dir: Path, monkeypatch) -> None:
    build(data_dir / "zotero.sqlite", SMALL)
    real = local._file_state
    calls = {"n": 0}

    def changing_once(database: Path) -> tuple[object, ...]:
        calls["n"] += 1
        return (*real(database), calls["n"] <= 2 and calls["n"])  # differs across the first read

    monkeypatch.setattr(local, "_file_state", changing_once)
    monkeypatch.setattr(local.time, "sleep", lambda _: None)
    assert len(read(data_dir)) == 3
    assert calls["n"] == 4

    monkeypatch.setattr(local, "_file_state", lambda _: object())  # never settles
    with pytest.raises(SourceError, match="kept changing"):
        read(data_dir)


def test_changes_report_the_whole_library(data_dir: Path) -> None:
    build(data_dir / "zotero.sqlite", SMALL)
    changes = LocalSource(data_dir).changes(since=10**12)  # `since` cannot narrow a full read
    assert changes.complete
    assert len(changes.items) == 3 and len(changes.collections) == 2
    assert changes.library_version == max(o.version for o in (*changes.items, *changes.collections))
    assert changes.library_id == str(factories.LIBRARY["id"])


def test_zotero_database_from_a_builder_is_closed_and_plain(data_dir: Path) -> None:
    """The default builder mode is Zotero ≤ 9 not running: one file, rollback journal."""
    build(data_dir / "zotero.sqlite", SMALL)
    assert [p.name for p in data_dir.iterdir()] == ["zotero.sqlite"]
    with sqlite3.connect(data_dir / "zotero.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert db.execute("SELECT version FROM version WHERE schema = 'userdata'").fetchone() == (123,)


# -- Zotero 10 (userdata schema 129) ------------------------------------------------------------------


def test_the_builders_zotero_10_variant(data_dir: Path) -> None:
    build(data_dir / "zotero.sqlite", SMALL, schema=ZOTERO_10)
    assert [p.name for p in data_dir.iterdir()] == ["zotero.sqlite"]  # closed: checkpointed, no -wal
    with sqlite3.connect(data_dir / "zotero.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT version FROM version WHERE schema = 'userdata'").fetchone() == (129,)
        for table in ("items", "collections"):
            assert "clientVersion" in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def test_zotero_10_reads_like_zotero_7(tmp_path: Path) -> None:
    snapshot = load_snapshot(SEED)
    reads = []
    for schema in (123, ZOTERO_10):
        path = tmp_path / str(schema) / "zotero.sqlite"
        build(path, snapshot, seed=3, schema=schema)
        reads.append([(comparable(i), i.version) for i in read(path).values()])
    assert len(reads[0]) > 100
    assert reads[1] == reads[0]


def test_zotero_10_counts_local_writes_within_one_second(tmp_path: Path, data_dir: Path, capsys) -> None:
    """Zotero 7–9 can only tell two edits in the same second apart by content; Zotero 10's clientVersion
    moves with each write, so the second edit is seen even with a pull in between."""
    zdb = build(data_dir / "zotero.sqlite", SMALL, schema=ZOTERO_10)
    config = write_config(tmp_path, data_dir)
    with held(data_dir / "zotero.sqlite", wal=True) as zotero:  # Zotero 10 running: WAL, locked
        pull(capsys, config)
        zdb.edit_field("ITEMCCCC", "title", "Welder, first edit", at="2024-06-01 10:00:00", conn=zotero)
        assert "1 updated" in pull(capsys, config)
        zdb.edit_field("ITEMCCCC", "title", "Welder, second edit", at="2024-06-01 10:00:00", conn=zotero)
        assert (data_dir / "zotero.sqlite-wal").stat().st_size > 0
        assert "1 updated" in pull(capsys, config)
        zdb.trash_collection("CQLLBBBB", at="2024-06-01 10:00:00", conn=zotero)
        assert "1 removed" in pull(capsys, config)
    library = load(tmp_path)
    assert next(i for i in library.items if i.key == "ITEMCCCC").title == "Welder, second edit"
    assert [c.key for c in library.collections] == ["CQLLAAAA"]


@pytest.mark.parametrize("schema", [130, 131])
def test_a_newer_schema_than_tested_is_refused(tmp_path: Path, data_dir: Path, run, schema: int) -> None:
    path = data_dir / "zotero.sqlite"
    build(path, SMALL, schema=schema)
    result = run("--config", str(write_config(tmp_path, data_dir)), "pull")
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: {path} has userdata schema {schema}; zotsync is tested up to 129 (Zotero 10): "
        "upgrade zotsync"
    ]
    assert local.NEWEST_SCHEMA == ZOTERO_10  # the newest schema the builder makes and these tests read
