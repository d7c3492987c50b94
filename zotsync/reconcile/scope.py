"""What reaches the page: a pure step right after reconcile, so that every format shows the same rows.

`reconcile` places every item of the library (what `status`, `list` and the curator's commands need);
the page keeps the rows its settings choose:

- `scope: curated` keeps the categories the catalogue names: their curated entries, and the items of
  the collections they name (an item is placed by its own collection path, so a subcollection shows
  only when the catalogue names it too);
- `exclude_collections` and `exclude_tags` keep an item off the page wherever it is placed: an item in
  an excluded collection (or below it; `Unfiled` names the items in none) or carrying an excluded tag;
- a curated entry always stays: the curator put it there;
- nothing private reaches a page through a row that stays: an excluded collection's path leaves every
  row's `collections`, and `hide_tags` and `exclude_tags` leave every row's tags (the Why fallback, the
  CSV's `tags`, the tags page, the note pages);
- the same rules say which items enrichment may ask a metadata service about (`audience`): the page's
  own first, never one that only excluded collections or tags hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model import Placement, collection_path, in_collections
from .merge import UNFILED


@dataclass(frozen=True, slots=True)
class PageScope:
    scope: str = "library"  # library | curated
    categories: frozenset[str] = frozenset()  # the catalogue's categories (what `curated` keeps)
    exclude_collections: tuple[str, ...] = ()
    exclude_tags: frozenset[str] = frozenset()
    hide_tags: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        scope: str,
        categories: Iterable[str],
        exclude_collections: Sequence[str] = (),
        exclude_tags: Iterable[str] = (),
        hide_tags: Iterable[str] = (),
    ) -> PageScope:
        return cls(
            scope,
            frozenset(categories),
            tuple(exclude_collections),
            frozenset(exclude_tags),
            frozenset(hide_tags),
        )

    @property
    def everything(self) -> bool:
        """Whether the page is every row as reconcile placed it."""
        return self.scope == "library" and not (
            self.exclude_collections or self.exclude_tags or self.hide_tags
        )

    @property
    def excluded_paths(self) -> list[str]:
        return [collection_path(path) for path in self.exclude_collections]

    def excludes(self, row: Placement, excluded: Sequence[str]) -> bool:
        """Whether `exclude_collections` (as `excluded_paths`) or `exclude_tags` keep `row`'s item off the
        page (a curated row stays all the same)."""
        if excluded and (
            in_collections(row.collections, excluded) or (UNFILED in excluded and not row.collections)
        ):
            return True
        return bool(self.exclude_tags) and not self.exclude_tags.isdisjoint(row.tags)


def page_rows(rows: Sequence[Placement], scope: PageScope) -> tuple[Placement, ...]:
    """The rows of `rows` the page shows, in their order, without the excluded collections' paths and
    the hidden and excluded tags."""
    if scope.everything:
        return tuple(rows)
    curated_only = scope.scope == "curated"
    excluded = scope.excluded_paths
    hidden = scope.hide_tags | scope.exclude_tags  # a tag that keeps items private is itself private
    kept: list[Placement] = []
    for row in rows:
        if not row.curated:
            if curated_only and row.category not in scope.categories:
                continue
            if scope.excludes(row, excluded):
                continue
        if hidden and not hidden.isdisjoint(row.tags):
            row = row._replace(tags=tuple(tag for tag in row.tags if tag not in hidden))
        if excluded and in_collections(row.collections, excluded):  # a curated row in a private one
            row = row._replace(
                collections=tuple(c for c in row.collections if not in_collections((c,), excluded))
            )
        kept.append(row)
    return tuple(kept)


@dataclass(frozen=True, slots=True)
class Audience:
    """The items of the library a metadata service may be asked about, and which first."""

    first: tuple[str, ...] = ()  # the page's items, in page order
    never: frozenset[str] = frozenset()  # items only excluded collections or tags hold

    def order(self, keys: Iterable[str]) -> list[str]:
        """`keys` without those never asked about: the page's first, in its order, then the rest in
        theirs."""
        wanted = [key for key in keys if key not in self.never]
        rank = {key: position for position, key in enumerate(self.first)}
        return sorted(wanted, key=lambda key: rank.get(key, len(rank)))


def audience(rows: Sequence[Placement], scope: PageScope) -> Audience:
    """Who may be asked about what, from every row reconcile placed (`rows`): the items on the page
    first; never an item that `exclude_collections` or `exclude_tags` keep off it (and no curated row
    puts back). An item merely outside a curated page's categories may be asked about after the page's."""
    shown = dict.fromkeys(row.zotero_key for row in page_rows(rows, scope) if row.zotero_key)
    excluded = scope.excluded_paths
    private = {
        row.zotero_key
        for row in rows
        if row.zotero_key and row.zotero_key not in shown and scope.excludes(row, excluded)
    }
    return Audience(tuple(shown), frozenset(private))
