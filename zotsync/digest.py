"""The change digest: what one sync changed on the page (CHANGES.md is written from it by
`export.changelog`), and the feed's entries.

Pure: page rows of the previous sync and of this one in, a `Digest` (or None when nothing a reader
cares about changed) out. An entry is followed across syncs by its Zotero key,
else by its normalised curated title; a curated entry that gains or loses its Zotero match (a new pin, a
trashed item) keeps its curated title as an alias, so it is not reported as removed and added again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from . import normalize
from .model import Placement

Clock = Callable[[], datetime]  # injectable, so tests can fix the section's date
# What `status` and CHANGES.md say of a curated paper that lost its Zotero item
GONE = "deleted or trashed in Zotero, or no longer matched: its venue and links from Zotero are gone"


@dataclass(frozen=True, slots=True)
class Row:
    """One placement as the digest remembers it (and as the store keeps it between syncs)."""

    identity: str  # "key:<Zotero key>", else "title:<normalised curated title>"
    alias: str  # the normalised curated title of a curated row, else ""
    category: str
    title: str
    status: str

    def astuple(self) -> tuple[str, str, str, str, str]:
        return (self.identity, self.alias, self.category, self.title, self.status)


@dataclass(frozen=True, slots=True)
class Digest:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    recategorised: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()  # title, old, new
    newly_read: tuple[str, ...] = ()
    retitled: tuple[tuple[str, str], ...] = ()  # old title, new title
    # What a change of the page's settings did, said once: each setting's old and new value, then what
    # it changed on the page. Those changes are not reading, nor anything Zotero or the catalogue did.
    settings: tuple[tuple[str, str, str], ...] = ()  # setting, old value, new value
    settings_effect: str = ""
    # Curated entries that lost their Zotero item (deleted or trashed there, or no longer matched): still
    # on the page, without the venue, links and tags Zotero gave them.
    unmatched: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(
            (
                self.settings,
                self.added,
                self.removed,
                self.recategorised,
                self.newly_read,
                self.retitled,
                self.unmatched,
            )
        )


def rows_of(placements: Sequence[Placement]) -> tuple[Row, ...]:
    """The page's rows with their identities; a curated row's alias is its curated title."""
    rows = []
    for placement in placements:
        alias = normalize.title(placement.curated_title)
        key = placement.zotero_key
        identity = f"key:{key}" if key else f"title:{alias or normalize.title(placement.title)}"
        rows.append(Row(identity, alias, placement.category, placement.title, placement.status))
    return tuple(rows)


@dataclass(slots=True)
class _Entry:
    """All rows of one entry in one sync: its placements, in page order."""

    rows: list[Row] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.rows[0].title

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.category for r in self.rows))

    @property
    def read(self) -> bool:
        return any(r.status == "read" for r in self.rows)

    @property
    def aliases(self) -> set[str]:
        return {r.alias for r in self.rows} - {""}


def _group(rows: Iterable[Row]) -> dict[str, _Entry]:
    entries: dict[str, _Entry] = {}
    for row in rows:
        entries.setdefault(row.identity, _Entry()).rows.append(row)
    return entries


@dataclass(frozen=True, slots=True)
class _Comparison:
    """Two syncs' pages, entry by entry: who is new, who left, and who is on both (old, new)."""

    before: dict[str, _Entry]
    after: dict[str, _Entry]
    added: list[str]
    removed: list[str]
    pairs: list[tuple[str, str]]  # in the new page's order


def _compare(previous: Sequence[Row], current: Sequence[Row]) -> _Comparison:
    before, after = _group(previous), _group(current)
    pairs = [(i, i) for i in after if i in before]
    gone = [i for i in before if i not in after]
    new = [i for i in after if i not in before]
    # A curated entry whose identity changed (matched ↔ unmatched, re-pinned) is one entry: pair it by
    # its alias. One that merged into an entry still on the page (an unmatched entry now pinned to an
    # item that was listed on its own) is neither removed nor added.
    new_by_alias = _unique_by_alias(new, after)
    before_aliases = {a for e in before.values() for a in e.aliases}
    after_aliases = {a for e in after.values() for a in e.aliases}
    removed = []
    for old_id in gone:
        partner = next((new_by_alias[a] for a in sorted(before[old_id].aliases) if a in new_by_alias), None)
        if partner is not None and partner in new:
            pairs.append((old_id, partner))
            new.remove(partner)
        elif not before[old_id].aliases & after_aliases:
            removed.append(old_id)
    added = [i for i in new if not after[i].aliases & before_aliases]
    order = {identity: n for n, identity in enumerate(after)}
    pairs.sort(key=lambda pair: order[pair[1]])
    return _Comparison(before, after, added, removed, pairs)


