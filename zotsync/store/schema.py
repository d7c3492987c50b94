"""The store's schema: migrations as named functions, applied in order and recorded by name.

`schema_migrations(version, applied_at, name)` lists the migrations a store has had, by the function's
name; `version` is the number each also gets, in order, which a zotsync from before the names reads (it
refuses a store with a number it does not know). Stores from then recorded numbers alone: `NUMBERED`
gives the names they stand for. A new migration is a function at the end, decorated with `@migration`;
it gets the connection inside the upgrade's one transaction (`upgrade`, see `db.Store._migrate`), so a
run killed half-way leaves the store as the older zotsync wrote it.

Never change what a published migration does: stores in the wild have run it. So a migration runs its
own frozen copy of what it needs (the page fields it extracts, how it encodes a creator), never today's
codec, which later versions change; what must be as this zotsync reads it is made once at the end of
every upgrade (`settle`).
"""

from __future__ import annotations

import itertools
import json
import operator
import sqlite3
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from ..facts import stored_version
from . import fulltext, searchindex
from .codec import INSERT_PAGE, facts_json, item_record, items_of, page_fields_sql, page_items, page_record

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []

BATCH = 1000  # rows a data step reads or writes per statement

# The numbers the stores recorded before the names, and the names they stand for; a new migration takes
# the next number (`migration`).
NUMBERED: dict[str, int] = {
    "library_mirror": 1,
    "last_page_rows": 2,
    "page_fields_and_generation": 3,
    "bulk_writes": 4,
    "whole_page_rows": 5,
    "page_read_model": 6,
    "item_lists_in_rows": 7,
    "compact_item_creators": 8,
    "export_files": 9,
    "derived_results": 10,
    "feed_entries": 11,
    "publisher_on_the_page": 12,
    "children_index": 13,
    "note_page_inputs": 14,
}
# Migrations that no longer run, with why. A store that never had one is recorded as having it when it
# is upgraded past it, so that the numbers an older zotsync counts stay whole.
RETIRED: dict[str, str] = {
    # 5 made `item_page` whole page rows; 6 rebuilds it with the facts as well, so 5 had nothing left to do
    "whole_page_rows": "page_read_model",
}


def migration(step: Migration) -> Migration:
    NUMBERED.setdefault(step.__name__, max(NUMBERED.values()) + 1)
    MIGRATIONS.append(step)
    return step


def _named(db: sqlite3.Connection) -> bool:
    """Whether `schema_migrations` records names (`named_migrations` has run)."""
    return "name" in {row[1] for row in db.execute("PRAGMA table_info(schema_migrations)")}


def applied(db: sqlite3.Connection) -> set[str]:
    """The names of the migrations the store has had (`#<version>` for a number no zotsync here knows)."""
    by_number = {number: name for name, number in NUMBERED.items()}
    if _named(db):
        rows = db.execute("SELECT version, name FROM schema_migrations").fetchall()
    else:  # a store from before the names
        rows = [(version, None) for (version,) in db.execute("SELECT version FROM schema_migrations")]
    return {name or by_number.get(version, f"#{version}") for version, name in rows}


def newest_number(db: sqlite3.Connection) -> int:
    """The highest number the store recorded: its schema, as messages name it."""
    return int(db.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] or 0)


def pending(done: set[str]) -> list[Migration]:
    """This zotsync's migrations a store that had `done` has yet to run, in order."""
    return [step for step in MIGRATIONS if step.__name__ not in done]


