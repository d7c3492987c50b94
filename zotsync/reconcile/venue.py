"""The short venue a page shows for a Zotero item, when the curator gave none."""

from __future__ import annotations

from ..model import Item


def derive_venue(item: Item) -> str:
    """`<where it appeared> · <year>`, or just the one that is known; empty when neither is."""
    source, year = item.venue_source, item.year
    if source and year:
        return f"{source} · {year}"
    return source
