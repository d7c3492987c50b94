"""A search index of a reader's own, in memory, for a store that has none and that the reader may not
write (`zotsync mcp`): the store attached read-only (`mode=ro`), the index's tables made in memory by
the very functions that make the store's (`searchindex`), whose unqualified `items` then read the
store's. Nothing is written to the store; the index goes with the connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from ..errors import StoreError
from ..searchtext import Query
from . import searchindex
from .failures import cause
from .searchindex import Curated, IndexHit


class OwnIndex:
    """The search index of the store at `path` as it is now, with the catalogue's side `placements`."""

    def __init__(self, path: Path, placements: Sequence[Curated]) -> None:
        if not searchindex.available():
            raise StoreError(searchindex.unavailable())
        # One connection, used by one answer at a time (the caller's lock), from whichever thread.
        self._db = sqlite3.connect("file::memory:", uri=True, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("ATTACH DATABASE ? AS store", (f"{path.resolve().as_uri()}?mode=ro",))
            self._db.execute("BEGIN")  # one read of the store, however a sync commits meanwhile
            try:
                searchindex.create(self._db)
                searchindex.replace_curated(self._db, placements)
                searchindex.rebuild(self._db)
            finally:
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot read the store {path} to search it: {cause(exc)}") from exc

    def search(self, query: Query, limit: int) -> list[IndexHit]:
        """The best `limit` papers for `query`, best first (`searchindex.search`)."""
        db = self._db
        db.execute("BEGIN")  # the hits and what they show from the store agree
        try:
            return searchindex.search(db, query, limit)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot search: {cause(exc)}") from exc
        finally:
            db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
