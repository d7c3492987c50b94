"""A pull on its way into the store: written as it arrives, committed in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import Changes, Collection, Item
from ..plan import PullPlan, leaving
from . import searchindex
from .codec import INSERT_ITEM, INSERT_PAGE, ItemRecord, PageRecord, item_record, page_record
from .failures import store_errors
from .schema import BUMP_GENERATION, BUMP_NOTES_GENERATION, now
from .state import write_state

if TYPE_CHECKING:
    from .db import Store

CollectionRow = tuple[str, int, str, str | None]  # key, version, name, parent key: the table's row

# Items written per executemany round: big enough to amortise the calls, small enough to keep few rows.
BATCH = 1000

# What a paper's note page is made of besides the paper: a change to one of these alone leaves the page
# rows as they were, so it moves the notes generation, not the content generation (attachments move both:
# they are the rows' PDF links, and annotations hang from them).
NOTE_TYPES = frozenset({"note", "annotation"})


@dataclass(slots=True)
class ApplyResult:
    items_added: int = 0
    items_updated: int = 0
    items_removed: int = 0
    collections_changed: int = 0
    collections_removed: int = 0

    @property
    def changed(self) -> bool:
        return any(
            (
                self.items_added,
                self.items_updated,
                self.items_removed,
                self.collections_changed,
                self.collections_removed,
            )
        )


# SQLite's page cache while a pull writes, in KiB (the default is 2,000). `item_page` and the key indexes
# are keyed by the item key, which a pull brings in no order: with 2 MB, each batch spilled pages and read
# them back (docs/development.md, "The store", has the figures). The connection's own size comes
# back when the pull ends, so a sync's export after it does not keep the memory.
_LANDING_CACHE_KIB = 32 * 1024


class Landing:
    """One pull on its way into the store, in one transaction. The source may hand items over while it
    still reads (`add`: written a batch at a time, so a page's objects can go as soon as they are
    written); `plan` writes what is left and says what finishing would do (the caller may refuse it:
    `PullPlan.raise_if_unsafe`); `apply` removes what the pull removes, writes the collections, brings
    the search index up to date with the items, writes the library version, and commits. Leaving the
    `with` block in any other way (an error, Ctrl-C, a refusal, a dry run) rolls all of it back: the
    store stays as it was, its search index with it.

    `watch_page`: read the page's items before the pull, so that the plan says which of them leave."""

    def __init__(self, store: Store, source_id: str, rewrite: bool, watch_page: bool = False) -> None:
        self.path = store.path  # for store_errors
        self.arrived: dict[str, bool] = {}  # every item key this pull brought → whether it is on the page
        self.result = ApplyResult()
        self._store, self._db = store, store._db
        self._source_id, self._rewrite = source_id, rewrite
        self._known: dict[str, int] = {}  # the store's item versions before this pull
        self._replaced = False
        self._switching = False  # the store holds another source's library, which this pull replaces
        self._watch_page = watch_page
        self._changes = Changes(0)  # the pull `plan` was given, which `apply` finishes
        self._page_before: set[str] = set()  # for the plan's `leaving`, read before anything is written
        self._cache_size: int | None = None  # the connection's own, while the landing uses a larger one
        # The item keys this pull wrote or removed, and the parents they had before: the search index
        # makes the rows of their papers anew when the pull finishes.
        self._touched: set[str] = set()
        self._content_changed = False  # an item other than a note or annotation was written or removed
        self._note_parents: set[str] = set()  # the parents (before and after) of children written or removed

    def __enter__(self) -> Landing:
        return self

    def __exit__(self, *_: object) -> None:
        # Not finished: roll back. SQLite has already rolled back after some errors (a full disk), and
        # ROLLBACK would then fail and hide the error that matters.
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        if self._cache_size is not None:
            self._db.execute(f"PRAGMA cache_size = {self._cache_size}")

    def _begin(self) -> sqlite3.Connection:
        db = self._db
        if not db.in_transaction:
            if self._cache_size is None:
                self._cache_size = db.execute("PRAGMA cache_size").fetchone()[0]
                db.execute(f"PRAGMA cache_size = -{_LANDING_CACHE_KIB}")
            db.execute("BEGIN IMMEDIATE")
            if self._watch_page:
                self._page_before = self._store.catalogue_item_keys()
            self._switching = self._store.sync_state.source not in (None, self._source_id)
            if self._switching:
                content = db.execute("SELECT 1 FROM items UNION ALL SELECT 1 FROM collections")
                self._replaced = content.fetchone() is not None
                db.execute("DELETE FROM items")
                db.execute("DELETE FROM collections")
            self._known = self._store.item_versions()
        return db

    @store_errors
    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        """Items of this pull, written (in batches of `_BATCH`) before this returns, so the caller may
        drop them; the last copy of an item a pull saw twice wins (a page boundary moved under the pull)."""
        db = self._begin()
        known, result = self._known, self.result
        pending: dict[str, tuple[ItemRecord, PageRecord]] = {}
        for item in items:
            stored_version = known.get(item.key)
            first_copy = item.key not in self.arrived
            self.arrived[item.key] = item.is_regular and not item.deleted
            same_version = stored_version == item.version
            if same_version and not self._rewrite and trust_versions:
                continue
            record = item_record(item)
            if same_version and record == _stored_record(db, item.key):
                continue
            pending[item.key] = (record, page_record(record, item))
            self._touched.add(item.key)
            self._note_change(item)
            if first_copy and stored_version is None:
                result.items_added += 1
            elif first_copy:
                result.items_updated += 1
            if len(pending) == BATCH:
                self._write(pending)
        self._write(pending)

    def _note_change(self, item: Item) -> None:
        """Remember what writing `item` changes: the page's content, or only some papers' notes (its
        parent before this pull is read with the batch, `_read_before`)."""
        if item.item_type not in NOTE_TYPES:
            self._content_changed = True
        if item.parent_key:  # an attachment's parent is also the paper of its annotations
            self._note_parents.add(item.parent_key)

    def _write(self, pending: dict[str, tuple[ItemRecord, PageRecord]]) -> None:
        if pending:
            self._read_before([key for key in pending if key in self._known])
            self._db.executemany(INSERT_ITEM, [record for record, _ in pending.values()])
            self._db.executemany(INSERT_PAGE, [page for _, page in pending.values()])
            pending.clear()

    @store_errors
    def start_over(self) -> None:
        """Forget the items added so far: the source reads the library again (it moved during the read).
        The transaction starts over too (the next `add` begins it): a savepoint would do, but it keeps
        SQLite from rewriting a page in place, which made a large pull write several times as much."""
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        self.arrived.clear()
        self._touched.clear()
        self.result = ApplyResult()
        self._content_changed = False
        self._note_parents.clear()

    @store_errors
    def finish(self, changes: Changes) -> ApplyResult:
        """Land `changes` (its items besides those already added) and commit, whatever the plan."""
        return self.apply(self.plan(changes))

    @store_errors
    def plan(self, changes: Changes) -> PullPlan:
        """Write the items of `changes` not yet added, then say what finishing the pull would do;
        nothing is removed yet, and nothing is committed."""
        db = self._begin()
        self.add(changes.items, changes.trust_versions)
        self._changes = changes
        rows = db.execute("SELECT key, version, name, parent_key FROM collections")
        stored: dict[str, CollectionRow] = {row[0]: tuple(row) for row in rows}
        gone_collections, written = collection_changes(stored, changes)
        gone = set(changes.deleted_items) - self.arrived.keys()
        if changes.complete:
            gone |= self._known.keys() - self.arrived.keys()
        on_page = frozenset(self._page_before)
        return PullPlan(
            items_added=self.result.items_added,
            items_updated=self.result.items_updated,
            removed=tuple(sorted(gone & self._known.keys())),
            collections_removed=tuple(sorted(gone_collections)),
            collections_written=tuple(written),
            on_page=on_page,
            leaving=frozenset(leaving(on_page, self.arrived, changes, self._switching)),
            switching=self._switching,
        )

    @store_errors
    def apply(self, plan: PullPlan) -> ApplyResult:
        """Do what `plan` (this landing's own) says, and commit."""
        db, result, changes = self._db, self.result, self._changes
        # Memberships stay: they belong to the items, `load` shows only those of existing
        # collections, and a collection restored from the trash finds its items again.
        db.executemany("DELETE FROM collections WHERE key = ?", ((key,) for key in plan.collections_removed))
        db.executemany("INSERT OR REPLACE INTO collections VALUES (?, ?, ?, ?)", plan.collections_written)
        result.collections_removed += len(plan.collections_removed)
        result.collections_changed += len(plan.collections_written)
        removed = list(plan.removed)
        self._read_before(removed, removing=True)
        self._touched.update(removed)
        # A first pull or another library: every paper's notes are new.
        reset = self._replaced or (not self._known and result.items_added > 0)
        if self._note_parents or reset:
            db.execute(BUMP_NOTES_GENERATION)
            self._record_note_changes(reset)
        db.executemany("DELETE FROM items WHERE key = ?", ((key,) for key in removed))
        result.items_removed += len(removed)
        if self._store.search_index:
            # After the last item, not batch by batch as they come: a paper's notes and annotations may
            # come after it, and making its row again costs more than the overlap with a slow source
            # saves.
            if self._known:
                searchindex.update(db, self._touched)
            else:  # a store filled anew (or a library replaced): every paper anew, in one scan
                searchindex.rebuild(db)
        collections_changed = result.collections_changed or result.collections_removed
        if self._replaced or self._content_changed or collections_changed:
            db.execute(BUMP_GENERATION)
        write_state(
            db,
            {
                "library_version": changes.library_version,
                "library_type": changes.library_type,
                "library_id": changes.library_id,
                "library_name": changes.library_name,
                # a pull that fetched no object learns no URL: keep the one known
                **({"library_url": changes.library_url} if changes.library_url else {}),
                "source": self._source_id,
                "last_sync_at": now(),
            },
        )
        db.execute("COMMIT")
        return result

    def _read_before(self, keys: list[str], removing: bool = False) -> None:
        """What `keys` are in the store now, before the pull rewrites or removes them: their parents (a
        note moved to another paper, or removed, changes that paper's text and notes too), and for those
        `removing`, whether one is more than a note or an annotation (the page's content changes)."""
        for start in range(0, len(keys), BATCH):
            rows = self._db.execute(
                "SELECT item_type, parent_key FROM items WHERE key IN (SELECT value FROM json_each(?))",
                (json.dumps(keys[start : start + BATCH]),),
            )
            for item_type, parent in rows:
                if parent:
                    self._touched.add(parent)
                    self._note_parents.add(parent)
                if removing and item_type not in NOTE_TYPES:
                    self._content_changed = True

    def _record_note_changes(self, reset: bool) -> None:
        """Each paper whose notes, annotations or attachments this pull changed, at the new notes
        generation: the papers of the parents it touched (a note's parent is its paper, an annotation's
        is an attachment whose parent is the paper), read before anything is removed. A first pull or
        another library marks every paper at once instead."""
        db = self._db
        generation = db.execute("SELECT value FROM sync_state WHERE name = 'notes_generation'").fetchone()[0]
        if reset:
            db.execute("DELETE FROM note_changes")
            db.execute("INSERT OR REPLACE INTO sync_state VALUES ('notes_reset', ?)", (generation,))
            return
        parents = sorted(self._note_parents)
        papers: set[str] = set()
        for start in range(0, len(parents), BATCH):
            rows = db.execute(
                "SELECT key, parent_key FROM items WHERE key IN (SELECT value FROM json_each(?))",
                (json.dumps(parents[start : start + BATCH]),),
            )
            found = dict(rows)
            papers.update(found.get(key) or key for key in parents[start : start + BATCH])
        db.executemany(
            "INSERT OR REPLACE INTO note_changes VALUES (?, ?)", ((key, int(generation)) for key in papers)
        )


