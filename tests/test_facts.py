"""Each item's page facts are computed once, when the store writes the item, and trusted only when this
zotsync's derivation (`facts.FACTS_VERSION`) computed them."""

from __future__ import annotations

import hashlib
import inspect
import json
import sqlite3
from pathlib import Path

import pytest
from factories import api_item, api_pdf, back_to_schema_6, back_to_schema_7, edit, read, write_json

from zotsync import facts, model, normalize
from zotsync import store as store_module
from zotsync.app.pull import pull
from zotsync.catalogue import load_catalogue
from zotsync.export import Page, render_page
from zotsync.facts import item_facts, stored_version
from zotsync.model import ItemFacts, Library
from zotsync.reconcile import Options, reconcile
from zotsync.sources import SnapshotSource
from zotsync.store import MIGRATIONS, Store

# The facts of PAPER777, written out by hand from its fields below.
PAPER_FACTS = ItemFacts(
    title_key="ünïcode title a study",
    year="2021",
    venue_source="Journal of Things",
    authors=("Lovelace, Ada", "ACM"),
    doi="https://doi.org/10.1145/ABC",
    url="https://example.org/p",
    read=True,
    doi_key="10.1145/abc",
)


def library_file(tmp_path: Path, title: str = "Ünïcode – Title: A Study!") -> Path:
    objects = [
        api_item(
            "PAPER777",
            title,
            creators=[
                {"creatorType": "author", "firstName": "Ada", "lastName": "Lovelace"},
                {"creatorType": "editor", "name": "ACM"},
            ],
            date="March 2021",
            publicationTitle="  Journal of Things ",
            DOI="https://doi.org/10.1145/ABC",
            url="https://example.org/p",
            extra="Note: x\nRead_Status: Read",
        ),
        api_item("PAPER222", "Plain paper", date="", extra=""),
        api_pdf("PDFF7777", "PAPER777"),
    ]
    return write_json(tmp_path / "lib.json", objects)


def stored_facts(path: Path) -> dict[str, object]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key, facts FROM item_page")
        return {key: value and json.loads(value) for key, value in rows}
    finally:
        db.close()


