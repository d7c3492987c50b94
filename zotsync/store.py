"""The local SQLite store: the only module that speaks SQL.

A pull lands in one transaction (`apply`), so a killed process leaves the previous consistent state and
the library version advances only together with the data it describes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import operator
import os
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import filelock

from .errors import StoreError
from .facts import ItemFacts, item_facts, stored_version
from .model import CHILD_TYPES, VENUE_FIELDS, Changes, Collection, Creator, Item, Library, Tag

# The data fields the page is made of (`Item.get` callers in model.py and reconcile/): `load_page` reads
# only these, so abstracts and notes stay on disk. A field added here needs a migration that empties
# `item_page`, which every upgrade then fills again (`_fill_item_page`).
PAGE_FIELDS: tuple[str, ...] = (
    *VENUE_FIELDS,
    "date",
    "DOI",
    "extra",
    "url",
    "archiveID",
    "ISBN",
    "conferenceName",
    "contentType",
    "linkMode",
    "dateAdded",
)


def _page_fields_sql(column: str) -> str:
    pairs = ", ".join(f"'{f}', json_extract({column}, '$.{f}')" for f in PAGE_FIELDS)
    return f"json_patch('{{}}', json_object({pairs}))"  # json_patch drops the null (absent) ones


_BUMP_GENERATION = (
    "UPDATE sync_state SET value = CAST(value AS INTEGER) + 1 WHERE name = 'content_generation'"
)


def _generation_triggers(*tables: str) -> str:
    bump = _BUMP_GENERATION + ";"
    return "\n".join(
        f"CREATE TRIGGER IF NOT EXISTS {table}_{event.lower()}_generation AFTER {event} ON {table}"
        f" BEGIN {bump} END;"
        for table in tables
        for event in ("INSERT", "UPDATE", "DELETE")
    )


def _drop_generation_triggers(*tables: str) -> str:
    return "\n".join(
        f"DROP TRIGGER IF EXISTS {table}_{event.lower()}_generation;"
        for table in tables
        for event in ("INSERT", "UPDATE", "DELETE")
    )


# One encoder each, built once (json.dumps with options builds one per call). The stored text must not
# change: a `pull --full` compares it with what it would write.
def _encoder(sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> Callable[[Any], str]:
    """json.JSONEncoder(ensure_ascii=False, …).encode, the same text, without the Python layers that
    build json's C encoder anew on every call (5 calls per item a pull writes: ~0.1 s at 28k items). No
    check for reference cycles: what the store encodes came from JSON or from model objects."""
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=sort_keys, separators=separators)
    c_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_encoder is None:  # a Python without json's C speedups
        return encoder.encode
    make = c_encoder(
        None, encoder.default, json.encoder.encode_basestring, None, *separators[::-1], sort_keys, False, True
    )
    return lambda value: "".join(make(value, 0))


_FIELDS_JSON = _encoder(sort_keys=True)
_PAGE_JSON = _encoder(separators=(",", ":"))


def _page_fields_json(fields: Mapping[str, Any]) -> str:
    """What `_page_fields_sql` makes of `fields`: the PAGE_FIELDS present and not null (in the item's
    order, which is cheaper to follow than theirs: an item has fewer fields than the page reads)."""
    return _PAGE_JSON({f: v for f, v in fields.items() if f in _PAGE_FIELD_SET and v is not None})


_PAGE_FIELD_SET = frozenset(PAGE_FIELDS)


_T = TypeVar("_T")
_scan_json = json.JSONDecoder().scan_once


def _json(text: str) -> Any:
    """json.loads for the store's own JSON (written without leading blanks): its C scanner directly, as
    three Python layers around it cost more than the scan itself, 175,000 times at 100k items."""
    try:
        return _scan_json(text, 0)[0]
    except StopIteration:
        return json.loads(text)  # not what the store writes: let json name the fault


MIGRATIONS: tuple[str, ...] = (
    # 1: the library mirror and its sync state
    """
    CREATE TABLE sync_state (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE collections (
        key TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        name TEXT NOT NULL,
        parent_key TEXT
    );
    CREATE TABLE items (
        key TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        item_type TEXT NOT NULL,
        parent_key TEXT,
        title TEXT NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        creators TEXT NOT NULL,   -- JSON list, in Zotero order
        fields TEXT NOT NULL      -- JSON object: every other data field verbatim
    );
    CREATE INDEX items_parent ON items (parent_key);
    CREATE TABLE item_tags (
        item_key TEXT NOT NULL REFERENCES items (key) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        tag TEXT NOT NULL,
        type INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (item_key, position)
    );
    CREATE INDEX item_tags_tag ON item_tags (tag);
    CREATE TABLE item_collections (
        item_key TEXT NOT NULL REFERENCES items (key) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        collection_key TEXT NOT NULL,
        PRIMARY KEY (item_key, position)
    );
    CREATE INDEX item_collections_collection ON item_collections (collection_key);
    """,
    # 2: the page rows of the last sync, which the next sync's change digest (CHANGES.md) compares with
    """
    CREATE TABLE catalogue_rows (
        position INTEGER PRIMARY KEY,
        identity TEXT NOT NULL,   -- key:<Zotero key>, else title:<normalised curated title>
        alias TEXT NOT NULL,      -- the normalised curated title of a curated row, else empty
        category TEXT NOT NULL,
        title TEXT NOT NULL,
        status TEXT NOT NULL
    );
    """,
    # 3: what the page reads of each item, kept beside the full fields by triggers (so every writer keeps
    # it current), and a counter that any change of library content bumps (so a sync can tell that the
    # store is as its last export saw it). Safe to run twice.
    f"""
    CREATE TABLE IF NOT EXISTS item_page (
        key TEXT PRIMARY KEY REFERENCES items (key) ON DELETE CASCADE,
        fields TEXT NOT NULL      -- JSON object: the PAGE_FIELDS of items.fields (absent ones are null)
    );
    CREATE TRIGGER IF NOT EXISTS item_page_insert AFTER INSERT ON items BEGIN
        INSERT OR REPLACE INTO item_page VALUES (new.key, {_page_fields_sql("new.fields")});
    END;
    CREATE TRIGGER IF NOT EXISTS item_page_update AFTER UPDATE OF key, fields ON items BEGIN
        DELETE FROM item_page WHERE key = old.key;
        INSERT OR REPLACE INTO item_page VALUES (new.key, {_page_fields_sql("new.fields")});
    END;
    INSERT OR REPLACE INTO item_page SELECT key, {_page_fields_sql("fields")} FROM items;
    INSERT OR IGNORE INTO sync_state VALUES ('content_generation', '0');
    {_generation_triggers("items", "collections", "item_tags", "item_collections")}
    """,
    # 4: `apply` writes the page fields and bumps the generation itself, in bulk: per-row triggers made
    # a first pull of 28k items 2.5x slower. The update trigger stays for a hand edit of `items.fields`.
    f"""
    DROP TRIGGER IF EXISTS item_page_insert;
    {_drop_generation_triggers("items", "collections", "item_tags", "item_collections")}
    """,
    # 5: made `item_page` whole page rows; 6 rebuilds it with the facts as well, so 5 has nothing left to
    # do (a store at 4 goes straight to 6's table). Kept empty: the numbers of applied migrations stay.
    "",
    # 6: `item_page` as the page's whole read model: one narrow row per item in key order (WITHOUT ROWID
    # keeps the rows in that order), so `load_page` scans it alone, without the wide `items` rows, a join,
    # or grouping tag and membership rows; a Python step fills it (`_fill_item_page`). Each row carries
    # its item's facts (facts.py: the normalised title, year, venue, author names, DOI, URL,
    # read mark), computed once when the item is written rather than on every export; sync_state
    # 'facts_version' says which derivation computed them (see `_refresh_facts`). Triggers rather than a
    # foreign key tie a page row to its item (7 makes the one for updates): a key check on each insert
    # cost a first pull ~0.1 s at 28k items, while deletes and updates, which they follow, are few.
    """
    DROP TRIGGER IF EXISTS item_page_update;
    DROP TRIGGER IF EXISTS item_page_delete;
    DROP TABLE IF EXISTS item_page;
    CREATE TABLE item_page (
        key TEXT PRIMARY KEY,       -- an items key: triggers follow its deletes and updates
        version INTEGER NOT NULL,
        item_type TEXT NOT NULL,
        parent_key TEXT,
        title TEXT NOT NULL,
        deleted INTEGER NOT NULL,
        creators TEXT NOT NULL,     -- JSON [[creator_type, last_name, first_name, name], …]
        tags TEXT NOT NULL,         -- JSON [[tag, type], …] in the item's order (as items.tags)
        collections TEXT NOT NULL,  -- JSON [collection key, …] in the item's order (items.collections)
        fields TEXT NOT NULL,       -- JSON object: the PAGE_FIELDS of items.fields that are not null
        facts TEXT                  -- JSON [ItemFacts in their order] of a regular item; NULL: none
    ) WITHOUT ROWID;
    CREATE TRIGGER item_page_delete AFTER DELETE ON items BEGIN
        DELETE FROM item_page WHERE key = old.key;
    END;
    """,
    # 7: an item's tags and memberships live in its `items` row, as JSON in Zotero's order like its
    # creators (and as `item_page` has them), not in tables of their own: nothing ever looked them up by
    # tag or collection, and a first pull spent ~0.15 s of 1.7 s at 28k items on their rows, key checks
    # and indexes. A Python step (`_move_item_lists`) moves them and drops the two tables; the triggers
    # that keep a page row current when its item is edited in place come after (`_settle`).
    """
    DROP TRIGGER IF EXISTS item_page_update;
    ALTER TABLE items ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';        -- JSON [[tag, type], …]
    ALTER TABLE items ADD COLUMN collections TEXT NOT NULL DEFAULT '[]'; -- JSON [collection key, …]
    """,
    # 8: an item's creators in its `items` row as `item_page` holds them, [[creator_type, last_name,
    # first_name, name], …], not as objects that spell out each name: a pull encodes them once for both
    # rows, and an `items` row is ~20 % shorter. A Python step (`_compact_creators`) rewrites them, with
    # the triggers dropped first (each rewrite would otherwise clear the item's facts). The index on
    # `parent_key` goes too: no query needs it, and a first pull spent ~25 ms at 28k items keeping it.
    """
    DROP TRIGGER IF EXISTS item_page_update;
    DROP TRIGGER IF EXISTS item_page_lists;
    DROP INDEX IF EXISTS items_parent;
    """,
)

# A hand edit of an `items` row shows on the page: the page row follows it, and its facts are cleared
# (NULL: the page computes them itself) unless only the tags or memberships changed, which no fact reads.
# Made anew after every upgrade (`_settle`), as this zotsync defines them.
_PAGE_UPDATE_TRIGGERS = f"""
    DROP TRIGGER IF EXISTS item_page_update;
    DROP TRIGGER IF EXISTS item_page_lists;
    CREATE TRIGGER item_page_update
    AFTER UPDATE OF key, version, item_type, parent_key, title, deleted, creators, fields ON items BEGIN
        UPDATE item_page SET version = new.version, item_type = new.item_type, parent_key = new.parent_key,
            title = new.title, deleted = new.deleted, creators = new.creators,
            tags = new.tags, collections = new.collections,
            fields = {_page_fields_sql("new.fields")}, facts = NULL, key = new.key
        WHERE key = old.key;
    END;
    CREATE TRIGGER item_page_lists AFTER UPDATE OF tags, collections ON items BEGIN
        UPDATE item_page SET tags = new.tags, collections = new.collections WHERE key = new.key;
    END;
"""


# SQLite's header field for "which program's file is this": zotsync sets it on every store it creates
# and checks it before any write ("zots" in ASCII).
APPLICATION_ID = 0x7A6F7473
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Every table a zotsync store may hold: a store written before the mark (application_id 0) is ours
# only if it has the migrations table and nothing else.
_OUR_TABLES = frozenset(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", "".join(MIGRATIONS)))
_OUR_TABLES |= {"schema_migrations"}
# Tables only Zotero's own zotero.sqlite has together (every schema since Zotero 5).
_ZOTERO_TABLES = frozenset({"items", "itemData", "itemDataValues", "itemTypes"})


def identify(path: Path) -> str | None:
    """None when `path` is a zotsync store; otherwise what it looks like, for a refusal. Only reads: the
    header, then (for an SQLite file without our mark) its table names through an immutable read-only
    connection, which neither takes locks nor creates -wal or -shm files next to a file not ours."""
    if not path.is_file():
        return "it is not a regular file"
    with path.open("rb") as stream:
        header = stream.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return "it is not an SQLite database"
    application_id = int.from_bytes(header[68:72], "big")
    if application_id == APPLICATION_ID:
        return None
    if application_id != 0:
        return "it looks like an SQLite database of another program"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            tables = {
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not name.startswith("sqlite_")
            }
            columns = {row[1] for row in db.execute("PRAGMA table_info(schema_migrations)")}
        finally:
            db.close()
    except sqlite3.Error:
        return "it is not a readable SQLite database"
    if tables >= _ZOTERO_TABLES:
        return "it looks like Zotero's own database"
    if tables <= _OUR_TABLES and {"version", "applied_at"} <= columns:
        return None  # written by a zotsync from before the mark; opening it adds the mark
    return "it looks like an SQLite database of another program"


def _not_ours(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is not a zotsync store ({what}); zotsync leaves it untouched: "
        "set `store:` in the config to a file of zotsync's own"
    )


# Pages of a new store. An `items` row is ~0.7 KiB, more with an abstract, so 8 KiB pages (SQLite's
# default is 4) hold more rows each and overflow less: a first pull of 28k items wrote its rows with
# ~15 % less CPU (0.22 s vs 0.26 s, the commit included). A store made before keeps its 4 KiB pages.
_PAGE_SIZE = 8192


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


def _initialise(db: sqlite3.Connection) -> None:
    """Mark an empty database as a zotsync store and give it the whole schema, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for number in range(1, len(MIGRATIONS) + 1):
        _run_migration(db, number)
    _settle(db)
    db.execute("COMMIT")


def _run_migration(db: sqlite3.Connection, number: int) -> None:
    if number == 1:
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
    for statement in _statements(MIGRATIONS[number - 1]):
        db.execute(statement)
    if number == _ITEM_LISTS_MIGRATION:
        _move_item_lists(db)
    elif number == _COMPACT_CREATORS_MIGRATION:
        _compact_creators(db)
    db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (number, _now()))


