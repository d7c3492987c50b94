"""The change digest, `CHANGES.md`, and the feed's entries: what each sync changed on the page.

A change of the page's settings (the read and unread tags, the scope, the exclusions) — or of their
defaults, by an upgrade — moves rows on and off the page and between read and unread without anyone
reading anything or touching Zotero. So the store remembers the settings beside the page's rows; when
they differ, the digest compares the last page with this sync's page under the *old* settings (what
Zotero and the catalogue changed), and says once, under Settings, what the new settings changed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .. import digest
from ..config import Config, ExportsConfig, ReconcileConfig
from ..errors import ExportError
from ..export import Page
from ..model import Placement
from ..outputs import read_regular, write_atomically
from ..store import Store

Settings = dict[str, list[str] | str]
# This sync's page rows under other settings (the old ones), for the digest to tell them apart.
RowsUnder = Callable[[Config], Sequence[Placement]]

# Their defaults before the store remembered the settings (zotsync 0.2): a store without settings was
# synced with these, unless the config sets a value of its own.
EARLIER_DEFAULTS: Settings = {
    "reconcile.read_tags": ["status/read", "_read", "✅"],
    "reconcile.unread_tags": [],
    "exports.scope": "library",
    "exports.exclude_collections": [],
    "exports.exclude_tags": [],
}


# The settings that name the owner's private collections and tags: CHANGES.md says that they changed and
# how many names they hold, never the names; the manifest published beside the exports leaves them out
# (a store that takes it over reads them from its own config).
PRIVATE_SETTINGS = ("exports.exclude_collections", "exports.exclude_tags")


def public_settings(stored: str | None) -> str | None:
    """The remembered settings (JSON, as `page_changes` makes them) without the private ones."""
    try:
        found = json.loads(stored) if stored else None
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    shown = {name: value for name, value in found.items() if name not in PRIVATE_SETTINGS}
    return json.dumps(shown, ensure_ascii=False, sort_keys=True)


def _shown(change: tuple[str, str, str], old: Settings, new: Settings) -> tuple[str, str, str]:
    """A setting change as CHANGES.md shows it: a private one as the number of names it holds."""
    name = change[0]
    if name not in PRIVATE_SETTINGS:
        return change
    return (name, _names(old.get(name, [])), _names(new.get(name, [])))


def _names(value: list[str] | str) -> str:
    count = len(value) if isinstance(value, list) else int(bool(value))
    return f"{count} name{'' if count == 1 else 's'} (not shown)"


def changes_path(config: Config) -> Path:
    return config.exports.dir / "CHANGES.md"


def page_settings(config: Config) -> Settings:
    """The settings that decide which rows the page holds and whether each is read."""
    return _settings(config.reconcile, config.exports)


def _settings(reconcile: ReconcileConfig, exports: ExportsConfig) -> Settings:
    return {
        "reconcile.read_tags": list(reconcile.read_tags),
        "reconcile.unread_tags": list(reconcile.unread_tags),
        "exports.scope": exports.scope,
        "exports.exclude_collections": list(exports.exclude_collections),
        "exports.exclude_tags": list(exports.exclude_tags),
    }


DEFAULTS = _settings(ReconcileConfig(), ExportsConfig())  # this zotsync's defaults of those settings


def with_settings(config: Config, settings: Mapping[str, list[str] | str]) -> Config:
    """`config` with `settings` in place of its own (a name it lacks keeps the config's value)."""
    current = page_settings(config)
    value = {name: settings.get(name, current[name]) for name in current}
    return dataclasses.replace(
        config,
        reconcile=dataclasses.replace(
            config.reconcile,
            read_tags=tuple(value["reconcile.read_tags"]),
            unread_tags=tuple(value["reconcile.unread_tags"]),
        ),
        exports=dataclasses.replace(
            config.exports,
            scope=str(value["exports.scope"]),
            exclude_collections=tuple(value["exports.exclude_collections"]),
            exclude_tags=tuple(value["exports.exclude_tags"]),
        ),
    )


def remembered_settings(stored: str | None, config: Config) -> Settings:
    """The settings the remembered rows were made with. A store from before they were remembered was
    synced with the earlier defaults wherever the config now has the current default (an upgrade changed
    it), and with the config's own value elsewhere."""
    current = page_settings(config)
    if stored:
        try:
            found = json.loads(stored)
            if isinstance(found, dict):
                return {name: found.get(name, value) for name, value in current.items()}
        except ValueError:
            pass
        return current  # unreadable: no setting change to report
    return {
        name: EARLIER_DEFAULTS[name] if value == DEFAULTS[name] else value for name, value in current.items()
    }


@dataclass(frozen=True, slots=True)
class PageChanges:
    """What this sync changed on the page, worked out before the exporters run (the feed shows it)."""

    previous: tuple[digest.Row, ...] | None  # the last sync's rows; None before the first
    current: tuple[digest.Row, ...]
    when: datetime
    found: digest.Digest | None  # what CHANGES.md reports
    feed: tuple[digest.News, ...]  # the feed's entries after this sync, newest first
    settings: str  # the page's settings (JSON), remembered with its rows


def page_changes(
    config: Config,
    store: Store,
    page: Page,
    clock: digest.Clock = digest.utc_now,
    rows_under: RowsUnder | None = None,
) -> PageChanges:
    """What changed since the last sync, as Zotero and the catalogue changed it. When the page's
    settings changed too, this sync's page under the old settings (`rows_under`) tells the two apart:
    what the settings did is said once, under Settings, and is no news for the feed."""
    current = digest.rows_of(page.rows)
    state = store.sync_state
    stored = store.catalogue_rows()
    previous = None if stored is None else tuple(digest.Row(*row) for row in stored)
    settings = page_settings(config)
    when = clock()
    found: digest.Digest | None = None
    fresh: tuple[digest.News, ...] = ()
    if previous is not None:
        old = remembered_settings(state.page_settings, config)
        if old != settings and rows_under is not None:
            placements = rows_under(with_settings(config, old))
            before = digest.rows_of(placements)
            found, fresh = digest.diff_and_news(previous, placements, when, before)
            changed, effect = digest.setting_change(old, settings, before, current)
            changed = tuple(_shown(change, old, settings) for change in changed)
            found = (
                dataclasses.replace(found or digest.Digest(), settings=changed, settings_effect=effect)
                or None
            )
        else:
            found, fresh = digest.diff_and_news(previous, page.rows, when, current)
    feed = digest.feed_after(fresh, feed_of(store))
    remembered = json.dumps(settings, ensure_ascii=False, sort_keys=True)
    return PageChanges(previous, current, when, found, feed, remembered)


def feed_of(store: Store) -> tuple[digest.News, ...]:
    """The feed's entries the store keeps, newest first."""
    return tuple(digest.News(*entry) for entry in store.feed_entries())


def record_changes(
    config: Config, store: Store, changes: PageChanges, dry_run: bool = False
) -> list[tuple[Path, bool]]:
    """Prepend what this sync changed on the page to CHANGES.md, then remember the page (with the
    settings that made it, and the feed) for the next sync. The first sync records the baseline and
    writes a CHANGES.md that says so (or keeps one that is there), so that a link to it resolves; a sync
    that changed nothing leaves the file alone. The rows are replaced after the file is written, so a
    failed write is retried by the next sync. `dry_run`: the file is not written (the store is a scratch
    copy)."""
    from ..export import changelog

    written = []
    if changes.found or changes.previous is None:
        path = changes_path(config)
        try:
            old_text = (read_regular(path) or b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportError(f"cannot read {path}: {exc}") from exc
        if changes.found:
            text = changelog.prepend(changelog.render(changes.found, changes.when), old_text)
        else:
            text = changelog.first_text(old_text)
        written.append((path, text != old_text if dry_run else write_atomically(path, text)))
    if changes.previous != changes.current or store.sync_state.page_settings != changes.settings:
        feed = [
            (n.kind, n.identity, n.when, n.title, n.venue, n.year, n.why, n.categories, n.url, n.zotero_key)
            for n in changes.feed
        ]
        rows = (row.astuple() for row in changes.current)
        store.replace_catalogue_rows(rows, feed, changes.settings)
    return written
