"""The change digest, `CHANGES.md`, and the feed's entries: what each sync changed on the page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .. import digest
from ..config import Config
from ..errors import ExportError
from ..export import Page
from ..outputs import read_regular, write_atomically
from ..store import Store


def changes_path(config: Config) -> Path:
    return config.exports.dir / "CHANGES.md"


@dataclass(frozen=True, slots=True)
class PageChanges:
    """What this sync changed on the page, worked out before the exporters run (the feed shows it)."""

    previous: tuple[digest.Row, ...] | None  # the last sync's rows; None before the first
    current: tuple[digest.Row, ...]
    when: datetime
    feed: tuple[digest.News, ...]  # the feed's entries after this sync, newest first


def page_changes(store: Store, page: Page, clock: digest.Clock = digest.utc_now) -> PageChanges:
    stored = store.catalogue_rows()
    previous = None if stored is None else tuple(digest.Row(*row) for row in stored)
    when = clock()
    fresh = digest.news(previous, page.rows, when) if previous is not None else ()
    return PageChanges(previous, digest.rows_of(page.rows), when, digest.feed_after(fresh, feed_of(store)))


def feed_of(store: Store) -> tuple[digest.News, ...]:
    """The feed's entries the store keeps, newest first."""
    return tuple(digest.News(*entry) for entry in store.feed_entries())


def record_changes(config: Config, store: Store, changes: PageChanges) -> list[tuple[Path, bool]]:
    """Prepend what this sync changed on the page to CHANGES.md, then remember the page (and the feed)
    for the next sync. The first sync only records the baseline; a sync that changed nothing leaves the
    file alone. The rows are replaced after the file is written, so a failed write is retried by the
    next sync."""
    previous, current = changes.previous, changes.current
    written = []
    found = digest.diff(previous, current) if previous is not None else None
    if found:
        path = changes_path(config)
        try:
            old = (read_regular(path) or b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportError(f"cannot read {path}: {exc}") from exc
        text = digest.prepend(digest.render(found, changes.when), old)
        written.append((path, write_atomically(path, text)))
    if previous != current:
        feed = [
            (n.kind, n.identity, n.when, n.title, n.venue, n.year, n.why, n.categories, n.url, n.zotero_key)
            for n in changes.feed
        ]
        store.replace_catalogue_rows((row.astuple() for row in current), feed)
    return written