def _settle(db: sqlite3.Connection) -> None:
    """The end of an upgrade (or of a new store's schema), in its transaction, once the items are as this
    zotsync reads them: an empty `item_page` is filled (6 empties it), and the triggers that keep it
    current are made anew."""
    if not db.execute("SELECT 1 FROM item_page").fetchone():
        _fill_item_page(db)
    for statement in _statements(_PAGE_UPDATE_TRIGGERS):
        db.execute(statement)


_ITEM_LISTS_MIGRATION = 7
_COMPACT_CREATORS_MIGRATION = 8


def _move_item_lists(db: sqlite3.Connection) -> None:
    """The data step of migration 7: each item's tags and memberships, in their order, from `item_tags`
    and `item_collections` into its row; then the two tables go."""
    one_tag, one_membership = tuple, operator.itemgetter(0)  # [tag, type]; the collection key alone
    for table, columns, column, entry in (
        ("item_tags", "tag, type", "tags", one_tag),
        ("item_collections", "collection_key", "collections", one_membership),
    ):
        rows = db.execute(f"SELECT item_key, {columns} FROM {table} ORDER BY item_key, position")
        listed = ((_PAGE_JSON(list(map(entry, group))), key) for key, group in _grouped(rows))
        while batch := list(itertools.islice(listed, _BATCH)):
            db.executemany(f"UPDATE items SET {column} = ? WHERE key = ?", batch)
        db.execute(f"DROP TABLE {table}")


