"""Build real zotero.sqlite files for tests, filled from the snapshot format (Web API JSON objects).

The tables and columns are Zotero's own (userdata schema 123, Zotero 7), reduced to what a reader of the
library needs; `schema=129` builds a Zotero 10 database instead (WAL mode, `clientVersion` on items and
collections, counting local writes). System ids (item types, fields, creator types) are *shuffled* per
seed, as they differ between real installations, so a reader that hard-codes or compares numeric ids
reads garbage here.

Modes a test can put the file in:
* the default: a rollback-journal database, closed (Zotero ≤ 9 not running);
* `held(path)`: another connection holds `PRAGMA locking_mode=EXCLUSIVE`, as a running Zotero does
  (with `wal=True`, in WAL mode with checkpoints off, as Zotero 10 would);
* `leave_wal(path, edit)`: a WAL database whose last transactions are committed but only in the -wal file;
* `leave_hot_journal(path, sql)`: a writer killed in the middle of a transaction whose pages had already
  spilled into the main file, leaving a hot -journal (what a reader sees during a commit, or after a crash).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

USERDATA_VERSION = 123  # Zotero 7–8
ZOTERO_10 = 129  # userdata schema of Zotero 10: WAL, clientVersion columns

ITEM_TYPES = tuple(
    [
        "annotation",
        "artwork",
        "attachment",
        "audioRecording",
        "bill",
        "blogPost",
        "book",
        "bookSection",
        "case",
        "computerProgram",
        "conferencePaper",
        "dataset",
        "dictionaryEntry",
        "document",
        "email",
        "encyclopediaArticle",
        "film",
        "forumPost",
        "hearing",
        "instantMessage",
        "interview",
        "journalArticle",
        "letter",
        "magazineArticle",
        "manuscript",
        "map",
        "newspaperArticle",
        "note",
        "patent",
        "podcast",
        "preprint",
        "presentation",
        "radioBroadcast",
        "report",
        "standard",
        "statute",
        "thesis",
        "tvBroadcast",
        "videoRecording",
        "webpage",
    ]
)
CREATOR_TYPES = tuple(
    [
        "author",
        "contributor",
        "editor",
        "translator",
        "seriesEditor",
        "bookAuthor",
        "programmer",
        "reviewedAuthor",
        "recipient",
        "interviewee",
        "interviewer",
        "director",
        "producer",
        "castMember",
        "sponsor",
        "counsel",
        "inventor",
        "attorneyAgent",
        "commenter",
        "presenter",
        "guest",
        "podcaster",
        "cosponsor",
        "wordsBy",
        "performer",
        "composer",
        "artist",
        "cartographer",
    ]
)
# (item type, type-specific field) → base field, as in Zotero's baseFieldMappings.
BASE_MAPPINGS: dict[tuple[str, str], str] = {
    ("conferencePaper", "proceedingsTitle"): "publicationTitle",
    ("bookSection", "bookTitle"): "publicationTitle",
    ("blogPost", "blogTitle"): "publicationTitle",
    ("blogPost", "websiteType"): "type",
    ("webpage", "websiteTitle"): "publicationTitle",
    ("webpage", "websiteType"): "type",
    ("forumPost", "forumTitle"): "publicationTitle",
    ("encyclopediaArticle", "encyclopediaTitle"): "publicationTitle",
    ("dictionaryEntry", "dictionaryTitle"): "publicationTitle",
    ("preprint", "repository"): "publisher",
    ("preprint", "archiveID"): "number",
    ("report", "reportNumber"): "number",
    ("report", "reportType"): "type",
    ("report", "institution"): "publisher",
    ("thesis", "thesisType"): "type",
    ("thesis", "university"): "publisher",
    ("computerProgram", "company"): "publisher",
    ("case", "caseName"): "title",
    ("case", "dateDecided"): "date",
    ("case", "docketNumber"): "number",
    ("case", "reporter"): "publicationTitle",
    ("email", "subject"): "title",
    ("statute", "nameOfAct"): "title",
    ("statute", "dateEnacted"): "date",
    ("patent", "issueDate"): "date",
    ("patent", "patentNumber"): "number",
}
BASE_FIELDS = ("title", "date", "publicationTitle", "publisher", "number", "type", "pages", "volume")
DATE_FIELDS = frozenset({"date", "dateDecided", "dateEnacted", "issueDate", "filingDate"})
LINK_MODES = {"imported_file": 0, "imported_url": 1, "linked_file": 2, "linked_url": 3, "embedded_image": 4}

# Keys of an item's API `data` that are not itemData fields.
STRUCTURED = frozenset(
    {"key", "version", "itemType", "creators", "tags", "collections", "parentItem", "deleted", "relations"}
)
ATTACHMENT_COLUMNS = frozenset(
    {"linkMode", "contentType", "charset", "filename", "md5", "mtime", "path", "note"}
)
NOW = "2024-05-01 12:00:00"

SCHEMA = """
CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
CREATE TABLE settings (setting TEXT, key TEXT, value, PRIMARY KEY (setting, key));
CREATE TABLE charsets (charsetID INTEGER PRIMARY KEY, charset TEXT UNIQUE);
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT,
    display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE itemTypeFields (itemTypeID INT, fieldID INT, hide INT, orderIndex INT,
    PRIMARY KEY (itemTypeID, orderIndex), UNIQUE (itemTypeID, fieldID));
