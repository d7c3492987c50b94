"""The sync state a store keeps beside the library (`sync_state`), as one typed object."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SyncState:
    """What the store knows about its library and the runs that filled it."""

    library_version: int | None = None  # the library version of the last finished pull
    library_type: str = "user"
    library_id: str = ""
    library_name: str = ""  # a group's name, or the user's zotero.org name; "" when the source did not say
    library_url: str = ""  # the library's web page, when a source named it (kept until another does)
    source: str | None = None  # the id of the source the library came from (`Source.id`)
    last_sync_at: str | None = None  # when the last pull ended, UTC, ISO 8601
    content_generation: int = 0  # bumped by every pull that changed library content but notes and annotations
    notes_generation: int = 0  # bumped by every pull that changed a note, an annotation or an attachment
    notes_reset: int = 0  # the notes generation at which every paper's notes count as changed
    source_digest: str | None = None  # the source's digest of what the store last took in (a snapshot's)
    facts_version: str | None = None  # which derivation computed the stored facts (facts.stored_version)
    export_record: str | None = None  # what the last complete sync exported (JSON, export/record.py)
    catalogue_rows_at: str | None = None  # when the page rows of the last sync were remembered
    page_settings: str | None = None  # the settings those rows were made with (JSON, app/changes.py)
    # JSON: processor name → what it noted at the end of its last run (zotsync/processing, `Job.remember`)
    processor_marks: str | None = None
    # JSON: the source and library version the attachments' full text was last listed at (app/fulltext.py)
    fulltext_cursor: str | None = None
    search_catalogue: str | None = (
        None  # what the search index's catalogue side was made from (app/search.py)
    )


# Field → its row in `sync_state`; the names rows were given before this class, kept.
ROW_NAMES = {field.name: field.name for field in dataclasses.fields(SyncState)} | {
    "source_digest": "source_fingerprint"
}
_FIELDS = {row: field for field, row in ROW_NAMES.items()}
_INTEGERS = frozenset({"library_version", "content_generation", "notes_generation", "notes_reset"})


def read_state(db: sqlite3.Connection) -> SyncState:
    values: dict[str, Any] = {}
    for row, value in db.execute("SELECT name, value FROM sync_state"):
        field = _FIELDS.get(row)
        if field is not None:
            values[field] = int(value) if field in _INTEGERS else value
    defaults = SyncState()
    values["library_type"] = values.get("library_type") or defaults.library_type
    return SyncState(**values)


def write_state(db: sqlite3.Connection, changes: Mapping[str, object]) -> None:
    """Set the given fields (None forgets one), in the caller's transaction."""
    for field, value in changes.items():
        row = ROW_NAMES[field]  # a KeyError names a field SyncState does not have
        if value is None:
            db.execute("DELETE FROM sync_state WHERE name = ?", (row,))
        else:
            db.execute("INSERT OR REPLACE INTO sync_state VALUES (?, ?)", (row, str(value)))
