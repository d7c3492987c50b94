"""A store's life around one use: opened read-only for what only reads, created for a pull, and removed
again when the first pull that made it fails, so a refused first pull leaves no empty store behind."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError
from .db import Store
from .lock import held_elsewhere

# The files SQLite may keep beside a store, which go with a store this module removes.
WAL_FILES = ("-wal", "-shm", "-journal")


@contextlib.contextmanager
def opened(path: Path, must_exist: bool = False, readonly: bool = False) -> Iterator[Store]:
    """The store at `path`. `readonly` (status, export, list): never creates, upgrades or writes it.
    Those and `must_exist` need a store some pull filled; a store this call creates for a pull that then
    fails is removed again."""
    created = not path.exists()
    if (must_exist or readonly) and created:
        raise _first_pull_running(path) or StoreError(f"no store at {path}: run `zotsync pull` first")
    store = Store(path, readonly=readonly)
    unfilled = False
    try:
        if (must_exist or readonly) and store.library_version is None:
            raise _first_pull_running(path) or StoreError(
                f"the store at {path} holds no finished pull: run `zotsync pull`"
            )
        yield store
    except BaseException:
        unfilled = created and store.library_version is None
        raise
    finally:
        store.close()
        if unfilled:  # ours, made by this run a moment ago, and empty
            for made in (path, *(path.with_name(path.name + suffix) for suffix in WAL_FILES)):
                made.unlink(missing_ok=True)


def _first_pull_running(path: Path) -> StoreError | None:
    """The error to give while another run fills an empty store: "run pull" would only meet its lock."""
    if held_elsewhere(path):
        return StoreError(
            f"a zotsync run is filling the store at {path} (its first pull): try again when it ends"
        )
    return None
