"""A book's venue is its publisher, a thesis's its university, a report's its institution (their kind of
document only when that is missing), with no metadata service asked."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import write_config
from factories import api_item, back_to_schema, edit, read, write_json

from zotsync.store import MIGRATIONS, Store

ITEMS = [
    api_item("BK2AAAAA", "Structure and Interpretation", "book", publisher="MIT Press", date="1996"),
    api_item(
        "TH2AAAAA",
        "Understanding Latency Hiding on GPUs",
        "thesis",
        university="University of California, Berkeley",
        thesisType="PhD thesis",
        date="2016",
    ),
    api_item(
        "RP2AAAAA",
        "Agentic Kernel Optimization",
        "report",
        institution="FlashInfer",
        reportType="Technical report",
        date="2026",
    ),
    api_item(
        "RP3AAAAA", "A report from nowhere", "report", institution="", reportType="技术报告", date="2026"
    ),
]
# key → the venue each row shows, written out by hand
VENUES = {
    "BK2AAAAA": "MIT Press · 1996",
    "TH2AAAAA": "University of California, Berkeley · 2016",
    "RP2AAAAA": "FlashInfer · 2026",
    "RP3AAAAA": "技术报告 · 2026",
}


def synced(folder: Path, run) -> dict[str, tuple[str, str]]:
    assert run("-q", "--config", str(folder / "zotsync.yaml"), "sync").code == 0
    rows = csv.DictReader(io.StringIO((folder / "out" / "catalog.csv").read_text(encoding="utf-8")))
    return {row["zotero_key"]: (row["venue"], row["venue_source"]) for row in rows}


def library(folder: Path) -> Path:
    write_json(folder / "library.json", ITEMS)
    (folder / "catalog.yaml").write_text("categories: []\n")
    write_config(
        folder,
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: s.sqlite\n"
        "exports: {dir: out, formats: [csv]}\n",
    )
    return folder


def test_books_theses_and_reports_show_who_published_them(tmp_path: Path, run) -> None:
    shown = synced(library(tmp_path), run)
    assert shown == {key: (venue, "zotero") for key, venue in VENUES.items()}


def test_a_store_from_before_keeps_the_publisher_after_its_upgrade(tmp_path: Path, run) -> None:
    """A store an older zotsync wrote has no publisher on its page rows: migration 12 writes them again."""
    folder = library(tmp_path)
    synced(folder, run)
    store = folder / "s.sqlite"
    back_to_schema(store, 11)
    edit(store, "UPDATE item_page SET fields = json_remove(fields, '$.publisher'), facts = NULL")
    assert read(store, "SELECT count(*) FROM item_page WHERE fields LIKE '%MIT Press%'") == [(0,)]
    (folder / "out" / "catalog.csv").unlink()
    assert synced(folder, run)["BK2AAAAA"] == ("MIT Press · 1996", "zotero")
    with Store(store, readonly=True) as opened:
        assert opened.schema_version == len(MIGRATIONS)
