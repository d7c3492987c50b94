"""pull: bring the store up to the source's library version in one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from .sources import Source
from .store import ApplyResult, Store


@dataclass(frozen=True, slots=True)
class PullReport:
    from_version: int | None
    to_version: int | None
    result: ApplyResult

    def summary(self) -> str:
        r = self.result
        if not r.changed:
            return f"up to date at library version {self.to_version}"
        start = "first pull" if self.from_version is None else f"library version {self.from_version}"
        return (
            f"{start} → {self.to_version}: {r.items_added} items added, "
            f"{r.items_updated} updated, {r.items_removed} removed; {r.collections_changed} collections "
            f"changed, {r.collections_removed} removed"
        )


def pull(source: Source, store: Store, full: bool = False) -> PullReport:
    """Incremental unless `full` (or the store holds another library): the source then lists everything
    and the store drops whatever it no longer has.

    A source that can fingerprint its whole library cheaply (a snapshot file's hash) is not read at all
    when the fingerprint is the one the store last took in from it."""
    before = store.library_version
    incremental = not full and store.state("source") == source.id
    since = before if incremental else None
    fingerprint = getattr(source, "fingerprint", None)
    taken = fingerprint() if fingerprint is not None else None
    if taken is not None and incremental and before is not None and store.state(FINGERPRINT) == taken:
        store.touch()
        return PullReport(before, before, ApplyResult())
    changes = source.changes(since)
    if changes is None:
        store.touch()
        return PullReport(before, before, ApplyResult())
    result = store.apply(changes, source.id, rewrite=full)
    # After the data: a run killed in between only reads the source once more next time.
    store.remember(FINGERPRINT, taken)
    return PullReport(before, changes.library_version, result)


FINGERPRINT = "source_fingerprint"  # sync state: the fingerprint of what the store last took in
