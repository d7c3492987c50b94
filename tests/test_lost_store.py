"""A published list survives a lost store (the Pages workflow keeps the store only in a cache, which is
empty on the first run and whenever GitHub evicts it): the exports carry a manifest
(`.zotsync-manifest.json`: the files zotsync wrote with their digests, the page's last rows, the feed),
and a fresh store goes on from it — the feed keeps its entries, a note page edited in Zotero follows the
edit — while a user's file is still never touched. And the first run of the workflow, started by hand,
passes `mkdocs build --strict` with CHANGES.md linked from the home page.

The generated workflow's own shell steps (`zotsync schedule github --pages`) run as a runner runs them
(`bash -e`), in clones of a bare repository standing in for GitHub."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import PUBLISHED_SETTINGS, SITE_CONFIG, realistic_library, write_realistic_project

from zotsync.schedule import github

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)

WORKFLOW = Path(".github") / "workflows" / "zotsync.yml"
EXPORTS = Path("docs") / "reading-list"
HOME_PAGE = (
    "# A real reading list\n\n[The list](reading-list/catalog.md) · [by tag](reading-list/tags.md) · "
    "[what changed](reading-list/CHANGES.md)\n"
)


@pytest.fixture(autouse=True)
def known_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The running zotsync as if installed from a public repository (the workflow names it)."""
    origin = github.Origin(
        "https://example.org/someone/zotsync.git", "0123456789abcdef0123456789abcdef01234567"
    )
    monkeypatch.setattr(github, "installed_from", lambda: origin)


def git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=me", "-c", "user.email=me@example.org", *args]
    return subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True, timeout=60).stdout


class Runner:
    """One run of the workflow's sync job on a fresh runner: a clone of the remote in the runner's one
    workspace, and no store unless the cache gives one (`cached`: the store the last run left)."""

    def __init__(
        self, steps: dict[str, tuple[str, dict[str, str]]], remote: Path, folder: Path, cached: bytes | None
    ) -> None:
        self.steps, self.folder = steps, folder
        if folder.parent.exists():
            shutil.rmtree(folder.parent)
        folder.parent.mkdir()
        git(folder.parent, "clone", "-q", str(remote), folder.name)
        if cached is not None:
            (folder / "store.sqlite").write_bytes(cached)
        self.outputs = folder.parent / "github-output"
        self.temp = folder.parent / "runner-temp"
        self.temp.mkdir()
        self.stderr = ""

    def store(self) -> bytes:
        """The store as the cache keeps it after the run."""
        return (self.folder / "store.sqlite").read_bytes()

    def run(self, name: str) -> int:
        script, named = self.steps[name]
        # What the workflow's env: names, as GitHub passes it (an expression such as a secret: empty here)
        given = {key: "" if "${{" in str(value) else str(value) for key, value in named.items()}
        env = {
            **os.environ,
            **given,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # zotsync, mkdocs
            "GITHUB_OUTPUT": str(self.outputs),
            "RUNNER_TEMP": str(self.temp),
            "ZOTERO_API_KEY": "",
            "HOME": str(self.folder.parent),
            "NO_MKDOCS_2_WARNING": "1",
        }
        if name == "Sync":
            self.outputs.write_text("", encoding="utf-8")
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.stderr += done.stderr
        return done.returncode

    @property
    def changed(self) -> bool:
        return "changed=true" in self.outputs.read_text(encoding="utf-8").splitlines()

    def sync_and_commit(self) -> None:
        assert self.run("Sync") == 0, self.stderr
        assert self.changed, self.stderr
        assert self.run("Commit the changed exports") == 0, self.stderr

    def feed(self) -> str:
        return (self.folder / EXPORTS / "feed.xml").read_text(encoding="utf-8")


def snapshot_edit(folder: Path, change) -> None:
    """Change the library (the snapshot stands for Zotero) on this runner."""
    path = folder / "library.json"
    objects = json.loads(path.read_text(encoding="utf-8"))
    change(objects)
    path.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")


