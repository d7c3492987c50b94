"""`sync --dry-run` and `pull --dry-run` (docs/commands.md, "Plan first"): the plan of the real run, said
and changed nothing — every file of the project (the store, its -wal and -shm, the exports, the
catalogue, the lock) keeps its bytes — and the real run that follows reports the same counts and the
same files. Through the snapshot source, the local source (a real zotero.sqlite) and the web source on
the fake Zotero server."""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, ZOTERO_API_KEY
from zotero_server import FakeLibrary
from zotero_sqlite import build, load_snapshot

SEED = ROOT / "seeds" / "zotero-library.json"
CATALOG = ROOT / "seeds" / "catalog.yaml"
USER_ID = "1234567"
# Papers of the demo with one note each (so one note page each), and that note.
RETITLED, NOTE_PAPER, NOTE = "AS5BSQEA", "73KSMM92", "XEYIDHM9"
COUNTS = ("items_added", "items_updated", "items_removed", "collections_changed", "collections_removed")


def hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder` (hidden ones too) → the SHA-256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


class Project:
    """A project folder whose config's source the test edits between syncs."""

    def __init__(self, folder: Path, source: str, run: Callable[..., Any]) -> None:
        self.folder, self.run = folder, run
        self.config = folder / "zotsync.yaml"
        (folder / "catalog.yaml").write_bytes(CATALOG.read_bytes())  # in the folder: hashed with the rest
        self.config.write_text(
            textwrap.dedent(source) + "catalog: catalog.yaml\nstore: store.sqlite\nexports: {dir: exports}\n",
            encoding="utf-8",
        )
        self.exports = folder / "exports"

    def json_of(self, command: str, *flags: str, code: int = 0) -> dict[str, Any]:
        result = self.run("--config", str(self.config), command, "--json", *flags)
        assert result.code == code, result.err
        return json.loads(result.out)

    def dry_then_real(self, command: str = "sync") -> tuple[dict[str, Any], dict[str, Any]]:
        """A dry run, which must leave every byte as it was, then the real run."""
        before = hashes(self.folder)
        planned = self.json_of(command, "--dry-run")
        assert hashes(self.folder) == before
        assert planned["dry_run"] is True and planned["valve"] == "ok"
        done = self.json_of(command)
        return planned, done


def assert_same_run(planned: dict[str, Any], done: dict[str, Any]) -> None:
    for name in (*COUNTS, "library_version", "previous_version", "changed"):
        assert planned[name] == done[name], name
    assert sorted(planned["files"]) == sorted(done["files"])
    assert sorted(planned["unchanged"]) == sorted(done["unchanged"])


def check_plans(project: Project, edit: Callable[[], None]) -> None:
    """A first sync planned and done; an edit (a retitled paper, a paper's only note deleted) planned
    and done: the plan names the files the real run writes and the note page it deletes."""
    planned, done = project.dry_then_real()
    assert done["files"]
    assert_same_run(planned, done)
    edit()
    planned, done = project.dry_then_real()
    assert_same_run(planned, done)
    assert done["items_updated"] >= 1 and done["items_removed"] == 1
    page = project.exports / "notes" / f"{NOTE_PAPER}.md"
    assert planned["remove"] == [str(page)] and not page.exists()
    assert str(project.exports / "catalog.md") in planned["files"]
    # Nothing left to do: the plan says so too.
    planned, done = project.dry_then_real()
    assert_same_run(planned, done)
    assert planned["files"] == [] and planned["remove"] == []


def test_snapshot_source(tmp_path: Path, run) -> None:
    snapshot = tmp_path / "library.json"
    snapshot.write_bytes(SEED.read_bytes())
    project = Project(tmp_path, f"source: {{type: snapshot, path: {json.dumps(str(snapshot))}}}\n", run)

    def edit() -> None:
        objects = json.loads(snapshot.read_text(encoding="utf-8"))
        objects = [o for o in objects if o["key"] != NOTE]
        for obj in objects:
            if obj["key"] == RETITLED:
                obj["data"]["title"] = "Retitled in the snapshot"
        snapshot.write_text(json.dumps(objects), encoding="utf-8")

    check_plans(project, edit)


def test_local_source(tmp_path: Path, run) -> None:
    data = tmp_path / "Zotero data"
    data.mkdir()
    zotero = build(data / "zotero.sqlite", load_snapshot(SEED))
    project = Project(tmp_path, f"source: {{type: local, path: {json.dumps(str(data))}}}\n", run)

    def edit() -> None:
        zotero.edit_field(RETITLED, "title", "Retitled locally", at="2024-06-01 10:00:00")
        zotero.erase(NOTE)

    check_plans(project, edit)


@pytest.fixture
def web(tmp_path: Path, zotero_api, run) -> tuple[Project, FakeLibrary]:
    server = zotero_api(FakeLibrary.from_snapshot(SEED, library_id=USER_ID))
    source = f"""\
        source:
          type: web
          library_type: user
          library_id: '{USER_ID}'
          api_key: {ZOTERO_API_KEY}
          base_url: {server.url}
        """
    return Project(tmp_path, source, run), server.library


def test_web_source(web: tuple[Project, FakeLibrary]) -> None:
    project, library = web

    def edit() -> None:
        library.edit_item(RETITLED, title="Retitled on zotero.org")
        library.delete_item(NOTE)

    check_plans(project, edit)


def test_pull_dry_run_then_pull(web: tuple[Project, FakeLibrary]) -> None:
    project, library = web
    planned, done = project.dry_then_real("pull")
    assert planned == done | {"dry_run": True, "valve": "ok"}
    assert done["items_added"] > 0 and done["previous_version"] is None
    library.edit_item(RETITLED, title="Retitled again")
    planned, done = project.dry_then_real("pull")
    assert planned == done | {"dry_run": True, "valve": "ok"}
    assert (done["items_added"], done["items_updated"], done["items_removed"]) == (0, 1, 0)


def test_a_dry_run_the_valve_would_stop_says_so_and_exits_1(web: tuple[Project, FakeLibrary], run) -> None:
    project, library = web
    assert project.json_of("sync")["items_added"] > 0
    for key in [k for k, o in library.items.items() if not o["data"].get("parentItem")]:
        library.delete_item(key)
    before = hashes(project.folder)
    planned = project.json_of("sync", "--dry-run", code=1)
    assert hashes(project.folder) == before
    assert (planned["valve"], planned["files"], planned["remove"]) == ("stop", [], [])
    assert planned["items_removed"] > 0
    # In words: the plan, then the refusal the real run would raise, and the real run's exit code.
    result = run("--config", str(project.config), "sync", "--dry-run")
    assert result.code == 1 and hashes(project.folder) == before
    lines = result.err.splitlines()
    assert lines[0].startswith("dry run: library version ")
    assert lines[-2].startswith("the safety valve would stop the real run: this pull would remove ")
    assert lines[-1] == "dry run: nothing was written"
    assert run("--config", str(project.config), "sync").code == 1  # as the plan said


def test_a_dry_run_before_any_sync_makes_nothing(tmp_path: Path, run) -> None:
    snapshot = tmp_path / "library.json"
    snapshot.write_bytes(SEED.read_bytes())
    project = Project(tmp_path, f"source: {{type: snapshot, path: {json.dumps(str(snapshot))}}}\n", run)
    before = hashes(tmp_path)
    result = run("--config", str(project.config), "sync", "--dry-run")
    assert result.code == 0, result.err
    assert hashes(tmp_path) == before and not project.exports.exists()
    assert f"would write {project.exports / 'catalog.md'}" in result.err.splitlines()
    # --exit-code: the real run's code, 3 when an export would change; 0 once nothing would.
    assert run("--config", str(project.config), "sync", "--dry-run", "--exit-code").code == 3
    assert run("--config", str(project.config), "sync", "--exit-code").code == 3
    assert run("--config", str(project.config), "sync", "--dry-run", "--exit-code").code == 0
    assert hashes(tmp_path) != before


def test_a_sync_that_only_remakes_note_pages(tmp_path: Path, run) -> None:
    """Only a note changed: the real run remakes that note page alone (no page rendered); the plan
    says so too."""
    snapshot = tmp_path / "library.json"
    snapshot.write_bytes(SEED.read_bytes())
    project = Project(tmp_path, f"source: {{type: snapshot, path: {json.dumps(str(snapshot))}}}\n", run)
    project.dry_then_real()
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    note = next(o for o in objects if o["key"] == NOTE)
    note["data"]["note"] += "<p>One more thought.</p>"
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    planned, done = project.dry_then_real()
    assert_same_run(planned, done)
    assert done["files"] == [str(project.exports / "notes" / f"{NOTE_PAPER}.md")]
    assert "One more thought." in (project.exports / "notes" / f"{NOTE_PAPER}.md").read_text(encoding="utf-8")