def upgrade(db: sqlite3.Connection) -> None:
    """Run every pending migration, in the caller's transaction, and record each (the retired ones
    before it included); then `settle`."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = applied(db)
    retired_before = {after: name for name, after in RETIRED.items()}
    for step in pending(done):
        name = retired_before.get(step.__name__)
        if name and name not in done:
            _record(db, name)
        step(db)
        _record(db, step.__name__)
    settle(db)


def _record(db: sqlite3.Connection, name: str) -> None:
    if _named(db):
        db.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (NUMBERED[name], now(), name))
    else:  # before `named_migrations` has run
        db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (NUMBERED[name], now()))


def run_sql(db: sqlite3.Connection, script: str) -> None:
    """The statements of `script`, one by one, in the caller's transaction (`executescript` would
    commit it). A trigger's body holds `;` of its own. The text is indented as the first zotsync wrote
    it, so that `sqlite_master` reads the same whichever zotsync made the table."""
    pending = ""
    for piece in textwrap.indent(textwrap.dedent(script), "    ").split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                db.execute(pending)
            pending = ""


BUMP_GENERATION = "UPDATE sync_state SET value = CAST(value AS INTEGER) + 1 WHERE name = 'content_generation'"
BUMP_NOTES_GENERATION = (
    "UPDATE sync_state SET value = CAST(value AS INTEGER) + 1 WHERE name = 'notes_generation'"
)
_GENERATION_TABLES = ("items", "collections", "item_tags", "item_collections")


@migration
def library_mirror(db: sqlite3.Connection) -> None:
    """1: the library mirror and its sync state."""
    run_sql(
        db,
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
    )


@migration
def last_page_rows(db: sqlite3.Connection) -> None:
    """2: the page rows of the last sync, which the next sync's change digest (CHANGES.md) compares
    with."""
    run_sql(
        db,
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
    )


@migration
def page_fields_and_generation(db: sqlite3.Connection) -> None:
    """3: what the page reads of each item, kept beside the full fields by triggers (so every writer
    keeps it current), and a counter that any change of library content bumps (so a sync can tell that
    the store is as its last export saw it). Safe to run twice."""
    triggers = "\n".join(
        f"CREATE TRIGGER IF NOT EXISTS {table}_{event.lower()}_generation AFTER {event} ON {table}"
        f" BEGIN {BUMP_GENERATION}; END;"
        for table in _GENERATION_TABLES
        for event in ("INSERT", "UPDATE", "DELETE")
    )
    run_sql(
        db,
        f"""
        CREATE TABLE IF NOT EXISTS item_page (
            key TEXT PRIMARY KEY REFERENCES items (key) ON DELETE CASCADE,
            fields TEXT NOT NULL      -- JSON object: the PAGE_FIELDS of items.fields (absent ones are null)
        );
        CREATE TRIGGER IF NOT EXISTS item_page_insert AFTER INSERT ON items BEGIN
            INSERT OR REPLACE INTO item_page VALUES (new.key, {_page_fields_sql_3("new.fields")});
        END;
        CREATE TRIGGER IF NOT EXISTS item_page_update AFTER UPDATE OF key, fields ON items BEGIN
            DELETE FROM item_page WHERE key = old.key;
            INSERT OR REPLACE INTO item_page VALUES (new.key, {_page_fields_sql_3("new.fields")});
        END;
        INSERT OR REPLACE INTO item_page SELECT key, {_page_fields_sql_3("fields")} FROM items;
        INSERT OR IGNORE INTO sync_state VALUES ('content_generation', '0');
        {triggers}
        """,
    )


# What migration 3 extracts of each item: the page fields as they were when it was last run (6 rebuilds the
# table, and every upgrade ends by filling it with today's, `settle`).
_PAGE_FIELDS_3 = (
    *("publicationTitle", "proceedingsTitle", "bookTitle", "blogTitle", "websiteTitle", "forumTitle"),
    *("encyclopediaTitle", "dictionaryTitle", "repository", "reportType", "thesisType", "institution"),
    *("university", "company", "publisher", "date", "DOI", "extra", "url", "archiveID", "ISBN"),
    *("conferenceName", "contentType", "linkMode", "dateAdded"),
)


def _page_fields_sql_3(column: str) -> str:
    pairs = ", ".join(f"'{f}', json_extract({column}, '$.{f}')" for f in _PAGE_FIELDS_3)
    return f"json_patch('{{}}', json_object({pairs}))"


@migration
def bulk_writes(db: sqlite3.Connection) -> None:
    """4: `apply` writes the page fields and bumps the generation itself, in bulk: per-row triggers made
    a first pull of 28k items 2.5x slower. The update trigger stays for a hand edit of `items.fields`."""
    drops = "\n".join(
        f"DROP TRIGGER IF EXISTS {table}_{event.lower()}_generation;"
        for table in _GENERATION_TABLES
        for event in ("INSERT", "UPDATE", "DELETE")
    )
    run_sql(db, f"DROP TRIGGER IF EXISTS item_page_insert;\n{drops}")


@migration
def page_read_model(db: sqlite3.Connection) -> None:
    """6: `item_page` as the page's whole read model: one narrow row per item in key order (WITHOUT
    ROWID keeps the rows in that order), so `load_page` scans it alone, without the wide `items` rows, a
    join, or grouping tag and membership rows; `settle` fills it. Each row carries its item's facts
    (facts.py: the normalised title, year, venue, author names, DOI, URL, read mark), computed once when
    the item is written rather than on every export; sync_state 'facts_version' says which derivation
    computed them (see `refresh_facts`). Triggers rather than a foreign key tie a page row to its item
    (`settle` makes the one for updates): a key check on each insert cost a first pull ~0.1 s at 28k
    items, while deletes and updates, which they follow, are few."""
    run_sql(
        db,
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
    )


@migration
def item_lists_in_rows(db: sqlite3.Connection) -> None:
    """7: an item's tags and memberships live in its `items` row, as JSON in Zotero's order like its
    creators (and as `item_page` has them), not in tables of their own: nothing ever looked them up by
    tag or collection, and a first pull spent ~0.15 s of 1.7 s at 28k items on their rows, key checks
    and indexes. The rows move in order, then the two tables go."""
    run_sql(
        db,
        """
        DROP TRIGGER IF EXISTS item_page_update;
        ALTER TABLE items ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';        -- JSON [[tag, type], …]
        ALTER TABLE items ADD COLUMN collections TEXT NOT NULL DEFAULT '[]'; -- JSON [collection key, …]
        """,
    )
    one_tag, one_membership = list, operator.itemgetter(0)  # [tag, type]; the collection key alone
    for table, columns, column, entry in (
        ("item_tags", "tag, type", "tags", one_tag),
        ("item_collections", "collection_key", "collections", one_membership),
    ):
        rows = db.execute(f"SELECT item_key, {columns} FROM {table} ORDER BY item_key, position")
        listed = (
            (_compact_json_7([entry(row[1:]) for row in group]), key)
            for key, group in itertools.groupby(rows, key=operator.itemgetter(0))
        )
        while batch := list(itertools.islice(listed, BATCH)):
            db.executemany(f"UPDATE items SET {column} = ? WHERE key = ?", batch)
        db.execute(f"DROP TABLE {table}")


def _compact_json_7(value: Any) -> str:
    """JSON as migrations 7 and 8 write it: compact, not ASCII-escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _compact_creators_8(objects_json: str) -> str:
    """Creators stored as objects (schema ≤ 7) as arrays: [[creator_type, last_name, first_name, name]]."""
    names = ("last_name", "first_name", "name")
    return _compact_json_7(
        [[c["creator_type"], *(c.get(n, "") for n in names)] for c in json.loads(objects_json)]
    )


