"""What reaches the page: a pure step right after reconcile, so that every format shows the same rows.

`reconcile` places every item of the library (what `status`, `list` and the curator's commands need);
the page keeps the rows its settings choose:

- `scope: curated` keeps the categories the catalogue names: their curated entries, and the items of
  the collections they name (an item is placed by its own collection path, so a subcollection shows
  only when the catalogue names it too);
- `exclude_collections` and `exclude_tags` keep an item off the page wherever it is placed: an item in
  an excluded collection (or below it; `Unfiled` names the items in none) or carrying an excluded tag;
- a curated entry always stays: the curator put it there;
- `hide_tags` drops tags from every row's tags (the Why fallback, the CSV's `tags`).
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


def page_rows(rows: Sequence[Placement], scope: PageScope) -> tuple[Placement, ...]:
    """The rows of `rows` the page shows, in their order, with the hidden tags dropped."""
    if scope.everything:
        return tuple(rows)
    curated_only = scope.scope == "curated"
    excluded = [collection_path(path) for path in scope.exclude_collections]
    unfiled = UNFILED in excluded
    tags, hidden = scope.exclude_tags, scope.hide_tags
    kept: list[Placement] = []
    for row in rows:
        if not row.curated:
            if curated_only and row.category not in scope.categories:
                continue
            if excluded and (in_collections(row.collections, excluded) or (unfiled and not row.collections)):
                continue
            if tags and not tags.isdisjoint(row.tags):
                continue
        if hidden and not hidden.isdisjoint(row.tags):
            row = row._replace(tags=tuple(tag for tag in row.tags if tag not in hidden))
        kept.append(row)
    return tuple(kept)
