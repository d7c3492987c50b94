"""The change digest: the pure diff of two syncs' pages, its Markdown, and CHANGES.md end to end."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from factories import placement as any_placement

from zotsync.app import sync as app
from zotsync.config import load_config
from zotsync.digest import Digest, Row, diff_and_news, rows_of
from zotsync.export.changelog import BASELINE, prepend, render
from zotsync.model import Placement
from zotsync.store import MIGRATIONS, Store


def row(identity: str, category: str = "A", title: str = "", status: str = "unread", alias: str = "") -> Row:
    return Row(identity, alias, category, title or identity.split(":", 1)[1].title(), status)


def diff(previous: list[Row], current: list[Row]) -> Digest | None:
    """The digest alone (what CHANGES.md says) of two syncs' pages."""
    placements = [any_placement(title=each.title, category=each.category) for each in current]
    return diff_and_news(previous, placements, datetime.now(UTC), current)[0]


# -- the pure diff ------------------------------------------------------------------------------------


def test_nothing_changed_is_none_even_when_rows_moved() -> None:
    rows = [row("key:AAAAAAAA"), row("key:BBBBBBBB", "B")]
    assert diff(rows, list(rows)) is None
    assert diff(rows, list(reversed(rows))) is None
    assert diff([], []) is None


def test_added_and_removed() -> None:
    before = [row("key:AAAAAAAA", title="Kept"), row("key:BBBBBBBB", title="Gone")]
    after = [row("key:AAAAAAAA", title="Kept"), row("key:CCCCCCCC", title="New"), row("title:x", title="X")]
    assert diff(before, after) == Digest(added=("New", "X"), removed=("Gone",))


def test_recategorised_shows_old_and_new_categories() -> None:
    before = [row("key:AAAAAAAA", "Inbox", "Paper")]
    after = [row("key:AAAAAAAA", "Compilers", "Paper")]
    assert diff(before, after) == Digest(recategorised=(("Paper", ("Inbox",), ("Compilers",)),))


def test_an_entry_in_two_categories() -> None:
    both = [row("key:AAAAAAAA", "A", "P"), row("key:AAAAAAAA", "B", "P")]
    assert diff(both, list(both)) is None
    assert diff(both, list(reversed(both))) is None  # the same two categories, another order
    moved = [row("key:AAAAAAAA", "A", "P"), row("key:AAAAAAAA", "C", "P")]
    assert diff(both, moved) == Digest(recategorised=(("P", ("A", "B"), ("A", "C")),))
    one = [row("key:AAAAAAAA", "A", "P")]
    assert diff(both, one) == Digest(recategorised=(("P", ("A", "B"), ("A",)),))
    # read in one placement is read: and "newly read" names the paper once
    read = [row("key:AAAAAAAA", "A", "P", "read"), row("key:AAAAAAAA", "B", "P")]
    assert diff(both, read) == Digest(newly_read=("P",))


def test_newly_read_but_not_newly_unread() -> None:
    unread = [row("key:AAAAAAAA", title="P")]
    read = [row("key:AAAAAAAA", title="P", status="read")]
    assert diff(unread, read) == Digest(newly_read=("P",))
    assert diff(read, unread) is None  # the groups are the ones readers asked for


def test_retitled() -> None:
    before = [row("key:AAAAAAAA", title="Old Title")]
    after = [row("key:AAAAAAAA", title="New Title")]
    assert diff(before, after) == Digest(retitled=(("Old Title", "New Title"),))


def test_a_curated_entry_that_gains_or_loses_its_match_is_one_entry() -> None:
    unmatched = [row("title:rammer", "A", "Rammer", alias="rammer")]
    matched = [row("key:ZNJI4X9Q", "A", "Rammer: Holistic", "read", alias="rammer")]
    assert diff(unmatched, matched) == Digest(
        newly_read=("Rammer: Holistic",), retitled=(("Rammer", "Rammer: Holistic"),)
    )
    # losing its Zotero item is said: the page lost the venue and links Zotero gave it
    assert diff(matched, unmatched) == Digest(
        retitled=(("Rammer: Holistic", "Rammer"),), unmatched=("Rammer",)
    )


