"""A sync that can change nothing renders nothing — and anything that could change the page re-renders.

The fast path is only safe if every input of the page invalidates it: the catalogue, the config, the
user's venue table, zotsync's code, the store's content (whoever wrote it), and the export files
themselves. Each test below changes one of them after a complete sync and checks that the next sync
renders again and writes what a full run writes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import SEEDS
from factories import config_of, count_merges

from zotsync import fingerprints
from zotsync.app import changes as changes_module
from zotsync.app import page as app
from zotsync.export import record
from zotsync.sources.snapshot import SnapshotSource
from zotsync.store import Store


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the page merges (reconcile + render happen only after one)."""
    return count_merges(monkeypatch, app)


@pytest.fixture
def snapshot_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    changes = SnapshotSource.changes

    def counting(self, *args):
        calls.append(1)
        return changes(self, *args)

    monkeypatch.setattr(SnapshotSource, "changes", counting)
    return calls


def sync(run, project: Path, *more: str) -> str:
    result = run("--config", config_of(project), *more, "sync")
    assert result.code == 0, result.err
    return result.err


def export(run, project: Path, fmt: str) -> str:
    result = run("--config", config_of(project), "export", "--format", fmt, "--output", "-")
    assert result.code == 0, result.err
    return result.out


def exports(project: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((project / "exports").glob("catalog.*"))}


def test_an_unchanged_sync_neither_parses_the_snapshot_nor_renders(project, run, renders, snapshot_reads):
    sync(run, project)
    md = project / "exports" / "catalog.md"
    before = (exports(project), md.stat().st_mtime_ns)
    assert (len(renders), len(snapshot_reads)) == (1, 1)
    err = sync(run, project)
    assert (len(renders), len(snapshot_reads)) == (1, 1)
    assert "up to date" in err and "unchanged" in err and "wrote" not in err
    assert (exports(project), md.stat().st_mtime_ns) == before


def test_the_same_config_named_another_way_renders_nothing(project, run, renders, monkeypatch):
    """Cron names the config by its absolute path, a user by hand by a relative one: the same file, the
    same settings, so the second sync reuses the page the first one wrote."""
    config = Path(config_of(project)).resolve()
    sync(run, project)
    md = project / "exports" / "catalog.md"
    before = (exports(project), md.stat().st_mtime_ns)
    monkeypatch.chdir(config.parent)
    result = run("--config", config.name, "sync")
    assert result.code == 0, result.err
    assert len(renders) == 1
    assert "unchanged" in result.err and "wrote" not in result.err
    assert (exports(project), md.stat().st_mtime_ns) == before


def test_an_edited_catalogue_renders_again(project, run, renders):
    sync(run, project)
    catalogue = project / "seeds" / "catalog.yaml"
    text = catalogue.read_text(encoding="utf-8")
    first_why = next(line for line in text.splitlines() if "why:" in line)
    catalogue.write_text(
        text.replace(first_why, first_why.split("why:")[0] + "why: Freshly curated"), "utf-8"
    )
    sync(run, project)
    assert len(renders) == 2
    assert "Freshly curated" in (project / "exports" / "catalog.md").read_text(encoding="utf-8")


def test_a_broken_catalogue_still_fails_before_the_pull(project, run, renders):
    sync(run, project)
    (project / "seeds" / "catalog.yaml").write_text("categories: [\n", encoding="utf-8")
    result = run("--config", config_of(project), "sync")
    assert result.code == 2 and "malformed YAML" in result.err


def test_a_changed_config_renders_again(project, run, renders):
    sync(run, project)
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("archive/zotero.md#{key}", "https://archive.example.org/{key}"), "utf-8")
    sync(run, project)
    assert len(renders) == 2
    assert "https://archive.example.org/" in (project / "exports" / "catalog.md").read_text(encoding="utf-8")


def test_a_changed_venue_table_renders_again(project, run, renders):
    config = project / "config" / "zotsync.yaml"
    venues = project / "config" / "venues.yaml"
    venues.write_text("XYZ: [a phrase no venue has]\n", encoding="utf-8")
    text = config.read_text(encoding="utf-8").replace("abbreviate_venues: false", "abbreviate_venues: true")
    config.write_text(text + "  venues: venues.yaml\n", encoding="utf-8")
    sync(run, project)
    csv = (project / "exports" / "catalog.csv").read_text(encoding="utf-8")
    # the shipped table abbreviates some proceedings; map one of those to a new name
    abbreviation = "PLDI" if "PLDI'" in csv else "OSDI"
    assert f"{abbreviation}'" in csv
    shipped = (SEEDS.parent / "zotsync" / "data" / "venues.yaml").read_text(encoding="utf-8")
    phrases = next(line for line in shipped.splitlines() if line.startswith(f"{abbreviation}:"))
    venues.write_text(phrases.replace(f"{abbreviation}:", "RENAMED:") + "\n", encoding="utf-8")
    sync(run, project)
    assert len(renders) == 2
    assert "RENAMED'" in (project / "exports" / "catalog.csv").read_text(encoding="utf-8")


def test_new_code_renders_again(project, run, renders, monkeypatch):
    sync(run, project)
    monkeypatch.setattr(fingerprints, "code_digest", lambda: "another zotsync")
    sync(run, project)
    assert len(renders) == 2


