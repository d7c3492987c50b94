"""The Zotero Web API source against a real HTTP server on 127.0.0.1 (tests/zotero_server.py).

Every case of issue 3: first and no-change syncs with their request budgets, each kind of library change,
a library changing mid-sync, every fault, wrong keys and unknown libraries, group and public libraries,
`pull --full`, environment overrides, a contract test against the snapshot source, and real API responses.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pty
import select
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
import requests
from conftest import ZOTERO_API_KEY, Run
from factories import (
    USER_ID,
    Web,
    assert_same_content,
    by_key,
    config_for,
    mirror_of,
    retry_gap,
    rows,
    small_library,
    write_web_config,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyzotero import Zotero
from zotero_server import FakeLibrary, Fault, ZoteroServer, synthetic_library

from zotsync.app.pull import pull
from zotsync.config import SourceConfig
from zotsync.errors import SourceError
from zotsync.sources.snapshot import SnapshotSource
from zotsync.sources.web import WebSource
from zotsync.store import Store

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "zotero-api"

# The fake server's own protocol is checked with requests, a client independent of the httpx2 that the
# web source (through pyzotero) uses, so one client's quirks cannot hide a server's.
probe = requests.Session()
probe.trust_env = False  # no proxy from the environment between us and 127.0.0.1
SEED_SNAPSHOT = ROOT / "seeds" / "zotero-library.json"


# -- helpers ---------------------------------------------------------------------------------------------
@pytest.fixture
def web(tmp_path: Path, zotero_api, run, fake_time) -> Web:
    server = zotero_api(small_library())
    return Web(server, tmp_path, write_web_config(tmp_path, server.url), run)


# -- first sync, no-change sync, request budgets ---------------------------------------------------------
def test_first_sync_reads_everything_in_pages_of_100(web: Web, tmp_path: Path) -> None:
    for n in range(230):  # 236 items in all: three pages
        web.library.add_item(f"Paper {n}", collections=["GPUCAAAA"] if n % 2 else [])
    result = web.pull(flags=())
    assert result.code == 0, result.err
    assert f"→ {web.library.version}: 236 items added" in result.err
    requests = web.server.requests
    items = [r for r in requests if r.path == f"/users/{USER_ID}/items"]
    assert len(items) == math.ceil(len(web.library.items) / 100) == 3
    assert [r.path for r in requests if r not in items] == [f"/users/{USER_ID}/collections"]
    assert all(r.params["includeTrashed"] == "1" and r.params["limit"] == "100" for r in items)
    assert sorted(int(r.params["start"]) for r in items) == [0, 100, 200]
    assert all(r.header("Zotero-API-Version") == "3" for r in requests)
    assert all(r.header("Authorization") == f"Bearer {ZOTERO_API_KEY}" for r in requests)
    got = web.load()
    assert_same_content(got, mirror_of(web.library, tmp_path / "mirror"))
    assert got.version == web.store_version() == web.library.version
    assert by_key(got)["DRFTAAAA"].deleted  # the trash is read too (includeTrashed=1)
    assert by_key(got)["MLRPAAAA"].parent_key == "MLRAAAAA"


def test_an_unchanged_library_costs_exactly_one_request(web: Web) -> None:
    assert web.pull().code == 0
    version = web.library.version
    result = web.pull(flags=())
    assert result.code == 0
    assert f"up to date at library version {version}" in result.err
    [only] = web.server.requests
    assert only.header("If-Modified-Since-Version") == str(version)
    assert only.status == 304
    assert web.store_version() == version


def test_first_sync_budget_on_a_synthetic_library(tmp_path: Path, zotero_api) -> None:
    library = FakeLibrary.from_snapshot(synthetic_library(1050, 120))
    server = zotero_api(library)
    source = WebSource(config_for(server))
    changes = source.changes(None)
    assert changes is not None and changes.complete
    assert (len(changes.items), len(changes.collections)) == (1050, 120)
    assert source.requests == len(server.requests) == math.ceil(1050 / 100) + math.ceil(120 / 100)
    assert changes.library_version == library.version
    assert len({r.path for r in server.requests if r.path.endswith("/deleted")}) == 0


def test_first_sync_without_total_results_pages_until_a_short_page(tmp_path: Path, zotero_api) -> None:
    library = FakeLibrary.from_snapshot(synthetic_library(250, 3))
    server = zotero_api(library)
    server.total_results = False
    with Store(tmp_path / "store.sqlite") as store:
        pull(WebSource(config_for(server)), store)
        assert_same_content(store.load(), mirror_of(library, tmp_path / "mirror"))
    assert len(server.requests) == 3 + 1


@pytest.mark.parametrize("k", [10, 50, 51, 120])
def test_k_changed_items_stay_within_the_budget(tmp_path: Path, zotero_api, k: int) -> None:
    library = FakeLibrary.from_snapshot(synthetic_library(400, 10))
    server = zotero_api(library)
    with Store(tmp_path / "store.sqlite") as store:
        source = WebSource(config_for(server))
        pull(source, store)
        keys = sorted(library.items)
        for n, key in enumerate(keys[:k]):
            library.edit_item(key, title=f"Edited {n}")
        server.reset()
        source.requests = 0
        report = pull(source, store)
        assert report.result.items_updated == k
        assert source.requests == len(server.requests) <= math.ceil(k / 50) + 4
        fetches = [
            r for r in server.requests if r.path.endswith("/items") and r.params.get("format") == "json"
        ]
        if k <= 50:  # a handful: asked for by key
            assert [len(r.params["itemKey"].split(",")) for r in fetches] == [k]
            assert all(r.params["includeTrashed"] == "1" and r.params["limit"] == "50" for r in fetches)
        else:  # pages of `since=` need fewer requests than batches of 50
            assert len(fetches) == math.ceil(k / 100)
            assert all(r.params["since"] and r.params["includeTrashed"] == "1" for r in fetches)
        assert_same_content(store.load(), mirror_of(library, tmp_path / "mirror"))


# -- each kind of change ---------------------------------------------------------------------------------
def test_edits_adds_trash_restore_delete_move_and_rename(web: Web, tmp_path: Path) -> None:
    assert web.pull().code == 0
    lib = web.library
    steps: list[tuple[str, Callable[[], object], Callable[[dict], bool]]] = [
        (
            "edit",
            lambda: lib.edit_item("TRMSAAAA", title="TIRAMISU (v2)"),
            lambda s: s["TRMSAAAA"].title.endswith("(v2)"),
        ),
        (
            "add",
            lambda: lib.add_item("Ansor", key="NSRAAAAA", collections=["CMPLAAAA"]),
            lambda s: s["NSRAAAAA"].collections == ("CMPLAAAA",),
        ),
        (
            "add a child",
            lambda: lib.add_item("a note", "note", key="NSRNAAAA", parent="NSRAAAAA"),
            lambda s: s["NSRNAAAA"].parent_key == "NSRAAAAA",
        ),
        ("trash", lambda: lib.trash_item("TRMSAAAA"), lambda s: s["TRMSAAAA"].deleted),
        ("restore", lambda: lib.restore_item("TRMSAAAA"), lambda s: not s["TRMSAAAA"].deleted),
        (
            "delete with children",
            lambda: lib.delete_item("MLRAAAAA"),
            lambda s: not {"MLRAAAAA", "MLRNAAAA", "MLRPAAAA"} & set(s),
        ),
        (
            "move",
            lambda: lib.move_item("NFLDAAAA", ["NFRNAAAA", "PLYHAAAA"]),
            lambda s: s["NFLDAAAA"].collections == ("NFRNAAAA", "PLYHAAAA"),
        ),
        (
            "rename",
            lambda: lib.rename_collection("NFRNAAAA", "LLM Inference"),
            lambda s: s["NFRNAAAA"].name == "LLM Inference",
        ),
        (
            "new subcollection",
            lambda: lib.add_collection("Megakernels", parent="NFRNAAAA", key="MGKRAAAA"),
            lambda s: s["MGKRAAAA"].parent_key == "NFRNAAAA",
        ),
        (
            "reparent",
            lambda: lib.move_collection("PLYHAAAA", None),
            lambda s: s["PLYHAAAA"].parent_key is None,
        ),
        ("delete from the trash", lambda: lib.delete_item("DRFTAAAA"), lambda s: "DRFTAAAA" not in s),
        ("version only", lib.touch, lambda s: True),
    ]
    for name, change, check in steps:
        change()
        result = web.pull()
        assert result.code == 0, (name, result.err)
        state = by_key(web.load())
        assert check(state), name
        assert web.store_version() == lib.version, name
        assert_same_content(web.load(), mirror_of(lib, tmp_path / "mirror"))
        assert len(web.server.requests) <= 5, (name, web.server.paths())
        deleted = [r for r in web.server.requests if r.path.endswith("/deleted")]
        assert len(deleted) == 1 and deleted[0].params["since"], name


@pytest.mark.parametrize("zotero_reports_everything", [True, False], ids=["as-zotero", "minimal-report"])
def test_a_collection_deleted_with_its_subcollections(web: Web, zotero_reports_everything: bool) -> None:
    assert web.pull().code == 0
    assert {c.key for c in web.load().collections} >= {"GPUCAAAA", "CMPLAAAA", "PLYHAAAA"}
    # As Zotero: every subcollection in /deleted and the member items updated. Minimal: only the top one
    # is reported and the items are untouched, so the store must drop the subcollections' placements itself.
    web.library.delete_collection(
        "GPUCAAAA", touch_items=zotero_reports_everything, log_subcollections=zotero_reports_everything
    )
    assert web.pull().code == 0
    got = web.load()
    assert {c.key for c in got.collections} == {"NFRNAAAA"}
    state = by_key(got)
    assert state["MLRAAAAA"].collections == ("NFRNAAAA",)
    assert state["TRMSAAAA"].collections == ()
    assert "TRMSAAAA" in state and "MLRAAAAA" in state  # deleting a collection keeps its items
    assert web.store_version() == web.library.version


def test_a_collection_both_deleted_and_changed_in_one_pull_stays_with_its_subtree(web: Web) -> None:
    """/deleted lists every deletion since the store's version, so a collection deleted and then made
    again with its key (a Zotero client that still had it uploads it) is both in /deleted and among the
    changed collections of one pull. It stays, and so do the subcollections that were never deleted."""
    assert web.pull().code == 0
    lib = web.library
    with lib.write() as version:
        lib.deleted["collections"]["GPUCAAAA"] = version
    lib.rename_collection("GPUCAAAA", "GPU (restored)")
    assert web.pull().code == 0
    assert any(r.path.endswith("/deleted") for r in web.server.requests)
    got = web.load()
    state = by_key(got)
    assert {"GPUCAAAA", "CMPLAAAA", "PLYHAAAA", "NFRNAAAA"} <= state.keys()
    assert state["GPUCAAAA"].name == "GPU (restored)"
    assert state["CMPLAAAA"].parent_key == "GPUCAAAA" and state["PLYHAAAA"].parent_key == "CMPLAAAA"
    assert state["TRMSAAAA"].collections == ("PLYHAAAA",)
    assert state["MLRAAAAA"].collections == ("CMPLAAAA", "NFRNAAAA")
    assert_same_content(got, mirror_of(lib, web.folder / "mirror"))
    # The next incremental pull has nothing to bring back: no `pull --full` is needed.
    lib.touch()
    assert web.pull().code == 0
    assert_same_content(web.load(), mirror_of(lib, web.folder / "mirror"))


def test_pull_full_removes_what_vanished_without_a_trace(web: Web) -> None:
    assert web.pull().code == 0
    # Gone without an entry in /deleted (e.g. the deletion log was pruned): only a full read notices.
    with web.library.write():
        del web.library.items["NFLDAAAA"]
        del web.library.collections["PLYHAAAA"]
    assert web.pull().code == 0
    assert "NFLDAAAA" in by_key(web.load())
    result = web.pull("--full")
    assert result.code == 0
    state = by_key(web.load())
    assert "NFLDAAAA" not in state and "PLYHAAAA" not in state
    assert not any(r.path.endswith("/deleted") for r in web.server.requests)
    assert not any(r.header("If-Modified-Since-Version") for r in web.server.requests)
    assert web.store_version() == web.library.version


def test_a_full_pull_that_changes_nothing_says_what_it_read(web: Web) -> None:
    """ "up to date" after --full read as "did nothing"; it re-read and compared every item."""
    assert web.pull().code == 0
    result = web.pull("--full", flags=())
    assert result.code == 0
    items = len(web.load().items)
    assert result.err.splitlines() == [
        f"re-read {items} items: no changes at library version {web.library.version}"
    ]
    assert web.pull(flags=()).err.splitlines() == [f"up to date at library version {web.library.version}"]


# -- the library changing during a pull ------------------------------------------------------------------
def test_library_changing_mid_sync_restarts_and_stores_the_final_version(web: Web) -> None:
    assert web.pull().code == 0
    web.library.edit_item("TRMSAAAA", title="first edit")
    web.server.reset()
    web.server.after_request(2, lambda lib: lib.edit_item("NFLDAAAA", title="edited during the pull"))
    result = web.run("-q", "--config", str(web.config), "pull")
    assert result.code == 0, result.err
    state = by_key(web.load())
    assert state["TRMSAAAA"].title == "first edit"
    assert state["NFLDAAAA"].title == "edited during the pull"
    assert web.store_version() == web.library.version
    conditional = [r for r in web.server.requests if r.header("If-Modified-Since-Version")]
    assert len(conditional) == 2  # the run started over


def test_library_changing_during_the_first_sync(tmp_path: Path, zotero_api) -> None:
    library = FakeLibrary.from_snapshot(synthetic_library(300, 5))
    server = zotero_api(library)
    server.after_request(2, lambda lib: lib.add_item("Added while paging", key="PGNGAAAA"))
    with Store(tmp_path / "store.sqlite") as store:
        pull(WebSource(config_for(server), retry_wait=0.001), store)
        assert store.library_version == library.version
        assert "PGNGAAAA" in store.item_versions()
        assert_same_content(store.load(), mirror_of(library, tmp_path / "mirror"))


def test_a_library_that_never_stands_still_fails_cleanly(tmp_path: Path, zotero_api) -> None:
    library = small_library()
    server = zotero_api(library)
    for n in range(1, 40):
        server.after_request(n, lambda lib: lib.touch())
    source = WebSource(config_for(server), retry_wait=0.001)
    with Store(tmp_path / "store.sqlite") as store, pytest.raises(SourceError, match="kept changing"):
        pull(source, store)
    with Store(tmp_path / "store.sqlite") as store:
        assert store.library_version is None and store.item_versions() == {}


# -- faults ----------------------------------------------------------------------------------------------
@pytest.fixture
def changed(web: Web) -> Web:
    """A synced project whose library has since changed: the next pull has work to do."""
    assert web.pull().code == 0
    web.library.edit_item("TRMSAAAA", title="changed")
    web.library.delete_item("NFLDAAAA")
    web.server.reset()
    return web


def pull_through(web: Web, *faults: Fault | None) -> Run:
    web.server.inject(*faults)
    result = web.run("-q", "--config", str(web.config), "pull")
    assert result.code == 0, result.err
    state = by_key(web.load())
    assert state["TRMSAAAA"].title == "changed" and "NFLDAAAA" not in state
    assert web.store_version() == web.library.version
    return result


@pytest.mark.parametrize(("status", "retry_after"), [(429, 0.3), (503, 0.25)])
def test_retry_after_is_honoured_even_fractional(changed: Web, status: int, retry_after: float) -> None:
    pull_through(changed, Fault.status_code(status, retry_after=retry_after))
    assert retry_gap(changed.server, status) >= retry_after
    assert [r.status for r in changed.server.requests][:2] == [status, 200]


def test_500_is_retried_then_succeeds(changed: Web) -> None:
    pull_through(changed, Fault.status_code(500), Fault.status_code(500))
    assert [r.status for r in changed.server.requests][:3] == [500, 500, 200]


def test_a_backoff_header_slows_the_next_requests(changed: Web) -> None:
    pull_through(changed, Fault.backoff(0.3))
    first, *rest = changed.server.requests
    assert rest and min(r.at for r in rest) - first.at >= 0.3


@pytest.mark.parametrize("fault", [Fault.drop(), Fault.truncate()], ids=["dropped", "truncated"])
def test_dropped_connections_and_truncated_bodies_are_retried(changed: Web, fault: Fault) -> None:
    # Hit the conditional request and then one of the fetches that follow it.
    pull_through(changed, fault, None, fault)
    assert len(changed.server.requests) == 6  # 4 + the 2 retries


def test_a_timeout_is_retried(changed: Web, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WebSource, "LIMITS", replace(WebSource.LIMITS, timeout=0.3))
    pull_through(changed, Fault.delay(1.0))
    assert [r.path for r in changed.server.requests][:2] == [f"/users/{USER_ID}/items"] * 2


def test_retries_exhausted_exit_1_with_one_line_and_the_store_untouched(changed: Web, tmp_path: Path) -> None:
    before_bytes = changed.store_path.read_bytes()
    before_rows = rows(changed.store_path, tmp_path)
    # The conditional request and one fetch succeed; then the API fails until a request gives up.
    changed.server.inject(None, None, *[Fault.status_code(503)] * 40)
    result = changed.run("--config", str(changed.config), "pull")
    assert result.code == 1
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("zotsync: error: Zotero API: HTTP 503 Service Unavailable for GET /users/")
    assert lines[0].endswith("after 5 attempts")
    assert changed.store_path.read_bytes() == before_bytes
    assert rows(changed.store_path, tmp_path) == before_rows
    # The next run, with the API healthy again, lands everything.
    changed.server.reset()
    pull_through(changed)


def test_retries_exhausted_on_dropped_connections(changed: Web) -> None:
    changed.server.inject(*[Fault.drop()] * 5)
    result = changed.run("--config", str(changed.config), "pull")
    assert result.code == 1
    assert result.err.strip() == (
        "zotsync: error: Zotero API: connection failed (RemoteProtocolError: Server disconnected without "
        f"sending a response.) for GET /users/{USER_ID}/items after 5 attempts"
    )
    assert len(changed.server.requests) == 5


# -- keys, libraries, configuration ----------------------------------------------------------------------
def test_wrong_key_is_403_exit_1_and_the_key_is_never_shown(
    tmp_path: Path, zotero_api, run, caplog: pytest.LogCaptureFixture
) -> None:
    server = zotero_api(small_library())
    wrong = "Wr0ngK3yWr0ngK3yWr0ngK3y"
    config = write_web_config(tmp_path, server.url, api_key=wrong)
    with caplog.at_level(logging.DEBUG):
        result = run("-v", "--config", str(config), "pull")
    assert result.code == 1
    message = "HTTP 403 from the Zotero API: the API key is wrong or lacks access to users/1234567"
    assert f"zotsync: error: {message}" in result.err.splitlines()
    assert server.requests[0].header("Authorization") == f"Bearer {wrong}"  # it was sent, as a header only
    for text in (result.out, result.err, caplog.text):
        assert wrong not in text
    assert (
        not (tmp_path / "store.sqlite").exists() or Store(tmp_path / "store.sqlite").library_version is None
    )


def test_the_source_itself_never_puts_the_key_in_messages_or_logs(
    zotero_api, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the CLI's redaction: log records, exception text and the traceback are clean."""
    server = zotero_api(small_library())
    server.inject(Fault.status_code(503), Fault.drop(), Fault.truncate())
    with caplog.at_level(logging.DEBUG, logger="zotsync"):
        good = WebSource(config_for(server), retry_wait=0.001)
        assert good.changes(None) is not None
        bad = WebSource(config_for(server, key="N0tTh3K3yN0tTh3K3yN0tTh3"), retry_wait=0.001)
        with pytest.raises(SourceError) as failure:
            bad.changes(None)
    assert "GET /users/" in caplog.text  # -v shows each request...
    texts = [caplog.text, str(failure.value), "".join(traceback.format_exception(failure.value))]
    for text in texts:  # ...but never a key
        assert ZOTERO_API_KEY not in text and "N0tTh3K3yN0tTh3K3yN0tTh3" not in text
    assert ZOTERO_API_KEY not in repr(good.config)


