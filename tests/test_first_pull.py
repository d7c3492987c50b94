"""A first pull that fails leaves no store behind, and a store no pull ever filled reads as no store: the
read-only commands say to pull instead of reporting an empty library or writing an empty page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, write_config
from factories import small_library, write_web_config

from zotsync.store import Store

READERS = (
    ("status",),
    ("export", "--format", "md", "--output", "-"),
    ("list",),
    ("snapshot", "--output", "-"),
)


def reads_as_no_store(run, config: Path, store: Path, said: str) -> None:
    for command in READERS:
        result = run("--config", str(config), *command)
        assert (result.code, result.out) == (1, ""), command
        assert result.err == f"zotsync: error: {said}\n", command
    assert not (store.parent / "exports").exists()


def test_a_first_pull_refused_by_the_web_api_leaves_no_store(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library())  # private, and no key given
    config = write_web_config(tmp_path, server.url, api_key=None)
    assert run("--config", str(config), "sync").code == 1
    store = tmp_path / "store.sqlite"
    assert not store.exists()
    reads_as_no_store(run, config, store, f"no store at {store}: run `zotsync pull` first")


def test_a_first_pull_from_a_missing_database_leaves_no_store(tmp_path: Path, run) -> None:
    config = write_config(
        tmp_path,
        f"""\
        source:
          type: local
          path: {json.dumps(str(tmp_path / "nowhere"))}
        catalog: {json.dumps(str(ROOT / "seeds" / "catalog.yaml"))}
        store: .zotsync/zotsync.sqlite
        """,
    )
    assert run("--config", str(config), "sync").code == 2
    store = tmp_path / ".zotsync" / "zotsync.sqlite"
    assert not store.exists() and not list(store.parent.glob("zotsync.sqlite*-*"))
    reads_as_no_store(run, config, store, f"no store at {store}: run `zotsync pull` first")


def test_a_store_no_pull_finished_reads_as_no_store(tmp_path: Path, zotero_api, run) -> None:
    """As a first run killed between creating the store and committing the pull leaves it."""
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    store = tmp_path / "store.sqlite"
    Store(store).close()
    reads_as_no_store(run, config, store, f"the store at {store} holds no finished pull: run `zotsync pull`")
    assert run("--config", str(config), "pull").code == 0  # the next pull fills it as usual
    status = run("--config", str(config), "status")
    assert status.code == 0 and "None" not in status.out
    assert status.out.startswith(f"library: user 1234567 from {server.url}/users/1234567, version ")


def test_a_failed_pull_keeps_a_store_an_earlier_pull_filled(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    assert run("--config", str(config), "pull").code == 0
    store = tmp_path / "store.sqlite"
    before = store.read_bytes()
    assert run("--config", str(write_web_config(tmp_path, server.url, api_key=None)), "pull").code == 1
    assert store.read_bytes() == before
    assert run("--config", str(config), "status").code == 0


@pytest.mark.parametrize("kind", ["local", "snapshot"])
def test_status_names_a_library_without_an_id_by_its_source_kind(kind: str) -> None:
    from zotsync.app.status import format_text

    report = {
        "library": {
            "type": "user",
            "id": "",
            "kind": kind,
            "name": "",
            "source": "/x",
            "version": 3,
            "last_sync_at": None,
            "items": 0,
            "trashed": 0,
            "collections": 0,
            "uncurated": 0,
        },
        "catalogue": {"entries": 0, "categories": 0, "read": 0, "unread": 0, "matched": 0},
        "unmatched": [],
        "fuzzy_matches": [],
        "ambiguous": [],
        "duplicates": [],
        "near_duplicate_categories": [],
        "status_conflicts": [],
        "untitled": [],
        "inbox": [],
    }
    first = format_text(report).splitlines()[0]
    assert (
        first == f"library: user ({kind}) from /x, version 3, last sync never; 0 items (0 in the trash), "
        "0 collections"
    )