def collection_changes(
    stored: Mapping[str, CollectionRow], changes: Changes
) -> tuple[set[str], list[CollectionRow]]:
    """The stored collections a pull removes, and the rows it writes (those that differ from the
    stored ones).

    A trashed collection leaves like a deleted one; its restore brings it back with a new version.
    Subcollections go with their parent, judged on the tree as this pull leaves it (a child moved out
    of a deleted parent in the same pull stays). As for items, a collection this pull brought wins over
    a deletion listed for it: /deleted lists every deletion since the store's version, so the deletion
    came first and the collection was made again after it."""
    incoming = {c.key for c in changes.collections if not c.deleted}
    arrived = {c.key for c in changes.collections}
    gone_roots = (set(changes.deleted_collections) - arrived) | (arrived - incoming)
    if changes.complete:
        gone_roots |= set(stored) - incoming
    parents = {key: row[3] for key, row in stored.items()}
    parents.update({c.key: c.parent_key for c in changes.collections})
    gone = with_descendants(gone_roots, parents)
    written = [_collection_row(c) for c in changes.collections if c.key not in gone]
    return gone & set(stored), [row for row in written if stored.get(row[0]) != row]


def _collection_row(collection: Collection) -> CollectionRow:
    return (collection.key, collection.version, collection.name, collection.parent_key)


def _stored_record(db: sqlite3.Connection, key: str) -> ItemRecord:
    return ItemRecord(*db.execute("SELECT * FROM items WHERE key = ?", (key,)).fetchone())


def with_descendants(roots: Iterable[str], parents: Mapping[str, str | None]) -> set[str]:
    """The roots and every collection below them (deleting a collection deletes its subcollections)."""
    children: dict[str, list[str]] = {}
    for key, parent in parents.items():
        if parent:
            children.setdefault(parent, []).append(key)
    found = set(roots)
    frontier = list(found)
    while frontier:
        below = [c for key in frontier for c in children.get(key, ()) if c not in found]
        found.update(below)
        frontier = below
    return found