def _compact_creators(db: sqlite3.Connection) -> None:
    """The data step of migration 8: every item's creators from objects to the arrays `_item_row` writes
    (the same text), a batch of rows at a time in key order."""
    for rows in _by_key(db, _CREATORS_AFTER):
        compact = [(_PAGE_JSON([Creator(**c) for c in _json(creators)]), key) for key, creators in rows]
        db.executemany("UPDATE items SET creators = ? WHERE key = ?", compact)


_CREATORS_AFTER = "SELECT key, creators FROM items WHERE key > ? AND creators != '[]' ORDER BY key LIMIT ?"


def _by_key(db: sqlite3.Connection, query: str) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of `query` (`… WHERE key > ? … ORDER BY key LIMIT ?`) a batch at a time, each read after
    the one before was handed on, so that a caller may rewrite a batch's rows before the next is read."""
    after = ""
    while rows := db.execute(query, (after, _BATCH)).fetchall():
        yield rows
        after = rows[-1][0]


def _fill_item_page(db: sqlite3.Connection) -> None:
    """The data step of the migration that rebuilds `item_page`: every item's page row, written by the
    code `apply` uses, streamed (a 100k-item store is never held in memory at once)."""
    items = _stored_items(db, every_membership=True)
    rows = (_page_row(_item_row(item), item) for item in items)
    while batch := list(itertools.islice(rows, _BATCH)):
        db.executemany(_INSERT_PAGE_ROW, batch)
    _set_facts_version(db)


