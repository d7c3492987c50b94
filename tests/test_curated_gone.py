"""A curated paper whose Zotero item is deleted or trashed stays on the page without the venue and links
Zotero gave it: CHANGES.md says so, and `status` says which item it lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import api_item, snapshot_project

TITLE = "Rammer: Enabling Holistic Deep Learning Compiler Optimizations with rTasks"
CATALOGUE = f"""\
title: Reading list
categories:
  - name: Compilers
    entries:
      - title: "{TITLE}"
        why: One scheduler for both levels.
"""


def library(gone: str = "") -> list[dict]:
    rammer = api_item(
        "RAMMERAA",
        TITLE,
        "conferencePaper",
        proceedingsTitle="OSDI",
        date="2020",
        url="https://example.org/rammer",
    )
    if gone == "trashed":
        rammer["data"]["deleted"] = 1
    other = api_item("THERAAAA", "Another paper", date="2021")
    return [other] if gone == "deleted" else [rammer, other]


def write_library(folder: Path, objects: list[dict]) -> None:
    (folder / "library.json").write_text(json.dumps(objects), encoding="utf-8")


@pytest.mark.parametrize("gone", ["deleted", "trashed"])
def test_a_curated_paper_that_lost_its_zotero_item_is_said_in_changes_and_status(
    tmp_path: Path, run, gone: str
) -> None:
    config = str(snapshot_project(tmp_path, library(), CATALOGUE))
    assert run("-q", "--config", config, "sync").code == 0
    assert "https://example.org/rammer" in (tmp_path / "exports" / "catalog.md").read_text(encoding="utf-8")
    write_library(tmp_path, library(gone))
    assert run("-q", "--config", config, "pull").code == 0
    report = json.loads(run("--config", config, "status", "--format", "json").out)
    (entry,) = report["unmatched"]
    assert entry["title"] == TITLE
    if gone == "deleted":
        assert entry["was_zotero_key"] == "RAMMERAA"
        assert entry["reason"].startswith(
            "its Zotero item RAMMERAA was deleted in Zotero since the last sync"
        )
    else:
        assert entry["reason"] == "item is in the trash"
    text = run("--config", config, "status").out
    assert f"  - {TITLE} ({entry['reason']})" in text
    assert run("-q", "--config", config, "sync").code == 0
    changes = (tmp_path / "exports" / "CHANGES.md").read_text(encoding="utf-8")
    assert "### No longer in Zotero\n\n- Rammer: Enabling Holistic" in changes
    assert "its venue and links from Zotero are gone" in changes
    assert "### Removed" not in changes  # the entry is still on the page
    page = (tmp_path / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert TITLE in page and "https://example.org/rammer" not in page
