"""Merge matched curated entries with Zotero items into page rows, in page order.

Field owners: the curator owns category, status, why, note marker, links and a venue override; Zotero
owns title, authors, date, DOI, URL, tags, collections and attachments. A curated field left empty is
filled from Zotero.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import normalize
from ..facts import ItemFacts
from ..model import Catalogue, CatalogueEntry, Item, Library, Link, Placement, Status
from .match import MatchResult, match
from .venue import VenueTable, derive_venue

UNFILED = "Unfiled"


@dataclass(frozen=True, slots=True)
class Options:
    read_tags: tuple[str, ...] = ()
    archive_link: str = ""  # template for a 归档标签 link; {key} is the item key
    venues: VenueTable | None = None  # abbreviate proceedings (PLDI'21) when given
    # False: rows carry only the curator's links, none of Zotero's (paper, PDFs, zotero://): for what shows
    # none (`status`, a CSV), which then need not look at the attachments either
    zotero_links: bool = True


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
    row = _RowBuilder(options, children, paths, facts)

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
    # Per run, not per row: the read tags as a set.
    read_tags: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "read_tags", frozenset(self.options.read_tags))

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
                links=entry.links,
                zotero_key="",
                tags=(),
                collections=(),
                curated_title=entry.title,
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
            links=merge_links(entry.links, base.links),
            zotero_key=base.zotero_key,
            tags=base.tags,
            collections=base.collections,
            curated_title=entry.title,
            noted_by_curator=entry.noted is not None,
        )

    def uncurated(self, item: Item, category: str) -> Placement:
        read_tags, paths, tags, collections = self.read_tags, self.paths, item.tags, item.collections
        facts = self.facts[item.key]
        year, doi, url = facts.year, facts.doi, facts.url
        return Placement(
            category=category,
            status=self.zotero_status(item, facts) or "unread",
            title=item.title,
            venue=derive_venue(item, self.options.venues, year, facts.venue_source),
            year=year,
            why="",
            authors=facts.authors,
            doi=doi,
            url=url,
            noted=False,
            links=self.links(
                item, url or (f"https://doi.org/{name}" if (name := normalize.doi_name(doi)) else "")
            )
            if self.options.zotero_links
            else (),
            zotero_key=item.key,
            # list comprehensions, which run faster than generators, and none for an empty tuple
            tags=tuple([t.name for t in tags if not read_tags or t.name not in read_tags]) if tags else (),
            collections=tuple([paths[c] for c in collections if c in paths]) if collections else (),
        )

    def zotero_status(self, item: Item, facts: ItemFacts) -> Status | None:
        """Read when tagged with a configured read tag or marked Read by the Reading List plugin."""
        read_tags = self.read_tags
        if read_tags and any(t.name in read_tags for t in item.tags):
            return "read"
        return "read" if facts.read else None

    def links(self, item: Item, paper: str) -> tuple[Link, ...]:
        """`paper`: the item's URL, else its DOI's, else empty."""
        links: list[Link] = []
        if paper:
            links.append(Link("Paper", paper, "paper"))
        library = "library" if item.library_type != "group" else f"groups/{item.library_id}"
        children = self.children.get(item.key)
        pdfs = (
            sorted((c for c in children if c.is_pdf), key=lambda c: (c.get("dateAdded"), c.key))
            if children
            else ()
        )
        for number, pdf in enumerate(pdfs, start=1):
            target = pdf.url if pdf.get("linkMode") == "linked_url" else ""
            links.append(
                Link(
                    "PDF" if number == 1 else f"PDF{number}",
                    target or f"zotero://open-pdf/{library}/items/{pdf.key}",
                    "pdf",
                )
            )
        links.append(Link("Zotero", f"zotero://select/{library}/items/{item.key}", "zotero"))
        if self.options.archive_link:
            links.append(Link("归档标签", self.options.archive_link.replace("{key}", item.key), "archive"))
        return tuple(links)
