"""What a sync writes into exports.dir: the page files together, every file recorded, a file zotsync did
not write never touched, and a file it wrote and no longer writes removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from factories import config_of

from zotsync import formats
from zotsync.export.base import ExportInput
from zotsync.formats import Exporter, Output


def sync(run, project: Path) -> str:
    result = run("--config", config_of(project), "sync")
    assert result.code == 0, result.err
    return result.err


def set_formats(project: Path, names: str) -> None:
    config = project / "config" / "zotsync.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("formats: [md, csv]", f"formats: [{names}]"), encoding="utf-8")


def retitle(project: Path) -> None:
    catalog = project / "seeds" / "catalog.yaml"
    text = catalog.read_text(encoding="utf-8")
    catalog.write_text(text.replace("title: GPU 编译与性能 · 论文", "title: Renamed"), encoding="utf-8")


@pytest.fixture
def extra_format() -> Iterator[list[str]]:
    """A format (`shelf`) whose page is shelf.md and which also writes one file per category under
    shelf/, as note pages will: the files it is to write are the list the fixture yields."""
    written: list[str] = ["shelf/a.md", "shelf/b.md"]

    def render(given: ExportInput) -> Iterator[Output]:
        yield Output(PurePosixPath("shelf.md"), f"{len(given.page.rows)} rows\n")
        for name in written:
            yield Output(PurePosixPath(name), f"{name}\n")

    formats.register(Exporter("shelf", "a test format", "shelf.md", render))
    yield written
    formats._extra.pop("shelf")


def test_a_format_dropped_from_the_config_takes_its_file_with_it(project: Path, run) -> None:
    sync(run, project)
    csv = project / "exports" / "catalog.csv"
    assert csv.is_file()
    set_formats(project, "md")
    sync(run, project)
    assert not csv.exists()
    assert (project / "exports" / "catalog.md").is_file()


def test_a_file_changed_since_zotsync_wrote_it_stays_when_it_is_no_longer_written(project: Path, run) -> None:
    sync(run, project)
    csv = project / "exports" / "catalog.csv"
    csv.write_text("my own notes\n", encoding="utf-8")
    set_formats(project, "md")
    err = sync(run, project)
    assert csv.read_text(encoding="utf-8") == "my own notes\n"
    assert f"{csv} changed since zotsync wrote it" in err


def test_a_file_zotsync_did_not_write_is_never_replaced(project: Path, run, extra_format) -> None:
    mine = project / "exports" / "shelf" / "a.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("the curator's own file\n", encoding="utf-8")
    set_formats(project, "md, csv, shelf")
    err = sync(run, project)
    assert mine.read_text(encoding="utf-8") == "the curator's own file\n"
    assert f"{mine} was not written by zotsync: left as it is" in err
    assert (project / "exports" / "shelf" / "b.md").read_text(encoding="utf-8") == "shelf/b.md\n"
    # Gone from the format's files: b.md, which zotsync wrote, goes; a.md, the curator's, stays.
    extra_format.remove("shelf/b.md")
    retitle(project)
    sync(run, project)
    assert not (project / "exports" / "shelf" / "b.md").exists()
    assert mine.read_text(encoding="utf-8") == "the curator's own file\n"


def test_a_file_holding_what_zotsync_would_write_becomes_its_own(project: Path, run, extra_format) -> None:
    """A file already holding the bytes (a copy restored from a backup, an export run earlier) is taken
    into the record, so that it is updated and removed like the others."""
    copy = project / "exports" / "shelf" / "a.md"
    copy.parent.mkdir(parents=True)
    copy.write_text("shelf/a.md\n", encoding="utf-8")
    set_formats(project, "md, csv, shelf")
    assert "not written by zotsync" not in sync(run, project)
    extra_format.remove("shelf/a.md")
    retitle(project)
    sync(run, project)
    assert not copy.exists()


def test_the_page_files_change_together_or_not_at_all(project: Path, run) -> None:
    sync(run, project)
    md, csv = project / "exports" / "catalog.md", project / "exports" / "catalog.csv"
    before = md.read_bytes()
    retitle(project)
    csv.unlink()
    csv.mkdir()  # the CSV cannot be written: neither is the Markdown page, although it comes first
    result = run("--config", config_of(project), "sync")
    assert result.code == 1
    assert "it is a folder" in result.err
    assert md.read_bytes() == before
    assert not list((project / "exports").glob(".*.tmp"))
    csv.rmdir()
    sync(run, project)
    assert md.read_text(encoding="utf-8").startswith("# Renamed")


def test_a_recorded_file_deleted_by_hand_is_written_again_by_the_next_sync(
    project: Path, run, extra_format
) -> None:
    set_formats(project, "md, csv, shelf")
    sync(run, project)
    written = project / "exports" / "shelf" / "b.md"
    written.unlink()
    sync(run, project)
    assert written.read_text(encoding="utf-8") == "shelf/b.md\n"
