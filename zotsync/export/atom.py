"""feed.xml: an Atom feed of what recent syncs changed on the page, for readers who follow the list in a
feed reader.

One entry per paper added to the page or newly read — the Added and Newly read groups of CHANGES.md —
with its venue, year, why and categories; the store keeps the latest `digest.FEED_SIZE` of them (table
`feed_entries`), CHANGES.md the whole history. feedgen writes the XML. Every id is derived from what it
names (the list's library, an entry's kind, paper and time), and the feed's `updated` is its newest
entry's: a sync that changes nothing writes the same bytes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from feedgen.feed import FeedGenerator

from ..formats import Exporter, Output
from ..labels import Labels
from ..model import Library
from ..text import flatten
from .base import ExportInput, LinkPlan, Page

if TYPE_CHECKING:
    from ..digest import News

PAGE = "feed.xml"
EMPTY_FEED_UPDATED = datetime(1970, 1, 1, tzinfo=UTC)  # a feed with no entry yet has no date of its own
_NOT_XML = re.compile("[\ufffe\uffff]")  # non-characters XML may not hold (controls: `flatten` drops them)


def _text(value: str) -> str:
    return _NOT_XML.sub("", flatten(value))


def feed_id(page: Page, library: Library) -> uuid.UUID:
    """The feed's id: the Zotero library's, else the page title's (a UUID derived from either)."""
    name = f"{library.library_type}:{library.library_id}" if library.library_id else f"title:{page.title}"
    return uuid.uuid5(uuid.NAMESPACE_URL, f"zotsync:feed:{name}")


def render_atom(page: Page, library: Library, feed: Sequence[News], plan: LinkPlan) -> str:
    """The feed. Its links point where the site serves the files (`plan.site`): absolute, with a
    `rel="self"` link, when the site's URL is known; else relative to the feed's own address."""
    labels = page.labels
    base = feed_id(page, library)
    generator = FeedGenerator()
    generator.id(base.urn)
    title = _text(page.title) or _text(labels.title)
    generator.title(title)
    generator.author({"name": title})
    if description := _text(page.description):
        generator.subtitle(description)
    generator.language(_text(labels.html_lang) or "en")
    generator.generator("zotsync")
    if plan.site.url:
        generator.link(href=_NOT_XML.sub("", plan.absolute(PAGE)), rel="self")
    shown = next((plan.pages[name] for name in ("html", "md") if name in plan.pages), "")
    if shown:
        generator.link(href=_address(plan, shown), rel="alternate")
    generator.updated(_when(feed[0].when) if feed else EMPTY_FEED_UPDATED)
    authors: dict[str, tuple[str, ...]] = {}
    retracted = {row.zotero_key for row in page.rows if row.retracted and row.zotero_key}
    for row in page.rows:
        if row.zotero_key and row.authors:
            authors.setdefault(row.zotero_key, row.authors)
    for news in feed:
        note = plan.notes.get(news.zotero_key, "") if news.zotero_key else ""
        address = note and _address(plan, note)
        mark = news.zotero_key in retracted  # known retracted now, whenever the news was made
        _entry(generator, base, news, labels, authors.get(news.zotero_key, ()), address, mark)
    return generator.atom_str(pretty=True).decode("utf-8")


def _address(plan: LinkPlan, path: str) -> str:
    """The link to the file `path` (relative to `exports.dir`) as the feed writes it: its URL on the
    site when that is known, else relative to the feed, at the address the site serves it."""
    return _NOT_XML.sub("", plan.absolute(path) or plan.served(PAGE, path))


def _entry(
    generator: FeedGenerator,
    base: uuid.UUID,
    news: News,
    labels: Labels,
    authors: Sequence[str],
    note: str,
    retracted: bool = False,
) -> None:
    entry = generator.add_entry(order="append")
    entry.id(uuid.uuid5(base, f"{news.kind}\n{news.identity}\n{news.when}").urn)
    kind = labels.feed_added if news.kind == "added" else labels.feed_read
    mark = f" {_text(labels.retracted)}" if retracted else ""
    entry.title(f"{_text(kind)}: {_text(news.title) or _text(labels.no_title)}{mark}")
    entry.updated(_when(news.when))
    for author in authors:
        if name := _text(author):
            entry.author({"name": name})
    venue = news.venue or labels.no_venue
    parts = [venue + (f" · {news.year}" if news.year and news.year not in venue else ""), news.why]
    parts.append(", ".join(news.categories))
    entry.content(" — ".join(shown for part in parts if (shown := _text(part))), type="text")
    for category in news.categories:
        if term := _text(category):
            entry.category(term=term)
    url = flatten(news.url).strip()
    if url.lower().startswith(("https://", "http://")):  # a feed reader opens it: the web only
        entry.link(href=_NOT_XML.sub("", url), rel="alternate")
    if note:  # the paper's note page on the site
        entry.register_extension("zotsync", _RelatedLinks, atom=True, rss=False)
        entry.zotsync.links.append((note, _text(labels.link_note)))


class _RelatedLinks:
    """A feedgen entry extension that writes `rel="related"` links: feedgen 1.0 drops the `rel` and
    `title` of an entry's own links (its `atom_entry` reads them from the element it just made)."""

    def __init__(self) -> None:
        self.links: list[tuple[str, str]] = []

    def extend_atom(self, entry: Any) -> Any:
        from feedgen.util import xml_elem

        for href, title in self.links:
            xml_elem("link", entry, href=href, rel="related", title=title)
        return entry

    def extend_rss(self, item: Any) -> Any:
        return item


def _when(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _outputs(given: ExportInput) -> Iterator[Output]:
    yield Output(PurePosixPath(PAGE), render_atom(given.page, given.library, given.feed, given.plan))


EXPORTER = Exporter(
    name="atom",
    summary="an Atom feed of the papers recent syncs added to the page or saw read",
    page=PAGE,
    render=_outputs,
)
