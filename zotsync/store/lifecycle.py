"""A store's life around one use: opened read-only for what only reads, created for a pull, and removed
again when the first pull that made it fails, so a refused first pull leaves no empty store behind."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError
from .db import Store

# The files SQLite may keep beside a store, which go with a store this module removes.
WAL_FILES = ("-wal", "-shm", "-journal")


@contextlib.contextmanager
def opened(path: Path, must_exist: bool = False, readonly: bool = False) -> Iterator[Store]:
    """The store at `path`. `readonly` (status, export, list): never creates, upgrades or writes it.
    Those and `must_exist` need a store some pull filled; a store this call creates for a pull that then
    fails is removed again."""
    created = not path.exists()
    if (must_exist or readonly) and created:
        raise StoreError(f"no store at {path}: run `zotsync pull` first")
    store = Store(path, readonly=readonly)
    unfilled = False
    try:
        if (must_exist or readonly) and store.library_version is None:
            raise StoreError(f"the store at {path} holds no finished pull: run `zotsync pull`")
        yield store
    except BaseException:
        unfilled = created and store.library_version is None
        raise
    finally:
        store.close()
        if unfilled:  # ours, made by this run a moment ago, and empty
            for made in (path, *(path.with_name(path.name + suffix) for suffix in WAL_FILES)):
                made.unlink(missing_ok=True)
