"""Merge matched curated entries with Zotero items into page rows, in page order.

Field owners: the curator owns category, status, why, note marker, links and a venue override; Zotero
owns title, authors, date, DOI, URL, tags, collections and attachments. A curated field left empty is
filled from Zotero; what Zotero lacks (a venue, a year, a DOI) from what a metadata processor found
(`Library.found`: zotsync/processing/enrich fills it), and a preprint's venue from its published
version's when `prefer_published`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import normalize
from ..model import (
    Catalogue,
    CatalogueEntry,
    FoundMetadata,
    Item,
    ItemFacts,
    Library,
    Link,
    Placement,
    Status,
    WorkFacts,
    is_preprint,
)
from .match import MatchResult, item_arxiv_ids, match
from .venue import VenueTable, derive_venue, enriched_venue

UNFILED = "Unfiled"


@dataclass(frozen=True, slots=True)
class Options:
    read_tags: tuple[str, ...] = ()
    unread_tags: tuple[str, ...] = ()
    archive_link: str = ""  # template for a 归档标签 link; {key} is the item key
    venues: VenueTable | None = None  # abbreviate proceedings (PLDI'21) when given
    # False: rows carry only the curator's links, none of Zotero's (paper, PDFs, zotero://): for what shows
    # none (`status`, a CSV), which then need not look at the attachments either
    zotero_links: bool = True
    # Which links into Zotero a row gets: local (zotero://, which open the desktop app), web (the item's
    # page on zotero.org, when the library's is known) or none (a page for visitors, who have neither).
    zotero_link_kind: str = "local"
    # What a metadata service found: its venues shortened with this table (OSDI'20) whatever `venues` is
    # (a service names no proceedings title to spell out); a preprint shows its published version's
    # venue when `prefer_published`.
    enriched_venues: VenueTable | None = None
    prefer_published: bool = True


@dataclass(frozen=True, slots=True)
class Reconciliation:
    placements: tuple[Placement, ...]
    matches: MatchResult
    status_conflicts: tuple[tuple[str, Status, Status], ...]  # (title, curated, Zotero)


def reconcile(catalogue: Catalogue, library: Library, options: Options = Options()) -> Reconciliation:
    matches = match(catalogue.entries, library.items, library.facts)
    children: dict[str, list[Item]] = defaultdict(list)
    for item in library.items if options.zotero_links else ():
        if item.parent_key and not item.deleted:
            children[item.parent_key].append(item)
    paths = library.collection_paths()
    facts = matches.facts  # of every item a row can show
    row = _RowBuilder(options, children, paths, facts, library.found, library.library_url, library.works)

    rows: dict[str, list[Placement]] = {c.name: [] for c in catalogue.categories}
    conflicts: list[tuple[str, Status, Status]] = []
    for entry in catalogue.entries:
        matched = matches.item_for(entry)
        placement = row.curated(entry, matched)
        rows[entry.category].append(placement)
        if (
            matched
            and entry.status
            and (zotero := row.zotero_status(matched, facts[matched.key]))
            and zotero != entry.status
        ):
            conflicts.append((placement.title, entry.status, zotero))

    claimed = {item.key for item in matches.by_title.values()}
    # Rows sort by the normalised title (a fact of every candidate), then by key. One sort of the items,
    # not one per category: placed in this order, each category's rows are in order too.
    items = [i for i in library.items if i.is_regular and not i.deleted and i.key not in claimed]
    items.sort(key=lambda i: (facts[i.key].title_key, i.key))
    uncurated: dict[str, list[Placement]] = defaultdict(list)
    for item in items:
        base = row.uncurated(item, UNFILED)  # built once per item, then placed in each of its categories
        for category in base.collections or (UNFILED,):
            uncurated[category].append(base if category == UNFILED else _placed(base, category))

    ordered: list[Placement] = []
    # Unfiled is not a collection path: it closes the page rather than sorting among them.
    for category in list(rows) + sorted(set(uncurated) - set(rows), key=lambda c: (c == UNFILED, c)):
        ordered += rows.get(category, [])
        ordered += uncurated.get(category, [])
    return Reconciliation(tuple(ordered), matches, tuple(dict.fromkeys(conflicts)))


def _placed(base: Placement, category: str) -> Placement:
    """`base` in another category (`_replace`, without its keyword dict per copy)."""
    return Placement(category, *base[1:])


def paper_url(item: Item, url: str, doi: str) -> str:
    """Where a reader finds the paper: its URL, else its DOI's page, else its arXiv page; else empty."""
    if url:
        return url
    if name := normalize.doi_name(doi):
        return f"https://doi.org/{name}"
    arxiv = sorted(item_arxiv_ids(item))
    return f"https://arxiv.org/abs/{arxiv[0]}" if arxiv else ""


def merge_links(curated: tuple[Link, ...], zotero: tuple[Link, ...]) -> tuple[Link, ...]:
    """The curator's links win, in the curator's order; without any, Zotero's whole list. Zotero owns the
    PDFs, so they join a curated list that has no PDF link of its own."""
    if not curated:
        return zotero
    if any(link.label.startswith("PDF") for link in curated):
        return curated
    return curated + tuple(link for link in zotero if link.label.startswith("PDF"))