def test_an_unmatched_entry_pinned_to_a_listed_item_merges_into_it() -> None:
    before = [row("title:x", "A", "X", alias="x"), row("key:KKKKKKKK", "Unfiled", "X (Zotero)")]
    after = [row("key:KKKKKKKK", "A", "X (Zotero)", alias="x")]
    assert diff(before, after) == Digest(recategorised=(("X (Zotero)", ("Unfiled",), ("A",)),))


def test_groups_follow_page_order() -> None:
    before = [row("key:BBBBBBBB", "B", "b"), row("key:AAAAAAAA", "A", "a")]
    after = [row("key:AAAAAAAA", "A", "a", "read"), row("key:BBBBBBBB", "B", "b", "read")]
    assert diff(before, after) == Digest(newly_read=("a", "b"))


def placement(category: str, title: str, key: str = "", curated_title: str = "") -> Placement:
    return Placement(category, "unread", title, "", "", "", (), "", "", False, (), key, (), (), curated_title)


def test_rows_of_gives_curated_rows_their_curated_title_as_alias() -> None:
    rows = rows_of(
        [
            placement("A", "Zotero's Title", "KKKKKKKK", curated_title="Curated One"),
            placement("A", "Curated Two", curated_title="Curated Two"),
            placement("A", "Uncurated", "UUUUUUUU"),
        ],
    )
    assert rows == (
        Row("key:KKKKKKKK", "curated one", "A", "Zotero's Title", "unread"),
        Row("title:curated two", "curated two", "A", "Curated Two", "unread"),
        Row("key:UUUUUUUU", "", "A", "Uncurated", "unread"),
    )


