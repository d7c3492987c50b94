"""`pin` and `adopt` read the catalogue, reconcile the whole library (seconds on a large one), then write
their edit: whatever the curator saves in between is kept, and the edit refused (compare and swap)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from zotsync.app import edit as app
from zotsync.errors import ExportError
from zotsync.outputs import read_version, write_atomically

UNCURATED = "57V8YMZM"  # in the demo library, claimed by no catalogue entry
SAVED = "# a note the curator saved while zotsync was reconciling\n"


def in_place(path: Path) -> None:
    """An editor that writes the file itself (same file, new bytes)."""
    with path.open("ab") as stream:
        stream.write(SAVED.encode())


def by_rename(path: Path) -> None:
    """An editor that saves a new file and renames it over the old one (vim, most IDEs)."""
    new = path.with_name(path.name + ".saving")
    new.write_bytes(path.read_bytes() + SAVED.encode())
    os.replace(new, path)


EDITS = {
    "pin": ("pin", "The tensor algebra compiler", "ACQ3YSAF"),
    "adopt": ("adopt", UNCURATED, "--category", "Compiler"),
}


@pytest.mark.parametrize("save", [in_place, by_rename])
@pytest.mark.parametrize("edit", EDITS)
def test_a_save_during_pin_or_adopt_is_kept_and_the_edit_refused(
    project: Path, run, monkeypatch: pytest.MonkeyPatch, edit: str, save: Callable[[Path], None]
) -> None:
    config = str(project / "config" / "zotsync.yaml")
    catalog = project / "seeds" / "catalog.yaml"
    assert run("-q", "--config", config, "pull").code == 0
    real_merge = app.merge

    def merge_while_the_curator_saves(*args, **kwargs):  # the seconds of reconciling a large library
        save(catalog)
        return real_merge(*args, **kwargs)

    monkeypatch.setattr(app, "merge", merge_while_the_curator_saves)
    result = run("--config", config, *EDITS[edit])
    assert catalog.read_text(encoding="utf-8").endswith(SAVED)  # the curator's save is there
    assert result.code == 1
    assert result.err.splitlines() == [
        f"zotsync: error: {catalog} changed while zotsync was editing it (saved, replaced or removed by "
        "another program); nothing written, so that change is kept — run the command again"
    ]
    assert [p.name for p in catalog.parent.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.setattr(app, "merge", real_merge)
    again = run("--config", config, *EDITS[edit])  # run again, it edits the saved text
    assert again.code == 0, again.err
    text = catalog.read_text(encoding="utf-8")
    assert SAVED in text and ("ACQ3YSAF" in text if edit == "pin" else UNCURATED in text)


def test_write_atomically_replaces_only_the_version_the_edit_was_made_from(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("old\n")
    seen = read_version(path)
    assert write_atomically(path, "edited\n", edit_of=seen)  # unchanged since: written
    assert path.read_text() == "edited\n"

    seen = read_version(path)
    path.write_text("saved meanwhile\n")  # the same file, other bytes
    with pytest.raises(ExportError, match="changed while zotsync was editing it"):
        write_atomically(path, "edited again\n", edit_of=seen)
    assert path.read_text() == "saved meanwhile\n"

    seen = read_version(path)
    by_rename(path)  # another file in its place
    replaced = path.read_bytes()
    with pytest.raises(ExportError, match="changed while zotsync was editing it"):
        write_atomically(path, "edited again\n", edit_of=seen)
    assert path.read_bytes() == replaced

    seen = read_version(path)
    copy = path.with_name("copy")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # the same bytes, but another file: not the version read either
    with pytest.raises(ExportError, match="changed while zotsync was editing it"):
        write_atomically(path, "edited again\n", edit_of=seen)

    seen = read_version(path)
    path.unlink()  # removed meanwhile: not written back
    with pytest.raises(ExportError, match="changed while zotsync was editing it"):
        write_atomically(path, "edited again\n", edit_of=seen)
    assert not path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file left behind
