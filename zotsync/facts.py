"""What the page derives from one item alone, computed once: when the store writes the item, or on the fly
for a library that does not come from the store (or whose stored facts another zotsync computed).

`item_facts` is the one definition; the store keeps its result beside each item's page row together with
`FACTS_VERSION`, and trusts stored facts only at this version. Change what `item_facts` computes (or any
function it calls) and bump FACTS_VERSION: `tests/test_facts.py` records a digest of their code and fails
until both are updated, so a store never serves facts an older derivation computed.
"""

from __future__ import annotations

import hashlib
import inspect
import unicodedata
from typing import NamedTuple

from . import model, normalize
from .model import Item

FACTS_VERSION = 3  # 3: a book's venue is its publisher, a thesis's its university, a report's its institution


class ItemFacts(NamedTuple):
    title_key: str  # normalize.title of the title: what the matcher compares and the page sorts by
    year: str
    venue_source: str  # where the work appeared, as Zotero spells it
    authors: tuple[str, ...]  # the creators' display names, in Zotero's order
    doi: str
    url: str
    read: bool  # marked Read by the Reading List plugin (`Read_Status: read` in `extra`)
    doi_key: str  # normalize.doi of the DOI: what the DOI stage and the duplicate search compare


def item_facts(item: Item) -> ItemFacts:
    doi = item.doi
    return ItemFacts(
        normalize.title(item.title),
        item.year,
        item.venue_source,
        tuple(name for c in item.creators if (name := c.display)),
        doi,
        item.url,
        item.extra_field("Read_Status").casefold() == "read",
        normalize.doi(doi),
    )


def stored_version() -> str:
    """The version stored with the facts: FACTS_VERSION and the Unicode database the title folding used
    (NFKC and casefold change with it, so another Python may fold a title otherwise)."""
    return f"{FACTS_VERSION}/unicode-{unicodedata.unidata_version}"


def derivation_digest() -> str:
    """A digest of the code `item_facts` runs (and the tables it reads): it changes whenever the facts may."""
    parts = [
        inspect.getsource(code)
        for code in (
            ItemFacts,
            item_facts,
            model.Creator,
            model.Item.get,
            *(getattr(model.Item, name).fget for name in ("year", "venue_source", "doi", "url")),
            model.Item.extra_field,
            normalize.title,
            normalize._is_kept,
            normalize._kept_symbols,
            normalize._symbols_of,
            normalize.doi,
        )
    ]
    parts += [
        repr(value)
        for value in (
            model.VENUE_FIELDS,
            sorted(model.PUBLISHER_FIELDS.items()),
            model._YEAR.pattern,
            normalize._DOI_PREFIX.pattern,
            normalize._NOT_WORD_OR_SPACE.pattern,
            sorted(normalize._KEPT_CATEGORIES),
            sorted(normalize._SEPARATORS),
            sorted(normalize._DASHES.items()),
            sorted(normalize._ASCII_TITLE.items()),
        )
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
