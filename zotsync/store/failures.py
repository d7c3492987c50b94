"""SQLite's failures in words a user can act on: every store method fails with one StoreError line."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..errors import StoreError

_T = TypeVar("_T")


def cause(exc: sqlite3.Error) -> str:
    """SQLite's error in words a user can act on, with SQLite's own text."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    for prefix, said in _CAUSES:
        if name.startswith(prefix):
            return f"{said} (SQLite: {exc})"
    return f"SQLite: {exc}"


RECOVER = "restore it from a backup, or remove it and run `zotsync pull` to read the library again"
_CAUSES = (
    ("SQLITE_FULL", "the disk is full"),
    ("SQLITE_READONLY", "the store cannot be written (check the permissions of the file and its folder)"),
    ("SQLITE_PERM", "the store cannot be written (check the permissions of the file and its folder)"),
    ("SQLITE_CANTOPEN", "the file cannot be opened (check the path and its permissions)"),
    ("SQLITE_BUSY", "another program holds the store locked"),
    ("SQLITE_LOCKED", "another program holds the store locked"),
    ("SQLITE_CORRUPT", f"the file is damaged; {RECOVER}"),
    ("SQLITE_NOTADB", f"the file is damaged; {RECOVER}"),
    ("SQLITE_IOERR", "reading or writing the disk failed"),
)


def store_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """A failing SQLite call (a full disk, a read-only folder, a damaged file) becomes one StoreError
    line naming the store and the cause."""

    @functools.wraps(method)
    def guarded(self: _HasPath, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise StoreError(f"the store {self.path} failed: {cause(exc)}") from exc
        except UnicodeDecodeError as exc:
            raise StoreError(f"the store {self.path} failed: {DAMAGED}") from exc

    return guarded


# SQLite reads a schema whose text is not UTF-8 (in a name, a comment, a keyword) without a complaint
# until it must quote it: in an error message, a column's name, a value. Python then cannot decode it.
DAMAGED = f"the file is damaged (it holds text that is not UTF-8); {RECOVER}"


class _HasPath(Protocol):
    path: Path
