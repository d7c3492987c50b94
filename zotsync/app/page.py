"""The page: the curated catalogue merged with the store's library, loaded with no more than its
exporters need, and the plan of the files they write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import formats, processing
from ..catalogue import load_catalogue
from ..config import Config
from ..export import ExportInput, LinkPlan, Page, page_text
from ..export.base import Layout
from ..export.markdown import category_files
from ..formats import Needs
from ..gcpause import bulk_phase
from ..model import ENRICHMENT, Catalogue, Library, Placement
from ..reconcile import Options, Reconciliation, reconcile
from ..reconcile.scope import PageScope, page_rows
from ..reconcile.venue import load_venue_table
from ..store import Store
from .changes import feed_of
from .stores import open_store

TAGS_PAGE = "tags.md"


@dataclass(frozen=True, slots=True)
class Merged:
    page: Page
    reconciliation: Reconciliation
    library: Library


def merge(
    config: Config, catalogue: Catalogue, store: Store, creators: bool = True, links: bool = True
) -> Merged:
    """The page of `catalogue` and the store's library; without `creators`, the library's items may
    lack their creators (see `Store.load_page`): for callers that use only the page and counts; without
    `links`, the rows lack Zotero's links (for a report or a format that shows none), and the library its
    attachments, which only those links read."""
    library = store.load_page(creators, attachments=links)
    library = processing.attach_all(library, {name: store.derived(name) for name in processing.BUILT_IN})
    enriched = bool(library.derived.get(ENRICHMENT))
    reconciliation = reconcile(catalogue, library, options_of(config, links, enriched))
    rows = page_rows(reconciliation.placements, scope_of(config, catalogue))
    page = Page(catalogue.title, catalogue.description, rows, config.exports.labels, layout_of(config))
    return Merged(page, reconciliation, library)


def layout_of(config: Config) -> Layout:
    exports = config.exports
    return Layout(exports.columns, exports.venue_length, exports.sortable)


def rows_under(config: Config, catalogue: Catalogue, library: Library) -> tuple[Placement, ...]:
    """The page's rows under `config`'s settings, without links (what the change digest compares)."""
    enriched = bool(library.derived.get(ENRICHMENT))
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


def merge_for(config: Config, catalogue: Catalogue, store: Store, names: Sequence[str]) -> Merged:
    """The page with no more than the exporters `names` need (formats.Needs)."""
    needs = formats.needs(names)
    return merge(
        config,
        catalogue,
        store,
        creators=bool(needs & Needs.CREATORS),
        links=bool(needs & Needs.ZOTERO_LINKS),
    )


def default_output(config: Config, fmt: str) -> Path:
    return config.exports.dir / formats.get(fmt).page


def render(config: Config, fmt: str) -> str:
    """The page of the format `fmt` (what `export --output` writes)."""
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store, bulk_phase():
        merged = merge_for(config, catalogue, store, [fmt])
        given = ExportInput(merged.page, merged.library, plan(config, merged.page), feed_of(store))
        return page_text(formats.get(fmt), given)


def plan(config: Config, page: Page) -> LinkPlan:
    """Where each file of the export goes: each format's page, the tags page and the category pages."""
    exports = config.exports
    pages = {name: formats.get(name).page for name in exports.formats}
    categories = dict.fromkeys(row.category for row in page.rows) if exports.split == "category" else {}
    return LinkPlan(
        pages=pages,
        tags_page=TAGS_PAGE if exports.tags_page and "md" in exports.formats else "",
        category_pages=category_files(list(categories)),
    )
