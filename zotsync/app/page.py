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
from ..formats import Needs
from ..gcpause import bulk_phase
from ..model import Catalogue, Library
from ..reconcile import Options, Reconciliation, reconcile
from ..reconcile.venue import load_venue_table
from ..store import Store
from .changes import feed_of
from .stores import open_store


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
    page = Page(catalogue.title, catalogue.description, reconciliation.placements, config.exports.labels)
    return Merged(page, reconciliation, library)


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
        given = ExportInput(merged.page, merged.library, plan(config), feed_of(store))
        return page_text(formats.get(fmt), given)


def plan(config: Config) -> LinkPlan:
    return LinkPlan(pages={name: formats.get(name).page for name in config.exports.formats})