CREATE TABLE baseFieldMappings (itemTypeID INT, baseFieldID INT, fieldID INT,
    PRIMARY KEY (itemTypeID, baseFieldID, fieldID));
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
    filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0);
CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL,
    description TEXT NOT NULL, version INT NOT NULL);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key));
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT,
    charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT,
    lastProcessedModificationTime INT);
CREATE TABLE itemAnnotations (itemID INTEGER PRIMARY KEY, parentItemID INT NOT NULL, type INTEGER NOT NULL,
    authorName TEXT, text TEXT, comment TEXT, color TEXT, pageLabel TEXT, sortIndex TEXT NOT NULL,
    position TEXT NOT NULL, isExternal INT NOT NULL);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL,
    PRIMARY KEY (itemID, tagID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key));
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (collectionID, itemID));
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE TABLE deletedCollections (collectionID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
"""
# Zotero 5.0.x+ also has these views of system + custom types; a `combined=False` database lacks them.
COMBINED = """
CREATE TABLE itemTypesCombined (itemTypeID INT NOT NULL, typeName TEXT NOT NULL,
    display INT DEFAULT 1 NOT NULL, custom INT NOT NULL, PRIMARY KEY (itemTypeID));
CREATE TABLE fieldsCombined (fieldID INT NOT NULL, fieldName TEXT NOT NULL, label TEXT, fieldFormatID INT,
    custom INT NOT NULL, PRIMARY KEY (fieldID));
CREATE TABLE itemTypeFieldsCombined (itemTypeID INT NOT NULL, fieldID INT NOT NULL, hide INT,
    orderIndex INT NOT NULL, PRIMARY KEY (itemTypeID, orderIndex), UNIQUE (itemTypeID, fieldID));
CREATE TABLE baseFieldMappingsCombined (itemTypeID INT, baseFieldID INT, fieldID INT,
    PRIMARY KEY (itemTypeID, baseFieldID, fieldID));
"""

USER_LIBRARY = 1
GROUP_LIBRARY = 2  # the file's libraryID of the group below
GROUP_ID, GROUP_NAME = 4711, "A group"  # its zotero.org group id and name
FEED_LIBRARY = 3


def load_snapshot(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def sql_time(iso: str) -> str:
    """The API's `2023-07-22T07:31:02Z` → Zotero's UTC `2023-07-22 07:31:02`."""
    return iso.replace("T", " ").removesuffix("Z") if iso else NOW


def to_multipart(text: str) -> str:
    """What Zotero stores for a date: a sortable `YYYY-MM-DD` (zeros where unknown), a space, the text."""
    match = re.match(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?", text)
    if match:
        year, month, day = match.group(1), match.group(2) or "0", match.group(3) or "0"
    else:
        found = re.search(r"(?<!\d)(\d{4})(?!\d)", text)
        year, month, day = (found.group(1) if found else "0000"), "0", "0"
    return f"{year}-{int(month):02d}-{int(day):02d} {text}"


def is_collection(obj: Mapping[str, Any]) -> bool:
    data = obj.get("data", obj)
    return "name" in data and "parentCollection" in data


class ZoteroDB:
    """A zotero.sqlite under construction. Each method opens, commits and closes its own connection,
    unless given `conn` (a connection that holds the file, as Zotero does while running)."""

    def __init__(
        self,
        path: Path,
        *,
        seed: int = 0,
        combined: bool = True,
        item_types: Iterable[str] = (),
        fields: Iterable[str] = (),
        type_fields: Mapping[str, Iterable[str]] | None = None,
        user_id: int | None = None,
        schema: int = USERDATA_VERSION,
    ) -> None:
        self.path = path
        self.rng = random.Random(seed)
        self.combined = combined
        self.schema = schema
        self.client_versions = schema >= ZOTERO_10
        path.parent.mkdir(parents=True, exist_ok=True)
        field_names = list(dict.fromkeys([*BASE_FIELDS, *(f for _, f in BASE_MAPPINGS), *fields]))
        types = list(dict.fromkeys([*ITEM_TYPES, *item_types]))
        self.type_ids = self._shuffled(types)
        self.field_ids = self._shuffled(field_names)
        self.creator_type_ids = self._shuffled(CREATOR_TYPES)
        if self.client_versions:
            with closing(sqlite3.connect(path)) as db:
                db.execute("PRAGMA journal_mode = WAL")  # persistent: the file's header says WAL
        with self.connect() as db:
            db.executescript(SCHEMA + (COMBINED if combined else ""))
            if self.client_versions:
                for table in ("items", "collections"):
                    db.execute(f"ALTER TABLE {table} ADD COLUMN clientVersion INT NOT NULL DEFAULT 0")
            db.executemany("INSERT INTO version VALUES (?, ?)", [("userdata", schema), ("system", 32)])
            db.executemany("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", _rows(self.type_ids))
            db.executemany("INSERT INTO fields VALUES (?, ?, NULL)", _rows(self.field_ids))
            db.executemany("INSERT INTO creatorTypes VALUES (?, ?)", _rows(self.creator_type_ids))
            db.executemany(
                "INSERT INTO baseFieldMappings VALUES (?, ?, ?)",
                [
                    (self.type_ids[t], self.field_ids[base], self.field_ids[f])
                    for (t, f), base in BASE_MAPPINGS.items()
                ],
            )
            if combined:
                db.executemany("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", _rows(self.type_ids))
                db.executemany(
                    "INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)", _rows(self.field_ids)
                )
                db.execute("INSERT INTO baseFieldMappingsCombined SELECT * FROM baseFieldMappings")
            db.executemany(
                "INSERT INTO libraries VALUES (?, ?, 1, 1, 0, 0, 0, 0)",
                [(USER_LIBRARY, "user"), (GROUP_LIBRARY, "group"), (FEED_LIBRARY, "feed")],
            )
            db.execute("INSERT INTO groups VALUES (?, ?, ?, '', 1)", (GROUP_ID, GROUP_LIBRARY, GROUP_NAME))
            if user_id is not None:
                db.execute("INSERT INTO settings VALUES ('account', 'userID', ?)", (user_id,))
        self.type_fields: dict[str, list[str]] = {}
        for item_type, names in (type_fields or {}).items():
            self.declare_fields(item_type, names)

    def _shuffled(self, names: Iterable[str]) -> dict[str, int]:
        names = list(names)
        ids = self.rng.sample(range(1, 10 * len(names) + 10), len(names))
        return dict(zip(names, ids, strict=True))

    @contextmanager
    def connect(self, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        if conn is not None:
            with conn:
                yield conn
            return
        with closing(sqlite3.connect(self.path)) as db, db:
            yield db

    # -- vocabulary ---------------------------------------------------------------------------------
    def field_id(self, name: str, db: sqlite3.Connection) -> int:
        if name not in self.field_ids:
            used = set(self.field_ids.values())
            new = max(used) + self.rng.randint(1, 5)
            self.field_ids[name] = new
            db.execute("INSERT INTO fields VALUES (?, ?, NULL)", (new, name))
            if self.combined:
                db.execute("INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)", (new, name))
        return self.field_ids[name]

    def declare_fields(
        self, item_type: str, names: Iterable[str], conn: sqlite3.Connection | None = None
    ) -> None:
        """The fields valid for an item type (itemTypeFields), in order; the API lists them all."""
        with self.connect(conn) as db:
            known = self.type_fields.setdefault(item_type, [])
            for name in names:
                if name in known:
                    continue
                row = (self.type_ids[item_type], self.field_id(name, db), 0, len(known))
                db.execute("INSERT INTO itemTypeFields VALUES (?, ?, ?, ?)", row)
                if self.combined:
                    db.execute("INSERT INTO itemTypeFieldsCombined VALUES (?, ?, ?, ?)", row)
                known.append(name)

    # -- filling from API JSON ---------------------------------------------------------------------
    def add(
        self, objects: Iterable[Mapping[str, Any]], *, synced: bool = True, library: int = USER_LIBRARY
    ) -> None:
        """Insert API objects (items and collections mixed) into a library (the user's unless told), as
        a sync would: `version` = the object's version, `synced` = 1 (or a never-synced library: version 0,
        synced 0)."""
        objects = list(objects)
        with self.connect() as db:
            user = next(
                (o["library"] for o in objects if (o.get("library") or {}).get("type") == "user"), None
            )
            if user and "id" in user:
                db.execute("INSERT OR REPLACE INTO settings VALUES ('account', 'userID', ?)", (user["id"],))
            collections = [o.get("data", o) for o in objects if is_collection(o)]
            items = [o.get("data", o) for o in objects if not is_collection(o)]
            for data in collections:
                self._insert_collection(db, data, synced, library)
            for data in collections:
                if data.get("parentCollection"):
                    db.execute(
                        "UPDATE collections SET parentCollectionID = ? WHERE collectionID = ?",
                        (
                            self.collection_id(data["parentCollection"], db),
                            self.collection_id(data["key"], db),
                        ),
                    )
            for data in items:
                names = [k for k in data if k not in STRUCTURED and k not in ("dateAdded", "dateModified")]
                if data["itemType"] == "attachment":
                    names = [k for k in names if k not in ATTACHMENT_COLUMNS]
                elif data["itemType"] == "note":
                    names = []
                self.declare_fields(data["itemType"], names, conn=db)
            for data in items:
                self._insert_item(db, data, synced, library)
            for data in items:
                if data.get("parentItem"):
                    self._link_child(db, data)

    def _insert_collection(
        self, db: sqlite3.Connection, data: Mapping[str, Any], synced: bool, library: int = USER_LIBRARY
    ) -> None:
        db.execute(
            "INSERT INTO collections (collectionID, collectionName, clientDateModified, libraryID, key,"
            " version, synced) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self._new_id(db, "collections", "collectionID"),
                data["name"],
                NOW,
                library,
                data["key"],
                int(data.get("version", 0)) if synced else 0,
                int(synced),
            ),
        )
        if data.get("deleted"):
            db.execute(
                "INSERT INTO deletedCollections VALUES (?, ?)", (self.collection_id(data["key"], db), NOW)
            )

    def _insert_item(
        self, db: sqlite3.Connection, data: Mapping[str, Any], synced: bool, library: int = USER_LIBRARY
    ) -> int:
        item_id = self._new_id(db, "items", "itemID")
        modified = sql_time(data.get("dateModified", ""))
        db.execute(
            "INSERT INTO items (itemID, itemTypeID, dateAdded, dateModified, clientDateModified, libraryID,"
            " key, version, synced) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item_id,
                self.type_ids[data["itemType"]],
                sql_time(data.get("dateAdded", "")),
                modified,
                modified,
                library,
                data["key"],
                int(data.get("version", 0)) if synced else 0,
                int(synced),
            ),
        )
        skip = ATTACHMENT_COLUMNS if data["itemType"] == "attachment" else {"note"}
        for name, value in data.items():
            if name in STRUCTURED or name in skip or name in ("dateAdded", "dateModified"):
                continue
            if value in ("", None):
                continue  # Zotero stores no row for an empty field
            self.set_value(db, item_id, name, _stored(name, str(value)))
        for index, creator in enumerate(data.get("creators", ())):
            self._add_creator(db, item_id, index, creator)
        for tag in data.get("tags", ()):
            self._add_tag(db, item_id, tag["tag"], int(tag.get("type", 0)))
        for index, key in enumerate(data.get("collections", ())):
            if not db.execute("SELECT 1 FROM collections WHERE key = ?", (key,)).fetchone():
                # a membership in a collection the objects do not include (a lone API item)
                self._insert_collection(db, {"key": key, "name": key, "version": 0}, synced, library)
            db.execute(
                "INSERT INTO collectionItems VALUES (?, ?, ?)", (self.collection_id(key, db), item_id, index)
            )
        if data["itemType"] == "note":
            note = data.get("note", "")
            db.execute("INSERT INTO itemNotes VALUES (?, NULL, ?, ?)", (item_id, note, _note_title(note)))
        if data["itemType"] == "attachment":
            self._insert_attachment(db, item_id, data)
        if data.get("deleted"):
            db.execute("INSERT INTO deletedItems VALUES (?, ?)", (item_id, modified))
        return item_id

    def _insert_attachment(self, db: sqlite3.Connection, item_id: int, data: Mapping[str, Any]) -> None:
        link_mode = LINK_MODES[data.get("linkMode", "imported_file")]
        charset_id = None
        if data.get("charset"):
            db.execute("INSERT OR IGNORE INTO charsets (charset) VALUES (?)", (data["charset"],))
            charset_id = db.execute(
                "SELECT charsetID FROM charsets WHERE charset = ?", (data["charset"],)
            ).fetchone()[0]
        # Imported files live in storage/<key>/ and are stored as "storage:<name>"; linked ones by path.
        path = f"storage:{data['filename']}" if data.get("filename") else data.get("path") or None
        db.execute(
            "INSERT INTO itemAttachments VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                item_id,
                link_mode,
                data.get("contentType", ""),
                charset_id,
                path,
                2 if link_mode in (0, 1) else 0,
                data.get("mtime"),
                data.get("md5"),
            ),
        )
        if data.get("note"):
            # Zotero keeps an attachment's note in itemNotes, with parentItemID left NULL.
            db.execute("INSERT INTO itemNotes VALUES (?, NULL, ?, ?)", (item_id, data["note"], ""))

    def _link_child(self, db: sqlite3.Connection, data: Mapping[str, Any]) -> None:
        item_id, parent_id = self.item_id(data["key"], db), self.item_id(data["parentItem"], db)
        table = "itemAttachments" if data["itemType"] == "attachment" else "itemNotes"
        db.execute(f"UPDATE {table} SET parentItemID = ? WHERE itemID = ?", (parent_id, item_id))

    def _add_creator(
        self, db: sqlite3.Connection, item_id: int, index: int, creator: Mapping[str, Any]
    ) -> None:
        if "name" in creator:
            names = ("", creator["name"], 1)  # single field: Zotero keeps it in lastName, fieldMode 1
        else:
            names = (creator.get("firstName", ""), creator.get("lastName", ""), 0)
        db.execute("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)", names)
        creator_id = db.execute(
            "SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ? AND fieldMode = ?", names
        ).fetchone()[0]
        db.execute(
            "INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
            (item_id, creator_id, self.creator_type_ids[creator.get("creatorType", "author")], index),
        )

    def _add_tag(self, db: sqlite3.Connection, item_id: int, name: str, kind: int) -> None:
        db.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (name,))
        tag_id = db.execute("SELECT tagID FROM tags WHERE name = ?", (name,)).fetchone()[0]
        db.execute("INSERT INTO itemTags VALUES (?, ?, ?)", (item_id, tag_id, kind))

    def set_value(self, db: sqlite3.Connection, item_id: int, field: str, stored: str) -> None:
        """One itemData row, the value shared through itemDataValues as Zotero does."""
        db.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (stored,))
        value_id = db.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (stored,)).fetchone()[0]
        db.execute(
            "INSERT OR REPLACE INTO itemData VALUES (?, ?, ?)", (item_id, self.field_id(field, db), value_id)
        )

    def _new_id(self, db: sqlite3.Connection, table: str, column: str) -> int:
        """A random unused id: row ids in a real database follow no order a reader could rely on."""
        while True:
            candidate = self.rng.randint(1, 1_000_000)
            if not db.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (candidate,)).fetchone():
                return candidate

    # -- lookups ------------------------------------------------------------------------------------
    def item_id(self, key: str, db: sqlite3.Connection) -> int:
        return db.execute("SELECT itemID FROM items WHERE key = ?", (key,)).fetchone()[0]

    def collection_id(self, key: str, db: sqlite3.Connection) -> int:
        return db.execute("SELECT collectionID FROM collections WHERE key = ?", (key,)).fetchone()[0]

    # -- what Zotero does on a local edit (synced = 0, clientDateModified = now) ----------------------
    def touch(self, db: sqlite3.Connection, item_id: int, at: str) -> None:
        db.execute("UPDATE items SET synced = 0, clientDateModified = ? WHERE itemID = ?", (at, item_id))
        if self.client_versions:  # Zotero 10 also counts local writes
            db.execute("UPDATE items SET clientVersion = clientVersion + 1 WHERE itemID = ?", (item_id,))

    def _touch_collection(self, db: sqlite3.Connection, collection_id: int, at: str) -> None:
        db.execute(
            "UPDATE collections SET synced = 0, clientDateModified = ? WHERE collectionID = ?",
            (at, collection_id),
        )
        if self.client_versions:
            db.execute(
                "UPDATE collections SET clientVersion = clientVersion + 1 WHERE collectionID = ?",
                (collection_id,),
            )

    def add_group(self, group_id: int, name: str) -> int:
        """Another group library (Zotero adds one per group the account joins); returns its libraryID."""
        with self.connect() as db:
            library = int(db.execute("SELECT max(libraryID) + 1 FROM libraries").fetchone()[0])
            db.execute("INSERT INTO libraries VALUES (?, 'group', 1, 1, 0, 0, 0, 0)", (library,))
            db.execute("INSERT INTO groups VALUES (?, ?, ?, '', 1)", (group_id, library, name))
        return library

    def edit_field(
        self, key: str, field: str, value: str, *, at: str, conn: sqlite3.Connection | None = None
    ) -> None:
        with self.connect(conn) as db:
            item_id = self.item_id(key, db)
            self.set_value(db, item_id, field, _stored(field, value))
            db.execute("UPDATE items SET dateModified = ? WHERE itemID = ?", (at, item_id))
            self.touch(db, item_id, at)

    def add_item(
        self,
        data: Mapping[str, Any],
        *,
        synced: bool = False,
        library: int = USER_LIBRARY,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        with self.connect(conn) as db:
            fields = [k for k in data if k not in STRUCTURED and k not in ATTACHMENT_COLUMNS]
            self.declare_fields(
                data["itemType"], [f for f in fields if f not in ("dateAdded", "dateModified")], db
            )
            self._insert_item(db, data, synced, library)
            if data.get("parentItem"):
                self._link_child(db, data)

    def trash(self, key: str, *, at: str, conn: sqlite3.Connection | None = None) -> None:
        with self.connect(conn) as db:
            item_id = self.item_id(key, db)
            db.execute("INSERT OR REPLACE INTO deletedItems VALUES (?, ?)", (item_id, at))
            self.touch(db, item_id, at)

    def restore(self, key: str, *, at: str, conn: sqlite3.Connection | None = None) -> None:
        with self.connect(conn) as db:
            item_id = self.item_id(key, db)
            db.execute("DELETE FROM deletedItems WHERE itemID = ?", (item_id,))
            self.touch(db, item_id, at)

    def erase(self, key: str, *, conn: sqlite3.Connection | None = None) -> None:
        """A permanent deletion (emptying the trash): the rows are gone, nothing else remembers the key
        but Zotero's syncDeleteLog, which a reader of the library does not need."""
        with self.connect(conn) as db:
            item_id = self.item_id(key, db)
            for table in (
                "itemData",
                "itemCreators",
                "itemTags",
                "collectionItems",
                "deletedItems",
                "itemNotes",
                "itemAttachments",
                "items",
            ):
                db.execute(f"DELETE FROM {table} WHERE itemID = ?", (item_id,))

    def trash_collection(self, key: str, *, at: str, conn: sqlite3.Connection | None = None) -> None:
        with self.connect(conn) as db:
            collection_id = self.collection_id(key, db)
            db.execute("INSERT OR REPLACE INTO deletedCollections VALUES (?, ?)", (collection_id, at))
            self._touch_collection(db, collection_id, at)

    def restore_collection(self, key: str, *, at: str, conn: sqlite3.Connection | None = None) -> None:
        with self.connect(conn) as db:
            collection_id = self.collection_id(key, db)
            db.execute("DELETE FROM deletedCollections WHERE collectionID = ?", (collection_id,))
            self._touch_collection(db, collection_id, at)

    def add_annotation(
        self,
        key: str,
        parent_key: str,
        text: str,
        *,
        conn: sqlite3.Connection | None = None,
        library: int = USER_LIBRARY,
    ) -> None:
        with self.connect(conn) as db:
            annotation = {"key": key, "itemType": "annotation", "version": 0}
            item_id = self._insert_item(db, annotation, False, library)
            db.execute(
                "INSERT INTO itemAnnotations"
                " VALUES (?, ?, 1, NULL, ?, '', '#ffd400', '1', '00000|000001|00000', '{}', 0)",
                (item_id, self.item_id(parent_key, db), text),
            )


def _rows(ids: Mapping[str, int]) -> list[tuple[int, str]]:
    return [(i, name) for name, i in ids.items()]


def _stored(field: str, value: str) -> str:
    if field in DATE_FIELDS:
        return to_multipart(value)
    if field == "accessDate":
        return sql_time(value)
    return value


def _note_title(note: str) -> str:
    return re.sub(r"<[^>]+>", " ", note).split("\n")[0].strip()[:80]


def build(path: Path, objects: Iterable[Mapping[str, Any]], *, seed: int = 0, **options: Any) -> ZoteroDB:
    """A closed rollback-journal zotero.sqlite holding `objects` (API JSON) in its user library."""
    synced = options.pop("synced", True)
    db = ZoteroDB(path, seed=seed, **options)
    db.add(objects, synced=synced)
    return db


@contextmanager
def held(path: Path, *, wal: bool = False) -> Iterator[sqlite3.Connection]:
    """Hold the file as a running Zotero does: `locking_mode=EXCLUSIVE`, the lock taken by a first write
    and kept until the connection closes. With `wal`, the database is in WAL mode with automatic
    checkpoints off, so what is committed through the connection stays in the -wal file."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        if wal:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA wal_autocheckpoint = 0")
        db.execute("BEGIN EXCLUSIVE")
        db.execute("UPDATE settings SET value = value WHERE 0")
        db.execute("COMMIT")
        db.isolation_level = ""  # back to implicit transactions, so `with db:` commits
        yield db
    finally:
        db.close()


def leave_wal(path: Path, edit: Callable[[sqlite3.Connection], None]) -> None:
    """Switch the database to WAL, commit `edit`, and leave its pages in `<path>-wal`, un-checkpointed:
    the state a crash (or a copy taken while Zotero 10 runs) leaves behind."""
    wal = path.with_name(path.name + "-wal")
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder)
        db = sqlite3.connect(path)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA wal_autocheckpoint = 0")
            with db:
                edit(db)
            shutil.copy2(path, saved / "db")
            shutil.copy2(wal, saved / "wal")
        finally:
            db.close()  # checkpoints and removes the -wal …
        shutil.copy2(saved / "db", path)  # … so put back the state from before that checkpoint
        shutil.copy2(saved / "wal", wal)
    shm = path.with_name(path.name + "-shm")
    if shm.exists():
        shm.unlink()


_KILLED_WRITER = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")  # dirty pages spill into the main file before the commit
db.execute("BEGIN")
for statement in sys.argv[2:]:
    db.execute(statement)
os._exit(0)  # killed: no commit, no rollback, the journal stays hot
"""


def leave_hot_journal(path: Path, *statements: str) -> None:
    """Run `statements` in a transaction in another process that dies before committing."""
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(path), *statements], check=True, timeout=60)
