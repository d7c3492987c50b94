"""catalog.bib carries Better BibTeX's own keys: Zotero 7's native `citationKey` field first, then
`Citation Key:` in `extra`, from every source; without either, BBT's default formula
(`auth.lower + shorttitle(3,3) + year`), whose key never starts with a digit."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from conftest import write_config
from factories import (
    api_item,
    as_text,
    back_to_schema,
    edit,
    parse,
    read,
    small_library,
    write_json,
    write_web_config,
)

from zotsync.export.bibtex import title_value
from zotsync.store import Store
from zotsync.store.schema import MIGRATIONS

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"
BBT_PROFILE = SHARED / "zotero-sqlite" / "betterbibtex-testprofile-9.0.4.sqlite"

BIB_ONLY = "exports:\n  dir: out\n  formats: [bib]\n"


def snapshot_config(folder: Path, objects: list[dict]) -> Path:
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    return write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        + BIB_ONLY,
    )


def bib_titles(run, config: Path) -> dict[str, str]:
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err
    text = (config.parent / "out" / "catalog.bib").read_text(encoding="utf-8")
    return {entry["ID"]: as_text(entry["title"]) for entry in parse(text).entries}


def test_the_native_field_comes_first_then_extra_then_the_formula(tmp_path: Path, run) -> None:
    objects = [
        api_item("NTVE2345", "Native", date="2021", citationKey="native2021", extra="Citation Key: old2021"),
        api_item("XTRA2345", "Extra Only", date="2021", extra="Citation Key: extra2021"),
        api_item("BLNK2345", "Blank Native", date="2021", citationKey="  ", extra="Citation Key: blank2021"),
        # a native key TeX could be tricked by is refused: the paper gets the formula's key, not extra's
        api_item("BDNT2345", "Bad Native Key", date="2021", citationKey="x^^5c", extra="Citation Key: fine"),
        api_item("NNEE2345", "Deep Learning Compilers Survey", date="2021"),
    ]
    assert bib_titles(run, snapshot_config(tmp_path, objects)) == {
        "native2021": "Native",
        "extra2021": "Extra Only",
        "blank2021": "Blank Native",
        "lovelaceBadNativeKey2021": "Bad Native Key",
        "lovelaceDeepLearningCompilers2021": "Deep Learning Compilers Survey",
    }


def test_the_web_source_reads_the_native_field(tmp_path: Path, run, zotero_api) -> None:
    library = small_library()
    library.add_item("From The Web", key="WEBX2345", citationKey="web2022", date="2022")
    server = zotero_api(library)
    config = write_web_config(tmp_path, server.url)
    config.write_text(config.read_text(encoding="utf-8") + BIB_ONLY, encoding="utf-8")
    result = run("-q", "--config", str(config), "sync")
    assert result.code == 0, result.err
    bib = (tmp_path / "out" / "catalog.bib").read_text(encoding="utf-8")
    titles = {entry["ID"]: as_text(entry["title"]) for entry in parse(bib).entries if "title" in entry}
    assert titles["web2022"] == "From The Web"


@pytest.mark.skipif(not BBT_PROFILE.exists(), reason=f"{BBT_PROFILE} is not present")
def test_better_bibtexs_own_test_profile_keeps_every_key(tmp_path: Path, run) -> None:
    """BBT's test profile (Zotero 9.0.4) holds its keys in the native field on all 49 items: each is the
    key of its paper in catalog.bib (before, 49 of 49 differed)."""
    data = tmp_path / "zotero"
    data.mkdir()
    shutil.copy(BBT_PROFILE, data / "zotero.sqlite")
    with closing(sqlite3.connect(f"{(data / 'zotero.sqlite').as_uri()}?immutable=1", uri=True)) as db:
        expected = dict(
            db.execute(
                "SELECT v.value, t.value FROM items i"
                " JOIN itemData d ON d.itemID = i.itemID JOIN fields f ON f.fieldID = d.fieldID"
                " JOIN itemDataValues v ON v.valueID = d.valueID"
                " JOIN itemData td ON td.itemID = i.itemID JOIN fields tf ON tf.fieldID = td.fieldID"
                " JOIN itemDataValues t ON t.valueID = td.valueID"
                " WHERE f.fieldName = 'citationKey' AND tf.fieldName = 'title'"
                " AND i.itemID NOT IN (SELECT itemID FROM deletedItems)"
            ).fetchall()
        )
    assert len(expected) == 49
    (tmp_path / "catalog.yaml").write_text("categories: []\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        f'source: {{type: local, path: "{data}"}}\ncatalog: catalog.yaml\nstore: s.sqlite\n' + BIB_ONLY,
    )
    assert run("-q", "--config", str(config), "sync").code == 0
    entries = {
        e["ID"]: e for e in parse((tmp_path / "out" / "catalog.bib").read_text(encoding="utf-8")).entries
    }
    # each key is its own paper's: the entry's title is that paper's title as catalog.bib writes titles
    assert {key: entries[key]["title"] if key in entries else None for key in expected} == {
        key: title_value(title) for key, title in expected.items()
    }


def test_a_chinese_authors_key_starts_with_their_name(tmp_path: Path, run) -> None:
    chinese = [{"creatorType": "author", "name": "张伟"}]
    nameless: list[dict] = []
    objects = [
        api_item("CHNA2345", "GPU 编译与性能优化", date="2023", creators=chinese),
        api_item("NMLS2345", "—", date="2023", creators=nameless),
    ]
    keys = set(bib_titles(run, snapshot_config(tmp_path, objects)))
    assert keys == {"zhangweiGPUBianYiYuXingNengYouHua2023", "paper2023"}
    assert not any(key[0].isdigit() for key in keys)


def test_a_store_from_before_gets_the_native_keys_after_its_upgrade(tmp_path: Path, run) -> None:
    """A store an older zotsync wrote holds no `citationKey` in its page rows: migration 15 writes them."""
    config = snapshot_config(
        tmp_path, [api_item("NTVE2345", "Native", date="2021", citationKey="native2021")]
    )
    assert set(bib_titles(run, config)) == {"native2021"}
    store = tmp_path / "store.sqlite"
    back_to_schema(store, 14)
    edit(store, "UPDATE item_page SET fields = json_remove(fields, '$.citationKey'), facts = NULL")
    assert read(store, "SELECT count(*) FROM item_page WHERE fields LIKE '%native2021%'") == [(0,)]
    (tmp_path / "out" / "catalog.bib").unlink()
    assert set(bib_titles(run, config)) == {"native2021"}
    with Store(store, readonly=True) as opened:
        assert opened.schema_version == len(MIGRATIONS)


def test_a_key_that_cannot_be_taken_is_said_in_one_line(tmp_path: Path, run) -> None:
    objects = [api_item("BDNT2345", "Bad Key", date="2021", citationKey="key^^5cinput^^7bx^^7d")]
    result = run("-q", "--config", str(snapshot_config(tmp_path, objects)), "sync")
    assert result.code == 0
    assert result.err.splitlines() == [
        "zotsync: catalog.bib: item BDNT2345: the Better BibTeX key 'key^^5cinput^^7bx^^7d' is not one"
        " BibTeX can read and TeX reads safely; cited as lovelaceBadKey2021"
    ]
