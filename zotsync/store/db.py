"""The store: one SQLite file that mirrors the library, with its sync state, upgraded on open."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from ..errors import StoreError
from ..facts import stored_version
from ..model import CHILD_TYPES, Changes, Collection, FullText, Item, ItemFacts, Library, PaperNotes
from ..outputs import FileRecord
from ..searchtext import Query, blank_note
from . import fulltext, searchindex, vectors
from .codec import items_of, page_items
from .derived import Derived
from .failures import DAMAGED, cause, store_errors
from .identity import APPLICATION_ID, identify, not_ours
from .landing import ApplyResult, Landing
from .schema import (
    BUMP_GENERATION,
    MIGRATIONS,
    NUMBERED,
    applied,
    newest_number,
    now,
    pending,
    refresh_facts,
    upgrade,
)
from .state import SyncState, read_state, write_state
from .vectors import Packed, ZoteroText

# Pages of a new store. An `items` row is ~0.7 KiB, more with an abstract, so 8 KiB pages (SQLite's
# default is 4) hold more rows each and overflow less, and a first pull writes its rows with less CPU
# (docs/development.md, "The store"). A store made before keeps its 4 KiB pages.
_PAGE_SIZE = 8192
# A feed entry as the store keeps it: kind, identity, at, title, venue, year, why, categories, url, key.
FeedRecord = tuple[str, str, str, str, str, str, str, tuple[str, ...], str, str]


def _create(path: Path) -> None:
    """A new store, built beside `path` and renamed into place: the path is never a half-made store
    (a killed first run leaves nothing there), so any file found at it can be judged by its content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    os.close(handle)
    try:
        db = sqlite3.connect(temp, isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # before the first table: it is fixed then
            _initialise(db)
            db.execute("PRAGMA journal_mode = WAL")
        finally:
            db.close()
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _leave_wal_files(path: Path) -> None:
    """After a writer closes the store, put back the -wal and -shm files SQLite deleted, empty, so that
    a user who may read the store but not write its folder can still read it.

    SQLite reads a WAL database only through those two files (https://sqlite.org/wal.html, read-only
    databases): it deletes them when the last connection closes, and a reader that cannot create files
    beside the store then fails with `attempt to write a readonly database`. Given them read-only, it
    builds the index in its own memory and still takes its locks on the -shm file, so a sync starting
    meanwhile waits for it to finish a read before checkpointing: no stale and no torn read. Not chosen:
    `immutable=1`, which reads without locks (a concurrent checkpoint tears the read, commits still in
    the -wal are missed), and leaving the store in rollback-journal mode between runs (switching
    rewrites the header, so a pull that fails would no longer leave the file byte for byte as it was).
    Empty files are what SQLite itself leaves after a checkpoint; a writer arriving meanwhile rebuilds
    the index as usual. Made with the store's mode and owner, as SQLite makes them; a file already there
    (a writer still running) is left alone; failing is harmless, so it is silent."""
    try:
        info = path.stat()
    except OSError:
        return  # removed (a first pull that failed) or unreachable: nothing to read either
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for suffix in ("-wal", "-shm"):  # the -wal first: a reader seeing the -shm expects it
        try:
            handle = os.open(f"{path}{suffix}", flags, info.st_mode & 0o666)
        except OSError:
            continue  # there already, or the folder refuses
        try:
            if hasattr(os, "fchown") and os.geteuid() == 0:  # as SQLite does for root: the store's owner
                with contextlib.suppress(OSError):
                    os.fchown(handle, info.st_uid, info.st_gid)
            with contextlib.suppress(OSError):  # the umask narrowed the mode the store has
                os.chmod(f"{path}{suffix}", info.st_mode & 0o666)
        finally:
            os.close(handle)


def _initialise(db: sqlite3.Connection) -> None:
    """Mark an empty database as a zotsync store and give it the whole schema, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    upgrade(db)
    db.execute("COMMIT")


def group_notes(items: Iterable[Item]) -> dict[str, PaperNotes]:
    """Notes, annotations and the attachments they are made in, grouped by paper: notes and attachments
    oldest first (then by key), annotations in reading order (`annotationSortIndex`, then key)."""
    notes: dict[str, list[Item]] = {}
    attachments: dict[str, Item] = {}
    annotations: dict[str, list[Item]] = {}
    for item in items:
        if item.deleted or not item.parent_key:
            continue
        if item.item_type == "note":
            if not blank_note(item.get("note")):  # an empty note shows nothing: no page for it
                notes.setdefault(item.parent_key, []).append(item)
        elif item.item_type == "annotation":
            annotations.setdefault(item.parent_key, []).append(item)
        elif item.item_type == "attachment":
            attachments[item.key] = item
    annotated: dict[str, list[tuple[Item, tuple[Item, ...]]]] = {}
    for key, found in annotations.items():
        attachment = attachments.get(key)
        if attachment is not None and attachment.parent_key:
            found.sort(key=lambda a: (a.get("annotationSortIndex"), a.key))
            annotated.setdefault(attachment.parent_key, []).append((attachment, tuple(found)))

    def oldest_first(item: Item) -> tuple[str, str]:
        return item.get("dateAdded"), item.key

    return {
        paper: PaperNotes(
            tuple(sorted(notes.get(paper, ()), key=oldest_first)),
            tuple(sorted(annotated.get(paper, ()), key=lambda pair: oldest_first(pair[0]))),
        )
        for paper in notes.keys() | annotated.keys()
    }


class Store:
    """The store at `path`, created there if nothing is. A file zotsync did not write is refused before
    anything touches it (see `identify`); `readonly` opens never write, create or upgrade a store."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        try:
            self._db = self._connect()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {path}: {cause(exc)}") from exc
        except UnicodeDecodeError as exc:
            raise StoreError(f"cannot open the store {path}: {DAMAGED}") from exc
        except OSError as exc:
            raise StoreError(f"cannot open the store {path}: {exc.strerror or exc}") from exc
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            self.search_index = searchindex.exists(self._db)  # False until the first search builds it
        except sqlite3.Error as exc:  # a read-only open fails here, at its first read
            self._db.close()
            raise StoreError(f"cannot open the store {path}: {self._open_problem(exc)}") from exc
        except UnicodeDecodeError as exc:
            self._db.close()
            raise StoreError(f"cannot open the store {path}: {DAMAGED}") from exc
        except BaseException:
            self._db.close()
            raise

    def _connect(self) -> sqlite3.Connection:
        path = self.path
        if str(path) == ":memory:":  # a scratch store (tests): nothing on disk to protect
            db = sqlite3.connect(":memory:", isolation_level=None)
            _initialise(db)
            return db
        if not os.path.lexists(path):
            if self.readonly:
                raise StoreError(f"no store at {path}: run `zotsync pull` first")
            _create(path)
        what = identify(path)
        if what is not None:
            raise not_ours(path, what)
        if self.readonly:
            return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")  # ours, so it may be written
        # Under WAL, NORMAL still never corrupts the store and survives a killed process; a power cut
        # may lose the last commit, which the next pull fetches again. FULL cost an fsync per commit.
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    def _open_problem(self, exc: sqlite3.Error) -> str:
        name = getattr(exc, "sqlite_errorname", "") or ""
        if self.readonly and name in (
            "SQLITE_READONLY_DIRECTORY",
            "SQLITE_READONLY_CANTINIT",
            "SQLITE_CANTOPEN",
        ):
            # A WAL database is read through its -wal and -shm files, and this reader can neither read
            # them nor make them beside the store (see `_leave_wal_files`).
            wal_files = [Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm")]
            if all(p.exists() for p in wal_files) and not all(os.access(p, os.R_OK) for p in wal_files):
                return (
                    "this user may not read its -wal and -shm files, which SQLite needs to read it; give "
                    "them the store's permissions, or run `zotsync pull` once as the store's owner, which "
                    f"makes them anew with those (SQLite: {exc})"
                )
            return (
                "its -wal and -shm files are missing and its folder is not writable, so SQLite cannot "
                "make the ones a reader needs; run `zotsync pull` once as the store's owner, which leaves "
                f"them there (SQLite: {exc})"
            )
        return cause(exc)

    def copy_to(self, path: Path) -> None:
        """A consistent copy of this store into a new file at `path` (SQLite's online backup)."""
        with contextlib.closing(sqlite3.connect(path)) as target:
            self._db.backup(target)

    def close(self) -> None:
        self._db.close()
        if not self.readonly and str(self.path) != ":memory:":
            _leave_wal_files(self.path)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Bring the schema up to this zotsync's; a store from before the mark gets it here."""
        db = self._db
        versions = [row[0] for row in db.execute("SELECT version FROM schema_migrations")]
        if not all(type(version) is int for version in versions):  # a damaged schema lost its key
            raise StoreError(f"cannot open the store {self.path}: {DAMAGED}")
        done = applied(db)
        if done - set(NUMBERED):  # a migration this zotsync does not know
            raise StoreError(
                f"the store {self.path} was written by a newer zotsync (schema {newest_number(db)})"
            )
        marked = db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        todo = pending(done)
        if self.readonly:
            if todo:
                schema = newest_number(db)
                raise StoreError(
                    f"the store {self.path} was written by an older zotsync (schema {schema}): "
                    "run `zotsync pull` once to upgrade it"
                )
            return
        if not marked:
            with self._transaction():
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if todo:
            # All in one transaction: a run killed half-way (6 empties `item_page`, `settle` fills it)
            # leaves the store as the zotsync before wrote it, which that zotsync can still read.
            with self._transaction():
                upgrade(db)
        if self.sync_state.facts_version != stored_version():
            with self._transaction():
                refresh_facts(db)

    @property
    @store_errors
    def schema_version(self) -> int:
        """How many of this zotsync's migrations the store has had: `len(MIGRATIONS)` once upgraded."""
        done = applied(self._db)
        return sum(step.__name__ in done for step in MIGRATIONS)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            # SQLite has already rolled back after some errors (a full disk): ROLLBACK would then fail
            # and hide the error that matters.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- sync state -----------------------------------------------------------------------------
    @property
    @store_errors
    def sync_state(self) -> SyncState:
        """Everything `sync_state` holds, read at once."""
        return read_state(self._db)

    @property
    def library_version(self) -> int | None:
        return self.sync_state.library_version

    @property
    def generation(self) -> int:
        """Bumped by every pull that changes library content (items, tags, memberships, collections):
        equal generations mean the same library."""
        return self.sync_state.content_generation

    @store_errors
    def remember(self, **fields: str | None) -> None:
        """Keep (or, with None, forget) pieces of sync state that are not library content
        (`SyncState`'s field names)."""
        with self._transaction() as db:
            write_state(db, fields)

    @store_errors
    def item_versions(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT key, version FROM items"))

    @store_errors
    def catalogue_item_keys(self) -> set[str]:
        """The items the page is made of (`Item.is_regular` and not in the trash)."""
        marks = ", ".join("?" * len(CHILD_TYPES))
        query = (
            f"SELECT key FROM items WHERE parent_key IS NULL AND deleted = 0 AND item_type NOT IN ({marks})"
        )
        return {key for (key,) in self._db.execute(query, CHILD_TYPES)}

    # -- writing --------------------------------------------------------------------------------
    @store_errors
    def apply(self, changes: Changes, source_id: str, rewrite: bool = False) -> ApplyResult:
        """Land one pull atomically; a source other than the store's own replaces the store's content.
        An object whose version the store already has is skipped, unless `rewrite` (`pull --full`) or
        an untrusted version asks to compare content first; an identical object is never rewritten."""
        with self.landing(source_id, rewrite) as landing:
            return landing.finish(changes)

    def landing(self, source_id: str, rewrite: bool = False, watch_page: bool = False) -> Landing:
        """A pull written while it is still being read (see `Landing`), with `apply`'s rules."""
        return Landing(self, source_id, rewrite, watch_page)

    @store_errors
    def touch(self) -> None:
        """Record a pull that found nothing new."""
        self.remember(last_sync_at=now())

    # -- what processors derived --------------------------------------------------------------------
    @store_errors
    def derived(self, processor: str) -> dict[str, Derived]:
        """One processor's results, by item key."""
        rows = self._db.execute(
            "SELECT key, inputs, value, made_at FROM derived WHERE processor = ?", (processor,)
        )
        return {row[0]: Derived.of_row(*row) for row in rows}

    @store_errors
    def save_derived(self, processor: str, results: Iterable[Derived], forget: Iterable[str] = ()) -> bool:
        """Keep a processor's `results` and drop its results for `forget`, in one transaction; a changed
        value bumps the content generation (the page shows it). Returns whether one did."""
        rows = [result.row(processor) for result in results]
        forget = list(forget)
        if not rows and not forget:
            return False
        with self._transaction() as db:
            # Only the keys at stake: a run saves each answer as it comes, and the table may hold 100k.
            keys = json.dumps([row[1] for row in rows] + forget)
            old = dict(
                db.execute(
                    "SELECT key, value FROM derived WHERE processor = ? "
                    "AND key IN (SELECT value FROM json_each(?))",
                    (processor, keys),
                )
            )
            gone = [key for key in forget if key in old]
            changed = bool(gone) or any(old.get(row[1]) != row[3] for row in rows)
            db.executemany("INSERT OR REPLACE INTO derived VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany(
                "DELETE FROM derived WHERE processor = ? AND key = ?", ((processor, k) for k in gone)
            )
            if changed:
                db.execute(BUMP_GENERATION)
        return changed

    # -- what the last sync exported ----------------------------------------------------------------
    @store_errors
    def export_files(self) -> dict[str, FileRecord]:
        """Every file the last complete sync exported: absolute path → how it left it."""
        rows = self._db.execute("SELECT path, size, mtime_ns, sha256 FROM export_files")
        return {path: FileRecord(size, mtime_ns, sha256) for path, size, mtime_ns, sha256 in rows}

    @store_errors
    def export_made_from(self) -> dict[str, str]:
        """What each file the last complete sync exported was made from, where known (a note page's head)."""
        rows = self._db.execute("SELECT path, made_from FROM export_files WHERE made_from IS NOT NULL")
        return dict(rows)

    @store_errors
    def record_export(
        self, record: str | None, files: Mapping[str, FileRecord], made_from: Mapping[str, str] | None = None
    ) -> None:
        """Remember what a sync exported (`export_record`, None to forget it), the files it left, and
        what some of them were made from."""
        made_from = made_from or {}
        with self._transaction() as db:
            db.execute("DELETE FROM export_files")
            db.executemany(
                "INSERT INTO export_files VALUES (?, ?, ?, ?, ?)",
                ((path, f.size, f.mtime_ns, f.sha256, made_from.get(path)) for path, f in files.items()),
            )
            write_state(db, {"export_record": record})

    @store_errors
    def update_export_files(
        self, files: Mapping[str, FileRecord], made_from: Mapping[str, str], removed: Iterable[str]
    ) -> None:
        """Change the record of some files alone (`export` writing note pages): `files` as they are now,
        `removed` no longer there; the rest of the record stays."""
        with self._transaction() as db:
            db.executemany("DELETE FROM export_files WHERE path = ?", ((path,) for path in removed))
            db.executemany(
                "INSERT OR REPLACE INTO export_files VALUES (?, ?, ?, ?, ?)",
                ((p, f.size, f.mtime_ns, f.sha256, made_from.get(p)) for p, f in files.items()),
            )

    # -- notes and annotations ------------------------------------------------------------------
    @store_errors
    def papers_with_notes(self) -> set[str]:
        """The items with a child note that is not blank or an annotation in one of their attachments,
        none in the trash: one pass over the children's index (`item_page_children`), joined here, and
        one over the notes' text."""
        notes: set[str] = set()
        attachments: dict[str, str] = {}
        annotated: set[str] = set()
        rows = self._db.execute(
            "SELECT key, parent_key, item_type FROM item_page INDEXED BY item_page_children"
            " WHERE parent_key IS NOT NULL AND deleted = 0"
            " AND item_type IN ('annotation', 'attachment')"
        )
        texts = self._db.execute(  # the notes by the index, their text by key: no scan of `items`
            "SELECT p.parent_key, json_extract(i.fields, '$.note')"
            " FROM item_page AS p INDEXED BY item_page_children JOIN items AS i ON i.key = p.key"
            " WHERE p.parent_key IS NOT NULL AND p.item_type = 'note' AND p.deleted = 0"
        )
        notes.update(parent for parent, html in texts if isinstance(html, str) and not blank_note(html))
        for key, parent, kind in rows:
            if kind == "annotation":
                annotated.add(parent)
            else:
                attachments[key] = parent
        return notes | {attachments[key] for key in annotated if key in attachments}

    @store_errors
    def papers_with_changed_notes(self, generation: int) -> set[str] | None:
        """The papers whose notes, annotations or attachments a pull changed after notes generation
        `generation`; None when every paper counts as changed (a first pull, another library since)."""
        if self.sync_state.notes_reset > generation:
            return None
        rows = self._db.execute("SELECT paper_key FROM note_changes WHERE generation > ?", (generation,))
        return {key for (key,) in rows}

    @store_errors
    def paper_notes(self, papers: Iterable[str]) -> dict[str, PaperNotes]:
        """The notes and annotations of `papers` (those that have any), read from `items` with every field."""
        wanted = set(papers)
        if not wanted:
            return {}
        state = self.sync_state
        library = (state.library_type, state.library_id)
        children = self._children_of(sorted(wanted))
        attachments = [key for key, kind in children if kind == "attachment"]
        keys = [key for key, kind in children if kind == "note"]
        annotations = [key for key, kind in self._children_of(attachments) if kind == "annotation"]
        keys += annotations + attachments if annotations else []
        items: list[Item] = []
        for start in range(0, len(keys), 500):
            batch = sorted(keys[start : start + 500])
            marks = ", ".join("?" * len(batch))
            rows = self._db.execute(f"SELECT * FROM items WHERE key IN ({marks})", batch)
            items += items_of(rows, known=None, library=library)
        return group_notes(items)

    def _children_of(self, parents: list[str]) -> list[tuple[str, str]]:
        """(key, item type) of the children of `parents` that are not in the trash, by the index."""
        found: list[tuple[str, str]] = []
        for start in range(0, len(parents), 500):
            batch = parents[start : start + 500]
            marks = ", ".join("?" * len(batch))
            found += self._db.execute(
                "SELECT key, item_type FROM item_page INDEXED BY item_page_children"
                f" WHERE parent_key IN ({marks}) AND deleted = 0",
                batch,
            ).fetchall()
        return found

    # -- reports kept beside the page a sync exported ----------------------------------------------
    @store_errors
    def kept_report(self, name: str, made_from: str) -> str | None:
        """The report `name` a sync kept, if it was made from `made_from`; None: make it anew."""
        row = self._db.execute(
            "SELECT body FROM kept_reports WHERE name = ? AND made_from = ?", (name, made_from)
        ).fetchone()
        return None if row is None else str(row[0])

    @store_errors
    def keep_report(self, name: str, made_from: str, body: str) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO kept_reports VALUES (?, ?, ?)", (name, made_from, body))

    # -- the last synced page (change digest) ---------------------------------------------------
    @store_errors
    def catalogue_rows(self) -> list[tuple[str, str, str, str, str]] | None:
        """(identity, alias, category, title, status) of the last synced page, in page order; None
        before the first sync recorded them (an empty page is an empty list)."""
        if self.sync_state.catalogue_rows_at is None:
            return None
        return [
            tuple(row)
            for row in self._db.execute(
                "SELECT identity, alias, category, title, status FROM catalogue_rows ORDER BY position"
            )
        ]

    @store_errors
    def replace_catalogue_rows(
        self,
        rows: Iterable[tuple[str, str, str, str, str]],
        feed: Iterable[FeedRecord] | None = None,
        settings: str | None = None,
    ) -> None:
        """Remember the page's rows, (JSON) the settings that made them and, when given, the feed's
        entries, in one transaction: a run that stops between them can neither report a change twice
        nor lose one."""
        with self._transaction() as db:
            db.execute("DELETE FROM catalogue_rows")
            db.executemany(
                "INSERT INTO catalogue_rows VALUES (?, ?, ?, ?, ?, ?)",
                ((n, *row) for n, row in enumerate(rows)),
            )
            write_state(db, {"catalogue_rows_at": now(), "page_settings": settings})
            if feed is not None:
                db.execute("DELETE FROM feed_entries")
                db.executemany(
                    "INSERT INTO feed_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        (n, *entry[:7], json.dumps(list(entry[7]), ensure_ascii=False), *entry[8:])
                        for n, entry in enumerate(feed)
                    ),
                )

    @store_errors
    def feed_entries(self) -> list[FeedRecord]:
        """The feed's entries, newest first: (kind, identity, at, title, venue, year, why, categories,
        url, zotero_key)."""
        return [
            (*row[:7], tuple(json.loads(row[7])), *row[8:])
            for row in self._db.execute(
                "SELECT kind, identity, at, title, venue, year, why, categories, url, zotero_key"
                " FROM feed_entries ORDER BY position"
            )
        ]

    # -- searching ------------------------------------------------------------------------------
    @store_errors
    def search(self, query: Query, limit: int) -> list[searchindex.IndexHit]:
        """The best `limit` papers for `query`, best first (`searchindex.search`)."""
        if not self.search_index:
            raise StoreError("the store has no search index yet: the first `zotsync search` builds it")
        db = self._db
        db.execute("BEGIN")  # one read snapshot: the hits and what they show agree, even while a pull commits
        try:
            return searchindex.search(db, query, limit)
        finally:
            db.execute("COMMIT")

    @store_errors
    def index_entries(self, papers: Sequence[str]) -> list[searchindex.IndexHit]:
        """What the search index holds of `papers`, as hits (for the PDFs' text hits)."""
        return searchindex.entries(self._db, papers) if self.search_index else []

    @store_errors
    def build_search_index(self) -> None:
        """The search index made from the items, in one transaction; its catalogue side is written next
        (`replace_curated`), as its stamp is cleared here."""
        if not searchindex.available():
            raise StoreError(searchindex.unavailable())
        with self._transaction() as db:
            if not searchindex.exists(db):
                searchindex.create(db)
                searchindex.rebuild(db)
            write_state(db, {searchindex.CURATED_STATE: None})
        self.search_index = True

    @store_errors
    def replace_curated(self, placements: Iterable[searchindex.Curated], made_from: str) -> None:
        """The search index's catalogue side: `placements` (every curated placement, matched), made from
        what `made_from` names (kept as sync_state's search_catalogue), in one transaction."""
        with self._transaction() as db:
            if self.search_index:
                searchindex.replace_curated(db, list(placements))
            write_state(db, {"search_catalogue": made_from})

    # -- the attachments' full text (store/fulltext.py) ----------------------------------------
    @store_errors
    def fulltext_stamps(self) -> dict[str, str]:
        return fulltext.stamps(self._db)

    @store_errors
    def save_fulltext(
        self, texts: Iterable[FullText], remove: Iterable[str] = (), cursor: str | None = None
    ) -> None:
        """`texts` written and the texts of `remove` dropped, in one transaction; with `cursor`, the
        listing they complete is remembered with them."""
        with self._transaction() as db:
            fulltext.save(db, texts)
            fulltext.remove(db, remove)
            if cursor is not None:
                write_state(db, {"fulltext_cursor": cursor})

    @contextlib.contextmanager
    def fulltext_writer(self) -> Iterator[fulltext.Writer]:
        """A writer of texts as they arrive (`fulltext.Writer`); what it holds uncommitted when the block
        fails is rolled back, what it committed stays."""
        writer = fulltext.Writer(self._db)
        try:
            yield writer
            writer.commit()
        except sqlite3.Error as exc:
            writer.rollback()
            raise StoreError(f"cannot write the full text into the store {self.path}: {cause(exc)}") from exc
        except BaseException:
            writer.rollback()
            raise

    @store_errors
    def prune_fulltext(self) -> int:
        """The texts of attachments gone from the store or in the trash, dropped; how many."""
        with self._transaction() as db:
            return fulltext.prune(db)

    @store_errors
    def fulltext_counts(self) -> fulltext.Counts:
        return fulltext.counts(self._db)

    @store_errors
    def fulltext_search(
        self, words: Sequence[str], limit: int, skip: Iterable[str] = ()
    ) -> list[fulltext.TextHit]:
        return fulltext.search(self._db, words, limit, skip)

    @store_errors
    def fulltext_of(self, key: str) -> str | None:
        """The text of attachment `key`, or None."""
        return fulltext.text_of(self._db, key)

    @store_errors
    def paper_fulltext(self, paper: str) -> list[tuple[str, str]]:
        """(attachment key, text) of each of the paper's attachments that has text."""
        return fulltext.texts_of_paper(self._db, paper)

    @store_errors
    def attachment_keys(self) -> set[str]:
        """The keys of the attachments in the store that are not in the trash."""
        return {
            key
            for (key,) in self._db.execute(
                "SELECT i.key FROM items i LEFT JOIN items p ON p.key = i.parent_key"
                " WHERE i.item_type = 'attachment' AND i.deleted = 0 AND coalesce(p.deleted, 0) = 0"
            )
        }

    # -- vectors of meaning (search.semantic) ---------------------------------------------------
    @store_errors
    def paper_texts(self) -> list[tuple[str, ZoteroText]]:
        """Every paper's text, by key, read in one snapshot."""
        db = self._db
        db.execute("BEGIN")
        try:
            return list(vectors.paper_texts(db))
        finally:
            db.execute("COMMIT")

    @store_errors
    def vectors_made_from(self) -> dict[str, str]:
        return vectors.made_from(self._db)

    @store_errors
    def save_vectors(self, rows: Iterable[tuple[str, str, bytes]], gone: Iterable[str] = ()) -> None:
        """Keep the vectors `rows` (paper, digest, bytes) and drop those of `gone`, at once."""
        with self._transaction() as db:
            vectors.save(db, rows, gone)

    @store_errors
    def vectors(self) -> tuple[list[str], bytes]:
        """Every stored vector: the papers' keys, and their bytes joined in that order."""
        return vectors.rows(self._db)

    @store_errors
    def pack_vectors(self, packed: Packed) -> None:
        """Keep every vector packed in one row (`vectors.pack`)."""
        with self._transaction() as db:
            vectors.pack(db, packed)

    @store_errors
    def packed_vectors(self) -> Packed | None:
        """The packed vectors; None before the first packing."""
        return vectors.packed(self._db)

    @store_errors
    def vectors_made(self) -> str | None:
        """What the packed vectors were made as: a cache of them compares it."""
        return vectors.made(self._db)

    # -- reading --------------------------------------------------------------------------------
    @store_errors
    def load(self) -> Library:
        """The library with every stored field of every item (`full_library` also keeps what `load` hides)."""
        return self._load()

    @store_errors
    def load_page(self, creators: bool = True, attachments: bool = True) -> Library:
        """The library as the page needs it, from `item_page` alone: its items and their attachments
        (for PDF links), each with only PAGE_FIELDS in `fields`. Abstracts, notes and annotations, often
        most of a library, stay in the store unread (`load` has them). Without `creators`, an item whose
        stored facts hold its author names comes without its creators (the page reads only the names):
        300k objects fewer at 100k items. Without `attachments`, for a page without Zotero's links, the
        attachments stay unread too."""
        state = self.sync_state
        library = (state.library_type, state.library_id)
        collections = self._collections()
        # The stored facts, unless another derivation computed them (reconcile then computes its own).
        facts: dict[str, ItemFacts] | None = {} if state.facts_version == stored_version() else None
        unread = "'note', 'annotation'" + (", 'attachment'" if not attachments else "")
        rows = self._db.execute(f"SELECT * FROM item_page WHERE item_type NOT IN ({unread}) ORDER BY key")
        items = tuple(page_items(rows, {c.key for c in collections}, library, facts, creators))
        return Library(
            items, collections, state.library_version, *library, state.library_url, facts=facts or {}
        )

    def _load(self, every_membership: bool = False) -> Library:
        state = self.sync_state
        library = (state.library_type, state.library_id)
        collections = self._collections()
        known = None if every_membership else {c.key for c in collections}
        items = tuple(items_of(self._db.execute("SELECT * FROM items ORDER BY key"), known, library))
        return Library(items, collections, state.library_version, *library, state.library_url)

    @contextlib.contextmanager
    def one_read(self) -> Iterator[None]:
        """Every read inside sees the same commit, however a pull commits meanwhile (a reader beside a
        sync: `zotsync mcp`). Not around a method that opens a transaction of its own (`search`)."""
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    @store_errors
    def items_with_keys(self, keys: Iterable[str]) -> list[Item]:
        """The items of `keys` the store holds, each with every stored field (one paper's abstract,
        without loading the library)."""
        wanted = sorted(set(keys))
        state = self.sync_state
        found: list[Item] = []
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ", ".join("?" * len(batch))
            rows = self._db.execute(f"SELECT * FROM items WHERE key IN ({marks})", batch)
            found += items_of(rows, known=None, library=(state.library_type, state.library_id))
        return found

    @store_errors
    def collections(self) -> tuple[Collection, ...]:
        return self._collections()

    def _collections(self) -> tuple[Collection, ...]:
        return tuple(
            Collection(key, version, name, parent_key)
            for key, version, name, parent_key in self._db.execute(
                "SELECT key, version, name, parent_key FROM collections ORDER BY key"
            )
        )

    @store_errors
    def full_library(self) -> Library:
        """Everything the store holds, verbatim, in one consistent read: each item with every field,
        its tags in order and all its memberships (also those in collections the store no longer has,
        which `load` hides), so a snapshot written from it fills another store with the same rows."""
        db = self._db
        db.execute("BEGIN")  # one read snapshot, even while a pull commits
        try:
            return self._load(every_membership=True)
        finally:
            db.execute("COMMIT")