@migration
def compact_item_creators(db: sqlite3.Connection) -> None:
    """8: an item's creators in its `items` row as `item_page` holds them, [[creator_type, last_name,
    first_name, name], …], not as objects that spell out each name: a pull encodes them once for both
    rows, and an `items` row is ~20 % shorter. They are rewritten with the encoder a pull uses, with
    the triggers dropped first (each rewrite would otherwise clear the item's facts). The index on
    `parent_key` goes too: no query needs it, and a first pull spent ~25 ms at 28k items keeping it."""
    run_sql(
        db,
        """
        DROP TRIGGER IF EXISTS item_page_update;
        DROP TRIGGER IF EXISTS item_page_lists;
        DROP INDEX IF EXISTS items_parent;
        """,
    )
    query = "SELECT key, creators FROM items WHERE key > ? AND creators != '[]' ORDER BY key LIMIT ?"
    for rows in by_key(db, query):
        db.executemany(
            "UPDATE items SET creators = ? WHERE key = ?", [(_compact_creators_8(c), key) for key, c in rows]
        )


@migration
def export_files(db: sqlite3.Connection) -> None:
    """9: every file the last sync exported (a page, a note page, …), as it left it: so that the next
    sync can tell the files on disk are still those (without reading them: size and modification time),
    replace only files it wrote, and remove what it wrote and no longer writes. Replaces the list of
    files in sync_state's export_record."""
    run_sql(
        db,
        """
        CREATE TABLE export_files (
            path TEXT PRIMARY KEY,      -- absolute
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            sha256 TEXT NOT NULL
        );
        DELETE FROM sync_state WHERE name = 'export_record';
        """,
    )


