"""`zotsync pull`: bring the store up to the source's library version in one transaction."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..config import Config
from ..errors import TooMuchRemoval
from ..gcpause import bulk_phase
from ..plan import PullPlan
from ..sources import Source, open_source
from ..store import ApplyResult, Store, exclusive_lock
from ..text import counted
from .fulltext import TextReport, pull_texts
from .stores import open_store


@dataclass(frozen=True, slots=True)
class PullReport:
    from_version: int | None
    to_version: int | None
    result: ApplyResult
    reread: int | None = None  # the items a full pull (`--full`) read, which it compared one by one
    stopped: str = ""  # a dry run: the safety valve's refusal, which the real run would raise
    texts: TextReport | None = None  # the attachments' full text, when it was pulled (fulltext.enabled)

    def to_dict(self, dry_run: bool = False) -> dict[str, object]:
        """The one JSON object `pull --json` prints; a dry run adds `dry_run` and `valve`."""
        r = self.result
        found: dict[str, object] = {
            "library_version": self.to_version,
            "previous_version": self.from_version,
            "items_added": r.items_added,
            "items_updated": r.items_updated,
            "items_removed": r.items_removed,
            "collections_changed": r.collections_changed,
            "collections_removed": r.collections_removed,
        }
        if dry_run:
            found |= {"dry_run": True, "valve": "stop" if self.stopped else "ok"}
        if self.texts is not None:
            texts = self.texts
            found["fulltext"] = {
                "fetched": texts.fetched,
                "without_text": texts.without_text,
                "removed": texts.removed,
            }
        return found

    def summary(self) -> str:
        """One line: what the pull changed (and, when it pulled the PDFs' text, how much of it)."""
        texts = self.texts
        if texts is None or not (texts.fetched or texts.without_text or texts.removed):
            return self._items_summary()
        empty = f", {texts.without_text} without text" if texts.without_text else ""
        return f"{self._items_summary()}; full text: {texts.fetched} fetched{empty}, {texts.removed} removed"

    def _items_summary(self) -> str:
        r = self.result
        if not r.changed and self.reread is not None:
            return f"re-read {counted(self.reread, 'item')}: no changes at library version {self.to_version}"
        if not r.changed:
            return f"up to date at library version {self.to_version}"
        start = "first pull" if self.from_version is None else f"library version {self.from_version}"
        return (
            f"{start} → {self.to_version}: {counted(r.items_added, 'item')} added, "
            f"{r.items_updated} updated, {r.items_removed} removed; "
            f"{counted(r.collections_changed, 'collection')} changed, {r.collections_removed} removed"
        )


def pull(
    source: Source,
    store: Store,
    full: bool = False,
    max_removal: float | None = None,
    dry_run: bool = False,
    fulltext: bool = False,
) -> PullReport:
    """Incremental unless `full` (or the store holds another library): the source then lists everything
    and the store drops whatever it no longer has. With `max_removal` (the share `sync.max_removal`;
    None is `--force`), a pull that would take more of the page's items away is refused before it
    commits: the store stays as it was. `dry_run` (a scratch store's pull): the refusal is reported in
    the result (`stopped`) instead of raised.

    A source that can digest its whole library cheaply (a snapshot file's SHA-256) is not read at all
    when the digest is the one the store last took in from it. With `fulltext` (not in a dry run), the
    attachments' full text follows the items (app/fulltext.py)."""
    report = _pull_items(source, store, full, max_removal, dry_run)
    if fulltext and not dry_run and not report.stopped:
        return replace(report, texts=pull_texts(source, store, full))
    return report


def _pull_items(
    source: Source, store: Store, full: bool, max_removal: float | None, dry_run: bool
) -> PullReport:
    state = store.sync_state
    before = state.library_version
    incremental = not full and state.source == source.id
    since = before if incremental else None
    content_digest = getattr(source, "content_digest", None)
    taken = content_digest() if content_digest is not None else None
    if taken is not None and incremental and before is not None and state.source_digest == taken:
        store.touch()
        return PullReport(before, before, ApplyResult())
    # A source may write pages into the landing while it still reads (the web source does); nothing is
    # committed before the whole pull is in and its plan has passed the valve.
    with store.landing(source.id, rewrite=full, watch_page=max_removal is not None) as landing:
        changes = source.changes(since, landing)
        if changes is not None:
            plan = landing.plan(changes)
            try:
                plan.raise_if_unsafe(max_removal)
            except TooMuchRemoval as refusal:
                if not dry_run:
                    raise
                return PullReport(before, changes.library_version, counts_of(plan), stopped=str(refusal))
            result = landing.apply(plan)
    if changes is None:
        store.touch()
        return PullReport(before, before, ApplyResult())
    # After the data: a run killed in between only reads the source once more next time.
    store.remember(source_digest=taken)
    reread = len(landing.arrived) if full and changes.complete else None
    return PullReport(before, changes.library_version, result, reread)


def counts_of(plan: PullPlan) -> ApplyResult:
    """What applying `plan` would report."""
    return ApplyResult(
        plan.items_added,
        plan.items_updated,
        len(plan.removed),
        len(plan.collections_written),
        len(plan.collections_removed),
    )


def run_pull(
    config: Config, full: bool = False, progress: bool = False, force: bool = False, dry_run: bool = False
) -> PullReport:
    """`force`: past the safety valve (`sync.max_removal`) for this one pull. `dry_run`: the pull lands
    in a scratch copy of the store, and the store keeps its bytes."""
    with (
        open_source(config.source, progress, config.sync.deadline) as source,
        store_for(config, dry_run) as store,
        bulk_phase(),
    ):
        return pull(
            source,
            store,
            full=full,
            max_removal=valve(config, force),
            dry_run=dry_run,
            fulltext=config.fulltext.enabled,
        )


def _copied_at_rest(store: Path, copy: Path) -> bool:
    """Copy the store's file byte for byte when it holds every commit (its -wal is empty, as each run
    leaves it) and stays so while it is copied; False, and no copy, otherwise."""
    wal = store.with_name(store.name + "-wal")

    def at_rest() -> tuple[int, int] | None:
        if wal.exists() and wal.stat().st_size:
            return None
        info = store.stat()
        return (info.st_size, info.st_mtime_ns)

    seen = at_rest()
    if seen is None:
        return False
    shutil.copyfile(store, copy)
    if at_rest() == seen:
        return True
    copy.unlink()
    return False


def valve(config: Config, force: bool) -> float | None:
    return None if force else config.sync.max_removal


@contextlib.contextmanager
def store_for(config: Config, dry_run: bool = False) -> Iterator[Store]:
    """The store a command works in, under its lock so that two runs never interleave; a dry run's is a
    scratch copy (`scratch_store`), which takes no lock."""
    if dry_run:
        with scratch_store(config.store) as store:
            yield store
    else:
        with exclusive_lock(config.store), open_store(config) as store:
            yield store


@contextlib.contextmanager
def scratch_store(path: Path) -> Iterator[Store]:
    """A copy of the store at `path` (an empty one when there is none yet) in a temporary folder,
    removed afterwards: a dry run does there all that the real run would do to the store, and the
    store's own files keep their bytes."""
    with tempfile.TemporaryDirectory(prefix="zotsync-dry-run-") as folder:
        copy = Path(folder) / path.name
        if path.exists() and not _copied_at_rest(path, copy):
            # A run is writing it: SQLite's online backup takes a consistent copy (and, as any reader
            # does, rebuilds the -shm index beside the store).
            with Store(path, readonly=True) as stored:
                stored.copy_to(copy)
        store = Store(copy)
        try:
            yield store
        finally:
            store.close()
