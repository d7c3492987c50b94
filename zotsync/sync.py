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
    and the store drops whatever it no longer has."""
    before = store.library_version
    since = None if full or store.state("source") != source.id else before
    changes = source.changes(since)
    if changes is None:
        store.touch()
        return PullReport(before, before, ApplyResult())
    result = store.apply(changes, source.id, rewrite=full)
    return PullReport(before, changes.library_version, result)