def pulled(tmp_path: Path) -> Path:
    """A store at tmp_path/s.sqlite that pulled `library_file`."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        pull(SnapshotSource(library_file(tmp_path)), store)
    return path


def page(library: Library, catalogue: Path) -> list[str]:
    cat = load_catalogue(catalogue)
    placements = reconcile(cat, library, Options(read_tags=("read",))).placements
    return [render_page(fmt, Page(cat.title, cat.description, placements)) for fmt in ("md", "csv")]


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(
        "categories:\n  - name: A\n    entries:\n      - {title: working title, doi: 10.1145/abc}\n", "utf-8"
    )
    return path


def test_a_pull_writes_the_facts_of_every_regular_item(tmp_path: Path) -> None:
    path = pulled(tmp_path)
    with Store(path) as store:
        lean = store.load_page()
    rows = stored_facts(path)
    assert rows["PAPER777"] == json.loads(json.dumps(PAPER_FACTS))
    assert rows["PDFF7777"] is None  # an attachment is never a row of its own
    assert lean.facts["PAPER777"] == PAPER_FACTS
    assert lean.facts["PAPER222"] == ItemFacts("plain paper", "", "", ("Lovelace, Ada",), "", "", False, "")
    assert lean.facts.keys() == {"PAPER777", "PAPER222"}


def test_a_changed_item_gets_its_facts_again_on_the_next_pull(tmp_path: Path) -> None:
    path = pulled(tmp_path)
    with Store(path) as store:
        pull(SnapshotSource(library_file(tmp_path, title="Retitled — Now")), store)
        assert store.load_page().facts["PAPER777"].title_key == "retitled now"


def test_facts_of_another_derivation_are_not_trusted_and_are_refreshed_on_a_writable_open(
    tmp_path: Path, catalogue: Path
) -> None:
    path = pulled(tmp_path)
    with Store(path) as store:
        expected = page(store.load(), catalogue)  # a full load carries no facts: all computed here
    # What an older zotsync (another derivation, another Unicode database) would have left behind.
    wrong = json.dumps(["zzz", "1900", "Elsewhere", ["Nobody"], "", "", False, ""])
    edit(
        path,
        f"UPDATE item_page SET facts = '{wrong}' WHERE facts IS NOT NULL",
        "UPDATE sync_state SET value = '0/unicode-1.0' WHERE name = 'facts_version'",
    )
    with Store(path, readonly=True) as store:
        library = store.load_page()
        assert library.facts == {}  # not trusted: reconcile computes every item's facts itself
        assert page(library, catalogue) == expected
    assert stored_facts(path)["PAPER777"][0] == "zzz"  # a read-only open writes nothing
    with Store(path) as store:  # the next writable open (a pull) computes them again
        assert store.sync_state.facts_version == stored_version()
        library = store.load_page()
        assert library.facts["PAPER777"] == PAPER_FACTS
        assert page(library, catalogue) == expected


def test_a_hand_edited_item_loses_its_stored_facts_and_the_page_follows_the_edit(
    tmp_path: Path, catalogue: Path
) -> None:
    path = pulled(tmp_path)
    edit(path, "UPDATE items SET title = 'Zebra' WHERE key = 'PAPER222'")
    with Store(path, readonly=True) as store:
        library = store.load_page()
        assert "PAPER222" not in library.facts and "PAPER777" in library.facts
        assert page(library, catalogue) == page(store.load(), catalogue)
        assert "Zebra" in page(library, catalogue)[0]


def test_a_schema_5_store_gets_its_facts_on_opening(tmp_path: Path) -> None:
    path = pulled(tmp_path)
    # Back to the schema-5 store an older zotsync wrote: page rows without facts.
    back_to_schema_6(path)
    edit(
        path,
        "ALTER TABLE item_page DROP COLUMN facts",
        "DELETE FROM schema_migrations WHERE version > 5",
        "DELETE FROM sync_state WHERE name = 'facts_version'",
    )
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        assert store.load_page().facts["PAPER777"] == PAPER_FACTS


def test_a_schema_6_store_keeps_its_facts_when_its_tags_move_into_the_items(tmp_path: Path) -> None:
    path = pulled(tmp_path)
    before = stored_facts(path)
    back_to_schema_6(path)
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        assert store.load_page().facts["PAPER777"] == PAPER_FACTS
    assert stored_facts(path) == before and before["PAPER777"] is not None


PAGE_ROWS = "SELECT * FROM item_page ORDER BY key"


def decoded(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Page rows with their JSON columns read: the same rows whatever order a writer gave the keys."""
    return [tuple(json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v for v in row) for row in rows]


SCHEMA = "SELECT type, name, sql FROM sqlite_master ORDER BY name"


def test_a_schema_7_store_gets_its_creators_as_arrays_and_keeps_its_page_rows(tmp_path: Path) -> None:
    """Migration 8 rewrites each item's creators as the arrays a pull now writes; the page rows, their facts
    among them, stay as they were, and the store ends up with the schema of a new one."""
    path = pulled(tmp_path)
    page_rows, schema = read(path, PAGE_ROWS), read(path, SCHEMA)
    back_to_schema_7(path)
    ((old,),) = read(path, "SELECT creators FROM items WHERE key = 'PAPER777'")
    assert json.loads(old)[1] == {"creator_type": "editor", "last_name": "", "first_name": "", "name": "ACM"}
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        # the rewritten text is what a pull writes: reading the library again finds nothing to rewrite
        report = pull(SnapshotSource(tmp_path / "lib.json"), store, full=True)
        assert report.reread == 3 and not report.result.changed
    ((creators,),) = read(path, "SELECT creators FROM items WHERE key = 'PAPER777'")
    assert creators == '[["author","Lovelace","Ada",""],["editor","","","ACM"]]'  # library_file's two
    # the page rows hold what they held (migration 11 writes them again: the same fields and facts)
    assert decoded(read(path, PAGE_ROWS)) == decoded(page_rows)
    assert stored_facts(path)["PAPER777"] == json.loads(json.dumps(PAPER_FACTS))
    assert read(path, SCHEMA) == schema
    assert "items_parent" not in {name for _, name, _ in schema}


