"""What `sync` says on stderr: one line per page file, and a folder of many written files (the first
sync's note pages: 612 lines for one library) as one line with their count — each file by name with -v,
and always in a --log-file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from factories import api_child, api_item, write_json

PAPERS = 25  # more than the 20 files of one folder that are named one by one
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # Zotero keys: digits 2-9 and capitals but O


def project(folder: Path) -> Path:
    objects = []
    for n in range(PAPERS):
        key = f"PAPRAA{LETTERS[n // 10]}{LETTERS[n % 10]}"
        objects.append(api_item(key, f"Paper {n}", date="2024"))
        objects.append(api_child(f"NQTE{key[4:]}", key, "note", note=f"<p>Note {n}</p>"))
    write_json(folder / "library.json", objects)
    (folder / "catalog.yaml").write_text("title: Notes\ncategories: []\n", encoding="utf-8")
    config = folder / "zotsync.yaml"
    config.write_text(
        "source: {type: snapshot, path: library.json}\ncatalog: catalog.yaml\nstore: store.sqlite\n"
        "exports: {dir: out, notes: true}\n",
        encoding="utf-8",
    )
    return config


def test_many_note_pages_are_one_line_and_named_with_verbose(tmp_path: Path, run) -> None:
    config = project(tmp_path)
    notes = tmp_path / "out" / "notes"
    log = tmp_path / "sync.log"
    result = run("--config", str(config), "sync", "--log-file", str(log))
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    assert f"wrote {PAPERS} files in {notes}{os.sep}" in lines
    assert not any(line.startswith(f"wrote {notes}") for line in lines)
    assert f"wrote {tmp_path / 'out' / 'catalog.md'}" in lines
    assert len(lines) < 10
    assert log.read_text(encoding="utf-8").count(f"wrote {notes}") == PAPERS  # the log names each
    # -v names each file again (an edit to every note, so that each page is written anew).
    objects = json.loads((tmp_path / "library.json").read_text(encoding="utf-8"))
    for obj in objects:
        if obj["data"]["itemType"] == "note":
            obj["data"]["note"] += "<p>edited</p>"
    (tmp_path / "library.json").write_text(json.dumps(objects), encoding="utf-8")
    verbose = run("-v", "--config", str(config), "sync")
    assert verbose.code == 0, verbose.err
    named = [line for line in verbose.err.splitlines() if line.startswith(f"wrote {notes}")]
    assert len(named) == PAPERS


def test_a_file_a_sync_removes_is_said(tmp_path: Path, run) -> None:
    """A format taken out of exports.formats loses its file, and note pages go with `notes: false`: the
    sync says so, as it says what it wrote (before, the file went without a word)."""
    config = project(tmp_path)
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("notes: true}", "notes: true, formats: [md, csv, html]}"), encoding="utf-8"
    )
    assert run("--config", str(config), "sync").code == 0
    config.write_text(text.replace("notes: true}", "notes: false, formats: [md, csv]}"), encoding="utf-8")
    result = run("--config", str(config), "sync")
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    assert f"removed {tmp_path / 'out' / 'catalog.html'}" in lines
    assert f"removed {PAPERS} files in {tmp_path / 'out' / 'notes'}{os.sep}" in lines
    assert not (tmp_path / "out" / "catalog.html").exists()
