"""`sync` for machines: `--json` (one object on stdout), `--exit-code` (3 when an export changed) and
`--full`, through the snapshot source and through the web source on the fake Zotero server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import USER_ID, config_of, small_library, write_web_config

PULL_COUNTS = ("items_added", "items_updated", "items_removed", "collections_changed", "collections_removed")


def sync_json(run, config: str | Path, *flags: str) -> dict[str, Any]:
    result = run("--config", str(config), "sync", "--json", *flags)
    assert result.code == 0, result.err
    assert result.err == ""  # the JSON says it all: no human lines beside it
    assert result.out.endswith("}\n") and result.out.count("\n") == 1  # one object, one line
    summary = json.loads(result.out)
    assert_types(summary)
    return summary


def assert_types(summary: dict[str, Any]) -> None:
    assert isinstance(summary["changed"], bool)
    assert type(summary["library_version"]) is int
    assert summary["previous_version"] is None or type(summary["previous_version"]) is int
    assert type(summary["requests"]) is int
    assert isinstance(summary["duration_s"], float | int) and summary["duration_s"] >= 0
    for name in ("files", "unchanged"):
        assert isinstance(summary[name], list) and all(isinstance(p, str) for p in summary[name])
    for name in PULL_COUNTS:
        assert type(summary[name]) is int and summary[name] >= 0


def test_json_of_a_first_and_a_no_change_sync_from_the_snapshot(project: Path, run) -> None:
    exports = project / "exports"
    first = sync_json(run, config_of(project))
    assert first["changed"] is True
    assert (first["library_version"], first["previous_version"], first["requests"]) == (480, None, 0)
    pages = sorted(str(exports / name) for name in ("catalog.csv", "catalog.md"))
    baseline = [str(exports / "CHANGES.md")]  # the first sync's, saying it is the baseline
    notes = [
        str(exports / "notes" / f"{key}.md") for key in ("73KSMM92", "G5M8JA32", "YXQKD2DE")
    ]  # the demo's
    assert sorted(first["files"]) == sorted(pages + notes + baseline)
    assert first["unchanged"] == []
    assert first["items_added"] > 0 and first["collections_changed"] > 0
    assert (first["items_updated"], first["items_removed"], first["collections_removed"]) == (0, 0, 0)

    again = sync_json(run, config_of(project))
    assert again["changed"] is False
    assert (again["library_version"], again["previous_version"], again["requests"]) == (480, 480, 0)
    assert again["files"] == [] and sorted(again["unchanged"]) == pages
    assert all(again[name] == 0 for name in PULL_COUNTS)


def test_json_of_a_changed_sync_names_the_files_it_wrote(project: Path, run) -> None:
    assert run("-q", "--config", config_of(project), "sync").code == 0
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    item = next(
        o for o in objects if o["data"].get("itemType") == "journalArticle" and not o["data"].get("deleted")
    )
    item["data"]["title"] += " (second edition)"
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    summary = sync_json(run, config_of(project))
    assert summary["changed"] is True and summary["items_updated"] == 1
    assert sum(summary[name] for name in PULL_COUNTS) == 1
    written = {Path(p).name for p in summary["files"]}
    assert {"catalog.md", "catalog.csv", "CHANGES.md"} <= written
    for path in summary["files"]:
        assert Path(path).is_absolute() and Path(path).exists()


def test_exit_code_is_3_on_change_and_0_without(project: Path, run) -> None:
    first = run("--config", config_of(project), "sync", "--exit-code")
    assert first.code == 3, first.err
    assert "wrote " in first.err  # the human lines still come without --json
    second = run("-q", "--config", config_of(project), "sync", "--exit-code")
    assert (second.code, second.out, second.err) == (0, "", "")
    (project / "exports" / "catalog.md").unlink()  # a lost export is rewritten: a change
    assert run("-q", "--config", config_of(project), "sync", "--exit-code").code == 3
    assert run("-q", "--config", config_of(project), "sync").code == 0  # without the flag: 0 as before


def test_exit_code_and_json_together(project: Path, run) -> None:
    result = run("--config", config_of(project), "sync", "--json", "--exit-code")
    assert result.code == 3 and json.loads(result.out)["changed"] is True
    result = run("--config", config_of(project), "sync", "--json", "--exit-code")
    assert result.code == 0 and json.loads(result.out)["changed"] is False


def test_errors_keep_their_codes_with_exit_code_and_print_no_json(project: Path, run) -> None:
    (project / "seeds" / "zotero-library.json").write_text("[{", encoding="utf-8")
    result = run("--config", config_of(project), "sync", "--json", "--exit-code")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("zotsync: error: ") and result.err.count("\n") == 1
    (project / "seeds" / "catalog.yaml").write_text("categories: [", encoding="utf-8")
    assert run("--config", config_of(project), "sync", "--exit-code").code == 2


def test_json_through_the_web_source_counts_the_requests_the_server_saw(
    tmp_path: Path, zotero_api, run
) -> None:
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    first = sync_json(run, config)
    assert first["changed"] is True and first["previous_version"] is None
    assert first["library_version"] == server.library.version
    assert first["requests"] == len(server.requests) > 0
    assert first["items_added"] == len(server.library.items)

    server.reset()
    again = sync_json(run, config)
    assert again["changed"] is False and again["files"] == []
    assert again["requests"] == len(server.requests) == 1  # the one If-Modified-Since-Version request

    server.library.edit_item("TRMSAAAA", title="TIRAMISU: A Polyhedral Compiler")
    server.reset()
    edited = sync_json(run, config)
    assert edited["changed"] is True and edited["items_updated"] == 1
    assert edited["library_version"] == server.library.version > again["library_version"]
    assert edited["requests"] == len(server.requests)
    assert all(r.path.startswith(f"/users/{USER_ID}/") for r in server.requests)


def test_sync_full_drops_what_vanished_without_a_trace(tmp_path: Path, zotero_api, run) -> None:
    server = zotero_api(small_library())
    config = write_web_config(tmp_path, server.url)
    assert sync_json(run, config)["items_added"] == len(server.library.items)
    # An item gone from the server with no deletion record: only a full read notices.
    with server.library.write():
        del server.library.items["NFLDAAAA"]
    assert sync_json(run, config)["items_removed"] == 0
    full = sync_json(run, config, "--full")
    assert full["items_removed"] == 1 and full["changed"] is True
