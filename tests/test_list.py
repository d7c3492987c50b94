"""`zotsync list`: the library's items with what the catalogue says of them, filtered the ways a curator
looks for the next paper to adopt. Expected sets are computed from the snapshot file itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


@pytest.fixture
def synced(project: Path, run) -> Path:
    config = project / "config" / "zotsync.yaml"
    assert run("-q", "--config", str(config), "sync").code == 0
    return project


def snapshot(project: Path) -> tuple[list[dict], dict[str, dict]]:
    """(top-level items not in the trash, collections by key) straight from the snapshot JSON."""
    objects = json.loads((project / "seeds" / "zotero-library.json").read_text(encoding="utf-8"))
    collections = {o["key"]: o["data"] for o in objects if "parentCollection" in o["data"]}
    items = [
        o["data"]
        for o in objects
        if "parentCollection" not in o["data"]
        and o["data"].get("itemType") not in ("note", "attachment", "annotation")
        and not o["data"].get("parentItem")
        and not o["data"].get("deleted")
    ]
    return items, collections


def listed(run, project: Path, *args: str) -> list[dict]:
    result = run("--config", str(project / "config" / "zotsync.yaml"), "list", "--format", "json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_every_item_once_with_its_fields(synced: Path, run) -> None:
    items, _ = snapshot(synced)
    rows = listed(run, synced)
    assert sorted(r["zotero_key"] for r in rows) == sorted(i["key"] for i in items)
    by_key = {r["zotero_key"]: r for r in rows}
    for item in items:
        row = by_key[item["key"]]
        assert row["title"] == item["title"]
        year = re.search(r"(?<!\d)(\d{4})(?!\d)", item.get("date", ""))
        assert row["year"] == (year.group(1) if year else "")
    assert {"zotero_key", "title", "year", "venue", "collections", "tags", "curated", "categories"} <= set(
        rows[0]
    )


def test_curated_flags_agree_with_the_status_matches(synced: Path, run) -> None:
    status = json.loads(
        run("--config", str(synced / "config" / "zotsync.yaml"), "status", "--format", "json").out
    )
    matched = {m["zotero_key"] for m in status["matches"]}
    rows = listed(run, synced)
    assert {r["zotero_key"] for r in rows if r["curated"]} == matched
    uncurated = listed(run, synced, "--uncurated")
    assert {r["zotero_key"] for r in uncurated} == {r["zotero_key"] for r in rows} - matched
    assert status["library"]["uncurated"] == len(uncurated) > 0
    assert all(r["categories"] for r in rows if r["curated"])


def test_collection_includes_its_subcollections(synced: Path, run) -> None:
    items, collections = snapshot(synced)
    root = next(k for k, c in collections.items() if c["parentCollection"] is False)
    below = {root}
    while True:
        more = {k for k, c in collections.items() if c["parentCollection"] in below} - below
        if not more:
            break
        below |= more
    assert len(below) > 1  # the test needs a collection with children
    expected = {i["key"] for i in items if below & set(i.get("collections", []))}
    rows = listed(run, synced, "--collection", collections[root]["name"])
    assert {r["zotero_key"] for r in rows} == expected and expected
    child = next(k for k in below if k != root)
    child_path = f"{collections[root]['name']} / {collections[child]['name']}"
    only_child = {r["zotero_key"] for r in listed(run, synced, "--collection", child_path)}
    assert only_child and only_child < expected


def test_tag_and_search(synced: Path, run) -> None:
    items, _ = snapshot(synced)
    tagged = {i["key"] for i in items if "megakernel" in {t["tag"] for t in i.get("tags", [])}}
    assert {r["zotero_key"] for r in listed(run, synced, "--tag", "MegaKernel")} == tagged and tagged

    def mentions(item: dict, text: str) -> bool:
        names = [" ".join(c.get(k, "") for k in ("lastName", "firstName", "name")) for c in item["creators"]]
        fields = [item["title"], item.get("DOI", ""), *names]
        return any(text.casefold() in f.casefold() for f in fields)

    for needle in ("fusion", "10.1145", items[0]["creators"][0].get("lastName") or "x"):
        expected = {i["key"] for i in items if mentions(i, needle)}
        assert {r["zotero_key"] for r in listed(run, synced, "--search", needle.upper())} == expected, needle
        assert expected


def test_text_format_one_line_per_item_and_a_count(synced: Path, run) -> None:
    config = str(synced / "config" / "zotsync.yaml")
    result = run("list", "--uncurated", "--config", config)
    lines = result.out.splitlines()
    uncurated = listed(run, synced, "--uncurated")
    assert result.code == 0 and len(lines) == len(uncurated)
    for line, row in zip(lines, uncurated, strict=True):
        assert (
            line.startswith(row["zotero_key"] + "  ")
            and row["title"] in line
            and line.endswith("(uncurated)")
        )
    assert result.err == f"{len(uncurated)} items, {len(uncurated)} not curated\n"


def test_list_before_any_pull_says_what_to_do(project: Path, run) -> None:
    result = run("--config", str(project / "config" / "zotsync.yaml"), "list")
    assert result.code == 1 and "run `zotsync pull` first" in result.err


def test_status_text_counts_uncurated_items_without_an_inbox(synced: Path, run) -> None:
    report = run("status", "--config", str(synced / "config" / "zotsync.yaml")).out
    count = len(listed(run, synced, "--uncurated"))
    assert f"items no curated entry claims: {count} (`zotsync list --uncurated` lists them)" in report


def test_list_leaves_the_store_byte_for_byte(synced: Path, run) -> None:
    store = synced / ".zotsync" / "zotsync.sqlite"
    before = (store.read_bytes(), store.stat().st_mtime_ns)
    assert len(listed(run, synced, "--search", "gpu")) > 0
    assert (store.read_bytes(), store.stat().st_mtime_ns) == before
