"""The processing stage between pull and page: a processor's results are kept in the store, joined into
the library the page reads, and re-render the page only when they change."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from zotsync import processing
from zotsync.config import Config, load_config, setting
from zotsync.model import FoundMetadata, Library
from zotsync.processing import Derived, Job, Report
from zotsync.store import Store


class Shouting:
    """A processor that derives each title in capitals, for the items whose title holds `word`."""

    name = "shout"

    def __init__(self) -> None:
        self.word = "GPU"
        self.runs = 0
        self.enabled_now = True

    def enabled(self, config: Config) -> bool:
        return self.enabled_now

    def run(self, job: Job) -> Report:
        self.runs += 1
        known = job.results()
        library = job.library()
        due = [i for i in library.items if i.is_regular and self.word in i.title]
        fresh = [
            Derived(i.key, i.title, i.title.upper(), job.now().isoformat())
            for i in due
            if job.refresh or known.get(i.key, Derived("", "", None, "")).inputs != i.title
        ]
        gone = set(known) - {i.key for i in due}
        job.save(fresh, gone)
        return Report(self.name, {"derived": len(fresh), "forgotten": len(gone)})

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library:
        return replace(
            library, derived={**library.derived, self.name: {k: r.value for k, r in results.items()}}
        )


@pytest.fixture
def shouting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Shouting]:
    """A processor added as a program using zotsync adds one (`processing.register`), for this test."""
    monkeypatch.setattr(processing, "_extra", {})
    processor = Shouting()
    processing.register(processor)
    yield processor


def now() -> datetime:
    return datetime(2026, 12, 1, tzinfo=UTC)


def loaded(project: Path) -> Config:
    return load_config(project / "config" / "zotsync.yaml")


def test_results_are_kept_joined_into_the_library_and_asked_again_only_when_the_item_changed(
    project: Path, run, shouting: Shouting
) -> None:
    config = loaded(project)
    assert run("-q", "--config", str(config.path), "sync").code == 0
    with Store(config.store) as store:
        results = store.derived("shout")
        assert results and all(r.value == r.inputs.upper() for r in results.values())
        generation = store.generation
        [report] = processing.run_stage(config, store, now)
        assert report.counts == {"derived": 0, "forgotten": 0}  # nothing changed: nothing asked again
        assert store.generation == generation  # and the page need not render again
        library = processing.attach_all(store.load_page(), {"shout": store.derived("shout")})
    assert {k: v for k, v in library.derived["shout"].items()} == {k: r.value for k, r in results.items()}


def test_a_changed_result_renders_the_page_again_and_an_unchanged_one_does_not(
    project: Path, run, shouting: Shouting
) -> None:
    config = str(project / "config" / "zotsync.yaml")
    assert run("-q", "--config", config, "sync").code == 0
    page = project / "exports" / "catalog.md"
    before = page.stat().st_mtime_ns
    assert run("--config", config, "sync").err.count("unchanged") == 2
    shouting.word = "Tensor"  # another set of items: some results go, others come
    result = run("--config", config, "sync", "--json")
    assert result.code == 0
    assert '"shout": {"derived": ' in result.out
    with Store(project / ".zotsync" / "zotsync.sqlite") as store:
        assert all("Tensor" in r.inputs for r in store.derived("shout").values())
    assert page.stat().st_mtime_ns == before  # rendered again, but the page does not show the results


def test_a_disabled_processor_does_not_run_and_a_dry_run_saves_nothing(
    project: Path, shouting: Shouting
) -> None:
    config = loaded(project)
    with Store(config.store) as store:
        shouting.enabled_now = False
        assert processing.run_stage(config, store, now) == []
        job = Job(config, store, "shout", 60.0, now, dry_run=True)
        assert shouting.run(job).counts["derived"] == 0  # an empty store: nothing to derive yet
        assert store.derived("shout") == {}


# -- a processor of one's own: its config section, and the metadata it finds on the page ------------------


@dataclass(frozen=True, slots=True)
class ShelfSettings:
    venue: str = setting(
        "", lambda r, v: "" if v is None else str(v), "the venue it finds", {"type": "string"}
    )


class Shelving:
    """A metadata processor that is not enrichment: it finds `venue` for every item that lacks one."""

    name = "shelving"
    settings = ShelfSettings

    def enabled(self, config: Config) -> bool:
        return bool(config.section(self.name).venue)

    def run(self, job: Job) -> Report:
        venue = job.config.section(self.name).venue
        items = [i for i in job.library().items if i.is_regular]
        job.save([Derived(i.key, venue, venue, job.now().isoformat()) for i in items])
        return Report(self.name, {"found": len(items)})

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library:
        found = {key: FoundMetadata("shelving", r.value, "", "", True, "", "") for key, r in results.items()}
        return replace(library, found={**library.found, **found})


def test_a_processor_s_own_section_and_found_metadata_reach_the_page(
    project: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processing, "_extra", {})
    processing.register(Shelving())
    config = project / "config" / "zotsync.yaml"
    with config.open("a", encoding="utf-8") as file:
        file.write("shelving:\n  venue: Shelf Proceedings\n")
    assert run("-q", "--config", str(config), "sync").code == 0
    with (project / "exports" / "catalog.csv").open(encoding="utf-8-sig", newline="") as file:
        rows = list(csv.DictReader(file))
    # reconcile took what the processor found where Zotero and the curator gave no venue, by no name
    filled = [row for row in rows if row["venue_source"] == "shelving"]
    assert filled and all(row["venue"].startswith("Shelf Proceedings") for row in filled)
    assert all(row["venue_source"] in ("curated", "zotero", "shelving") for row in rows)
    # the section is checked like a core one
    with config.open("a", encoding="utf-8") as file:
        file.write("  venu: typo\n")
    refused = run("--config", str(config), "sync")
    assert refused.code == 2
    assert "unknown config key 'shelving.venu' (did you mean 'shelving.venue'?)" in refused.err