_FACTS_VERSION_STATE = "facts_version"


def _set_facts_version(db: sqlite3.Connection) -> None:
    db.execute("INSERT OR REPLACE INTO sync_state VALUES (?, ?)", (_FACTS_VERSION_STATE, stored_version()))


def _refresh_facts(db: sqlite3.Connection) -> None:
    """Facts another derivation computed (an older or newer zotsync, another Unicode database) computed
    again from the page rows themselves, so the store serves this zotsync's facts."""
    for rows in _by_key(db, _PAGE_ROWS_AFTER):
        db.executemany(_UPDATE_FACTS, [(_facts_json(i), i.key) for i in _page_items(rows, known=None)])
    _set_facts_version(db)


_PAGE_ROWS_AFTER = "SELECT * FROM item_page WHERE key > ? ORDER BY key LIMIT ?"
_UPDATE_FACTS = "UPDATE item_page SET facts = ? WHERE key = ?"


def _cause(exc: sqlite3.Error) -> str:
    """SQLite's error in words a user can act on, with SQLite's own text."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    for prefix, cause in _CAUSES:
        if name.startswith(prefix):
            return f"{cause} (SQLite: {exc})"
    return f"SQLite: {exc}"


_CAUSES = (
    ("SQLITE_FULL", "the disk is full"),
    ("SQLITE_READONLY", "the store cannot be written (check the permissions of the file and its folder)"),
    ("SQLITE_PERM", "the store cannot be written (check the permissions of the file and its folder)"),
    ("SQLITE_CANTOPEN", "the file cannot be opened (check the path and its permissions)"),
    ("SQLITE_BUSY", "another program holds the store locked"),
    ("SQLITE_LOCKED", "another program holds the store locked"),
    ("SQLITE_CORRUPT", "the file is damaged"),
    ("SQLITE_NOTADB", "the file is damaged"),
    ("SQLITE_IOERR", "reading or writing the disk failed"),
)


def _store_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """A failing SQLite call (a full disk, a read-only folder, a damaged file) becomes one StoreError
    line naming the store and the cause."""

    @functools.wraps(method)
    def guarded(self: Store, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise StoreError(f"the store {self.path} failed: {_cause(exc)}") from exc

    return guarded


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


class Store:
    """The store at `path`, created there if nothing is. A file zotsync did not write is refused before
    anything touches it (see `identify`); `readonly` opens never write, create or upgrade a store."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        try:
            self._db = self._connect()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {path}: {_cause(exc)}") from exc
        except OSError as exc:
            raise StoreError(f"cannot open the store {path}: {exc.strerror or exc}") from exc
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
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
            raise _not_ours(path, what)
        if self.readonly:
            return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")  # ours, so it may be written
        # Under WAL, NORMAL still never corrupts the store and survives a killed process; a power cut
        # may lose the last commit, which the next pull fetches again. FULL cost an fsync per commit.
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Bring the schema up to this zotsync's; a store from before the mark gets it here."""
        db = self._db
        applied = {row[0] for row in db.execute("SELECT version FROM schema_migrations")}
        if applied and max(applied) > len(MIGRATIONS):
            raise StoreError(f"the store {self.path} was written by a newer zotsync (schema {max(applied)})")
        pending = [n for n in range(1, len(MIGRATIONS) + 1) if n not in applied]
        marked = db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        if self.readonly:
            if pending:
                schema = max(applied, default=0)
                raise StoreError(
                    f"the store {self.path} was written by an older zotsync (schema {schema}): "
                    "run `zotsync pull` once to upgrade it"
                )
            return
        if not marked:
            with self._transaction():
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if pending:
            # All in one transaction: a run killed half-way (6 empties `item_page`, 7 fills it) leaves the
            # store as the zotsync before wrote it, which that zotsync can still read.
            with self._transaction():
                for number in pending:
                    _run_migration(db, number)
                _settle(db)
        if self.state(_FACTS_VERSION_STATE) != stored_version():
            with self._transaction():
                _refresh_facts(db)

    @property
    @_store_errors
    def schema_version(self) -> int:
        return self._db.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] or 0

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
    @_store_errors
    def state(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM sync_state WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    @property
    def library_version(self) -> int | None:
        value = self.state("library_version")
        return int(value) if value is not None else None

    @property
    @_store_errors
    def generation(self) -> int:
        """Bumped by every `apply` that changes library content (items, tags, memberships, collections):
        equal generations mean the same library."""
        return int(self.state("content_generation") or 0)

    @_store_errors
    def remember(self, name: str, value: str | None) -> None:
        """Keep (or, with None, forget) a piece of sync state that is not library content."""
        with self._transaction() as db:
            if value is None:
                db.execute("DELETE FROM sync_state WHERE name = ?", (name,))
            else:
                db.execute("INSERT OR REPLACE INTO sync_state VALUES (?, ?)", (name, value))

    @_store_errors
    def item_versions(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT key, version FROM items"))

    @_store_errors
    def catalogue_item_keys(self) -> set[str]:
        """The items the page is made of (`Item.is_regular` and not in the trash)."""
        marks = ", ".join("?" * len(CHILD_TYPES))
        query = (
            f"SELECT key FROM items WHERE parent_key IS NULL AND deleted = 0 AND item_type NOT IN ({marks})"
        )
        return {key for (key,) in self._db.execute(query, CHILD_TYPES)}

    # -- writing --------------------------------------------------------------------------------
    @_store_errors
    def apply(self, changes: Changes, source_id: str, rewrite: bool = False) -> ApplyResult:
        """Land one pull atomically; a source other than the store's own replaces the store's content.
        An object whose version the store already has is skipped, unless `rewrite` (`pull --full`) or
        an untrusted version asks to compare content first; an identical object is never rewritten."""
        with self.landing(source_id, rewrite) as landing:
            return landing.finish(changes)

    def landing(self, source_id: str, rewrite: bool = False, check: Check | None = None) -> Landing:
        """A pull written while it is still being read (see `Landing`), with `apply`'s rules."""
        return Landing(self, source_id, rewrite, check)

    @_store_errors
    def touch(self) -> None:
        """Record a pull that found nothing new."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO sync_state VALUES ('last_sync_at', ?)", (_now(),))

    # -- the last synced page (change digest) ---------------------------------------------------
    @_store_errors
    def catalogue_rows(self) -> list[tuple[str, str, str, str, str]] | None:
        """(identity, alias, category, title, status) of the last synced page, in page order; None
        before the first sync recorded them (an empty page is an empty list)."""
        if self.state("catalogue_rows_at") is None:
            return None
        return [
            tuple(row)
            for row in self._db.execute(
                "SELECT identity, alias, category, title, status FROM catalogue_rows ORDER BY position"
            )
        ]

    @_store_errors
    def replace_catalogue_rows(self, rows: Iterable[tuple[str, str, str, str, str]]) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM catalogue_rows")
            db.executemany(
                "INSERT INTO catalogue_rows VALUES (?, ?, ?, ?, ?, ?)",
                ((n, *row) for n, row in enumerate(rows)),
            )
            db.execute("INSERT OR REPLACE INTO sync_state VALUES ('catalogue_rows_at', ?)", (_now(),))

    # -- reading --------------------------------------------------------------------------------
    @_store_errors
    def load(self) -> Library:
        """The library with every stored field of every item (`full_library` also keeps what `load` hides)."""
        return self._load()

    @_store_errors
    def load_page(self, creators: bool = True, attachments: bool = True) -> Library:
        """The library as the page needs it, from `item_page` alone: its items and their attachments
        (for PDF links), each with only PAGE_FIELDS in `fields`. Abstracts, notes and annotations, often
        most of a library, stay in the store unread (`load` has them). Without `creators`, an item whose
        stored facts hold its author names comes without its creators (the page reads only the names):
        300k objects fewer at 100k items. Without `attachments`, for a page without Zotero's links, the
        attachments stay unread too."""
        library = self._library()
        collections = self._collections()
        # The stored facts, unless another derivation computed them (reconcile then computes its own).
        trusted = self.state(_FACTS_VERSION_STATE) == stored_version()
        facts: dict[str, ItemFacts] | None = {} if trusted else None
        unread = "'note', 'annotation'" + (", 'attachment'" if not attachments else "")
        rows = self._db.execute(f"SELECT * FROM item_page WHERE item_type NOT IN ({unread}) ORDER BY key")
        items = tuple(_page_items(rows, {c.key for c in collections}, library, facts, creators))
        return Library(items, collections, self.library_version, *library, facts=facts or {})

    def _load(self, every_membership: bool = False) -> Library:
        library = self._library()
        items = tuple(_stored_items(self._db, every_membership, library))
        return Library(items, self._collections(), self.library_version, *library)

    def _library(self) -> tuple[str, str]:
        return self.state("library_type") or "user", self.state("library_id") or ""

    def _collections(self) -> tuple[Collection, ...]:
        return tuple(
            Collection(key, version, name, parent_key)
            for key, version, name, parent_key in self._db.execute(
                "SELECT key, version, name, parent_key FROM collections ORDER BY key"
            )
        )

    @_store_errors
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


# SQLite's page cache while a pull writes, in KiB (the default is 2,000). `item_page` and the key indexes
# are keyed by the item key, which a pull brings in no order: with 2 MB, each batch spilled pages and read
# them back (a 28k first pull wrote 270,000 pages; 64,000 with 32 MB). The connection's own size comes
# back when the pull ends, so a sync's export after it does not keep the memory.
_LANDING_CACHE_KIB = 32 * 1024

# A check of a pull before anything is removed (the safety valve): the page's items as the store held them
# before the pull, every item key the pull brought → whether it is on the page, and the pull's Changes.
Check = Callable[[set[str], Mapping[str, bool], Changes], None]


class Landing:
    """One pull on its way into the store, in one transaction. The source may hand items over while it
    still reads (`add`: written a batch at a time, so a page's objects can go as soon as they are
    written); `finish` writes what is left, lets `check` refuse, removes what the pull removes, writes
    the collections and the library version, and commits. Leaving the `with` block in any other way (an
    error, Ctrl-C, a refusal) rolls all of it back: the store stays as it was."""

    def __init__(self, store: Store, source_id: str, rewrite: bool, check: Check | None = None) -> None:
        self.path = store.path  # for _store_errors
        self.arrived: dict[str, bool] = {}  # every item key this pull brought → whether it is on the page
        self.result = ApplyResult()
        self._store, self._db = store, store._db
        self._source_id, self._rewrite = source_id, rewrite
        self._known: dict[str, int] = {}  # the store's item versions before this pull
        self._replaced = False
        self._check = check
        self._page_before: set[str] = set()  # for `check`, read before anything is written
        self._cache_size: int | None = None  # the connection's own, while the landing uses a larger one

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
            if self._check is not None:
                self._page_before = self._store.catalogue_item_keys()
            if self._store.state("source") not in (None, self._source_id):
                content = db.execute("SELECT 1 FROM items UNION ALL SELECT 1 FROM collections")
                self._replaced = content.fetchone() is not None
                db.execute("DELETE FROM items")
                db.execute("DELETE FROM collections")
            self._known = self._store.item_versions()
        return db

    @_store_errors
    def add(self, items: Iterable[Item], trust_versions: bool = True) -> None:
        """Items of this pull, written (in batches of `_BATCH`) before this returns, so the caller may
        drop them; the last copy of an item a pull saw twice wins (a page boundary moved under the pull)."""
        db = self._begin()
        known, result = self._known, self.result
        pending: dict[str, tuple[_ItemRow, tuple[Any, ...]]] = {}
        for item in items:
            stored_version = known.get(item.key)
            first_copy = item.key not in self.arrived
            self.arrived[item.key] = item.is_regular and not item.deleted
            same_version = stored_version == item.version
            if same_version and not self._rewrite and trust_versions:
                continue
            row = _item_row(item)
            if same_version and row == _stored_item_row(db, item.key):
                continue
            pending[item.key] = (row, _page_row(row, item))
            if first_copy and stored_version is None:
                result.items_added += 1
            elif first_copy:
                result.items_updated += 1
            if len(pending) == _BATCH:
                self._write(pending)
        self._write(pending)

    def _write(self, pending: dict[str, tuple[_ItemRow, tuple[Any, ...]]]) -> None:
        if pending:
            rows = [row for row, _ in pending.values()]
            _write_items(self._db, rows, [page for _, page in pending.values()])
            pending.clear()

    @_store_errors
    def start_over(self) -> None:
        """Forget the items added so far: the source reads the library again (it moved during the read).
        The transaction starts over too (the next `add` begins it): a savepoint would do, but it keeps
        SQLite from rewriting a page in place, which made a large pull write several times as much."""
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        self.arrived.clear()
        self.result = ApplyResult()

    @_store_errors
    def finish(self, changes: Changes) -> ApplyResult:
        """Land `changes` (its items besides those already added) and commit. The `check` runs once
        every item is written and before anything is removed, and may raise to refuse the pull."""
        db = self._begin()
        self.add(changes.items, changes.trust_versions)
        if self._check is not None:
            self._check(self._page_before, self.arrived, changes)
        result, known = self.result, self._known
        stored_collections = {row[0]: row for row in db.execute("SELECT * FROM collections")}

        # A trashed collection leaves like a deleted one; its restore brings it back with a new version.
        # Subcollections go with their parent, judged on the tree as this pull leaves it (a child
        # moved out of a deleted parent in the same pull stays).
        incoming_collections = {c.key for c in changes.collections if not c.deleted}
        gone_roots = set(changes.deleted_collections) | {c.key for c in changes.collections if c.deleted}
        if changes.complete:
            gone_roots |= set(stored_collections) - incoming_collections
        parents = {key: row[3] for key, row in stored_collections.items()}
        parents.update({c.key: c.parent_key for c in changes.collections})
        gone_collections = with_descendants(gone_roots, parents)
        live_collections = [c for c in changes.collections if c.key not in gone_collections]
        for key in gone_collections & set(stored_collections):
            db.execute("DELETE FROM collections WHERE key = ?", (key,))
            result.collections_removed += 1
        # Memberships stay: they belong to the items, `load` shows only those of existing
        # collections, and a collection restored from the trash finds its items again.
        for collection in live_collections:
            row = (collection.key, collection.version, collection.name, collection.parent_key)
            if stored_collections.get(collection.key) == row:
                continue
            db.execute("INSERT OR REPLACE INTO collections VALUES (?, ?, ?, ?)", row)
            result.collections_changed += 1

        gone = set(changes.deleted_items) - self.arrived.keys()
        if changes.complete:
            gone |= known.keys() - self.arrived.keys()
        removed = sorted(gone & known.keys())
        db.executemany("DELETE FROM items WHERE key = ?", ((key,) for key in removed))
        result.items_removed += len(removed)
        if self._replaced or result.changed:
            db.execute(_BUMP_GENERATION)

        for name, value in (
            ("library_version", str(changes.library_version)),
            ("library_type", changes.library_type),
            ("library_id", changes.library_id),
            ("library_name", changes.library_name),
            ("source", self._source_id),
            ("last_sync_at", _now()),
        ):
            db.execute("INSERT OR REPLACE INTO sync_state VALUES (?, ?)", (name, value))
        db.execute("COMMIT")
        return result


def _stored_items(
    db: sqlite3.Connection, every_membership: bool = False, library: tuple[str, str] = ("user", "")
) -> Iterator[Item]:
    """Every item with every field, from `items` (the truth), in key order. `every_membership` keeps
    memberships in collections the store no longer has (a snapshot); otherwise only existing collections
    count."""
    library_type, library_id = library
    known = None if every_membership else {key for (key,) in db.execute("SELECT key FROM collections")}
    rows = db.execute("SELECT * FROM items ORDER BY key")
    for key, version, item_type, parent_key, title, deleted, creators, fields, tags, memberships in rows:
        listed = _json(memberships) if memberships != "[]" else ()
        yield Item(
            key,
            version,
            item_type,
            title,
            _creators(creators),
            tuple(map(_new_tag, _json(tags))) if tags != "[]" else (),
            tuple(c for c in listed if c in known) if known is not None else tuple(listed),
            parent_key,
            bool(deleted),
            library_type,
            library_id,
            _json(fields),
        )


_new_tuple = tuple.__new__  # a NamedTuple from a list, without its Python-level __new__
_new_creator = functools.partial(_new_tuple, Creator)  # the same for each of 300k creators, in C
_new_tag = functools.partial(_new_tuple, Tag)


def _page_items(
    rows: Iterable[tuple[Any, ...]],
    known: set[str] | None,
    library: tuple[str, str] = ("user", ""),
    facts: dict[str, ItemFacts] | None = None,
    creators: bool = True,
) -> Iterator[Item]:
    """The items of `item_page` rows; their memberships only in `known` collections (None: all). The
    rows' stored facts go into `facts`, when given; without `creators`, the items with facts there
    come without their creators."""
    library_type, library_id = library
    # A library repeats a few thousand tags over 100k items; Tag is immutable, so equal ones share one.
    shared_tags: dict[tuple[str, int], Tag] = {}
    shared: dict[str, str] = {}  # years and venues, which repeat across items
    for (
        key,
        version,
        item_type,
        parent_key,
        title,
        deleted,
        item_creators,
        tags,
        memberships,
        fields,
        stored_facts,
    ) in rows:
        item_tags: tuple[Tag, ...] = ()
        if tags != "[]":
            item_tags = tuple(
                shared_tags.get(t) or shared_tags.setdefault(t, _new_tag(t)) for t in map(tuple, _json(tags))
            )
        item_collections: tuple[str, ...] = ()
        if memberships != "[]":
            listed = _json(memberships)
            item_collections = tuple(c for c in listed if c in known) if known is not None else tuple(listed)
        item_fields = _json(fields)
        with_facts = facts is not None and stored_facts is not None
        if with_facts:
            values = _json(stored_facts)
            # Equal strings share one object (30 MB less at 100k items): years and venues repeat across
            # items, the DOI and URL are usually the fields' own, the normalised DOI usually the DOI.
            title_key, year, venue_source, authors, doi, url, read, doi_key = values
            if doi and (same := item_fields.get("DOI")) == doi:
                doi = same
            if url and (same := item_fields.get("url")) == url:
                url = same
            facts[key] = _new_tuple(
                ItemFacts,
                (
                    title_key,
                    shared.setdefault(year, year),
                    shared.setdefault(venue_source, venue_source),
                    tuple(authors),
                    doi,
                    url,
                    read,
                    doi if doi_key == doi else doi_key,
                ),
            )
        yield Item(
            key,
            version,
            item_type,
            title,
            tuple(map(_new_creator, _json(item_creators)))
            if item_creators != "[]" and (creators or not with_facts)
            else (),
            item_tags,
            item_collections,
            parent_key,
            bool(deleted),
            library_type,
            library_id,
            item_fields,
        )


def _creators(text: str) -> tuple[Creator, ...]:
    return tuple(map(_new_creator, _json(text))) if text != "[]" else ()


def _grouped(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """(key, rest of each row) groups of rows sorted by their first column."""
    for key, group in itertools.groupby(rows, key=operator.itemgetter(0)):
        yield key, [row[1:] for row in group]


# An `items` row: key, version, item_type, parent_key, title, deleted, creators, fields, tags, collections.
_ItemRow = tuple[Any, ...]
# Items written per executemany round: big enough to amortise the calls, small enough to keep few rows.
_BATCH = 1000


def _item_row(item: Item) -> _ItemRow:
    """An item as the store holds it: its `items` row."""
    fields = item.fields if type(item.fields) is dict else dict(item.fields)  # json encodes dicts only
    return (
        item.key,
        item.version,
        item.item_type,
        item.parent_key,
        item.title,
        int(item.deleted),
        # tuples (creators and tags are named tuples) encode as the arrays the columns hold
        _PAGE_JSON(item.creators) if item.creators else "[]",
        _FIELDS_JSON(fields),
        _PAGE_JSON(item.tags) if item.tags else "[]",
        _PAGE_JSON(item.collections) if item.collections else "[]",
    )


_INSERT_ITEM_ROW = "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_PAGE_ROW = "INSERT OR REPLACE INTO item_page VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _facts_json(item: Item) -> str | None:
    """The `item_page.facts` of `item`: its ItemFacts as a JSON list; NULL unless it is regular."""
    return _PAGE_JSON(item_facts(item)) if item.is_regular else None


def _page_row(row: _ItemRow, item: Item) -> tuple[Any, ...]:
    """The `item_page` row of `item`, whose `items` row (`_item_row`) is `row`: the same columns but
    `fields`, with the page's own fields, and the facts."""
    return (
        *row[:7],  # key, version, item_type, parent_key, title, deleted, creators
        *row[8:],  # tags, collections
        _page_fields_json(item.fields),
        _facts_json(item),
    )


def _stored_item_row(db: sqlite3.Connection, key: str) -> _ItemRow:
    return tuple(db.execute("SELECT * FROM items WHERE key = ?", (key,)).fetchone())


def _write_items(db: sqlite3.Connection, rows: list[_ItemRow], pages: list[tuple[Any, ...]]) -> None:
    """Write `rows` and their page rows, one batch per table; a row replaces its item's earlier one."""
    db.executemany(_INSERT_ITEM_ROW, rows)
    db.executemany(_INSERT_PAGE_ROW, pages)


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


def _statements(script: str) -> Iterator[str]:
    """The SQL statements of a migration, one by one (a trigger's body holds `;` of its own)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def exclusive_lock(store_path: Path) -> Iterator[None]:
    """One writer at a time: a second run (two cron jobs overlapping) fails at once instead of waiting.
    filelock takes an OS lock (flock on Unix, LockFileEx on Windows) that the OS drops when a killed run
    exits, so a stale lock file never blocks the next run."""
    lock_path = store_path.with_name(store_path.name + ".lock")
    # Not even a lock file beside a file that is not ours (Zotero's data folder, say).
    what = identify(store_path) if os.path.lexists(store_path) else None
    if what is not None:
        raise _not_ours(store_path, what)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(lock_path, timeout=0)
        lock.acquire()
    except filelock.Timeout:
        raise StoreError(f"another zotsync run holds the lock {lock_path}") from None
    except OSError as exc:
        raise StoreError(f"cannot create the lock file {lock_path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()