@dataclass(frozen=True, slots=True)
class _RowBuilder:
    options: Options
    children: dict[str, list[Item]]
    paths: dict[str, str]
    facts: Mapping[str, ItemFacts]  # of every item a row is built for
    enriched: Mapping[str, FoundMetadata]  # item key → what a metadata processor found
    library_url: str = ""  # the library's web page, for `zotero_link_kind` web
    works: Mapping[str, WorkFacts] = field(default_factory=dict)  # item key → its citations, retraction
    # Per run, not per row: the read and unread tags as sets, and both (the status tags, never shown).
    read_tags: frozenset[str] = field(init=False)
    unread_tags: frozenset[str] = field(init=False)
    status_tags: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "read_tags", frozenset(self.options.read_tags))
        object.__setattr__(self, "unread_tags", frozenset(self.options.unread_tags))
        object.__setattr__(self, "status_tags", self.read_tags | self.unread_tags)

    def curated(self, entry: CatalogueEntry, item: Item | None) -> Placement:
        if item is None:
            return Placement(
                category=entry.category,
                status=entry.status or "unread",
                title=entry.title,
                venue=entry.venue,
                year="",
                why=entry.why,
                authors=(),
                doi=entry.doi,
                url=entry.url,
                noted=bool(entry.noted),
                links=self.curators(entry.links),
                zotero_key="",
                tags=(),
                collections=(),
                curated_title=entry.title,
                venue_source="curated" if entry.venue else "",
                noted_by_curator=entry.noted is not None,
            )
        base = self.uncurated(item, entry.category)
        return Placement(
            category=entry.category,
            status=entry.status or base.status,
            title=base.title,
            venue=entry.venue or base.venue,
            year=base.year,
            why=entry.why,
            authors=base.authors,
            doi=base.doi or entry.doi,
            url=base.url or entry.url,
            noted=bool(entry.noted),
            links=merge_links(self.curators(entry.links), base.links),
            zotero_key=base.zotero_key,
            tags=base.tags,
            collections=base.collections,
            curated_title=entry.title,
            added=base.added,
            venue_source="curated" if entry.venue else base.venue_source,
            noted_by_curator=entry.noted is not None,
            cited_by=base.cited_by,
            retracted=base.retracted,
            open_access_url=base.open_access_url,
        )

    def uncurated(self, item: Item, category: str) -> Placement:
        status_tags, paths, tags, collections = self.status_tags, self.paths, item.tags, item.collections
        facts = self.facts[item.key]
        year, doi, url = facts.year, facts.doi, facts.url
        found = self.enriched.get(item.key) if self.enriched else None
        if found is not None:
            year, doi = year or found.year, doi or found.doi
        venue = derive_venue(item, self.options.venues, year, facts.venue_source)
        source = "zotero" if venue else ""
        work = self.works.get(item.key) if self.works else None
        if found is not None and (
            not venue
            or (
                found.published
                and self.options.prefer_published
                and is_preprint(item.item_type, facts.venue_source)
            )
        ):
            venue, source = enriched_venue(found, self.options.enriched_venues, year), found.service
        return Placement(
            category=category,
            status=self.zotero_status(item, facts) or "unread",
            title=item.title,
            venue=venue,
            year=year,
            why="",
            authors=facts.authors,
            doi=doi,
            url=url,
            noted=False,
            links=self.links(item, paper_url(item, url, doi)) if self.options.zotero_links else (),
            zotero_key=item.key,
            # list comprehensions, which run faster than generators, and none for an empty tuple
            # status tags say read or unread (the Status column): never shown as topic tags
            tags=tuple([t.name for t in tags if t.name not in status_tags]) if tags else (),
            collections=tuple([paths[c] for c in collections if c in paths]) if collections else (),
            added=item.get("dateAdded")[:10],
            venue_source=source if venue else "",
            cited_by=work.cited_by if work is not None else "",
            retracted=work is not None and work.retracted,
            open_access_url=work.open_access_url if work is not None else "",
        )

    def zotero_status(self, item: Item, facts: ItemFacts) -> Status | None:
        """Read when tagged with a read tag; unread when tagged with an unread tag (and no read tag);
        else read when marked Read by the Reading List plugin."""
        status_tags = self.status_tags
        if status_tags and item.tags:
            found = [t.name for t in item.tags if t.name in status_tags]
            if found:
                return "read" if any(name in self.read_tags for name in found) else "unread"
        return "read" if facts.read else None

    def curators(self, links: tuple[Link, ...]) -> tuple[Link, ...]:
        """The curator's links, less any `zotero:` one when the page is not for its owner alone."""
        if self.options.zotero_link_kind == "local" or not links:
            return links
        return tuple(link for link in links if not link.url.strip().lower().startswith("zotero:"))

    def links(self, item: Item, paper: str) -> tuple[Link, ...]:
        """`paper`: the item's URL, else its DOI's, else its arXiv page, else empty."""
        links: list[Link] = []
        if paper:
            links.append(Link("Paper", paper, "paper"))
        kind = self.options.zotero_link_kind
        library = "library" if item.library_type != "group" else f"groups/{item.library_id}"
        children = self.children.get(item.key)
        pdfs = (
            sorted((c for c in children if c.is_pdf), key=lambda c: (c.get("dateAdded"), c.key))
            if children
            else ()
        )
        number = 0
        for pdf in pdfs:
            target = pdf.url if pdf.get("linkMode") == "linked_url" else ""
            if not target and kind != "local":  # zotero://open-pdf opens nothing for a visitor
                continue
            number += 1
            links.append(
                Link(
                    "PDF" if number == 1 else f"PDF{number}",
                    target or f"zotero://open-pdf/{library}/items/{pdf.key}",
                    "pdf",
                )
            )
        if kind == "local":
            links.append(Link("Zotero", f"zotero://select/{library}/items/{item.key}", "zotero"))
        elif kind == "web" and self.library_url:
            links.append(Link("Zotero", f"{self.library_url}/items/{item.key}", "zotero"))
        if self.options.archive_link:
            links.append(Link("归档标签", self.options.archive_link.replace("{key}", item.key), "archive"))
        return tuple(links)
