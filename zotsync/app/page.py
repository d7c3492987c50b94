"""The page: the curated catalogue merged with the store's library, loaded with no more than its
exporters need, and the plan of the files they write."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import formats, processing
from ..catalogue import CatalogueFile
from ..config import Config
from ..digest import News
from ..errors import ZotsyncError
from ..export import ExportInput, LinkPlan, Page, notes
from ..export.base import Layout
from ..export.markdown import category_files
from ..export.record import ExportRecord, export_inputs
from ..export.writer import write_exports
from ..formats import Needs
from ..gcpause import bulk_phase
from ..model import Catalogue, Library, Link, Placement
from ..outputs import FileRecord
from ..plan import Reuse, restricted, reuse
from ..plan import kept_note_pages as kept_by_plan
from ..reconcile import Options, Reconciliation, reconcile
from ..reconcile.scope import Audience, PageScope, audience, page_rows
from ..reconcile.venue import load_venue_table
from ..store import Store, exclusive_lock
from ..store.derived import Derived
from .changes import feed_of
from .manifest import NAME as MANIFEST
from .manifest import write_manifest
from .site import site_of
from .stores import open_store

TAGS_PAGE = "tags.md"


@dataclass(frozen=True, slots=True)
class Merged:
    page: Page  # its rows carry the 📝 and Note links of the plan's note pages
    reconciliation: Reconciliation
    library: Library
    plan: LinkPlan = dataclasses.field(default_factory=LinkPlan)
    notes_needed: bool = False  # an exporter makes note pages from the library's notes (`Needs.NOTES`)
    # Each processor's stored results as read for the page (name → item key → record), for a report.
    derived: Mapping[str, Mapping[str, Derived]] = dataclasses.field(default_factory=dict)


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
    library = store.load_page(creators, attachments=links)
    derived = {name: store.derived(name) for name in processing.names()}
    library = processing.attach_all(library, derived)
    enriched = bool(library.found)
    reconciliation = reconcile(catalogue, library, options_of(config, links, enriched))
    scope = scope_of(config, catalogue)
    rows = page_rows(reconciliation.placements, scope)
    if links and config.exports.open_access_link:
        rows = tuple(with_open_copies(rows))
    files = plan(config, rows, store if notes_plan else None)
    if files.notes:
        rows = tuple(notes.with_note_links(rows, files))
    page = Page(catalogue.title, catalogue.description, rows, config.exports.labels, layout_of(config))
    if config.exports.bib_scope == "library":  # every paper, kept off only by the page's exclusions
        everything = dataclasses.replace(scope, scope="library")
        page = dataclasses.replace(page, library_rows=page_rows(reconciliation.placements, everything))
    return Merged(page, reconciliation, library, files, derived=derived)


def with_open_copies(rows: Sequence[Placement]) -> Iterator[Placement]:
    """Each row with a link to its open-access copy (`exports.open_access_link`), after its own links."""
    for row in rows:
        if row.open_access_url and all(link.url != row.open_access_url for link in row.links):
            row = row._replace(links=(*row.links, Link("Open copy", row.open_access_url, "open")))
        yield row


def layout_of(config: Config) -> Layout:
    exports = config.exports
    return Layout(
        exports.columns,
        exports.venue_length,
        exports.sortable,
        exports.zotero_links,
        exports.suggestions_page,
    )


def rows_under(config: Config, catalogue: Catalogue, library: Library) -> tuple[Placement, ...]:
    """The page's rows under `config`'s settings, without links (what the change digest compares)."""
    enriched = bool(library.found)
    reconciliation = reconcile(catalogue, library, options_of(config, False, enriched))
    return page_rows(reconciliation.placements, scope_of(config, catalogue))


def options_of(config: Config, links: bool = True, enriched: bool = False) -> Options:
    """`enriched`: the library holds what a metadata service found (its venues get shortened)."""
    settings = config.reconcile
    venues = load_venue_table(settings.venues) if settings.abbreviate_venues else None
    return Options(
        read_tags=settings.read_tags,
        unread_tags=settings.unread_tags,
        archive_link=config.exports.archive_link,
        venues=venues,
        zotero_links=links,
        zotero_link_kind=config.exports.zotero_links,
        # a service's venue is shortened even where Zotero's proceedings titles are spelt out
        enriched_venues=venues or (load_venue_table() if enriched else None),
        prefer_published=config.enrich.prefer_published,
    )


def scope_of(config: Config, catalogue: Catalogue) -> PageScope:
    """What of the reconciled rows reaches the page (`exports.scope`, `exclude_*`, `hide_tags`)."""
    exports = config.exports
    return PageScope.of(
        exports.scope,
        (category.name for category in catalogue.categories),
        exports.exclude_collections,
        exports.exclude_tags,
        exports.hide_tags,
    )


@dataclass(frozen=True, slots=True)
class PageAudience:
    """What the page's settings let a processor send about the library's items (`processing.AudienceOf`):
    the page's items first, never one only excluded collections or tags hold. The catalogue is read when
    a processor first asks (a run with nothing due reads none)."""

    config: Config
    catalogue_file: CatalogueFile

    @property
    def digest(self) -> str:
        exports = self.config.exports
        settings = [
            exports.scope,
            exports.exclude_collections,
            exports.exclude_tags,
            self.catalogue_file.digest,
        ]
        return hashlib.sha256(json.dumps(settings, ensure_ascii=False).encode()).hexdigest()[:16]

    def __call__(self, library: Library) -> Audience:
        catalogue = self.catalogue_file.load()
        enriched = bool(library.found)
        reconciliation = reconcile(catalogue, library, options_of(self.config, False, enriched))
        return audience(reconciliation.placements, scope_of(self.config, catalogue))


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


def render(config: Config, fmt: str) -> str | bytes:
    """The page of the format `fmt` alone (what `export --output` writes; a large page as UTF-8). When
    the last sync wrote this page from what the page would be made of now, its file's bytes: the same
    page, without reconciling the library again (4 s at 100k items)."""
    catalogue_file = CatalogueFile.read(config.catalog, config.path)
    with catalogue_first(catalogue_file), open_store(config, readonly=True) as store:
        synced = synced_page(config, store, catalogue_file.digest, fmt)
    if synced is not None:
        return synced
    catalogue = catalogue_file.load()
    with open_store(config, readonly=True) as store, bulk_phase():
        merged = merge_for(config, catalogue, store, [fmt])
        given = ExportInput(merged.page, merged.library, merged.plan, feed_of(store))
        return next(iter(formats.get(fmt).render(given))).text


@contextlib.contextmanager
def catalogue_first(catalogue_file: CatalogueFile) -> Iterator[None]:
    """A command that reads the store before it parses the catalogue, failing on the store, says what
    is wrong with the catalogue first, as one that parses it first does."""
    try:
        yield
    except ZotsyncError:
        catalogue_file.load()  # raises the catalogue's own error, if it has one
        raise


# The built-in formats whose page is made of the page rows, the library and the settings alone: for
# the same inputs, `export --output` renders the bytes the last sync wrote. (Atom's page also reads the
# feed, and a plugin's may read anything: those render again.)
PURE_PAGES = frozenset({"md", "csv", "html", "bib"})


def synced_page(config: Config, store: Store, catalogue_digest: str | None, fmt: str) -> bytes | None:
    """The bytes of the page of `fmt` the last sync wrote, if nothing it was made of has changed since:
    the export inputs (code, config, catalogue, venue table), the store's content and notes (the
    rows' note links), and the file itself. None: render it."""
    if fmt not in PURE_PAGES or fmt not in config.exports.formats:
        return None
    state = store.sync_state
    path = config.exports.dir / formats.get(fmt).page
    record = store.export_files().get(str(path))
    last = ExportRecord.loads(state.export_record)
    inputs = export_inputs(config, catalogue_digest)
    generations = (state.content_generation, state.notes_generation)
    if record is None or reuse(last, inputs, *generations, lambda: True) is not Reuse.ALL:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    # The bytes themselves, not the size and time a stat gives: the page is the answer.
    return data if hashlib.sha256(data).hexdigest() == record.sha256 else None