def test_a_key_without_access_to_the_library_is_403(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library(), keys={ZOTERO_API_KEY: ["users/7"]})
    result = run("--config", str(write_web_config(tmp_path, server.url)), "pull")
    assert result.code == 1
    assert "the API key is wrong or lacks access to users/1234567" in result.err


def test_an_unknown_library_is_404(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library())
    result = run("--config", str(write_web_config(tmp_path, server.url, library_id="999")), "pull")
    assert result.code == 1
    assert result.err.strip() == (
        f"zotsync: error: HTTP 404 from the Zotero API: no library users/999 at {server.url} "
        "(check source.library_type and source.library_id)"
    )


def test_group_libraries(tmp_path: Path, zotero_api, run) -> None:
    group = small_library("group", "4242")
    server = zotero_api(group, small_library(), keys={ZOTERO_API_KEY: ["groups/4242"]})
    config = write_web_config(tmp_path, server.url, library_type="group", library_id="4242")
    assert run("-q", "--config", str(config), "pull").code == 0
    assert {r.path.split("/items")[0].split("/collections")[0] for r in server.requests} == {"/groups/4242"}
    with Store(tmp_path / "store.sqlite") as store:
        got = store.load()
        assert (got.library_type, got.library_id, got.version) == ("group", "4242", group.version)
        assert store.sync_state.source == f"web:{server.url}/groups/4242"
    group.rename_collection("NFRNAAAA", "Serving")
    server.reset()
    assert run("-q", "--config", str(config), "pull").code == 0
    assert server.requests[0].path == "/groups/4242/items"
    with Store(tmp_path / "store.sqlite") as store:
        assert by_key(store.load())["NFRNAAAA"].name == "Serving"
    # The same key cannot read the user library next to it.
    (tmp_path / "user").mkdir()
    result = run("--config", str(write_web_config(tmp_path / "user", server.url)), "pull")
    assert result.code == 1 and "lacks access to users/1234567" in result.err