@migration
def derived_results(db: sqlite3.Connection) -> None:
    """10: what the processors between pull and page derive from the library (zotsync/processing), per
    processor and item: what a result was made from, the result, and when; a changed result bumps the
    content generation, so the next export shows it."""
    run_sql(
        db,
        """
        CREATE TABLE derived (
            processor TEXT NOT NULL,
            key TEXT NOT NULL,        -- an item key
            inputs TEXT NOT NULL,     -- a digest of what the result was made from (the processor's own)
            value TEXT NOT NULL,      -- JSON
            made_at TEXT NOT NULL,    -- UTC ISO 8601
            PRIMARY KEY (processor, key)
        ) WITHOUT ROWID;
        """,
    )


@migration
def feed_entries(db: sqlite3.Connection) -> None:
    """11: the entries of the Atom feed (feed.xml): the papers recent syncs added to the page or saw
    read, newest first, at most digest.FEED_SIZE; replaced with the last page's rows, in one transaction."""
    run_sql(
        db,
        """
        CREATE TABLE feed_entries (
            position INTEGER PRIMARY KEY,   -- 0 is the newest
            kind TEXT NOT NULL,             -- added | read
            identity TEXT NOT NULL,         -- as catalogue_rows.identity
            at TEXT NOT NULL,               -- UTC, ISO 8601: when the sync saw it
            title TEXT NOT NULL,
            venue TEXT NOT NULL,
            year TEXT NOT NULL,
            why TEXT NOT NULL,
            categories TEXT NOT NULL,       -- JSON: a list of category names
            url TEXT NOT NULL,
            zotero_key TEXT NOT NULL
        );
        """,
    )


@migration
def publisher_on_the_page(db: sqlite3.Connection) -> None:
    """12: `item_page` keeps a book's publisher (its venue, model.PUBLISHER_FIELDS); emptied here, it is
    filled again from `items` at the end of the upgrade (`settle`), facts included."""
    db.execute("DELETE FROM item_page")


@migration
def children_index(db: sqlite3.Connection) -> None:
    """13: an index on the children's `parent_key`, which finds a paper's notes and annotations when a
    pull changes one. The search index's tables (`store/searchindex.py`) are not made here: the first
    `zotsync search` builds them (`db.Store.build_search_index`), and from then on every pull keeps them
    current; a store nobody searches costs its pulls nothing for search."""
    db.execute("CREATE INDEX IF NOT EXISTS items_children ON items (parent_key) WHERE parent_key IS NOT NULL")


@migration
def note_page_inputs(db: sqlite3.Connection) -> None:
    """14: what a sync needs to rewrite only the note pages whose notes changed. `note_changes` holds, per
    paper, the notes generation of the last pull that changed one of its notes, annotations or
    attachments (sync_state 'notes_generation' counts those pulls; 'notes_reset' is the generation at
    which every paper counts as changed: a first pull, another library); `export_files.made_from` what a
    file was made from where a sync may keep it without making it again (a note page: its head); and an
    index of the children by parent, holding their type and trash flag, so that a paper's notes and
    which papers have any are read without scanning every item (0.1 s instead of 0.8 s for 180,000
    children), at the cost of keeping it for child items alone."""
    run_sql(
        db,
        """
        CREATE TABLE note_changes (
            paper_key TEXT PRIMARY KEY,    -- a regular item's key (or a child's whose parent is unknown)
            generation INTEGER NOT NULL    -- the notes generation of the pull that last changed its notes
        ) WITHOUT ROWID;
        ALTER TABLE export_files ADD COLUMN made_from TEXT;
        CREATE INDEX IF NOT EXISTS item_page_children ON item_page (parent_key, item_type, deleted)
            WHERE parent_key IS NOT NULL;
        INSERT OR IGNORE INTO sync_state VALUES ('notes_generation', '0');
        INSERT OR IGNORE INTO sync_state VALUES ('notes_reset', '0');
        """,
    )


