"""`status` after a sync reads the report the sync kept — the report `status` makes itself, with the
library's sync state as it is now — and makes it anew as soon as anything it is made of differs: the
catalogue, the config, the store's content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import config_of, count_merges

from zotsync.app import status as app

INBOX = "  inbox_tags: [to-curate]\n"


@pytest.fixture
def merges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the page merges `status` makes: a kept report makes none."""
    return count_merges(monkeypatch, app)


def status(run, config: str, fmt: str = "json") -> str:
    result = run("--config", config, "status", "--format", fmt)
    assert result.code == 0, result.err
    return result.out


def made_anew(run, config: str, monkeypatch: pytest.MonkeyPatch, fmt: str = "json") -> str:
    with monkeypatch.context() as patch:
        patch.setattr(app, "kept_status", lambda *args: None)
        return status(run, config, fmt)


def synced(run, config: str) -> None:
    result = run("--config", config, "-q", "sync")
    assert result.code == 0, result.err


@pytest.fixture
def realistic(project: Path) -> str:
    """The bundled project with something in each list of the report: an unmatched entry, a category
    name one letter from another, a paper twice in Zotero, an untitled item in the inbox."""
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    paper = next(o for o in objects if o["data"].get("itemType") == "journalArticle")
    twin = json.loads(json.dumps(paper).replace(paper["key"], "TWINKEY2"))
    untitled = json.loads(json.dumps(paper).replace(paper["key"], "UNTITLE2"))
    untitled["data"].update(title="", DOI="", tags=[{"tag": "to-curate"}])
    snapshot.write_text(json.dumps([*objects, twin, untitled]), encoding="utf-8")
    catalogue = project / "seeds" / "catalog.yaml"
    text = catalogue.read_text(encoding="utf-8")
    added = "  - name: Deep Learning Compilers\n    entries:\n      - title: Not a paper in the library\n"
    catalogue.write_text(text.replace("categories:\n", "categories:\n" + added, 1), encoding="utf-8")
    config = Path(config_of(project))
    config.write_text(
        config.read_text(encoding="utf-8").replace("reconcile:\n", "reconcile:\n" + INBOX), encoding="utf-8"
    )
    return str(config)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_status_after_a_sync_is_the_report_it_makes_itself_without_a_merge(
    realistic, run, merges, monkeypatch, fmt
):
    synced(run, realistic)
    merges.clear()
    kept = status(run, realistic, fmt)
    assert merges == []
    assert kept == made_anew(run, realistic, monkeypatch, fmt)
    assert merges == [1]
    if fmt == "json":  # the report has something in each list to compare
        report = json.loads(kept)
        found = {name for name, value in report.items() if value}
        assert {"unmatched", "duplicates", "near_duplicate_categories", "untitled", "inbox"} <= found


def test_a_kept_report_shows_the_last_sync_as_it_is_now(project, run, merges, monkeypatch):
    config = config_of(project)
    synced(run, config)
    first = json.loads(status(run, config))["library"]["last_sync_at"]
    synced(run, config)  # nothing changed: the report is the kept one, the last sync a later one
    merges.clear()
    report = json.loads(status(run, config))
    assert merges == [] and report["library"]["last_sync_at"] >= first
    assert report == json.loads(made_anew(run, config, monkeypatch))


def test_a_catalogue_edited_since_the_sync_makes_the_report_anew(project, run, merges, monkeypatch):
    config = config_of(project)
    synced(run, config)
    catalogue = project / "seeds" / "catalog.yaml"
    text = catalogue.read_text(encoding="utf-8")
    catalogue.write_text(
        text.replace(
            "categories:\n", "categories:\n  - name: Added\n    entries:\n      - title: Not a paper\n"
        ),
        encoding="utf-8",
    )
    merges.clear()
    report = json.loads(status(run, config))
    assert merges == [1]
    assert "Not a paper" in [u["title"] for u in report["unmatched"]]


def test_a_changed_config_makes_the_report_anew(realistic, run, merges):
    synced(run, realistic)
    path = Path(realistic)
    path.write_text(path.read_text(encoding="utf-8").replace("inbox_tags: [to-curate]", "inbox_tags: []"))
    merges.clear()
    status(run, realistic)
    assert merges == [1]


def test_a_store_changed_since_the_sync_makes_the_report_anew(project, run, merges):
    config = config_of(project)
    synced(run, config)
    snapshot = project / "seeds" / "zotero-library.json"
    objects = json.loads(snapshot.read_text(encoding="utf-8"))
    first = next(o for o in objects if o.get("data", o).get("title"))
    data = first.get("data", first)
    data["title"] = "A title the report must show"
    data["version"] = data.get("version", 0) + 1000
    snapshot.write_text(json.dumps(objects), encoding="utf-8")
    pulled = run("--config", config, "-q", "pull")
    assert pulled.code == 0, pulled.err
    merges.clear()
    status(run, config)
    assert merges == [1]
