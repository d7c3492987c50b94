"""`zotsync pull`: bring the store up to the source's library version in one transaction."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..errors import TooMuchRemoval
from ..gcpause import bulk_phase
from ..model import Changes
from ..sources import Source, open_source
from ..store import ApplyResult, Store, exclusive_lock
from .stores import open_store

log = logging.getLogger("zotsync")

# The safety valve refuses only a removal of at least this many items, so a tiny library can still lose
# one or two (half of a library of two is not a mass deletion).
MIN_REFUSED_REMOVAL = 3


@dataclass(frozen=True, slots=True)
class PullReport:
    from_version: int | None
    to_version: int | None
    result: ApplyResult
    reread: int | None = None  # the items a full pull (`--full`) read, which it compared one by one

    def to_dict(self) -> dict[str, Any]:
        """The versions and the counts, as `sync --json` names them."""
        counts = self.result
        return {
            "library_version": self.to_version,
            "previous_version": self.from_version,
            "items_added": counts.items_added,
            "items_updated": counts.items_updated,
            "items_removed": counts.items_removed,
            "collections_changed": counts.collections_changed,
            "collections_removed": counts.collections_removed,
        }

    def summary(self) -> str:
        """One line: what the pull changed."""
        r = self.result
        if not r.changed and self.reread is not None:
            return f"re-read {self.reread} items: no changes at library version {self.to_version}"
        if not r.changed:
            return f"up to date at library version {self.to_version}"
        start = "first pull" if self.from_version is None else f"library version {self.from_version}"
        return (
            f"{start} → {self.to_version}: {r.items_added} items added, "
            f"{r.items_updated} updated, {r.items_removed} removed; {r.collections_changed} collections "
            f"changed, {r.collections_removed} removed"
        )


def pull(source: Source, store: Store, full: bool = False, max_removal: float | None = None) -> PullReport:
    """Incremental unless `full` (or the store holds another library): the source then lists everything
    and the store drops whatever it no longer has. With `max_removal` (the share `sync.max_removal`;
    None is `--force`), a pull that would take more of the page's items away is refused before it
    commits: the store stays as it was.

    A source that can digest its whole library cheaply (a snapshot file's SHA-256) is not read at all
    when the digest is the one the store last took in from it."""
    state = store.sync_state
    before = state.library_version
    stored_source = state.source
    incremental = not full and stored_source == source.id
    since = before if incremental else None
    content_digest = getattr(source, "content_digest", None)
    taken = content_digest() if content_digest is not None else None
    if taken is not None and incremental and before is not None and state.source_digest == taken:
        store.touch()
        return PullReport(before, before, ApplyResult())
    valve = None
    if max_removal is not None:
        switching = stored_source not in (None, source.id)
        valve = functools.partial(check_removal, switching=switching, max_removal=max_removal)
    # A source may write pages into the landing while it still reads (the web source does); nothing is
    # committed before the whole pull is in and the valve has passed it.
    with store.landing(source.id, rewrite=full, check=valve) as landing:
        changes = source.changes(since, landing)
        if changes is not None:
            result = landing.finish(changes)
    if changes is None:
        store.touch()
        return PullReport(before, before, ApplyResult())
    # After the data: a run killed in between only reads the source once more next time.
    store.remember(source_digest=taken)
    reread = len(landing.arrived) if full and changes.complete else None
    return PullReport(before, changes.library_version, result, reread)


def check_removal(
    on_page: Set[str], arrived: Mapping[str, bool], changes: Changes, switching: bool, max_removal: float
) -> None:
    """octodns' TooMuchChange: the library emptied, another library behind the same id, a permission
    change hiding most items — refuse rather than publish an empty page. `on_page`: the store's page
    items before the pull; `arrived`: every item key the pull brought → whether it is on the page;
    `switching`: the store holds another source's library, which this pull replaces."""
    gone = leaving(on_page, arrived, changes, switching)
    if len(gone) >= MIN_REFUSED_REMOVAL and len(gone) > max_removal * len(on_page):
        raise TooMuchRemoval(
            f"this pull would remove {len(gone)} of the {len(on_page)} Zotero items on the page "
            f"({len(gone) / len(on_page):.0%}; sync.max_removal allows {max_removal:.0%}); the store and "
            "the exports are left as they were. If the library really lost them, run the command again "
            "with --force"
        )
    if gone:
        log.debug("this pull removes %d of the %d Zotero items on the page", len(gone), len(on_page))


def leaving(on_page: Set[str], arrived: Mapping[str, bool], changes: Changes, switching: bool) -> set[str]:
    """The keys in `on_page` (regular, top-level, not trashed) that the pull would take off the page:
    arrived deleted, trashed or turned into a child item (`arrived` maps them to False); deleted; missing
    from a complete read; or missing from the library that replaces the store's when the source is
    another one (`switching`)."""
    wholesale = changes.complete or switching
    gone = set()
    for key in on_page:
        stays = arrived.get(key)
        if stays is not None:
            if not stays:
                gone.add(key)
        elif wholesale or key in changes.deleted_items:
            gone.add(key)
    return gone


def run_pull(config: Config, full: bool = False, progress: bool = False, force: bool = False) -> PullReport:
    """`force`: past the safety valve (`sync.max_removal`) for this one pull."""
    with (
        open_source(config.source, progress, config.sync.deadline) as source,
        exclusive_lock(config.store),
        open_store(config) as store,
        bulk_phase(),
    ):
        return pull(source, store, full=full, max_removal=valve(config, force))


def valve(config: Config, force: bool) -> float | None:
    return None if force else config.sync.max_removal