def export(config: Config, fmt: str, output: Path) -> tuple[str | bytes, list[tuple[Path, bool]]]:
    """`export --format fmt` into the file `output`: the page's text and, when the page goes into
    `exports.dir`, where its links to them resolve, the format's other files (note pages, category
    pages, the tags page, the sortable-tables script) — written, and recorded in the store as a sync
    records them (under the run lock, so no sync writes them meanwhile). Elsewhere, the page alone."""
    folder = config.exports.dir
    if output.absolute().parent.resolve() != folder.absolute().resolve():
        return render(config, fmt), []
    exporter = formats.get(fmt)
    catalogue_file = CatalogueFile.read(config.catalog, config.path)
    # The store first: without one, nothing is made beside it (not even the lock file).
    with (
        catalogue_first(catalogue_file),
        open_store(config, readonly=True) as store,
        exclusive_lock(config.store),
    ):
        synced = synced_page(config, store, catalogue_file.digest, fmt)
        if synced is not None and exports_hold(folder, store):
            return synced, []  # the page and its files are as the last sync wrote them: nothing to write
        catalogue = catalogue_file.load()
        with bulk_phase():
            merged = merge_for(config, catalogue, store, [fmt])
            files = store.export_files()
            kept: dict[str, str] = {}
            if exporter.needs & Needs.NOTES:
                last = ExportRecord.loads(store.sync_state.export_record)
                kept = kept_note_pages(config, store, last, export_inputs(config, None), files)
            made = list(exporter.render(export_input(merged, store, kept, feed_of(store))))
            others = made[1:]
            # The same plan as a sync's, restricted to this format's files.
            ours = {str(folder / each.path) for each in others}
            inside = notes.folder_prefix(folder) if exporter.needs & Needs.NOTES else None
            known = restricted(files, ours, inside)
            result = write_exports(folder, [], others, known)
        if result.records or known:
            with Store(config.store) as writable:
                writable.update_export_files(
                    result.records, result.made_from, set(known) - set(result.records)
                )
                write_manifest(folder, writable)  # the published record follows the store's
    return made[0].text, result.written


