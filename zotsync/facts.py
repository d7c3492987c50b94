"""What the page derives from one item alone, computed once: when the store writes the item, or on the fly
for a library that does not come from the store (or whose stored facts another zotsync computed).

`item_facts` is the one definition; the store keeps its result beside each item's page row together with
`FACTS_VERSION`, and trusts stored facts only at this version. Change what `item_facts` computes (or any
function it calls) and bump FACTS_VERSION: `tests/test_facts.py` records a digest of their code and fails
until both are updated (`ItemFacts`, the shape, is in model.py, which every layer shares), so a store
never serves facts an older derivation computed.
"""

from __future__ import annotations

import unicodedata

from . import normalize
from .model import Item, ItemFacts

FACTS_VERSION = 3  # 3: a book's venue is its publisher, a thesis's its university, a report's its institution


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
