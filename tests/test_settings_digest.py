"""CHANGES.md reports what changed in Zotero and the catalogue; a change of the page's settings — or of
a default, on upgrade — is said once, as a setting change, never as reading, adding or removing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from factories import api_collection, api_item, write_json

from zotsync.app import sync as app
from zotsync.config import load_config
from zotsync.export.changelog import BASELINE


def library(folder: Path, retitled: bool = False) -> None:
    write_json(
        folder / "library.json",
        [
            api_collection("NBXC2222", "Inbox"),
            api_collection("TPCC2222", "Topic"),
            *(
                api_item(f"RDD{n}2222", f"Read paper {n}", collections=["TPCC2222"], tags=["read"])
                for n in range(3, 8)
            ),
            api_item("NRDD2222", "Unread paper", collections=["TPCC2222"], tags=["gpu"]),
            api_item("NBXX2222", "Inbox paper", collections=["NBXC2222"]),
            api_item("TTLL2222", "Renamed paper" if retitled else "A paper", collections=["TPCC2222"]),
        ],
    )


def project(folder: Path, exports: str = "", reconcile: str = "") -> Path:
    folder.mkdir(exist_ok=True)
    library(folder)
    (folder / "catalog.yaml").write_text(
        "title: Mine\ncategories:\n  - name: Topic\n    entries: []\n", "utf-8"
    )
    return configure(folder, exports, reconcile)


def configure(folder: Path, exports: str = "", reconcile: str = "") -> Path:
    config = folder / "zotsync.yaml"
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        f"exports:\n  dir: exports\n{exports}reconcile:\n  abbreviate_venues: true\n{reconcile}",
        encoding="utf-8",
    )
    return config


def sync(config: Path) -> str:
    app.run_sync(load_config(config))
    changes = config.parent / "exports" / "CHANGES.md"
    return changes.read_text(encoding="utf-8") if changes.exists() else ""


def newest(digest: str) -> str:
    return digest.split("\n## ")[0]


def test_a_change_of_read_tags_is_one_setting_change_not_reading(tmp_path: Path) -> None:
    config = project(tmp_path, reconcile="  read_tags: [status/read]\n")
    assert sync(config) == BASELINE  # the baseline
    configure(tmp_path)  # the default read tags, which hold `read`
    digest = sync(config)
    section = newest(digest)
    assert "### Settings" in section and "### Newly read" not in section
    assert "- `reconcile.read_tags`: status/read → read, status/read, \\_read, ✅" in section
    assert "- on the page: 5 now read (by the settings, not by reading or in Zotero)" in section
    assert sync(config) == digest  # said once: the next sync has nothing to say
    # reading for real is still reported as reading
    text = (tmp_path / "library.json").read_text(encoding="utf-8")
    (tmp_path / "library.json").write_text(text.replace('"tag": "gpu"', '"tag": "read"'), encoding="utf-8")
    assert "### Newly read\n\n- Unread paper" in newest(sync(config))


def test_upgrading_to_the_read_default_is_reported_as_a_setting_not_115_newly_read(tmp_path: Path) -> None:
    """A store synced by an earlier zotsync (no settings remembered, the read tags without `read`) meets
    the new default: before, every item tagged `read` was reported newly read."""
    config = project(tmp_path, reconcile='  read_tags: [status/read, _read, "✅"]\n  unread_tags: []\n')
    assert sync(config) == BASELINE
    with sqlite3.connect(tmp_path / "store.sqlite") as db:  # as the earlier zotsync left it
        db.execute("DELETE FROM sync_state WHERE name = 'page_settings'")
    configure(tmp_path)  # a config that names no read tags: the defaults, now with `read`
    section = newest(sync(config))
    assert "### Newly read" not in section and "### Added" not in section
    assert "- `reconcile.read_tags`: status/read, \\_read, ✅ → read, status/read, \\_read, ✅" in section
    assert "- `reconcile.unread_tags`: — → unread, status/unread, \\_unread" in section
    assert "5 now read" in section


def test_a_scope_change_with_a_zotero_change_reports_each_as_what_it_is(tmp_path: Path) -> None:
    config = project(tmp_path)
    assert sync(config) == BASELINE
    library(tmp_path, retitled=True)  # Zotero changed
    configure(tmp_path, exports="  scope: curated\n  exclude_collections: [Inbox]\n")  # and the settings
    section = newest(sync(config))
    assert "### Retitled\n\n- A paper → Renamed paper" in section
    assert "### Removed" not in section  # the Inbox paper left the page by the settings
    assert (
        "- `exports.scope`: library → curated" in section
        and "- `exports.exclude_collections`: 0 names (not shown) → 1 name (not shown)" in section
    )
    assert "- on the page: 1 left the page (by the settings" in section
