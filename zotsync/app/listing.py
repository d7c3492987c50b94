"""`zotsync list`: the library's items as the curator looks for them — which ones a curated entry
claims, and the key to `adopt` or `pin` the rest."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from ..catalogue import load_catalogue
from ..config import Config
from ..errors import ConfigError
from ..model import Placement, category_name, collection_path, in_collections
from ..secrets import excerpt
from .page import merge
from .stores import open_store

log = logging.getLogger("zotsync")


@dataclass(frozen=True, slots=True)
class Listed:
    """One top-level item of the library, as merged with the catalogue."""

    zotero_key: str
    title: str  # Zotero's title
    year: str
    venue: str  # curated, else derived from Zotero; empty when unknown
    item_type: str
    authors: tuple[str, ...]
    doi: str
    collections: tuple[str, ...]  # full paths, `Parent / Child`
    tags: tuple[str, ...]
    curated: bool  # a curated catalogue entry claims it
    categories: tuple[str, ...]  # the catalogue categories it is curated under

    def to_dict(self) -> dict[str, object]:
        """What `list --format json` prints for the item."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    as_json = to_dict  # the name of zotsync 0.2 and earlier

    def summary(self) -> str:
        """One line: the key, the title, the venue and year."""
        venue = " ".join(part for part in (self.venue, self.year) if part)
        return f"{self.zotero_key} {self.title}" + (f" ({venue})" if venue else "")


@dataclass(frozen=True, slots=True)
class Filters:
    uncurated: bool = False
    collection: str | None = None  # this collection path, or any below it
    tag: str | None = None
    search: str | None = None  # in title, authors or DOI, case-insensitive

    def keep(self, item: Listed) -> bool:
        if self.uncurated and item.curated:
            return False
        if self.collection is not None and not in_collections(
            item.collections, [collection_path(self.collection)]
        ):
            return False
        if self.tag is not None and self.tag.casefold() not in {t.casefold() for t in item.tags}:
            return False
        if self.search is not None:
            needle = self.search.casefold()
            haystack = (item.title, item.doi, *item.authors)
            return any(needle in text.casefold() for text in haystack)
        return True


def list_items(config: Config, filters: Filters = Filters()) -> list[Listed]:
    """The library's top-level items not in the trash, by title, with what the catalogue says of them."""
    catalogue = load_catalogue(config.catalog, config.path)
    with open_store(config, readonly=True) as store:
        merged = merge(config, catalogue, store)
    rows_of: dict[str, list[Placement]] = {}
    for row in merged.page.rows:
        if row.zotero_key:
            rows_of.setdefault(row.zotero_key, []).append(row)
    paths = merged.library.collection_paths()
    if filters.collection is not None:
        named = collection_named(filters.collection, paths.values())
        if named != collection_path(filters.collection):
            log.info("--collection '%s' is the collection '%s'", excerpt(filters.collection), excerpt(named))
        filters = dataclasses.replace(filters, collection=named)
    listed = []
    for item in merged.library.items:
        if not item.is_regular or item.deleted:
            continue
        rows = rows_of.get(item.key, [])
        curated = [row for row in rows if row.curated]
        listed.append(
            Listed(
                zotero_key=item.key,
                title=item.title,
                year=item.year,
                venue=rows[0].venue if rows else "",
                item_type=item.item_type,
                authors=tuple(c.display for c in item.creators if c.creator_type == "author"),
                doi=item.doi,
                # the item's own: a page row leaves out the collections the page may not name
                collections=tuple(paths[c] for c in item.collections if c in paths),
                tags=tuple(sorted(t.name for t in item.tags)),
                curated=bool(curated),
                categories=tuple(dict.fromkeys(row.category for row in curated)),
            )
        )
    listed.sort(key=lambda i: (i.title.casefold(), i.zotero_key))
    return [item for item in listed if filters.keep(item)]


def collection_named(wanted: str, paths: Iterable[str]) -> str:
    """The collection path `wanted` names, as a person types it: the path itself, whatever its case and
    its spacing around ` / ` (`gpu/kernels`), else the one path that ends with it (`Kernels` for
    `GPU / Kernels`). A ConfigError says when no path or several paths end with it."""
    key = loose(wanted)
    known = sorted(set(paths))
    for found in ([p for p in known if p == collection_path(wanted)], [p for p in known if loose(p) == key]):
        if len(found) == 1:
            return found[0]
    ending = [p for p in known if loose(p).endswith(" / " + key)]
    if len(ending) == 1:
        return ending[0]
    shown = excerpt(wanted)
    if not ending:
        raise ConfigError(f"--collection '{shown}': no collection is named so or ends with it")
    listed = ", ".join(f"'{excerpt(p)}'" for p in ending[:5]) + (", …" if len(ending) > 5 else "")
    raise ConfigError(
        f"--collection '{shown}' names {len(ending)} collections ({listed}): give more of its path"
    )


def loose(path: str) -> str:
    """A collection path as `collection_named` compares it: one Unicode form, case folded, one space
    inside a name and ` / ` between names."""
    names = category_name(path).casefold().split("/")
    return " / ".join(" ".join(name.split()) for name in names if name.strip())


def format_line(item: Listed) -> str:
    """An item's line: key, year, title — venue [collections] (curated or not)."""
    mark = f"curated in {', '.join(item.categories)}" if item.curated else "uncurated"
    venue = f" — {item.venue}" if item.venue else ""
    where = f" [{'; '.join(item.collections)}]" if item.collections else ""
    return f"{item.zotero_key}  {item.year or '    '}  {item.title}{venue}{where}  ({mark})"


def summary(items: Sequence[Listed]) -> str:
    uncurated = sum(not i.curated for i in items)
    return f"{len(items)} item{'' if len(items) == 1 else 's'}, {uncurated} not curated"