def test_a_lost_store_keeps_the_feed_and_follows_note_edits(run, monkeypatch, tmp_path: Path) -> None:
    library = realistic_library(papers=120)
    origin = tmp_path / "origin"
    settings = PUBLISHED_SETTINGS + "  formats: [md, csv, atom]\n"
    config = write_realistic_project(origin, library, exports=str(EXPORTS), settings=settings)
    (origin / "mkdocs.yml").write_text(SITE_CONFIG, encoding="utf-8")
    (origin / "docs").mkdir(exist_ok=True)
    (origin / "docs" / "index.md").write_text(HOME_PAGE, encoding="utf-8")
    (origin / ".gitignore").write_text("store.sqlite*\n.zotsync/\nsite/\n", encoding="utf-8")
    monkeypatch.chdir(origin)
    written = run("--config", str(config), "schedule", "github", "--pages")
    assert written.code == 0, written.err
    workflow: dict[str, Any] = yaml.safe_load((origin / WORKFLOW).read_text(encoding="utf-8"))
    job = workflow["jobs"]["sync"]
    steps = {
        s["name"]: (s["run"], {**job.get("env", {}), **s.get("env", {})}) for s in job["steps"] if "run" in s
    }
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", ".")
    git(origin, "commit", "-qm", "reading list")
    git(origin, "remote", "add", "origin", str(remote))
    git(origin, "push", "-q", "-u", "origin", "main")

    # The first run, started by hand: it syncs, commits, and builds the site with CHANGES.md linked.
    workspace = tmp_path / "runner" / "repo"  # a runner's checkout is always at the same path
    first = Runner(steps, remote, workspace, cached=None)
    first.sync_and_commit()
    assert first.run("Build the site") == 0, first.stderr
    assert (first.temp / "site" / "reading-list" / "CHANGES" / "index.html").is_file()
    exports = first.folder / EXPORTS
    manifest = json.loads((exports / ".zotsync-manifest.json").read_text(encoding="utf-8"))
    assert "catalog.md" in manifest["files"] and manifest["rows"]
    note_pages = sorted((exports / "notes").glob("*.md"))
    assert note_pages, "the realistic library's notes make note pages"
    noted = note_pages[0].stem
    with (exports / "catalog.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    # A paper on the page through a collection (the catalogue says nothing of its status), unread.
    unread = next(
        r["zotero_key"]
        for r in rows
        if r["status"] == "unread" and r["zotero_key"] and r["zotero_key"] not in library.curated_keys
    )

    # The second run (the cache kept the store): a paper read in Zotero is news in the feed.
    note_before = (exports / "notes" / f"{noted}.md").read_text(encoding="utf-8")
    second = Runner(steps, remote, workspace, cached=first.store())

    def read(objects: list[dict[str, Any]]) -> None:
        paper = next(o for o in objects if o["key"] == unread)
        tags = [t for t in paper["data"]["tags"] if t["tag"] != "unread"]
        paper["data"]["tags"] = [*tags, {"tag": "read"}]

    snapshot_edit(second.folder, read)
    second.sync_and_commit()
    assert second.feed().count("<entry>") == 1
    feed_before = second.feed()

    # The third run: the cache was evicted (no store), and the paper's note was edited in Zotero.
    third = Runner(steps, remote, workspace, cached=None)
    assert not (third.folder / "store.sqlite").exists()
    snapshot_edit(third.folder, read)  # the library as Zotero still has it

    def edit_note(objects: list[dict[str, Any]]) -> None:
        note = next(
            o for o in objects if o["data"].get("parentItem") == noted and o["data"]["itemType"] == "note"
        )
        note["data"]["note"] += "<p>Edited in Zotero after the cache was evicted.</p>"

    snapshot_edit(third.folder, edit_note)
    mine = third.folder / EXPORTS / "notes" / "my-own-notes.md"  # a user's file beside zotsync's
    mine.write_text("# Mine\n", encoding="utf-8")
    third.sync_and_commit()
    assert "not written by zotsync" not in third.stderr and "changed since" not in third.stderr
    page = (third.folder / EXPORTS / "notes" / f"{noted}.md").read_text(encoding="utf-8")
    assert "Edited in Zotero after the cache was evicted." in page and page != note_before
    assert third.feed() == feed_before  # its entry kept, its <updated> with it
    assert "1970-01-01" not in third.feed()
    assert mine.read_text(encoding="utf-8") == "# Mine\n"
    pushed = git(remote, "show", f"main:{(EXPORTS / 'notes' / f'{noted}.md').as_posix()}")
    assert "Edited in Zotero after the cache was evicted." in pushed
    changes = (third.folder / EXPORTS / "CHANGES.md").read_text(encoding="utf-8")
    sections = [line for line in changes.splitlines() if line.startswith("## ")]
    assert len(sections) == 1 and "### Newly read" in changes  # nothing reported twice


def test_a_file_of_zotsyncs_edited_since_is_left_as_it_is(run, tmp_path: Path) -> None:
    """The manifest makes a file zotsync's only while its bytes are the ones it lists."""
    config = write_realistic_project(tmp_path, realistic_library(papers=60), settings="  formats: [md]\n")
    assert run("-q", "--config", str(config), "sync").code == 0
    notes = sorted((tmp_path / "exports" / "notes").glob("*.md"))
    edited, kept = notes[0], notes[1]
    edited.write_text("# My own words now\n", encoding="utf-8")
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"store.sqlite{suffix}").unlink(missing_ok=True)
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    assert f"{edited} was not written by zotsync: left as it is" in result.err
    assert edited.read_text(encoding="utf-8") == "# My own words now\n"
    assert f"{kept} was not written by zotsync" not in result.err


def test_a_note_page_that_export_rewrote_is_still_zotsyncs_after_a_lost_store(run, tmp_path: Path) -> None:
    """`export --format md` into the exports folder rewrites note pages: the manifest follows it."""
    config = write_realistic_project(tmp_path, realistic_library(papers=60), settings="  formats: [md]\n")
    assert run("-q", "--config", str(config), "sync").code == 0
    page = sorted((tmp_path / "exports" / "notes").glob("*.md"))[0]

    def edit_note(words: str) -> None:
        def change(objects: list[dict[str, Any]]) -> None:
            note = next(
                o
                for o in objects
                if o["data"].get("parentItem") == page.stem and o["data"]["itemType"] == "note"
            )
            note["data"]["note"] += f"<p>{words}</p>"

        snapshot_edit(tmp_path, change)

    edit_note("First edit, exported by hand.")
    assert run("-q", "--config", str(config), "pull").code == 0
    assert run("-q", "--config", str(config), "export", "--format", "md").code == 0
    assert "First edit, exported by hand." in page.read_text(encoding="utf-8")
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"store.sqlite{suffix}").unlink(missing_ok=True)
    edit_note("Second edit, after the store was lost.")
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    assert "not written by zotsync" not in result.err
    assert "Second edit, after the store was lost." in page.read_text(encoding="utf-8")