def exports_hold(folder: Path, store: Store) -> bool:
    """Whether every file the last sync exported, and its manifest, is still on disk as it left them
    (what an unchanged sync checks before it renders nothing)."""
    if not (folder / MANIFEST).exists():
        return False
    return all(record.holds(path) for path, record in store.export_files().items())


def export_input(
    merged: Merged,
    store: Store,
    unchanged: Mapping[str, str] | None = None,
    feed: Sequence[News] = (),
) -> ExportInput:
    """What the exporters get: the page, the library with the notes of each note page they must make
    (every one but those `unchanged` names with the head they would have), the plan and the feed."""
    unchanged = unchanged or {}
    given = ExportInput(merged.page, merged.library, merged.plan, feed, unchanged)
    if not merged.plan.notes or not merged.notes_needed:
        return given
    page_heads = notes.heads(given)
    wanted = [Path(path).stem for path, head in page_heads.items() if unchanged.get(path) != head]
    library = dataclasses.replace(merged.library, notes=store.paper_notes(wanted))
    return dataclasses.replace(given, library=library, note_heads=page_heads)


def plan(config: Config, rows: Sequence[Placement], store: Store | None = None) -> LinkPlan:
    """Where each file of the export goes: each format's page, the tags page, the category pages and,
    when note pages are on (`exports.notes` and a format that makes them), one per paper of `rows` with
    notes in `store`."""
    exports = config.exports
    pages = {name: formats.get(name).page for name in exports.formats}
    categories = dict.fromkeys(row.category for row in rows) if exports.split == "category" else {}
    files = LinkPlan(
        pages=pages,
        tags_page=TAGS_PAGE if exports.tags_page and "md" in exports.formats else "",
        category_pages=category_files(list(categories)),
        site=site_of(config),
    )
    if store is None or not notes_on(config):
        return files
    return notes.note_plan(files, store.papers_with_notes(), rows)


def notes_on(config: Config) -> bool:
    return config.exports.notes and bool(formats.needs(config.exports.formats) & Needs.NOTES)


def kept_note_pages(
    config: Config,
    store: Store,
    last: ExportRecord | None,
    inputs: dict[str, str],
    files: dict[str, FileRecord],
) -> dict[str, str]:
    """The note pages an export need not make again, if their heads come out the same (path relative
    to `exports.dir` → head): the export plan's decision (`zotsync.plan.kept_note_pages`), from the store."""
    if last is None or not notes_on(config):
        return {}
    prefix = notes.folder_prefix(config.exports.dir)

    def holds(path: str) -> bool:
        record = files.get(path)
        return record is not None and record.holds(path)

    kept = kept_by_plan(
        last,
        inputs,
        store.papers_with_changed_notes(last.notes_generation),
        store.export_made_from(),
        lambda path: notes.key_of(path, prefix),
        holds,
    )
    return {notes.page_path(key): head for key, head in kept.items()}
