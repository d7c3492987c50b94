"""The Zotero desktop database (zotero.sqlite), read in place and never written.

Zotero keeps `zotero.sqlite` open with `PRAGMA locking_mode=EXCLUSIVE` while it runs, so an ordinary
read-only connection fails with "database is locked". Two ways around it, neither of which touches the
user's files:

* rollback-journal databases (Zotero ≤ 9): open `file:…?immutable=1`, which reads the committed pages
  without taking any lock and never creates a journal or a -shm file;
* WAL databases (Zotero 10, a `zotero.sqlite-wal` beside the file): committed transactions may still live
  only in the -wal file, which `immutable=1` ignores, so copy `zotero.sqlite` and its -wal together into a
  temporary folder and read the copy (SQLite replays the WAL there);
* a *hot* rollback journal (Zotero in the middle of a commit, or killed in one): the main file may hold
  half-written pages that `immutable=1` would read as data, so copy the file and its -journal and let
  SQLite roll the copy back to the last commit.

Zotero may write while we read. Each read is therefore checked: the file's size, mtime and header change
counter, and the size and mtime of its -wal and -journal, must be the same before and after, else it is
read again.

One library is read per source: the user's own ("My Library", `libraries.type = 'user'`), or a group
library named by its zotero.org group id (`groups.groupID`, the id in the group's web address and in the
Web API's `/groups/<id>`; not the file's internal `libraryID`). Feeds (`libraries.type = 'feed'`) are never
read.

Every numeric id in the system tables (item types, fields, creator types) is assigned per installation,
so everything is joined through names: `itemTypes.typeName`, `fields.fieldName`,
`creatorTypes.creatorType`. Items come out shaped like the Web API's JSON `data`: type-specific field
names, every field of the item's type (empty ones as ""), dates as the user typed them.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SourceError
from ..inputs import absolute, open_input
from ..model import NOT_A_KEY, ZOTERO_KEY, Changes, Collection, Creator, FullText, Item, Tag, sane_version
from ..secrets import excerpt
from .base import Sink, TextListing

log = logging.getLogger("zotsync")

DATABASE = "zotero.sqlite"

# itemAttachments.linkMode → the Web API's name for it.
LINK_MODES = {
    0: "imported_file",
    1: "imported_url",
    2: "linked_file",
    3: "linked_url",
    4: "embedded_image",
}
_IMPORTED = ("imported_file", "imported_url", "embedded_image")

# itemAnnotations.type → the API's annotationType.
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}

# Fields stored "multipart" ("2017-03-00 March 2017"): `date` and the type-specific fields mapped onto it.
DATE_FIELDS = frozenset({"date", "dateDecided", "dateEnacted", "issueDate", "filingDate"})
_MULTIPART = re.compile(r"\d{4}-\d{2}-\d{2} ")
_SQL_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})\Z")

# Tables whose absence means the file is not a Zotero database (name or alternatives).
_REQUIRED_TABLES: tuple[tuple[str, ...], ...] = (
    ("items",),
    ("itemData",),
    ("itemDataValues",),
    ("itemTypesCombined", "itemTypes"),
    ("fieldsCombined", "fields"),
    ("creators",),
    ("itemCreators",),
    ("creatorTypes",),
    ("tags",),
    ("itemTags",),
    ("collections",),
    ("collectionItems",),
    ("libraries",),
)
# The newest userdata schema zotsync is tested against (tests/zotero_sqlite.py builds it): Zotero 10.
NEWEST_SCHEMA = 129
NEWEST_ZOTERO = "Zotero 10"

# Columns that Zotero 5 introduced with its sync rewrite; older databases are not supported.
_REQUIRED_COLUMNS = {
    "items": ("itemID", "itemTypeID", "key", "libraryID", "version", "synced", "clientDateModified"),
    "collections": ("collectionID", "key", "libraryID", "version", "synced", "clientDateModified"),
    "libraries": ("libraryID", "type"),
}

_READ_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class _Library:
    """The library a source reads: its row in `libraries`, and how zotero.org names it."""

    library_id: int  # the file's own libraryID
    type: str  # user | group
    id: str  # the zotero.org user id or group id ("" for a user who never signed in)
    name: str  # the group's name, or the zotero.org user name ("" when unknown)


class LocalSource:
    """One library (the user's, or a group's) of a Zotero data directory, read from its zotero.sqlite.

    **Change detection.** The file has no change log that survives permanent deletions, so every pull
    reads the whole library and reports it with `complete=True`; the store diffs by key (a permanently
    deleted item simply vanishes) and rewrites only the objects whose version differs from what it holds.

    `items.version` alone cannot be that version: it is the last version *synced with zotero.org* (0 in a
    library that never syncs) and local edits do not move it. So each item and collection gets an
    *effective version*:

    * synced (`synced = 1`): `version`, the server's number, exactly what the Web API would report;
    * not synced since its last local write (`synced = 0`): `clientDateModified` as seconds since the
      epoch, plus `clientVersion` where the database has one (Zotero 10), or `version` if larger.

    Every local write in Zotero sets `synced = 0` and moves `clientDateModified` to now; every sync moves
    `version` and sets `synced = 1`. Both only grow, and an epoch timestamp (~1.7e9) is far above any
    server version, so the effective version is stable while nothing changes and differs after any local
    edit (a later timestamp) or sync (a new server version). Its one blind spot is two local edits of one
    item within the same second with a pull in between (timestamps have one-second resolution); the next
    edit or sync of that item catches up. No hashing is involved, so the numbers mean something when
    printed: the library version is the largest of them (it drops back to the server's number when Zotero
    uploads the edits, which is harmless, since every pull is a full read).

    A collection in the trash (`deletedCollections`, or below one) is treated as gone, and so are item
    memberships in it. Trashing or restoring a collection does not touch its items' rows, so an item in
    gone collections adds their `dateDeleted` timestamps to its effective version: the number changes
    when such a membership disappears and again when it comes back, whatever else the item went through.
    """

    def __init__(self, path: Path, library_type: str = "user", library_id: str = "") -> None:
        self.path = path
        self.database = path / DATABASE if path.is_dir() else path
        self.library_type = library_type
        # A user library needs no id (a data directory holds one); a group is named by its group id.
        self.group_id = library_id.strip() if library_type == "group" else ""

    requests = 0  # reads a local file: no HTTP
    _texts: dict[str, tuple[int | None, ...]]  # key → the page and character counts of its text

    @property
    def id(self) -> str:
        """The database and, for a group, the group: pulling another library rebuilds the store."""
        database = f"local:{absolute(self.database)}"
        return f"{database}#groups/{self.group_id}" if self.library_type == "group" else database

    def changes(self, since: int | None, sink: Sink | None = None) -> Changes:
        """The whole user library: `since` is ignored (see the class docstring), and so is `sink`."""
        database = self.database
        if not database.exists() and not database.is_symlink():
            raise ConfigError(f"no {DATABASE} at {self.path}")
        try:
            return self._read(database)
        except OSError as exc:
            raise SourceError(f"cannot read {database}: {exc.strerror or exc}") from None

    # -- the attachments' full text ------------------------------------------------------------
    def text_listing(self, since: int | None) -> TextListing:
        """Every attachment of the library in Zotero's `fulltextItems`, each stamped with its row's
        version and its `.zotero-ft-cache` file's size and time (so a text Zotero re-indexed is read
        again). Always the whole list: a file has no change log."""
        database = self.database
        if not database.exists():
            raise ConfigError(f"no {DATABASE} at {self.path}")
        self._texts = {}
        with _open(database) as db:
            reader = _Reader(db, database)
            if "fulltextItems" not in reader.tables:
                return TextListing({}, complete=True)
            reader._check_schema()
            library = reader._group(self.group_id) if self.library_type == "group" else reader._user_library()
            rows = reader.q(
                "SELECT i.key, f.version, f.indexedPages, f.totalPages, f.indexedChars, f.totalChars"
                " FROM fulltextItems f JOIN items i ON i.itemID = f.itemID WHERE i.libraryID = ?",
                (library.library_id,),
            )
        stamps = {}
        for key, version, *counts in rows:
            if not isinstance(key, str) or not ZOTERO_KEY.fullmatch(key):
                continue
            cache = self._cache_file(key)
            try:
                info = os.lstat(cache)
                stamp = f"{version}:{info.st_size}:{info.st_mtime_ns}"
            except OSError:
                stamp = f"{version}:none"
            stamps[key] = stamp
            self._texts[key] = tuple(c if isinstance(c, int) else None for c in counts)
        return TextListing(stamps, complete=True)

    def _cache_file(self, key: str) -> Path:
        return self.database.parent / "storage" / key / CACHE_FILE

    def fetch_texts(self, wanted: Mapping[str, str], each: Callable[[FullText], None]) -> None:
        """Each attachment's `.zotero-ft-cache` (a regular file only, at most MAX_CACHE bytes read,
        invalid UTF-8 as U+FFFD). A missing file is an attachment without text: the words Zotero keeps in
        `fulltextWords` are a set without order or repeats, no text to show or quote, so they are not
        made into one."""
        for key, stamp in sorted(wanted.items()):
            counts = self._texts.get(key, (None, None, None, None))
            each(FullText(key, stamp, read_cache(self._cache_file(key)), *counts))

    def _read(self, database: Path) -> Changes:
        for attempt in range(_READ_ATTEMPTS):
            before = _file_state(database)
            try:
                with _open(database) as db:
                    changes = _Reader(db, database).read(self.library_type, self.group_id)
            except FileNotFoundError:
                # A -wal or -journal vanished between seeing and copying it: Zotero checkpointed,
                # committed or quit. Read again (the main file's own absence is reported by the caller).
                if not database.is_file() or attempt + 1 == _READ_ATTEMPTS:
                    raise
                continue
            except sqlite3.DatabaseError as exc:
                # A page torn by a concurrent write can look like corruption: re-read before judging.
                if _file_state(database) != before and attempt + 1 < _READ_ATTEMPTS:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                raise SourceError(f"{database} is not a readable Zotero database: {_one_line(exc)}") from None
            if _file_state(database) == before:
                return changes
            log.debug("%s changed while it was read; reading it again", database)
            time.sleep(0.05 * (attempt + 1))
        raise SourceError(f"{database} kept changing while it was read (Zotero is busy): try again")


# -- the full-text cache files ----------------------------------------------------------------------------

CACHE_FILE = ".zotero-ft-cache"
MAX_CACHE = 8 * 2**20  # bytes of one cache file read: Zotero's own default limit is 500,000 characters
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; where it is missing, lstat before opening says it
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO must not wait for a writer before fstat tells it apart
_BINARY = getattr(os, "O_BINARY", 0)


def read_cache(path: Path) -> str | None:
    """The text of a `.zotero-ft-cache` file; None when there is none, or when it is no regular file
    (a symbolic link, a pipe, a device: never followed nor read), said in one debug line."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            log.debug("%s is not a regular file: not read", path)
            return None
        handle = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        if _NONBLOCK:
            os.set_blocking(handle, True)
        chunks, left = [], MAX_CACHE
        while left > 0 and (chunk := os.read(handle, min(left, 2**20))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(handle)
    return b"".join(chunks).decode("utf-8", "replace")


# -- opening without writing or locking ----------------------------------------------------------------


@contextmanager
def _open(database: Path) -> Iterator[sqlite3.Connection]:
    wal, journal = _beside(database, "-wal"), _beside(database, "-journal")
    if _size(wal) > 0:
        companion: Path | None = wal
    elif _is_hot(journal):
        companion = journal
    else:
        companion = None
    if companion is None:
        uri = database.resolve().as_uri() + "?immutable=1"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            db.execute("PRAGMA query_only = 1")
            yield db
        return
    with tempfile.TemporaryDirectory(prefix="zotsync-") as folder:
        copy = Path(folder) / DATABASE
        # The companion first; if Zotero commits or checkpoints between the two copies, the files' state
        # check in LocalSource._read sees it and reads again.
        shutil.copyfile(companion, _beside(copy, companion.name[len(database.name) :]))
        shutil.copyfile(database, copy)
        # A normal connection on our own copy: SQLite replays the WAL or rolls back the journal there.
        with closing(sqlite3.connect(copy)) as db:
            db.execute("PRAGMA query_only = 1")
            yield db


def _beside(database: Path, suffix: str) -> Path:
    return database.with_name(database.name + suffix)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


def _is_hot(journal: Path) -> bool:
    """A rollback journal whose header is intact: a transaction is being committed, or died in the
    middle. (A finished one is deleted, truncated to nothing or has its header zeroed.)"""
    try:
        with open_input(journal, "Zotero's journal", SourceError) as handle:
            return handle.read(8) == _JOURNAL_MAGIC
    except FileNotFoundError:
        return False


def _file_state(database: Path) -> tuple[object, ...]:
    """What changes whenever Zotero writes: the file's size and mtime and its header's change counter
    (bytes 24–27, bumped by every rollback-journal commit); the size and mtime of its -wal and -journal."""
    with open_input(database, "the Zotero database", SourceError) as handle:
        info = os.fstat(handle.fileno())
        header = handle.read(100)
    parts: list[object] = [info.st_size, info.st_mtime_ns, header[24:28]]
    for suffix in ("-wal", "-journal"):
        try:
            companion = _beside(database, suffix).stat()
            parts += [companion.st_size, companion.st_mtime_ns]
        except FileNotFoundError:
            parts.append(None)
    return tuple(parts)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# -- reading ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    item_id: int
    key: str
    item_type: str
    date_added: str
    date_modified: str
    version: int


class _Reader:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path
        self.tables = {name for (name,) in self.q("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.base_mappings: dict[tuple[str, str], str] = {}

    def q(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def read(self, library_type: str = "user", group_id: str = "") -> Changes:
        self._check_schema()
        library = self._group(group_id) if library_type == "group" else self._user_library()
        log.debug("reading the %s library %s of %s", library.type, library.id or "(local)", self.path)
        gone_since = self._gone_collections(library.library_id)
        collections, collections_version = self._collections(library.library_id, gone_since)
        items, items_version = self._items(library, gone_since)
        return Changes(
            library_version=max(collections_version, items_version),
            items=tuple(items),
            collections=tuple(collections),
            complete=True,
            library_type=library.type,
            library_id=library.id,
            library_name=library.name,
        )

    # -- schema ---------------------------------------------------------------------------------------
    def _check_schema(self) -> None:
        for names in _REQUIRED_TABLES:
            if not self.tables.intersection(names):
                raise SourceError(f"{self.path} is not a Zotero database (it has no table '{names[0]}')")
        for table, columns in _REQUIRED_COLUMNS.items():
            have = self.columns(table)
            missing = [c for c in columns if c not in have]
            if missing:
                raise SourceError(
                    f"{self.path}: unsupported Zotero database (schema {self._schema_version()}): "
                    f"table {table} lacks {', '.join(missing)}; zotsync reads Zotero 5 and later"
                )
        schema = self._schema_version()
        if schema.isdigit() and int(schema) > NEWEST_SCHEMA:
            # A newer Zotero may have moved data zotsync reads: refuse rather than read it wrong.
            raise SourceError(
                f"{self.path} has userdata schema {schema}; zotsync is tested up to {NEWEST_SCHEMA} "
                f"({NEWEST_ZOTERO}): upgrade zotsync"
            )
        log.debug("reading %s (Zotero userdata schema %s)", self.path, schema)

    def columns(self, table: str) -> set[str]:
        if table not in self.tables:
            return set()
        return {row[1] for row in self.q(f"PRAGMA table_info({table})")}

    def _schema_version(self) -> str:
        if "version" not in self.tables:
            return "unknown"
        row = self.q("SELECT version FROM version WHERE schema = 'userdata'")
        return str(row[0][0]) if row else "unknown"

    def _user_library(self) -> _Library:
        rows = self.q("SELECT libraryID FROM libraries WHERE type = 'user' ORDER BY libraryID")
        if not rows:
            raise SourceError(f"{self.path}: the Zotero database has no user library")
        return _Library(int(rows[0][0]), "user", self._account("userID"), self._account("username"))

    def _account(self, key: str) -> str:
        """The signed-in zotero.org account's `userID` (the Web API's library id) or `username`; empty
        if Zotero was never signed in."""
        if "settings" not in self.tables:
            return ""
        rows = self.q("SELECT value FROM settings WHERE setting = 'account' AND key = ?", (key,))
        return str(rows[0][0]) if rows and rows[0][0] is not None else ""

    def _group(self, group_id: str) -> _Library:
        """The group library with zotero.org group id `group_id`; a config error naming the groups
        there are when it is not in this database."""
        groups: list[tuple[int, int, str]] = []
        if "groups" in self.tables:
            groups = [
                (int(g), int(lib), str(name))
                for g, lib, name in self.q(
                    "SELECT g.groupID, g.libraryID, g.name FROM groups g JOIN libraries l USING (libraryID)"
                    " WHERE l.type = 'group' ORDER BY g.groupID"
                )
            ]
        found = next((g for g in groups if str(g[0]) == group_id), None)
        if found is not None:
            return _Library(found[1], "group", str(found[0]), found[2])
        there = (
            "its groups: " + ", ".join(f'{g} "{name}"' for g, _, name in groups)
            if groups
            else "it has no group libraries"
        )
        if not group_id:
            raise ConfigError(
                f"source.library_type group needs source.library_id, the group's id ({self.path}: {there})"
            )
        raise ConfigError(f"{self.path} has no group {group_id}; {there}")

    def _names(self, tables: tuple[str, ...], id_column: str, name_column: str) -> dict[int, str]:
        """id → name from the first of `tables` present (the *Combined views include custom types)."""
        table = next(t for t in tables if t in self.tables)
        rows = self.q(f"SELECT {id_column}, {name_column} FROM {table}")
        return {i: str(n) for i, n in rows if type(i) is int}  # a damaged row names nothing

    # -- versions -------------------------------------------------------------------------------------
    def _effective(
        self, version: object, synced: object, client_modified: str | None, client_version: object, what: str
    ) -> int:
        """See LocalSource's docstring. `what` names the object (`item ABCD2345`) for a refusal."""
        version = self._integer(version, what, "version")
        if synced:
            return version
        effective = max(
            version, _epoch(client_modified) + self._integer(client_version or 0, what, "clientVersion")
        )
        return self._integer(effective, what, "version")

    def _check_key(self, key: object, kind: str) -> None:
        """Zotero's keys only: a snapshot of this library must read back (hand-edited rows can hold any)."""
        if type(key) is not str or not ZOTERO_KEY.match(key):
            raise SourceError(f"{self.path}: the {kind} key {excerpt(repr(key), 40)} is {NOT_A_KEY}")

    def _integer(self, value: object, what: str, column: str) -> int:
        """A version or type number as Zotero writes it: an integer from 0 to 2^53. Anything else (text, a
        fraction, 1e30) is a damaged database: one line naming the object, not a number made up."""
        number = sane_version(value)
        if number is None:
            raise SourceError(
                f"{self.path}: {what} has {column} {excerpt(repr(value), 40)}, which is not an integer "
                "from 0 to 2^53"
            )
        return number

    # -- collections ----------------------------------------------------------------------------------
    def _gone_collections(self, library_id: int) -> dict[int, int]:
        """collectionID → epoch of the dateDeleted that puts it in the trash (its own or an ancestor's)."""
        if "deletedCollections" not in self.tables:
            return {}
        parents = dict(
            self.q(
                "SELECT collectionID, parentCollectionID FROM collections WHERE libraryID = ?", (library_id,)
            )
        )
        trashed = {
            int(c): _epoch(d) for c, d in self.q("SELECT collectionID, dateDeleted FROM deletedCollections")
        }
        gone: dict[int, int] = {}
        for collection in parents:
            node, seen, when = collection, set(), None
            while node is not None and node not in seen:
                seen.add(node)
                if node in trashed:
                    when = max(when or 0, trashed[node])
                node = parents.get(node)
            if when is not None:
                gone[collection] = when
        return gone

    def _collections(self, library_id: int, gone: Mapping[int, int]) -> tuple[list[Collection], int]:
        """The live collections, and the largest effective version of all (trashing one counts)."""
        client_version = "c.clientVersion" if "clientVersion" in self.columns("collections") else "0"
        rows = self.q(
            "SELECT c.collectionID, c.key, c.collectionName, p.key, c.version, c.synced,"
            f" c.clientDateModified, {client_version}"
            " FROM collections c LEFT JOIN collections p ON p.collectionID = c.parentCollectionID"
            " WHERE c.libraryID = ? ORDER BY c.key",
            (library_id,),
        )
        collections: list[Collection] = []
        latest = 0
        for cid, key, name, parent, version, synced, modified, cv in rows:
            self._check_key(key, "collection")
            effective = self._effective(version, synced, modified, cv, f"collection {key}")
            latest = max(latest, effective)
            if cid not in gone:
                parent_key = str(parent) if parent else None
                collections.append(Collection(str(key), effective, str(name), parent_key))
        return collections, latest

    # -- items ----------------------------------------------------------------------------------------
    def _items(self, library: _Library, gone: Mapping[int, int]) -> tuple[list[Item], int]:
        """The library's items, and the largest of their own effective versions."""
        item_types = self._names(("itemTypesCombined", "itemTypes"), "itemTypeID", "typeName")
        field_names = self._names(("fieldsCombined", "fields"), "fieldID", "fieldName")
        creator_types = self._names(("creatorTypes",), "creatorTypeID", "creatorType")
        self.base_mappings = self._base_mappings(item_types, field_names)
        client_version = "clientVersion" if "clientVersion" in self.columns("items") else "0"

        rows: dict[int, _Row] = {}
        versions: dict[int, int] = {}
        for item_id, type_id, key, added, modified, version, synced, client_modified, cv in self.q(
            "SELECT itemID, itemTypeID, key, dateAdded, dateModified, version, synced, clientDateModified,"
            f" {client_version} FROM items WHERE libraryID = ?",
            (library.library_id,),
        ):
            self._check_key(key, "item")
            # an id that is no integer (a damaged database) is as unknown as a number no type has
            item_type = item_types.get(type_id) if type(type_id) is int else None
            if item_type is None:
                log.warning(
                    "%s: item %s has an unknown item type id %s; skipped",
                    self.path,
                    key,
                    excerpt(repr(type_id), 40),
                )
                continue
            versions[item_id] = self._effective(version, synced, client_modified, cv, f"item {key}")
            rows[item_id] = _Row(item_id, str(key), item_type, added or "", modified or "", int(version))
        keys = {item_id: row.key for item_id, row in rows.items()}

        fields = self._field_values(rows, field_names)
        type_fields = self._type_fields(item_types, field_names)
        creators = self._creators(rows, creator_types)
        tags = self._tags(rows)
        parents, specials = self._children(rows, keys)
        memberships, gone_memberships = self._memberships(rows, gone)
        trashed = (
            {i for (i,) in self.q("SELECT itemID FROM deletedItems")}
            if "deletedItems" in self.tables
            else set()
        )

        items: list[Item] = []
        for item_id, row in rows.items():
            data: dict[str, Any] = dict.fromkeys(type_fields.get(row.item_type, ()), "")
            data.update(fields.get(item_id, {}))
            data.update(specials.get(item_id, {}))
            data["dateAdded"] = _iso(row.date_added)
            data["dateModified"] = _iso(row.date_modified)
            parent = parents.get(item_id)
            items.append(
                Item(
                    key=row.key,
                    version=versions[item_id] + gone_memberships.get(item_id, 0),
                    item_type=row.item_type,
                    title=self._title(row.item_type, data),
                    creators=tuple(creators.get(item_id, ())),
                    tags=tuple(tags.get(item_id, ())),
                    collections=() if parent else tuple(memberships.get(item_id, ())),
                    parent_key=parent,
                    deleted=item_id in trashed,
                    library_type=library.type,
                    library_id=library.id,
                    fields=data,
                )
            )
        items.sort(key=lambda item: item.key)
        return items, max(versions.values(), default=0)

    def _base_mappings(
        self, item_types: Mapping[int, str], field_names: Mapping[int, str]
    ) -> dict[tuple[str, str], str]:
        """(typeName, base field name) → the type-specific field name, e.g.
        (conferencePaper, publicationTitle) → proceedingsTitle."""
        table = (
            "baseFieldMappingsCombined" if "baseFieldMappingsCombined" in self.tables else "baseFieldMappings"
        )
        if table not in self.tables:
            return {}
        mappings: dict[tuple[str, str], str] = {}
        for type_id, base_id, field_id in self.q(f"SELECT itemTypeID, baseFieldID, fieldID FROM {table}"):
            names = item_types.get(type_id), field_names.get(base_id), field_names.get(field_id)
            if None not in names:
                mappings[(str(names[0]), str(names[1]))] = str(names[2])
        return mappings

    def _field_values(
        self, rows: Mapping[int, _Row], field_names: Mapping[int, str]
    ) -> dict[int, dict[str, str]]:
        values: dict[int, dict[str, str]] = {}
        for item_id, field_id, value in self.q(
            "SELECT d.itemID, d.fieldID, v.value FROM itemData d JOIN itemDataValues v USING (valueID)"
        ):
            row = rows.get(item_id)
            name = field_names.get(field_id)
            if row is None or name is None or value is None:
                continue
            # Zotero stores values under the type-specific field; a value filed under the base field
            # (an old or hand-edited database) still gets the name the API would give it.
            name = self.base_mappings.get((row.item_type, name), name)
            values.setdefault(item_id, {})[name] = _field_value(name, str(value))
        return values

    def _type_fields(
        self, item_types: Mapping[int, str], field_names: Mapping[int, str]
    ) -> dict[str, list[str]]:
        """Every field valid for each item type, in Zotero's order: the API lists empty ones as ""."""
        table = "itemTypeFieldsCombined" if "itemTypeFieldsCombined" in self.tables else "itemTypeFields"
        if table not in self.tables:
            return {}
        result: dict[str, list[str]] = {}
        for type_id, field_id in self.q(
            f"SELECT itemTypeID, fieldID FROM {table} ORDER BY itemTypeID, orderIndex"
        ):
            if type_id in item_types and field_id in field_names:
                result.setdefault(item_types[type_id], []).append(field_names[field_id])
        return result

    def _title(self, item_type: str, data: Mapping[str, Any]) -> str:
        """`title`, or the type's own field mapped onto it (caseName, subject, nameOfAct), as Zotero shows."""
        name = self.base_mappings.get((item_type, "title"), "title")
        value = data.get("title") or data.get(name) or ""
        return value if isinstance(value, str) else ""

    def _creators(
        self, rows: Mapping[int, _Row], creator_types: Mapping[int, str]
    ) -> dict[int, list[Creator]]:
        creators: dict[int, list[Creator]] = {}
        for item_id, type_id, first, last, mode in self.q(
            "SELECT ic.itemID, ic.creatorTypeID, c.firstName, c.lastName, c.fieldMode"
            " FROM itemCreators ic JOIN creators c USING (creatorID) ORDER BY ic.itemID, ic.orderIndex"
        ):
            if item_id not in rows:
                continue
            creator_type = creator_types.get(type_id, "author")
            if mode == 1:  # a single-field name (an organisation), kept in lastName
                creator = Creator(creator_type=creator_type, name=last or "")
            else:
                creator = Creator(creator_type=creator_type, last_name=last or "", first_name=first or "")
            creators.setdefault(item_id, []).append(creator)
        return creators

    def _tags(self, rows: Mapping[int, _Row]) -> dict[int, list[Tag]]:
        tags: dict[int, list[Tag]] = {}
        for item_id, name, kind in self.q(
            "SELECT it.itemID, t.name, it.type FROM itemTags it JOIN tags t USING (tagID)"
        ):
            if item_id in rows:
                if kind not in (None, 0, 1) or isinstance(kind, bool | float):
                    raise SourceError(
                        f"{self.path}: item {rows[item_id].key} has the tag {excerpt(str(name), 40)!r} of "
                        f"type {excerpt(repr(kind), 40)}, which is neither 0 (manual) nor 1 (automatic)"
                    )
                tags.setdefault(item_id, []).append(Tag(str(name), int(kind or 0)))
        for found in tags.values():
            found.sort(key=lambda tag: (tag.name.casefold(), tag.name, tag.type))
        return tags

    def _memberships(
        self, rows: Mapping[int, _Row], gone: Mapping[int, int]
    ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """Live memberships by item; for items in gone collections, the sum of their dateDeleted."""
        memberships: dict[int, list[str]] = {}
        gone_memberships: dict[int, int] = {}
        for item_id, collection_id, key in self.q(
            "SELECT ci.itemID, ci.collectionID, c.key FROM collectionItems ci JOIN collections c"
            " USING (collectionID) ORDER BY ci.itemID, c.key"
        ):
            if item_id not in rows:
                continue
            if collection_id in gone:
                gone_memberships[item_id] = gone_memberships.get(item_id, 0) + gone[collection_id]
            else:
                memberships.setdefault(item_id, []).append(str(key))
        return memberships, gone_memberships

    def _children(
        self, rows: Mapping[int, _Row], keys: Mapping[int, str]
    ) -> tuple[dict[int, str], dict[int, dict[str, Any]]]:
        """Parent keys of notes, attachments and annotations, and their own fields as the API names them."""
        parents: dict[int, str] = {}
        specials: dict[int, dict[str, Any]] = {}

        def parent_of(item_id: int, parent_id: int | None) -> None:
            if parent_id is not None and parent_id in keys:
                parents[item_id] = keys[parent_id]

        charsets = (
            dict(self.q("SELECT charsetID, charset FROM charsets")) if "charsets" in self.tables else {}
        )
        if "itemAttachments" in self.tables:
            for item_id, parent_id, mode, content_type, charset_id, path, mtime, md5 in self.q(
                "SELECT itemID, parentItemID, linkMode, contentType, charsetID, path, storageModTime,"
                " storageHash FROM itemAttachments"
            ):
                if item_id not in rows:
                    continue
                parent_of(item_id, parent_id)
                link_mode = LINK_MODES.get(mode, str(mode))
                data: dict[str, Any] = {
                    "linkMode": link_mode,
                    "contentType": content_type or "",
                    "charset": charsets.get(charset_id, "") or "",
                    "note": "",
                }
                if link_mode in _IMPORTED:
                    # "storage:<file>" under storage/<key>/: the API calls it the filename.
                    name = path or ""
                    data["filename"] = name[len("storage:") :] if name.startswith("storage:") else name
                    data["md5"] = md5
                    data["mtime"] = mtime
                elif link_mode == "linked_file":
                    data["path"] = path or ""  # absolute, or "attachments:<relative>" (base directory)
                specials[item_id] = data
        if "itemNotes" in self.tables:
            for item_id, parent_id, note in self.q("SELECT itemID, parentItemID, note FROM itemNotes"):
                if item_id not in rows:
                    continue
                if rows[item_id].item_type == "note":
                    parent_of(item_id, parent_id)
                specials.setdefault(item_id, {})["note"] = note or ""
        if "itemAnnotations" in self.tables:
            annotation_columns = self.columns("itemAnnotations")
            wanted = {
                "text": "annotationText",
                "comment": "annotationComment",
                "color": "annotationColor",
                "pageLabel": "annotationPageLabel",
                "sortIndex": "annotationSortIndex",
                "position": "annotationPosition",
            }
            present = [c for c in wanted if c in annotation_columns]
            select = ", ".join(["itemID", "parentItemID", "type", *present])
            for item_id, parent_id, kind, *values in self.q(f"SELECT {select} FROM itemAnnotations"):
                if item_id not in rows:
                    continue
                parent_of(item_id, parent_id)
                data = {"annotationType": ANNOTATION_TYPES.get(kind, str(kind))}
                data.update(
                    {wanted[c]: "" if v is None else str(v) for c, v in zip(present, values, strict=True)}
                )
                specials[item_id] = data
        return parents, specials


# -- values -------------------------------------------------------------------------------------------


def _field_value(name: str, value: str) -> str:
    if name in DATE_FIELDS and _MULTIPART.match(value):
        return value[11:]  # "2017-00-00 2017": the user's text follows the sortable prefix
    if name == "accessDate":
        return _iso(value)
    return value


def _iso(value: str) -> str:
    """Zotero's UTC `YYYY-MM-DD HH:MM:SS` → the API's `YYYY-MM-DDTHH:MM:SSZ` (anything else unchanged)."""
    match = _SQL_DATETIME.match(value or "")
    return f"{match.group(1)}T{match.group(2)}Z" if match else (value or "")


def _epoch(value: str | None) -> int:
    match = _SQL_DATETIME.match(value or "")
    if not match:
        return 0
    try:
        moment = datetime.strptime(f"{match.group(1)} {match.group(2)}", "%Y-%m-%d %H:%M:%S")
    except ValueError:  # month 13, hour 25: no moment, as for text that is no date at all
        return 0
    return int(moment.replace(tzinfo=UTC).timestamp())