def test_an_upgrade_that_fails_half_way_leaves_the_store_as_the_older_zotsync_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = pulled(tmp_path)
    back_to_schema_6(path)
    edit(path, "ALTER TABLE item_page DROP COLUMN facts", "DELETE FROM schema_migrations WHERE version > 5")
    before = read(path, PAGE_ROWS)

    def killed(db: sqlite3.Connection) -> None:  # migration 6 has emptied item_page by now
        raise KeyboardInterrupt

    migrations = store_module.MIGRATIONS
    monkeypatch.setattr(store_module.schema, "MIGRATIONS", [*migrations[:6], killed, *migrations[7:]])
    with pytest.raises(KeyboardInterrupt):
        Store(path)
    assert read(path, "SELECT max(version) FROM schema_migrations") == [(5,)]
    assert read(path, PAGE_ROWS) == before and before


def test_reconcile_computes_the_facts_a_library_lacks_with_the_same_derivation(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        pull(SnapshotSource(library_file(tmp_path)), store)
        full, lean = store.load(), store.load_page()
    assert full.facts == {}
    assert {i.key: item_facts(i) for i in full.items if i.is_regular} == dict(lean.facts)


def derivation_digest() -> str:
    """A digest of the code `facts.item_facts` runs (and the tables it reads): it changes whenever the
    facts may."""
    parts = [
        inspect.getsource(code)
        for code in (
            ItemFacts,
            facts.item_facts,
            model.Creator,
            model.Item.get,
            *(getattr(model.Item, name).fget for name in ("year", "venue_source", "doi", "url")),
            model.Item.extra_field,
            normalize.title,
            normalize._is_kept,
            normalize._kept_symbols,
            normalize._symbols_of,
            normalize.doi,
        )
    ]
    parts += [
        repr(value)
        for value in (
            model.VENUE_FIELDS,
            sorted(model.PUBLISHER_FIELDS.items()),
            model._YEAR.pattern,
            normalize._DOI_PREFIX.pattern,
            normalize._NOT_WORD_OR_SPACE.pattern,
            sorted(normalize._KEPT_CATEGORIES),
            sorted(normalize._SEPARATORS),
            sorted(normalize._DASHES.items()),
            sorted(normalize._ASCII_TITLE.items()),
        )
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# The digest of the derivation FACTS_VERSION names. When this fails, the facts a store holds may no
# longer be what `item_facts` computes: bump FACTS_VERSION, then record the new digest here.
RECORDED = (3, "4a57c794089ca0df")


def test_the_derivation_cannot_change_without_its_version() -> None:
    assert (facts.FACTS_VERSION, derivation_digest()[:16]) == RECORDED, (
        "item_facts or what it calls changed: bump FACTS_VERSION in zotsync/facts.py and "
        "record the new digest in tests/test_facts.py"
    )


def test_the_digest_follows_the_code_the_facts_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    before = derivation_digest()

    def title(value: str) -> str:
        return value.lower()

    monkeypatch.setattr(normalize, "title", title)
    assert derivation_digest() != before


def test_the_page_leaves_out_creators_only_where_the_facts_hold_the_names(
    tmp_path: Path, catalogue: Path
) -> None:
    path = pulled(tmp_path)
    edit(path, "UPDATE items SET title = 'Zebra' WHERE key = 'PAPER222'")  # clears PAPER222's facts
    with Store(path, readonly=True) as store:
        lean = {i.key: i for i in store.load_page(creators=False).items}
        assert lean["PAPER777"].creators == ()  # its facts carry the names
        assert [c.display for c in lean["PAPER222"].creators] == ["Lovelace, Ada"]  # computed from these
        assert page(store.load_page(creators=False), catalogue) == page(store.load(), catalogue)
        assert "Lovelace, Ada; ACM" in page(store.load_page(creators=False), catalogue)[1]
