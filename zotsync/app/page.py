"""The page: the curated catalogue merged with the store's library, loaded with no more than its
exporters need, and the plan of the files they write."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import formats, processing
from ..catalogue import load_catalogue
from ..config import Config
from ..export import ExportInput, LinkPlan, Page, notes, page_text
from ..export.writer import write_exports
from ..formats import Needs
from ..gcpause import bulk_phase
from ..model import Catalogue, Library, Placement
from ..reconcile import Options, Reconciliation, reconcile
from ..reconcile.venue import load_venue_table
from ..store import Store, exclusive_lock
from .stores import open_store


@dataclass(frozen=True, slots=True)
class Merged:
    page: Page  # its rows carry the 📝 and Note links of the plan's note pages
    reconciliation: Reconciliation
    library: Library
    plan: LinkPlan = dataclasses.field(default_factory=LinkPlan)
    notes_needed: bool = False  # an exporter makes note pages from the library's notes (`Needs.NOTES`)


def merge(
    config: Config,
    catalogue: Catalogue,
    store: Store,
    creators: bool = True,
    links: bool = True,
    notes_plan: bool = False,
) -> Merged:
    """The page of `catalogue` and the store's library; without `creators`, the library's items may
    lack their creators (see `Store.load_page`): for callers that use only the page and counts; without
    `links`, the rows lack Zotero's links (for a report or a format that shows none), and the library its
    attachments, which only those links read; with `notes_plan`, the rows carry the 📝 and Note links of
    the note pages the exports make (the page and its CSV, not a report)."""
    settings = config.reconcile
    options = Options(
        read_tags=settings.read_tags,
        archive_link=config.exports.archive_link,
        venues=load_venue_table(settings.venues) if settings.abbreviate_venues else None,
        zotero_links=links,
    )
    library = store.load_page(creators, attachments=links)
    library = processing.attach_all(library, {name: store.derived(name) for name in processing.BUILT_IN})
    reconciliation = reconcile(catalogue, library, options)
    rows = reconciliation.placements
    files = plan(config, store if notes_plan else None, rows)
    if files.notes:
        rows = tuple(notes.with_note_links(rows, files))
    page = Page(catalogue.title, catalogue.description, rows, config.exports.labels)
    return Merged(page, reconciliation, library, files)


def merge_for(config: Config, catalogue: Catalogue, store: Store, names: Sequence[str]) -> Merged:
    """The page with no more than the exporters `names` need (formats.Needs)."""
    needs = formats.needs(names)
    merged = merge(
        config,
        catalogue,
        store,
        creators=bool(needs & Needs.CREATORS),
        links=bool(needs & Needs.ZOTERO_LINKS),
        notes_plan=True,
    )
    return dataclasses.replace(merged, notes_needed=bool(needs & Needs.NOTES))


def default_output(config: Config, fmt: str) -> Path:
    return config.exports.dir / formats.get(fmt).page


def render(config: Config, fmt: str) -> str:
    """The page of the format `fmt` alone (what `export --output` writes)."""
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store, bulk_phase():
        merged = merge_for(config, catalogue, store, [fmt])
        return page_text(formats.get(fmt), ExportInput(merged.page, merged.library, merged.plan))


def export(config: Config, fmt: str, output: Path) -> tuple[str, list[tuple[Path, bool]]]:
    """`export --format fmt` into the file `output`: the page's text, and the other files of the format
    (note pages) when the page goes into `exports.dir`, where their links from the page resolve —
    written, and recorded in the store as a sync records them (under the run lock, so no sync writes
    them meanwhile). Elsewhere, the page alone."""
    folder = config.exports.dir
    makes_notes = bool(formats.get(fmt).needs & Needs.NOTES)
    if not makes_notes or output.absolute().parent.resolve() != folder.absolute().resolve():
        return render(config, fmt), []
    catalogue = load_catalogue(config.catalog, config.path)
    # The store first: without one, nothing is made beside it (not even the lock file).
    with open_store(config, readonly=True) as store, exclusive_lock(config.store):
        with bulk_phase():
            merged = merge_for(config, catalogue, store, [fmt])
            made = list(formats.get(fmt).render(export_input(merged, store)))
            inside = notes.folder_prefix(folder)
            known = {p: r for p, r in store.export_files().items() if p.startswith(inside)}
            result = write_exports(folder, [], made[1:], known)
        if result.records or known:
            with Store(config.store) as writable:
                writable.update_export_files(
                    result.records, result.made_from, set(known) - set(result.records)
                )
    return made[0].text, result.written


def export_input(merged: Merged, store: Store, unchanged: Mapping[str, str] | None = None) -> ExportInput:
    """What the exporters get: the page, the library with the notes of each note page they must make
    (every one but those `unchanged` names with the head they would have), and the plan."""
    unchanged = unchanged or {}
    given = ExportInput(merged.page, merged.library, merged.plan, unchanged)
    if not merged.plan.notes or not merged.notes_needed:
        return given
    wanted = [Path(path).stem for path, head in notes.heads(given).items() if unchanged.get(path) != head]
    library = dataclasses.replace(merged.library, notes=store.paper_notes(wanted))
    return ExportInput(merged.page, library, merged.plan, unchanged)


def plan(config: Config, store: Store | None = None, rows: Sequence[Placement] = ()) -> LinkPlan:
    """Where each file of the export goes: the pages of `exports.formats` and, when note pages are on
    (`exports.notes` and a format that makes them), one per paper of `rows` with notes in `store`."""
    pages = LinkPlan(pages={name: formats.get(name).page for name in config.exports.formats})
    if store is None or not notes_on(config):
        return pages
    return notes.note_plan(pages, store.papers_with_notes(), rows)


def notes_on(config: Config) -> bool:
    return config.exports.notes and bool(formats.needs(config.exports.formats) & Needs.NOTES)
