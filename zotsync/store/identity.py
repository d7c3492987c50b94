"""Whose file it is: a zotsync store carries SQLite's `application_id` mark, set when it is created, and
any other file at the store's path is refused before anything touches it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import StoreError
from .schema import TABLES

# SQLite's header field for "which program's file is this": zotsync sets it on every store it creates
# and checks it before any write ("zots" in ASCII).
APPLICATION_ID = 0x7A6F7473
_SQLITE_MAGIC = b"SQLite format 3\x00"
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
    if tables <= TABLES and {"version", "applied_at"} <= columns:
        return None  # written by a zotsync from before the mark; opening it adds the mark
    return "it looks like an SQLite database of another program"


def not_ours(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is not a zotsync store ({what}); zotsync leaves it untouched: "
        "set `store:` in the config to a file of zotsync's own"
    )
