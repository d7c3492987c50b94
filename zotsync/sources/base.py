"""What every Zotero source provides: the changes since a library version, as model objects."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import SourceError
from ..model import Changes, Collection, Item


class Sink(Protocol):
    """Where a source may hand over items while it still reads (`Store.landing`), so that a large
    library is never held in memory at once. Nothing lands before the pull's `Changes` do."""

    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        """Items of this pull (the last copy of one handed over twice wins)."""
        ...

    def start_over(self) -> None:
        """Forget every item handed over so far: the source reads the library again."""
        ...


class Source(Protocol):
    @property
    def id(self) -> str:
        """Names the library; a store filled from another library is rebuilt from scratch."""
        ...

    @property
    def requests(self) -> int:
        """HTTP requests sent so far (0 for sources that read local files)."""
        ...

    def changes(self, since: int | None, sink: Sink | None = None) -> Changes | None:
        """Everything changed after library version `since` (all of it when None); None when nothing
        changed. Raises SourceError (exit 1) or ConfigError (exit 2) with one clear line. A source may
        hand some items to `sink` as it reads them instead of returning them in `Changes.items`."""
        ...


def is_collection(obj: Mapping[str, Any]) -> bool:
    data = obj.get("data", obj)
    return "name" in data and "parentCollection" in data


def split_objects(objects: Iterable[Mapping[str, Any]]) -> tuple[list[Item], list[Collection]]:
    """API JSON objects (items and collections mixed) → model objects."""
    items: list[Item] = []
    collections: list[Collection] = []
    for obj in objects:
        if is_collection(obj):
            collections.append(Collection.from_api(obj))
        else:
            items.append(Item.from_api(obj))
    return items, collections


def warn_repaired(keys: Iterable[str]) -> None:
    """Once per pull: the objects whose text held lone surrogates (`model.without_lone_surrogates`)."""
    shown = sorted(set(keys))
    if not shown:
        return
    named = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    logging.getLogger("zotsync").warning(
        "%d %s text that is not valid Unicode (half of an emoji, a lone UTF-16 surrogate), kept with "
        "U+FFFD (\ufffd) in its place: %s",
        len(shown),
        "object holds" if len(shown) == 1 else "objects hold",
        named,
    )


class NoTextAccess(SourceError):
    """The source may not be asked for the attachments' full text (an API key without access to the
    library's files): the sync goes on without it."""


@dataclass(frozen=True, slots=True)
class TextListing:
    """The attachments whose full text a source holds (or, not `complete`, whose text changed since a
    listing), each with the stamp of its text, at library version `version` (None: a source without
    one)."""

    stamps: Mapping[str, str]
    complete: bool
    version: int | None = None
