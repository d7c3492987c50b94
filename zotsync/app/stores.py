"""The store a use case works on: opened read-only for what only reads, removed again when a first pull
that made it fails."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..config import Config
from ..errors import StoreError
from ..store import Store


@contextlib.contextmanager
def open_store(config: Config, must_exist: bool = False, readonly: bool = False) -> Iterator[Store]:
    """The configured store. `readonly` (status, export, list): never creates, upgrades or writes it.
    Those and `must_exist` need a store some pull filled; a store this call creates for a pull that then
    fails is removed again, so a first pull refused by its source leaves no empty store behind."""
    created = not config.store.exists()
    if (must_exist or readonly) and created:
        raise StoreError(f"no store at {config.store}: run `zotsync pull` first")
    store = Store(config.store, readonly=readonly)
    unfilled = False
    try:
        if (must_exist or readonly) and store.library_version is None:
            raise StoreError(f"the store at {config.store} holds no finished pull: run `zotsync pull`")
        yield store
    except BaseException:
        unfilled = created and store.library_version is None
        raise
    finally:
        store.close()
        if unfilled:  # ours, made by this run a moment ago, and empty
            for path in (config.store, *(config.store.with_name(config.store.name + s) for s in WAL_FILES)):
                path.unlink(missing_ok=True)


WAL_FILES = ("-wal", "-shm", "-journal")
