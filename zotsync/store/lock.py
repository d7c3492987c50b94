"""The run lock: one zotsync run at a time per store."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import filelock

from ..errors import StoreError
from .identity import identify, not_ours

_held_here: set[Path] = set()  # the lock files this process holds (`exclusive_lock`)


@contextlib.contextmanager
def exclusive_lock(store_path: Path) -> Iterator[None]:
    """One writer at a time: a second run (two cron jobs overlapping) fails at once instead of waiting.
    filelock takes an OS lock (flock on Unix, LockFileEx on Windows) that the OS drops when a killed run
    exits, so a stale lock file never blocks the next run."""
    lock_path = store_path.with_name(store_path.name + ".lock")
    # Not even a lock file beside a file that is not ours (Zotero's data folder, say).
    what = identify(store_path) if os.path.lexists(store_path) else None
    if what is not None:
        raise not_ours(store_path, what)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(lock_path, timeout=0)
        lock.acquire()
    except filelock.Timeout:
        if not os.path.lexists(lock_path):
            # filelock reports a lock file that cannot be made (in a folder such as /proc/<pid>/fd, which
            # takes no new files) as a lock that another process holds: with no file, nobody holds it.
            raise StoreError(
                f"cannot create the lock file {lock_path}: its folder takes no new files; set `store:` in "
                "the config to a path in a folder of your own"
            ) from None
        raise StoreError(f"another zotsync run holds the lock {lock_path}") from None
    except OSError as exc:
        raise StoreError(f"cannot create the lock file {lock_path}: {exc.strerror or exc}") from exc
    _held_here.add(lock_path)
    try:
        yield
    finally:
        _held_here.discard(lock_path)
        lock.release()


def held_elsewhere(store_path: Path) -> bool:
    """Whether another process holds the store's lock now. Asked only to explain an empty store (a first
    pull under way), never before a read: taking the lock for a moment could turn a writer away."""
    lock_path = store_path.with_name(store_path.name + ".lock")
    if lock_path in _held_here or not lock_path.is_file():
        return False
    lock = filelock.FileLock(lock_path, timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False