def _digest(c: _Comparison) -> Digest | None:
    before, after = c.before, c.after
    digest = Digest(
        added=tuple(after[i].title for i in c.added),
        removed=tuple(before[i].title for i in c.removed),
        recategorised=tuple(
            (after[n].title, before[o].categories, after[n].categories)
            for o, n in c.pairs
            if set(before[o].categories) != set(after[n].categories)
        ),
        newly_read=tuple(after[n].title for o, n in c.pairs if after[n].read and not before[o].read),
        retitled=tuple(
            (before[o].title, after[n].title) for o, n in c.pairs if before[o].title != after[n].title
        ),
        unmatched=tuple(after[n].title for o, n in c.pairs if _matched(o) and not _matched(n)),
    )
    return digest or None


def _matched(identity: str) -> bool:
    """Whether an entry of this identity is matched to a Zotero item."""
    return identity.startswith("key:")


# -- the feed: the same facts, one entry per paper added or newly read ------------------------------------

FEED_SIZE = 50  # the entries feed.xml keeps (newest first); CHANGES.md keeps the whole history


@dataclass(frozen=True, slots=True)
class News:
    """One paper added to the page, or newly read, as the feed reports it (and the store keeps it)."""

    kind: str  # "added" or "read"
    identity: str  # as Row.identity
    when: str  # UTC, ISO 8601: `2026-12-02T09:30:00Z`
    title: str
    venue: str
    year: str
    why: str
    categories: tuple[str, ...]
    url: str  # the paper's link (its URL, else its DOI's), "" when none
    zotero_key: str


def diff_and_news(
    previous: Sequence[Row], placements: Sequence[Placement], when: datetime, current: Sequence[Row]
) -> tuple[Digest | None, tuple[News, ...]]:
    """What changed between two syncs' pages (None when nothing did: a reorder alone is no change), and
    the news of it: the papers this
    sync added to the page or saw read for the first time, in page order (added first) — the Added and
    Newly read groups of the digest, with what a reader of the feed wants to know. One comparison serves
    both (at 100k rows it costs half a second)."""
    c = _compare(previous, current)
    return _digest(c), _news_of(c, current, placements, when)


def _news_of(
    c: _Comparison, current: Sequence[Row], placements: Sequence[Placement], when: datetime
) -> tuple[News, ...]:
    first: dict[str, Placement] = {}
    for row, placement in zip(current, placements, strict=True):
        first.setdefault(row.identity, placement)
    stamp = utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")
    read = [n for o, n in c.pairs if c.after[n].read and not c.before[o].read]
    return tuple(
        _news(kind, identity, stamp, first[identity], c.after[identity].categories)
        for kind, identities in (("added", c.added), ("read", read))
        for identity in identities
    )


def _news(kind: str, identity: str, when: str, row: Placement, categories: tuple[str, ...]) -> News:
    doi = normalize.doi_name(row.doi)
    url = row.url.strip() or (f"https://doi.org/{doi}" if doi else "")
    return News(
        kind, identity, when, row.title, row.venue, row.year, row.why, categories, url, row.zotero_key
    )


def feed_after(fresh: Sequence[News], kept: Sequence[News]) -> tuple[News, ...]:
    """The feed's entries after a sync: this sync's news first, then the ones kept, at most FEED_SIZE."""
    return (*fresh, *kept)[:FEED_SIZE]


def setting_change(
    old: Mapping[str, Sequence[str] | str],
    new: Mapping[str, Sequence[str] | str],
    before: Sequence[Row],
    after: Sequence[Row],
) -> tuple[tuple[tuple[str, str, str], ...], str]:
    """Each setting that changed (name, old value, new value), and what the change did to the page —
    `before` is this sync's page under the old settings, `after` under the new ones."""
    changed = tuple(
        (name, _value(old.get(name, "")), _value(value))
        for name, value in new.items()
        if old.get(name) != value
    )
    if not changed:
        return (), ""
    was, now = _group(before), _group(after)
    both = [i for i in now if i in was]
    effects = {
        "now read": sum(now[i].read and not was[i].read for i in both),
        "now unread": sum(was[i].read and not now[i].read for i in both),
        "joined the page": sum(i not in was for i in now),
        "left the page": sum(i not in now for i in was),
    }
    said = ", ".join(f"{count:,} {what}" for what, count in effects.items() if count)
    return (
        changed,
        f"on the page: {said or 'no entry changed'} (by the settings, not by reading or in Zotero)",
    )


def _value(value: Sequence[str] | str) -> str:
    return value if isinstance(value, str) else ", ".join(value) or "—"


def _unique_by_alias(identities: Iterable[str], entries: dict[str, _Entry]) -> dict[str, str]:
    by_alias: dict[str, list[str]] = defaultdict(list)
    for identity in identities:
        for alias in entries[identity].aliases:
            by_alias[alias].append(identity)
    return {alias: ids[0] for alias, ids in by_alias.items() if len(ids) == 1}


def utc(when: datetime) -> datetime:
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)