@migration
def named_migrations(db: sqlite3.Connection) -> None:
    """15: migrations recorded by name, so that one that is no longer needed can retire (`RETIRED`) and
    the record says what ran; the numbers the store recorded so far get the names they stand for."""
    if "name" not in {row[1] for row in db.execute("PRAGMA table_info(schema_migrations)")}:
        db.execute("ALTER TABLE schema_migrations ADD COLUMN name TEXT")
    names_then = {
        1: "library_mirror",
        2: "last_page_rows",
        3: "page_fields_and_generation",
        4: "bulk_writes",
        5: "whole_page_rows",
        6: "page_read_model",
        7: "item_lists_in_rows",
        8: "compact_item_creators",
        9: "export_files",
        10: "derived_results",
        11: "feed_entries",
        12: "publisher_on_the_page",
        13: "children_index",
        14: "note_page_inputs",
    }
    db.executemany(
        "UPDATE schema_migrations SET name = ? WHERE version = ? AND name IS NULL",
        [(name, number) for number, name in names_then.items()],
    )


@migration
def citation_key_on_the_page(db: sqlite3.Connection) -> None:
    """16: `item_page` keeps Zotero 7's `citationKey` field (Better BibTeX's key, which catalog.bib reads
    before `Citation Key:` in `extra`); emptied here, it is filled again from `items` at the end of the
    upgrade (`settle`), facts included."""
    db.execute("DELETE FROM item_page")