def test_the_code_digest_covers_the_version_and_every_source_file():
    digest = fingerprints.code_digest()
    assert len(digest) == 64 and digest == fingerprints.code_digest()
    fingerprints.code_digest.cache_clear()
    try:
        original = fingerprints.__version__
        fingerprints.__version__ = original + ".post1"
        assert fingerprints.code_digest() != digest
    finally:
        fingerprints.__version__ = original
        fingerprints.code_digest.cache_clear()


@pytest.mark.parametrize("damage", ["edit", "delete", "same size"])
def test_an_export_file_changed_by_hand_is_written_again(project, run, renders, damage):
    sync(run, project)
    written = exports(project)
    csv = project / "exports" / "catalog.csv"
    if damage == "edit":
        csv.write_text("a hand edit\n", encoding="utf-8")
    elif damage == "delete":
        csv.unlink()
    else:
        data = csv.read_bytes()
        csv.write_bytes(data[:-2] + b"X\n")
    err = sync(run, project)
    assert len(renders) == 2
    assert f"wrote {csv}" in err
    assert exports(project) == written


def test_a_store_changed_by_a_plain_pull_renders_at_the_next_sync(project, run, renders):
    sync(run, project)
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    item = next(o for o in objects if o["data"].get("title") and "parentItem" not in o["data"])
    item["data"]["title"] = "Retitled in Zotero"  # no version bump: a hand-edited snapshot
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    assert run("-q", "--config", config_of(project), "pull").code == 0
    err = sync(run, project)  # its own pull finds nothing new; the store did change since the export
    assert "up to date" in err
    assert len(renders) == 2
    assert "Retitled in Zotero" in (project / "exports" / "catalog.md").read_text(encoding="utf-8")


def test_an_edited_snapshot_is_read_and_rendered(project, run, renders, snapshot_reads):
    sync(run, project)
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    item = next(o for o in objects if o["data"].get("title") and "parentItem" not in o["data"])
    item["data"]["title"] = "Edited in the file"
    snapshot.write_text(json.dumps(objects, ensure_ascii=False), encoding="utf-8")
    sync(run, project)
    assert (len(renders), len(snapshot_reads)) == (2, 2)
    assert "Edited in the file" in (project / "exports" / "catalog.md").read_text(encoding="utf-8")


def test_the_skipped_sync_leaves_what_a_full_sync_writes(project, run):
    sync(run, project)
    sync(run, project)
    assert exports(project) == {
        "catalog.csv": export(run, project, "csv").encode("utf-8"),
        "catalog.md": export(run, project, "md").encode("utf-8"),
    }


def test_a_sync_killed_after_writing_the_exports_renders_again(project, run, renders, monkeypatch):
    """The record of a complete sync is written last; a run that stops before it leaves none."""
    sync(run, project)
    catalogue = project / "seeds" / "catalog.yaml"
    catalogue.write_text(catalogue.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(changes_module, "record_changes", killed)
    assert run("--config", config_of(project), "sync").code == 130
    monkeypatch.undo()
    store_path = project / ".zotsync" / "zotsync.sqlite"
    with Store(store_path) as store:
        assert store.sync_state.export_record is None
    calls = []
    merge = app.merge
    monkeypatch.setattr(app, "merge", lambda *a, **k: calls.append(1) or merge(*a, **k))
    sync(run, project)
    assert calls == [1]


def test_the_generation_counts_content_changes_only(tmp_path):
    from factories import api_item, write_json

    from zotsync.app.pull import pull

    path = write_json(tmp_path / "lib.json", [api_item("ITEM2222", "One", version=1)])
    with Store(tmp_path / "s.sqlite") as store:
        start = store.generation
        pull(SnapshotSource(path), store)
        after_first = store.generation
        assert after_first > start
        pull(SnapshotSource(path), store, full=True)  # the same library again: nothing rewritten
        store.touch()
        assert store.generation == after_first
        write_json(path, [api_item("ITEM2222", "One", version=1, tags=[{"tag": "new"}])])
        pull(SnapshotSource(path), store)
        assert store.generation > after_first


def test_config_digest_leaves_the_api_key_out(tmp_path):
    from zotsync.config import load_config

    body = textwrap.dedent(
        """\
        source: {type: web, library_type: user, library_id: "1", api_key: %s}
        catalog: catalog.yaml
        """
    )
    path = tmp_path / "zotsync.yaml"
    path.write_text(body % "Aaaaaaaaaaaaaaaaaaaaaaa1", encoding="utf-8")
    digest = fingerprints.config_digest(load_config(path))
    path.write_text(body % "Bbbbbbbbbbbbbbbbbbbbbbb2", encoding="utf-8")
    assert digest == fingerprints.config_digest(load_config(path))
    path.write_text((body % "Bbbbbbbbbbbbbbbbbbbbbbb2").replace('"1"', '"2"'), encoding="utf-8")
    assert digest != fingerprints.config_digest(load_config(path))
    assert "Aaaaaaaa" not in record.ExportRecord({"config": digest}, 0).dumps()


def test_changed_labels_render_again(project, run, renders):
    sync(run, project)
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8").replace(
        "exports:\n", "exports:\n  labels: {no_venue: Nowhere yet}\n"
    )
    config.write_text(text, encoding="utf-8")
    sync(run, project)
    assert len(renders) == 2
    assert "Nowhere yet" in (project / "exports" / "catalog.md").read_text(encoding="utf-8")
