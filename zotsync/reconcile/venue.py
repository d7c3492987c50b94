"""The short venue a page shows for a Zotero item when the curator gave none."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .. import normalize
from ..errors import ConfigError
from ..model import FoundMetadata, Item
from ..yamlio import load_yaml

PROCEEDINGS_TYPES = frozenset({"conferencePaper", "bookSection"})


@dataclass(frozen=True, slots=True)
class VenueTable:
    """Abbreviation → phrases naming that venue, compared in normalised form."""

    phrases: tuple[tuple[str, str], ...] = ()  # (normalised phrase, abbreviation), longest phrase first
    # names → abbreviation: a library names a few hundred venues across its thousands of items
    _found: dict[tuple[str, ...], str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    _short: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Sequence[str]]) -> VenueTable:
        pairs = {normalize.title(p): abbr for abbr, phrases in table.items() for p in phrases}
        return cls(tuple(sorted(pairs.items(), key=lambda pair: (-len(pair[0]), pair[0]))))

    def short_name(self, name: str) -> str:
        """The table's short name that `name` is, case aside (`osdi`, DBLP's stream key, is OSDI); empty
        when it names none."""
        if not self._short:
            self._short.update({abbr.casefold(): abbr for _, abbr in self.phrases})
        return self._short.get(name.strip().casefold(), "")

    def abbreviation(self, *names: str) -> str:
        found = self._found.get(names)
        if found is None:
            found = self._found[names] = self._abbreviation(names)
        return found

    def _abbreviation(self, names: tuple[str, ...]) -> str:
        for name in names:
            for acronym in re.findall(r"\(([A-Za-z][A-Za-z0-9]*)\)", name):  # "… (CGO)"
                if abbr := self.short_name(acronym):
                    return abbr
        folded = [f" {normalize.title(name)} " for name in names]
        return next((abbr for phrase, abbr in self.phrases if any(f" {phrase} " in f for f in folded)), "")


def load_venue_table(extra: Path | None = None) -> VenueTable:
    """The shipped table, with the user's entries (same shape) taking precedence."""
    shipped = resources.files("zotsync") / "data" / "venues.yaml"
    with resources.as_file(shipped) as path:
        table: dict[str, Any] = dict(load_yaml(path, "venue table"))
    if extra is not None:
        user = load_yaml(extra, "venue table")
        if not isinstance(user, dict) or not all(
            isinstance(v, list) and all(isinstance(p, str) for p in v) for v in user.values()
        ):
            raise ConfigError(f"{extra}: a venue table maps each abbreviation to a list of phrases")
        table.update(user)
    return VenueTable.from_mapping(table)


def derive_venue(
    item: Item, table: VenueTable | None = None, year: str | None = None, source: str | None = None
) -> str:
    """`PLDI'21` for proceedings the table knows; else `<where it appeared> · <year>`, or whichever of the
    two is known; empty when neither is. `year` and `source` (`Item.venue_source`) are the item's, when
    the caller has them already."""
    source = item.venue_source if source is None else source
    year = item.year if year is None else year
    if table is not None and item.item_type in PROCEEDINGS_TYPES:
        abbr = table.abbreviation(
            item.get("proceedingsTitle"), item.get("conferenceName"), item.get("bookTitle")
        )
        if abbr:
            return _shown(abbr, "", year)
    return _shown("", source, year)


def enriched_venue(found: FoundMetadata, table: VenueTable | None, year: str) -> str:
    """The venue a metadata service found, as the page shows it: `OSDI'20` when the table knows its short
    name (DBLP's stream key `osdi`, its venue `OSDI`, or a phrase of a proceedings title), else
    `<venue> · <year>`. `year` is the item's, for a venue whose service gave none."""
    year = found.venue_year or year
    abbr = ""
    if table is not None and found.published:
        abbr = table.short_name(found.venue_key) or table.short_name(found.venue)
        abbr = abbr or table.abbreviation(found.venue)
    return _shown(abbr, found.venue, year)


def _shown(abbr: str, venue: str, year: str) -> str:
    """`OSDI'20` from a short name, else `<venue> · <year>`, or whichever of the two is known."""
    if abbr:
        return f"{abbr}'{year[2:]}" if year else abbr
    if venue and year:
        return f"{venue} · {year}"
    return venue