def test_render_lists_only_non_empty_groups_with_the_utc_time() -> None:
    digest = Digest(
        added=("A <b>bold</b> *claim*",),
        recategorised=(("P", ("X", "Y"), ("Z",)),),
        retitled=(("Old", "New"),),
    )
    when = datetime(2026, 12, 1, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    assert render(digest, when) == (
        "## 2026-12-02 01:30 UTC\n\n"
        "### Added\n\n- A &lt;b&gt;bold&lt;/b&gt; \\*claim\\*\n\n"
        "### Recategorised\n\n- P: X, Y → Z\n\n"
        "### Retitled\n\n- Old → New\n"
    )
    assert prepend("## new\n", "") == "## new\n"
    assert prepend("## new\n", "## old\n") == "## new\n\n## old\n"


def test_render_drops_controls_and_bidi_overrides_as_the_page_does() -> None:
    digest = Digest(
        added=("Evil\x1b]0;pwned\x07 title\u202e",),
        retitled=(("Old\x9b2J", "New\u2066"),),
        recategorised=(("P", ("X\x00",), ("Z\u202a",)),),
    )
    text = render(digest, datetime(2026, 12, 1, tzinfo=UTC))
    assert "- Evil\\]0;pwned title\n" in text  # ] escaped as Markdown
    assert "- Old2J → New\n" in text and "- P: X → Z\n" in text
    assert not any(
        (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202a\u202e\u2066" for c in text
    )


# -- the store keeps the last page --------------------------------------------------------------------


def test_an_older_store_gets_the_table_and_no_baseline(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    MIGRATIONS[0](db)
    db.execute("INSERT INTO schema_migrations VALUES (1, 'then')")
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        assert store.catalogue_rows() is None
        store.replace_catalogue_rows([])
        assert store.catalogue_rows() == []  # an empty page is a baseline too
        store.replace_catalogue_rows([("key:A", "", "C", "T", "read")])
        assert store.catalogue_rows() == [("key:A", "", "C", "T", "read")]


# -- end to end ---------------------------------------------------------------------------------------

DAY1 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
DAY2 = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


@pytest.fixture
def config(project: Path):
    return load_config(project / "config" / "zotsync.yaml")


def edit_snapshot(project: Path, change) -> None:
    path = project / "seeds" / "zotero-library.json"
    objects = json.loads(path.read_text(encoding="utf-8"))
    for obj in objects:
        if change(obj["data"]) is not None:
            obj["version"] = obj["data"]["version"] = obj["version"] + 1000
    path.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")


def retitle_rammer(data: dict) -> bool | None:
    if data["key"] == "ZNJI4X9Q":
        data["title"] = "Rammer: Holistic DL Compiler Optimizations with rTasks (extended)"
        return True
    return None


def trash_horizontal_fusion(data: dict) -> bool | None:
    if data["key"] == "57V8YMZM":  # an uncurated item: its row leaves the page
        data["deleted"] = 1
        return True
    return None


def test_sync_writes_a_dated_digest_only_when_the_page_changed(project: Path, config) -> None:
    changes = project / "exports" / "CHANGES.md"
    written = app.run_sync(config, clock=lambda: DAY1).written
    # The first sync records the baseline, and says so, so that a link to CHANGES.md resolves.
    assert changes.read_text(encoding="utf-8") == BASELINE
    assert (changes, True) in written

    edit_snapshot(project, retitle_rammer)
    edit_snapshot(project, trash_horizontal_fusion)
    catalog = project / "seeds" / "catalog.yaml"
    text = catalog.read_text(encoding="utf-8")
    marked = text.replace(
        '"Optimal Software Pipelining and Warp Specialization for Tensor Core GPUs"\n'
        "        venue: OSDI'26\n        status: unread",
        '"Optimal Software Pipelining and Warp Specialization for Tensor Core GPUs"\n'
        "        venue: OSDI'26\n        status: read",
    )
    assert marked != text
    catalog.write_text(marked, encoding="utf-8")

    written = app.run_sync(config, clock=lambda: DAY2).written
    assert (changes, True) in written
    expected = (
        "## 2026-12-02 09:30 UTC\n\n"
        "### Removed\n\n- Automatic Horizontal Fusion for GPU Kernels\n\n"
        "### Newly read\n\n- Optimal Software Pipelining and Warp Specialization for Tensor Core GPUs\n\n"
        "### Retitled\n\n- Rammer: Enabling Holistic Deep Learning Compiler Optimizations with rTasks → "
        "Rammer: Holistic DL Compiler Optimizations with rTasks (extended)\n"
    )
    assert changes.read_text(encoding="utf-8") == expected

    before = (changes.read_bytes(), changes.stat().st_mtime_ns)
    written = app.run_sync(config, clock=lambda: DAY2 + timedelta(hours=1)).written
    assert (changes.read_bytes(), changes.stat().st_mtime_ns) == before
    assert changes not in [path for path, _ in written]


def test_two_syncs_with_changes_on_one_day_give_two_sections_newest_first(project: Path, config) -> None:
    changes = project / "exports" / "CHANGES.md"
    app.run_sync(config, clock=lambda: DAY1)
    edit_snapshot(project, retitle_rammer)
    app.run_sync(config, clock=lambda: DAY2)
    edit_snapshot(project, trash_horizontal_fusion)
    app.run_sync(config, clock=lambda: DAY2 + timedelta(hours=2, minutes=5))
    text = changes.read_text(encoding="utf-8")
    assert text.startswith("## 2026-12-02 11:35 UTC\n\n### Removed\n\n- Automatic Horizontal Fusion")
    assert "\n\n## 2026-12-02 09:30 UTC\n\n### Retitled\n" in text
    assert text.count("\n## ") + text.startswith("## ") == 2


def test_a_failed_digest_write_is_retried_by_the_next_sync(project: Path, config, run) -> None:
    changes = project / "exports" / "CHANGES.md"
    app.run_sync(config, clock=lambda: DAY1)
    edit_snapshot(project, trash_horizontal_fusion)
    changes.unlink()  # the baseline's file, replaced by a folder:
    changes.mkdir()  # the file cannot be written
    result = run("--config", str(project / "config" / "zotsync.yaml"), "sync")
    assert result.code == 1 and "CHANGES.md" in result.err
    changes.rmdir()
    app.run_sync(config, clock=lambda: DAY2)
    assert "### Removed\n\n- Automatic Horizontal Fusion for GPU Kernels\n" in changes.read_text(
        encoding="utf-8"
    )


def test_the_cli_reports_the_digest_it_wrote(project: Path, run) -> None:
    config = str(project / "config" / "zotsync.yaml")
    assert run("-q", "--config", config, "sync").code == 0
    edit_snapshot(project, trash_horizontal_fusion)
    result = run("--config", config, "sync")
    assert result.code == 0 and f"wrote {project / 'exports' / 'CHANGES.md'}" in result.err
    assert (project / "exports" / "CHANGES.md").read_text(encoding="utf-8").startswith("## 20")