@migration
def pdf_full_text(db: sqlite3.Connection) -> None:
    """The attachments' full text, compressed, and its word index (store/fulltext.py). The search index
    now holds each field's accent-folded copy too: it is dropped, and the next search builds it anew."""
    fulltext.create(db)
    for table in ("search_index", "search_short", "search_papers", "search_curated"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute("DELETE FROM sync_state WHERE name = 'search_catalogue'")


@migration
def paper_vectors(db: sqlite3.Connection) -> None:
    """18: each paper's vector of meaning (`search.semantic`, store/vectors.py): a digest of the model and
    the text it was made from, and the vector (int8, with its scale); and all of them packed in one row
    (`vector_matrix`), which a search reads at once. Made once: a store whose record lost the later
    names (an upgrade from before them) may have them already."""
    made = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "paper_vectors" not in made:
        run_sql(
            db,
            """
            CREATE TABLE paper_vectors (
                paper TEXT PRIMARY KEY,   -- an item key
                made_from TEXT NOT NULL,  -- a digest of the model and the text
                vector BLOB NOT NULL      -- a float32 scale, then 256 int8 (little-endian)
            );
            """,
        )
    if "vector_matrix" not in made:
        run_sql(
            db,
            """
            CREATE TABLE vector_matrix (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                made TEXT NOT NULL,       -- changes with every packing: a reader's cache compares it
                papers TEXT NOT NULL,     -- the keys, one a line, in the rows' order
                matrix BLOB NOT NULL,     -- the papers' vectors, joined in that order
                mean BLOB NOT NULL,       -- float32: the mean vector
                lengths BLOB NOT NULL     -- float32: each vector's length once centred on the mean
            );
            """,
        )


@migration
def kept_reports(db: sqlite3.Connection) -> None:
    """A report a sync made from the page it exported (`status`'s), with what it was made from, so that
    a command asking for it while nothing changed reads it instead of reconciling the library again."""
    run_sql(
        db,
        """
        CREATE TABLE IF NOT EXISTS kept_reports (
            name TEXT PRIMARY KEY,         -- the report: 'status'
            made_from TEXT NOT NULL,       -- a digest of its inputs and the store's content generation
            body TEXT NOT NULL             -- the report, JSON
        ) WITHOUT ROWID;
        """,
    )


# Every table a migration (or the first search) makes: a store without the mark (application_id 0, from a
# zotsync before it) is ours only if it has the migrations table and none but these
# (`identity.identify`). A new migration's table joins here (tests/test_store.py checks that a new store
# has no other).
TABLES = frozenset(
    {
        "schema_migrations",
        "sync_state",
        "collections",
        "items",
        "item_tags",
        "item_collections",
        "catalogue_rows",
        "item_page",
        "export_files",
        "derived",
        "feed_entries",
        "note_changes",
        "paper_vectors",
        "vector_matrix",
        "kept_reports",
    }
    | searchindex.TABLES
    | fulltext.TABLES
)

# A hand edit of an `items` row shows on the page: the page row follows it, and its facts are cleared
# (NULL: the page computes them itself) unless only the tags or memberships changed, which no fact reads.
# Made anew after every upgrade (`settle`), as this zotsync defines them.
_PAGE_UPDATE_TRIGGERS = f"""
    DROP TRIGGER IF EXISTS item_page_update;
    DROP TRIGGER IF EXISTS item_page_lists;
    CREATE TRIGGER item_page_update
    AFTER UPDATE OF key, version, item_type, parent_key, title, deleted, creators, fields ON items BEGIN
        UPDATE item_page SET version = new.version, item_type = new.item_type, parent_key = new.parent_key,
            title = new.title, deleted = new.deleted, creators = new.creators,
            tags = new.tags, collections = new.collections,
            fields = {page_fields_sql("new.fields")}, facts = NULL, key = new.key
        WHERE key = old.key;
    END;
    CREATE TRIGGER item_page_lists AFTER UPDATE OF tags, collections ON items BEGIN
        UPDATE item_page SET tags = new.tags, collections = new.collections WHERE key = new.key;
    END;
"""


def settle(db: sqlite3.Connection) -> None:
    """The end of an upgrade (or of a new store's schema), in its transaction, once the items are as this
    zotsync reads them: an empty `item_page` is filled (6 empties it), and the triggers that keep it
    current are made anew."""
    if not db.execute("SELECT 1 FROM item_page").fetchone():
        fill_item_page(db)
    run_sql(db, _PAGE_UPDATE_TRIGGERS)


def fill_item_page(db: sqlite3.Connection) -> None:
    """Every item's page row, written by the code a pull uses, streamed (a 100k-item store is never held
    in memory at once)."""
    records = db.execute("SELECT * FROM items ORDER BY key")
    rows = (page_record(item_record(item), item) for item in items_of(records, known=None))
    while batch := list(itertools.islice(rows, BATCH)):
        db.executemany(INSERT_PAGE, batch)
    set_facts_version(db)


FACTS_VERSION_STATE = "facts_version"


def set_facts_version(db: sqlite3.Connection) -> None:
    db.execute("INSERT OR REPLACE INTO sync_state VALUES (?, ?)", (FACTS_VERSION_STATE, stored_version()))


def refresh_facts(db: sqlite3.Connection) -> None:
    """Facts another derivation computed (an older or newer zotsync, another Unicode database) computed
    again from the page rows themselves, so the store serves this zotsync's facts."""
    query = "SELECT * FROM item_page WHERE key > ? ORDER BY key LIMIT ?"
    for rows in by_key(db, query):
        db.executemany(
            "UPDATE item_page SET facts = ? WHERE key = ?",
            [(facts_json(item), item.key) for item in page_items(rows, known=None)],
        )
    set_facts_version(db)


def by_key(db: sqlite3.Connection, query: str) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of `query` (`… WHERE key > ? … ORDER BY key LIMIT ?`) a batch at a time, each read after
    the one before was handed on, so that a caller may rewrite a batch's rows before the next is read."""
    after = ""
    while rows := db.execute(query, (after, BATCH)).fetchall():
        yield rows
        after = rows[-1][0]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