def test_a_public_library_needs_no_key(tmp_path: Path, zotero_api, run) -> None:
    library = small_library()
    library.public = True
    server = zotero_api(library)
    config = write_web_config(tmp_path, server.url, api_key="")
    assert run("-q", "--config", str(config), "pull").code == 0
    assert all(r.header("Authorization") is None for r in server.requests)
    assert len(Store(tmp_path / "store.sqlite").load().items) == len(library.items)


def test_environment_variables_override_the_config(
    tmp_path: Path, zotero_api, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = small_library("group", "5151")
    server = zotero_api(group, keys={"EnvK3yEnvK3yEnvK3yEnvK3y": None})
    config = write_web_config(
        tmp_path, "http://127.0.0.1:9", library_type="user", library_id="1", api_key="ignored"
    )
    monkeypatch.setenv("ZOTERO_API_KEY", "EnvK3yEnvK3yEnvK3yEnvK3y")
    monkeypatch.setenv("ZOTERO_LIBRARY_ID", "5151")
    monkeypatch.setenv("ZOTERO_LIBRARY_TYPE", "group")
    monkeypatch.setenv("ZOTERO_API_BASE", server.url)
    result = run("-v", "--config", str(config), "pull")
    assert result.code == 0, result.err
    assert "EnvK3yEnvK3yEnvK3yEnvK3y" not in result.err + result.out
    assert {r.path for r in server.requests} == {"/groups/5151/items", "/groups/5151/collections"}
    assert {r.header("Authorization") for r in server.requests} == {"Bearer EnvK3yEnvK3yEnvK3yEnvK3y"}
    with Store(tmp_path / "store.sqlite") as store:
        assert store.library_version == group.version


def test_source_id_names_the_library_but_not_the_key() -> None:
    source = WebSource(
        SourceConfig(
            type="web", library_type="group", library_id="42", api_key="K3y", base_url="https://x.org/"
        )
    )
    assert source.id == "web:https://x.org/groups/42"


# -- one dataset, two sources ----------------------------------------------------------------------------
@pytest.mark.parametrize("dataset", ["seeds", "synthetic"])
def test_contract_web_and_snapshot_sources_store_the_same_library(
    tmp_path: Path, zotero_api, dataset: str
) -> None:
    if dataset == "seeds":
        snapshot = SEED_SNAPSHOT
    else:
        snapshot = tmp_path / "synthetic.json"
        snapshot.write_text(json.dumps(synthetic_library(420, 12, seed=7)), encoding="utf-8")
    library = FakeLibrary.from_snapshot(snapshot)
    server = zotero_api(library)
    with Store(tmp_path / "web.sqlite") as web_store, Store(tmp_path / "snapshot.sqlite") as snapshot_store:
        pull(WebSource(config_for(server)), web_store)
        pull(SnapshotSource(snapshot), snapshot_store)
        from_web, from_snapshot = web_store.load(), snapshot_store.load()
    assert_same_content(from_web, from_snapshot)
    assert from_web == from_snapshot  # versions, library identity and all
    assert len(from_web.items) == sum(
        1 for o in json.loads(snapshot.read_text("utf-8")) if "itemType" in o["data"]
    )


# -- real API responses ----------------------------------------------------------------------------------
def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_real_api_objects_pulled_through_the_server(tmp_path: Path, zotero_api) -> None:
    objects = [fixture("item_doc.json"), fixture("attachments_doc.json"), fixture("collection_doc.json")]
    library = FakeLibrary(objects=objects, library_id="475425", name="Z public library")
    server = zotero_api(library)
    with Store(tmp_path / "store.sqlite") as store:
        pull(WebSource(config_for(server)), store)
        got = by_key(store.load())
        assert store.library_version == 6  # the newest object's version
    book = got["X42A7DEE"]
    assert book.item_type == "book" and book.title.startswith("Electron Microscopy and Analysis 1993")
    assert book.creators[0].name == "Institute of Physics (Great Britain)"
    assert (book.creators[1].last_name, book.creators[1].first_name) == ("Craven", "A. J")
    assert [(t.name, t.type) for t in book.tags][:2] == [("Analysis", 1), ("Congresses", 1)]
    # Its two collections are not in this library, so the store shows no membership for them.
    assert book.collections == () and book.year == "1993"
    assert book.get("publisher") == "Institute of Physics Pub" and "relations" not in book.fields
    attachment = got["TM8QRS36"]
    assert (attachment.parent_key, attachment.collections, attachment.get("contentType")) == (
        "47RUN6RI",
        (),
        "text/html",
    )
    collection = got["KIMI8BSG"]
    assert (collection.name, collection.parent_key, collection.version) == ("LoC", "T3DAUPWW", 6)
    # The server hands them back exactly as captured.
    served = probe.get(
        f"{server.url}/users/475425/items/X42A7DEE", headers={"Authorization": f"Bearer {ZOTERO_API_KEY}"}
    )
    assert served.json() == fixture("item_doc.json")


@pytest.mark.parametrize(
    ("kind", "name"), [("items", "item_versions.json"), ("collections", "collection_versions.json")]
)
def test_format_versions_and_keys_have_the_real_shapes(zotero_api, kind: str, name: str) -> None:
    versions: dict[str, int] = fixture(name)
    library = FakeLibrary(library_id="475425")
    for key, version in versions.items():
        with library.write():
            if kind == "items":
                library.items[key] = library._item_object(
                    {"key": key, "version": version, "itemType": "book"}
                )
            else:
                library.collections[key] = library._collection_object(
                    {"key": key, "version": version, "name": key, "parentCollection": False}
                )
    server = zotero_api(library)
    auth = {"Authorization": f"Bearer {ZOTERO_API_KEY}"}
    reply = probe.get(f"{server.url}/users/475425/{kind}", params={"format": "versions"}, headers=auth)
    assert reply.json() == versions
    keys = probe.get(f"{server.url}/users/475425/{kind}", params={"format": "keys"}, headers=auth).text
    assert keys.endswith("\n") and sorted(keys.split()) == sorted(versions)
    real_keys = (FIXTURES / "keys_doc.txt").read_text(encoding="utf-8")
    assert real_keys.endswith("\n") and all(len(k) == 8 for k in real_keys.split())


# -- the server speaks what pyzotero expects -------------------------------------------------------------
def test_pyzotero_reads_the_fake_server(zotero_api) -> None:
    library = FakeLibrary.from_snapshot(synthetic_library(260, 4))
    library.trash_item(next(iter(library.items)))
    server = zotero_api(library)
    zot = Zotero(library.library_id, "user", ZOTERO_API_KEY, client=httpx2.Client(trust_env=False))
    zot.endpoint = server.url
    everything = zot.everything(zot.items())
    trashed = [k for k, o in library.items.items() if o["data"].get("deleted")]
    assert len(everything) == len(library.items) - len(trashed)  # follows Link rel="next"
    assert len(server.requests) == math.ceil(len(everything) / 100)
    assert len(zot.everything(zot.top())) == sum(
        1 for o in library.items.values() if not o["data"].get("parentItem") and not o["data"].get("deleted")
    )
    assert {o["key"] for o in zot.trash()} == set(trashed)
    assert zot.item_versions(since=0, includeTrashed=1) == {k: o["version"] for k, o in library.items.items()}
    assert zot.collection_versions() == {k: o["version"] for k, o in library.collections.items()}
    assert zot.deleted(since=0) == {
        "collections": [],
        "items": [],
        "searches": [],
        "tags": [],
        "settings": [],
    }
    assert zot.last_modified_version() == library.version
    assert zot.num_items() == int(zot.request.headers["Total-Results"])
    assert zot.key_info()["access"]["user"]["library"] is True
    current = probe.get(f"{server.url}/keys/current", headers={"Zotero-API-Key": ZOTERO_API_KEY})
    assert current.json()["userID"] == int(library.library_id)
    assert probe.get(f"{server.url}/keys/current", headers={"Zotero-API-Key": "nope"}).status_code == 403
    assert probe.get(f"{server.url}/users/1/deleted", params={"key": ZOTERO_API_KEY}).status_code == 400
    too_many = ",".join(list(library.items)[:51])
    assert (
        probe.get(
            f"{server.url}/users/1/items", params={"itemKey": too_many, "key": ZOTERO_API_KEY}
        ).status_code
        == 400
    )


# -- progress bar ----------------------------------------------------------------------------------------
def test_no_progress_bar_when_stderr_is_not_a_terminal(
    zotero_api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An earlier CLI run may have left its handler on a stream that pytest has since closed.
    monkeypatch.setattr(logging.getLogger("zotsync"), "handlers", [])
    server = zotero_api(FakeLibrary.from_snapshot(synthetic_library(250, 3)))
    assert WebSource(config_for(server), progress=True).changes(None) is not None
    assert capsys.readouterr() == ("", "")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_only_when_asked(zotero_api) -> None:
    server = zotero_api(FakeLibrary.from_snapshot(synthetic_library(250, 3)))
    script = textwrap.dedent(
        f"""
        import sys
        from zotsync.config import SourceConfig
        from zotsync.sources.web import WebSource
        config = SourceConfig(type="web", library_id="1", api_key={ZOTERO_API_KEY!r}, base_url={server.url!r})
        WebSource(config, progress=False).changes(None)
        print("<quiet run done>", file=sys.stderr, flush=True)
        WebSource(config, progress=True).changes(None)
        """
    )
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", script], stderr=follower, cwd=ROOT)
    os.close(follower)
    output = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert child.wait(30) == 0, output
    quiet, _, loud = output.decode().partition("<quiet run done>")
    assert quiet.strip() == ""
    assert "Fetching the Zotero library" in loud and "100%" in loud


# -- property: after any sequence of changes and transient faults, the store mirrors the library ---------
_operations = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "edit",
                "add",
                "trash",
                "restore",
                "delete",
                "move",
                "rename",
                "add_collection",
                "delete_collection",
            ]
        ),
        st.integers(0, 50),
        st.sampled_from([None, None, Fault.drop(), Fault.truncate(), Fault.status_code(500)]),
    ),
    min_size=1,
    max_size=6,
)


