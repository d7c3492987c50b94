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


def store_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """A failing SQLite call (a full disk, a read-only folder, a damaged file) becomes one StoreError
    line naming the store and the cause."""

    @functools.wraps(method)
    def guarded(self: _HasPath, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise StoreError(f"the store {self.path} failed: {cause(exc)}") from exc

    return guarded


class _HasPath(Protocol):
    path: Path
