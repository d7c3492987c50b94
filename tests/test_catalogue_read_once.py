"""A sync reads the catalogue file once: the bytes it digests are the bytes its page is made of.

Before, the file was read for its digest and again for the page (after the pull, when the
catalogue had not changed since the last export): a catalogue saved during a long pull was rendered
under the old file's digest, and once the curator went back to the old text the next sync skipped
and kept a page of a catalogue that no longer existed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import config_of

from zotsync.app import sync as app


def sync(run, project: Path) -> None:
    result = run("-q", "--config", config_of(project), "sync")
    assert result.code == 0, result.err


def page_of(run, project: Path) -> str:
    result = run("--config", config_of(project), "export", "--format", "md", "--output", "-")
    assert result.code == 0, result.err
    return result.out


def test_a_catalogue_saved_during_the_pull_never_leaves_a_stale_page(
    project: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync(run, project)
    catalogue = project / "seeds" / "catalog.yaml"
    original = catalogue.read_text(encoding="utf-8")
    first_why = next(line for line in original.splitlines() if "why:" in line)
    edited = original.replace(first_why, first_why.split("why:")[0] + "why: Saved mid-pull")
    snapshot = project / "seeds" / "zotero-library.json"  # the library changed: the sync must render
    title = "MLIR: Scaling Compiler Infrastructure for Domain Specific Computation"
    text = snapshot.read_text(encoding="utf-8")
    assert text.count(title) == 1
    snapshot.write_text(text.replace(title, title + " (revised)"), encoding="utf-8")
    pull = app.pull

    def saving_the_catalogue_meanwhile(*args, **kwargs):
        catalogue.write_text(edited, encoding="utf-8")  # the curator saves while the library is read
        return pull(*args, **kwargs)

    monkeypatch.setattr(app, "pull", saving_the_catalogue_meanwhile)
    sync(run, project)
    monkeypatch.setattr(app, "pull", pull)
    catalogue.write_text(original, encoding="utf-8")  # … and then thinks better of it
    sync(run, project)
    page = (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert "Saved mid-pull" not in page
    assert page == page_of(run, project)  # what a full render of the catalogue on disk gives


def test_a_rendering_sync_opens_the_catalogue_once(
    project: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = (project / "seeds" / "catalog.yaml").resolve()
    opened: list[Path] = []
    open_file = os.open  # what zotsync.inputs reads every input with

    def counting(path, *args, **kwargs):
        if isinstance(path, str | Path) and Path(path).resolve() == catalogue:
            opened.append(Path(path))
        return open_file(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    sync(run, project)  # the first sync: digest, parse, render
    assert len(opened) == 1
    catalogue.write_text(catalogue.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    opened.clear()
    sync(run, project)  # an edited catalogue renders again, from one read
    assert len(opened) == 1