def _apply(library: FakeLibrary, operation: str, n: int) -> None:
    items, collections = sorted(library.items), sorted(library.collections)
    regular = [k for k in items if not library.items[k]["data"].get("parentItem")]
    pick = items[n % len(items)] if items else None
    if operation == "add" or pick is None:
        parent = regular[n % len(regular)] if regular and n % 3 == 0 else None
        library.add_item(f"new {n}", "note" if parent else "preprint", parent=parent)
    elif operation == "edit":
        library.edit_item(pick, title=f"edited {n}")
    elif operation == "trash":
        library.trash_item(pick)
    elif operation == "restore":
        library.restore_item(pick)
    elif operation == "delete":
        library.delete_item(pick)
    elif operation == "move" and regular and collections:
        library.move_item(regular[n % len(regular)], collections[n % len(collections) :][:2])
    elif operation == "rename" and collections:
        library.rename_collection(collections[n % len(collections)], f"renamed {n}")
    elif operation == "delete_collection" and collections:
        library.delete_collection(collections[n % len(collections)])
    else:
        library.add_collection(
            f"collection {n}", parent=collections[n % len(collections)] if collections else None
        )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=_operations)
def test_property_store_mirrors_the_library_after_every_pull(tmp_path_factory, operations) -> None:
    folder = tmp_path_factory.mktemp("property")
    library = small_library()
    with (
        ZoteroServer(library, keys={ZOTERO_API_KEY: None}) as server,
        Store(folder / "store.sqlite") as store,
    ):
        source = WebSource(config_for(server), retry_wait=0.001)
        pull(source, store)
        for operation, n, fault in operations:
            _apply(library, operation, n)
            server.inject(fault)
            pull(source, store)
            assert store.library_version == library.version
            assert_same_content(store.load(), mirror_of(library, folder / "mirror"))


@pytest.mark.parametrize("typed", ["wrong", "key"])
def test_a_value_too_short_to_be_a_key_does_not_garble_the_403_line(
    tmp_path: Path, zotero_api, run, monkeypatch: pytest.MonkeyPatch, typed: str
) -> None:
    """Masking `wrong` or `key` would turn "the API key is wrong" into "the API key is ***"; a Zotero key
    is 24 characters, so a value this short is no secret worth masking."""
    server = zotero_api(small_library())
    monkeypatch.setenv("ZOTERO_API_KEY", typed)
    result = run("--config", str(write_web_config(tmp_path, server.url, api_key=None)), "pull")
    assert result.code == 1
    assert result.err.splitlines() == [
        "zotsync: error: HTTP 403 from the Zotero API: the API key is wrong or lacks access to users/1234567"
    ]


def test_a_real_length_key_is_still_masked_inside_a_word(tmp_path: Path) -> None:
    from zotsync.secrets import redact, register

    register("Lo9gK3yLo9gK3yLo9gK3yLo9")
    assert redact("header=xLo9gK3yLo9gK3yLo9gK3yLo9y") == "header=x***y"
