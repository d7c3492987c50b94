"""The Zotero desktop's local API (`source.type: local` with `base_url`) against the fake server in its
local mode: /api/users/0, no key, no /deleted, versions that stay put on unsynced local edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, Run
from factories import by_key, closed_port, mirror_of, small_library
from zotero_server import ZoteroServer

from zotsync.config import load_config
from zotsync.store import Store


def write_local_config(folder: Path, base_url: str, **extra: str) -> Path:
    source = {"type": "local", "base_url": base_url, **extra}
    lines = ["source:"] + [f"  {k}: {json.dumps(v)}" for k, v in source.items()]
    lines += [f"catalog: {json.dumps(str(ROOT / 'seeds' / 'catalog.yaml'))}", "store: store.sqlite", ""]
    path = folder / "zotsync.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def desktop(zotero_api) -> ZoteroServer:
    server = zotero_api(small_library(), keys={})  # the local API takes no key
    server.local = True
    return server


def pull(run, config: Path, *flags: str) -> Run:
    return run("-q", *flags, "--config", str(config), "pull")


def test_reads_users_0_without_a_path_or_key_and_stores_the_library(
    desktop: ZoteroServer, tmp_path: Path, run
) -> None:
    config = write_local_config(tmp_path, desktop.url)
    result = pull(run, config)
    assert result.code == 0, result.err
    assert {r.path for r in desktop.requests} == {"/api/users/0/items", "/api/users/0/collections"}
    assert all(r.header("Authorization") is None for r in desktop.requests)
    with Store(tmp_path / "store.sqlite") as store:
        got = store.load()
        assert store.sync_state.source == f"local-api:{desktop.url}/users/0"
    want = mirror_of(desktop.library, tmp_path / "mirror")
    assert got.items == want.items and got.collections == want.collections


def test_every_pull_reads_everything_so_deletions_and_local_edits_are_seen(
    desktop: ZoteroServer, tmp_path: Path, run
) -> None:
    config = write_local_config(tmp_path, desktop.url)
    assert pull(run, config).code == 0
    library = desktop.library
    version = library.version
    library.edit_item_locally("TRMSAAAA", title="Edited in Zotero, not yet synced")
    del library.items["NFLDAAAA"]  # the local API has no /deleted to tell of it
    library.listings.clear()
    assert library.version == version  # neither bumps the version the local API reports
    desktop.reset()
    result = pull(run, config)
    assert result.code == 0, result.err
    assert all(r.params.get("format") == "json" and "since" not in r.params for r in desktop.requests)
    assert not any(r.path.endswith("/deleted") for r in desktop.requests)
    with Store(tmp_path / "store.sqlite") as store:
        state = by_key(store.load())
    assert state["TRMSAAAA"].title == "Edited in Zotero, not yet synced"
    assert "NFLDAAAA" not in state


def test_zotero_not_running_is_one_line_saying_how_to_start_it(tmp_path: Path, run, fake_time) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    result = run("--config", str(write_local_config(tmp_path, url)), "pull")
    assert result.code == 1
    [line] = result.err.splitlines()
    assert line.startswith(f"zotsync: error: Zotero is not running (nothing answers at {url}: ConnectError")
    assert line.endswith(
        "start Zotero 7 or later, or read its database instead (source.path: …/zotero.sqlite)"
    )


def test_the_local_api_switched_off_is_one_line_saying_where_to_enable_it(
    desktop: ZoteroServer, tmp_path: Path, run
) -> None:
    desktop.local = "off"
    result = run("--config", str(write_local_config(tmp_path, desktop.url)), "pull")
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: HTTP 403 from the Zotero desktop's local API at {desktop.url}: it is switched off; "
        'in Zotero, enable Settings → Advanced → "Allow other applications on this computer to communicate '
        'with Zotero"'
    ]
    assert (
        not (tmp_path / "store.sqlite").exists() or Store(tmp_path / "store.sqlite").library_version is None
    )


def test_config_type_local_takes_a_path_or_a_base_url_not_both(tmp_path: Path) -> None:
    from zotsync.errors import ConfigError

    config = load_config(write_local_config(tmp_path, "http://localhost:23119"), environ={})
    assert config.source.local_api and config.source.path is None
    with pytest.raises(ConfigError, match=r"reads either zotero.sqlite .* not both"):
        load_config(write_local_config(tmp_path, "http://localhost:23119", path="zotero.sqlite"), environ={})
    with pytest.raises(ConfigError, match="must be an http:// or https:// URL"):
        load_config(write_local_config(tmp_path, "localhost:23119"), environ={})
