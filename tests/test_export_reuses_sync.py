"""`export --output` after a sync hands back the page file the sync wrote — the same bytes a render
gives — and renders again as soon as anything the page is made of differs: the catalogue, the config,
the store's content, or the file on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import config_of, count_merges

from zotsync.app import page as app

FORMATS = ("md", "csv", "html", "bib", "atom")


@pytest.fixture
def merges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the page merges: a reused page makes none."""
    return count_merges(monkeypatch, app)


def with_formats(project: Path, names: tuple[str, ...]) -> None:
    path = Path(config_of(project))
    text = path.read_text(encoding="utf-8").replace("formats: [md, csv]", f"formats: [{', '.join(names)}]")
    path.write_text(text, encoding="utf-8")


def exported(run, project: Path, fmt: str, out: Path) -> bytes:
    result = run("--config", config_of(project), "-q", "export", "--format", fmt, "--output", str(out))
    assert result.code == 0, result.err
    return out.read_bytes()


def synced(run, project: Path) -> None:
    result = run("--config", config_of(project), "-q", "sync")
    assert result.code == 0, result.err


def test_an_export_after_a_sync_is_the_rendered_page_without_a_merge(
    project, run, merges, tmp_path, monkeypatch
):
    with_formats(project, FORMATS)
    synced(run, project)
    merges.clear()
    reused = {fmt: exported(run, project, fmt, tmp_path / f"reused.{fmt}") for fmt in FORMATS}
    # Only atom's page (it reads the feed) is rendered again.
    assert len(merges) == 1
    monkeypatch.setattr(app, "synced_page", lambda *args: None)
    rendered = {fmt: exported(run, project, fmt, tmp_path / f"rendered.{fmt}") for fmt in FORMATS}
    assert reused == rendered
    # and they are the files the sync wrote
    for fmt in ("md", "csv"):
        assert reused[fmt] == (project / "exports" / f"catalog.{fmt}").read_bytes()


def test_a_catalogue_edited_since_the_sync_is_rendered(project, run, merges, tmp_path):
    synced(run, project)
    catalogue = project / "seeds" / "catalog.yaml"
    text = catalogue.read_text(encoding="utf-8")
    catalogue.write_text(text.replace("why: 梳理", "why: Renamed 梳理", 1), encoding="utf-8")
    merges.clear()
    csv = exported(run, project, "csv", tmp_path / "out.csv").decode("utf-8")
    assert len(merges) == 1 and "Renamed" in csv


def test_a_format_the_sync_does_not_write_is_rendered(project, run, merges, tmp_path):
    synced(run, project)
    merges.clear()
    exported(run, project, "bib", tmp_path / "out.bib")
    assert len(merges) == 1


def test_a_page_file_changed_on_disk_is_not_handed_back(project, run, merges, tmp_path):
    synced(run, project)
    page = project / "exports" / "catalog.md"
    want = page.read_bytes()
    page.write_bytes(want.replace(b"|", b"!", 1))  # the same size: only the bytes tell
    merges.clear()
    assert exported(run, project, "md", tmp_path / "out.md") == want
    assert len(merges) == 1


def test_a_changed_config_is_rendered(project, run, merges, tmp_path):
    synced(run, project)
    before = exported(run, project, "md", tmp_path / "before.md")
    path = Path(config_of(project))
    path.write_text(
        path.read_text(encoding="utf-8").replace("language: zh", "language: en"), encoding="utf-8"
    )
    merges.clear()
    after = exported(run, project, "md", tmp_path / "after.md")
    assert len(merges) == 1 and after != before


def test_an_export_into_the_exports_folder_after_a_sync_writes_nothing(project, run, merges):
    synced(run, project)
    page = project / "exports" / "catalog.md"
    notes = sorted((project / "exports" / "notes").glob("*.md"))
    assert notes  # the bundled library has note pages: the export's other files
    before = {path: path.stat().st_mtime_ns for path in [page, *notes]}
    merges.clear()
    result = run("--config", config_of(project), "export", "--format", "md")
    assert result.code == 0, result.err
    assert merges == [] and f"unchanged {page}" in result.err
    assert {path: path.stat().st_mtime_ns for path in [page, *notes]} == before


def test_an_export_into_the_exports_folder_makes_again_what_is_gone(project, run, merges):
    synced(run, project)
    note = sorted((project / "exports" / "notes").glob("*.md"))[0]
    want = note.read_bytes()
    note.unlink()
    merges.clear()
    result = run("--config", config_of(project), "export", "--format", "md")
    assert result.code == 0, result.err
    assert merges == [1] and note.read_bytes() == want
